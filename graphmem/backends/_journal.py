"""The journal that makes a :class:`GraphMemoryService` store durable: one file per user.

**Layout.** ``--store``/``path=`` names the store file, e.g. ``memory.journal``. Beside it:

- ``memory.journal``: one line, the header ``{"format": "graphmem-journal", "version": 2}``.
- ``memory.journal.d/``: one *segment* per (app, user), ``<sha256 of [app, user]>.journal``
  (a hash, because ids may hold any character), JSON Lines, UTF-8. Line 1 is the segment's
  header ``{"format": "graphmem-segment", "version": 1, "app_name": ..., "user_id": ...}``;
  every further line is one acknowledged write of that user (below).
- ``memory.journal.d/<sha256 of [app, user]>.snapshot``: a user's state as of a prefix of
  its segment (below), beside a large segment.
- ``memory.journal.lock``: the writer's lock; it holds the writer's pid, host and program
  (not its arguments: they may name a user, or the words of text being erased).
- ``*.tmp`` files: only while a segment or snapshot is being rewritten (or the store created).

A record is a JSON object with an ``"op"`` key, ``app_name`` and ``user_id``:

- ``replace_session``: ``project_id``, ``session_id`` and ``entries`` (each ``id``,
  ``author``, ``role``, ``text``, ``timestamp``, ``position``, ``tokens``, ``entities`` as
  ``[name, label]`` pairs). Tokens and entities are stored so that reloading never runs
  spaCy again.
- ``append_session``: like ``replace_session``, but the entries go after the session's
  last entry (their ``position`` counts from 0 and is added to that entry's position + 1,
  when the record is applied) and the session's other entries stay. A compaction writes
  the whole session as one ``replace_session``.
- ``insert_entry``: ``project_id`` and one ``entry`` as above.
- ``restore_entries``: ``project_id``, ``ids`` and ``entries``: the user's entries with those
  ids are deleted and the entries (outside any session) stored, as one change (a restore
  of entries outside sessions that replaces some of them).
- ``delete_entries`` (``ids``), ``delete_session`` (``session_id``), ``delete_project``
  (``project_id``), ``delete_user``.

**Version 1** (one file holding every user's records after its header, version 1) still
opens: readers read it as it is; the first writer migrates it to version 2 (every user's
live records into a segment, then the header replaced by an atomic rename, so a crash
leaves either the old journal, whole, or the new store).

**One writer, many readers.** A writer takes an exclusive ``flock`` on the lock file
before it reads the store and keeps it until it closes, so no other process can append to
(or compact away) a file whose state it did not load; a second writer gets
:class:`StoreLockedError` naming the holder. The lock is a separate file because a
compaction replaces a segment's inode. Readers take no lock and never write: each segment
is read from one open file to its end, and since the writer only appends whole lines and
replaces files by atomic renames, a reader sees each user's state at one moment (a line
still being appended looks like a torn tail and is ignored).

**Acknowledged means on disk.** A write is acknowledged only after its line is written
and ``fsync``-ed. If the append fails part-way (disk full, I/O error), the segment is cut
back to its last acknowledged length before the error is raised, so a failed write never
comes back after a restart. A crash can still leave a torn last line (no newline, or not
valid JSON): readers ignore it, and the next writer cuts it off, with a warning. A bad
line anywhere else, or a record of the wrong shape, is corruption and raises
:class:`JournalCorruptError` naming the file and line rather than dropping data. So is a
record no write makes: a key graphmem never writes (ignored, it would be lost at the next
compaction), or a non-null ``project_id`` or a ``delete_project`` (the networkx backend has
no projects; its service refuses every project call before writing).

**A segment that cannot be read** (such a bad line, a bad segment header, not a file) stops
only its user: a writer opening the store leaves it out (:meth:`Journal.read` with
``skip_unreadable``) and never appends to, rewrites or snapshots it, nor deletes its
snapshot; the service refuses that user's calls, and calls about everyone, with its error.
``delete_user`` of that user deletes the segment and its snapshot without reading them.

**Erasure.** A write that removes entries (a delete, or a session replaced) is followed
by a compaction of that user's segment only: the user's live records are written to a
temporary file, ``fsync``-ed and renamed over the segment (a segment left with nothing is
deleted, and ``delete_user`` just deletes the segment). Until that rename the removed text
is still in the segment, so a writer that opens a store whose segment holds such records
(a crash or a failure interrupted the compaction) compacts it at once; a leftover
temporary file is never trusted (the segment is complete without it) and is deleted.

**Snapshots.** A writer (on opening the store and on closing it, see the networkx
backend) snapshots each user with :data:`SNAPSHOT_AFTER_BYTES` or more of its segment in no
snapshot: one JSON header line ``{"format": "graphmem-snapshot", "version": 4, app_name,
user_id, python, marshal, segment_bytes, segment_sha256, payload_bytes, payload_sha256}``
then the payload, the user's state as :mod:`marshal` writes it (the backend decides what it
holds). ``segment_bytes`` is the segment's length when it was taken and ``segment_sha256``
the hash of its bytes after the header up to there. A reader uses a snapshot only if the
payload's hash matches, the Python and marshal versions are its own and the segment still
starts with those bytes, and then parses only the segment's lines after them; any other
snapshot is ignored with a warning (the segment alone is complete), and the next writer
deletes it. A compaction deletes the user's snapshot before renaming the new segment into
place (the snapshot may hold the removed text), as ``delete_user`` does before deleting
the segment.

Nothing is ever written to a path that is not a regular file starting with graphmem's
header: the header is checked by a bounded read before anything else happens.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import logging
import marshal
import os
import socket
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from graphmem._errors import (
    BackendUnavailableError,
    InvalidIdentifierError,
    InvalidProjectIdError,
    JournalCorruptError,
    StoreLockedError,
)
from graphmem._language import ENTRY_LANGUAGES
from graphmem._models import MAX_POSITION, validate_identifier, validate_project_id

__all__ = ["HEADER", "Journal", "JournalContents", "JournalCorruptError", "StoreLockedError", "holds_path"]

logger = logging.getLogger("graphmem")

FORMAT = "graphmem-journal"
#: A reader refuses a version it does not know, and a record or entry with a key it does
#: not know (:func:`record_problem`): a new key (even an optional one, as ``language`` and
#: ``time_refs`` were, before keys were checked) comes with a new version, so that an older
#: graphmem refuses the store by its header instead of dropping the key at a compaction.
VERSION = 2
HEADER = {"format": FORMAT, "version": VERSION}
SEGMENT_FORMAT = "graphmem-segment"
#: A store's new files and directories are its owner's alone (they hold every memory, and
#: a compaction's freed blocks may keep erased text): modes as created, before the umask.
#: A file rewritten keeps the mode it had (an owner may have shared it on purpose), and a
#: new one in a store takes the mode of its segment or of the store's header
#: (:meth:`Journal._replace_bytes`).
_PRIVATE_FILE = 0o600
_PRIVATE_DIR = 0o700
SNAPSHOT_FORMAT = "graphmem-snapshot"
#: Version 2: entries carry their language; 3: and their ``time_refs`` where known; 4: tokens
#: their ``user_speaker`` flag; 5: ``NEXT`` links across reactions (rule 12: a snapshot of
#: version 4 lacks them, and the journal's replay makes them). Another version is ignored
#: (the journal rebuilds).
SNAPSHOT_VERSION = 5

#: A writer snapshots a user (on opening the store and on closing it) once this many bytes
#: of the user's segment are in no snapshot: replaying a short tail costs little.
SNAPSHOT_AFTER_BYTES = 1 << 20

#: A header is one line (a segment's holds two ids of up to 256 characters); a file whose
#: first line is longer is not a journal, and reading no further keeps a huge foreign file
#: (or a device) from being read into memory.
MAX_HEADER_BYTES = 16384

OwnerKey = tuple[str, str]


@dataclass(slots=True)
class JournalContents:
    """What one file of the store held: its records with their line numbers, and where
    the complete lines end (anything after ``good_end`` is a torn tail)."""

    path: Path
    records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    good_end: int = 0
    size: int = 0
    #: A segment's (app, user); ``None`` for a version 1 journal.
    owner: OwnerKey | None = None
    #: The user's state from a valid snapshot (what the store's ``write_snapshot`` call
    #: gave), to load before applying ``records`` (which are then only the lines after the
    #: part of the segment the snapshot covers); ``None`` without one.
    snapshot: Any = None
    #: Where the part of the segment the snapshot covers ends (0: no valid snapshot).
    covered: int = 0


@dataclass(slots=True)
class StoreContents:
    """What :meth:`Journal.read` found: the store's version (``0``: no store yet) and its
    files' records (version 1: one file of every user; version 2: one per user)."""

    version: int = 0
    files: list[JournalContents] = field(default_factory=list)
    #: Only the segments of the users :meth:`Journal.read` was asked for were read (a
    #: version 1 journal is one file: it is always read whole).
    partial: bool = False
    #: The segments that could not be read, by file name, and why (only when
    #: :meth:`Journal.read` was asked to skip them): none of their records is in ``files``.
    unreadable: dict[str, JournalCorruptError] = field(default_factory=dict)


