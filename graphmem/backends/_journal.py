"""The append-only journal that makes a :class:`GraphMemoryService` store durable.

File format (UTF-8, JSON Lines): the first line is a header
``{"format": "graphmem-journal", "version": 1}``; every further line is one
acknowledged write, a JSON object with an ``"op"`` key:

- ``replace_session``: ``app_name``, ``user_id``, ``project_id``, ``session_id`` and
  ``entries`` (each ``id``, ``author``, ``role``, ``text``, ``timestamp``, ``position``,
  ``tokens``, ``entities`` as ``[name, label]`` pairs). Tokens and entities are stored so
  that reloading never runs spaCy again.
- ``insert_entry``: ``app_name``, ``user_id``, ``project_id`` and one ``entry`` as above.
- ``delete_entries``: ``app_name``, ``user_id``, ``ids``.
- ``delete_session``: ``app_name``, ``user_id``, ``session_id``.
- ``delete_project``: ``app_name``, ``user_id``, ``project_id``.
- ``delete_user``: ``app_name``, ``user_id``.

Files beside the journal ``memory.journal``: ``memory.journal.lock`` (the writer's lock,
holding its pid, host and command) and, only while a compaction or the creation of a new
journal runs, ``memory.journal.tmp``.

**One writer, many readers.** A writer takes an exclusive ``flock`` on the lock file
before it reads the journal and keeps it until it closes, so no other process can append
to (or compact away) a journal whose state it did not load; a second writer gets
:class:`StoreLockedError` naming the holder. The lock is on a separate file because a
compaction replaces the journal's inode. Readers take no lock and never write: they read
one open file to its end, and since the writer only appends whole lines and replaces the
file by an atomic rename, a reader sees a consistent snapshot (a line still being appended
looks like a torn tail and is ignored).

**Acknowledged means on disk.** A write is acknowledged only after its line is written
and ``fsync``-ed. If the append fails part-way (disk full, I/O error), the file is cut
back to its last acknowledged length before the error is raised, so a failed write never
comes back after a restart. A crash can still leave a torn last line (no newline, or not
valid JSON): readers ignore it, and the next writer cuts it off, with a warning. A bad
line anywhere else, or a record of the wrong shape, is corruption and raises
:class:`JournalCorruptError` naming the line rather than dropping data.

**Erasure.** A write that removes entries (a delete, or a session replaced) is followed
by a compaction: the live records are written to the temporary file, ``fsync``-ed, and
renamed over the journal. Until that rename the removed text is still in the journal, so
a writer that opens a journal holding such records (a crash or a failure interrupted the
compaction) compacts it at once; a leftover temporary file is never trusted (the journal
is complete without it) and is deleted.

Nothing is ever written to a path that is not a regular file starting with graphmem's
header: the header is checked by a bounded read before anything else happens.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import os
import socket
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from graphmem._errors import JournalCorruptError, StoreLockedError

__all__ = ["HEADER", "Journal", "JournalContents", "JournalCorruptError", "StoreLockedError"]

logger = logging.getLogger("graphmem")

HEADER = {"format": "graphmem-journal", "version": 1}

#: The header is one short line; a file whose first line is longer is not a journal, and
#: reading no further keeps a huge foreign file (or a device) from being read into memory.
MAX_HEADER_BYTES = 4096


@dataclass(slots=True)
class JournalContents:
    """What :meth:`Journal.read` found: the records with their line numbers, and where
    the complete lines end (anything after ``good_end`` is a torn tail)."""

    exists: bool = False
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    good_end: int = 0
    size: int = 0


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write every byte of ``data`` to ``fd`` (``os.write`` may write fewer)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class Journal:
    """An append-only, fsync-ed JSON Lines file of write operations.

    Args:
        path: the journal file.
        read_only: never lock, create, cut or write anything.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.path = Path(path)
        self.read_only = read_only
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.tmp_path = self.path.with_name(self.path.name + ".tmp")
        self._lock_fd: int | None = None
        self._fd: int | None = None
        #: The journal's length up to its last acknowledged write.
        self._size = 0
        #: Set when a failed append could not be undone: appending after it could
        #: acknowledge a line that follows an unacknowledged one.
        self._broken: str | None = None

    # ------------------------------------------------------------------ reading

    def check(self) -> None:
        """Refuse a path that is not a regular file holding a graphmem header.

        A missing or empty file passes (it is a new journal). Reads at most
        :data:`MAX_HEADER_BYTES` bytes.

        Raises:
            JournalCorruptError: anything else.
        """
        try:
            with self._open_for_reading() as fh:
                self._read_header(fh, os.fstat(fh.fileno()).st_size)
        except FileNotFoundError:
            return

    def read(self) -> JournalContents:
        """Every complete record, checked for shape. Never writes, even for a torn tail.

        Raises:
            JournalCorruptError: not a journal, or a bad line before its end.
        """
        try:
            fh = self._open_for_reading()
        except FileNotFoundError:
            return JournalContents()
        with fh:
            # One open file read to its end: a compaction renaming a new file into place
            # meanwhile does not mix two versions.
            size = os.fstat(fh.fileno()).st_size
            header_end = self._read_header(fh, size)
            data = fh.read()
        contents = JournalContents(exists=True, good_end=header_end, size=header_end + len(data))
        if header_end == 0:
            return contents
        offset = header_end
        lines = data.split(b"\n")
        for index, raw in enumerate(lines):
            line_no = index + 2
            if index == len(lines) - 1:
                break  # text after the final newline is a write that never completed
            try:
                record = json.loads(raw)
                if not isinstance(record, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                if b"\n".join(lines[index + 1 :]).strip():
                    raise JournalCorruptError(
                        f"{self.path}: line {line_no} is not a valid record and is followed "
                        f"by more data; refusing to drop acknowledged writes ({exc})"
                    ) from exc
                break  # an unreadable last line: a torn tail too
            problem = record_problem(record)
            if problem is not None:
                raise JournalCorruptError(f"{self.path}: line {line_no} is not a valid record: {problem}")
            offset += len(raw) + 1
            contents.good_end = offset
            contents.records.append((line_no, record))
        if contents.good_end < contents.size:
            logger.warning(
                "graphmem: %s ends with an incomplete write (%d bytes, from a crash?); "
                "recovering up to the last complete write%s",
                self.path,
                contents.size - contents.good_end,
                "" if not self.read_only else " (left on disk: a read-only open never writes)",
            )
        return contents

    def _open_for_reading(self) -> Any:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise JournalCorruptError(f"{self.path}: cannot be read as a journal ({exc.strerror or exc})") from exc
        self._require_regular(st)
        # O_NONBLOCK: a FIFO swapped in after the stat must not block the open.
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        fh = os.fdopen(fd, "rb")
        try:
            self._require_regular(os.fstat(fd))
        except BaseException:
            fh.close()
            raise
        return fh

    def _require_regular(self, st: os.stat_result) -> None:
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
            raise JournalCorruptError(f"{self.path} is {kind}, not a graphmem journal: point --store/path at a journal file")

    def _read_header(self, fh: Any, size: int) -> int:
        """Check the first line is graphmem's header; return its length (0 for an empty file)."""
        if size == 0:
            return 0
        first = fh.readline(MAX_HEADER_BYTES)
        problem: str | None = None
        if not first.endswith(b"\n"):
            problem = "its first line is not a graphmem journal header"
        else:
            try:
                header = json.loads(first)
            except ValueError:
                header = None
            if not isinstance(header, dict) or header.get("format") != HEADER["format"]:
                problem = "its first line is not a graphmem journal header"
            elif header.get("version") != HEADER["version"]:
                problem = f"journal version {header.get('version')!r} is not supported"
        if problem is not None:
            raise JournalCorruptError(
                f"{self.path} is not a graphmem journal ({problem}); refusing to read or change it"
            )
        return len(first)

    # ------------------------------------------------------------------ the writer's lock

    def acquire(self) -> None:
        """Take the store's writer lock (non-blocking) and record who holds it.

        Raises:
            StoreLockedError: another process (or another service in this process) holds it.
        """
        if self._lock_fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise StoreLockedError(
                f"{self.path} is open for writing by {self._holder()}; a store has one writer at a "
                "time: close that one first, or open this store read-only (read_only=True; the "
                "CLI's search, recent, stats, export, cypher and graph commands read without the lock)"
            ) from None
        try:
            holder = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "command": " ".join(sys.argv)[:200],
                "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            _write_all(fd, (json.dumps(holder) + "\n").encode("utf-8"))
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd

    def _holder(self) -> str:
        try:
            with open(self.lock_path, "rb") as fh:
                info = json.loads(fh.read(MAX_HEADER_BYTES))
            return f"pid {info['pid']} on host {info['host']} ({info['command']}, since {info['since']})"
        except (OSError, ValueError, TypeError, KeyError):
            return "another process"

    # ------------------------------------------------------------------ writing

    def open_for_writing(self, contents: JournalContents) -> None:
        """Make the journal ready to append, under the lock, after :meth:`read`.

        Deletes a leftover temporary file, creates a new journal (header written to the
        temporary file and renamed into place, so no reader ever sees half a header), and
        cuts off a torn tail.
        """
        assert self._lock_fd is not None and not self.read_only
        if self.tmp_path.exists():
            # Left by a crash during a compaction or creation: the journal is complete
            # without it, and it may hold erased text.
            self.tmp_path.unlink()
            _fsync_dir(self.path.parent)
        if not contents.exists or contents.size == 0:
            self._replace_with([])
        elif contents.good_end < contents.size:
            with open(self.path, "r+b") as fh:
                fh.truncate(contents.good_end)
                fh.flush()
                os.fsync(fh.fileno())
        self._open_append()

    def _open_append(self) -> int:
        if self._fd is None:
            assert self._lock_fd is not None, "append without the writer lock"
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
            self._size = os.fstat(fd).st_size
            self._fd = fd
        return self._fd

    def append(self, record: dict[str, Any]) -> None:
        """Write one record durably; returns only once it is on disk.

        On failure the file is cut back to its last acknowledged length before the error
        is raised, so the record is not there after a restart either.
        """
        if self._broken is not None:
            raise OSError(errno.EIO, self._broken)
        fd = self._open_append()
        data = _encode(record)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        except BaseException:
            self._roll_back(fd)
            raise
        self._size += len(data)

    def _roll_back(self, fd: int) -> None:
        try:
            os.ftruncate(fd, self._size)
            os.fsync(fd)
        except OSError as exc:
            self._broken = (
                f"{self.path}: a failed write could not be undone ({exc.strerror or exc}); "
                "reopen the store (its next writer cuts an incomplete line off)"
            )
            logger.error("graphmem: %s", self._broken)

    def rewrite(self, records: Iterable[dict[str, Any]]) -> None:
        """Replace the journal with ``records`` atomically (temp file, fsync, rename)."""
        self._replace_with(records)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._broken = None  # the file is new: nothing unacknowledged is left in it
        self._open_append()

    def _replace_with(self, records: Iterable[dict[str, Any]]) -> None:
        assert self._lock_fd is not None and not self.read_only
        try:
            mode = stat.S_IMODE(os.stat(self.path).st_mode)
        except FileNotFoundError:
            mode = 0o644
        try:
            with open(self.tmp_path, "wb") as fh:
                os.fchmod(fh.fileno(), mode)
                fh.write(_encode(HEADER))
                for record in records:
                    fh.write(_encode(record))
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(self.tmp_path, self.path)
        except BaseException:
            try:
                self.tmp_path.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - the next writer deletes it
                pass
            raise
        _fsync_dir(self.path.parent)

    def close(self) -> None:
        """Close the journal and release the writer lock. Idempotent."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if self._lock_fd is not None:
            # Closing the descriptor releases the flock; the holder line is left (stale but
            # harmless: only a failed flock reads it).
            os.close(self._lock_fd)
            self._lock_fd = None
        self._broken = None


# ---------------------------------------------------------------------------- record shapes


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _is_opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "an entry is not an object"
    for name, check in (("id", _is_str), ("author", _is_str), ("role", _is_str), ("text", _is_str), ("position", _is_int)):
        if name not in entry:
            return f"an entry has no {name!r}"
        if not check(entry[name]):
            return f"an entry's {name!r} has the wrong type ({type(entry[name]).__name__})"
    timestamp = entry.get("timestamp")
    if not isinstance(timestamp, str):
        return "an entry's 'timestamp' is not a string"
    try:
        datetime.fromisoformat(timestamp)
    except ValueError:
        return f"an entry's timestamp {timestamp[:40]!r} is not an ISO 8601 date and time"
    tokens = entry.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens):
        return "an entry's 'tokens' is not a list of strings"
    entities = entry.get("entities")
    if not isinstance(entities, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(part, str) for part in e) for e in entities
    ):
        return "an entry's 'entities' is not a list of [name, label] pairs"
    return None


def _is_entries(value: Any) -> bool:
    return isinstance(value, list)


def _is_ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) for i in value)


_OPS: dict[str, tuple[tuple[str, Any], ...]] = {
    "replace_session": (("project_id", _is_opt_str), ("session_id", _is_str), ("entries", _is_entries)),
    "insert_entry": (("project_id", _is_opt_str), ("entry", lambda v: isinstance(v, dict))),
    "delete_entries": (("ids", _is_ids),),
    "delete_session": (("session_id", _is_str),),
    "delete_project": (("project_id", _is_str),),
    "delete_user": (),
}


def record_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a journal record's shape, or ``None`` when it can be applied."""
    if "op" not in record:
        if "format" in record:
            return "a second journal header"
        return "it has no 'op'"
    op = record["op"]
    if not isinstance(op, str) or op not in _OPS:
        return f"unknown operation {str(op)[:40]!r}"
    for name, check in (("app_name", _is_str), ("user_id", _is_str), *_OPS[op]):
        if name not in record:
            return f"{op} has no {name!r}"
        if not check(record[name]):
            return f"{op}'s {name!r} has the wrong type ({type(record[name]).__name__})"
    if op == "replace_session":
        for entry in record["entries"]:
            problem = _entry_problem(entry)
            if problem is not None:
                return problem
    elif op == "insert_entry":
        return _entry_problem(record["entry"])
    return None


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
