"""The ``graphmem`` command: every subcommand, its errors, and the Neo4j variants where the backend matters.

Most tests run the typer app in-process (``CliRunner``) on a networkx store in a temporary
directory; a few run the installed console script, to see exactly what a person sees.
"""

from __future__ import annotations

import asyncio
import fcntl
import gc
import json
import os
import select
import signal
import subprocess
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import REPO, asking_on_stderr, make_neo4j_service, neo4j_uri_or_skip
from graphmem import Decomposer
from graphmem import _collector as collector
from graphmem._fixtures import demo_fixtures_path
from graphmem.cli import _app, main
from graphmem.cli._app import app

DEMO = str(demo_fixtures_path())
DEBUG = Path(__file__).resolve().parent.parent / "cypher" / "debug"
ALICE = ["--app", "companion", "--user", "alice"]


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "memory.journal")


def run(runner: CliRunner, *args: str, input: str | None = None) -> Any:
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def gm(runner: CliRunner, store: str, *args: str, input: str | None = None) -> Any:
    return run(runner, "--store", store, *args, input=input)


def one_line_error(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return str(lines[0])


@pytest.fixture
def demo_store(runner: CliRunner, store: str) -> str:
    result = gm(runner, store, "load", "--demo", "--skip-projects")
    assert result.exit_code == 0, result.output
    return store


def write_lines(path: Path, *lines: str) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def load_conversation(runner: CliRunner, store: str, tmp_path: Path, lines: list[tuple[str, str]]) -> None:
    """Load one session of app "app", user "u": ``(author, text)`` turns a minute apart."""
    fixture = write_lines(tmp_path / "conversation.jsonl", json.dumps({
        "app_name": "app", "user_id": "u", "session_id": "s1",
        "entries": [{"author": a, "role": "user", "text": t, "timestamp": f"2026-01-05T10:0{n}:00"}
                    for n, (a, t) in enumerate(lines)]}))
    assert gm(runner, store, "load", fixture).exit_code == 0


def session(session_id: str, text: str, project: str | None = None, user: str = "ann") -> str:
    return json.dumps(
        {
            "app_name": "app",
            "user_id": user,
            "session_id": session_id,
            "project_id": project,
            "entries": [{"author": "Ann", "role": "user", "text": text, "timestamp": "2026-03-01T09:00:00"}],
        }
    )


def stats_json(runner: CliRunner, store: str, *args: str) -> dict[str, int]:
    result = gm(runner, store, "stats", *args, "--json")
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


# ---------------------------------------------------------------------------- global options and errors


def test_help_lists_every_command(runner: CliRunner) -> None:
    result = run(runner, "--help")
    assert result.exit_code == 0
    for command in ("load", "export", "search", "recent", "stats", "delete-user", "delete-session",
                    "delete-project", "delete-entries", "cypher", "graph", "neo4j", "demo", "fixture-schema"):
        assert command in result.stdout


def test_unknown_backend_is_one_line(runner: CliRunner, store: str) -> None:
    result = run(runner, "--backend", "postgres", "--store", store, "stats")
    assert result.exit_code == 2
    assert "unknown backend 'postgres'" in one_line_error(result)


def test_a_bad_related_words_setting_is_a_usage_error(runner: CliRunner, store: str) -> None:
    # As a bad GRAPHMEM_BACKEND is (it failed later, with exit 1, as if the store had).
    result = runner.invoke(app, ["--store", store, "stats"], env={"GRAPHMEM_RELATED_WORDS": "bogus"})
    assert result.exit_code == 2
    assert "GRAPHMEM_RELATED_WORDS='bogus'" in one_line_error(result)


def test_an_export_of_one_session_says_one_session(runner: CliRunner, store: str, tmp_path: Path) -> None:
    assert gm(runner, store, "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))).exit_code == 0
    result = gm(runner, store, "export", "--app", "app", "--user", "ann", "-o", str(tmp_path / "out.jsonl"))
    assert result.exit_code == 0 and 'exported 1 session, 1 entry of "app" / "ann"' in result.stderr, result.stderr
    loaded = gm(runner, str(tmp_path / "copy.journal"), "load", str(tmp_path / "out.jsonl"))
    assert loaded.stdout.startswith("loaded 1 session, 1 entry, 1 user"), loaded.output


def test_an_export_of_data_no_fixture_can_hold_is_an_error_naming_the_entry(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    """A stored value the fixture model refuses (here an author over 256 characters, which
    graphmem once stored and the journal reads) made export fail as a usage error (exit 2)
    saying only "author: ...": nothing the user typed was wrong, and nothing said where."""
    assert gm(runner, store, "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))).exit_code == 0
    [segment] = Path(store + ".d").glob("*.journal")
    header, record, *rest = segment.read_text(encoding="utf-8").split("\n")
    data = json.loads(record)
    data["entries"][0]["author"] = "A" * 300
    segment.write_text("\n".join([header, json.dumps(data), *rest]), encoding="utf-8")
    result = gm(runner, store, "export", "--app", "app", "--user", "ann", "-o", str(tmp_path / "out.jsonl"))
    entry_id = data["entries"][0]["id"]
    assert result.exit_code == 1, result.output
    assert one_line_error(result).startswith(
        f'error: entry "{entry_id}" (session "s1") of "app" / "ann" cannot be exported: the store holds what no '
        "fixture can (author: an entry's author is 300 characters long; the limit is 256)"
    )
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        # NaN compares false with every bound: it was "less than or equal to 1".
        (["search", "--app", "a", "--user", "u", "x", "--min-score", "nan"], "'nan' is not a number"),
        (["search", "--app", "a", "--user", "u", "x", "--min-score", "2"], "2 is not from 0 to 1"),
        (["cypher", "MATCH (x:Entry) RETURN x.id", "--timeout", "nan"], "'nan' is not a number"),
        (["cypher", "MATCH (x:Entry) RETURN x.id", "--timeout", "inf"], "'inf' is not a number"),
    ],
)
def test_a_number_option_that_is_no_number_says_so(runner: CliRunner, store: str, args: list[str], says: str) -> None:
    result = gm(runner, store, *args)
    assert result.exit_code == 2 and says in result.output, result.output


def test_a_bad_store_is_blamed_on_the_option_that_named_it(runner: CliRunner) -> None:
    # --store " " was blamed on --uri; a Neo4j URI urllib cannot split was its bare
    # "Invalid IPv6 URL", naming neither the URI nor the option.
    result = run(runner, "--store", " ", "stats")
    assert result.exit_code == 2 and "(--store, GRAPHMEM_STORE)" in one_line_error(result)
    result = run(runner, "--backend", "neo4j", "--neo4j-uri", "bolt://u:secret@[x", "stats")
    message = one_line_error(result)
    assert result.exit_code == 2 and "unencoded [ or ]" in message and "(--neo4j-uri, GRAPHMEM_NEO4J_URI)" in message
    assert "secret" not in result.output


def test_backend_and_store_come_from_the_environment(runner: CliRunner, store: str, tmp_path: Path) -> None:
    path = write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))
    env = {"GRAPHMEM_BACKEND": "networkx", "GRAPHMEM_STORE": store}
    assert runner.invoke(app, ["load", path], env=env).exit_code == 0
    assert Path(store).exists()
    result = runner.invoke(app, ["stats", "--json"], env=env)
    assert json.loads(result.stdout)["entries"] == 1
    result = runner.invoke(app, ["stats"], env={"GRAPHMEM_BACKEND": "nope"})
    assert result.exit_code == 2 and "GRAPHMEM_BACKEND" in result.stderr


@pytest.mark.parametrize("backend", ["networkx", "neo4j"])
def test_uri_option_and_environment_name_the_store(runner: CliRunner, tmp_path: Path, backend: str) -> None:
    uri = (tmp_path / "m.journal").as_uri() if backend == "networkx" else neo4j_uri_or_skip()
    user = f"uri-{backend}"
    path = write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam", user=user))
    # --uri wins over the older options, which here point at nothing.
    assert run(runner, "--uri", uri, "--backend", "neo4j", "--neo4j-uri", "bolt://127.0.0.1:9", "load", path).exit_code == 0
    result = runner.invoke(app, ["stats", "--app", "app", "--user", user, "--json"], env={"GRAPHMEM_URI": "graphmem+" + uri})
    assert json.loads(result.stdout)["entries"] == 1
    assert run(runner, "--uri", uri, "delete-user", "--app", "app", "--user", user, "--yes").exit_code == 0


def test_a_store_named_on_the_command_line_wins_over_graphmem_uri_in_the_environment(
    runner: CliRunner, tmp_path: Path
) -> None:
    """A GRAPHMEM_URI left in the shell took the store an explicit --store named: the load
    went into the other store."""
    left_in_the_shell = str(tmp_path / "elsewhere.journal")
    meant = str(tmp_path / "meant.journal")
    path = write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam", user="u"))
    env = {"GRAPHMEM_URI": left_in_the_shell}
    loaded = runner.invoke(app, ["--store", meant, "load", path], env=env, catch_exceptions=False)
    assert loaded.exit_code == 0 and "meant.journal" in loaded.stdout
    assert not Path(left_in_the_shell).exists()
    counted = runner.invoke(app, ["--store", meant, "stats", "--app", "app", "--user", "u", "--json"], env=env)
    assert json.loads(counted.stdout)["entries"] == 1
    # Alone, the variable names the store; --uri on the command line still wins over --store.
    alone = runner.invoke(app, ["stats", "--app", "app", "--user", "u", "--json"], env=env)
    assert alone.exit_code == 1 and "elsewhere.journal" in alone.stderr
    both = runner.invoke(app, ["--uri", meant, "--store", left_in_the_shell, "stats", "--app", "app", "--user", "u",
                               "--json"])
    assert json.loads(both.stdout)["entries"] == 1


#: No Neo4j listens here: a command that chose Neo4j fails at once (exit 3, "cannot reach").
UNREACHABLE = "bolt://127.0.0.1:1"
#: The variables of the global options, unset (a test sets those it means).
NO_STORE_VARIABLES: dict[str, str | None] = {
    name: None
    for name in ("GRAPHMEM_URI", "GRAPHMEM_BACKEND", "GRAPHMEM_STORE", "GRAPHMEM_NEO4J_URI", "GRAPHMEM_NEO4J_USER",
                 "GRAPHMEM_NEO4J_PASSWORD", "GRAPHMEM_NEO4J_DATABASE", "GRAPHMEM_LANGUAGE", "GRAPHMEM_RELATED_WORDS")
}


def test_a_neo4j_uri_on_the_command_line_chooses_neo4j(runner: CliRunner, tmp_path: Path) -> None:
    """GRAPHMEM_URI yielded to a --neo4j-uri written on the command line, but the backend
    stayed networkx: the command opened the default journal, a store nobody named (a load
    wrote there)."""
    data = tmp_path / "data"  # the default journal's folder (platformdirs reads XDG_DATA_HOME)
    env = NO_STORE_VARIABLES | {"GRAPHMEM_URI": str(tmp_path / "m.journal"), "XDG_DATA_HOME": str(data)}
    path = write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))
    for args in (["stats"], ["load", path]):
        result = runner.invoke(app, ["--neo4j-uri", UNREACHABLE, *args], env=env)
        assert result.exit_code == 3 and f"cannot reach Neo4j at {UNREACHABLE}" in one_line_error(result), result.output
    # Over a GRAPHMEM_BACKEND from the environment too; --backend networkx beside it disagrees.
    result = runner.invoke(app, ["--neo4j-uri", UNREACHABLE, "stats"], env=env | {"GRAPHMEM_BACKEND": "networkx"})
    assert result.exit_code == 3 and "cannot reach Neo4j" in one_line_error(result), result.output
    result = runner.invoke(app, ["--backend", "networkx", "--neo4j-uri", UNREACHABLE, "stats"], env=env)
    assert result.exit_code == 2, result.output
    assert "--backend networkx and --neo4j-uri disagree" in one_line_error(result)
    assert not data.exists() and not (tmp_path / "m.journal").exists()