def orphaned_segments(path: Path) -> JournalCorruptError | None:
    """The error for a store whose header file at ``path`` is missing or empty while its
    segments remain (what to restore), or ``None`` when there are no segments: asked by
    the journal when it opens, and by the command line before it asks to delete."""
    segments_dir = _side_paths(path)[2]
    try:
        orphans = [n for n in os.listdir(segments_dir) if n.endswith(".journal")]
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not orphans:
        return None
    return JournalCorruptError(
        f"{path} is missing or empty, but {segments_dir} holds {len(orphans)} user "
        f"segment(s) of a store: restore {path.name} (its one line is "
        f"{json.dumps(HEADER)}) to open them, or delete {segments_dir} to start afresh"
    )


def _side_paths(path: Path) -> tuple[Path, Path, Path]:
    """The files a store at ``path`` keeps beside its header: lock, temporary header, segments."""
    return (
        path.with_name(path.name + ".lock"),
        path.with_name(path.name + ".tmp"),
        path.with_name(path.name + ".d"),
    )


def holds_path(store: str | os.PathLike[str], other: str | os.PathLike[str]) -> bool:
    """Whether ``other`` is one of the files of the store at ``store`` (its header, lock,
    temporary header, or anything in its segments directory), symlinks resolved: writing
    there would destroy the store."""
    header = Path(os.path.realpath(store))
    lock, tmp, segments = _side_paths(header)
    target = Path(os.path.realpath(other))
    return target in (header, lock, tmp, segments) or segments in target.parents


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


def segment_name(app_name: str, user_id: str) -> str:
    """The file name of a user's segment: a hash of the (app, user) pair, never a join."""
    key = json.dumps([app_name, user_id], ensure_ascii=False).encode("utf-8")
    return hashlib.sha256(key).hexdigest()[:32] + ".journal"


