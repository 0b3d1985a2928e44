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

A write is acknowledged only after its line is written, flushed and ``fsync``-ed. A crash
can leave a torn last line (no newline, or not valid JSON): on load it is cut off with a
warning, and everything before it — every acknowledged write — is kept. A bad line
anywhere else is corruption and raises :class:`JournalCorruptError` rather than dropping
data. After a delete the journal is rewritten (compacted) through a temporary file,
``fsync`` and an atomic rename, so erased text does not stay on disk.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from graphmem._errors import GraphmemError

logger = logging.getLogger("graphmem")

HEADER = {"format": "graphmem-journal", "version": 1}


class JournalCorruptError(GraphmemError):
    """The journal has an unreadable line before its end (not a torn tail)."""


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Journal:
    """An append-only, fsync-ed JSON Lines file of write operations."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._file: IO[bytes] | None = None

    def read(self) -> Iterator[dict[str, Any]]:
        """Yield every complete record; cut a torn tail off the file (with a warning)."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        offset = 0
        good_end = 0
        records: list[dict[str, Any]] = []
        lines = data.split(b"\n")
        for index, raw in enumerate(lines):
            is_last = index == len(lines) - 1
            if is_last:
                # Text after the final newline is a write that never completed.
                if raw:
                    self._truncate_torn_tail(good_end, len(data))
                break
            try:
                record = json.loads(raw)
                if not isinstance(record, dict):
                    raise ValueError("not an object")
            except ValueError as exc:
                rest = b"\n".join(lines[index + 1 :]).strip()
                if rest:
                    raise JournalCorruptError(
                        f"{self.path}: line {index + 1} is not a valid record and is followed "
                        f"by more data; refusing to drop acknowledged writes ({exc})"
                    ) from exc
                self._truncate_torn_tail(good_end, len(data))
                break
            offset += len(raw) + 1
            good_end = offset
            if index == 0:
                if record.get("format") != HEADER["format"]:
                    raise JournalCorruptError(f"{self.path}: not a graphmem journal")
                if record.get("version") != HEADER["version"]:
                    raise JournalCorruptError(
                        f"{self.path}: journal version {record.get('version')} is not supported"
                    )
                continue
            records.append(record)
        yield from records

    def _truncate_torn_tail(self, good_end: int, size: int) -> None:
        logger.warning(
            "graphmem: %s ends with an incomplete write (%d bytes, from a crash?); "
            "recovering up to the last complete write",
            self.path,
            size - good_end,
        )
        with open(self.path, "r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())

    def _open(self) -> IO[bytes]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            new = not self.path.exists() or self.path.stat().st_size == 0
            self._file = open(self.path, "ab")
            if new:
                self._file.write(_encode(HEADER))
                self._file.flush()
                os.fsync(self._file.fileno())
                _fsync_dir(self.path.parent)
        return self._file

    def append(self, record: dict[str, Any]) -> None:
        """Write one record durably; returns only once it is on disk."""
        fh = self._open()
        fh.write(_encode(record))
        fh.flush()
        os.fsync(fh.fileno())

    def rewrite(self, records: Iterable[dict[str, Any]]) -> None:
        """Replace the journal with ``records`` atomically (temp file, fsync, rename)."""
        self.close()
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as fh:
            fh.write(_encode(HEADER))
            for record in records:
                fh.write(_encode(record))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _encode(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
