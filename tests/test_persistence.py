"""``GraphMemoryService(path=...)``: every acknowledged write survives a restart or a crash.

These tests are about the networkx backend's journal, so they build their own services on
a temporary path instead of using the ``service`` fixture.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from graphmem import (
    Content,
    Decomposer,
    EntryRecord,
    GraphmemError,
    GraphMemoryService,
    MemoryEntry,
    SearchRequest,
)
from graphmem.backends._journal import Journal

REPO_ROOT = Path(__file__).resolve().parents[1]
APP, USER = "persist-app", "alice"
T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)


def entry(text: str, at: float = 0, author: str = "user") -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=T0 + timedelta(minutes=at))


def open_store(path: Path, decomposer: Decomposer) -> GraphMemoryService:
    return GraphMemoryService(nlp=decomposer, path=path)


def segment(path: Path, app: str = APP, user: str = USER) -> Path:
    """The file of the store at ``path`` that holds one user's records."""
    return Journal(path).segment_path((app, user))


def store_bytes(directory: Path) -> bytes:
    """Every file under ``directory``, concatenated."""
    return b"".join(p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file())


async def everything(service: GraphMemoryService, owners: list[tuple[str, str]]) -> list[Any]:
    """All observable entries of the given owners, comparable across reloads."""
    return [
        sorted(
            (e.entry_id, e.memory.text, e.memory.author, e.memory.content.role, e.memory.timestamp, e.session_id, e.project_id, e.position)
            for e in await service.list_entries(app, user, all_projects=True)
        )
        for app, user in owners
    ]


async def ranking(service: GraphMemoryService, query: str, app: str = APP, user: str = USER) -> list[tuple[str, float, float]]:
    response = await service.search(SearchRequest(query=query, app_name=app, user_id=user, limit=100))
    return [(h.entry_id, round(h.score, 12), round(h.context_score, 12)) for h in response.hits]


async def fill(service: GraphMemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s1",
        [
            entry("Where does your brother work?"),
            entry("At the harbour office.", at=1, author="model"),
            entry("He likes sailing on weekends", at=2),
        ],
    )
    await service.add_session(APP, USER, "s2", [entry("東京タワーの夜景 🌃 and Привет", at=3)])
    await service.add_entry(APP, USER, entry("brother birthday is in May", at=4))
    await service.add_session(APP, "bob", "s1", [entry("bob works at the harbour", at=5)])


# ---------------------------------------------------------------------------- reload