def _segment_header(owner: OwnerKey) -> dict[str, Any]:
    return {"format": SEGMENT_FORMAT, "version": 1, "app_name": owner[0], "user_id": owner[1]}


def _open_regular(path: Path, what: str) -> IO[bytes]:
    """Open ``path`` to read, refusing anything but a regular file (before opening it)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise JournalCorruptError(f"{path}: cannot be read as a {what} ({exc.strerror or exc})") from exc
    _require_regular(path, st, what)
    # O_NONBLOCK: a FIFO swapped in after the stat must not block the open.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    fh = os.fdopen(fd, "rb")
    try:
        _require_regular(path, os.fstat(fd), what)
    except BaseException:
        fh.close()
        raise
    return fh


def _require_regular(path: Path, st: os.stat_result, what: str) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise JournalCorruptError(f"{path} is {kind}, not a {what}: point --store/path at a journal file")


def _read_header(path: Path, fh: IO[bytes], what: str) -> tuple[dict[str, Any], int]:
    """The file's first line as a JSON object, and its length in bytes."""
    first = fh.readline(MAX_HEADER_BYTES)
    header: Any = None
    if first.endswith(b"\n"):
        try:
            header = json.loads(first)
        except ValueError:
            header = None
    if not isinstance(header, dict):
        raise JournalCorruptError(
            f"{path} is not a {what} (its first line is not a graphmem header); refusing to read or change it"
        )
    return header, len(first)


