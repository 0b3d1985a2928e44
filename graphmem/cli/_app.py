"""The ``graphmem`` commands (typer); the work is done by the service and the helper modules."""

from __future__ import annotations

import io
import math
import os
import select
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from graphmem._cypher import shipped_debug_query
from graphmem._errors import InvalidStoreUriError, JournalCorruptError, ProjectScopingUnsupportedError
from graphmem._fixtures import (
    check_fixture_lines,
    demo_fixtures_path,
    dump_fixtures,
    export_fixtures,
    fixture_json_schema,
    kept_fixture_lines,
    load_fixture_lines,
    read_fixtures,
)
from graphmem._language import ENTRY_LANGUAGES
from graphmem._models import SearchRequest, parse_time_bound, quote_ids
from graphmem._open import on_or_off, parse_store_uri
from graphmem._service import MemoryService, MemoryStats
from graphmem.cli._context import (
    BACKENDS,
    EXIT_USAGE,
    CliError,
    Settings,
    err_console,
    fail,
    missing_store,
    open_service,
    out_console,
    refuse_a_missing_store,
    refuse_empty_variables,
    refuse_the_stores_own_files,
    replacing_file,
    run_async,
    shared_decomposer,
    terminal_to_ask,
    user_errors,
)
from graphmem.cli._cypher_run import DEFAULT_TIMEOUT, MAX_TIMEOUT
from graphmem.cli._render import (
    cypher_table,
    decorated,
    hits_table,
    load_summary,
    plain,
    print_json,
    recent_table,
    stats_table,
)

try:
    from typer import TyperException as _CommandLineError  # typer 0.2x ships its own click
except ImportError:  # pragma: no cover - older typer builds on click
    from click import ClickException as _CommandLineError  # type: ignore[assignment]

CYPHER_HELP = """
Run a read-only Cypher query and print its rows (a table, or `--json`).

The graph is the same on both backends: nodes `Entry` {id, app_name, user_id, project_id,
session_id, position, author, role, text, timestamp, time_refs, language}, `Token` {app_name,
user_id, value, speaker, user_speaker} and `Entity` {app_name, user_id, name, label};
relationships `(:Entry)-[:HAS_TOKEN]->(:Token)`,
`(:Entry)-[:MENTIONS]->(:Entity)` and `(:Entry)-[:NEXT]->(:Entry)`.

Parameters: `--param name=value` passes a string, `--param name:=JSON` a number, boolean,
null or list (e.g. `--param limit:=10`). The debugging queries in `cypher/debug/` run
unchanged on both backends, and `--file cypher/debug/NAME.cypher` runs one from any
directory: a relative `cypher/debug/` path that is not there is the copy graphmem ships.

**Only reads run.** A query may use MATCH, OPTIONAL MATCH, WHERE, WITH, RETURN, UNWIND,
ORDER BY, SKIP, LIMIT, UNION, EXISTS/COUNT/COLLECT { } subqueries, CALL { } subqueries and
CALL of the read-only procedures db.labels, db.relationshipTypes, db.propertyKeys,
db.schema.visualization, db.schema.nodeTypeProperties, db.schema.relTypeProperties, db.info
and dbms.components. Everything else is refused with the reason: writes, LOAD CSV, USE,
SHOW and administration commands, CALL { } IN TRANSACTIONS, other procedures, plugin
functions, characters outside plain ASCII (except in strings, comments and `quoted names`).
On Neo4j the query also runs in a READ transaction. `--timeout` stops a query that runs
too long (default 30 s) on both backends.

**On networkx** the query runs through grand-cypher, which reads a subset of Cypher:

* one or more MATCH clauses (joined on shared variable names; clauses that share none are
  joined every match with every match, as on Neo4j) with labels, `A|B` label and
  type alternatives, property maps `{name: "x"}`, directed relationships (variable-length
  ones with both bounds and no variable, `-[:NEXT*1..3]->`);
* WHERE with = <> < <= > >=, AND, OR, NOT, IN [list], STARTS WITH, ENDS WITH, CONTAINS,
  IS NULL, IS NOT NULL (on a property), EXISTS { MATCH ... };
* RETURN of variables and properties, with AS aliases (`AS limit` too), DISTINCT, the aggregations
  COUNT, SUM, AVG, MIN, MAX, COLLECT (grouped by the other columns, nulls skipped), and
  the functions coalesce, toLower, toUpper, trim, size, type;
* ORDER BY returned columns or aliases (ASC/DESC), SKIP, LIMIT (a whole number of 0 or
  more, as on Neo4j: anything else is refused; rows are cut after ordering);
* string literals in single or double quotes, // and /* */ comments, $parameters.

Not on networkx: WITH, OPTIONAL MATCH, UNWIND, UNION, CALL, CASE, arithmetic or functions
outside the list above (no labels(), count(*), count(DISTINCT ...)), list and map literals
in RETURN. Refused there with the reason, as grand-cypher would read them differently or
fail: a relationship without a direction; AND beside OR without brackets; two nodes of one
connected pattern that Neo4j may bind to one node (grand-cypher never does: name such a
node once, or keep two apart in one MATCH, `(x)-[:R]->(n)<-[:R]-(y)`); a variable on a
variable-length relationship; a boolean property compared with a number (or `position`
with a boolean); CONTAINS/STARTS WITH/ENDS WITH on `time_refs` (a list); < <= > >= between
a number and a string or between two properties; DISTINCT or grouping by a whole node or by
`time_refs`; DISTINCT with an alias (`RETURN DISTINCT x.p AS a`: drop the AS, and ORDER BY
`x.p`); the same expression returned twice (`RETURN x.p, x.p AS q`: return it once); a
parameter or literal returned as a column (`RETURN $k AS k`). Also: an aggregation over no
rows returns no row (Neo4j returns one row with 0); ORDER BY a key that is null on some
rows and a string on others fails, saying so (return coalesce(x.p, "") AS k and ORDER BY k,
or filter with WHERE x.p IS NOT NULL); null compares
as in Python (`x.p <> "a"` matches a null p: test IS NULL); `id(x)` differs. Ties are
ordered differently by the two engines: order by enough columns to make the order total.
"""

