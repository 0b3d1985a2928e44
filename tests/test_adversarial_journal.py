"""Attacks on the networkx backend's journal (issue 9, "Trust"): what a second process, a
foreign file, a full disk, a crash in the middle of a compaction or a damaged line must not
be able to do to a store.

Each test names the attack; each failed on the journal as it was before these fixes.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import graphmem.backends._journal as journal_module
from graphmem import (
    Content,
    Decomposer,
    EntryIdConflictError,
    EntryRecord,
    GraphMemoryService,
    JournalCompactionError,
    JournalCorruptError,
    MemoryEntry,
    ReadOnlyStoreError,
    SearchRequest,
    StoreLockedError,
)
from graphmem.cli._app import app

REPO_ROOT = Path(__file__).resolve().parents[1]
APP, USER = "adv-app", "alice"
T0 = datetime(2024, 3, 1, 8, 0, tzinfo=UTC)
CLI_USER = ["--app", APP, "--user", USER]


def entry(text: str) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), timestamp=T0)


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")])}


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


async def acli(*args: str) -> Any:
    """:func:`cli` from an async test (the command runs its own event loop)."""
    return await asyncio.to_thread(cli, *args)


def one_line_error(result: Any) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.output
    return str(lines[0])


def files_holding(directory: Path, text: str) -> list[str]:
    """Every file under ``directory`` whose bytes contain ``text``."""
    needle = text.encode("utf-8")
    return sorted(str(p) for p in directory.rglob("*") if p.is_file() and needle in p.read_bytes())


def segment(store: Path, user: str = USER) -> Path:
    """The file of the store that holds one user's records."""
    return journal_module.Journal(store).segment_path((APP, user))


async def texts(service: GraphMemoryService, user: str = USER) -> list[str]:
    return sorted(e.memory.text for e in await service.list_entries(APP, user))


@pytest.fixture
def store(tmp_path: Path) -> Path:
    directory = tmp_path / "store"
    directory.mkdir()
    return directory / "memory.journal"


# ---------------------------------------------------------------------------- two processes

HOLDER = textwrap.dedent(
    """
    import asyncio, sys
    import spacy
    from graphmem import Content, GraphMemoryService, MemoryEntry

    async def main() -> None:
        service = GraphMemoryService(nlp=spacy.blank("en"), path=sys.argv[1])
        await service.add_session("adv-app", "alice", "agent", [MemoryEntry(content=Content().with_text("agent wrote apricot"))])
        print("ready", flush=True)
        sys.stdin.readline()  # the test says when to go on
        await service.add_entry("adv-app", "alice", MemoryEntry(content=Content().with_text("agent wrote damson later")))
        await service.delete_session("adv-app", "alice", "agent")
        await service.close()
        print("closed", flush=True)

    asyncio.run(main())
    """
)