async def test_writes_survive_close_and_reload(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await fill(first)
    await first.add_session(APP, USER, "s2", [entry("replaced session about 東京", at=6)])
    assert await first.delete_entries(APP, USER, "birthday") == 1
    before = await everything(first, [(APP, USER), (APP, "bob")])
    queries = ["brother work", "harbour", "東京", "sailing"]
    rankings = [await ranking(first, q) for q in queries]
    stats = await first.stats()
    await first.close()

    second = open_store(path, decomposer)
    assert await everything(second, [(APP, USER), (APP, "bob")]) == before
    assert [await ranking(second, q) for q in queries] == rankings
    assert await second.stats() == stats
    assert "replaced session about 東京" in {t for _, t, *_ in before[0]}
    await second.close()


async def test_reload_without_close_sees_every_returned_write(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "memory.jsonl"
    writer = open_store(path, decomposer)
    await fill(writer)
    # No close(): a write that returned must already be on disk. (The writer holds the
    # store's lock: a second service reads it read-only.)
    reader = GraphMemoryService(nlp=decomposer, path=path, read_only=True)
    assert await everything(reader, [(APP, USER), (APP, "bob")]) == await everything(writer, [(APP, USER), (APP, "bob")])
    await writer.close()
    await reader.close()


async def test_reload_keeps_rankings_after_deleting_a_middle_turn(tmp_path: Path, decomposer: Decomposer) -> None:
    """Compaction must not change what a search finds: deleted turns leave a gap in the session."""
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await first.add_session(
        APP, USER, "s1", [entry("question about the violin"), entry("tennis aside", at=1), entry("Yes.", at=2, author="model")]
    )
    assert await first.delete_entries(APP, USER, "tennis") == 1
    before = await ranking(first, "violin")
    await first.close()

    second = open_store(path, decomposer)
    assert await ranking(second, "violin") == before
    await second.close()


async def test_delete_entries_keeps_an_entry_rewritten_before_its_write_and_so_does_a_reload(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete by query chose its ids before its write, which waits for the user's lock in
    a thread: a restore keeping an entry's id with other text, written in between, lost its
    new entry. The ids are now chosen inside the write, and its record names only those."""
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await first.restore_session(APP, USER, "s1", [EntryRecord(entry("my secret word is zanzibar"), "x")])
    await first.restore_session(APP, USER, "s2", [EntryRecord(entry("zanzibar again", at=1), "y")])
    rewrites: list[str] = []

    def rewriting_first(step: Callable[..., Any]) -> Callable[..., Any]:
        async def step_after_a_rewrite(*args: Any, **kwargs: Any) -> Any:
            if not rewrites:
                rewrites.append("x")
                await first.restore_session(APP, USER, "s1", [EntryRecord(entry("just the park", at=2), "x")])
            return await step(*args, **kwargs)

        return step_after_a_rewrite

    with monkeypatch.context() as patch:
        patch.setattr(first, "_delete_entries", rewriting_first(first._delete_entries))
        if hasattr(first, "_delete_matching"):  # (the old code deleted listed ids)
            patch.setattr(first, "_delete_matching", rewriting_first(first._delete_matching))
        assert await first.delete_entries(APP, USER, "zanzibar") == 1
    assert rewrites == ["x"]
    before = await everything(first, [(APP, USER)])
    assert [(i, text) for i, text, *_ in before[0]] == [("x", "just the park")]
    await first.close()

    second = open_store(path, decomposer)
    assert await everything(second, [(APP, USER)]) == before
    await second.close()


async def test_appends_survive_reload_and_compaction(tmp_path: Path, decomposer: Decomposer) -> None:
    """An appended turn keeps its place and its NEXT link after a reload, and after a
    compaction rewrote the session as one record."""
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await first.add_session(APP, USER, "s1", [entry("Where does your brother work?"), entry("tennis aside", at=1)])
    await first.append_to_session(APP, USER, "s1", [entry("At the harbour office.", at=2, author="model")])
    await first.append_to_session(APP, USER, "s1", [entry("He likes sailing", at=3)])
    before, before_ranking = await everything(first, [(APP, USER)]), await ranking(first, "brother work")
    await first.close()

    second = open_store(path, decomposer)  # replays the append records
    assert await everything(second, [(APP, USER)]) == before
    assert await ranking(second, "brother work") == before_ranking
    assert await second.delete_entries(APP, USER, "tennis") == 1  # compacts the segment
    assert "append_session" not in segment(path).read_text(encoding="utf-8")
    await second.append_to_session(APP, USER, "s1", [entry("Since May.", at=4, author="model")])
    after, after_ranking = await everything(second, [(APP, USER)]), await ranking(second, "sailing")
    await second.close()

    third = open_store(path, decomposer)
    assert await everything(third, [(APP, USER)]) == after
    assert sorted(p for *_, p in after[0]) == [0, 2, 3, 4]
    assert await ranking(third, "sailing") == after_ranking
    assert len(after_ranking) == 3  # "Since May." is the sailing turn's context: linked after the reload
    await third.close()


async def test_new_store_in_a_missing_directory(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "does" / "not" / "exist" / "memory.jsonl"
    service = open_store(path, decomposer)
    await service.health_check()
    await service.add_entry(APP, USER, entry("first memory"))
    await service.close()
    assert path.exists()
    reloaded = open_store(path, decomposer)
    assert [e.memory.text for e in await reloaded.list_entries(APP, USER)] == ["first memory"]
    await reloaded.close()


async def test_rejected_write_leaves_the_file_untouched(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "memory.jsonl"
    service = open_store(path, decomposer)
    await fill(service)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        await service.add_session(APP, USER, "s1", [entry("half of a session"), None])  # type: ignore[list-item]
    with pytest.raises(ValueError):
        await service.add_entry(APP, "", entry("no user"))
    assert path.read_bytes() == before
    await service.close()


# ---------------------------------------------------------------------------- damaged files


TORN_TAILS = {
    "half_a_record": b'{"op":"insert_entry","app_name":"persist-app","user_id":"ali',
    "complete_json_without_newline": json.dumps(
        {"op": "delete_user", "app_name": APP, "user_id": USER}
    ).encode(),
    "garbage_line_with_newline": b"\x00\x00\x00garbage\n",
    "cut_utf8_sequence": '{"op":"insert_entry","text":"東'.encode()[:-1],
}


@pytest.mark.parametrize("tail", list(TORN_TAILS.values()), ids=list(TORN_TAILS))
async def test_torn_tail_is_recovered_with_a_warning(
    tmp_path: Path, decomposer: Decomposer, caplog: pytest.LogCaptureFixture, tail: bytes
) -> None:
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await fill(first)
    before = await everything(first, [(APP, USER), (APP, "bob")])
    await first.close()
    with open(segment(path), "ab") as fh:
        fh.write(tail)  # what a crash in the middle of an append leaves

    with caplog.at_level(logging.WARNING, logger="graphmem"):
        second = open_store(path, decomposer)
        assert await everything(second, [(APP, USER), (APP, "bob")]) == before
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and r.name == "graphmem"]
    assert len(warnings) == 1
    assert str(path) in warnings[0].getMessage()

    # The store keeps working, and the next reload is clean and complete.
    await second.add_entry(APP, USER, entry("after the recovery", at=9))
    await second.close()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        third = open_store(path, decomposer)
        texts = {t for _, t, *_ in (await everything(third, [(APP, USER)]))[0]}
    assert "after the recovery" in texts
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    await third.close()


async def _filled_segment(tmp_path: Path, decomposer: Decomposer) -> tuple[Path, Path, list[bytes]]:
    """A closed store after :func:`fill`: its path, the first user's segment, and that
    segment's lines."""
    path = tmp_path / "memory.jsonl"
    first = open_store(path, decomposer)
    await fill(first)
    await first.close()
    alice = segment(path)
    return path, alice, alice.read_bytes().split(b"\n")


def _two_entries(entries: list[dict[str, Any]]) -> None:
    entries[1]["id"] = entries[0]["id"]


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (_two_entries, "holds entry id"),
        (lambda entries: entries[0].update(id=""), "'id' must not be empty"),
        (lambda entries: entries[0].update(position=-1), "'position' is negative"),
        # Values of the right type that no write makes and the fixture model refuses: the
        # store opened and searched, and then the user's export failed (exit 2, no line named).
        (lambda entries: entries[0].update(id="a\x07b"), "'id' must not contain control characters"),
        (lambda entries: entries[0].update(language="klingon"), "'language' 'klingon' is not one of en, "),
        (lambda entries: entries[2].update(position=2**70), "'position' is above the largest, 2\\*\\*62"),
        (lambda entries: entries[1].update(position=0), r"positions do not increase \(\[0, 0, 2\]\)"),
        (lambda entries: entries[0].update(text="  "), "'text' is blank"),
        (lambda entries: entries[0]["tokens"].append(" "), "'tokens' holds a blank token"),
        (lambda entries: entries[0]["entities"].append(["", "PERSON"]), "'entities' holds a blank name"),
        # A key no write makes (a typo: the language was dropped, silently, then by the
        # next compaction the key too).
        (lambda entries: entries[0].update(languge="fr"), "an entry has a key graphmem never writes: 'languge'"),
    ],
    ids=[
        "an-id-twice",
        "empty-id",
        "negative-position",
        "control-character-in-id",
        "unknown-language",
        "position-above-the-largest",
        "positions-not-increasing",
        "blank-text",
        "blank-token",
        "blank-entity-name",
        "unknown-entry-key",
    ],
)
async def test_a_record_of_entries_no_write_makes_is_refused(
    tmp_path: Path, decomposer: Decomposer, edit: Callable[[list[dict[str, Any]]], None], says: str
) -> None:
    """A hand-edited (or damaged) session record: its entries were replayed as they were,
    one id twice merged into one entry, silently."""
    await _refused_once_edited(tmp_path, decomposer, lambda record: edit(record["entries"]), says)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda record: record.update(session_id=""), "session_id must not be empty"),
        (lambda record: record.update(user_id="al\nice"), "user_id must not contain control characters"),
        (lambda record: record.update(project_id=""), "project_id must not be empty"),
        # The networkx backend has no projects: a project's session was replayed, then
        # listed by recent as global memory, and counted and exported in a project no call
        # could search or delete.
        (
            lambda record: record.update(project_id="secret"),
            "replace_session is in project 'secret': the networkx backend has no projects",
        ),
        (lambda record: record.update(projectid="p"), "replace_session has a key graphmem never writes: 'projectid'"),
    ],
    ids=["empty-session-id", "control-character-in-user-id", "empty-project-id", "in-a-project", "unknown-key"],
)
async def test_a_record_with_an_id_no_write_makes_is_refused(
    tmp_path: Path, decomposer: Decomposer, edit: Callable[[dict[str, Any]], None], says: str
) -> None:
    await _refused_once_edited(tmp_path, decomposer, edit, says)