def test_a_store_on_the_command_line_chooses_networkx(runner: CliRunner, tmp_path: Path) -> None:
    """A --store written on the command line was silently ignored under GRAPHMEM_BACKEND=neo4j
    from the environment: the command went to Neo4j."""
    store = str(tmp_path / "m.journal")
    env = NO_STORE_VARIABLES | {"GRAPHMEM_BACKEND": "neo4j", "GRAPHMEM_NEO4J_URI": UNREACHABLE}
    path = write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))
    loaded = runner.invoke(app, ["--store", store, "load", path], env=env)
    assert loaded.exit_code == 0 and "m.journal" in loaded.stdout, loaded.output
    counted = runner.invoke(app, ["--store", store, "stats", "--json"], env=env)
    assert counted.exit_code == 0 and json.loads(counted.stdout)["entries"] == 1, counted.output
    # Written beside it on the command line, --backend neo4j (or --neo4j-uri) disagrees.
    for args, says in (
        (["--backend", "neo4j", "--store", store], "--backend neo4j and --store disagree"),
        (["--store", store, "--neo4j-uri", UNREACHABLE], "--store and --neo4j-uri name two stores"),
    ):
        result = runner.invoke(app, [*args, "stats"], env=env)
        assert result.exit_code == 2 and says in one_line_error(result), result.output


@pytest.mark.parametrize(
    ("variable", "value", "args", "says"),
    [
        ("GRAPHMEM_STORE", "", ["search", "--help"], "GRAPHMEM_STORE is set but empty"),
        ("GRAPHMEM_BACKEND", "foo", ["stats", "--help"], "unknown backend 'foo'"),
        ("GRAPHMEM_URI", " ", ["load", "--help"], "GRAPHMEM_URI is set but empty"),
        ("GRAPHMEM_LANGUAGE", "klingon", ["cypher", "--help"], "unknown language 'klingon'"),
        ("GRAPHMEM_RELATED_WORDS", "bogus", ["export", "--help"], "GRAPHMEM_RELATED_WORDS='bogus'"),
        ("GRAPHMEM_STORE", "", ["fixture-schema"], "GRAPHMEM_STORE is set but empty"),
    ],
)
def test_a_bad_global_variable_fails_only_a_command_that_opens_a_store(
    runner: CliRunner, tmp_path: Path, variable: str, value: str, args: list[str], says: str
) -> None:
    """A bad or empty global variable failed every command's --help, and the commands that
    open no store, as it failed those that do (the check ran before --help was read)."""
    env = NO_STORE_VARIABLES | {variable: value, "XDG_DATA_HOME": str(tmp_path / "data")}
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0 and result.stdout, result.output
    # A command that opens a store still says it, as before.
    result = runner.invoke(app, ["stats"], env=env)
    assert result.exit_code == 2 and one_line_error(result).startswith(f"error: {says}"), result.output


def test_a_bad_global_variable_leaves_the_demo_alone(runner: CliRunner) -> None:
    result = runner.invoke(app, ["demo"], env=NO_STORE_VARIABLES | {"GRAPHMEM_BACKEND": "foo", "GRAPHMEM_STORE": ""})
    assert result.exit_code == 0 and "Where does Maria work?" in result.stdout, result.output


def test_a_bad_uri_is_a_usage_error_without_the_password(runner: CliRunner) -> None:
    result = run(runner, "--uri", "postgres://ann:hunter2@db/x", "stats")
    assert result.exit_code == 2
    line = one_line_error(result)
    assert "unknown store scheme 'postgres:'" in line and "hunter2" not in line
    result = run(runner, "--uri", "bolt://ann:hunter2@127.0.0.1:9", "stats")
    assert result.exit_code == 3 and "hunter2" not in one_line_error(result)