def _parse_lines(path: Path, data: bytes, first_line: int, offset: int) -> JournalContents:
    """The records of ``data`` (the file's bytes after its header, which end at ``offset``)."""
    contents = JournalContents(path, good_end=offset, size=offset + len(data))
    lines = data.split(b"\n")
    for index, raw in enumerate(lines):
        line_no = first_line + index
        if index == len(lines) - 1:
            break  # text after the final newline is a write that never completed
        try:
            record = json.loads(raw)
            if not isinstance(record, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            if b"\n".join(lines[index + 1 :]).strip():
                raise JournalCorruptError(
                    f"{path}: line {line_no} is not a valid record and is followed "
                    f"by more data; refusing to drop acknowledged writes ({exc})"
                ) from exc
            break  # an unreadable last line: a torn tail too
        problem = record_problem(record)
        if problem is not None:
            raise JournalCorruptError(f"{path}: line {line_no} is not a valid record: {problem}")
        offset += len(raw) + 1
        contents.good_end = offset
        contents.records.append((line_no, record))
    return contents


class Journal:
    """A store's files: the header file, the per-user segments and the writer's lock.

    Args:
        path: the store file (the header); segments live in ``PATH.d/``.
        read_only: never lock, create, cut or write anything.
    """

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        # Absolute, symlinks resolved, once: every later write derives its files from it. A
        # relative path would follow the process into another directory (and another
        # store), and a link to the header would put the lock and segments beside the link.
        self.path = Path(os.path.realpath(path))
        self.read_only = read_only
        self.lock_path, self.tmp_path, self.segments_dir = _side_paths(self.path)
        self._lock_fd: int | None = None
        #: The process that took the lock: a process forked from it shares the lock (a
        #: ``flock`` belongs to the open file, which a fork shares) but not its writes.
        self._lock_pid: int | None = None
        #: Segments where a failed append could not be undone: appending after it could
        #: acknowledge a line that follows an unacknowledged one.
        self._broken: dict[OwnerKey, str] = {}
        #: Per user (of a writer): where the segment part its snapshot covers ends (0: none).
        self.covered: dict[OwnerKey, int] = {}
        #: The segments (by file name) this writer could not read when it opened the store
        #: (:meth:`read` with ``skip_unreadable``), and why: never appended to, rewritten or
        #: snapshotted (what was not read cannot be written back), only removed whole.
        self.unreadable: dict[str, JournalCorruptError] = {}

    def segment_path(self, owner: OwnerKey) -> Path:
        """Where the segment of an (app, user) pair is (whether or not it exists)."""
        return self.segments_dir / segment_name(*owner)

    # ------------------------------------------------------------------ reading

    def check(self) -> None:
        """Refuse a store path that is not a regular file holding a graphmem header.

        A missing or empty file passes (a new store). Reads at most
        :data:`MAX_HEADER_BYTES` bytes.

        Raises:
            JournalCorruptError: anything else.
        """
        try:
            with _open_regular(self.path, "graphmem journal") as fh:
                if os.fstat(fh.fileno()).st_size:
                    self._check_header(_read_header(self.path, fh, "graphmem journal")[0])
        except FileNotFoundError:
            return

    def _check_header(self, header: dict[str, Any]) -> int:
        if header.get("format") != FORMAT:
            raise JournalCorruptError(
                f"{self.path} is not a graphmem journal (its first line is not a graphmem "
                "journal header); refusing to read or change it"
            )
        version = header.get("version")
        if isinstance(version, bool) or version not in (1, VERSION):  # (True == 1)
            raise JournalCorruptError(f"{self.path}: journal version {version!r} is not supported")
        return int(version)

    def _refuse_foreign_segments(self, contents: JournalContents) -> None:
        """A version 1 journal beside segments of users it does not hold: not a migration
        that stopped (it writes segments of the journal's users only) but an old header put
        back over a version 2 store (a restored backup). Read as version 1 it hides those
        users, and the migration of the next write would delete their segments."""
        names = self._segment_names()
        held = {segment_name(r["app_name"], r["user_id"]) for _, r in contents.records}
        foreign = sorted(set(names) - held)
        if foreign:
            raise JournalCorruptError(
                f"{self.path} is a version 1 journal, but {self.segments_dir} holds segments of "
                f"{len(foreign)} user(s) it does not have (a version {VERSION} store's, e.g. "
                f"{foreign[0]}): an old header put back over a newer store? Refusing to read it as "
                f"version 1 (that would hide them, and the next write would delete them): put back "
                f"the version {VERSION} header ({json.dumps(HEADER)}), or move {self.segments_dir.name} away"
            )

    def read(self, owners: Iterable[OwnerKey] | None = None, *, skip_unreadable: bool = False) -> StoreContents:
        """Every complete record of the store, checked for shape. Never writes, even for
        a torn tail.

        Args:
            owners: read only these users' segments (and the header): a reader asked about
                one user of thousands reads one file, not every file. ``None``: everyone.
            skip_unreadable: a segment that cannot be read (a bad line before its end, a
                bad header, not a file) is left out and named in the result's
                ``unreadable`` instead of raising: a writer opening the store still serves
                the other users, and erases that one unread (:meth:`remove`).

        Raises:
            JournalCorruptError: not a journal, or a bad line before the end of a file
                (of a segment: only without ``skip_unreadable``).
        """
        try:
            fh = _open_regular(self.path, "graphmem journal")
        except FileNotFoundError:
            self._refuse_orphaned_segments()
            return StoreContents()
        with fh:
            if os.fstat(fh.fileno()).st_size == 0:
                self._refuse_orphaned_segments()
                return StoreContents()
            header, header_length = _read_header(self.path, fh, "graphmem journal")
            version = self._check_header(header)
            if version == 1:
                # One open file read to its end: a migration renaming the new header into
                # place meanwhile does not mix two versions.
                contents = _parse_lines(self.path, fh.read(), 2, header_length)
                self._refuse_foreign_segments(contents)
                self._warn_torn(contents)
                return StoreContents(1, [contents])
            if fh.read(1):
                raise JournalCorruptError(
                    f"{self.path}: line 2: a version {VERSION} journal holds nothing after its "
                    f"header (the records are in {self.segments_dir})"
                )
        files = []
        unreadable: dict[str, JournalCorruptError] = {}
        if owners is not None:
            names = sorted({segment_name(*owner) for owner in owners})  # missing: nothing stored
        else:
            try:
                names = sorted(os.listdir(self.segments_dir))
            except FileNotFoundError:
                names = []
        for name in names:
            if name.endswith(".journal"):
                try:
                    segment = self._read_segment(self.segments_dir / name)
                except JournalCorruptError as exc:
                    if not skip_unreadable:
                        raise
                    unreadable[name] = exc
                    continue
                if segment is not None:
                    files.append(segment)
        return StoreContents(VERSION, files, partial=owners is not None, unreadable=unreadable)

    def _segment_names(self) -> list[str]:
        """The names of the user segments in the segments directory (none without one)."""
        try:
            return [n for n in os.listdir(self.segments_dir) if n.endswith(".journal")]
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _refuse_orphaned_segments(self) -> None:
        if (refusal := orphaned_segments(self.path)) is not None:
            raise refusal

    def _read_segment(self, path: Path) -> JournalContents | None:
        try:
            fh = _open_regular(path, "graphmem segment")
        except FileNotFoundError:
            return None  # the user was deleted since the listing
        with fh:
            header, header_length = _read_header(path, fh, "graphmem segment")
            owner = (header.get("app_name"), header.get("user_id"))
            if (
                header.get("format") != SEGMENT_FORMAT
                or header.get("version") != 1
                or not isinstance(owner[0], str)
                or not isinstance(owner[1], str)
                or segment_name(owner[0], owner[1]) != path.name
            ):
                raise JournalCorruptError(f"{path}: line 1 is not the header of this user segment")
            body = fh.read()
        key = (owner[0], owner[1])
        snapshot = self._read_snapshot(key, body, header_length)
        if snapshot is None:
            contents = _parse_lines(path, body, 2, header_length)
        else:
            covered = snapshot[0] - header_length
            # Only the lines after the covered part are parsed (their line numbers as in the file).
            contents = _parse_lines(path, body[covered:], 2 + body.count(b"\n", 0, covered), snapshot[0])
            contents.snapshot, contents.covered = snapshot[1], snapshot[0]
        contents.owner = key
        for line_no, record in contents.records:
            if (record["app_name"], record["user_id"]) != contents.owner:
                raise JournalCorruptError(f"{path}: line {line_no} is a record of another user than the segment's")
        self._warn_torn(contents)
        return contents

    # ------------------------------------------------------------------ snapshots

    def snapshot_path(self, owner: OwnerKey) -> Path:
        """Where the snapshot of an (app, user) pair's segment is (whether or not it exists)."""
        return self.segments_dir / (segment_name(*owner).removesuffix(".journal") + ".snapshot")

    def _read_snapshot(
        self, owner: OwnerKey, body: bytes, header_length: int
    ) -> tuple[int, Any] | None:
        """The user's snapshot, if it is whole and covers a prefix of this segment (whose
        bytes after the header are ``body``): where that prefix ends, and the state.

        A snapshot that is torn, made by another Python, or of other segment contents (a
        crash between a compaction and the snapshot's removal) is ignored with a warning:
        the segment alone rebuilds the user.
        """
        path = self.snapshot_path(owner)
        try:
            fh = _open_regular(path, "graphmem snapshot")
        except FileNotFoundError:
            return None
        except JournalCorruptError as exc:
            logger.warning("graphmem: %s; replaying the segment instead", exc)
            return None
        except OSError as exc:
            # Not readable by this reader (a store shared with a group, its snapshot not):
            # the segment alone is complete.
            logger.warning(
                "graphmem: cannot read the snapshot %s (%s); replaying the segment instead", path, exc.strerror or exc
            )
            return None
        with fh:
            data = fh.read()
        problem = _snapshot_problem(owner, data, body, header_length)
        if isinstance(problem, str):
            logger.warning(
                "graphmem: ignoring the snapshot %s (%s); replaying %s instead",
                path,
                problem,
                self.segment_path(owner),
            )
            return None
        return problem

    def write_snapshot(self, owner: OwnerKey, state: Any) -> None:
        """Snapshot the user: ``state`` (any value :mod:`marshal` writes) stands for its
        segment as it is now. Call with the segment unchanging (the user's lock held) and
        whole (torn tails cut off by :meth:`open_for_writing`).

        Written atomically (temporary file, fsync, rename); the header holds the SHA-256
        of the segment part it covers and of its own payload, which a reader checks.
        """
        self._require_writer_lock()
        self._refuse_unreadable(owner)
        segment = self.segment_path(owner)
        with _open_regular(segment, "graphmem segment") as fh:
            data = fh.read()
        header_length = data.index(b"\n") + 1
        payload = marshal.dumps(state)
        header = {
            "format": SNAPSHOT_FORMAT,
            "version": SNAPSHOT_VERSION,
            "app_name": owner[0],
            "user_id": owner[1],
            "python": list(sys.version_info[:2]),
            "marshal": marshal.version,
            "segment_bytes": len(data),
            "segment_sha256": hashlib.sha256(memoryview(data)[header_length:]).hexdigest(),
            "payload_bytes": len(payload),
            "payload_sha256": hashlib.sha256(payload).hexdigest(),
        }
        self._replace_bytes(self.snapshot_path(owner), _encode(header) + payload, like=self.segment_path(owner))
        _fsync_dir(self.segments_dir)
        self.covered[owner] = len(data)

    def stale_snapshots(self) -> list[OwnerKey]:
        """The users with at least :data:`SNAPSHOT_AFTER_BYTES` of their segment in no
        snapshot (after this writer's reads, snapshots and appends)."""
        stale = []
        for owner, covered in list(self.covered.items()):
            try:
                size = os.stat(self.segment_path(owner)).st_size
            except FileNotFoundError:
                continue
            if size > covered and size - covered >= SNAPSHOT_AFTER_BYTES:
                stale.append(owner)
        return stale

    def _warn_torn(self, contents: JournalContents) -> None:
        if contents.good_end < contents.size:
            logger.warning(
                "graphmem: %s ends with an incomplete write (%d bytes, from a crash?); "
                "recovering up to the last complete write%s",
                contents.path,
                contents.size - contents.good_end,
                " (left on disk: a read-only open never writes)" if self.read_only else "",
            )

    # ------------------------------------------------------------------ the writer's lock

    def acquire(self) -> None:
        """Take the store's writer lock (non-blocking) and record who holds it.

        Raises:
            StoreLockedError: another process (or another service in this process) holds it.
        """
        if self._lock_fd is not None:
            self._refuse_a_forked_writer()
            return
        self.path.parent.mkdir(mode=_PRIVATE_DIR, parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, _PRIVATE_FILE)
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
                # The program only: its arguments may name a user or words of their text
                # ("delete-user --user alice@example.com"), which must not outlive an erasure
                # in this file (the holder line stays after the lock is released).
                "command": os.path.basename(sys.argv[0])[:100] if sys.argv and sys.argv[0] else "python",
                "since": datetime.now(UTC).isoformat(timespec="seconds"),
            }
            os.ftruncate(fd, 0)
            _write_all(fd, (json.dumps(holder) + "\n").encode("utf-8"))
        except BaseException:
            os.close(fd)
            raise
        self._lock_fd = fd
        self._lock_pid = os.getpid()

    def _refuse_a_forked_writer(self) -> None:
        """Refuse a write in a process forked from the one that took the lock (a
        ``multiprocessing`` worker with the fork start method, ``gunicorn --preload``): the
        lock is shared, so nothing else would stop it, and each process rewrites segments
        from its own copy of the store, silently dropping the other's acknowledged writes."""
        if self._lock_pid is not None and self._lock_pid != os.getpid():
            raise StoreLockedError(
                f"{self.path} is open for writing by pid {self._lock_pid}, which this process "
                f"(pid {os.getpid()}) was forked from after it opened the store; a store has one "
                "writer at a time: write from the process that opened it, or open the store in "
                "each process only after forking (read_only=True to read it beside the writer)"
            )

    def _holder(self) -> str:
        try:
            with open(self.lock_path, "rb") as fh:
                info = json.loads(fh.read(MAX_HEADER_BYTES))
            return f"pid {info['pid']} on host {info['host']} ({info['command']}, since {info['since']})"
        except (OSError, ValueError, TypeError, KeyError):
            return "another process"

    # ------------------------------------------------------------------ writing

    def open_for_writing(
        self, contents: StoreContents, live: Iterable[tuple[OwnerKey, Iterable[dict[str, Any]]]]
    ) -> None:
        """Make the store ready to write, under the lock, after :meth:`read`.

        Creates a new store, migrates a version 1 journal (writing each user's ``live``
        records into a segment), or prepares a version 2 store: deletes leftover
        temporary files and cuts torn tails off.
        """
        assert self._lock_fd is not None and not self.read_only
        self.tmp_path.unlink(missing_ok=True)
        if contents.version == 1:
            self._migrate(live)
            return
        self.segments_dir.mkdir(mode=_PRIVATE_DIR, exist_ok=True)
        for name in os.listdir(self.segments_dir):
            if name.endswith(".tmp"):
                # Left by a crash during a rewrite: the segment is complete without it,
                # and it may hold erased text.
                (self.segments_dir / name).unlink()
        if contents.version == 0:
            self._replace_file(self.path, [HEADER])
            _fsync_dir(self.path.parent)
        self.unreadable = dict(contents.unreadable)
        # An unreadable segment's snapshot is left as it is, with the segment: neither was read.
        used = {name.removesuffix(".journal") + ".snapshot" for name in self.unreadable}
        for segment in contents.files:
            if segment.good_end < segment.size:
                with open(segment.path, "r+b") as fh:
                    fh.truncate(segment.good_end)
                    fh.flush()
                    os.fsync(fh.fileno())
            if segment.owner is not None:
                self.covered[segment.owner] = segment.covered
                if segment.covered:
                    used.add(self.snapshot_path(segment.owner).name)
        for name in os.listdir(self.segments_dir):
            if name.endswith(".snapshot") and name not in used:
                # Ignored (torn, stale) or of a deleted user: it may hold erased text.
                stale = self.segments_dir / name
                if stale.is_dir() and not stale.is_symlink():
                    # Not one the store wrote (it writes files): ignored by readers, and
                    # in the way of the next snapshot, but no one's to delete.
                    raise JournalCorruptError(
                        f"{stale} is a directory where graphmem keeps a snapshot file: move it away "
                        "(the segment beside it is complete without it)"
                    )
                stale.unlink()
        _fsync_dir(self.segments_dir)

    def _migrate(self, live: Iterable[tuple[OwnerKey, Iterable[dict[str, Any]]]]) -> None:
        """Version 1 to 2: every user's live records into a segment, then the new header.

        Until the header's rename the version 1 journal is the store (a crash leaves it
        whole, and the next writer starts the migration again, on a cleared directory).
        """
        self.segments_dir.mkdir(mode=_PRIVATE_DIR, exist_ok=True)
        for name in os.listdir(self.segments_dir):
            if name.endswith((".journal", ".snapshot", ".tmp")):
                (self.segments_dir / name).unlink()  # from a migration that did not finish
        for owner, records in live:
            self._replace_file(self.segment_path(owner), [_segment_header(owner), *records])
            self.covered[owner] = 0
        _fsync_dir(self.segments_dir)
        self._replace_file(self.path, [HEADER])
        _fsync_dir(self.path.parent)
        logger.info("graphmem: migrated %s to one segment per user in %s", self.path, self.segments_dir)

    def append(self, owner: OwnerKey, record: dict[str, Any]) -> None:
        """Write one record to the user's segment durably (:meth:`append_many`)."""
        self.append_many(owner, [record])

    def append_many(self, owner: OwnerKey, records: Sequence[dict[str, Any]]) -> None:
        """Write records to the user's segment durably, all or none: one write, one
        fsync; returns once they are on disk.

        On failure the segment is cut back to its last acknowledged length before the
        error is raised, so none of them is there after a restart either (a call of
        several sessions that fails leaves none of them, not the first few).
        """
        self._require_writer_lock()
        self._refuse_unreadable(owner)
        if owner in self._broken:
            raise OSError(errno.EIO, self._broken[owner])
        path = self.segment_path(owner)
        self.covered.setdefault(owner, 0)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        except FileNotFoundError:
            # A new user: the segment is created with its first records, all or nothing.
            try:
                self._replace_file(path, [_segment_header(owner), *records])
            except OSError as exc:
                if exc.filename is None:  # say which file refused it, as for an existing user
                    raise OSError(exc.errno, f"{exc.strerror or exc} (nothing was written)", str(path)) from exc
                raise
            self._sync_done(f"the first record of {path.name}")
            return
        try:
            size = os.fstat(fd).st_size
            try:
                _write_all(fd, b"".join(_encode(record) for record in records))
                os.fsync(fd)
            except BaseException as exc:
                self._roll_back(owner, fd, size)
                if isinstance(exc, OSError) and exc.filename is None:  # say which file refused it
                    raise OSError(exc.errno, f"{exc.strerror or exc} (the write was undone)", str(path)) from exc
                raise
        finally:
            os.close(fd)

    def _refuse_unreadable(self, owner: OwnerKey) -> None:
        """Refuse to write a segment this writer could not read: an append would follow a
        bad line (and be lost with it), a rewrite would drop the records it did not read."""
        exc = self.unreadable.get(segment_name(*owner))
        if exc is not None:
            raise JournalCorruptError(str(exc))

    def _require_writer_lock(self) -> None:
        """Refuse a write once the lock is gone: the service was closed while a call was
        still on its way here (a thread left running by a cancelled request). Not an
        ``assert``: ``python -O`` would drop it, and the write would run unlocked."""
        if self._lock_fd is None:
            raise BackendUnavailableError(
                f"{self.path}: the store was closed while this write was running; nothing of it "
                "was stored (open the store again to write)"
            )
        self._refuse_a_forked_writer()

    def _roll_back(self, owner: OwnerKey, fd: int, size: int) -> None:
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        except OSError as exc:
            self._broken[owner] = (
                f"{self.segment_path(owner)}: a failed write could not be undone ({exc.strerror or exc}); "
                "reopen the store (its next writer cuts an incomplete line off)"
            )
            logger.error("graphmem: %s", self._broken[owner])

    def rewrite(self, owner: OwnerKey, records: Iterable[dict[str, Any]]) -> None:
        """Replace the user's segment with ``records`` atomically (temporary file, fsync,
        rename); with no records, delete it."""
        self._require_writer_lock()
        self._refuse_unreadable(owner)
        records = list(records)
        if not records:
            self.remove(owner)
            return
        # The snapshot goes first: it may hold the removed text, and it would not match
        # the new segment anyway.
        self._remove_snapshot(owner)
        self._replace_file(self.segment_path(owner), [_segment_header(owner), *records])
        self._sync_done(f"the rewrite of {self.segment_path(owner).name}")
        self._broken.pop(owner, None)  # a new file: nothing unacknowledged is left in it

    def remove(self, owner: OwnerKey) -> None:
        """Delete the user's segment (everything of the user on disk), durably; an
        unreadable one too, unread (erasing a user never needs its records)."""
        self._require_writer_lock()
        self._remove_snapshot(owner)
        self.segment_path(owner).unlink(missing_ok=True)
        self._sync_done(f"the deletion of {self.segment_path(owner).name}")
        self._broken.pop(owner, None)
        self.unreadable.pop(segment_name(*owner), None)

    def _sync_done(self, change: str) -> None:
        """Sync the segments directory after a rename or unlink that is done. The change is
        in the file system already, where the next open reads it, and cannot be taken back
        with certainty: a failing sync is logged, not raised. Raising would report the
        write as failed and leave it unapplied in memory, to come back after a restart
        (or, for a deletion, the process would go on serving what the next open lacks)."""
        try:
            _fsync_dir(self.segments_dir)
        except OSError as exc:
            logger.error(
                "graphmem: %s is done, but %s could not be synced (%s): it may not survive a power loss",
                change,
                self.segments_dir,
                exc.strerror or exc,
            )

    def _remove_snapshot(self, owner: OwnerKey) -> None:
        self.snapshot_path(owner).unlink(missing_ok=True)
        self.covered[owner] = 0

    def _replace_file(self, path: Path, records: Iterable[dict[str, Any]]) -> None:
        """Write ``records`` as the whole of ``path``: temporary file, fsync, atomic rename
        (the caller fsyncs the directory)."""
        self._replace_bytes(path, (_encode(record) for record in records))

    def _replace_bytes(self, path: Path, chunks: Iterable[bytes] | bytes, *, like: Path | None = None) -> None:
        """Write ``chunks`` as the whole of ``path``, as :meth:`_replace_file` does.

        The file keeps the mode it had. A new one takes the mode of ``like`` (a snapshot:
        its segment's), else of the store's header file (a new user's segment), else it
        is private: a store its owner opened up to a group on purpose stays readable to it
        as it grows, and a new store is private whatever the umask."""
        tmp = path.with_name(path.name + ".tmp")
        mode = _PRIVATE_FILE
        for source in (path, like, self.path):
            if source is None:
                continue
            try:
                mode = stat.S_IMODE(os.stat(source).st_mode)
                break
            except FileNotFoundError:
                continue
        try:
            with open(tmp, "wb") as fh:
                os.fchmod(fh.fileno(), mode)
                for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                    fh.write(chunk)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:  # pragma: no cover - the next writer deletes it
                pass
            raise

    def close(self) -> None:
        """Release the writer lock. Idempotent."""
        if self._lock_fd is not None:
            # Closing the descriptor releases the flock; the holder line is left (stale but
            # harmless: only a failed flock reads it).
            os.close(self._lock_fd)
            self._lock_fd = None
            self._lock_pid = None
        self._broken.clear()
        self.unreadable.clear()


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
    unknown = _unknown_key(entry, _ENTRY_KEYS)
    if unknown is not None:
        return f"an entry has a key graphmem never writes: {unknown}"
    fields = (("id", _is_str), ("author", _is_str), ("role", _is_str), ("text", _is_str), ("position", _is_int))
    for name, check in fields:
        if name not in entry:
            return f"an entry has no {name!r}"
        if not check(entry[name]):
            return f"an entry's {name!r} has the wrong type ({type(entry[name]).__name__})"
    # What graphmem never writes, refused as the fixture model (and so an export) refuses it.
    try:
        validate_identifier(entry["id"], "an entry's 'id'")
    except InvalidIdentifierError as exc:
        return str(exc)
    if entry["position"] < 0:
        return f"an entry's 'position' is negative ({entry['position']})"
    if entry["position"] > MAX_POSITION:
        return f"an entry's 'position' is above the largest, 2**62 ({entry['position']})"
    if _is_blank(entry["text"]):
        return "an entry's 'text' is blank (a blank entry is never stored)"
    language = entry.get("language")
    if not _is_opt_str(language):
        return f"an entry's 'language' has the wrong type ({type(language).__name__})"
    if language is not None and language not in ENTRY_LANGUAGES:
        return f"an entry's 'language' {language[:40]!r} is not one of {', '.join(ENTRY_LANGUAGES)}"
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
    if any(_is_blank(t) for t in tokens):
        return "an entry's 'tokens' holds a blank token"
    entities = entry.get("entities")
    if not isinstance(entities, list) or not all(
        isinstance(e, list) and len(e) == 2 and all(isinstance(part, str) for part in e) for e in entities
    ):
        return "an entry's 'entities' is not a list of [name, label] pairs"
    if any(_is_blank(name) for name, _ in entities):
        return "an entry's 'entities' holds a blank name"
    return None


