"""The fixture format: validation, line-numbered errors, all-or-nothing loads, export round trips."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from graphmem import Content, EntryRecord, GraphMemoryService, MemoryEntry, MemoryService, SearchRequest
from graphmem._fixtures import (
    FixtureError,
    FixtureSession,
    demo_fixtures_path,
    dump_fixtures,
    export_fixtures,
    fixture_json_schema,
    load_fixtures,
    read_fixtures,
)

APP, USER = "app", "ann"


def session_line(
    session_id: str | None = "s1", project_id: str | None = None, texts: tuple[str, ...] = ("hello Lisbon",), **extra: Any
) -> str:
    data = {
        "app_name": APP,
        "user_id": USER,
        "session_id": session_id,
        "project_id": project_id,
        "entries": [
            {"author": "Ann", "role": "user", "text": text, "timestamp": f"2026-01-0{i + 1}T10:00:00"}
            for i, text in enumerate(texts)
        ],
    }
    data.update(extra)
    return json.dumps(data)


def write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def stored_texts(service: MemoryService, app: str = APP, user: str = USER) -> list[str]:
    return sorted(e.memory.text for e in await service.list_entries(app, user, all_projects=True))


# ---------------------------------------------------------------------------- the models


def test_naive_timestamp_means_utc() -> None:
    session = FixtureSession.model_validate_json(session_line())
    assert session.entries[0].timestamp == datetime(2026, 1, 1, 10, tzinfo=UTC)


def test_aware_timestamp_is_converted_to_utc() -> None:
    data = json.loads(session_line())
    data["entries"][0]["timestamp"] = "2026-01-01T12:00:00+02:00"
    assert FixtureSession.model_validate(data).entries[0].timestamp == datetime(2026, 1, 1, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"user_id": ""}, "user_id"),
        ({"project_id": ""}, "project_id"),
        ({"entries": []}, "entries"),
        ({"projectId": "p"}, "projectId"),  # a typo is an error, never silently ignored
        ({"app_name": 7}, "app_name"),
    ],
)
def test_invalid_sessions_are_rejected(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        FixtureSession.model_validate_json(session_line(**change))


def test_blank_text_is_rejected() -> None:
    with pytest.raises(ValidationError, match="blank"):
        FixtureSession.model_validate_json(session_line(texts=("   ",)))


def test_a_text_over_the_limit_is_rejected_with_the_other_bad_lines() -> None:
    # Refused while every line is checked, before anything is stored (not by the store,
    # halfway through a load).
    with pytest.raises(ValidationError, match="the limit is 1,048,576"):
        FixtureSession.model_validate_json(session_line(texts=("w " * 600_000,)))


def test_json_schema_describes_a_line() -> None:
    schema = fixture_json_schema()
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert set(schema["required"]) >= {"app_name", "user_id", "session_id", "entries"}
    assert schema["additionalProperties"] is False
    entry = schema["$defs"]["FixtureEntry"]
    # Only what a person must write; everything else is optional, with a documented default.
    assert set(entry["required"]) == {"author", "role", "text"}
    optional = {"timestamp", "id", "position", "tokens", "entities"}
    assert optional <= entry["properties"].keys()
    assert all(entry["properties"][name].get("description") for name in optional)
    assert "time of the load" in entry["properties"]["timestamp"]["description"]
    assert any(v.get("format") == "date-time" for v in entry["properties"]["timestamp"]["anyOf"])


# ---------------------------------------------------------------------------- reading


def test_bad_lines_are_reported_with_file_and_line_number(tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", session_line("a"), "", "{not json", session_line("b", user_id=""))
    with pytest.raises(FixtureError) as caught:
        read_fixtures([path])
    error = caught.value
    assert error.count == 2
    assert [(p.line_number, p.source) for p in error.problems] == [(3, str(path)), (4, str(path))]
    assert str(error).startswith(f"{path}:3: not valid JSON")
    assert "and 1 more bad line" in str(error)
    assert "nothing was loaded" in str(error)


def test_blank_lines_and_byte_order_mark_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(("\ufeff" + session_line("a") + "\n\n" + session_line("b") + "\n").encode("utf-8"))
    lines = read_fixtures([path])
    assert [(fl.line_number, fl.session.session_id) for fl in lines] == [(1, "a"), (3, "b")]


def test_non_object_and_non_utf8_lines(tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"[1, 2]\n\xff\xfe\n")
    with pytest.raises(FixtureError) as caught:
        read_fixtures([path])
    assert [p.line_number for p in caught.value.problems] == [1, 2]
    assert "JSON object" in caught.value.problems[0].message
    assert "UTF-8" in caught.value.problems[1].message


def test_reads_binary_streams() -> None:
    stream = io.BytesIO((session_line("a") + "\n").encode())
    assert [fl.session.session_id for fl in read_fixtures([stream])] == ["a"]


def test_missing_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_fixtures([tmp_path / "missing.jsonl"])


def test_demo_fixtures_are_valid_and_realistic() -> None:
    lines = read_fixtures([demo_fixtures_path()])
    sessions = [fl.session for fl in lines]
    assert len(sessions) >= 30
    assert len({s.app_name for s in sessions}) >= 2
    assert len({s.user_id for s in sessions}) >= 3
    assert any(s.project_id for s in sessions) and any(s.project_id is None for s in sessions)
    keys = Counter((s.app_name, s.user_id, s.project_id, s.session_id) for s in sessions)
    assert max(keys.values()) == 1, "a session id repeats: the later line would replace the earlier"
    for s in sessions:
        stamps = [e.timestamp for e in s.entries]
        assert stamps == sorted(stamps), f"{s.session_id}: entries out of time order"


# ---------------------------------------------------------------------------- loading


async def test_a_bad_line_stores_nothing(service: MemoryService, tmp_path: Path) -> None:
    good = write(tmp_path / "good.jsonl", session_line("a"))
    bad = write(tmp_path / "bad.jsonl", session_line("b"), '{"app_name": "app"}')
    with pytest.raises(FixtureError, match=rf"{bad}:2: "):
        await load_fixtures(service, [good, bad])
    assert await stored_texts(service) == []


async def test_hand_written_terms_are_lowercased_so_that_a_search_matches_them(service: MemoryService, tmp_path: Path) -> None:
    """Every stored term is lowercase, as a query's are: "Maria" written by hand in a
    fixture was stored as written and never matched."""
    line = json.dumps({"app_name": APP, "user_id": USER, "session_id": "s", "entries": [{
        "author": "Ann", "role": "user", "text": "I met Maria in Lisbon", "tokens": ["meet", "Maria", "LISBON"],
        "entities": [["Maria", "PERSON"], ["Lisbon", "GPE"]]}]})
    await load_fixtures(service, [write(tmp_path / "caps.jsonl", line)])
    [entry] = await service.list_entries(APP, USER)
    terms = (await service.entry_terms(APP, USER, [entry.entry_id]))[entry.entry_id]
    assert sorted(terms.tokens) == ["lisbon", "maria", "meet"]
    assert sorted((e.name, e.label) for e in terms.entities) == [("lisbon", "GPE"), ("maria", "PERSON")]
    [hit] = (await service.search(SearchRequest(query="Where did I meet Maria?", app_name=APP, user_id=USER))).hits
    assert "maria" in hit.matched_entities and "maria" in hit.matched_tokens


async def test_loading_twice_does_not_duplicate(service: MemoryService, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", session_line("a", texts=("one", "two")), session_line("b"))
    first = await load_fixtures(service, [path])
    second = await load_fixtures(service, [path])
    assert (first.sessions, first.entries, first.users) == (second.sessions, second.entries, second.users) == (2, 3, 1)
    assert await stored_texts(service) == ["hello Lisbon", "one", "two"]


async def test_a_session_on_two_lines_of_one_load_stops_it(service: MemoryService, tmp_path: Path) -> None:
    """The second line would replace the first: refused, as clashing entry ids are, before any write."""
    path = write(tmp_path / "f.jsonl", session_line("a", texts=("one", "two")), session_line("b"))
    with pytest.raises(FixtureError) as twice:
        await load_fixtures(service, [path, path])
    assert str(twice.value).startswith(
        f'{path}:1: session "a" of "app" / "ann" is also on {path}:1; a session is one line'
    )
    assert "(and 1 more repeated session)" in str(twice.value) and "nothing was loaded" in str(twice.value)
    split = write(tmp_path / "split.jsonl", session_line("a", texts=("one",)), session_line("b"), session_line("a", texts=("two",)))
    with pytest.raises(FixtureError, match=rf'^{split}:3: session "a" of "app" / "ann" is also on {split}:1'):
        await load_fixtures(service, [split])
    assert await stored_texts(service) == []


async def test_the_same_session_id_for_another_user_is_another_session(service: MemoryService, tmp_path: Path) -> None:
    other = json.loads(session_line("a", texts=("bob's",))) | {"user_id": "bob"}
    path = write(tmp_path / "f.jsonl", session_line("a"), json.dumps(other))
    report = await load_fixtures(service, [path])
    assert (report.sessions, report.users) == (2, 2)
    assert await stored_texts(service) == ["hello Lisbon"] and await stored_texts(service, user="bob") == ["bob's"]


async def test_loose_lines_add_their_entries_and_ids_make_reloads_replace(service: MemoryService, tmp_path: Path) -> None:
    """Lines outside any session may repeat; entries without ids are added by every load (the README says so)."""
    path = write(tmp_path / "loose.jsonl", session_line(None, texts=("loose one",)), session_line(None, texts=("loose two",)))
    await load_fixtures(service, [path])
    await load_fixtures(service, [path])
    assert await stored_texts(service) == ["loose one", "loose one", "loose two", "loose two"]
    with_id = session_line(None, texts=("kept once",))
    data = json.loads(with_id)
    data["entries"][0]["id"] = "loose-1"
    path = write(tmp_path / "ids.jsonl", json.dumps(data))
    await load_fixtures(service, [path])
    await load_fixtures(service, [path])
    assert (await stored_texts(service)).count("kept once") == 1


async def test_project_lines_on_a_backend_without_projects(tmp_path: Path, decomposer: Any) -> None:
    service = GraphMemoryService(decomposer)
    path = write(tmp_path / "f.jsonl", session_line("a"), session_line("b", project_id="p"), session_line("c", project_id="p"))
    with pytest.raises(FixtureError) as caught:
        await load_fixtures(service, [path])
    message = str(caught.value)
    assert message.startswith(f'{path}:2: session "b" is in project "p"')
    assert "and 1 more project line" in message and "--skip-projects" in message
    assert await stored_texts(service) == []  # never widened to global, nothing stored

    report = await load_fixtures(service, [path], skip_projects=True)
    assert (report.sessions, report.skipped_project_sessions) == (1, 2)
    assert await stored_texts(service) == ["hello Lisbon"]


async def test_skip_projects_also_skips_on_a_backend_with_projects(service: MemoryService, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", session_line("a"), session_line("b", project_id="p", texts=("in project",)))
    report = await load_fixtures(service, [path], skip_projects=True)
    assert (report.sessions, report.skipped_project_sessions) == (1, 1)
    assert await stored_texts(service) == ["hello Lisbon"]


async def test_sessionless_lines_store_loose_entries(service: MemoryService, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", session_line(None, texts=("loose one", "loose two")))
    await load_fixtures(service, [path])
    entries = await service.list_entries(APP, USER)
    assert sorted((e.memory.text, e.session_id) for e in entries) == [("loose one", None), ("loose two", None)]


async def test_progress_is_reported(service: MemoryService, tmp_path: Path) -> None:
    path = write(tmp_path / "f.jsonl", session_line("a"), session_line("b"))
    seen: list[tuple[int, int]] = []
    await load_fixtures(service, [path], on_progress=lambda done, total: seen.append((done, total)))
    assert seen == [(1, 2), (2, 2)]


# ---------------------------------------------------------------------------- export


async def search_results(service: MemoryService, query: str, project: str | None = None) -> list[tuple[Any, ...]]:
    response = await service.search(
        SearchRequest(query=query, app_name="companion", user_id="alice", project_id=project, limit=20)
    )
    return [
        (round(h.score, 9), h.memory.text, h.memory.author, h.memory.timestamp, sorted(h.matched_tokens), sorted(h.matched_entities))
        for h in response.hits
    ]


QUERIES = ("Where does Maria work?", "Biscuit vet Okafor", "sister Lisbon birthday")


async def test_export_then_load_gives_the_same_search_results(service: MemoryService, tmp_path: Path) -> None:
    await load_fixtures(service, [demo_fixtures_path()], skip_projects=not service.supports_project_scoping())
    before = [await search_results(service, q) for q in QUERIES]
    assert all(before)
    path = tmp_path / "alice.jsonl"
    path.write_text("".join(dump_fixtures(await export_fixtures(service, "companion", "alice", all_projects=True))))

    await service.delete_user("companion", "alice")
    assert await search_results(service, QUERIES[0]) == []
    await load_fixtures(service, [path])
    assert [await search_results(service, q) for q in QUERIES] == before


async def test_export_round_trip_keeps_project_results(service: MemoryService, tmp_path: Path) -> None:
    if not service.supports_project_scoping():
        pytest.skip("projects need a backend with project support")
    await load_fixtures(service, [demo_fixtures_path()])
    before = await search_results_for(service, "workdesk", "alice", "Atlas cutover staging", "q3-launch")
    sessions = await export_fixtures(service, "workdesk", "alice", all_projects=True)
    assert {s.project_id for s in sessions} == {None, "q3-launch", "hiring"}
    path = tmp_path / "alice.jsonl"
    path.write_text("".join(dump_fixtures(sessions)), encoding="utf-8")
    await service.delete_user("workdesk", "alice")
    await load_fixtures(service, [path])
    assert await search_results_for(service, "workdesk", "alice", "Atlas cutover staging", "q3-launch") == before


async def search_results_for(service: MemoryService, app: str, user: str, query: str, project: str) -> list[Any]:
    response = await service.search(SearchRequest(query=query, app_name=app, user_id=user, project_id=project))
    return [(round(h.score, 9), h.memory.text, h.project_id) for h in response.hits]


async def test_export_scopes(service: MemoryService) -> None:
    await service.add_session(APP, USER, "g", [FixtureSession.model_validate_json(session_line()).memory_entries()[0]])
    everything = await export_fixtures(service, APP, USER, all_projects=True)
    global_only = await export_fixtures(service, APP, USER)
    assert [s.session_id for s in everything] == [s.session_id for s in global_only] == ["g"]
    line = json.loads(next(dump_fixtures(everything)))
    assert list(line) == ["app_name", "user_id", "session_id", "project_id", "entries"]
    assert line["entries"][0]["timestamp"] == "2026-01-01T10:00:00+00:00"
    assert await export_fixtures(service, APP, "nobody", all_projects=True) == []


# ---------------------------------------------------------------------------- what a line may not do silently


def entry_json(text: str, **fields: Any) -> dict[str, Any]:
    return {"author": "Ann", "role": "user", "text": text, "timestamp": "2026-01-01T10:00:00", **fields}


def line_of(session_id: str | None, *entries: dict[str, Any], user: str = USER) -> str:
    return json.dumps({"app_name": APP, "user_id": user, "session_id": session_id, "entries": list(entries)})


async def test_one_entry_id_on_two_loose_lines_stops_the_load(service: MemoryService, tmp_path: Path) -> None:
    """The later line would replace the earlier entry: "loaded 2 entries", one stored."""
    path = write(
        tmp_path / "dup.jsonl",
        line_of(None, entry_json("My passport number is 123", id="X")),
        line_of(None, entry_json("My dentist is Dr Who", id="X")),
    )
    with pytest.raises(FixtureError, match=r'dup.jsonl:2: entry id "X" is also on .*dup.jsonl:1, a later line would replace it'):
        await load_fixtures(service, [path])
    assert await stored_texts(service) == []


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("timestamp", 20240503, "timestamp must be an ISO 8601 string"),  # read as seconds since 1970
        ("timestamp", "20240503.0", "ISO 8601"),  # so was this (23 August 1970)
        ("timestamp", "1.7e9", "ISO 8601"),
        ("position", True, "position"),  # stored as 1
        ("position", 1.0, "position"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused(tmp_path: Path, field: str, value: Any, message: str) -> None:
    path = write(tmp_path / "types.jsonl", line_of("s1", entry_json("hello", **{field: value})))
    with pytest.raises(FixtureError, match=message):
        read_fixtures([path])


def test_an_iso_8601_basic_date_is_that_date(tmp_path: Path) -> None:
    """"20240503" (ISO 8601's basic form) was stored as 1970-08-23T06:21:43Z."""
    path = write(tmp_path / "basic.jsonl", line_of("s1", entry_json("hello", timestamp="20240503")))
    assert read_fixtures([path])[0].session.entries[0].timestamp == datetime(2024, 5, 3, tzinfo=UTC)


def test_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    """JSON keeps the last of two equal keys: the line would load into the second user."""
    text = line_of("s1", entry_json("hello"), user="alice").replace('"user_id": "alice"', '"user_id": "alice", "user_id": "bob"')
    path = write(tmp_path / "keys.jsonl", text)
    with pytest.raises(FixtureError, match="keys.jsonl:1: key 'user_id' is given twice"):
        read_fixtures([path])


async def test_a_language_without_terms_decides_how_the_text_is_decomposed(service: MemoryService, tmp_path: Path) -> None:
    """Spanish without accents reads as English to detection; the line says it is Spanish."""
    path = write(
        tmp_path / "es.jsonl",
        line_of("s1", entry_json("Lucia trabaja en el mercado por las mananas", language="es")),
    )
    await load_fixtures(service, [path])
    (stored,) = await service.list_entries(APP, USER)
    assert stored.language == "es"
    (terms,) = (await service.entry_terms(APP, USER, [stored.entry_id])).values()
    assert "trabajar" in terms.tokens and "el" not in terms.tokens and "por" not in terms.tokens


async def test_a_failure_while_storing_says_what_was_stored(service: MemoryService, tmp_path: Path) -> None:
    """Each line is its own write: an id taken by another user between the check and the
    store of the last line leaves the lines before it stored, and the error says so."""
    path = write(
        tmp_path / "race.jsonl",
        line_of("s1", entry_json("first session")),
        line_of("s2", entry_json("second session")),
        line_of("s3", entry_json("third session", id="SHARED-X")),
    )
    original = service.restore_session

    async def another_user_takes_the_id() -> None:  # what another process does meanwhile
        await original(APP, "bob", "b1", [EntryRecord(memory=bobs_entry(), entry_id="SHARED-X")])

    before_third_restore(service, another_user_takes_the_id)
    with pytest.raises(FixtureError, match=r"race.jsonl:3: .*SHARED-X.*the 2 sessions before it were stored") as raised:
        await load_fixtures(service, [path])
    assert raised.value.stored == 2
    assert await stored_texts(service) == ["first session", "second session"]


async def test_a_full_disk_while_storing_says_what_was_stored(service: MemoryService, tmp_path: Path) -> None:
    """A store's file that cannot be written (``OSError``: a full disk) said only "the write
    was undone", though the lines before it were stored."""
    import errno

    path = write(
        tmp_path / "full.jsonl",
        line_of("s1", entry_json("first session")),
        line_of("s2", entry_json("second session")),
        line_of("s3", entry_json("third session")),
    )
    async def the_disk_fills_up() -> None:
        raise OSError(errno.ENOSPC, "No space left on device (the write was undone)", "segment.journal")

    before_third_restore(service, the_disk_fills_up)
    with pytest.raises(FixtureError, match=r"full.jsonl:3: .*No space.*the 2 sessions before it were stored") as raised:
        await load_fixtures(service, [path])
    assert raised.value.stored == 2
    assert await stored_texts(service) == ["first session", "second session"]


def before_third_restore(service: MemoryService, happen: Callable[[], Awaitable[None]]) -> None:
    """Make ``happen`` run just before the service's third ``restore_session`` (a fixture's
    third line), which then goes ahead unless ``happen`` raised."""
    original = service.restore_session
    calls = 0

    async def restore(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 3:
            await happen()
        return await original(*args, **kwargs)

    service.restore_session = restore  # type: ignore[method-assign]


def bobs_entry() -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text("bob's"), timestamp=datetime(2026, 1, 1, tzinfo=UTC))


def test_standard_input_closed_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setattr(sys, "stdin", None)
    with pytest.raises(FixtureError, match="standard input is closed"):
        read_fixtures(["-"])


def test_the_readmes_hand_written_line_loads_as_it_is_shown(tmp_path: Path) -> None:
    """The README showed its example line wrapped over three lines: copied into a file,
    it was refused as bad JSON."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Fixtures\n") :]
    example = section[section.index("```json\n") + len("```json\n") : section.index("\n```", section.index("```json"))]
    copied = tmp_path / "hand_written.jsonl"
    copied.write_text(example + "\n", encoding="utf-8")
    [line] = read_fixtures([copied])
    assert line.session.entries[0].text == "I want to send a care package to my sister Maria."


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('{"app_name": "a", "user_id": "u", "session_id": "s"\n', "(Expecting ',' delimiter at the end of the line)"),
        ('{"app_name": "a", "user_id": "u", "session_id": "s"\r\n', "(Expecting ',' delimiter at the end of the line)"),
        ('{"app_name": "a" "user_id": "u"}\n', "(Expecting ',' delimiter at column 18)"),
        # Python's message ends in "at": it was reported "at at column 16".
        ('{"app_name": "a\tb"}\n', "(Invalid control character at column 16)"),
        ('{"app_name": "a\n', "(Unterminated string starting at column 14)"),
    ],
)
def test_bad_json_is_reported_where_it_is_on_the_line(tmp_path: Path, line: str, where: str) -> None:
    """A line cut short was reported "at column 1": the parser read the line with its line
    end, so the end of the line was column 1 of a second one."""
    path = tmp_path / "cut.jsonl"
    path.write_bytes(line.encode("utf-8"))
    with pytest.raises(FixtureError) as raised:
        read_fixtures([path])
    assert f"{path}:1: not valid JSON {where}" in str(raised.value)


@pytest.mark.timeout(30)
def test_a_line_cut_short_in_a_string_of_many_escaped_quotes_is_refused_in_linear_time(tmp_path: Path) -> None:
    """The depth check stripped strings with a regex that, for a string left open, rescanned
    to the end of the line from each of its quotes: a 40 KB line cut short (a full disk) took
    23 s, 80 KB 85 s. This one (400 KB) would take over half an hour; it is read once."""
    path = tmp_path / "cut.jsonl"
    path.write_text('{"app_name": "' + '\\"' * 200_000 + "\n", encoding="utf-8")
    with pytest.raises(FixtureError) as raised:
        read_fixtures([path])
    assert f"{path}:1: not valid JSON (Unterminated string starting at column 14)" in str(raised.value)


# ---------------------------------------------------------------- scripts/load_fixtures.py

LOAD_SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "load_fixtures.py"


def load_script(tmp_path: Path, *args: str, **variables: str) -> Any:
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("GRAPHMEM_")} | variables
    return subprocess.run([sys.executable, str(LOAD_SCRIPT), *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_the_load_script_refused_makes_no_store_and_the_command_line_wins(tmp_path: Path) -> None:
    """repro: scripts/load_fixtures.py opened the store before reading the files, so a load
    refused (a project line on networkx, a file not there) left an empty store at the path,
    which every read then took for "nothing stored"; and a GRAPHMEM_URI or GRAPHMEM_BACKEND
    from the environment beat the --store written on its command line."""
    write(tmp_path / "proj.jsonl", session_line(project_id="p"))
    write(tmp_path / "glob.jsonl", session_line())
    refused = load_script(tmp_path, "--store", "a.journal", "proj.jsonl")
    assert refused.returncode == 1 and "project" in refused.stderr and "Traceback" not in refused.stderr
    missing = load_script(tmp_path, "--store", "b.journal", "missing.jsonl")
    assert missing.returncode == 1 and "cannot read missing.jsonl" in missing.stderr
    nothing = load_script(tmp_path, "--store", "c.journal", "--skip-projects", "proj.jsonl")
    assert nothing.returncode == 0 and "no store was made" in nothing.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["glob.jsonl", "proj.jsonl"]

    by_uri = load_script(tmp_path, "--store", "d.journal", "glob.jsonl", GRAPHMEM_URI=str(tmp_path / "env.journal"))
    by_backend = load_script(tmp_path, "--store", "e.journal", "glob.jsonl", GRAPHMEM_BACKEND="neo4j")
    for done, journal in ((by_uri, "d.journal"), (by_backend, "e.journal")):
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("loaded 1 session, 1 entry, 1 user into networkx store ")
        assert (tmp_path / journal).is_file()
    assert not (tmp_path / "env.journal").exists()
