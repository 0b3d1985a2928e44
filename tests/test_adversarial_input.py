"""Hostile input at the edges: stored text shown on a terminal, fixture files, ids in messages.

- Text that came from users is displayed as text: rich markup in it is not interpreted
  (``[/b]`` used to crash ``search`` and ``recent``) and control characters (ANSI escapes,
  bidi overrides) are written out visibly instead of reaching the terminal.
- A fixture file is validated whole before anything is stored: a lone surrogate in any text,
  a timestamp that overflows when converted to UTC, or absurdly nested JSON is reported as
  ``file:line: what`` and nothing is stored.
- ``--limit`` is bounded with a usage error; a library ``ValueError`` is one line.
- Ids in messages and confirmation prompts are quoted, so ``("a/b", "c")`` and
  ``("a", "b/c")`` read differently and a bidi control cannot reorder a prompt.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from conftest import asking_on_stderr, make_neo4j_service, neo4j_uri_or_skip
from graphmem import Content, Decomposer, MemoryEntry, MemoryService, Part
from graphmem._fixtures import MAX_JSON_DEPTH, FixtureError, load_fixtures
from graphmem._models import quote_ids
from graphmem.cli import _app, main
from graphmem.cli._app import MAX_LIMIT, app

MARKUP_TEXT = "orange [/b] marmalade [bold red]loud[/] [link=http://x]here[/link]"
CONTROL_TEXT = "orange \x1b[31mred\x1b[0m tea\r overwritten \u202eevil\x07 end"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def store(tmp_path: Path) -> str:
    return str(tmp_path / "memory.journal")


@pytest.fixture(params=["networkx", "neo4j"])
def backend_args(request: pytest.FixtureRequest, tmp_path: Path, decomposer: Decomposer) -> Iterator[list[str]]:
    """Global options for an empty store of each backend in turn."""
    if request.param == "networkx":
        yield ["--store", str(tmp_path / "memory.journal")]
        return
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


def gm(runner: CliRunner, *args: str, input: str | None = None) -> Any:
    return runner.invoke(app, list(args), input=input, catch_exceptions=False)


def one_line_error(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in result.output
    return str(lines[0])


def line(text: str = "orange juice", *, session_id: str | None = "s1", **changes: Any) -> str:
    """One fixture line; ``changes`` override top-level keys, or entry keys given as ``entry_<key>``."""
    entry = {"author": "Ann", "role": "user", "text": text, "timestamp": "2026-03-01T09:00:00+00:00"}
    data: dict[str, Any] = {"app_name": "app", "user_id": "ann", "session_id": session_id, "project_id": None}
    for key, value in changes.items():
        if key.startswith("entry_"):
            entry[key[len("entry_") :]] = value
        else:
            data[key] = value
    data["entries"] = [entry]
    # ensure_ascii: a lone surrogate is written as the JSON escape \ud800, as a real file would hold it.
    return json.dumps(data)


def write(path: Path, *lines: str) -> str:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


async def stored_count(service: MemoryService) -> int:
    return (await service.stats()).entries


# ---------------------------------------------------------------------------- user text on the terminal


@pytest.fixture
def hostile_store(runner: CliRunner, backend_args: list[str], tmp_path: Path) -> list[str]:
    """Global options for a store holding text with markup and control characters."""
    path = write(
        tmp_path / "hostile.jsonl",
        line(MARKUP_TEXT, session_id="m", entry_author="Ann [/b]", entry_role="user [/i]"),
        line(CONTROL_TEXT, session_id="c", entry_author="Bob\x1b[2J"),
    )
    result = gm(runner, *backend_args, "load", path)
    assert result.exit_code == 0, result.output
    return backend_args


@pytest.mark.parametrize("command", ["search", "recent"])
def test_markup_in_stored_text_is_shown_as_text(runner: CliRunner, hostile_store: list[str], command: str) -> None:
    args = ["search", "orange marmalade"] if command == "search" else ["recent"]
    result = gm(runner, *hostile_store, args[0], "--app", "app", "--user", "ann", *args[1:])
    assert result.exit_code == 0, result.output
    # The table folds long cells: compare without the table's borders and line breaks.
    shown = "".join(ch for ch in result.stdout if ch.isalnum() or ch in "[]/=:.")
    for literal in ("[/b]", "[boldred]loud[/]", "[link=http://x]here[/link]", "Ann[/b]"):
        assert literal in shown
    if command == "recent":
        assert "user[/i]" in shown


@pytest.mark.parametrize("command", ["search", "recent"])
def test_control_characters_in_stored_text_are_made_visible(
    runner: CliRunner, hostile_store: list[str], command: str
) -> None:
    args = ["search", "orange tea"] if command == "search" else ["recent"]
    result = gm(runner, *hostile_store, args[0], "--app", "app", "--user", "ann", *args[1:])
    assert result.exit_code == 0, result.output
    for raw in ("\x1b", "\r", "\u202e", "\x07"):
        assert raw not in result.stdout
    shown = result.stdout.replace("\n", "").replace("│", "").replace(" ", "")
    for written_out in ("\\x1b[31mred\\x1b[0m", "\\r", "\\u202eevil\\x07", "Bob\\x1b[2J"):
        assert written_out in shown


def test_cypher_results_and_column_names_are_shown_as_text(runner: CliRunner, hostile_store: list[str]) -> None:
    # grand-cypher (networkx) reads no backticked alias: the column name is markup on Neo4j only.
    alias = " AS `[/b]`" if "neo4j" in hostile_store else ""
    result = gm(runner, *hostile_store, "cypher", "MATCH (e:Entry) RETURN e.text" + alias)
    assert result.exit_code == 0, result.output
    assert "[/b]" in result.stdout and "\x1b" not in result.stdout and "\\x1b[31m" in result.stdout


def test_control_characters_in_an_error_message_are_made_visible(runner: CliRunner, store: str, tmp_path: Path) -> None:
    missing = str(tmp_path / "ev\x1b[31mil\u202e.jsonl")
    result = gm(runner, "--store", store, "load", missing)
    assert result.exit_code == 1
    message = one_line_error(result)
    assert "\x1b" not in message and "\u202e" not in message
    assert "ev\\x1b[31mil\\u202e.jsonl" in message


# ---------------------------------------------------------------------------- fixture files: all or nothing


@pytest.mark.parametrize("field", ["text", "author", "role"])
async def test_a_lone_surrogate_in_an_entry_stores_nothing_and_names_the_line(
    service: MemoryService, tmp_path: Path, field: str
) -> None:
    bad = line("pear \ud800 tart") if field == "text" else line(**{f"entry_{field}": "Ann\ud800"})
    path = write(tmp_path / "f.jsonl", line("apple pie", session_id="first"), bad.replace('"s1"', '"second"'))
    with pytest.raises(FixtureError) as caught:
        await load_fixtures(service, [path])
    message = str(caught.value)
    assert message.startswith(f"{path}:2: entries.0.{field}: ") and "surrogate" in message
    assert await stored_count(service) == 0


def test_a_lone_surrogate_anywhere_in_a_line_is_a_file_line_error_from_the_cli(
    runner: CliRunner, store: str, tmp_path: Path
) -> None:
    good = line("apple pie", session_id="first")
    bad_lines = {
        "app_name": line(app_name="app\ud800"),
        "user_id": line(user_id="ann\udfff"),
        "session_id": line(session_id="s\ud800"),
        "entries.0.text": line("pear \ud800"),
        "entries.0.author": line(entry_author="\udc80"),
        "entries.0.role": line(entry_role="user\ud800"),
    }
    for where, bad in bad_lines.items():
        path = write(tmp_path / "f.jsonl", good, bad)
        result = gm(runner, "--store", store, "load", path)
        assert result.exit_code == 1, (where, result.output)
        message = one_line_error(result)
        assert message.startswith(f"error: {path}:2: {where}: "), message
        assert "nothing was loaded" in message
        # Nothing stored: not even the store is made.
        assert "no store at" in one_line_error(gm(runner, "--store", store, "stats", "--json")), where


@pytest.mark.parametrize(
    "timestamp",
    ["0001-01-01T00:00:00+05:00", "9999-12-31T23:00:00-05:00", "0001-01-01T04:59:59.999999+05:00"],
)
async def test_a_timestamp_outside_utc_years_stores_nothing_and_names_the_line(
    service: MemoryService, tmp_path: Path, timestamp: str
) -> None:
    path = write(tmp_path / "f.jsonl", line("apple pie", session_id="first"), line(entry_timestamp=timestamp))
    with pytest.raises(FixtureError) as caught:
        await load_fixtures(service, [path])
    message = str(caught.value)
    assert message.startswith(f"{path}:2: entries.0.timestamp: timestamp ") and "UTC" in message
    assert await stored_count(service) == 0


def test_a_memory_entry_whose_timestamp_overflows_utc_is_a_validation_error() -> None:
    plus_five = timezone(timedelta(hours=5))
    with pytest.raises(ValidationError, match="outside years 1 to 9999"):
        MemoryEntry(content=Content(parts=[Part(text="x")]), timestamp=datetime(1, 1, 1, tzinfo=plus_five))


async def test_the_first_and_last_utc_instants_load(service: MemoryService, tmp_path: Path) -> None:
    # The bounds themselves are fine (and must keep loading), as is year 9999 west of UTC
    # when it stays inside the year; one bad line among them still stores nothing.
    good = [
        line("plum early", session_id="a", entry_timestamp="0001-01-01T00:00:00+00:00"),
        line("plum late", session_id="b", entry_timestamp="9999-12-31T23:59:59.999999+00:00"),
        line("plum west", session_id="c", entry_timestamp="9999-12-31T10:00:00-05:00"),
    ]
    path = write(tmp_path / "f.jsonl", *good, line(session_id="d", entry_timestamp="9999-12-31T20:00:00-05:00"))
    with pytest.raises(FixtureError, match=r":4: entries\.0\.timestamp"):
        await load_fixtures(service, [path])
    assert await stored_count(service) == 0
    report = await load_fixtures(service, [write(tmp_path / "g.jsonl", *good)])
    assert report.entries == 3
    newest = await service.list_recent("app", "ann", 3)
    assert [e.text for e in newest] == ["plum late", "plum west", "plum early"]


async def test_deeply_nested_json_is_a_file_line_error(service: MemoryService, tmp_path: Path) -> None:
    deep = '{"app_name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    bracketed_text = line("[[[{{{ " * 50 + "brackets in a string do not nest", session_id="b")
    path = write(tmp_path / "f.jsonl", line(session_id="a"), deep, bracketed_text)
    with pytest.raises(FixtureError) as caught:
        await load_fixtures(service, [path])
    assert str(caught.value).startswith(f"{path}:2: JSON nested deeper than {MAX_JSON_DEPTH} levels")
    assert caught.value.count == 1  # the brackets inside a string are not nesting
    assert await stored_count(service) == 0


# ---------------------------------------------------------------------------- --limit and ValueErrors


def _main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    return int(exited.value.code or 0), capsys.readouterr().err


@pytest.mark.parametrize("command", ["recent", "search"])
@pytest.mark.parametrize("limit", [str(2**63), str(2**64 + 1), str(MAX_LIMIT + 1)])
def test_a_huge_limit_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], backend_args: list[str], command: str, limit: str
) -> None:
    query = ["orange"] if command == "search" else []
    code, err = _main(capsys, *backend_args, command, "--app", "app", "--user", "ann", "--limit", limit, *query)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "--limit" in lines[0], err
    assert str(MAX_LIMIT) in lines[0]


def test_a_value_error_is_one_line(runner: CliRunner, store: str, tmp_path: Path) -> None:
    query = tmp_path / "query.cypher"
    query.write_bytes(b"MATCH (e:Entry) RETURN e.text // caf\xe9 in Latin-1\n")
    result = gm(runner, "--store", store, "cypher", "--file", str(query))
    assert result.exit_code == 1
    # It was Python's codec message, which names no file.
    assert one_line_error(result) == f"error: {query} is not UTF-8 (invalid continuation byte at byte 36)"


# ---------------------------------------------------------------------------- ids in messages


def test_quote_ids_keeps_joined_ids_apart_and_escapes_what_does_not_print() -> None:
    assert quote_ids("a/b", "c") == '"a/b" / "c"'
    assert quote_ids("a", "b/c") == '"a" / "b/c"'
    assert quote_ids('say "hi" \\ bye') == '"say \\"hi\\" \\\\ bye"'
    assert quote_ids("alice\u202ecod.exe", "zw\u200bsp", "nb\u00a0sp", "x\U000e0041") == (
        '"alice\\u202ecod.exe" / "zw\\u200bsp" / "nb\\xa0sp" / "x\\U000e0041"'
    )
    assert quote_ids("Zoë", "東京") == '"Zoë" / "東京"'


def test_messages_quote_app_and_user_so_joined_ids_differ(runner: CliRunner, store: str, tmp_path: Path) -> None:
    # A store that holds nothing of these users (a command refuses a missing store).
    assert gm(runner, "--store", store, "load", write(tmp_path.parent / f"{tmp_path.name}.jsonl", line())).exit_code == 0
    first = gm(runner, "--store", store, "recent", "--app", "a/b", "--user", "c")
    second = gm(runner, "--store", store, "recent", "--app", "a", "--user", "b/c")
    assert first.stdout.strip() == 'nothing stored for "a/b" / "c"'
    assert second.stdout.strip() == 'nothing stored for "a" / "b/c"'
    searched = gm(runner, "--store", store, "search", "--app", "a/b", "--user", "c", "x")
    assert searched.stdout.strip() == "nothing recalled for 'x' in \"a/b\" / \"c\""
    deleted = gm(runner, "--store", store, "delete-user", "--app", "a", "--user", "b/c", "--yes")
    assert deleted.stdout.strip() == 'removed 0 entries (everything of "a" / "b/c")'
    exported = gm(runner, "--store", store, "export", "--app", "a/b", "--user", "c")
    assert 'of "a/b" / "c" (all projects)' in exported.stderr


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["delete-user"], 'Erase everything stored for "app" / "alice\\u202e\\u2066"?'),
        (["delete-session", "s\u202e1"], 'Delete session "s\\u202e1" of "app" / "alice\\u202e\\u2066"?'),
        (
            # (Global memory: a project delete on networkx is refused before asking.)
            ["delete-entries", "or\u202eange"],
            'Delete the entries of "app" / "alice\\u202e\\u2066" (global memory) that match \'or\\u202eange\'?',
        ),
    ],
)
def test_confirmation_prompts_quote_ids_and_show_bidi_controls(
    runner: CliRunner, store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], expected: str
) -> None:
    # A store that is there: where there is none, a delete says so without asking.
    assert gm(runner, "--store", store, "load", write(tmp_path.parent / f"{tmp_path.name}.jsonl", line())).exit_code == 0
    monkeypatch.setattr(_app, "terminal_to_ask", asking_on_stderr)
    user = "alice\u202e\u2066"  # a right-to-left override and an isolate: valid id characters
    result = gm(runner, "--store", store, command[0], *command[1:], "--app", "app", "--user", user, input="n\n")
    assert result.exit_code == 1
    assert expected in result.stderr
    assert "\u202e" not in result.stderr and "\u2066" not in result.stderr
    assert "nothing was deleted" in result.stderr