def _is_blank(text: str) -> bool:
    # As ``not text.strip()``, without copying a long text.
    return not text or text.isspace()


def _ids_problem(record: dict[str, Any]) -> str | None:
    """What is wrong with a record's app, user, session and project ids (their types
    checked), as the service refuses them before it writes anything."""
    try:
        for name in ("app_name", "user_id", "session_id"):
            if name in record:
                validate_identifier(record[name], name)
        if record.get("project_id") is not None:
            validate_project_id(record["project_id"])
    except (InvalidIdentifierError, InvalidProjectIdError) as exc:
        return str(exc)
    return None


def _is_entries(value: Any) -> bool:
    return isinstance(value, list)


def _is_ids(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(i, str) for i in value)


#: Every key an entry of a record may have: what graphmem writes (``language`` and
#: ``time_refs`` since they were added, and optional: records written before have none).
_ENTRY_KEYS = frozenset(
    ("id", "author", "role", "text", "timestamp", "position", "language", "tokens", "entities", "time_refs")
)

_OPS: dict[str, tuple[tuple[str, Any], ...]] = {
    "replace_session": (("project_id", _is_opt_str), ("session_id", _is_str), ("entries", _is_entries)),
    "append_session": (("project_id", _is_opt_str), ("session_id", _is_str), ("entries", _is_entries)),
    "insert_entry": (("project_id", _is_opt_str), ("entry", lambda v: isinstance(v, dict))),
    "restore_entries": (("project_id", _is_opt_str), ("ids", _is_ids), ("entries", _is_entries)),
    "delete_entries": (("ids", _is_ids),),
    "delete_session": (("session_id", _is_str),),
    "delete_project": (("project_id", _is_str),),
    "delete_user": (),
}