def test_usage_errors_are_one_line_from_main(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, text in ((["searchh"], "No such command"), (["search"], "Missing argument"),
                       (["search", "--app", "a", "--user", "u", "--limit", "0", "q"], "--limit")):
        with pytest.raises(SystemExit) as exited:
            main(argv)
        assert exited.value.code == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and text in err[0], err


def test_main_has_the_store_it_loads_frozen(demo_store: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The console script owns its process: what opening the store loaded is moved out of the
    collector's reach (graphmem._collector.loads_kept_frozen), and only while main runs."""
    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        main(["--store", demo_store, "stats", "--json"])
        assert json.loads(capsys.readouterr().out)["entries"] > 0
        assert gc.get_freeze_count() > before
        assert not collector._freeze_after_loads
    finally:
        gc.unfreeze()


def test_console_script_reports_a_missing_file_in_one_line(tmp_path: Path) -> None:
    env = os.environ | {"GRAPHMEM_STORE": str(tmp_path / "m.journal"), "COLUMNS": "200"}
    completed = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "load", str(tmp_path / "missing.jsonl")],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert completed.returncode == 1
    assert completed.stderr.strip() == f"error: no such file: {tmp_path / 'missing.jsonl'}"


@pytest.mark.parametrize(
    "args",
    [
        ["search", "--app", "", "--user", "ann", "tea"],
        ["recent", "--app", "app", "--user", "a\x1bb"],
        ["delete-session", "--app", "app", "--user", "ann", "s" * 300, "--yes"],
        ["stats", "--app", "app", "--user", "\ud800"],
    ],
)
def test_an_invalid_id_is_a_usage_error(runner: CliRunner, demo_store: str, args: list[str]) -> None:
    result = gm(runner, demo_store, *args)
    assert result.exit_code == 2
    assert any(w in one_line_error(result) for w in ("must not", "limit is", "lone surrogate"))


def test_unreachable_neo4j_is_one_line_with_what_to_do(runner: CliRunner) -> None:
    result = run(runner, "--backend", "neo4j", "--neo4j-uri", "bolt://127.0.0.1:9", "stats")
    assert result.exit_code == 3
    line = one_line_error(result)
    assert "cannot reach Neo4j at bolt://127.0.0.1:9" in line and "graphmem neo4j start" in line


def test_a_neo4j_database_the_server_lacks_is_one_line(runner: CliRunner) -> None:
    uri = neo4j_uri_or_skip()
    result = run(runner, "--uri", f"{uri}?database=nosuchdb", "stats")
    assert result.exit_code == 3
    assert "no database named 'nosuchdb'" in one_line_error(result)
    result = run(runner, "--uri", f"{uri}?database=system", "stats")
    assert result.exit_code == 2
    assert "'system'" in one_line_error(result)


# ---------------------------------------------------------------------------- load


def test_load_prints_a_one_line_summary(runner: CliRunner, store: str) -> None:
    result = gm(runner, store, "load", "--demo", "--skip-projects")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("loaded 27 sessions, 158 entries, 5 users into networkx store")
    assert lines[0].endswith("left out 14 project sessions (--skip-projects)")
    assert " s;" in lines[0]  # seconds


def test_load_twice_does_not_duplicate(runner: CliRunner, demo_store: str) -> None:
    before = stats_json(runner, demo_store)
    assert gm(runner, demo_store, "load", "--demo", "--skip-projects").exit_code == 0
    assert stats_json(runner, demo_store) == before


def test_project_lines_on_networkx_stop_the_load(runner: CliRunner, store: str) -> None:
    result = gm(runner, store, "load", DEMO)
    assert result.exit_code == 1
    line = one_line_error(result)
    assert f'{DEMO}:21: session "workdesk-alice-02" is in project "q3-launch"' in line
    assert "--skip-projects" in line and "nothing was loaded" in line
    assert "no store at" in one_line_error(gm(runner, store, "stats"))  # not even an empty one


def test_a_bad_line_stops_the_load_with_its_number(runner: CliRunner, store: str, tmp_path: Path) -> None:
    good = write_lines(tmp_path / "good.jsonl", session("s1", "apricot jam"))
    bad = write_lines(tmp_path / "bad.jsonl", session("s2", "kayak"), session("s3", "x")[:-5])
    result = gm(runner, store, "load", good, bad)
    assert result.exit_code == 1
    assert one_line_error(result).startswith(f"error: {bad}:2: not valid JSON")
    assert "no store at" in one_line_error(gm(runner, store, "stats"))  # nothing stored, no store made


def test_load_reads_standard_input(runner: CliRunner, store: str) -> None:
    result = gm(runner, store, "load", "-", input=session("s1", "apricot jam") + "\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("loaded 1 session, 1 entry, 1 user")


def test_load_needs_something_to_load(runner: CliRunner, store: str) -> None:
    result = gm(runner, store, "load")
    assert result.exit_code == 2 and "--demo" in one_line_error(result)


@pytest.mark.parametrize("given", ["empty", "blank_lines", "stdin"])
def test_loading_nothing_makes_no_store(runner: CliRunner, store: str, tmp_path: Path, given: str) -> None:
    """An empty input (a failed export, </dev/null) made the store's files at a path that
    may be mistyped, and said "loaded 0 sessions": every read then took it for "nothing
    stored"."""
    source = {"empty": tmp_path / "empty.jsonl", "blank_lines": tmp_path / "blank.jsonl", "stdin": "-"}[given]
    if isinstance(source, Path):
        source.write_text("" if given == "empty" else "\n  \n\n", encoding="utf-8")
    result = gm(runner, store, "load", str(source), input="")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"nothing to load (no fixture lines); no store was made at {store}"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("memory")) == []
    assert gm(runner, store, "stats").exit_code == 1  # still no store, as before the load


@pytest.mark.parametrize("count", [1, 2])
def test_loading_only_skipped_project_lines_makes_no_store(
    runner: CliRunner, store: str, tmp_path: Path, count: int
) -> None:
    """--skip-projects on a file whose every line is in a project stored nothing, yet made
    the store's files at a path that may be mistyped, as an empty load once did."""
    fixtures = tmp_path.parent / f"{tmp_path.name}-fixtures"  # outside the folder of the store
    fixtures.mkdir()
    source = write_lines(fixtures / "p.jsonl", *(session(f"s{i}", "plum jam", project="p") for i in range(count)))
    result = gm(runner, store, "load", source, "--skip-projects")
    assert result.exit_code == 0, result.output
    said = "all 2 fixture lines are" if count == 2 else "the one fixture line is"
    assert result.stdout.strip() == (
        f"nothing to load ({said} in a project, left out by --skip-projects); no store was made at {store}"
    )
    assert list(tmp_path.iterdir()) == []
    assert gm(runner, store, "stats").exit_code == 1  # still no store, as before the load
    # Into a store that is there, the load says what it left out, as before.
    assert gm(runner, store, "load", write_lines(fixtures / "g.jsonl", session("g1", "apricot jam"))).exit_code == 0
    result = gm(runner, store, "load", source, "--skip-projects")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("loaded 0 sessions, 0 entries, 0 users")
    assert f"left out {count} project session" in result.stdout
    assert stats_json(runner, store)["entries"] == 1


def test_loading_nothing_into_a_store_leaves_it_as_it_was(runner: CliRunner, store: str, tmp_path: Path) -> None:
    assert gm(runner, store, "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))).exit_code == 0
    result = gm(runner, store, "load", "-", input="")
    assert result.exit_code == 0 and result.stdout.startswith("loaded 0 sessions, 0 entries, 0 users"), result.output
    assert stats_json(runner, store)["entries"] == 1


def test_fixture_schema_is_json_schema(runner: CliRunner) -> None:
    result = run(runner, "fixture-schema")
    schema = json.loads(result.stdout)
    assert schema["title"] == "FixtureSession" and "entries" in schema["properties"]


# ---------------------------------------------------------------------------- export


def search_json(runner: CliRunner, store: str, query: str, *args: str) -> list[tuple[Any, ...]]:
    result = gm(runner, store, "search", *ALICE, query, "--json", "--limit", "20", *args)
    assert result.exit_code == 0, result.output
    return [
        (h["score"], h["text"], h["author"], h["timestamp"], h["matched_tokens"], h["matched_entities"], h["context_score"])
        for h in json.loads(result.stdout)
    ]


def test_export_then_load_into_an_empty_store_gives_the_same_search_results(
    runner: CliRunner, demo_store: str, tmp_path: Path
) -> None:
    exported = tmp_path / "alice.jsonl"
    result = gm(runner, demo_store, "export", *ALICE, "-o", str(exported))
    assert result.exit_code == 0, result.output
    assert 'exported 10 sessions, 63 entries of "companion" / "alice" (all projects)' in result.stderr
    fresh = str(tmp_path / "fresh.journal")
    assert gm(runner, fresh, "load", str(exported)).exit_code == 0
    for query in ("Where does Maria work?", "Who is Biscuit's vet?", "sister birthday Lisbon"):
        assert search_json(runner, fresh, query) == search_json(runner, demo_store, query)


def test_export_then_load_keeps_the_gap_of_a_deleted_turn(runner: CliRunner, store: str, tmp_path: Path) -> None:
    """The issue's example through the commands: a journal store, a middle turn deleted."""
    turns = ["Where did you park the car?", "Something about zebras here.", "Level three, spot 42."]
    line = {"app_name": "app", "user_id": "ann", "session_id": "s1",
            "entries": [{"author": "Ann", "role": "user", "text": t, "timestamp": f"2026-01-01T10:0{i}:00"}
                        for i, t in enumerate(turns)]}
    assert gm(runner, store, "load", write_lines(tmp_path / "s1.jsonl", json.dumps(line))).exit_code == 0
    assert "removed 1" in gm(runner, store, "delete-entries", "--app", "app", "--user", "ann", "zebras", "--yes").stdout

    def found(where: str) -> list[tuple[Any, ...]]:
        result = gm(runner, where, "search", "--app", "app", "--user", "ann", "where park car", "--json")
        assert result.exit_code == 0, result.output
        return [(h["entry_id"], h["text"], h["score"], h["context_score"]) for h in json.loads(result.stdout)]

    before = found(store)
    assert [text for _, text, _, _ in before] == ["Where did you park the car?"]
    exported = tmp_path / "ann.jsonl"
    assert gm(runner, store, "export", "--app", "app", "--user", "ann", "-o", str(exported)).exit_code == 0
    fresh = str(tmp_path / "fresh.journal")
    assert gm(runner, fresh, "load", str(exported)).exit_code == 0
    assert found(fresh) == before


def test_loading_ids_another_user_holds_is_one_line_error(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    exported = tmp_path / "bob.jsonl"
    assert gm(runner, demo_store, "export", "--app", "companion", "--user", "bob", "-o", str(exported)).exit_code == 0
    renamed = [json.loads(line) | {"user_id": "robert"} for line in exported.read_text().splitlines()]
    result = gm(runner, demo_store, "load", write_lines(tmp_path / "robert.jsonl", *map(json.dumps, renamed)))
    assert result.exit_code == 1
    assert "robert.jsonl:1: entry id" in one_line_error(result) and "another user's entry" in result.stderr
    stats = gm(runner, demo_store, "stats", "--app", "companion", "--user", "robert", "--json")
    assert json.loads(stats.stdout)["entries"] == 0


def test_export_writes_fixture_lines_to_standard_output(runner: CliRunner, demo_store: str) -> None:
    result = gm(runner, demo_store, "export", "--app", "companion", "--user", "bob", "--global-only")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 9 and {line["user_id"] for line in lines} == {"bob"}
    nobody = gm(runner, demo_store, "export", "--app", "companion", "--user", "nobody")
    assert nobody.exit_code == 0 and nobody.stdout == "" and "nothing is stored" in nobody.stderr


def run_with_file_size_limit(store: str, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the console script where no file may grow past ``limit`` bytes: a real failed write
    (EFBIG, as a full disk gives ENOSPC) part-way through the output."""
    import resource
    import signal

    def limit_file_size() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = os.environ | {"GRAPHMEM_STORE": store, "COLUMNS": "300"}
    return subprocess.run(
        [sys.executable, "-m", "graphmem.cli", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False, preexec_fn=limit_file_size,
    )


@pytest.mark.parametrize(
    ("command", "name"),
    [(["export", *ALICE], "alice.jsonl"), (["graph", *ALICE, "--entity", "Maria"], "maria.svg")],
)
def test_a_failed_write_leaves_the_earlier_output_file_as_it_was(
    demo_store: str, tmp_path: Path, command: list[str], name: str
) -> None:
    out = tmp_path / name
    out.write_text("the earlier file\n", encoding="utf-8")
    out.chmod(0o640)
    completed = run_with_file_size_limit(demo_store, 2048, *command, "-o", str(out))
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.strip() == f"error: cannot write {out}: File too large"
    assert out.read_text(encoding="utf-8") == "the earlier file\n"
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary left
    done = run_with_file_size_limit(demo_store, 2**30, *command, "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8") != "the earlier file\n"
    assert out.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


@pytest.mark.parametrize("name", ["memory.journal", "memory.journal.lock", "memory.journal.d/x.svg", "link.svg"])
def test_output_onto_the_stores_own_files_is_refused(
    runner: CliRunner, demo_store: str, tmp_path: Path, name: str
) -> None:
    """``export -o memory.journal`` replaced the store's header with fixture lines: the store was gone."""
    (tmp_path / "link.svg").symlink_to(tmp_path / "memory.journal")
    before = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()}
    command = ["export", *ALICE] if name.endswith(("journal", "lock")) else ["graph", *ALICE, "--entity", "Maria"]
    result = gm(runner, demo_store, *command, "-o", str(tmp_path / name))
    assert result.exit_code == 2
    assert "is a file of the store itself" in one_line_error(result)
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()} == before
    assert json.loads(gm(runner, demo_store, "stats", "--json").stdout)["entries"] > 0


def test_a_store_the_file_system_refuses_to_create_is_an_error_naming_it(tmp_path: Path) -> None:
    """A full disk (here: no file may grow) is no bad URI: exit 1, not the usage error it was."""
    store = tmp_path / "new.journal"
    completed = run_with_file_size_limit(str(store), 0, "load", "--demo", "--skip-projects")
    assert completed.returncode == 1, completed.stderr
    line = completed.stderr.strip()
    assert line.startswith("error: cannot use ") and "File too large" in line, line
    assert "--uri" not in line and "Traceback" not in line


def test_an_append_the_disk_refuses_names_the_segment_and_is_undone(tmp_path: Path) -> None:
    store = tmp_path / "m.journal"
    completed = run_with_file_size_limit(str(store), 10_240, "load", "--demo", "--skip-projects")
    assert completed.returncode == 1, completed.stderr
    line = completed.stderr.strip().splitlines()[-1]
    assert f"cannot use {store}.d/" in line and "File too large (the write was undone)" in line, line
    # Which line failed, and that the lines before it were stored (a load of many writes).
    assert line.startswith("error: ") and ".jsonl:" in line and "sessions before it were stored" in line, line
    stats = run_with_file_size_limit(str(store), 2**30, "stats", "--json")  # the store still opens, whole
    assert stats.returncode == 0, stats.stderr
    assert json.loads(stats.stdout)["entries"] > 0


def test_export_to_a_path_that_is_no_regular_file_writes_through_it(demo_store: str) -> None:
    """``-o /dev/stdout`` (a pipe here) cannot be replaced by a rename: it is written in place."""
    completed = run_with_file_size_limit(demo_store, 2**30, "export", *ALICE, "-o", "/dev/stdout")
    assert completed.returncode == 0, completed.stderr
    assert len(completed.stdout.splitlines()) == 10 and "to /dev/stdout" in completed.stderr


def test_export_to_standard_output_is_utf8_whatever_the_terminal(runner: CliRunner, store: str, tmp_path: Path) -> None:
    lines = tmp_path / "ja.jsonl"
    lines.write_text(
        json.dumps({"app_name": "app", "user_id": "ann", "session_id": "s1", "entries": [
            {"author": "Ann", "role": "user", "text": "東京タワーに登りました。", "timestamp": "2026-01-01T10:00:00"}]}) + "\n",
        encoding="utf-8",
    )
    assert gm(runner, store, "load", str(lines)).exit_code == 0
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "--store", store, "export", "--app", "app", "--user", "ann"],
        capture_output=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "東京タワー" in done.stdout.decode("utf-8")


@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("args", [["export", "--app", "companion", "--user", "alice"], ["recent", "--app", "companion",
                                  "--user", "alice", "--limit", "200", "--json"]], ids=["export", "json"])
def test_output_to_a_full_non_blocking_pipe_is_written_whole(demo_store: str, unbuffered: bool, args: list[str]) -> None:
    """A reader that set its pipe non-blocking and reads late (as Node.js and some CI
    runners do): unbuffered, stdout dropped what the full pipe did not take and the
    command exited 0 (an export cut at 64 KiB); buffered, it failed with BlockingIOError.
    The reader here reads only once the pipe is full and the command still running."""
    read_end, write_end = os.pipe()
    fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, 4096)
    capacity = fcntl.fcntl(write_end, fcntl.F_GETPIPE_SZ)
    os.set_blocking(write_end, False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"PYTHONPATH": str(REPO)}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    child = subprocess.Popen([sys.executable, "-m", "graphmem.cli", "--store", demo_store, *args],
                             stdout=write_end, stderr=subprocess.PIPE, env=env)
    os.close(write_end)
    try:
        waiting = bytearray(4)
        # Until the pipe is full or the command is done (the old code: done, with the rest dropped).
        while child.poll() is None:
            fcntl.ioctl(read_end, termios.FIONREAD, waiting)
            if int.from_bytes(waiting, sys.byteorder) >= capacity:
                break
            select.select([], [], [], 0.01)
        out = bytearray()
        while chunk := os.read(read_end, 1 << 16):
            out += chunk
    finally:
        os.close(read_end)
    assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
    assert len(out) > capacity  # the pipe was filled: the test tested something
    if args[0] == "export":
        assert all(json.loads(line)["user_id"] == "alice" for line in out.decode("utf-8").splitlines())
    else:
        assert len(json.loads(out)) > 1


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_every_command_prints_on_a_stdout_that_is_not_utf8(runner: CliRunner, store: str, tmp_path: Path, encoding: str) -> None:
    """An ASCII or Latin-1 stdout (a C locale, a cp1252 pipe): ``search --json`` failed on an
    emoji in an entry, ``stats`` on its own "·", each with nothing printed. JSON is written
    with escapes, tables with the characters escaped, decoration in ASCII."""
    text = "Lucía threw a party 🎉 in Zürich"
    fixture = write_lines(tmp_path / "party.jsonl", session("s1", text))
    assert gm(runner, store, "load", fixture).exit_code == 0
    env = {**os.environ, "PYTHONIOENCODING": encoding, "PYTHONPATH": str(REPO), "COLUMNS": "200"}

    def cli(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "graphmem.cli", "--store", store, *args],
                              capture_output=True, env=env, timeout=120)
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout.decode(encoding)

    user = ["--app", "app", "--user", "ann"]
    assert [h["text"] for h in json.loads(cli("search", *user, "party in Zürich", "--json"))] == [text]
    assert [e["text"] for e in json.loads(cli("recent", *user, "--json"))] == [text]
    rows = json.loads(cli("cypher", "MATCH (e:Entry) RETURN e.text AS text", "--json"))
    assert rows == [{"text": text}]
    table = cli("recent", *user)
    assert "threw a party \\U0001f389 in Z" in table
    # The escapes are counted in the cells' widths: every line of a table is as wide.
    for printed in (table, cli("search", *user, "party in Zürich")):
        lines = [line for line in printed.splitlines() if line.strip() and "networkx store" not in line]
        assert len({len(line) for line in lines}) == 1, printed
    assert cli("stats").startswith(f"the whole store {'-' if encoding == 'ascii' else '·'} networkx store")