@pytest.fixture
def holder(store: Path, tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A long-running agent process holding the store open for writing."""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER, encoding="utf-8")
    child = subprocess.Popen(
        [sys.executable, str(script), str(store)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env(),
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line.strip() == "ready", child.stderr.read() if child.stderr else ""
        yield child
    finally:
        child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()


@pytest.mark.slow
async def test_a_second_writer_process_is_refused_and_names_the_holder(
    store: Path, holder: subprocess.Popen[str], decomposer: Decomposer
) -> None:
    before = store.read_bytes()
    second = GraphMemoryService(nlp=decomposer, path=store)
    with pytest.raises(StoreLockedError) as raised:
        await second.add_entry(APP, USER, entry("second writer wrote quince"))
    assert f"pid {holder.pid}" in str(raised.value) and str(store) in str(raised.value)
    await second.close()

    result = await acli("--store", str(store), "delete-user", *CLI_USER, "--yes")
    assert result.exit_code == 1
    assert f"pid {holder.pid}" in one_line_error(result)
    assert store.read_bytes() == before  # nothing of the refused writers reached the journal

    # The agent goes on, and every write it acknowledged is there.
    assert holder.stdin is not None and holder.stdout is not None
    holder.stdin.write("go\n")
    holder.stdin.flush()
    assert holder.stdout.readline().strip() == "closed"
    assert holder.wait() == 0
    after = GraphMemoryService(nlp=decomposer, path=store)
    assert await texts(after) == ["agent wrote damson later"]
    await after.add_entry(APP, USER, entry("now the lock is free"))  # released on close
    await after.close()


@pytest.mark.slow
async def test_read_only_cli_commands_work_beside_a_writer(store: Path, holder: subprocess.Popen[str]) -> None:
    before = store.read_bytes()
    stats = await acli("--store", str(store), "stats", "--json")
    assert stats.exit_code == 0, stats.output
    assert json.loads(stats.stdout)["entries"] == 1
    search = await acli("--store", str(store), "search", *CLI_USER, "apricot", "--json")
    assert search.exit_code == 0, search.output
    assert "agent wrote apricot" in search.stdout
    for command in (["recent", *CLI_USER], ["export", *CLI_USER]):
        result = await acli("--store", str(store), *command)
        assert result.exit_code == 0, result.output
        assert "apricot" in result.stdout
    assert store.read_bytes() == before


async def test_two_writers_in_one_process_are_refused_too(store: Path, decomposer: Decomposer) -> None:
    first = GraphMemoryService(nlp=decomposer, path=store)
    await first.add_entry(APP, USER, entry("first"))
    second = GraphMemoryService(nlp=decomposer, path=store)
    with pytest.raises(StoreLockedError):
        await second.health_check()
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader) == ["first"]
    with pytest.raises(ReadOnlyStoreError):
        await reader.delete_user(APP, USER)
    await first.close()
    await second.add_entry(APP, USER, entry("second"))
    assert await texts(second) == ["first", "second"]
    await second.close()
    await reader.close()
    with pytest.raises(ValueError):
        GraphMemoryService(nlp=decomposer, read_only=True)


def test_a_process_forked_from_the_writer_is_refused_and_loses_nothing(store: Path, decomposer: Decomposer) -> None:
    # A fork shares the writer's lock (a flock belongs to the open file), so nothing else
    # stopped the child: its rewrite of the segment, built from its own copy of the store,
    # silently dropped what the parent had acknowledged meanwhile.
    service = GraphMemoryService(nlp=decomposer, path=store)
    asyncio.run(service.add_session(APP, USER, "s0", [entry("before the fork")]))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: a multiprocessing worker with the fork start method
        code = 1
        try:
            os.close(read_end)
            try:
                asyncio.run(service.add_session(APP, USER, "s0", [entry("the child replaced it")]))
                message = "written"
            except StoreLockedError as exc:
                message = str(exc)
            os.write(write_end, message.encode("utf-8"))
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        message = fh.read().decode("utf-8")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert f"pid {os.getpid()}" in message and "forked" in message, message
    asyncio.run(service.add_session(APP, USER, "s1", [entry("after the fork")]))  # the writer goes on
    asyncio.run(service.close())
    reopened = GraphMemoryService(nlp=decomposer, path=store)
    assert sorted(asyncio.run(texts(reopened))) == ["after the fork", "before the fork"]
    asyncio.run(reopened.close())


# ---------------------------------------------------------------------------- not a journal


def test_stats_leaves_a_one_line_file_without_newline_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(b"my only copy of an important note")
    for command in (["stats"], ["search", *CLI_USER, "note"], ["delete-user", *CLI_USER, "--yes"]):
        result = cli("--store", str(path), *command)
        assert result.exit_code == 1, result.output
        assert "not a graphmem journal" in one_line_error(result)
        assert path.read_bytes() == b"my only copy of an important note"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no lock file beside it


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "exit_code", "message"),
    [("dev_full", 1, "is not a regular file, not a graphmem journal"), ("directory", 2, "is a directory")],
)
def test_a_device_or_a_directory_is_refused_promptly(tmp_path: Path, kind: str, exit_code: int, message: str) -> None:
    target = "/dev/full" if kind == "dev_full" else str(tmp_path)

    def limit_memory() -> None:  # reading /dev/full to its end would exhaust the machine otherwise
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    for command in (["stats"], ["delete-user", *CLI_USER, "--yes"]):
        completed = subprocess.run(
            [sys.executable, "-m", "graphmem.cli", "--store", target, *command],
            capture_output=True, text=True, env=child_env() | {"COLUMNS": "200"}, timeout=120,
            check=False, preexec_fn=limit_memory,
        )
        assert completed.returncode == exit_code, completed.stderr
        lines = completed.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), completed.stderr
        assert message in lines[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["dev_full", "directory", "fifo"])
async def test_the_api_refuses_a_store_that_is_not_a_regular_file(
    tmp_path: Path, decomposer: Decomposer, kind: str
) -> None:
    target = Path("/dev/full") if kind == "dev_full" else tmp_path / "store"
    if kind == "directory":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)  # opening it to read would wait for a writer forever
    for read_only in (True, False):
        service = GraphMemoryService(nlp=decomposer, path=target, read_only=read_only)
        with pytest.raises(JournalCorruptError, match="not a graphmem journal"):
            await service.health_check()
        await service.close()
    assert [p.name for p in tmp_path.iterdir()] == ([] if kind == "dev_full" else ["store"])


async def test_a_torn_tail_is_ignored_by_readers_and_never_cut_by_them(store: Path, decomposer: Decomposer) -> None:
    writer = GraphMemoryService(nlp=decomposer, path=store)
    await writer.add_entry(APP, USER, entry("plum harvest notes"))
    await writer.close()
    alice = segment(store)
    with open(alice, "ab") as fh:
        fh.write(b'{"op":"insert_entry","app_name":"adv-app","user_id":"ali')
    torn = alice.read_bytes()
    alice.chmod(0o444)
    try:
        result = await acli("--store", str(store), "search", *CLI_USER, "plum", "--json")
        assert result.exit_code == 0, result.output
        assert "plum harvest notes" in result.stdout
        assert (await acli("--store", str(store), "stats")).exit_code == 0
        assert alice.read_bytes() == torn
    finally:
        alice.chmod(0o644)
    # A writer does cut it, and then appends after the last complete line.
    writer = GraphMemoryService(nlp=decomposer, path=store)
    await writer.add_entry(APP, USER, entry("after the cut"))
    await writer.close()
    assert b'"ali\n' not in alice.read_bytes() and b'"ali{' not in alice.read_bytes()
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader) == ["after the cut", "plum harvest notes"]


# ---------------------------------------------------------------------------- failed append


@pytest.mark.parametrize("failure", ["disk_full_half_way", "fsync_failed"])
async def test_a_failed_append_does_not_come_back_after_a_restart(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch, failure: str
) -> None:
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_entry(APP, USER, entry("acknowledged before"))
    alice = segment(store)
    acknowledged = alice.read_bytes()

    if failure == "disk_full_half_way":
        def write_half(fd: int, data: bytes) -> None:
            os.write(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(journal_module, "_write_all", write_half, raising=False)
    else:
        real_fsync = os.fsync

        def failing_fsync(fd: int) -> None:
            if os.fstat(fd).st_size > len(acknowledged):
                raise OSError(errno.EIO, "Input/output error")
            real_fsync(fd)

        monkeypatch.setattr(journal_module.os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        await service.add_entry(APP, USER, entry("reported as failed"))
    monkeypatch.undo()
    assert alice.read_bytes() == acknowledged
    assert await texts(service) == ["acknowledged before"]

    await service.add_entry(APP, USER, entry("acknowledged after"))
    await service.close()
    reloaded = GraphMemoryService(nlp=decomposer, path=store)
    assert await texts(reloaded) == ["acknowledged after", "acknowledged before"]
    await reloaded.close()


async def test_a_new_users_failed_first_write_names_its_file_and_says_nothing_was_written(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk on a new user's first write said only "No space left on device": no
    file, no word of what was kept (an existing user's append said both)."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_entry(APP, USER, entry("alice was here"))
    real_fsync = os.fsync

    def full_disk(fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.os, "fsync", full_disk)
    with pytest.raises(OSError) as failed:
        await service.add_entry(APP, "bob", entry("bob's first words"))
    monkeypatch.setattr(journal_module.os, "fsync", real_fsync)
    assert failed.value.errno == errno.ENOSPC
    assert failed.value.filename == str(segment(store, "bob"))
    assert "nothing was written" in str(failed.value)
    assert await texts(service, "bob") == [] and not segment(store, "bob").exists()
    await service.add_entry(APP, "bob", entry("bob again"))
    await service.close()
    reloaded = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reloaded, "bob") == ["bob again"]
    await reloaded.close()


# ---------------------------------------------------------------------------- erasure


@pytest.mark.parametrize("replacement", [["a harmless summary"], []], ids=["redacted", "emptied"])
async def test_replacing_a_session_erases_its_old_text(
    store: Path, decomposer: Decomposer, replacement: list[str]
) -> None:
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("my card number is 4111 zebracode")])
    await service.add_session(APP, USER, "s2", [entry("unrelated notes stay")])
    await service.add_session(APP, USER, "s1", [entry(t) for t in replacement])
    assert files_holding(store.parent, "zebracode") == []
    assert await texts(service) == sorted([*replacement, "unrelated notes stay"])
    await service.close()


async def test_a_failed_compaction_fails_loudly_and_the_next_write_erases(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "secret", [entry("the vault code is quokka")])
    await service.add_session(APP, USER, "other", [entry("shopping list")])
    real_replace = os.replace

    def no_space(src: Any, dst: Any) -> None:
        if Path(dst) == segment(store):
            raise OSError(errno.ENOSPC, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(journal_module.os, "replace", no_space)
    with pytest.raises(JournalCompactionError) as raised:
        await service.delete_session(APP, USER, "secret")
    assert str(store) in str(raised.value) and isinstance(raised.value, OSError)
    assert await texts(service) == ["shopping list"]  # the delete itself took effect
    with pytest.raises(JournalCompactionError):
        await service.add_entry(APP, USER, entry("a write while the disk is full"))
    monkeypatch.undo()
    assert files_holding(store.parent, "quokka") == [str(segment(store))]  # where the error said
    assert str(segment(store)) in str(raised.value)

    await service.add_entry(APP, USER, entry("the disk has room again"))
    assert files_holding(store.parent, "quokka") == []
    await service.close()
    reloaded = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reloaded) == ["a write while the disk is full", "shopping list", "the disk has room again"]


CRASHER = textwrap.dedent(
    """
    import asyncio, os, signal, sys
    import spacy
    import graphmem.backends._journal as journal
    from graphmem import Content, GraphMemoryService, MemoryEntry

    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    async def main() -> None:
        service = GraphMemoryService(nlp=spacy.blank("en"), path=sys.argv[1])
        text = lambda t: [MemoryEntry(content=Content().with_text(t))]
        await service.add_session("adv-app", "alice", "diary", text("diary says wombat secret"))
        await service.add_session("adv-app", "alice", "keep", text("keep the grocery list"))
        if sys.argv[2] == "temp_written":
            journal.os.replace = die  # killed after the compacted file is complete, before the rename
        else:
            journal.os.fchmod = die  # killed right after the temporary file is created
        await service.delete_session("adv-app", "alice", "diary")
        print("the delete returned", flush=True)

    asyncio.run(main())
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("crash_point", ["temp_written", "temp_created"])
async def test_a_compaction_killed_midway_is_finished_on_the_next_open(
    store: Path, tmp_path: Path, decomposer: Decomposer, crash_point: str
) -> None:
    script = tmp_path / "crasher.py"
    script.write_text(CRASHER, encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(script), str(store), crash_point],
        capture_output=True, text=True, env=child_env(), timeout=120, check=False,
    )
    assert completed.returncode == -signal.SIGKILL, completed.stderr
    assert "returned" not in completed.stdout
    assert files_holding(store.parent, "wombat")  # the delete never returned: it may stay for now

    crashed = store.read_bytes()
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader) == ["keep the grocery list"]  # the delete record applies
    assert store.read_bytes() == crashed  # a reader does not compact

    writer = GraphMemoryService(nlp=decomposer, path=store)
    await writer.health_check()
    assert files_holding(store.parent, "wombat") == []
    assert files_holding(store.parent, "diary") == []
    assert await texts(writer) == ["keep the grocery list"]
    await writer.close()