app = typer.Typer(
    name="graphmem",
    help="Long-term memory for AI agents, stored as a knowledge graph: load, search, inspect with Cypher, draw.",
    epilog=(
        "Every global option can also be set by its environment variable. Exit codes: 0 ok, 1 error, "
        "2 usage, 3 backend unreachable. Start with: graphmem demo"
    ),
    rich_markup_mode="markdown",
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    add_completion=False,
)


# ---------------------------------------------------------------------------- global options


@app.callback()
def _global_options(
    ctx: typer.Context,
    uri: Annotated[
        str | None,
        typer.Option(
            envvar="GRAPHMEM_URI",
            help=(
                "The store as a URI: memory:, file:///path/memory.journal (or a plain path), "
                "bolt://[user:password@]host:7687[?database=NAME], neo4j://, bolt+s://, neo4j+s://. "
                "When given, --backend, --store and --neo4j-* are not used (a GRAPHMEM_URI from the "
                "environment yields to --store, --backend or --neo4j-uri written on the command line)."
            ),
        ),
    ] = None,
    backend: Annotated[
        str,
        typer.Option(
            envvar="GRAPHMEM_BACKEND",
            help=(
                "Where memory lives: networkx or neo4j (a --store written on the command line means networkx, "
                "a --neo4j-uri there neo4j)."
            ),
        ),
    ] = "networkx",
    store: Annotated[
        Path | None,
        typer.Option(
            envvar="GRAPHMEM_STORE",
            help="The networkx store (a journal file); default: graphmem/memory.journal in your user data directory.",
            dir_okay=False,
        ),
    ] = None,
    neo4j_uri: Annotated[str, typer.Option(envvar="GRAPHMEM_NEO4J_URI", help="Bolt URI of Neo4j.")] = (
        "bolt://127.0.0.1:7687"
    ),
    neo4j_user: Annotated[str, typer.Option(envvar="GRAPHMEM_NEO4J_USER", help="Neo4j user.")] = "neo4j",
    neo4j_password: Annotated[
        str | None,
        typer.Option(envvar="GRAPHMEM_NEO4J_PASSWORD", help="Neo4j password; none means auth is off."),
    ] = None,
    neo4j_database: Annotated[
        str | None, typer.Option(envvar="GRAPHMEM_NEO4J_DATABASE", help="Neo4j database; default: the server's.")
    ] = None,
    language: Annotated[
        str,
        typer.Option(
            envvar="GRAPHMEM_LANGUAGE",
            help=(
                "The language of every entry and query (en, es, fr, de, it, pt, hi, ja, zh; ko and xx, "
                "an unknown script, take the default pipeline), or auto: detected per text."
            ),
        ),
    ] = "auto",
    related_words: Annotated[
        bool | None,
        typer.Option(
            "--related-words/--no-related-words",
            help=(
                "Whether a query's nouns and adjectives are also read as words close in meaning "
                "(pets -> puppy); on unless turned off. Same as GRAPHMEM_RELATED_WORDS=1 / 0."
            ),
            show_default=False,
        ),
    ] = None,
) -> None:
    if related_words is not None:
        # Every store this process opens (open_memory reads it), the MCP server's too.
        os.environ["GRAPHMEM_RELATED_WORDS"] = "1" if related_words else "0"
    # The options are checked here but a mistake is only said by a command that opens a
    # store (_settings): a bad or empty variable failed every command's --help, and the
    # commands that open none (demo, fixture-schema, neo4j).
    try:
        ctx.obj = _resolve(
            ctx, uri, backend, store, neo4j_uri, neo4j_user, neo4j_password, neo4j_database, language, related_words
        )
    except CliError as exc:
        ctx.obj = exc


def _resolve(
    ctx: typer.Context,
    uri: str | None,
    backend: str,
    store: Path | None,
    neo4j_uri: str,
    neo4j_user: str,
    neo4j_password: str | None,
    neo4j_database: str | None,
    language: str,
    related_words: bool | None,
) -> Settings:
    """The global options as :class:`Settings`; a :class:`CliError` (usage) for a bad one."""
    # The variables that choose a store: empty, each would silently open the default one
    # (those of --backend, --store and --neo4j-* only matter without a URI).
    refuse_empty_variables(ctx, "uri")
    if uri is None:
        refuse_empty_variables(ctx, "backend", "store", "neo4j_uri", "neo4j_database")
    if related_words is None and (setting := os.environ.get("GRAPHMEM_RELATED_WORDS", "").strip()):
        # A bad value is a usage error, as a bad GRAPHMEM_BACKEND is (open_memory would
        # refuse it later, as a failure).
        try:
            on_or_off(setting, "GRAPHMEM_RELATED_WORDS")
        except ValueError as exc:
            raise CliError(str(exc), EXIT_USAGE) from None
    if uri is not None and not uri.strip():
        raise CliError(
            "the store URI is empty: give one, or leave --uri (GRAPHMEM_URI) out for the default store", EXIT_USAGE
        )
    if uri and _from_environment(ctx, "uri") and _on_command_line(ctx, "store", "backend", "neo4j_uri"):
        # A GRAPHMEM_URI left in the shell took the store an explicit --store named: a load
        # went into the other store. The command line wins over the environment.
        uri = None
    backend = backend.strip().lower()
    if backend not in BACKENDS:
        raise CliError(
            f"unknown backend {backend!r}: use --backend networkx or --backend neo4j (or set GRAPHMEM_BACKEND)",
            EXIT_USAGE,
        )
    if not uri:
        backend = _backend_the_command_line_names(ctx, backend)
    language = language.strip().lower()
    if language != "auto" and language not in ENTRY_LANGUAGES:
        raise CliError(
            f"unknown language {language!r}: use --language auto or one of {', '.join(ENTRY_LANGUAGES)} "
            "(or set GRAPHMEM_LANGUAGE)",
            EXIT_USAGE,
        )
    return Settings(
        backend,
        store,
        neo4j_uri,
        neo4j_user,
        neo4j_password or None,
        neo4j_database or None,
        uri=uri or None,
        language=language,
    )