#: Every key each operation's record has (all of them required).
_RECORD_KEYS = {
    op: frozenset(("op", "app_name", "user_id", *(name for name, _ in fields))) for op, fields in _OPS.items()
}


def _unknown_key(keys: Any, known: frozenset[str]) -> str | None:
    """The first of ``keys`` not in ``known`` (shortened), or ``None``."""
    if known.issuperset(keys):
        return None
    return repr(next(str(key)[:40] for key in keys if key not in known))


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
    unknown = _unknown_key(record, _RECORD_KEYS[op])
    if unknown is not None:
        # Replayed, it would be ignored, and the next compaction would drop it: a typo, a
        # hand edit, or a format this graphmem does not know (a new key comes with a new
        # VERSION, which the header check refuses by name).
        return f"{op} has a key graphmem never writes: {unknown}"
    problem = _ids_problem(record)
    if problem is not None:
        return problem
    if record.get("project_id") is not None:
        # The journal is the networkx backend's, which has no projects: the service refuses
        # every project call before it writes. Replayed, a project's entries were listed
        # by `recent` as the user's global memory, counted and exported as a project no
        # call could reach, search or delete.
        if op == "delete_project":
            return "delete_project: the networkx backend has no projects (no write makes this record)"
        return (
            f"{op} is in project {record['project_id'][:40]!r}: the networkx backend has no projects "
            "(no write puts an entry in one)"
        )
    if op in ("replace_session", "append_session", "restore_entries"):
        for entry in record["entries"]:
            problem = _entry_problem(entry)
            if problem is not None:
                return problem
        ids = [entry["id"] for entry in record["entries"]]
        if len(set(ids)) != len(ids):
            # Replayed, the second would silently replace the first.
            return f"{op} holds entry id {next(i for i in ids if ids.count(i) > 1)!r} twice"
        if op != "restore_entries":
            positions = [entry["position"] for entry in record["entries"]]
            if any(later <= earlier for earlier, later in zip(positions, positions[1:], strict=False)):
                # NEXT links a session's turns in that order: an export could not write it.
                return f"{op}'s entry positions do not increase ({str(positions)[:80]})"
    elif op == "insert_entry":
        return _entry_problem(record["entry"])
    return None