# ---------------------------------------------------------------------------- damaged shapes


def _valid_journal(store: Path) -> list[bytes]:
    good_entry = {"id": "e1", "author": "user", "role": "user", "text": "fig tree", "timestamp": "2024-03-01T08:00:00+00:00",
                  "position": 0, "tokens": ["fig", "tree"], "entities": []}
    lines = [
        {"format": "graphmem-journal", "version": 1},
        {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None, "entry": good_entry},
        {"op": "replace_session", "app_name": APP, "user_id": USER, "project_id": None, "session_id": "s",
         "entries": [{**good_entry, "id": "e2", "text": "olive grove", "tokens": ["olive", "grove"]}]},
    ]
    return [json.dumps(line).encode() for line in lines]


BAD_RECORDS: dict[str, Any] = {
    "empty_object": {},
    "duplicate_header": {"format": "graphmem-journal", "version": 1},
    "unknown_op": {"op": "drop_everything", "app_name": APP, "user_id": USER},
    "user_id_a_number": {"op": "delete_user", "app_name": APP, "user_id": 5},
    "entries_a_string": {"op": "replace_session", "app_name": APP, "user_id": USER, "project_id": None,
                         "session_id": "s", "entries": "oops"},
    "entry_without_text": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                           "entry": {"id": "x", "author": "u", "role": "user", "timestamp": "2024-03-01T08:00:00",
                                     "position": 0, "tokens": [], "entities": []}},
    "bad_timestamp": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                      "entry": {"id": "x", "author": "u", "role": "user", "text": "t", "timestamp": "yesterday",
                                "position": 0, "tokens": [], "entities": []}},
    "position_a_string": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                          "entry": {"id": "x", "author": "u", "role": "user", "text": "t",
                                    "timestamp": "2024-03-01T08:00:00", "position": "0", "tokens": [], "entities": []}},
    "entity_not_a_pair": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                          "entry": {"id": "x", "author": "u", "role": "user", "text": "t",
                                    "timestamp": "2024-03-01T08:00:00", "position": 0, "tokens": [], "entities": ["Ann"]}},
    "time_refs_a_string": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                           "entry": {"id": "x", "author": "u", "role": "user", "text": "t",
                                     "timestamp": "2024-03-01T08:00:00", "position": 0, "tokens": [], "entities": [],
                                     "time_refs": "last week"}},
    "time_refs_not_ranges": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                             "entry": {"id": "x", "author": "u", "role": "user", "text": "t",
                                       "timestamp": "2024-03-01T08:00:00", "position": 0, "tokens": [], "entities": [],
                                       "time_refs": ["last week"]}},
    # What no write of the networkx backend makes: it has no projects.
    "in_a_project": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": "p",
                     "entry": {"id": "x", "author": "u", "role": "user", "text": "t",
                               "timestamp": "2024-03-01T08:00:00", "position": 0, "tokens": [], "entities": []}},
    "session_in_a_project": {"op": "replace_session", "app_name": APP, "user_id": USER, "project_id": "p",
                             "session_id": "s9", "entries": []},
    "delete_project": {"op": "delete_project", "app_name": APP, "user_id": USER, "project_id": "p"},
    # Keys no write makes: a typo, a hand edit, or a newer format (which comes with a new version).
    "unknown_record_key": {"op": "delete_user", "app_name": APP, "user_id": USER, "reason": "asked"},
    "unknown_entry_key": {"op": "insert_entry", "app_name": APP, "user_id": USER, "project_id": None,
                          "entry": {"id": "x", "author": "u", "role": "user", "text": "t", "mood": "glad",
                                    "timestamp": "2024-03-01T08:00:00", "position": 0, "tokens": [], "entities": []}},
}


@pytest.mark.parametrize("layout", ["version_1", "segment"])
@pytest.mark.parametrize("where", ["middle", "last"])
@pytest.mark.parametrize("bad", list(BAD_RECORDS.values()), ids=list(BAD_RECORDS))
async def test_a_record_of_the_wrong_shape_is_a_corrupt_journal_naming_its_line(
    store: Path, decomposer: Decomposer, bad: Any, where: str, layout: str
) -> None:
    lines = _valid_journal(store)
    line_no = 3 if where == "middle" else 4
    lines.insert(line_no - 1, json.dumps(bad).encode())
    damaged_file = store
    if layout == "segment":
        store.write_text(json.dumps(journal_module.HEADER) + "\n", encoding="utf-8")
        damaged_file = segment(store)
        damaged_file.parent.mkdir()
        lines[0] = json.dumps({"format": "graphmem-segment", "version": 1, "app_name": APP, "user_id": USER}).encode()
    damaged = b"\n".join(lines) + b"\n"
    damaged_file.write_bytes(damaged)
    for read_only in (True, False):
        service = GraphMemoryService(nlp=decomposer, path=store, read_only=read_only)
        with pytest.raises(JournalCorruptError) as raised:
            await service.search(SearchRequest(query="fig", app_name=APP, user_id=USER))
        assert f"{damaged_file}: line {line_no} " in str(raised.value)
        await service.close()
    assert damaged_file.read_bytes() == damaged
    result = await acli("--store", str(store), "stats")
    assert result.exit_code == 1 and f"line {line_no}" in one_line_error(result)


# ---------------------------------------------------------------------------- one segment per user


def _version_1_journal(store: Path) -> bytes:
    """A journal as graphmem wrote it before segments: every user in one file, and a
    delete whose compaction never happened (its text still in the file)."""
    def insert(user: str, entry_id: str, text: str) -> dict[str, Any]:
        return {"op": "insert_entry", "app_name": APP, "user_id": user, "project_id": None,
                "entry": {"id": entry_id, "author": "user", "role": "user", "text": text,
                          "timestamp": "2024-03-01T08:00:00+00:00", "position": 0,
                          "tokens": text.split(), "entities": []}}
    records = [
        {"format": "graphmem-journal", "version": 1},
        insert(USER, "a1", "alice keeps the walnut recipe"),
        insert(USER, "a2", "alice erased her pinecone password"),
        insert("bob", "b1", "bob keeps the hazel notes"),
        {"op": "delete_entries", "app_name": APP, "user_id": USER, "ids": ["a2"]},
    ]
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    store.write_bytes(data)
    return data


async def test_a_version_1_journal_opens_and_its_first_writer_migrates_it(store: Path, decomposer: Decomposer) -> None:
    old = _version_1_journal(store)
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader) == ["alice keeps the walnut recipe"]
    assert await texts(reader, "bob") == ["bob keeps the hazel notes"]
    assert store.read_bytes() == old and sorted(p.name for p in store.parent.iterdir()) == ["memory.journal"]

    writer = GraphMemoryService(nlp=decomposer, path=store)
    await writer.health_check()
    assert json.loads(store.read_text(encoding="utf-8")) == journal_module.HEADER
    assert segment(store).exists() and segment(store, "bob").exists()
    assert files_holding(store.parent, "pinecone") == []  # the old journal's pending erasure is done
    assert files_holding(store.parent, "walnut") == [str(segment(store))]
    await writer.add_entry(APP, USER, entry("after the migration"))
    await writer.close()
    reloaded = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reloaded) == ["after the migration", "alice keeps the walnut recipe"]
    assert await texts(reloaded, "bob") == ["bob keeps the hazel notes"]