def test_a_utf8_argument_works_in_a_c_locale(runner: CliRunner, store: str, tmp_path: Path) -> None:
    """In a C locale with Python's UTF-8 mode off, ``--user lucía`` reached the command as
    lone surrogates and was refused as "not valid Unicode"."""
    fixture = write_lines(tmp_path / "es.jsonl", session("s1", "Mi jefa se llama Carmen.", user="lucía"))
    assert gm(runner, store, "load", fixture).exit_code == 0
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": str(REPO)}
    env.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "--store", store, "recent", "--app", "app", "--user", "lucía", "--json"],
        capture_output=True, env=env, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert [e["text"] for e in json.loads(done.stdout)] == ["Mi jefa se llama Carmen."]


def test_the_demo_prints_on_an_ascii_stdout() -> None:
    """The demo failed half-way on its own curly quotes."""
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "graphmem.cli", "demo"], capture_output=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '1. companion/alice asks "Where does Maria work?"' in done.stdout.decode("ascii")


def test_export_to_dash_writes_standard_output(
    runner: CliRunner, demo_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export -o -` wrote a file named "-" (mode 600, the user's memories) and nothing to
    standard output, while `load -` reads standard input. ``./-`` is the file named -."""
    monkeypatch.chdir(tmp_path)
    piped = gm(runner, demo_store, "export", *ALICE, "-o", "-")
    assert piped.exit_code == 0, piped.output
    assert len(piped.stdout.splitlines()) == 10 and " to " not in piped.stderr
    assert not (tmp_path / "-").exists()
    named = gm(runner, demo_store, "export", *ALICE, "-o", "./-")
    assert named.exit_code == 0 and named.stdout == "" and "to ./-" in named.stderr
    assert (tmp_path / "-").read_text(encoding="utf-8") == piped.stdout
    for bad, says in ((str(tmp_path), "is a directory"), ("", "-o is empty")):
        refused = gm(runner, demo_store, "export", *ALICE, "-o", bad)
        assert refused.exit_code == 2 and says in one_line_error(refused)


def test_export_of_a_project_on_networkx_is_refused(runner: CliRunner, demo_store: str) -> None:
    result = gm(runner, demo_store, "export", *ALICE, "--project", "p")
    assert result.exit_code == 1 and "no projects" in one_line_error(result)


# ---------------------------------------------------------------------------- search, recent, stats


def test_search_table_and_json(runner: CliRunner, demo_store: str) -> None:
    table = gm(runner, demo_store, "search", *ALICE, "Where does Maria work?", "--limit", "3")
    assert table.exit_code == 0
    assert "score" in table.stdout and "Pastelaria" in table.stdout and "maria" in table.stdout
    hits = json.loads(gm(runner, demo_store, "search", *ALICE, "Maria", "--json", "--limit", "2").stdout)
    assert len(hits) == 2
    assert set(hits[0]) >= {"score", "author", "timestamp", "text", "matched_tokens", "matched_entities", "entry_id"}
    floor = json.loads(gm(runner, demo_store, "search", *ALICE, "Maria", "--json", "--min-score", "0.99").stdout)
    assert all(h["score"] >= 0.99 for h in floor)


def test_search_shows_a_reply_in_several_messages_as_one_hit(runner: CliRunner, store: str, tmp_path: Path) -> None:
    lines = [
        ("Ben", "How was the weekend?"),
        ("Ana", "We drove to the coast."),
        ("Ana", "The kids built a sandcastle."),
        ("Ben", "Lovely!"),
    ]
    fixture = write_lines(
        tmp_path / "chat.jsonl",
        json.dumps(
            {
                "app_name": "companion",
                "user_id": "alice",
                "session_id": "s1",
                "entries": [
                    {"author": author, "role": "user", "text": text, "timestamp": f"2026-01-05T10:0{n}:00"}
                    for n, (author, text) in enumerate(lines)
                ],
            }
        ),
    )
    assert gm(runner, store, "load", fixture).exit_code == 0
    hits = json.loads(gm(runner, store, "search", *ALICE, "sandcastle on the coast", "--json").stdout)
    assert [h["text"] for h in hits[0]["folded"]] + [hits[0]["text"]] in (
        [lines[1][1], lines[2][1]], [lines[2][1], lines[1][1]]
    )
    assert all(h["text"] not in (lines[1][1], lines[2][1]) for h in hits[1:])
    apart = json.loads(gm(runner, store, "search", *ALICE, "sandcastle on the coast", "--json", "--no-fold").stdout)
    assert {lines[1][1], lines[2][1]} <= {h["text"] for h in apart} and all(not h["folded"] for h in apart)
    table = gm(runner, store, "search", *ALICE, "sandcastle on the coast")
    assert table.exit_code == 0 and "We drove to the" in table.stdout and "The kids built a" in table.stdout
    picture = tmp_path / "reply.svg"
    drawn = gm(runner, store, "graph", *ALICE, "--query", "sandcastle on the coast", "--max-entries", "2", "-o", str(picture))
    assert drawn.exit_code == 0, drawn.output
    assert "drove" in picture.read_text() and "sandcastle" in picture.read_text()  # the whole reply is drawn
    apart = gm(runner, store, "search", *ALICE, "sandcastle on the coast", "--no-fold")
    assert table.stdout.count("│ Ana ") == 1 and apart.stdout.count("│ Ana ") == 2


def matched_by_row(table: str) -> dict[str, str]:
    """The "matched" column of each row of a hits table, by row number, its lines joined."""
    matched: dict[str, str] = {}
    row = ""
    for line in table.splitlines():
        cells = line.split("│")
        if len(cells) > 2:
            row = cells[1].strip() or row
            matched[row] = f"{matched.get(row, '')} {cells[-2].strip()}".strip()
    return matched


def test_a_question_in_the_first_person_says_what_it_read_i_as(runner: CliRunner, store: str, tmp_path: Path) -> None:
    load_conversation(runner, store, tmp_path, [("user", "We adopted a beagle last spring."),
                                                ("helper", "A beagle you adopted, how lovely!"), ("user", "Rex.")])
    search = ["--store", store, "search", "--app", "app", "--user", "u", "Which beagle did I adopt?", "--no-fold"]
    hits = json.loads(run(runner, *search, "--json").stdout)
    assert [h["author"] for h in hits] == ["user", "helper", "user"]
    assert hits[0]["read_as"] == {"I": "user"} and hits[2]["by_named_speaker"] is True
    table = runner.invoke(app, search, env={"COLUMNS": "200"}, catch_exceptions=False).stdout
    matched = matched_by_row(table)
    assert matched["1"] == "adopt beagle user (for I)"
    assert matched["2"].endswith("(not the speaker asked about)")
    assert matched["3"] == "user (for I) (context of #1)"  # the user's answer, recalled as context


def test_context_lent_by_a_folded_message_names_the_row_it_is_shown_in(runner: CliRunner, store: str, tmp_path: Path) -> None:
    """A hit lent context by a message folded into another hit's reply said "context of
    <id>", an id the table shows nowhere (folded messages have no id column)."""
    load_conversation(runner, store, tmp_path, [("assistant", "How was the weekend?"), ("Sam", "We drove to the coast."),
                                                ("Sam", "The kids built a sandcastle."),
                                                ("Sam", "Then sardines by the harbour."), ("assistant", "Sounds perfect!")])
    search = ["--store", store, "search", "--app", "app", "--user", "u", "sandcastle coast", "--limit", "3"]
    hits = json.loads(run(runner, *search, "--json").stdout)
    folded = {f["entry_id"] for f in hits[0]["folded"]}
    assert hits[1]["context_from"] in folded  # the case: context from a message inside row 1
    table = runner.invoke(app, search, env={"COLUMNS": "200"}, catch_exceptions=False).stdout
    matched = matched_by_row(table)
    assert matched["2"] == "(context of #1)"
    assert matched["1"].endswith("of this reply)")  # its own context: a message folded into it
    assert all(entry_id[:8] not in table for entry_id in folded)


def test_search_with_nothing_recalled(runner: CliRunner, demo_store: str) -> None:
    result = gm(runner, demo_store, "search", *ALICE, "zyzzyva")
    assert result.exit_code == 0 and "nothing recalled" in result.stdout
    assert gm(runner, demo_store, "search", *ALICE, "zyzzyva", "--json").stdout.strip() == "[]"


def test_a_blank_query_is_a_usage_error_and_deletes_nothing(runner: CliRunner, demo_store: str) -> None:
    # Accepted before: "nothing recalled for ''" and "removed 0 entries", exit 0, as if asked.
    before = stats_json(runner, demo_store)
    for command in (["search", *ALICE, " "], ["delete-entries", *ALICE, "", "--yes"]):
        result = gm(runner, demo_store, *command)
        assert result.exit_code == 2 and "it is blank" in result.output, result.output
    assert stats_json(runner, demo_store) == before


def test_search_in_a_project_on_networkx_is_refused(runner: CliRunner, demo_store: str) -> None:
    result = gm(runner, demo_store, "search", *ALICE, "Maria", "--project", "p")
    assert result.exit_code == 1
    assert "networkx backend has no projects" in one_line_error(result)


def test_recent_newest_first(runner: CliRunner, demo_store: str) -> None:
    entries = json.loads(gm(runner, demo_store, "recent", "--app", "companion", "--user", "bob", "--limit", "3", "--json").stdout)
    stamps = [e["timestamp"] for e in entries]
    assert len(entries) == 3 and stamps == sorted(stamps, reverse=True)
    # Each with what names it: the JSON had no id to forget one by, nor its session.
    newest = entries[0]
    assert set(newest) == {"entry_id", "session_id", "project_id", "author", "role", "timestamp", "text"}
    assert newest["project_id"] is None and newest["session_id"]
    hits = json.loads(gm(runner, demo_store, "search", "--app", "companion", "--user", "bob", "--no-fold", "--limit", "50",
                         "--json", newest["text"]).stdout)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    assert [h["session_id"] for h in hits if h["entry_id"] == newest["entry_id"]] == [newest["session_id"]]
    assert "Dr. Ortiz" in gm(runner, demo_store, "recent", "--app", "companion", "--user", "bob").stdout


def test_stats_of_store_and_user(runner: CliRunner, demo_store: str) -> None:
    whole = stats_json(runner, demo_store)
    assert (whole["users"], whole["entries"], whole["sessions"], whole["projects"]) == (5, 158, 27, 0)
    bob = stats_json(runner, demo_store, "--app", "companion", "--user", "bob")
    assert (bob["users"], bob["entries"]) == (1, 52)
    assert "entities" in gm(runner, demo_store, "stats").stdout
    result = gm(runner, demo_store, "stats", "--app", "companion")
    assert result.exit_code == 2 and "both --app and --user" in one_line_error(result)


# ---------------------------------------------------------------------------- deletes


def test_delete_session_entries_and_user(runner: CliRunner, demo_store: str) -> None:
    bob = ["--app", "companion", "--user", "bob"]
    result = gm(runner, demo_store, "delete-session", "companion-bob-02", *bob, "--yes")
    assert result.exit_code == 0 and result.stdout.startswith("removed 6 entries")
    result = gm(runner, demo_store, "delete-entries", "marathon", *bob, "--yes")
    assert result.exit_code == 0 and "entries matching 'marathon'" in result.stdout
    left = json.loads(gm(runner, demo_store, "search", *bob, "marathon", "--json").stdout)
    assert all("marathon" not in h["matched_tokens"] for h in left)
    result = gm(runner, demo_store, "delete-user", *bob, "--yes")
    assert result.exit_code == 0 and "removed" in result.stdout and "0 entries" not in result.stdout
    assert stats_json(runner, demo_store, *bob)["entries"] == 0
    everything = gm(runner, demo_store, "cypher", "--file", str(DEBUG / "user_everything.cypher"),
                    "--param", "app=companion", "--param", "user=bob", "--json")
    assert json.loads(everything.stdout) == []  # the erasure check
    assert stats_json(runner, demo_store, *ALICE)["entries"] == 63  # nobody else touched


def test_a_load_interrupted_says_what_was_stored(
    runner: CliRunner, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C during a load printed "interrupted" only, though the sessions before it stay
    stored; now it says how many, and that loading again replaces them."""
    from graphmem import GraphMemoryService

    fixture = write_lines(tmp_path / "five.jsonl", *(session(f"s{i}", f"note number {i}") for i in range(5)))
    real = GraphMemoryService.restore_session
    calls: list[str] = []

    async def stopped_at_the_fourth(self: Any, app_name: str, user_id: str, session_id: str, *a: Any, **k: Any) -> Any:
        calls.append(session_id)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return await real(self, app_name, user_id, session_id, *a, **k)

    monkeypatch.setattr(GraphMemoryService, "restore_session", stopped_at_the_fourth)
    result = gm(runner, store, "load", fixture)
    assert result.exit_code == 130
    assert "interrupted: 3 of 5 session(s) were stored" in " ".join(result.stderr.split())
    monkeypatch.undo()
    assert stats_json(runner, store)["entries"] == 3
    assert gm(runner, store, "load", fixture).exit_code == 0
    assert stats_json(runner, store)["entries"] == 5


def test_a_store_whose_header_is_gone_says_what_to_restore(runner: CliRunner, demo_store: str) -> None:
    """Its segments are still there: "no store here, a store is made by its first write"
    sent the reader looking in the wrong place."""
    Path(demo_store).unlink()
    for command in (["stats"], ["recent", *ALICE]):
        result = gm(runner, demo_store, *command)
        assert result.exit_code == 1 and "restore memory.journal" in one_line_error(result)
        assert "no store at" not in result.stderr


def test_a_delete_on_a_store_whose_header_is_gone_says_so_before_asking(
    runner: CliRunner, demo_store: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It asked "Erase everything ...? [y/N]", and only after a yes said what to restore."""
    monkeypatch.setattr(_app, "terminal_to_ask", asking_on_stderr)
    Path(demo_store).unlink()
    result = gm(runner, demo_store, "delete-user", *ALICE, input="y\n")
    assert result.exit_code == 1 and "restore memory.journal" in one_line_error(result)
    assert "[y/N]" not in result.output


def test_delete_project_on_networkx_is_refused(runner: CliRunner, demo_store: str) -> None:
    result = gm(runner, demo_store, "delete-project", "q3-launch", *ALICE, "--yes")
    assert result.exit_code == 1 and "no projects" in one_line_error(result)


@pytest.mark.parametrize("command", [["delete-project", "q3-launch"], ["delete-entries", "jam", "--project", "p"]])
def test_a_project_delete_on_networkx_is_refused_before_asking(
    runner: CliRunner, demo_store: str, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """It asked "Delete project ...? [y/N]" and only after a yes said networkx has no projects."""
    monkeypatch.setattr(_app, "terminal_to_ask", asking_on_stderr)
    result = gm(runner, demo_store, *command, *ALICE, input="y\n")
    assert result.exit_code == 1 and "no projects" in one_line_error(result)
    assert "[y/N]" not in result.output
    assert stats_json(runner, demo_store, *ALICE)["entries"] == 63


def test_deletes_ask_on_a_terminal_unless_yes(runner: CliRunner, demo_store: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_app, "terminal_to_ask", asking_on_stderr)
    declined = gm(runner, demo_store, "delete-user", *ALICE, input="n\n")
    assert declined.exit_code == 1 and "nothing was deleted" in declined.stderr
    assert stats_json(runner, demo_store, *ALICE)["entries"] == 63
    accepted = gm(runner, demo_store, "delete-session", "companion-alice-01", *ALICE, input="y\n")
    assert accepted.exit_code == 0 and "removed 6 entries" in accepted.stdout
    forced = gm(runner, demo_store, "delete-user", *ALICE, "--yes")
    assert forced.exit_code == 0 and stats_json(runner, demo_store, *ALICE)["entries"] == 0


@pytest.mark.parametrize(
    "command",
    [["delete-user"], ["delete-session", "companion-alice-01"], ["delete-entries", "Maria"]],
)
def test_a_delete_with_nobody_to_ask_and_no_yes_deletes_nothing(
    runner: CliRunner, demo_store: str, command: list[str]
) -> None:
    """Standard input is no terminal here (a script, a pipe): the delete once went ahead
    without asking; now it is refused until --yes says it is wanted."""
    result = gm(runner, demo_store, *command, *ALICE, input="y\n")
    assert result.exit_code == 2
    assert "add --yes" in one_line_error(result) and "nothing was deleted" in one_line_error(result)
    assert stats_json(runner, demo_store, *ALICE)["entries"] == 63


def run_on_a_terminal(store: str, args: list[str], answer: str, stderr: Path) -> tuple[int, str]:
    """Run ``graphmem --store STORE ARGS`` as a person at a terminal does: a pseudo-terminal
    is its controlling terminal, standard input and output; stderr goes to the file
    ``stderr``. ``answer`` is typed once the terminal shows ``[y/N]``. Returns the exit code
    and what the terminal showed."""
    import pty
    import select

    controller, terminal = pty.openpty()
    # A session of its own with the pseudo-terminal as its controlling terminal (/dev/tty).
    launcher = (
        "import fcntl, sys, termios; fcntl.ioctl(0, termios.TIOCSCTTY, 0); "
        "from graphmem.cli import main; main(sys.argv[1:])"
    )
    with open(stderr, "wb") as err:
        child = subprocess.Popen(
            [sys.executable, "-c", launcher, "--store", store, *args],
            stdin=terminal, stdout=terminal, stderr=err, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    os.close(terminal)
    shown, answered = b"", False
    try:
        while True:
            ready, _, _ = select.select([controller], [], [], 120)
            assert ready, f"the command neither asked nor ended; it showed {shown!r}"
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the command ended and closed the terminal
                break
            if not chunk:
                break
            shown += chunk
            if not answered and b"[y/N]" in shown:
                os.write(controller, answer.encode())
                answered = True
    finally:
        os.close(controller)
    return child.wait(timeout=120), shown.decode("utf-8", "replace")


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_a_delete_asks_on_the_terminal_when_stderr_is_redirected(demo_store: str, tmp_path: Path) -> None:
    """``2>err.log`` (or ``2>/dev/null``) at a terminal: the delete went ahead without
    asking, and the "n" typed was ignored. The question now goes to the terminal itself."""
    log = tmp_path / "err.log"
    code, shown = run_on_a_terminal(demo_store, ["delete-user", "--app", "companion", "--user", "bob"], "n\n", log)
    assert 'Erase everything stored for "companion" / "bob"? [y/N]' in shown
    assert code == 1 and "nothing was deleted" in log.read_text()
    assert stats_json(CliRunner(), demo_store, "--app", "companion", "--user", "bob")["entries"] == 52
    code, shown = run_on_a_terminal(demo_store, ["delete-session", "companion-bob-02", "--app", "companion",
                                                 "--user", "bob"], "y\n", log)
    assert code == 0 and "removed 6 entries" in shown


# ---------------------------------------------------------------------------- cypher


def test_cypher_table_json_and_params(runner: CliRunner, demo_store: str) -> None:
    query = "MATCH (x:Entry {app_name: $app, user_id: $user}) RETURN x.author AS author, count(x) AS n ORDER BY author"
    params = ["--param", "app=companion", "--param", "user=bob"]
    rows = json.loads(gm(runner, demo_store, "cypher", query, *params, "--json").stdout)
    assert rows == [{"author": "Bob", "n": 27}, {"author": "assistant", "n": 25}]
    table = gm(runner, demo_store, "cypher", query, *params)
    assert table.exit_code == 0 and "Bob" in table.stdout and "2 rows" in table.stderr
    typed = gm(runner, demo_store, "cypher", "MATCH (x:Entry) WHERE x.position = $p RETURN count(x) AS n",
               "--param", "p:=0", "--json")
    assert json.loads(typed.stdout) == [{"n": 27}]  # one per session


@pytest.mark.parametrize(
    "query",
    ["MATCH (n) DETACH DELETE n", "CREATE (:Entry {id: 'x'})", "MATCH (t:Token) SET t.value = 'x' RETURN t"],
)
def test_cypher_refuses_writes(runner: CliRunner, demo_store: str, query: str) -> None:
    before = stats_json(runner, demo_store)
    result = gm(runner, demo_store, "cypher", query)
    assert result.exit_code == 1 and "only reads" in one_line_error(result)
    assert stats_json(runner, demo_store) == before


def test_cypher_refuses_a_negative_skip_or_limit_on_networkx(runner: CliRunner, demo_store: str) -> None:
    """They returned the wrong rows with exit 0 (a Python slice); Neo4j refuses them."""
    skip = gm(runner, demo_store, "cypher", "MATCH (e:Entry) RETURN e.position ORDER BY e.position DESC SKIP -1", "--json")
    assert skip.exit_code == 1 and "SKIP -1 at line 1" in one_line_error(skip) and skip.stdout == ""
    limit = gm(runner, demo_store, "cypher", "MATCH (e:Entry) RETURN e.position LIMIT $n", "--param", "n:=-5", "--json")
    assert limit.exit_code == 1 and "LIMIT $n (= -5)" in one_line_error(limit)


def test_cypher_errors(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    unsupported = gm(runner, demo_store, "cypher", "MATCH (x:Entry) WITH x RETURN x.id")
    assert unsupported.exit_code == 1 and "subset of Cypher" in one_line_error(unsupported)
    missing = gm(runner, demo_store, "cypher", "MATCH (x:Entry {app_name: $app}) RETURN x.id")
    assert missing.exit_code == 1 and "--param app=" in one_line_error(missing)
    # A bad option value is a usage error (exit 2), as everywhere else.
    bad_param = gm(runner, demo_store, "cypher", "RETURN 1", "--param", "oops")
    assert bad_param.exit_code == 2 and "name=value" in one_line_error(bad_param)
    for bad in (":=3", "a:=nope"):
        assert gm(runner, demo_store, "cypher", "RETURN 1", "--param", bad).exit_code == 2
    # Python's json reads NaN and Infinity, which JSON (and Cypher) have not.
    for bad in ("x:=NaN", "x:=[1, -Infinity]"):
        nan = gm(runner, demo_store, "cypher", "RETURN $x AS x", "--param", bad)
        assert nan.exit_code == 2 and "no JSON value" in one_line_error(nan)
    # 1e400 is JSON, but Python reads it as inf: it reached the query ("inf has no Cypher
    # literal", exit 1, the --param unnamed).
    for bad in ("n:=1e400", "n:=[1, -1e400]"):
        inf = gm(runner, demo_store, "cypher", "MATCH (e:Entry) WHERE e.position < $n RETURN count(e) AS c", "--param", bad)
        assert inf.exit_code == 2 and f"--param '{bad}'" in one_line_error(inf) and "largest float" in one_line_error(inf)
    # A name given twice kept the last value, silently.
    twice = gm(runner, demo_store, "cypher", "RETURN $a AS a", "--param", "a=1", "--param", "a:=2")
    assert twice.exit_code == 2 and "--param a is given twice" in one_line_error(twice)
    # Cypher has 64-bit integers: a larger one is refused here (Neo4j's driver raised an
    # OverflowError with a traceback; networkx matched it against nothing).
    huge = gm(runner, demo_store, "cypher", "RETURN $n AS n", "--param", "n:=[1, 123456789012345678901234567890]")
    assert huge.exit_code == 2 and "beyond 64 bits" in one_line_error(huge)
    both = gm(runner, demo_store, "cypher", "MATCH (x) RETURN x", "--file", str(tmp_path / "q.cypher"))
    assert both.exit_code == 2


# ---------------------------------------------------------------------------- graph


@pytest.mark.parametrize("suffix", ["png", "html", "svg"])
def test_graph_of_an_entity(runner: CliRunner, demo_store: str, tmp_path: Path, suffix: str) -> None:
    out = tmp_path / f"maria.{suffix}"
    result = gm(runner, demo_store, "graph", *ALICE, "--entity", "Maria", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"wrote {out}: 10 entries")
    data = out.read_bytes()
    if suffix == "png":
        assert data.startswith(b"\x89PNG")
    else:
        text = data.decode()
        assert "<svg" in text and "maria" in text and "Pastelaria" in text
        assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert "https://" not in text and "<script src" not in text  # self-contained


def test_graph_of_a_query_marks_what_matched(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    out = tmp_path / "vet.svg"
    result = gm(runner, demo_store, "graph", *ALICE, "--query", "Who is Biscuit's vet?", "--max-entries", "5", "-o", str(out))
    assert result.exit_code == 0, result.output
    root = ET.fromstring(out.read_text())  # well-formed
    texts = "".join(root.itertext())
    assert "vet" in texts and "1.00" in texts  # the matched token and the best hit's score


def test_graph_errors(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    unknown = gm(runner, demo_store, "graph", *ALICE, "--entity", "Nobody", "-o", str(tmp_path / "x.png"))
    assert unknown.exit_code == 1 and "no entity 'nobody'" in one_line_error(unknown)
    suffix = gm(runner, demo_store, "graph", *ALICE, "--entity", "Maria", "-o", str(tmp_path / "x.jpg"))
    assert suffix.exit_code == 2 and ".png, .svg or .html" in one_line_error(suffix)
    neither = gm(runner, demo_store, "graph", *ALICE, "-o", str(tmp_path / "x.png"))
    assert neither.exit_code == 2


def test_the_debug_query_an_error_names_runs_from_any_directory(
    runner: CliRunner, demo_store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hint in `graph --entity`'s error (as the demo's and the README's) names
    cypher/debug/top_entities.cypher, which outside the checkout's root was "no such file"."""
    import shlex

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    unknown = gm(runner, demo_store, "graph", *ALICE, "--entity", "Nobody", "-o", "x.svg")
    hint = one_line_error(unknown).split("(list them with graphmem ")[1].rstrip(")")
    listed = gm(runner, demo_store, *shlex.split(hint), "--json")
    assert listed.exit_code == 0, listed.output
    assert {"entity": "maria", "label": "PERSON", "entries": 10} in json.loads(listed.stdout)
    # A file of that path here is the one meant.
    (elsewhere / "cypher" / "debug").mkdir(parents=True)
    (elsewhere / "cypher" / "debug" / "top_entities.cypher").write_text("MATCH (e:Entity {name: 'biscuit'}) RETURN e.name AS mine", encoding="utf-8")
    assert json.loads(gm(runner, demo_store, *shlex.split(hint), "--json").stdout) == [{"mine": "biscuit"}]
    missing = gm(runner, demo_store, "cypher", "--file", "cypher/debug/no_such_query.cypher")
    assert missing.exit_code == 1 and "no such file: cypher/debug/no_such_query.cypher" in one_line_error(missing)


def _one_big_user(path: Path, sessions: int, per_session: int = 20) -> Path:
    """One user ("app" / "big") of ``sessions`` sessions, each a NEXT chain, with every
    entry's tokens and entities given (loading runs no spaCy): "paris" in every fourth
    entry, the token "coffee" in every tenth."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2024, 1, 1, tzinfo=UTC)
    lines = []
    for s in range(sessions):
        entries = []
        for p in range(per_session):
            n = s * per_session + p
            words = [f"w{(n * 7 + k * 13) % 400}" for k in range(6)] + (["coffee"] if n % 10 == 0 else [])
            entities = [["paris", "GPE"]] if n % 4 == 0 else []
            entries.append({
                "id": f"e{n}", "author": "Ann" if p % 2 == 0 else "assistant", "role": "user",
                "text": " ".join(words) + (" in Paris" if entities else ""),
                "timestamp": (start + timedelta(minutes=n)).isoformat(), "position": p,
                "tokens": sorted(set(words)), "entities": entities,
            })
        lines.append({"app_name": "app", "user_id": "big", "session_id": f"s{s}", "entries": entries})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


async def test_a_picture_reads_its_own_entries_only(
    decomposer: Decomposer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`graph` matched every entry (and every edge) of the user with grand-cypher before
    keeping the ids it draws: 13-22 s for a user of 1,000 entries, and past its 30 s timeout
    from ~2,500 (review). Each read now starts from the entity's node or the entries' ids:
    12 entries of a 3,000-entry user build 12 stored entries, and no query reads the graph."""
    from graphmem import open_memory
    from graphmem._fixtures import load_fixtures
    from graphmem.backends import networkx as networkx_backend
    from graphmem.cli._graph_picture import gather_picture

    service = await open_memory("memory:", nlp=decomposer)
    try:
        await load_fixtures(service, [_one_big_user(tmp_path / "big.jsonl", sessions=150)])

        def whole_graph(self: Any) -> Any:
            raise AssertionError("the picture asked for the whole graph (a Cypher view)")

        monkeypatch.setattr(type(service), "cypher_view", whole_graph)
        built = 0
        stored = networkx_backend._Entry.stored

        def counted(self: Any) -> Any:
            nonlocal built
            built += 1
            return stored(self)

        monkeypatch.setattr(networkx_backend._Entry, "stored", counted)
        picture = await gather_picture(service, "app", "big", entity="Paris")
        assert built == 12, built  # the 12 newest of the 750 entries mentioning it, nothing else
        assert picture.title.endswith("entity “paris”: 12 of 750 entries mentioning it")
        assert [n.key for n in picture.nodes if n.kind == "Entry"][-1] == "entry:e2996"  # the newest, at the bottom
        picture = await gather_picture(service, "app", "big", query="coffee", max_entries=5)
        drawn = {n.key for n in picture.nodes if n.kind == "Entry"}
        assert len(drawn) >= 5 and "token:coffee" in {n.key for n in picture.nodes}
        assert all(e.source in drawn and e.target in drawn for e in picture.edges if e.kind == "NEXT")
    finally:
        await service.close()


def test_graph_project_on_networkx_names_the_option(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    """It said "which graph --project() needs", an option formatted as a method (review)."""
    for what in (["--entity", "Maria"], ["--query", "Maria"]):
        result = gm(runner, demo_store, "graph", *ALICE, *what, "--project", "p1", "-o", str(tmp_path / "x.svg"))
        assert result.exit_code == 1
        assert one_line_error(result) == (
            "error: the networkx backend has no projects, which --project needs: use a Neo4j store for project memory (--uri bolt://..., or --backend neo4j)"
        )


# ---------------------------------------------------------------------------- demo and neo4j


def test_demo_shows_recall_with_scores_and_reasons(runner: CliRunner, tmp_path: Path) -> None:
    result = run(runner, "--store", str(tmp_path / "unused.journal"), "demo")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "Loaded 27 conversations (158 entries)" in out and "14 sessions of work projects were left out" in out
    for question in ("Where does Maria work?", "Who is Biscuit's vet?", "Who is my manager?"):
        assert question in out
    assert "Pastelaria" in out and "Okafor" in out and "Henrik Larsen" in out and "(context" in out
    assert "of #1)" in out  # which row lent the context
    assert not (tmp_path / "unused.journal").exists()  # the demo stores nothing


def test_the_demo_help_counts_its_questions_right_or_not_at_all(runner: CliRunner) -> None:
    """`demo --help` said "five questions"; the demo asks seven."""
    import re

    from graphmem.cli._demo import demo_questions

    numbers = {w: n for n, w in enumerate("one two three four five six seven eight nine ten".split(), start=1)}
    shown = " ".join(run(runner, "demo", "--help").stdout.split())
    assert "questions" in shown
    said = [numbers.get(word.lower(), int(word) if word.isdigit() else None) for word in re.findall(r"(\w+) questions", shown)]
    assert all(count in (None, len(demo_questions())) for count in said), shown


async def test_demo_questions_recall_what_they_claim(decomposer: Decomposer) -> None:
    # The demo explains each result in words; if scoring changes, the words must still hold.
    from graphmem import GraphMemoryService, SearchRequest
    from graphmem._fixtures import load_fixtures
    from graphmem.cli._demo import demo_questions

    service = GraphMemoryService(decomposer)
    await load_fixtures(service, [demo_fixtures_path()], skip_projects=True)
    for q in demo_questions():
        response = await service.search(SearchRequest(query=q.query, app_name=q.app_name, user_id=q.user_id, limit=3))
        assert any(q.expect in h.memory.text for h in response.hits), (q.query, [h.memory.text for h in response.hits])


def test_neo4j_status_runs_the_script(tmp_path: Path) -> None:
    env = os.environ | {"GRAPHMEM_NEO4J_HOME": str(tmp_path / "state")}
    completed = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "neo4j", "status"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )
    assert completed.returncode == 3 and "not running" in completed.stdout


def test_neo4j_unknown_action_and_missing_checkout(runner: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    result = run(runner, "neo4j", "explode")
    assert result.exit_code == 2 and "start, stop, status or restart" in one_line_error(result)
    monkeypatch.setattr(_app, "_source_checkout", lambda: tmp_path)
    result = run(runner, "neo4j", "status")
    assert result.exit_code == 1 and "installed without one" in one_line_error(result)


# ---------------------------------------------------------------------------- on Neo4j


@pytest.fixture
def neo4j_args(decomposer: Decomposer) -> Iterator[list[str]]:
    """Global options for an emptied Neo4j (skips outside CI when GRAPHMEM_NEO4J_URI is unset)."""
    uri = neo4j_uri_or_skip()

    async def empty() -> None:
        service = await make_neo4j_service(decomposer)
        await service.close()

    asyncio.run(empty())
    args = ["--backend", "neo4j", "--neo4j-uri", uri]
    if os.environ.get("GRAPHMEM_NEO4J_PASSWORD"):
        args += ["--neo4j-user", os.environ.get("GRAPHMEM_NEO4J_USER", "neo4j"),
                 "--neo4j-password", os.environ["GRAPHMEM_NEO4J_PASSWORD"]]
    yield args
    asyncio.run(empty())


@pytest.mark.neo4j
def test_neo4j_load_search_export_round_trip(runner: CliRunner, neo4j_args: list[str], tmp_path: Path) -> None:
    loaded = run(runner, *neo4j_args, "load", "--demo")
    assert loaded.exit_code == 0, loaded.output
    assert loaded.stdout.startswith("loaded 41 sessions, 242 entries, 5 users into Neo4j at")
    workdesk = ["--app", "workdesk", "--user", "alice"]

    def project_search() -> list[tuple[Any, ...]]:
        result = run(runner, *neo4j_args, "search", *workdesk, "Atlas cutover", "--project", "q3-launch", "--json")
        assert result.exit_code == 0, result.output
        return [(h["score"], h["text"], h["project_id"]) for h in json.loads(result.stdout)]

    before = project_search()
    assert {p for _, _, p in before} == {"q3-launch"}
    exported = tmp_path / "alice.jsonl"
    assert run(runner, *neo4j_args, "export", *workdesk, "-o", str(exported)).exit_code == 0
    assert {json.loads(line)["project_id"] for line in exported.read_text().splitlines()} == {None, "q3-launch", "hiring"}
    deleted = run(runner, *neo4j_args, "delete-user", *workdesk, "--yes")
    assert deleted.exit_code == 0 and "removed 66 entries" in deleted.stdout
    assert project_search() == []
    assert run(runner, *neo4j_args, "load", str(exported)).exit_code == 0
    assert project_search() == before


@pytest.mark.neo4j
def test_neo4j_projects_skip_and_delete(runner: CliRunner, neo4j_args: list[str]) -> None:
    loaded = run(runner, *neo4j_args, "load", "--demo", "--skip-projects")
    assert loaded.exit_code == 0 and "left out 14 project sessions" in loaded.stdout
    assert run(runner, *neo4j_args, "load", "--demo").exit_code == 0
    stats = json.loads(run(runner, *neo4j_args, "stats", "--json").stdout)
    assert (stats["entries"], stats["projects"]) == (242, 4)
    deleted = run(runner, *neo4j_args, "delete-project", "q3-launch", "--app", "workdesk", "--user", "alice", "--yes")
    assert deleted.exit_code == 0 and deleted.stdout.startswith("removed 30 entries")


@pytest.mark.neo4j
def test_neo4j_cypher_reads_and_refuses_writes(runner: CliRunner, neo4j_args: list[str]) -> None:
    assert run(runner, *neo4j_args, "load", "--demo").exit_code == 0
    counts = run(runner, *neo4j_args, "cypher", "--file", str(DEBUG / "counts_per_project.cypher"), "--json")
    assert counts.exit_code == 0, counts.output
    assert {(r["user"], r["project"]) for r in json.loads(counts.stdout)} >= {("alice", "q3-launch"), ("carol", "")}
    refused = run(runner, *neo4j_args, "cypher", "MATCH (n) DETACH DELETE n")
    assert refused.exit_code == 1 and "only reads" in one_line_error(refused)
    # A writing procedure is not one of the read-only procedures the check lets through.
    procedure = run(runner, *neo4j_args, "cypher", "CALL db.createLabel('Sneaky')")
    assert procedure.exit_code == 1 and "procedure db.createLabel is not one" in one_line_error(procedure)
    assert json.loads(run(runner, *neo4j_args, "stats", "--json").stdout)["entries"] == 242


@pytest.mark.neo4j
def test_neo4j_graph_picture(runner: CliRunner, neo4j_args: list[str], tmp_path: Path) -> None:
    assert run(runner, *neo4j_args, "load", "--demo").exit_code == 0
    out = tmp_path / "atlas.html"
    result = run(runner, *neo4j_args, "graph", "--app", "workdesk", "--user", "alice", "--query", "Atlas cutover",
                 "--project", "q3-launch", "-o", str(out))
    assert result.exit_code == 0, result.output
    assert "q3-launch" in out.read_text()


@pytest.mark.neo4j
def test_neo4j_draws_the_pictures_networkx_draws(
    runner: CliRunner, neo4j_args: list[str], store: str, tmp_path: Path
) -> None:
    """Both backends read a picture through the same service calls: the same bytes."""
    big = str(_one_big_user(tmp_path / "big.jsonl", sessions=10))
    assert gm(runner, store, "load", DEMO, big, "--skip-projects").exit_code == 0
    alice = tmp_path / "alice.jsonl"  # with the ids networkx gave the demo's entries
    assert gm(runner, store, "export", *ALICE, "-o", str(alice)).exit_code == 0
    assert run(runner, *neo4j_args, "load", str(alice), big).exit_code == 0
    for what in (
        [*ALICE, "--entity", "Maria"],
        [*ALICE, "--query", "Who is Biscuit's vet?"],
        ["--app", "app", "--user", "big", "--entity", "Paris", "--max-entries", "30"],
        ["--app", "app", "--user", "big", "--query", "coffee w7", "--all-tokens"],
    ):
        for suffix in ("svg", "html"):
            mine, theirs = tmp_path / f"networkx.{suffix}", tmp_path / f"neo4j.{suffix}"
            assert gm(runner, store, "graph", *what, "-o", str(mine)).exit_code == 0
            assert run(runner, *neo4j_args, "graph", *what, "-o", str(theirs)).exit_code == 0
            assert mine.read_text(encoding="utf-8") == theirs.read_text(encoding="utf-8"), what


def _maria_in_three_scopes(path: Path) -> Path:
    lines = [
        {"app_name": "proj", "user_id": "pat", "session_id": f"s-{scope}", "project_id": scope, "entries": [
            {"author": "Pat", "role": "user", "text": f"Maria {what}.", "timestamp": "2026-01-01T10:00:00"}]}
        for scope, what in [(None, "moved to Porto"), ("p1", "runs the p1 budget"), ("p2", "signed the p2 secret contract")]
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.neo4j
def test_neo4j_entity_picture_of_a_project_shows_no_other_project(
    runner: CliRunner, neo4j_args: list[str], tmp_path: Path
) -> None:
    """`graph --entity NAME --project P` drew the entries of every project (the --query
    picture already kept to what a search in P sees: global and P's)."""
    assert run(runner, *neo4j_args, "load", str(_maria_in_three_scopes(tmp_path / "maria.jsonl"))).exit_code == 0
    out = tmp_path / "maria.html"
    result = run(runner, *neo4j_args, "graph", "--app", "proj", "--user", "pat", "--entity", "Maria",
                 "--project", "p1", "-o", str(out))
    assert result.exit_code == 0, result.output
    drawn = out.read_text(encoding="utf-8")
    assert "moved to Porto" in drawn and "p1 budget" in drawn and "p2 secret" not in drawn
    # Without --project: what a search without one sees, global entries only (it drew every
    # project's); a bad project id is a usage error, as for --query.
    result = run(runner, *neo4j_args, "graph", "--app", "proj", "--user", "pat", "--entity", "Maria", "-o", str(out))
    assert result.exit_code == 0, result.output
    drawn = out.read_text(encoding="utf-8")
    assert "moved to Porto" in drawn and "p1 budget" not in drawn and "p2 secret" not in drawn
    for bad in ("", "a\tb"):
        result = run(runner, *neo4j_args, "graph", "--app", "proj", "--user", "pat", "--entity", "Maria",
                     "--project", bad, "-o", str(tmp_path / "bad.html"))
        assert result.exit_code == 2 and "project_id" in one_line_error(result), result.output
    assert not (tmp_path / "bad.html").exists()


def test_an_entity_picture_of_a_project_on_networkx_is_refused(runner: CliRunner, store: str, tmp_path: Path) -> None:
    assert gm(runner, store, "load", str(_maria_in_three_scopes(tmp_path / "maria.jsonl")), "--skip-projects").exit_code == 0
    result = gm(runner, store, "graph", "--app", "proj", "--user", "pat", "--entity", "Maria",
                "--project", "p1", "-o", str(tmp_path / "maria.html"))
    assert result.exit_code != 0 and "projects" in one_line_error(result)
    assert not (tmp_path / "maria.html").exists()


def test_search_says_how_a_hit_matched_a_time_and_filters_by_since_until(runner: CliRunner, demo_store: str) -> None:
    dated = gm(
        runner, demo_store, "search", "--app", "companion", "--user", "alice", "--json", "--limit", "3",
        "Maria on 9 January 2026",
    )
    assert dated.exit_code == 0, dated.output
    hits = json.loads(dated.stdout)
    assert hits[0]["matched_time"] == "said 2026-01-09" and hits[0]["time_score"] > 0
    window = gm(
        runner, demo_store, "search", "--app", "companion", "--user", "alice", "--json", "Maria",
        "--since", "2026-02-01", "--until", "2026-02-28T23:59:59",
    )
    assert window.exit_code == 0, window.output
    stamps = [h["timestamp"][:7] for h in json.loads(window.stdout)]
    assert stamps and set(stamps) == {"2026-02"}
    # A date alone as --until keeps all of that day; minutes, fractions and offsets are
    # accepted as search --json prints them.
    for since, until in [("2026-02-01T00:00", "2026-02-28"), ("2026-02-01T00:00:00.000+00:00", "2026-02-28T23:59:59.999999Z")]:
        same = gm(
            runner, demo_store, "search", "--app", "companion", "--user", "alice", "--json", "Maria",
            "--since", since, "--until", until,
        )
        assert same.exit_code == 0, same.output
        assert json.loads(same.stdout) == json.loads(window.stdout)
    day = json.loads(window.stdout)[0]["timestamp"][:10]
    one_day = gm(
        runner, demo_store, "search", "--app", "companion", "--user", "alice", "--json", "Maria",
        "--since", day, "--until", day,
    )
    days = [h["timestamp"][:10] for h in json.loads(one_day.stdout)]
    assert days and set(days) == {day}
    garbled = gm(runner, demo_store, "search", "--app", "companion", "--user", "alice", "Maria", "--since", "last week")
    assert garbled.exit_code == 2
    assert "--since" in one_line_error(garbled) and "ISO 8601" in one_line_error(garbled)
    backwards = gm(
        runner, demo_store, "search", "--app", "companion", "--user", "alice", "Maria",
        "--since", "2026-03-01", "--until", "2026-02-01",
    )
    assert backwards.exit_code == 2
    assert "since" in one_line_error(backwards) and "after until" in one_line_error(backwards)
    # A date asked alone: the day's conversation, each row saying how it matched the time.
    alone = gm(runner, demo_store, "search", "--app", "companion", "--user", "alice", "What did we talk about on 9 January 2026?")
    assert alone.exit_code == 0, alone.output
    assert "(said 2026-01-09)" in alone.stdout and "2026-01-20" not in alone.stdout


def test_language_option_sets_every_texts_language(runner: CliRunner, store: str, tmp_path: Path) -> None:
    # Spanish without accents is ASCII, which detection reads as English.
    lines = write_lines(tmp_path / "es.jsonl", session("s1", "Mi hermana vive en Lisboa desde mayo."))
    assert gm(runner, store, "--language", "es", "load", lines).exit_code == 0
    exported = tmp_path / "out.jsonl"
    assert gm(runner, store, "export", "--app", "app", "--user", "ann", "-o", str(exported)).exit_code == 0
    assert [e["language"] for e in json.loads(exported.read_text())["entries"]] == ["es"]
    result = gm(runner, store, "--language", "es", "search", "--app", "app", "--user", "ann", "donde vivia", "--json")
    assert [h["text"] for h in json.loads(result.stdout)] == ["Mi hermana vive en Lisboa desde mayo."]


def test_unknown_language_is_a_one_line_usage_error(runner: CliRunner, store: str) -> None:
    result = gm(runner, store, "--language", "klingon", "stats")
    assert result.exit_code == 2
    assert "unknown language 'klingon': use --language auto or one of en, es" in one_line_error(result)


# ---------------------------------------------------------------------------- related words


def test_related_words_are_turned_off_and_on_from_the_command_line(
    runner: CliRunner, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHMEM_RELATED_WORDS", raising=False)  # restored after the test (the flags set it)
    fixture = write_lines(tmp_path / "s.jsonl", session("s1", "We adopted a puppy last week!"))
    assert gm(runner, store, "load", fixture).exit_code == 0
    query = ("search", "--app", "app", "--user", "ann", "What pets do I have?", "--json")
    related = json.loads(gm(runner, store, *query).stdout)
    assert [h["related_to"] for h in related] == [{"puppy": "pet"}]
    plain = json.loads(run(runner, "--no-related-words", "--store", store, *query).stdout)
    assert plain == []  # nothing shares a word with the question
    again = json.loads(run(runner, "--related-words", "--store", store, *query).stdout)
    assert [h["related_to"] for h in again] == [{"puppy": "pet"}]


# ---------------------------------------------------------------------------- the networkx Cypher worker

_WORKER_FOREVER = """
import asyncio
import os
from graphmem.cli._cypher_run import _bounded

def work():
    os.write(1, b"%d\\n" % os.getpid())  # the worker says it runs, then never ends
    while True:
        try:
            while True:
                pass
        except KeyboardInterrupt:  # as a long call into C (a parser) does not see it
            continue

asyncio.run(asyncio.to_thread(_bounded, work, 600))  # as the command runs it
"""


def _start_worker_parent() -> tuple[subprocess.Popen[bytes], int]:
    """A process running a networkx Cypher query that never ends (timeout 600 s), and the
    pid of its forked worker, once it runs."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _WORKER_FOREVER],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def _ends(pid: int, within: float) -> bool:
    """Whether process ``pid`` (not a child of ours) ends within ``within`` seconds: a wait on
    its pidfd, which becomes readable when it exits."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True  # gone already
    try:
        return bool(select.select([fd], [], [], within)[0])
    finally:
        os.close(fd)


@pytest.mark.skipif(sys.platform != "linux", reason="the worker is a forked process on Linux only")
def test_the_cypher_worker_ends_with_a_killed_command() -> None:
    """A killed `graphmem cypher` (a script's own timeout kills its pid) left its networkx
    worker running at full CPU until its 600 s timeout."""
    parent, worker = _start_worker_parent()
    parent.kill()
    parent.wait()
    assert _ends(worker, 60)


@pytest.mark.skipif(sys.platform != "linux", reason="the worker is a forked process on Linux only")
def test_ctrl_c_stops_a_cypher_query_at_once() -> None:
    """Ctrl-C (SIGINT to the group) waited for the query's whole timeout."""
    parent, worker = _start_worker_parent()
    os.killpg(parent.pid, signal.SIGINT)
    assert _ends(worker, 60)
    assert parent.wait(timeout=60) != 0


def test_an_output_file_is_never_written_through_a_planted_link(runner: CliRunner, demo_store: str, tmp_path: Path) -> None:
    """`export -o` / `graph -o` write a temporary file beside the output, then rename it. Its
    name was predictable (.NAME.PID.tmp) and opened following links: a link planted there
    sent the bytes to its target (the store's journal)."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    out = tmp_path / "out.jsonl"
    (tmp_path / f".{out.name}.{os.getpid()}.tmp").symlink_to(victim)
    result = gm(runner, demo_store, "export", *ALICE, "-o", str(out))
    assert result.exit_code == 0, result.output
    assert victim.read_bytes() == b"precious"
    assert len(out.read_text(encoding="utf-8").splitlines()) == 10


def test_a_command_that_reads_refuses_a_store_that_is_not_there(runner: CliRunner, tmp_path: Path) -> None:
    """A mistyped --store read as an empty store: ``export -o`` wrote an empty file and
    exited 0, and ``stats`` said nothing is stored (a check that a user was erased passed).
    Reading commands now say there is no store, and create nothing."""
    missing = tmp_path / "no-such-dir" / "memry.journal"
    for args in (["export", "--app", "app", "--user", "ann", "-o", str(tmp_path / "out.jsonl")], ["stats"],
                 ["recent", "--app", "app", "--user", "ann"], ["search", "--app", "app", "--user", "ann", "jam"]):
        result = run(runner, "--store", str(missing), *args)
        assert result.exit_code == 1, (args, result.stdout)
        assert "no store at" in one_line_error(result) and "memry.journal" in one_line_error(result)
    assert not (tmp_path / "out.jsonl").exists() and not missing.parent.exists()
    # A write makes the store; reading it then works.
    assert run(runner, "--store", str(missing), "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))).exit_code == 0
    assert run(runner, "--store", str(missing), "stats").exit_code == 0


def test_memory_uri_on_a_command_that_reads_or_deletes_says_it_holds_nothing_between_commands(
    runner: CliRunner, tmp_path: Path
) -> None:
    """``--uri memory:`` made every read fail with "memory: cannot be opened read-only", an
    open nobody asked for, and a delete said "removed 0 entries" and exited 0: each command
    is a process of its own, so that store is empty in every one. Both now say so."""
    who = ["--app", "app", "--user", "ann"]
    for args in (["stats"], ["search", *who, "jam"], ["recent", *who], ["export", *who, "-o", str(tmp_path / "out.jsonl")],
                 ["cypher", "MATCH (e:Entry) RETURN count(e)"], ["graph", *who, "--entity", "Maria", "-o", str(tmp_path / "g.html")],
                 ["delete-user", *who, "--yes"], ["delete-entries", "jam", *who, "--yes"]):
        result = run(runner, "--uri", "memory:", *args)
        assert result.exit_code == 2, (args, result.output)
        line = one_line_error(result)
        assert line.startswith("error: memory: holds nothing between commands (each graphmem command is a process"), line
        assert ("nothing was changed" if args[0].startswith("delete") else "nothing was read") in line, line
    assert list(tmp_path.iterdir()) == []
    # load still takes it: it checks the lines and stores them, for as long as it runs,
    # and says that nothing of it is kept.
    loaded = run(runner, "--uri", "memory:", "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam")))
    assert loaded.exit_code == 0
    assert "memory: keeps none of it after this command" in loaded.stdout, loaded.stdout


def test_a_delete_where_there_is_no_store_is_refused_and_makes_none(runner: CliRunner, tmp_path: Path) -> None:
    """A delete on a mistyped --store said "removed 0 entries", exited 0 and left an empty
    store there, which every read then took for "nothing stored"."""
    missing = tmp_path / "memry.journal"
    for command in (["delete-user"], ["delete-session", "s1"], ["delete-entries", "jam"]):
        result = run(runner, "--store", str(missing), *command, "--app", "app", "--user", "ann", "--yes")
        assert result.exit_code == 1, (command, result.stdout)
        assert "no store at" in one_line_error(result) and "memry.journal" in one_line_error(result)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "command",
    [["delete-user"], ["delete-session", "s1"], ["delete-project", "p"], ["delete-entries", "jam"]],
)
def test_a_delete_where_there_is_no_store_says_so_without_asking(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str]
) -> None:
    """A delete on a mistyped --store asked "Delete ...?" first, and only after a yes said
    there is no store there. Now nobody is asked: not on a terminal, and not without one
    (where the refusal was "add --yes", which would not have helped)."""
    asked: list[bool] = []

    @contextmanager
    def recording_terminal() -> Iterator[tuple[Any, Any]]:
        asked.append(True)
        with asking_on_stderr() as terminal:
            yield terminal

    missing = tmp_path / "memry.journal"
    args = ["--store", str(missing), *command, "--app", "app", "--user", "ann"]
    without_terminal = run(runner, *args, input="y\n")
    assert without_terminal.exit_code == 1, without_terminal.stderr
    assert "no store at" in one_line_error(without_terminal) and "nothing was changed" in one_line_error(without_terminal)
    monkeypatch.setattr(_app, "terminal_to_ask", recording_terminal)
    on_a_terminal = run(runner, *args, input="y\n")
    assert on_a_terminal.exit_code == 1, on_a_terminal.stderr
    assert "no store at" in one_line_error(on_a_terminal) and "[y/N]" not in on_a_terminal.output
    assert asked == [] and list(tmp_path.iterdir()) == []


def test_a_refused_load_makes_no_store(runner: CliRunner, tmp_path: Path) -> None:
    """A load that stored nothing (a bad line; project lines on networkx) still made the
    store at a mistyped path, after which reads there passed for "nothing stored"."""
    fixtures = tmp_path.parent / f"{tmp_path.name}-fixtures"  # outside the folder of the store
    fixtures.mkdir()
    bad = write_lines(fixtures / "bad.jsonl", session("s1", "apricot jam"), '{"app_name": "app"')
    projects = write_lines(fixtures / "p.jsonl", session("s1", "apricot jam"), session("s2", "plum jam", project="p"))
    missing = tmp_path / "memry.journal"
    for files in ([bad], [projects], [DEMO]):
        result = run(runner, "--store", str(missing), "load", *files)
        assert result.exit_code == 1 and "nothing was loaded" in one_line_error(result)
        assert list(tmp_path.iterdir()) == []
    assert "no store at" in one_line_error(run(runner, "--store", str(missing), "stats"))
    assert run(runner, "--store", str(missing), "load", projects, "--skip-projects").exit_code == 0
    assert stats_json(runner, str(missing))["entries"] == 1


def test_a_link_to_a_store_that_is_not_there_is_no_store(runner: CliRunner, tmp_path: Path) -> None:
    """A dangling symlink at the store path passed the "no store at" check and read as an
    empty store."""
    link = tmp_path / "memory.journal"
    link.symlink_to(tmp_path / "gone.journal")
    for command in (["stats"], ["export", "--app", "app", "--user", "ann"], ["delete-user", "--app", "app", "--user", "ann", "--yes"]):
        result = run(runner, "--store", str(link), *command)
        assert result.exit_code == 1, (command, result.stdout)
        assert "no store at" in one_line_error(result) and "gone.journal, which is not there" in one_line_error(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["memory.journal"]


def test_an_export_file_is_private_like_the_store(runner: CliRunner, tmp_path: Path) -> None:
    """An export holds every memory of a user: a new file is created mode 600 whatever the
    umask (the store's files are); a file replaced keeps its mode (shared on purpose)."""
    import os
    import stat

    store = tmp_path / "m.journal"
    assert run(runner, "--store", str(store), "load", write_lines(tmp_path / "f.jsonl", session("s1", "apricot jam"))).exit_code == 0
    out = tmp_path / "ann.jsonl"
    previous = os.umask(0o022)
    try:
        assert run(runner, "--store", str(store), "export", "--app", "app", "--user", "ann", "-o", str(out)).exit_code == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o600
        out.chmod(0o640)
        assert run(runner, "--store", str(store), "export", "--app", "app", "--user", "ann", "-o", str(out)).exit_code == 0
        assert stat.S_IMODE(out.stat().st_mode) == 0o640
    finally:
        os.umask(previous)
    assert "apricot jam" in out.read_text(encoding="utf-8")