def _backend_the_command_line_names(ctx: typer.Context, backend: str) -> str:
    """The backend, when a ``--store`` or ``--neo4j-uri`` written on the command line names
    one: that one, over a GRAPHMEM_BACKEND from the environment (or the default networkx),
    which opened a store nobody named (the default journal, or Neo4j for an explicit
    --store). Written beside a ``--backend`` that disagrees, or beside each other, they are
    a usage error."""
    store_given = _on_command_line(ctx, "store")
    neo4j_given = _on_command_line(ctx, "neo4j_uri")
    if store_given and neo4j_given:
        raise CliError(
            "--store and --neo4j-uri name two stores (a networkx journal and a Neo4j server): give one of them",
            EXIT_USAGE,
        )
    if not store_given and not neo4j_given:
        return backend
    named, option = ("networkx", "--store") if store_given else ("neo4j", "--neo4j-uri")
    if _on_command_line(ctx, "backend") and backend != named:
        raise CliError(
            f"--backend {backend} and {option} disagree: {option} names a {named} store; "
            f"give --backend {named}, or leave --backend out",
            EXIT_USAGE,
        )
    return named


def _from_environment(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` took its value from its environment variable."""
    return _source(ctx, name) == "ENVIRONMENT"


def _on_command_line(ctx: typer.Context, *names: str) -> bool:
    """Whether any of the options ``names`` is written on the command line."""
    return any(_source(ctx, name) == "COMMANDLINE" for name in names)


def _source(ctx: typer.Context, name: str) -> str | None:
    # By name: typer ships a click of its own (typer._click), whose ParameterSource is not
    # click's.
    source = ctx.get_parameter_source(name)
    return None if source is None else str(source.name)


def words(text: str) -> str:
    """A query argument's parser: a blank one (``""``, spaces) is refused, as the MCP tools
    refuse it; a search recalled nothing for it and a delete deleted nothing, exit 0 both,
    as if a query had been asked."""
    if not text.strip():
        raise typer.BadParameter("it is blank: give the words to look for")
    return text


def number_from(low: float, high: float) -> Callable[[str], float]:
    """An option's parser of a number from ``low`` to ``high``: "nan" was refused as above
    the maximum (every comparison with NaN is false), "inf" as out of range."""

    def parse(text: str) -> float:
        try:
            number = float(text)
        except ValueError:
            raise typer.BadParameter(f"{text!r} is not a number") from None
        if not math.isfinite(number):
            raise typer.BadParameter(f"{text!r} is not a number")
        if not low <= number <= high:
            raise typer.BadParameter(f"{text} is not from {low:g} to {high:g}")
        return number

    return parse


def _settings(ctx: typer.Context) -> Settings:
    """The global options, for a command that opens a store (the first thing it does, so a
    bad global option is said before the command's own checks); a bad one is a usage error."""
    settings = ctx.find_root().obj
    if isinstance(settings, CliError):
        raise fail(str(settings), settings.exit_code)
    assert isinstance(settings, Settings)
    return settings


AppOption = Annotated[str, typer.Option("--app", help="App name.", show_default=False)]
UserOption = Annotated[str, typer.Option("--user", help="User id.", show_default=False)]
ProjectOption = Annotated[
    str | None, typer.Option("--project", help="Project id (Neo4j only).", show_default=False)
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON for machines instead of a table.")]
YesOption = Annotated[
    bool,
    typer.Option(
        "--yes", "-y", help="Delete without asking (needed when standard input is not a terminal: a script, a pipe)."
    ),
]

#: The largest --limit of search and recent: more rows than anyone reads in a terminal
#: (export writes everything), and far below what a backend could not represent (2**63).
MAX_LIMIT = 10_000


# ---------------------------------------------------------------------------- load and export


@app.command()
@user_errors
def load(
    ctx: typer.Context,
    files: Annotated[
        list[str] | None, typer.Argument(help="Fixture files (JSON Lines); - for standard input.", show_default=False)
    ] = None,
    skip_projects: Annotated[
        bool, typer.Option("--skip-projects", help="Leave out sessions that belong to a project (and count them).")
    ] = False,
    demo: Annotated[bool, typer.Option("--demo", help="Also load the demo fixtures shipped with graphmem.")] = False,
    redecompose: Annotated[
        bool,
        typer.Option(
            "--redecompose",
            help="Ignore the files' tokens and entities and decompose every text again (a new spaCy pipeline).",
        ),
    ] = False,
) -> None:
    """Load fixture files: validate every line first, then store (sessions replace, never duplicate).

    Nothing is stored if any line is bad, if an entry id is held elsewhere (another user,
    session or scope), or if a line belongs to a project and the backend has no projects
    (networkx): use --skip-projects to load the global sessions only. Entries keep their
    ids, positions and terms, so loading an export reproduces what was exported.
    `graphmem fixture-schema` prints the JSON Schema of a line.
    """
    settings = _settings(ctx)
    sources: list[str | Path] = list(files or [])
    if demo:
        sources.append(demo_fixtures_path())
    if not sources:
        raise CliError("give one or more fixture files (or - for standard input), or --demo", EXIT_USAGE)
    started = time.perf_counter()
    # Every line is read and checked before the store is opened, or made.
    lines = read_fixtures(sources)
    if not kept_fixture_lines(lines, skip_projects) and (missing := missing_store(settings)) is not None:
        # An empty file (a failed export, </dev/null), or one whose every line is in a
        # project (--skip-projects), must not make a store at a path that may be mistyped:
        # every read would then take it for "nothing stored".
        if lines:
            said = (
                f"all {len(lines)} fixture lines are" if len(lines) != 1 else "the one fixture line is"
            ) + " in a project, left out by --skip-projects"
        else:
            said = "no fixture lines"
        out_console.print(plain(f"nothing to load ({said}); no store was made at {missing}"), soft_wrap=True)
        return

    stored = [0, len(lines)]  # sessions stored so far, of how many (said if interrupted)

    def count(done: int, total: int) -> None:
        stored[:] = [done, total]

    async def work() -> str:
        if missing_store(settings) is not None:
            # Checked against the empty store it would be (read-only, so nothing is made):
            # a refused load must not leave an empty store at a mistyped path, which every
            # read would then take for "nothing stored".
            async with open_service(settings, makes_store=True) as empty:
                await check_fixture_lines(empty, lines, skip_projects)
        async with open_service(settings, writes=True, makes_store=True) as service:
            if err_console.is_terminal:
                with Progress(
                    TextColumn("loading"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    console=err_console,
                    transient=True,
                ) as progress:
                    task = progress.add_task("sessions", total=None)

                    def show(done: int, total: int) -> None:
                        count(done, total)
                        progress.update(task, completed=done, total=total)

                    report = await load_fixture_lines(
                        service,
                        lines,
                        skip_projects,
                        on_progress=show,
                        redecompose=redecompose,
                        started=started,
                    )
            else:
                report = await load_fixture_lines(
                    service, lines, skip_projects, on_progress=count, redecompose=redecompose, started=started
                )
            summary = load_summary(report, settings.describe())
            store = parse_store_uri(settings.target())
            if store.kind != "neo4j" and store.path is None:
                # memory: checks a fixture file and keeps nothing: say so where the count is.
                summary += "; memory: keeps none of it after this command (give a path or a Neo4j URI to keep it)"
            return summary

    try:
        summary = run_async(work())
    except KeyboardInterrupt:
        done, total = stored
        # Each session is one write, whole or not at all: what came before stays stored.
        err_console.print(
            plain(
                f"interrupted: {done} of {total} session(s) were stored before it stopped (the one being "
                "written then may be too, whole); loading the same file(s) again replaces them"
            ),
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    out_console.print(plain(summary), soft_wrap=True)


@app.command()
@user_errors
def export(
    ctx: typer.Context,
    app_name: AppOption,
    user_id: UserOption,
    project: ProjectOption = None,
    global_only: Annotated[bool, typer.Option("--global-only", help="Only global entries (no project's).")] = False,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write here instead of standard output (- is standard output, as for load; ./- a file named -).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Write everything stored for a user as a fixture file (a data-subject access export).

    Default: all of the user's entries, global and in every project. `--project P` exports
    that project only, `--global-only` the global entries only. Every entry is written with
    its id, position, timestamp, tokens and entities: loading the export into a store without
    those entries (either backend) gives the same search results and debugging-query rows.
    """
    settings = _settings(ctx)
    if project is not None and global_only:
        raise CliError("give --project or --global-only, not both", EXIT_USAGE)
    if output is not None and not output.strip():
        raise CliError("-o is empty: name the file to write, or give - (or no -o) for standard output", EXIT_USAGE)
    # The option is text, not a Path: a Path reads "./-" (a file named -) as "-" too.
    target = None if output is None or output == "-" else Path(output)
    if target is not None:
        if target.is_dir():
            raise CliError(f"{output} is a directory: name the file to write", EXIT_USAGE)
        refuse_the_stores_own_files(settings, target)

    async def work() -> list[Any]:
        async with open_service(settings) as service:
            return await export_fixtures(
                service, app_name, user_id, project, all_projects=project is None and not global_only
            )

    sessions = run_async(work())
    lines = list(dump_fixtures(sessions))
    if target is None:
        # UTF-8 whatever the terminal's encoding: fixture files are UTF-8 (a cp1252 or
        # Latin-1 stdout wrote a file that would not load back).
        sys.stdout.flush()
        sys.stdout.buffer.write("".join(lines).encode("utf-8"))
        sys.stdout.buffer.flush()
    else:
        with replacing_file(target) as fh:
            fh.write("".join(lines).encode("utf-8"))
    entries = sum(len(s.entries) for s in sessions)
    scope = f"project {quote_ids(project)}" if project else "global entries" if global_only else "all projects"
    where = f" to {output}" if target is not None else ""
    note = "" if sessions else " (nothing is stored for this user)"
    err_console.print(
        plain(
            f"exported {len(sessions)} session{'s' if len(sessions) != 1 else ''}, "
            f"{entries} {'entry' if entries == 1 else 'entries'} of {quote_ids(app_name, user_id)} "
            f"({scope}){where}{note}"
        ),
        soft_wrap=True,
    )


@app.command("fixture-schema")
def fixture_schema() -> None:
    """Print the JSON Schema of one fixture line (fixture files are JSON Lines, one session a line)."""
    print_json(fixture_json_schema())


# ---------------------------------------------------------------------------- reading


def _time_option(value: str | None, option: str, *, end_of_day: bool = False) -> datetime | None:
    """What --since, --until and --as-of accept: an ISO 8601 date, or date and time (seconds,
    fractions and an offset optional; UTC without one), as ``search --json`` prints them. A
    date alone is its first moment; for --until its last, so that the day is kept."""
    if value is None:
        return None
    try:
        return parse_time_bound(value, end_of_day=end_of_day)
    except ValueError as exc:
        raise CliError(f"{option}: {exc}", EXIT_USAGE) from None


@app.command()
@user_errors
def search(
    ctx: typer.Context,
    query: Annotated[str, typer.Argument(parser=words, help="What to recall.", show_default=False)],
    app_name: AppOption,
    user_id: UserOption,
    project: ProjectOption = None,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many memories.")] = 10,
    min_score: Annotated[
        float | None,
        typer.Option(parser=number_from(0.0, 1.0), help="Only memories scoring at least this (0 to 1)."),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only memories stamped at or after this: ISO 8601 date or time (UTC unless an offset)."),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            help="Only memories stamped at or before this (a date alone: all of that day; UTC unless an offset)."
        ),
    ] = None,
    as_of: Annotated[
        str | None,
        typer.Option("--as-of", help='When the question is asked ("last week" in it); default now.'),
    ] = None,
    no_fold: Annotated[
        bool,
        typer.Option(
            "--no-fold", help="Every message its own hit (by default one hit per reply of consecutive messages)."
        ),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Recall memories: score, author, time, text, and why each was recalled (tokens and
    entities matched, context, a time named in the query, the speaker it names). A reply
    typed as several messages is one hit, its other recalled messages shown under it."""
    settings = _settings(ctx)
    request = SearchRequest(
        query=query,
        app_name=app_name,
        user_id=user_id,
        project_id=project,
        limit=limit,
        min_score=min_score,
        since=_time_option(since, "--since"),
        until=_time_option(until, "--until", end_of_day=True),
        as_of=_time_option(as_of, "--as-of"),
        fold_replies=not no_fold,
    )

    async def work() -> Any:
        async with open_service(settings) as service:
            return await service.search(request)

    response = run_async(work())
    if as_json:
        print_json([hit.to_json_dict() for hit in response.hits])
    elif not response.hits:
        out_console.print(plain(f"nothing recalled for {query!r} in {quote_ids(app_name, user_id)}"))
    else:
        out_console.print(hits_table(response.hits, width=out_console.width))


@app.command()
@user_errors
def recent(
    ctx: typer.Context,
    app_name: AppOption,
    user_id: UserOption,
    limit: Annotated[int, typer.Option(min=1, max=MAX_LIMIT, help="At most this many entries.")] = 10,
    as_json: JsonOption = False,
) -> None:
    """The user's newest entries first (global and project entries alike)."""
    settings = _settings(ctx)

    async def work() -> Any:
        async with open_service(settings) as service:
            return await service.recent_entries(app_name, user_id, limit)

    stored = run_async(work())
    entries = [e.memory for e in stored]
    if as_json:
        # The id, session and project too: to forget one by id (delete_entry, MCP forget), read its terms
        # (entry_decomposition.cypher), or tell a project's entries from global ones.
        print_json(
            [
                {
                    "entry_id": e.entry_id,
                    "session_id": e.session_id,
                    "project_id": e.project_id,
                    "author": e.memory.author,
                    "role": e.memory.content.role,
                    "timestamp": e.memory.timestamp.isoformat(),
                    "text": e.memory.text,
                }
                for e in stored
            ]
        )
    elif not entries:
        out_console.print(plain(f"nothing stored for {quote_ids(app_name, user_id)}"))
    else:
        out_console.print(recent_table(entries))


@app.command()
@user_errors
def stats(
    ctx: typer.Context,
    app_name: Annotated[str | None, typer.Option("--app", help="App name (with --user).")] = None,
    user_id: Annotated[str | None, typer.Option("--user", help="User id (with --app).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Counts of users, entries, tokens, entities, sessions and projects (of the store, or one user)."""
    settings = _settings(ctx)
    if (app_name is None) != (user_id is None):
        raise CliError("give both --app and --user, or neither (for the whole store)", EXIT_USAGE)

    async def work() -> MemoryStats:
        async with open_service(settings) as service:
            return await service.stats(app_name, user_id)

    counts = run_async(work())
    if as_json:
        names = ("users", "entries", "tokens", "entities", "sessions", "projects")
        print_json({name: getattr(counts, name) for name in names})
    else:
        scope = quote_ids(app_name, user_id) if app_name and user_id else "the whole store"
        out_console.print(plain(decorated(out_console, f"{scope} · {settings.describe()}")), soft_wrap=True)
        out_console.print(stats_table(counts))


# ---------------------------------------------------------------------------- deleting


def _confirm(question: str, yes: bool) -> None:
    """Go on only with --yes, or when the person at the terminal answers yes.

    Without a terminal to ask on (a script, a pipe, a cron job) and without --yes, nothing
    is deleted: a deletion nobody agreed to cannot be undone.
    """
    if yes:
        return
    with terminal_to_ask() as terminal:
        if terminal is None:
            raise CliError(
                "standard input is not a terminal, so there is nobody to ask: add --yes to delete without asking; "
                "nothing was deleted",
                EXIT_USAGE,
            )
        answers, questions = terminal
        # The question quotes ids with quote_ids, so no id can reorder or hide its words.
        questions.write(f"{question} [y/N]: ")
        questions.flush()
        answer = answers.readline()
    if answer.strip().lower() not in ("y", "yes"):
        raise CliError("nothing was deleted")


_SINGULAR = {"entries": "entry", "tokens": "token", "entities": "entity", "sessions": "session", "projects": "project"}


def _removed(before: MemoryStats, after: MemoryStats) -> str:
    parts = []
    for name, singular in _SINGULAR.items():
        count = getattr(before, name) - getattr(after, name)
        if count or name == "entries":
            parts.append(f"{count} {singular if count == 1 else name}")
    return "removed " + ", ".join(parts)


def _delete(
    ctx: typer.Context,
    app_name: str,
    user_id: str,
    question: str,
    yes: bool,
    what: str,
    action: Any,
    *,
    project_method: str | None = None,
    unread_ok: bool = False,
) -> None:
    """Ask ``question`` (unless ``yes``), run ``action`` on the service and print what it
    removed. ``project_method``: the service method the action calls when it deletes in a
    project (refused before asking on a backend without projects). ``unread_ok``: the
    action needs none of the user's data (an erasure), so a user whose data cannot be read
    (a damaged journal segment) is acted on without counting what it removes."""
    settings = _settings(ctx)
    # Before asking: a mistyped --store once asked "Delete ...?" and only after a yes said
    # there is no store there, so the person agreed to a deletion that could not happen.
    refuse_a_missing_store(settings, writes=True)
    if project_method is not None and parse_store_uri(settings.target()).kind != "neo4j":
        raise ProjectScopingUnsupportedError(project_method, "GraphMemoryService")
    _confirm(question, yes)

    async def work() -> str:
        async with open_service(settings, writes=True) as service:
            try:
                before = await service.stats(app_name, user_id)
            except JournalCorruptError:
                if not unread_ok:
                    raise
                await action(service)
                return f"erased the unreadable data of {quote_ids(app_name, user_id)} (not counted)"
            await action(service)
            after = await service.stats(app_name, user_id)
            return f"{_removed(before, after)} ({what} of {quote_ids(app_name, user_id)})"

    out_console.print(plain(run_async(work())), soft_wrap=True)


@app.command("delete-user")
@user_errors
def delete_user(ctx: typer.Context, app_name: AppOption, user_id: UserOption, yes: YesOption = False) -> None:
    """Erase everything of one user in one app: every entry, token and entity, in every project."""
    question = f"Erase everything stored for {quote_ids(app_name, user_id)}?"
    _delete(
        ctx,
        app_name,
        user_id,
        question,
        yes,
        "everything",
        lambda s: s.delete_user(app_name, user_id),
        unread_ok=True,
    )


@app.command("delete-session")
@user_errors
def delete_session(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(help="The session id.", show_default=False)],
    app_name: AppOption,
    user_id: UserOption,
    yes: YesOption = False,
) -> None:
    """Delete one session's entries (in every scope)."""
    question = f"Delete session {quote_ids(session_id)} of {quote_ids(app_name, user_id)}?"
    what = f"session {quote_ids(session_id)}"
    _delete(ctx, app_name, user_id, question, yes, what, lambda s: s.delete_session(app_name, user_id, session_id))


@app.command("delete-project")
@user_errors
def delete_project(
    ctx: typer.Context,
    project_id: Annotated[str, typer.Argument(help="The project id.", show_default=False)],
    app_name: AppOption,
    user_id: UserOption,
    yes: YesOption = False,
) -> None:
    """Delete every entry of one project (Neo4j only: networkx has no projects)."""
    question = f"Delete project {quote_ids(project_id)} of {quote_ids(app_name, user_id)}?"
    what = f"project {quote_ids(project_id)}"
    _delete(
        ctx, app_name, user_id, question, yes, what, lambda s: s.delete_project(app_name, user_id, project_id),
        project_method="delete_project",
    )


@app.command("delete-entries")
@user_errors
def delete_entries(
    ctx: typer.Context,
    query: Annotated[
        str,
        typer.Argument(
            parser=words, help="Entries sharing a token or entity with this are deleted.", show_default=False
        ),
    ],
    app_name: AppOption,
    user_id: UserOption,
    project: ProjectOption = None,
    yes: YesOption = False,
) -> None:
    """Delete the entries that match QUERY (global ones, or with --project that project's)."""
    scope = f"project {quote_ids(project)}" if project else "global memory"
    question = f"Delete the entries of {quote_ids(app_name, user_id)} ({scope}) that match {query!r}?"

    async def action(service: MemoryService) -> int:
        if project is None:
            return await service.delete_entries(app_name, user_id, query)
        return await service.delete_entries_in_project(app_name, user_id, project, query)

    _delete(
        ctx, app_name, user_id, question, yes, f"entries matching {query!r} in {scope}", action,
        project_method=None if project is None else "delete_entries_in_project",
    )


# ---------------------------------------------------------------------------- Cypher and pictures


@app.command(help=CYPHER_HELP)
@user_errors
def cypher(
    ctx: typer.Context,
    query: Annotated[str | None, typer.Argument(help="The query (or use --file).", show_default=False)] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            help="Read the query from this file (cypher/debug/NAME.cypher: graphmem's copy, unless there is one here).",
            dir_okay=False,
        ),
    ] = None,
    param: Annotated[
        list[str] | None, typer.Option("--param", "-p", help="name=value (a string) or name:=JSON; repeatable.")
    ] = None,
    as_json: JsonOption = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout",
            parser=number_from(0.001, MAX_TIMEOUT),
            help="Stop the query after this many seconds (at most a day).",
        ),
    ] = DEFAULT_TIMEOUT,
) -> None:
    from graphmem.cli._cypher_run import parse_params, run_read_only

    settings = _settings(ctx)
    if (query is None) == (file is None):
        raise CliError("give a query or --file FILE (one of them)", EXIT_USAGE)
    text = _query_file_text(file) if file is not None else query
    assert text is not None
    params = parse_params(param or [])

    async def work() -> Any:
        async with open_service(settings) as service:
            return await run_read_only(service, text, params, timeout)

    result = run_async(work())
    if as_json:
        print_json(result.json_records())
    else:
        out_console.print(cypher_table(result.columns, result.rows))
        sys.stdout.flush()
        rows = len(result.rows)
        summary = f"{rows} row{'s' if rows != 1 else ''} · {settings.describe()}"
        err_console.print(plain(decorated(err_console, summary), "dim"))


def _query_file_text(file: Path) -> str:
    """The text of ``cypher --file``. A relative ``cypher/debug/NAME.cypher`` that is not
    there is the copy graphmem ships: the README, the demo and the hints in errors name the
    debugging queries so, and must work outside a source checkout's root."""
    if not file.is_absolute() and file.parts[:2] == ("cypher", "debug") and len(file.parts) == 3:
        if not os.path.lexists(file) and (shipped := shipped_debug_query(file.name)) is not None:
            return shipped.read_text(encoding="utf-8")
    try:
        return file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:  # as load says it (the codec's own message names no file)
        raise CliError(f"{file} is not UTF-8 ({exc.reason} at byte {exc.start})") from None


@app.command()
@user_errors
def graph(
    ctx: typer.Context,
    app_name: AppOption,
    user_id: UserOption,
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="FILE.png, FILE.svg or FILE.html.", dir_okay=False, show_default=False),
    ],
    entity: Annotated[str | None, typer.Option("--entity", help="Draw the entries mentioning this entity.")] = None,
    query: Annotated[str | None, typer.Option("--query", help="Draw the entries this query recalls.")] = None,
    project: ProjectOption = None,
    max_entries: Annotated[int, typer.Option(min=1, max=60, help="At most this many entries.")] = 12,
    all_tokens: Annotated[
        bool, typer.Option("--all-tokens", help="Draw every token, not only those shared by 2+ entries or matched.")
    ] = False,
) -> None:
    """Draw part of a user's memory graph: entries, their tokens and entities, and NEXT links.

    `--entity NAME` draws the entries mentioning that entity; `--query TEXT` the entries a
    search recalls, with the matched tokens and entities in red. Colour shows the kind
    of node; an HTML picture shows an entry's full text on hover.
    """
    from graphmem.cli._graph_picture import gather_picture, write_picture

    settings = _settings(ctx)
    if (entity is None) == (query is None):
        raise CliError("give --entity NAME or --query TEXT (one of them)", EXIT_USAGE)
    if output.suffix.lower() not in (".png", ".svg", ".html", ".htm"):
        raise CliError(f"cannot draw {output.name}: the output file must end in .png, .svg or .html", EXIT_USAGE)
    refuse_the_stores_own_files(settings, output)

    async def work() -> Any:
        async with open_service(settings) as service:
            return await gather_picture(
                service,
                app_name,
                user_id,
                entity=entity,
                query=query,
                project=project,
                max_entries=max_entries,
                all_tokens=all_tokens,
            )

    picture = run_async(work())
    write_picture(picture, output)
    out_console.print(plain(decorated(out_console, f"wrote {output}: {picture.caption}")), soft_wrap=True)


# ---------------------------------------------------------------------------- demo and Neo4j


@app.command()
@user_errors
def demo() -> None:
    """Load the demo fixtures into an in-memory graph and show what the demo questions recall, and why.

    Needs no store and no server (the global --backend and --store are not used).
    """
    from graphmem.cli._demo import run_demo

    run_async(run_demo(out_console))


def _source_checkout() -> Path:
    """The folder above the ``graphmem`` package: the repository root in a source checkout."""
    import graphmem

    return Path(graphmem.__file__).resolve().parent.parent


def _neo4j_script() -> Path:
    script = _source_checkout() / "scripts" / "neo4j"
    if not script.is_file():
        raise CliError(
            "graphmem neo4j runs scripts/neo4j of a graphmem source checkout, and this graphmem was "
            f"installed without one (no {script}): clone the repository and install it with "
            "scripts/install, or run any Neo4j 5 yourself and set GRAPHMEM_NEO4J_URI"
        )
    return script


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
@user_errors
def neo4j(
    ctx: typer.Context,
    action: Annotated[str, typer.Argument(help="start, stop, status or restart.", show_default=False)],
) -> None:
    """Start, stop or check the local embedded Neo4j (runs scripts/neo4j; start and status print the bolt URI).

    Options after the action go to the script, e.g. `graphmem neo4j start --port 7688`.
    """
    if action not in ("start", "stop", "status", "restart"):
        raise CliError(f"unknown action {action!r}: use start, stop, status or restart", EXIT_USAGE)
    script = _neo4j_script()
    completed = subprocess.run(["bash", str(script), action, *ctx.args], check=False)
    raise typer.Exit(completed.returncode)


@app.command("mcp")
@user_errors
def mcp_server(
    ctx: typer.Context,
    # Optional to click, required here: click reads an empty GRAPHMEM_APP as unset and said
    # only "Missing option '--app'", never reaching the check that names the variable.
    app_name: Annotated[
        str | None,
        typer.Option("--app", envvar="GRAPHMEM_APP", help="App name, fixed while serving (required).",
                     show_default=False),
    ] = None,
    user_id: Annotated[
        str | None,
        typer.Option("--user", envvar="GRAPHMEM_USER", help="User id, fixed while serving (required).",
                     show_default=False),
    ] = None,
    project_id: Annotated[
        str | None,
        typer.Option("--project", envvar="GRAPHMEM_PROJECT", help="Project id, fixed too (Neo4j only).",
                     show_default=False),
    ] = None,
    uri: Annotated[
        str | None,
        typer.Option("--uri", help="The store URI (as the global --uri; this one wins).", show_default=False),
    ] = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP at http://HOST:PORT/mcp, not stdio.")
    ] = False,
    host: Annotated[str, typer.Option("--host", help="Address to listen on with --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="Port to listen on with --http.")] = 8000,
) -> None:
    """Serve one user's memory to MCP clients (stdio by default; --http for streamable HTTP).

    Tools: remember, recall, recent, forget, stats. The app and user (and a project, if given) are fixed
    here: a client can never read or delete another user's memory. The store is any URI (--uri,
    GRAPHMEM_URI) or the global store options; a journal is held as its one writer while serving.
    """
    settings = _settings(ctx)
    try:
        from graphmem._mcp import CannotListenError, MemoryScope, serve
    except ImportError as exc:
        raise CliError(str(exc)) from exc
    # Empty, GRAPHMEM_PROJECT would serve global memory (which every project reads) instead.
    refuse_empty_variables(ctx, "app_name", "user_id", "project_id")
    for value, option, variable in ((app_name, "--app", "GRAPHMEM_APP"), (user_id, "--user", "GRAPHMEM_USER")):
        if value is None:
            raise CliError(f"missing option {option}: give it, or set {variable}", EXIT_USAGE)
    assert app_name is not None and user_id is not None
    scope = MemoryScope(app_name, user_id, project_id)
    if uri is not None and not uri.strip():  # an unset variable in a template ("--uri $X")
        raise CliError("the store URI is empty: give one, or leave --uri out for the global store option", EXIT_USAGE)
    target = uri or settings.target()
    try:
        run_async(serve(target, scope, transport="http" if http else "stdio", host=host, port=port,
                        nlp=shared_decomposer(settings.language)))
    except InvalidStoreUriError as exc:  # a usage error, as for every other command
        origin = "--uri, GRAPHMEM_URI" if uri is not None else settings.origin()
        raise CliError(f"{exc} ({origin})", EXIT_USAGE) from exc
    except ProjectScopingUnsupportedError as exc:  # (the generic message names a method no one called)
        backend = "networkx" if exc.backend == "GraphMemoryService" else exc.backend
        raise CliError(
            f"the {backend} backend has no projects, which --project needs: serve a Neo4j store "
            "(--uri bolt://..., or --backend neo4j) for project memory, or leave --project out"
        ) from exc
    except ValueError as exc:  # an empty --host
        raise CliError(str(exc), EXIT_USAGE) from exc
    except CannotListenError as exc:  # an error, not uvicorn's exit status 3 ("unreachable" here)
        raise CliError(exc.strerror or str(exc)) from exc


# ---------------------------------------------------------------------------- entry point


def _write_any_character() -> None:
    """Make stdout and stderr write a character their encoding lacks (an ASCII or C locale,
    a Latin-1 or cp1252 pipe) as an escape (``\\xe9``) instead of failing: a table row or
    a message holding an emoji made the whole command fail, printing nothing."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


class _WholeWrites(io.RawIOBase):
    """A file descriptor whose writes finish: a short write goes on with the rest, and a
    full non-blocking pipe is waited for (``select``) instead of failing. Closing it does not
    close the descriptor (a RawIOBase only marks itself closed): it is the process's stdout."""

    def __init__(self, fd: int) -> None:
        super().__init__()
        self._fd = fd

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def isatty(self) -> bool:
        return os.isatty(self._fd)

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        done = 0
        while done < len(view):
            try:
                done += os.write(self._fd, view[done:])
            except BlockingIOError:
                select.select([], [self._fd], [])
        return done


def _write_stdout_whole() -> None:
    """Make every write to stdout finish. Unbuffered (``PYTHONUNBUFFERED``, ``-u``), stdout
    takes what a write to a non-blocking pipe accepted and drops the rest: an export came
    out cut at 64 KiB and the command still exited 0. Buffered, such a pipe failed the
    command with ``BlockingIOError``. A stdout that is no file descriptor (a test's
    capture) or a blocking, buffered one is left as it is."""
    stream = sys.stdout
    if not isinstance(stream, io.TextIOWrapper):
        return
    try:
        fd = stream.fileno()
        blocking = os.get_blocking(fd)
    except (OSError, ValueError):
        return
    if blocking and isinstance(stream.buffer, io.BufferedWriter):
        return
    stream.flush()
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(_WholeWrites(fd)),
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )


def _read_as_utf8(argument: str) -> str:
    """An argument the locale could not read (a C or ASCII locale with Python's UTF-8 mode
    off keeps its bytes as lone surrogates, which every id and text refuses: ``--user
    lucía`` was "not valid Unicode"), read as UTF-8 when its bytes are; else as it is."""
    if not any("\udc80" <= ch <= "\udcff" for ch in argument):
        return argument
    try:
        return os.fsencode(argument).decode("utf-8")
    except UnicodeError:
        return argument


def run(argv: list[str] | None = None) -> None:
    """Run the command line; usage errors are one line too."""
    _write_any_character()
    _write_stdout_whole()
    if argv is None:
        read = [_read_as_utf8(argument) for argument in sys.argv[1:]]
        # Given only when changed: without arguments click reads sys.argv itself (and on
        # Windows expands its wildcards).
        argv = read if read != sys.argv[1:] else None
    command = typer.main.get_command(app)
    try:
        code = command.main(args=argv, prog_name="graphmem", standalone_mode=False)
    except _CommandLineError as exc:
        if type(exc).__name__ == "NoArgsIsHelpError":  # `graphmem` alone prints its help
            getattr(exc, "show")()  # noqa: B009 - typer's TyperException does not declare show()
            raise SystemExit(EXIT_USAGE) from None
        exit_code = getattr(exc, "exit_code", 1)
        ctx = getattr(exc, "ctx", None)
        path = ctx.command_path.split(" ", 1) if ctx is not None else []
        where = f" (see graphmem {path[1]} --help)" if len(path) == 2 else " (see graphmem --help)"
        fail(exc.format_message() + (where if exit_code == EXIT_USAGE else ""), exit_code)
        raise SystemExit(exit_code) from None
    except typer.Abort:
        err_console.print("aborted")
        raise SystemExit(1) from None
    if isinstance(code, int) and code:
        raise SystemExit(code)