async def test_an_interrupted_migration_leaves_the_version_1_journal_whole(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = _version_1_journal(store)
    real_replace = os.replace

    def crash_at_the_header(src: Any, dst: Any) -> None:
        if Path(dst) == store:
            raise OSError(errno.EIO, "the machine stops here")
        real_replace(src, dst)

    monkeypatch.setattr(journal_module.os, "replace", crash_at_the_header)
    writer = GraphMemoryService(nlp=decomposer, path=store)
    with pytest.raises(OSError):
        await writer.health_check()
    monkeypatch.undo()
    assert store.read_bytes() == old and segment(store).exists()  # half a migration on disk

    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader) == ["alice keeps the walnut recipe"]
    assert await texts(reader, "bob") == ["bob keeps the hazel notes"]
    await writer.add_entry(APP, "bob", entry("bob after all"))  # the next writer migrates again
    assert await texts(writer, "bob") == ["bob after all", "bob keeps the hazel notes"]
    assert files_holding(store.parent, "pinecone") == []
    await writer.close()


@pytest.mark.parametrize("with_records", [False, True], ids=["header-only", "with-records"])
async def test_an_old_header_put_back_over_a_newer_store_is_refused_and_deletes_nothing(
    store: Path, decomposer: Decomposer, with_records: bool
) -> None:
    """A version 1 journal (a backup from before segments) put back over a version 2 store:
    read as version 1 it hid every user, and the next writer's migration deleted their
    segments. Segments of users the version 1 journal does not hold are no migration of
    its own (which the previous test shows is still finished)."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_entry(APP, "carol", entry("carol keeps the walnut recipe"))
    await service.close()
    if with_records:
        _version_1_journal(store)  # alice's and bob's
    else:
        store.write_text(json.dumps({"format": "graphmem-journal", "version": 1}) + "\n", encoding="utf-8")
    segments = {p.name: p.read_bytes() for p in store.with_name(store.name + ".d").iterdir()}
    for read_only in (True, False):
        with pytest.raises(JournalCorruptError, match="version 1 journal, but .* holds segments of 1 user"):
            await GraphMemoryService(nlp=decomposer, path=store, read_only=read_only).health_check()
    assert {p.name: p.read_bytes() for p in store.with_name(store.name + ".d").iterdir()} == segments
    store.write_text(json.dumps(journal_module.HEADER) + "\n", encoding="utf-8")  # what the message says to do
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert await texts(reader, "carol") == ["carol keeps the walnut recipe"]


async def test_a_journal_version_of_true_is_refused(store: Path, decomposer: Decomposer) -> None:
    store.write_text(json.dumps({"format": "graphmem-journal", "version": True}) + "\n", encoding="utf-8")
    with pytest.raises(JournalCorruptError, match="version True is not supported"):
        await GraphMemoryService(nlp=decomposer, path=store, read_only=True).health_check()


async def test_a_compaction_blocks_only_its_own_user(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("alice session about kiwis")])
    await service.add_session(APP, USER, "s2", [entry("alice keeps this one")])
    await service.add_entry(APP, "bob", entry("bob first note about mangoes"))
    compacting, bob_done = threading.Event(), threading.Event()
    waited: list[bool] = []
    real_replace_file = journal_module.Journal._replace_file

    def slow_compaction(self: Any, path: Path, records: Any) -> None:
        if path == segment(store):
            compacting.set()
            waited.append(bob_done.wait(120))  # False: bob's write waited for alice's compaction
        real_replace_file(self, path, records)

    monkeypatch.setattr(journal_module.Journal, "_replace_file", slow_compaction)
    delete = asyncio.create_task(service.delete_session(APP, USER, "s1"))
    assert await asyncio.to_thread(compacting.wait, 120)
    # While alice's segment is being rewritten, bob writes and searches.
    await service.add_entry(APP, "bob", entry("bob second note about mangoes"))
    response = await service.search(SearchRequest(query="mangoes", app_name=APP, user_id="bob"))
    bob_done.set()
    assert await delete == 1
    assert waited == [True]
    assert len(response.hits) == 2
    await service.close()


async def test_concurrent_writes_and_erasures_of_many_users_survive_a_reload(store: Path, decomposer: Decomposer) -> None:
    service = GraphMemoryService(nlp=decomposer, path=store)
    users = [f"user{n}" for n in range(4)]

    async def churn(user: str) -> None:
        for round_ in range(6):
            await service.add_session(APP, user, f"s{round_}", [entry(f"{user} round {round_} secret{round_}x")])
            await service.add_entry(APP, user, entry(f"{user} loose note {round_}"))
            if round_ % 2:
                await service.add_session(APP, user, f"s{round_}", [entry(f"{user} round {round_} redacted")])
            if round_ % 3 == 2:
                await service.delete_session(APP, user, f"s{round_ - 1}")

    await asyncio.gather(*(churn(user) for user in users))
    before = {user: await texts(service, user) for user in users}
    await service.close()
    reloaded = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert {user: await texts(reloaded, user) for user in users} == before
    for round_ in (1, 3, 4, 5):  # sessions redacted (1, 3, 5) or deleted (1, 4)
        assert files_holding(store.parent, f"secret{round_}x") == []
    assert len(files_holding(store.parent, "secret0x")) == len(users)
    assert len(before["user0"]) == 6 + 4  # the loose notes, and sessions s0, s2, s3, s5


async def test_a_write_that_meets_close_fails_cleanly_and_loses_nothing_acknowledged(
    tmp_path: Path, decomposer: Decomposer
) -> None:
    """Writes still running when the service is closed (a cancelled request's thread) met a
    bare ``assert`` (AssertionError, and nothing at all under ``python -O``). Now such a write
    is a BackendUnavailableError that stored nothing; every acknowledged write is on disk."""
    from graphmem import BackendUnavailableError, open_memory

    path = tmp_path / "m.journal"
    service = await open_memory(path, nlp=decomposer)
    turns = [entry(f"Note {k} about Paris and Maria") for k in range(3)]
    acknowledged = {u: 0 for u in range(4)}
    refused: list[BaseException] = []

    async def writer(u: int) -> None:
        for _ in range(10):
            try:
                await service.append_to_session(APP, f"u{u}", "s", turns)
                acknowledged[u] += len(turns)
            except Exception as exc:  # noqa: BLE001 - what each refusal is, is the assertion below
                refused.append(exc)

    async def closer() -> None:
        for _ in range(200):
            await asyncio.sleep(0)
            await service.close()

    for _ in range(3):
        await asyncio.gather(*(writer(u) for u in range(4)), closer())
    await service.close()
    assert all(isinstance(exc, BackendUnavailableError) and "closed while" in str(exc) for exc in refused), {
        f"{type(e).__name__}: {e}" for e in refused
    }
    reopened = GraphMemoryService(nlp=decomposer, path=path)
    try:
        on_disk = {u: len(await reopened.list_entries(APP, f"u{u}")) for u in range(4)}
    finally:
        await reopened.close()
    assert on_disk == acknowledged


async def test_a_write_that_loaded_the_store_before_a_close_is_not_applied_twice_by_a_reopen(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that passed its load before close(), then appended its record while another
    call's reopen was reading the segment, was applied by that reload and again by itself:
    the session held its id twice, and the next compaction wrote a segment the store
    refused to open. The interleaving is held in place with events, not timing."""
    from graphmem import BackendUnavailableError

    path = tmp_path / "m.journal"
    service = GraphMemoryService(nlp=decomposer, path=path)
    await service.add_session(APP, "ann", "s1", [entry("My dog Rex likes the park.")])
    loaded, go, past_check, reading, appended = (threading.Event() for _ in range(5))
    armed = [True]
    writing = threading.local()
    original_ensure = service._ensure_loaded
    original_write = service._write_durably

    def ensure_loaded(owner: Any = None, **kwargs: Any) -> None:
        original_ensure(owner, **kwargs)
        if armed[0] and getattr(writing, "now", False):  # the append's write: held after its load
            armed[0] = False
            loaded.set()
            assert go.wait(60)

    def write_durably(*args: Any) -> int:
        writing.now = True
        try:
            return original_write(*args)
        except BaseException:
            past_check.set()  # refused before appending anything
            appended.set()
            raise
        finally:
            writing.now = False

    monkeypatch.setattr(service, "_ensure_loaded", ensure_loaded)
    monkeypatch.setattr(service, "_write_durably", write_durably)
    append = asyncio.create_task(service.append_to_session(APP, "ann", "s1", [entry("Rex chased a cat today.")]))
    assert await asyncio.to_thread(loaded.wait, 60)
    await service.close()
    journal = service._journal
    assert journal is not None
    original_read, original_append_many = journal.read, journal.append_many

    def append_many(*args: Any, **kwargs: Any) -> Any:  # held until the reopen is reading
        past_check.set()
        assert reading.wait(60)
        try:
            return original_append_many(*args, **kwargs)
        finally:
            appended.set()

    def read(*args: Any, **kwargs: Any) -> Any:  # the reopen: its lock taken, not yet read
        reading.set()
        assert appended.wait(60)
        return original_read(*args, **kwargs)

    monkeypatch.setattr(journal, "append_many", append_many)
    monkeypatch.setattr(journal, "read", read)
    go.set()
    assert await asyncio.to_thread(past_check.wait, 60)
    await service.list_entries(APP, "ann")  # another call reopens the store
    monkeypatch.setattr(journal, "read", original_read)
    monkeypatch.setattr(journal, "append_many", original_append_many)
    with pytest.raises(BackendUnavailableError, match="closed while this write was running"):
        await append
    in_memory = [(e.position, e.memory.text) for e in await service.list_entries(APP, "ann")]
    assert in_memory == [(0, "My dog Rex likes the park.")]
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=path, read_only=True)
    assert [(e.position, e.memory.text) for e in await reopened.list_entries(APP, "ann")] == in_memory