async def _refused_once_edited(
    tmp_path: Path, decomposer: Decomposer, edit: Callable[[dict[str, Any]], None], says: str
) -> None:
    """Opening the store after ``edit`` of the segment's record of session s1 raises an
    error naming the line, by readers and writers alike."""
    path, alice, lines = await _filled_segment(tmp_path, decomposer)
    at = next(i for i, line in enumerate(lines) if b'"session_id": "s1"' in line or b'"session_id":"s1"' in line)
    record = json.loads(lines[at])
    edit(record)
    lines[at] = json.dumps(record).encode()
    alice.write_bytes(b"\n".join(lines))
    for read_only in (True, False):
        store = GraphMemoryService(nlp=decomposer, path=path, read_only=read_only)
        with pytest.raises(GraphmemError, match=f"{alice}: line {at + 1} is not a valid record: .*{says}"):
            await store.list_entries(APP, USER)
        await store.close()


async def test_an_append_past_the_largest_position_is_refused(tmp_path: Path, decomposer: Decomposer) -> None:
    """An append record the service refuses to write (appended_start): replayed after a
    session ending at 2**62, its entries took positions no export can write."""
    path, alice, lines = await _filled_segment(tmp_path, decomposer)
    at = next(i for i, line in enumerate(lines) if b'"session_id": "s1"' in line or b'"session_id":"s1"' in line)
    record = json.loads(lines[at])
    for offset, entry in enumerate(reversed(record["entries"])):
        entry["position"] = 2**62 - offset
    lines[at] = json.dumps(record).encode()
    appended = {**record, "op": "append_session", "entries": [{**record["entries"][0], "id": "later", "position": 0}]}
    lines.insert(at + 1, json.dumps(appended).encode())
    alice.write_bytes(b"\n".join(lines))
    with pytest.raises(GraphmemError, match=f"line {at + 2} is not a valid record: .*pass the largest position"):
        await open_store(path, decomposer).list_entries(APP, USER)