def _snapshot_problem(
    owner: OwnerKey, data: bytes, body: bytes, header_length: int
) -> str | tuple[int, Any]:
    """What is wrong with a snapshot file's bytes ``data`` for the segment whose bytes
    after its header (``header_length`` long) are ``body``; or, when nothing is, where the
    covered part of the segment ends and the snapshot's state."""
    end = data.find(b"\n", 0, MAX_HEADER_BYTES)
    try:
        header = json.loads(data[:end]) if end >= 0 else None
    except ValueError:
        header = None
    expected = (SNAPSHOT_FORMAT, SNAPSHOT_VERSION)
    if not isinstance(header, dict) or (header.get("format"), header.get("version")) != expected:
        return "its first line is not a graphmem snapshot header"
    if (header.get("app_name"), header.get("user_id")) != owner:
        return "it is another user's"
    if header.get("python") != list(sys.version_info[:2]) or header.get("marshal") != marshal.version:
        return f"written by Python {header.get('python')}, marshal version {header.get('marshal')}"
    payload = memoryview(data)[end + 1 :]
    if (
        header.get("payload_bytes") != len(payload)
        or header.get("payload_sha256") != hashlib.sha256(payload).hexdigest()
    ):
        return "torn or damaged: its checksum does not match"
    covered = header.get("segment_bytes")
    if (
        not isinstance(covered, int)
        or isinstance(covered, bool)
        or not header_length <= covered <= header_length + len(body)
        or header.get("segment_sha256") != hashlib.sha256(memoryview(body)[: covered - header_length]).hexdigest()
    ):
        return "the segment is not the one it was taken of"
    try:
        # marshal, not pickle: loading it runs no code, whoever wrote the file.
        state = marshal.loads(payload)
    except (EOFError, ValueError, TypeError) as exc:
        return f"unreadable ({exc})"
    return covered, state


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