def _held_until(go: asyncio.Event, reached: asyncio.Event, method: Any) -> Any:
    """``method`` (an async method of a service), waiting for ``go`` before it runs."""

    async def held(*args: Any, **kwargs: Any) -> Any:
        reached.set()
        await go.wait()
        return await method(*args, **kwargs)

    return held


async def test_a_search_running_when_the_store_is_closed_does_not_take_the_writer_lock_again(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search awaiting (here, its query's decomposition) while ``close()`` ran reloaded the
    store when it resumed: after ``close()`` had returned, the process held the writer lock
    again, and another writer got ``StoreLockedError``. It now raises instead."""
    from graphmem import BackendUnavailableError

    path = tmp_path / "m.journal"
    service = GraphMemoryService(nlp=decomposer, path=path)
    await service.add_session(APP, USER, "s1", [entry("My dog Rex likes the park.")])
    reached, go = asyncio.Event(), asyncio.Event()
    monkeypatch.setattr(service, "decompose_query", _held_until(go, reached, service.decompose_query))
    search = asyncio.create_task(service.search(SearchRequest(app_name=APP, user_id=USER, query="Rex park")))
    await reached.wait()
    await service.close()
    go.set()
    with pytest.raises(BackendUnavailableError, match="closed while this call was running"):
        await search
    other = GraphMemoryService(nlp=decomposer, path=path)  # the lock is free: another writer writes
    await other.add_session(APP, USER, "s2", [entry("Rex swims in the lake.")])
    await other.close()
    # A call made after close() opens the store again, as before, and sees the other's write.
    monkeypatch.undo()
    response = await service.search(SearchRequest(app_name=APP, user_id=USER, query="Rex lake"))
    assert "s2" in {h.session_id for h in response.hits}
    with pytest.raises(StoreLockedError):  # ... holding the lock again
        await GraphMemoryService(nlp=decomposer, path=path).list_entries(APP, USER)
    await service.close()


async def test_a_write_running_when_the_store_is_closed_stores_nothing_and_leaves_the_lock_free(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write awaiting its entries' decomposition while ``close()`` ran reopened the store
    and stored them after ``close()`` had returned, holding the writer lock again."""
    from graphmem import BackendUnavailableError

    path = tmp_path / "m.journal"
    service = GraphMemoryService(nlp=decomposer, path=path)
    await service.add_session(APP, USER, "s1", [entry("My dog Rex likes the park.")])
    reached, go = asyncio.Event(), asyncio.Event()
    monkeypatch.setattr(service, "decompose_many", _held_until(go, reached, service.decompose_many))
    write = asyncio.create_task(service.add_session(APP, USER, "s2", [entry("Rex chased a cat today.")]))
    await reached.wait()
    await service.close()
    go.set()
    with pytest.raises(BackendUnavailableError, match="nothing of the call was stored"):
        await write
    other = GraphMemoryService(nlp=decomposer, path=path)  # the lock is free
    assert [e.session_id for e in await other.list_entries(APP, USER)] == ["s1"]
    await other.close()
    monkeypatch.undo()
    await service.add_session(APP, USER, "s2", [entry("Rex chased a cat today.")])  # begun after: stored
    assert sorted(e.session_id for e in await service.list_entries(APP, USER)) == ["s1", "s2"]
    await service.close()


async def test_a_reader_call_running_when_the_store_is_closed_does_not_reload_it(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only service loads users one by one: a call about a user not loaded yet,
    running when the store was closed, must not load that user after the close either."""
    from graphmem import BackendUnavailableError

    path = tmp_path / "m.journal"
    async with GraphMemoryService(nlp=decomposer, path=path) as writer:
        await writer.add_session(APP, USER, "s1", [entry("My dog Rex likes the park.")])
        await writer.add_session(APP, "bob", "s1", [entry("Bob plays chess.")])
    reader = GraphMemoryService(nlp=decomposer, path=path, read_only=True)
    assert len(await reader.list_entries(APP, USER)) == 1
    reached, go = asyncio.Event(), asyncio.Event()
    monkeypatch.setattr(reader, "decompose_query", _held_until(go, reached, reader.decompose_query))
    search = asyncio.create_task(reader.search(SearchRequest(app_name=APP, user_id="bob", query="chess")))
    await reached.wait()
    await reader.close()
    go.set()
    with pytest.raises(BackendUnavailableError, match="closed while this call was running"):
        await search
    assert not reader._loaded and not reader._loaded_owners  # nothing was loaded again
    monkeypatch.undo()
    response = await reader.search(SearchRequest(app_name=APP, user_id="bob", query="chess"))
    assert [m.text for m in response.memories] == ["Bob plays chess."]
    await reader.close()


async def test_a_graph_read_before_close_never_reopens_the_store(tmp_path: Path, decomposer: Decomposer) -> None:
    """The debugging accessors are synchronous, with nothing to interleave with a close: a
    graph (or ``cypher_view()``) obtained before ``close()`` is the store as it was then, and
    reading it after the close leaves the writer lock free. Reading ``service.graph`` after
    ``close()`` is a call made after it: it opens the store again (and takes the lock, until
    the next ``close()``), as ``search`` would. (A guard of the behaviour as it was.)"""
    path = tmp_path / "m.journal"
    service = GraphMemoryService(nlp=decomposer, path=path)
    await service.add_session(APP, USER, "s1", [entry("My dog Rex likes the park.")])
    view = service.cypher_view()
    await service.close()
    assert view.graph is not None
    assert "My dog Rex likes the park." in {data.get("text") for _, data in view.graph.nodes(data=True)}
    async with GraphMemoryService(nlp=decomposer, path=path) as other:  # the lock is free
        assert len(await other.list_entries(APP, USER)) == 1
    assert service.graph.number_of_nodes() > 0  # a call after close(): the store is open again
    with pytest.raises(StoreLockedError):
        await GraphMemoryService(nlp=decomposer, path=path).list_entries(APP, USER)
    await service.close()


def test_no_file_of_the_store_keeps_an_erased_user_or_the_words_that_erased_text(tmp_path: Path) -> None:
    """The writer's lock file names its holder by program, not by command line: the
    arguments of ``delete-user --user ...`` or ``delete-entries "<words>"`` are the very
    things erased (a lock file outlives the command that wrote it)."""
    store = tmp_path / "m.journal"
    user = ["--app", APP, "--user", "alice@example.com"]
    fixture = tmp_path.parent / f"{tmp_path.name}-fixture.jsonl"  # outside the store's folder
    fixture.write_text(
        json.dumps({"app_name": APP, "user_id": "alice@example.com", "session_id": "s1", "entries": [
            {"author": "Alice", "role": "user", "text": "my diagnosis is hypertension", "timestamp": "2026-01-01T09:00:00"},
            {"author": "Alice", "role": "user", "text": "walks help", "timestamp": "2026-01-01T09:01:00"},
        ]}) + "\n",
        encoding="utf-8",
    )
    for command in (
        ["load", str(fixture)],
        ["delete-entries", "diagnosis hypertension", *user, "--yes"],
        ["delete-user", *user, "--yes"],
    ):
        completed = subprocess.run(
            [sys.executable, "-m", "graphmem.cli", "--store", str(store), *command],
            capture_output=True, text=True, env=child_env(), timeout=300, check=False,
        )
        assert completed.returncode == 0, completed.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.endswith(".lock") for p in files)
    for marker in (b"alice@example.com", b"hypertension", b"diagnosis"):
        assert [p.name for p in files if marker in p.read_bytes()] == []
    fixture.unlink()


def _record(text: str, entry_id: str, position: int | None = None) -> EntryRecord:
    return EntryRecord(memory=entry(text), entry_id=entry_id, position=position)


@pytest.mark.parametrize("same_user", [False, True])
async def test_two_restores_of_one_id_at_once_store_it_once(store: Path, decomposer: Decomposer, same_user: bool) -> None:
    """Entry ids are unique in the whole store: two restores racing with one id (each
    checks, then writes off the event loop) store it once, and the other is refused whole."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    other = USER if same_user else "bob"
    results = await asyncio.gather(
        service.restore_session(APP, USER, "s1", [_record("alice secret question", "X", 0), _record("alice answer", "A1", 1)]),
        service.restore_session(APP, other, "s2", [_record("bob hello", "B0", 0), _record("bob reply", "X", 1)]),
        return_exceptions=True,
    )
    assert sorted(type(r).__name__ for r in results) == ["EntryIdConflictError", "list"]
    stored = [(u, e.entry_id) for u in {USER, other} for e in await service.list_entries(APP, u)]
    assert [i for _, i in stored].count("X") == 1
    winner = 0 if isinstance(results[0], list) else 1
    assert sorted(i for _, i in stored) == sorted(["X", "A1"] if winner == 0 else ["B0", "X"])
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    again = [e.entry_id for u in {USER, other} for e in await reopened.list_entries(APP, u)]
    assert sorted(again) == sorted(i for _, i in stored)
    await reopened.close()
    with pytest.raises(EntryIdConflictError):  # and afterwards, as ever, by the check
        again = GraphMemoryService(nlp=decomposer, path=store)
        try:
            await again.restore_session(APP, "carol", "s3", [_record("carol", "X", 0)])
        finally:
            await again.close()


async def test_a_cancelled_append_holds_its_ids_until_its_write_lands_and_a_retry_stores_nothing_twice(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append with ids whose caller is cancelled while its journal write runs (a timeout, an
    ADK call given up on): the write runs on in its thread and lands. The cancellation used
    to release the ids' claim at once, so a retry of the same ids passed its check and
    stored them again: the session listed each id twice and the first text was replaced
    without a trace (and kept on disk)."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("first turn about cats")])
    writing, go_on = threading.Event(), threading.Event()
    real_write = service._write_durably
    calls: list[int] = []

    def slow_first_write(owner: Any, records: Any) -> int:
        calls.append(1)
        if len(calls) == 1:  # the first append's write: a slow disk
            writing.set()
            go_on.wait()
        return real_write(owner, records)

    monkeypatch.setattr(service, "_write_durably", slow_first_write)
    first = asyncio.create_task(
        service.append_to_session(APP, USER, "s1", [entry("the original about dogs")], entry_ids=["msg-1"])
    )
    await asyncio.to_thread(writing.wait)
    first.cancel()
    try:
        # The retry while the first write is still running is refused: its ids are held.
        with pytest.raises(EntryIdConflictError, match="being stored by another call"):
            await service.append_to_session(APP, USER, "s1", [entry("a retry about horses")], entry_ids=["msg-1"])
    finally:
        go_on.set()
    with pytest.raises(asyncio.CancelledError):
        await first
    # Once it has landed, a retry finds the id stored, as for any stored id.
    with pytest.raises(EntryIdConflictError, match="already an entry"):
        await service.append_to_session(APP, USER, "s1", [entry("a retry about horses")], entry_ids=["msg-1"])
    expected = [("first turn about cats", 0), ("the original about dogs", 1)]
    session = await service.session_entries(APP, USER, "s1")
    assert [(e.memory.text, e.position) for e in session] == expected
    assert [e.entry_id for e in session][1] == "msg-1"
    assert sorted((e.memory.text, e.position) for e in await service.list_entries(APP, USER)) == expected
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert [(e.memory.text, e.position) for e in await reopened.session_entries(APP, USER, "s1")] == expected
    await reopened.close()
    assert not files_holding(store.parent, "horses")


async def test_a_failed_restore_outside_sessions_keeps_the_entry_it_was_to_replace(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replacing an entry outside any session is one change: when its write fails (a full
    disk), the old entry is still there, in memory and after a restart."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.restore_session(APP, USER, None, [_record("my passport number is 1234", "X"), _record("other", "Y")])

    real_append = journal_module.Journal.append_many

    def full_disk(self: Any, owner: Any, records: list[dict[str, Any]]) -> None:
        # The disk fills up as the new entry is written (a delete alone would fit).
        if all(record["op"] == "delete_entries" for record in records):
            return real_append(self, owner, records)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module.Journal, "append_many", full_disk)
    with pytest.raises(OSError, match="No space"):
        await service.restore_session(APP, USER, None, [_record("my passport number is 5678", "X")])
    monkeypatch.undo()
    texts = sorted(e.memory.text for e in await service.list_entries(APP, USER))
    assert texts == ["my passport number is 1234", "other"]
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert sorted(e.memory.text for e in await reopened.list_entries(APP, USER)) == texts
    await reopened.close()
    # And when it succeeds, the replacement is whole.
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.restore_session(APP, USER, None, [_record("my passport number is 5678", "X")])
    assert sorted(e.memory.text for e in await service.list_entries(APP, USER)) == ["my passport number is 5678", "other"]
    await service.close()


# ---------------------------------------------------------------------- where the store is


async def test_a_relative_store_path_stays_the_store_when_the_process_moves(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is made absolute when the store is opened: a relative one followed the
    process into another directory, whose store then took an acknowledged write."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    other = GraphMemoryService(nlp=decomposer, path=tmp_path / "b" / "memory.journal")
    await other.add_session(APP, USER, "s", [entry("B's own memory.")])
    await other.close()
    monkeypatch.chdir(tmp_path / "a")
    service = GraphMemoryService(nlp=decomposer, path="memory.journal")
    await service.add_session(APP, USER, "s1", [entry("First write, in A.")])
    monkeypatch.chdir(tmp_path / "b")
    await service.append_to_session(APP, USER, "s1", [entry("Second write, acknowledged.")])
    await service.close()
    for where, expected in [("a", ["First write, in A.", "Second write, acknowledged."]), ("b", ["B's own memory."])]:
        reopened = GraphMemoryService(nlp=decomposer, path=tmp_path / where / "memory.journal")
        assert await texts(reopened) == expected
        await reopened.close()


async def test_a_store_opened_through_a_link_is_the_store_it_links_to(tmp_path: Path, decomposer: Decomposer) -> None:
    """A link to the header opened an empty shadow store beside the link (with a lock of its
    own, so two writers ran at once), and erasing through it erased nothing."""
    (tmp_path / "data").mkdir()
    real = tmp_path / "data" / "memory.journal"
    first = GraphMemoryService(nlp=decomposer, path=real)
    await first.add_session(APP, USER, "s", [entry("Quetzalcoatlus had a long neck.")])
    await first.close()
    link = tmp_path / "memory.journal"
    link.symlink_to(real)
    through_link = GraphMemoryService(nlp=decomposer, path=link)
    assert await texts(through_link) == ["Quetzalcoatlus had a long neck."]
    with pytest.raises(StoreLockedError):
        await texts(GraphMemoryService(nlp=decomposer, path=real))
    assert await through_link.delete_user(APP, USER) == 1
    await through_link.close()
    assert not list(tmp_path.glob("memory.journal.*"))  # nothing beside the link
    assert b"Quetzalcoatlus" not in b"".join(p.read_bytes() for p in (tmp_path / "data").rglob("*") if p.is_file())


async def test_a_directory_that_cannot_be_synced_after_a_rename_keeps_memory_and_disk_alike(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A new user's first record is renamed into place, then the directory synced. When
    the sync failed the call raised and the record was not applied in memory, yet it was on
    disk: a write reported as failed came back after a restart (and a deletion reported as
    failed went on being served, while the next open lacked it). The change is done: it is
    applied, and the failed sync logged."""
    store = tmp_path / "memory.journal"
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, "bob", "s", [entry("Bob's memory.")])
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if stat.S_ISDIR(os.fstat(fd).st_mode):  # a directory's sync fails
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    await service.add_session(APP, USER, "s", [entry("Carol's first write.")])
    assert await service.delete_user(APP, "bob") == 1
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert await texts(service) == ["Carol's first write."] and await texts(service, "bob") == []
    await service.close()
    assert "could not be synced" in caplog.text
    reopened = GraphMemoryService(nlp=decomposer, path=store)
    assert await texts(reopened) == ["Carol's first write."] and await texts(reopened, "bob") == []
    await reopened.close()


def test_a_store_file_of_the_wrong_kind_is_named_not_blamed_on_the_uri(tmp_path: Path) -> None:
    """A lock path that is a directory (or a stray directory among the segments) is not a
    wrong --uri: the error names that file and is no usage error (it said "cannot use
    memory.journal as a journal ... (--uri, GRAPHMEM_URI)", exit 2)."""
    store = tmp_path / "memory.journal"
    assert cli("--store", str(store), "load", "--demo", "--skip-projects").exit_code == 0
    (tmp_path / "memory.journal.lock").unlink(missing_ok=True)  # (a closed store's lock file stays)
    (tmp_path / "memory.journal.lock").mkdir()
    result = cli("--store", str(store), "delete-user", "--app", "companion", "--user", "alice", "--yes")
    assert result.exit_code == 1
    assert "memory.journal.lock" in result.stderr and "--uri" not in result.stderr
    (tmp_path / "memory.journal.lock").rmdir()
    # The store itself a directory is a wrong path still.
    assert cli("--store", str(tmp_path), "stats").exit_code == 2


async def test_a_close_landing_inside_a_write_leaves_the_store_as_acknowledged(
    tmp_path: Path, decomposer: Decomposer
) -> None:
    """close() landing between a write's journal record and its change in memory (a server
    shutting down under a cancelled call's thread): the change was applied to the emptied
    state, then the reload replayed the record again; the session held an id twice and
    shifted positions, which the next compaction wrote to disk. close() now waits for the
    write halfway, and the store stays what was acknowledged."""
    store = tmp_path / "memory.journal"
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("first turn")])
    await service.add_entry(APP, USER, entry("a loose note"))
    journal = service._journal
    assert journal is not None
    loop = asyncio.get_running_loop()
    real_append = journal.append_many
    closing: list[Any] = []

    def append_then_close(key: Any, records: list[dict[str, Any]]) -> None:
        real_append(key, records)
        if not closing and any(record["op"] == "append_session" for record in records):
            closing.append(asyncio.run_coroutine_threadsafe(service.close(), loop))
            # Until the close is done (before the fix) or waits for this write (after it).
            while not closing[0].done() and not getattr(service, "_closing", False):
                threading.Event().wait(0.001)
            if closing[0].done():
                with service._lock:
                    service._ensure_loaded()  # another call reopens the store meanwhile

    journal.append_many = append_then_close  # type: ignore[method-assign]
    await service.append_to_session(APP, USER, "s1", [entry("second turn")])
    await asyncio.wrap_future(closing[0])
    loose = next(e.entry_id for e in await service.list_entries(APP, USER) if e.session_id is None)
    assert await service.delete_entry(APP, USER, loose) == 1  # compacts the user's segment from memory
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=store)
    stored = [(e.memory.text, e.position) for e in await reopened.list_entries(APP, USER)]
    await reopened.close()
    assert sorted(stored) == [("first turn", 0), ("second turn", 1)]


async def test_a_new_store_is_readable_by_its_owner_only(tmp_path: Path, decomposer: Decomposer) -> None:
    """Attack: another local user reads the memory (or the erased text a compaction's freed
    blocks keep). Every file was created 0644 whatever the umask, the store's directories
    under the usual umask 022: a store in ~/.local/share was readable by every local user."""
    old_umask = os.umask(0o022)
    try:
        store = tmp_path / "private" / "memory.journal"
        service = GraphMemoryService(nlp=decomposer, path=store)
        await service.add_session(APP, USER, "s1", [entry("the safe's code is 4411")])
        await service.add_session(APP, USER, "s1", [entry("replaced, and compacted")])
        await service.close()
        # Reopened and closed: a snapshot may be written too.
        await GraphMemoryService(nlp=decomposer, path=store).close()
    finally:
        os.umask(old_umask)
    made = [store.parent, *store.parent.rglob("*")]
    assert len(made) >= 5, made  # the directory, header, lock, segments directory, a segment
    for path in made:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, (path, oct(mode))
    # A file its owner opened up on purpose keeps its mode when rewritten.
    segment = next(p for p in store.parent.rglob("*.journal") if p.parent != store.parent)
    segment.chmod(0o640)
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("rewritten once more")])
    await service.close()
    assert stat.S_IMODE(segment.stat().st_mode) == 0o640


async def test_a_failed_write_of_several_sessions_stores_none_of_them(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attack: the disk fills up halfway through ``add_sessions``. Each session's record was
    written and applied in turn, so the first ones were stored (and an old session's text,
    replaced, stayed on disk uncompacted) under an error saying "the write was undone"."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "A", [entry("the old secret paperclip")])
    real_write = journal_module._write_all
    written: list[int] = []

    def fills_up(fd: int, data: bytes) -> None:
        # The disk is full when the second session is written (half of it fits).
        if b"a new session" not in data:
            return real_write(fd, data)
        written.append(len(data))
        real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(journal_module, "_write_all", fills_up)
    with pytest.raises(OSError, match="the write was undone"):
        await service.add_sessions(APP, USER, {"A": [entry("replacement text")], "B": [entry("a new session")]})
    monkeypatch.undo()
    assert written  # the failure was where the records are written
    texts = sorted(e.memory.text for e in await service.list_entries(APP, USER))
    assert texts == ["the old secret paperclip"]
    await service.close()
    reopened = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert sorted(e.memory.text for e in await reopened.list_entries(APP, USER)) == texts
    await reopened.close()


async def test_a_directory_where_a_snapshot_goes_is_named_not_a_raw_os_error(
    store: Path, decomposer: Decomposer
) -> None:
    """A directory named like a snapshot stopped every writer with IsADirectoryError from
    deep inside the open; readers ignore it. Now the open names it and what to do."""
    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.add_session(APP, USER, "s1", [entry("kept safe")])
    await service.close()
    segment = next(p for p in store.parent.rglob("*.journal") if p.parent != store.parent)
    (segment.parent / (segment.stem + ".snapshot")).mkdir()
    reader = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    assert [e.memory.text for e in await reader.list_entries(APP, USER)] == ["kept safe"]
    await reader.close()
    writer = GraphMemoryService(nlp=decomposer, path=store)
    with pytest.raises(JournalCorruptError, match="is a directory where graphmem keeps a snapshot file"):
        await writer.list_entries(APP, USER)
    await writer.close()


async def test_reloading_an_export_rewrites_each_segment_once_and_erases_before_it_returns(
    store: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading sessions a store holds replaces them: each replacement rewrote the user's
    whole segment (to erase the old text), so reloading an export was quadratic in the
    user's size (100k entries: ~40 minutes). Now once per user, still before the load
    returns; another task's delete meanwhile is erased before its own call returns."""
    import io

    from graphmem._fixtures import dump_fixtures, export_fixtures, load_fixtures

    service = GraphMemoryService(nlp=decomposer, path=store)
    for i in range(12):
        await service.add_session(APP, USER, f"s{i}", [entry(f"old secret number {i}")])
    await service.add_session(APP, "bob", "b", [entry("bob's doomed note"), entry("bob's kept note")])
    exported = "".join(dump_fixtures(await export_fixtures(service, APP, USER))).replace("old secret", "new text")
    rewrites: list[Any] = []
    real_rewrite = journal_module.Journal.rewrite

    def counted(self: Any, owner: Any, records: Any) -> None:
        rewrites.append(owner)
        real_rewrite(self, owner, records)

    monkeypatch.setattr(journal_module.Journal, "rewrite", counted)
    bobs_delete_erased: list[bool] = []

    async def bob_deletes_meanwhile() -> None:
        doomed = next(e.entry_id for e in await service.list_entries(APP, "bob") if "doomed" in e.memory.text)
        await service.delete_entry(APP, "bob", doomed)
        bobs_delete_erased.append(not any(b"doomed" in p.read_bytes() for p in store.parent.rglob("*") if p.is_file()))

    report, _ = await asyncio.gather(
        load_fixtures(service, [io.BytesIO(exported.encode("utf-8"))]), bob_deletes_meanwhile()
    )
    assert report.sessions == 12
    assert rewrites.count((APP, USER)) == 1  # was 12
    assert bobs_delete_erased == [True]  # another task's call is not deferred
    held = b"".join(p.read_bytes() for p in store.parent.rglob("*") if p.is_file())
    assert b"old secret" not in held and b"new text" in held
    await service.close()


# ---------------------------------------------------------------------------- a damaged segment beside good ones


async def _store_with_a_damaged_user(tmp_path: Path, decomposer: Decomposer) -> tuple[Path, list[Path]]:
    """A store of alice (a bad line in the middle of her segment, and a snapshot, taken
    before the damage, that holds her text), bob and carol; returns the store and alice's
    two files."""
    store = tmp_path / "m.journal"
    writer = GraphMemoryService(nlp=decomposer, path=store)
    await writer.add_session(APP, USER, "s1", [entry("alice secret one")])
    await writer.add_session(APP, USER, "s2", [entry("alice secret two")])
    await writer.add_session(APP, "bob", "s1", [entry("bob private text")])
    await writer.add_session(APP, "carol", "s1", [entry("carol kept note")])
    await writer.close()  # SNAPSHOT_AFTER_BYTES is 0 here: every user is snapshotted
    journal = journal_module.Journal(store)
    segment, snapshot = journal.segment_path((APP, USER)), journal.snapshot_path((APP, USER))
    assert b"alice secret" in snapshot.read_bytes()
    lines = segment.read_bytes().split(b"\n")
    segment.write_bytes(b"\n".join([*lines[:2], b"{not json", *lines[2:]]))  # line 3: before acknowledged writes
    return store, [segment, snapshot]


async def test_a_damaged_segment_stops_only_its_users_calls_and_other_users_can_be_erased(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer loaded every segment when it opened, so one user's bad line refused every
    call of every user: bob could not be erased (delete_user raised alice's error). Now the
    writer skips the segment it cannot read: alice's calls (and questions about everyone)
    raise her segment's error, naming its file and line, and her files are never
    written; everyone else's calls work."""
    monkeypatch.setattr(journal_module, "SNAPSHOT_AFTER_BYTES", 0)
    store, alices = await _store_with_a_damaged_user(tmp_path, decomposer)
    damaged = {path: path.read_bytes() for path in alices}
    where = rf"{alices[0].name}: line 3 is not a valid record"

    service = GraphMemoryService(nlp=decomposer, path=store)
    assert await service.delete_user(APP, "bob") == 1
    assert await service.list_entries(APP, "bob") == []
    assert files_holding(tmp_path, "bob private") == []
    await service.add_session(APP, "carol", "s2", [entry("carol second note")])
    assert len((await service.search(SearchRequest(query="carol note", app_name=APP, user_id="carol"))).hits) == 2
    await service.health_check()  # the store is one (as a reader's health check says)
    for call in (
        service.list_entries(APP, USER),
        service.search(SearchRequest(query="secret", app_name=APP, user_id=USER)),
        service.add_entry(APP, USER, entry("must not follow a bad line")),
        service.add_session(APP, USER, "s1", [entry("must not replace what was not read")]),
        service.delete_session(APP, USER, "s2"),
        service.stats(),  # about everyone: every segment
    ):
        with pytest.raises(JournalCorruptError, match=where):
            await call
    await service.close()
    assert {path: path.read_bytes() for path in alices} == damaged

    reopened = GraphMemoryService(nlp=decomposer, path=store)
    assert sorted(e.memory.text for e in await reopened.list_entries(APP, "carol")) == [
        "carol kept note",
        "carol second note",
    ]
    assert await reopened.list_entries(APP, "bob") == []
    await reopened.close()
    assert {path: path.read_bytes() for path in alices} == damaged


@pytest.mark.parametrize("via", ["api", "cli"])
async def test_a_user_whose_segment_is_damaged_can_be_erased_without_reading_it(
    tmp_path: Path, decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch, via: str
) -> None:
    """delete_user needs none of a user's records: it deletes the segment and snapshot. It
    read them first (every segment, on opening), so a damaged user could never be erased
    and her text stayed on disk."""
    monkeypatch.setattr(journal_module, "SNAPSHOT_AFTER_BYTES", 0)
    store, alices = await _store_with_a_damaged_user(tmp_path, decomposer)
    if via == "api":
        service = GraphMemoryService(nlp=decomposer, path=store)
        assert await service.delete_user(APP, USER) == 0  # nothing of hers was read, or counted
        assert await service.list_entries(APP, USER) == []
        await service.close()
    else:
        result = await acli("--store", str(store), "delete-user", *CLI_USER, "--yes")
        assert result.exit_code == 0, result.output
        assert "unreadable" in result.stdout and USER in result.stdout
    assert not any(path.exists() for path in alices)
    assert files_holding(tmp_path, "alice secret") == []

    service = GraphMemoryService(nlp=decomposer, path=store)
    await service.stats()  # every segment reads again
    assert [e.memory.text for e in await service.list_entries(APP, "bob")] == ["bob private text"]
    await service.add_entry(APP, USER, entry("alice starts afresh"))
    assert [e.memory.text for e in await service.list_entries(APP, USER)] == ["alice starts afresh"]
    await service.close()