@pytest.mark.parametrize("damage", ["garbage", "truncated_json", "json_array"])
async def test_corrupt_middle_line_raises_and_keeps_the_file(tmp_path: Path, decomposer: Decomposer, damage: str) -> None:
    path, alice, lines = await _filled_segment(tmp_path, decomposer)
    assert len(lines) >= 4
    middle = len(lines) // 2
    lines[middle] = {"garbage": b"@@ not json @@", "truncated_json": lines[middle][: len(lines[middle]) // 2], "json_array": b"[1, 2]"}[damage]
    damaged = b"\n".join(lines)
    alice.write_bytes(damaged)

    second = open_store(path, decomposer)
    with pytest.raises(GraphmemError) as raised:
        await second.list_entries(APP, USER)
    assert str(alice) in str(raised.value)
    assert f"line {middle + 1}" in str(raised.value)
    # Nothing was cut off or rewritten: the acknowledged writes after the bad line are still there.
    assert alice.read_bytes() == damaged
    with pytest.raises(GraphmemError):
        await second.add_entry(APP, USER, entry("must not be appended to a corrupt journal"))
    assert alice.read_bytes() == damaged


async def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"some": "other file"}\n{"op": "delete_user"}\n', encoding="utf-8")
    service = open_store(path, decomposer)
    with pytest.raises(GraphmemError):
        await service.health_check()
    assert path.read_text(encoding="utf-8") == '{"some": "other file"}\n{"op": "delete_user"}\n'


# ---------------------------------------------------------------------------- erasure on disk


async def test_deletes_remove_erased_text_from_the_file(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "memory.jsonl"
    service = open_store(path, decomposer)
    await service.add_session(APP, USER, "s1", [entry("my secret passphrase is zebra"), entry("keep this grocery list", at=1)])
    await service.add_session(APP, USER, "diary", [entry("confidential diary page about the lighthouse", at=2)])
    await service.add_session(APP, "erase-me", "s1", [entry("private medical note about asthma", at=3)])
    await service.add_session(APP, "bob", "s1", [entry("bob public note", at=4)])
    assert b"zebra" in store_bytes(tmp_path)

    assert await service.delete_entries(APP, USER, "zebra") == 1
    assert await service.delete_session(APP, USER, "diary") == 1
    assert await service.delete_user(APP, "erase-me") == 1

    data = store_bytes(tmp_path)
    for erased in (b"zebra", b"passphrase", b"lighthouse", b"diary", b"asthma", b"erase-me"):
        assert erased not in data
    assert b"grocery" in data and b"bob public note" in data
    assert not list(tmp_path.rglob("*.tmp"))
    await service.close()

    reloaded = open_store(path, decomposer)
    assert sorted(e.memory.text for e in await reloaded.list_entries(APP, USER)) == ["keep this grocery list"]
    assert [e.memory.text for e in await reloaded.list_entries(APP, "bob")] == ["bob public note"]
    assert (await reloaded.stats(APP, "erase-me")).entries == 0
    await reloaded.close()


async def test_a_write_that_changes_nothing_leaves_no_trace_on_disk(tmp_path: Path, decomposer: Decomposer) -> None:
    # After delete_user, a retried erasure job or an empty session changes nothing: it must
    # not bring a file naming the erased user back, nor keep ids of one user in another's.
    path = tmp_path / "memory.jsonl"
    service = open_store(path, decomposer)
    await service.add_session(APP, "erase-me", "s1", [entry("private medical note about asthma")])
    await service.add_session(APP, "bob", "s1", [entry("bob public note", at=1)])
    erased_ids = [e.entry_id for e in await service.list_entries(APP, "erase-me")]
    bob_ids = [e.entry_id for e in await service.list_entries(APP, "bob")]
    assert await service.delete_user(APP, "erase-me") == 1
    assert await service.delete_session(APP, "erase-me", "s1") == 0
    assert await service.delete_entries_by_id(APP, "erase-me", erased_ids) == 0
    await service.add_session(APP, "erase-me", "s2", [])
    assert await service.delete_entries_by_id(APP, USER, bob_ids) == 0  # another user's ids
    data = store_bytes(tmp_path)
    assert b"erase-me" not in data and erased_ids[0].encode() not in data
    assert await service.delete_user(APP, "bob") == 1
    assert bob_ids[0].encode() not in store_bytes(tmp_path)
    # Nor does it cost a rewrite of a user who holds entries: it is not written at all.
    await service.add_session(APP, USER, "s1", [entry("alice keeps this", at=2)])
    journal = service._journal  # type: ignore[attr-defined]
    written: list[str] = []
    for name in ("append_many", "rewrite", "remove"):
        method = getattr(journal, name)
        setattr(journal, name, lambda *a, _m=method, _n=name, **k: (written.append(_n), _m(*a, **k))[1])
    assert await service.delete_session(APP, USER, "no such session") == 0
    assert await service.delete_entries_by_id(APP, USER, bob_ids) == 0
    await service.add_session(APP, USER, "empty", [])
    assert written == []
    await service.close()
    reloaded = open_store(path, decomposer)
    assert (await reloaded.stats()).users == 1
    await reloaded.close()


# ---------------------------------------------------------------------------- crash


CHILD = textwrap.dedent(
    """
    import asyncio, sys
    import spacy
    from graphmem import Content, GraphMemoryService, MemoryEntry

    async def main() -> None:
        service = GraphMemoryService(nlp=spacy.blank("en"), path=sys.argv[1])
        i = 0
        while True:
            if i % 5 == 4:
                await service.delete_session("app", "user", f"s{i - 3}")
                print(f"deleted s{i - 3}", flush=True)
            else:
                entries = [
                    MemoryEntry(content=Content().with_text(f"crashtest write {i} part {n}"))
                    for n in range(3)
                ]
                await service.add_session("app", "user", f"s{i}", entries)
                print(f"added s{i}", flush=True)
            i += 1

    asyncio.run(main())
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("acks_before_kill", [9, 40])
async def test_sigkill_mid_writes_loses_no_acknowledged_write(
    tmp_path: Path, decomposer: Decomposer, acks_before_kill: int
) -> None:
    path = tmp_path / "memory.jsonl"
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen(
        [sys.executable, str(script), str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    acks: list[str] = []
    try:
        assert child.stdout is not None
        while len(acks) < acks_before_kill:
            line = child.stdout.readline()
            if not line:
                pytest.fail(f"the child stopped before {acks_before_kill} acks: {child.stderr.read() if child.stderr else ''}")
            acks.append(line.strip())
        child.send_signal(signal.SIGKILL)
        # Acks already in the pipe were printed after their write returned: they count too.
        acks.extend(line.strip() for line in child.stdout.read().splitlines() if line.strip())
    finally:
        child.kill()
        child.wait()
        for stream in (child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    assert child.returncode == -signal.SIGKILL

    added = {a.split()[1] for a in acks if a.startswith("added ")}
    deleted = {a.split()[1] for a in acks if a.startswith("deleted ")}
    assert len(added) + len(deleted) == len(acks) >= acks_before_kill

    reloaded = open_store(path, decomposer)
    stored = await reloaded.list_entries("app", "user")
    sessions: dict[str, list[str]] = {}
    for e in stored:
        assert e.session_id is not None
        sessions.setdefault(e.session_id, []).append(e.memory.text)

    # The write in flight at the kill (the one after the last ack) may or may not be there.
    n = len(acks)
    in_flight_delete = {f"s{n - 3}"} if n % 5 == 4 else set()
    in_flight_add = set() if in_flight_delete else {f"s{n}"}

    def whole(session: str) -> bool:
        return sorted(sessions.get(session, [])) == [f"crashtest write {session[1:]} part {k}" for k in range(3)]

    for session in added - deleted:
        assert whole(session) or (session in in_flight_delete and session not in sessions), session
    for session in deleted:
        assert session not in sessions
    assert set(sessions) - added <= in_flight_add
    assert all(whole(session) for session in sessions)
    response = await reloaded.search(SearchRequest(query="crashtest", app_name="app", user_id="user", limit=1000))
    assert len(response.hits) == len(stored)
    await reloaded.close()
