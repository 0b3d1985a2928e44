"""Fixture files: conversations as JSON Lines, to seed a memory store and to export one.

One line is one session::

    {"app_name": "companion", "user_id": "alice", "session_id": "s1", "project_id": null,
     "entries": [{"author": "Alice", "role": "user", "text": "...",
                  "timestamp": "2026-01-05T19:02:00+00:00"}]}

- ``project_id`` is ``null`` (or left out) for global memory, or a project id.
- ``session_id`` may be ``null``: the entries are then stored one by one outside any
  session (``add_entry``), which is how an export writes such entries back. Only lines with
  a session id replace on reload; loading a ``null``-session line twice stores it twice.
- A timestamp without a timezone is taken as UTC.
- Blank lines are skipped. Unknown keys are errors, so a typo never loads silently.

Reading validates every line of every file before anything is stored: a bad line is
reported with its file and line number, and nothing of it (or of any other line) is stored.
That includes what storing would refuse later (a lone surrogate in any text, a timestamp
outside years 1 to 9999 in UTC) and JSON nested too deeply to parse safely.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from graphmem._errors import GraphmemError
from graphmem._models import (
    Content,
    MemoryEntry,
    Part,
    UnicodeStr,
    as_utc,
    quote_ids,
    validate_identifier,
    validate_project_id,
)
from graphmem._service import MemoryService, StoredEntry

__all__ = [
    "FixtureEntry",
    "FixtureError",
    "FixtureLine",
    "FixtureProblem",
    "FixtureSession",
    "LoadReport",
    "demo_fixtures_path",
    "dump_fixtures",
    "export_fixtures",
    "fixture_json_schema",
    "load_fixtures",
    "read_fixtures",
]

#: How many bad lines a :class:`FixtureError` lists at most (the count is always exact).
_MAX_PROBLEMS_KEPT = 50

#: The deepest JSON nesting a line may have. A valid line nests 3 deep (line, entries,
#: entry); far deeper input would make the json module raise RecursionError.
MAX_JSON_DEPTH = 32

# JSON string literals (whose brackets do not nest), and the brackets that do.
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


class FixtureEntry(BaseModel):
    """One message of a fixture session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # UnicodeStr: a lone surrogate is refused here, with the line number, not when storing.
    author: UnicodeStr = Field(description="Who wrote it, e.g. 'Alice' or 'assistant'. Its words become tokens.")
    role: UnicodeStr = Field(description="The message role, e.g. 'user' or 'model'.")
    text: UnicodeStr = Field(description="The message text; must not be blank.")
    timestamp: datetime = Field(
        description="ISO 8601 date and time; without a timezone it is taken as UTC."
    )

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            # The service skips blank entries: loading one would silently store nothing.
            raise ValueError("text must not be blank")
        return value

    @field_validator("timestamp")
    @classmethod
    def _timestamp_is_utc(cls, value: datetime) -> datetime:
        return as_utc(value)

    def to_memory_entry(self) -> MemoryEntry:
        return MemoryEntry(
            content=Content(role=self.role, parts=[Part(text=self.text)]),
            author=self.author,
            timestamp=self.timestamp,
        )


class FixtureSession(BaseModel):
    """One line of a fixture file: a session of one user, global or in a project."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    app_name: str = Field(description="The app the memory belongs to.")
    user_id: str = Field(description="The user the memory belongs to.")
    session_id: str | None = Field(
        description="The session id (a reload replaces the session), or null for entries "
        "stored one by one outside any session."
    )
    project_id: str | None = Field(
        default=None, description="null for global memory, or the project the session belongs to."
    )
    entries: list[FixtureEntry] = Field(min_length=1, description="The messages, in order.")

    @field_validator("app_name", "user_id", "session_id")
    @classmethod
    def _valid_identifier(cls, value: str | None, info: Any) -> str | None:
        return None if value is None else validate_identifier(value, info.field_name)

    @field_validator("project_id")
    @classmethod
    def _valid_project_id(cls, value: str | None) -> str | None:
        return None if value is None else validate_project_id(value)

    def memory_entries(self) -> list[MemoryEntry]:
        return [e.to_memory_entry() for e in self.entries]


def fixture_json_schema() -> dict[str, Any]:
    """The JSON Schema of one fixture line (``graphmem fixture-schema`` prints it)."""
    schema = FixtureSession.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = (
        "One line of a graphmem fixture file (JSON Lines: one session per line). "
        "Timestamps without a timezone are taken as UTC."
    )
    return schema


@dataclass(frozen=True, slots=True)
class FixtureLine:
    """A valid fixture line and where it came from."""

    source: str
    line_number: int
    session: FixtureSession

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line_number}"


@dataclass(frozen=True, slots=True)
class FixtureProblem:
    """A bad fixture line: where it is and what is wrong with it."""

    source: str
    line_number: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line_number}: {self.message}"


class FixtureError(GraphmemError, ValueError):
    """Fixture lines that cannot be loaded; nothing was stored.

    Attributes:
        problems: the bad lines (at most the first 50), each with its file and line number.
        count: how many lines are bad in all.
    """

    def __init__(
        self, problems: Sequence[FixtureProblem], count: int | None = None, *, kind: str = "bad line", hint: str = ""
    ) -> None:
        self.problems = list(problems)
        self.count = len(self.problems) if count is None else count
        first = str(self.problems[0]) if self.problems else "no valid fixture lines"
        more = f" (and {self.count - 1} more {kind}{'s' if self.count > 2 else ''})" if self.count > 1 else ""
        super().__init__(f"{first}{more}; nothing was loaded{hint}")


@dataclass(frozen=True, slots=True)
class LoadReport:
    """What :func:`load_fixtures` stored."""

    sessions: int
    entries: int
    users: int
    skipped_project_sessions: int
    seconds: float


def demo_fixtures_path() -> Path:
    """The demo fixture set shipped with graphmem (2 apps, 3 users, global and project sessions)."""
    return Path(__file__).resolve().parent / "_data" / "demo_fixtures.jsonl"


def _describe_validation_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    message = first["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return f"{where}: {message}" if where else message


def _too_deep(text: str) -> bool:
    """Whether the JSON in ``text`` nests deeper than :data:`MAX_JSON_DEPTH`."""
    depth = 0
    for bracket in _JSON_BRACKET.finditer(_JSON_STRING.sub("", text)):
        depth += 1 if bracket.group() in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _parse_lines(lines: Iterable[bytes], source: str) -> Iterator[FixtureLine | FixtureProblem]:
    for number, raw in enumerate(lines, start=1):
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            yield FixtureProblem(source, number, f"not UTF-8 ({exc.reason} at byte {exc.start})")
            continue
        if not text.strip():
            continue
        if _too_deep(text):
            yield FixtureProblem(source, number, f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            yield FixtureProblem(source, number, f"not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        if not isinstance(data, dict):
            yield FixtureProblem(source, number, f"a line must be a JSON object, got {type(data).__name__}")
            continue
        try:
            yield FixtureLine(source, number, FixtureSession.model_validate(data))
        except ValidationError as exc:
            yield FixtureProblem(source, number, _describe_validation_error(exc))


def read_fixtures(sources: Iterable[str | os.PathLike[str] | IO[bytes]]) -> list[FixtureLine]:
    """Read and validate every line of every fixture source.

    Args:
        sources: file paths, ``"-"`` for standard input, or binary file objects.

    Returns:
        The valid lines, in order.

    Raises:
        FixtureError: one or more lines are bad (each named by file and line number).
        OSError: a file cannot be read (e.g. ``FileNotFoundError``).
    """
    lines: list[FixtureLine] = []
    problems: list[FixtureProblem] = []
    count = 0
    for source in sources:
        for item in _parse_source(source):
            if isinstance(item, FixtureLine):
                lines.append(item)
            else:
                count += 1
                if len(problems) < _MAX_PROBLEMS_KEPT:
                    problems.append(item)
    if count:
        raise FixtureError(problems, count)
    return lines


def _parse_source(source: str | os.PathLike[str] | IO[bytes]) -> Iterator[FixtureLine | FixtureProblem]:
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            import sys

            yield from _parse_lines(sys.stdin.buffer, "<stdin>")
            return
        with open(source, "rb") as fh:
            yield from _parse_lines(fh, str(source))
        return
    yield from _parse_lines(source, getattr(source, "name", "<stream>"))


async def load_fixtures(
    service: MemoryService,
    sources: Iterable[str | os.PathLike[str] | IO[bytes]],
    skip_projects: bool = False,
    *,
    on_progress: Callable[[int, int], None] | None = None,
) -> LoadReport:
    """Validate fixture files, then store their sessions.

    Nothing is stored unless every line is valid and storable: a bad line, or a project
    line on a backend without project support (unless ``skip_projects``), stops the load
    before the first write. A session is never widened from a project to global memory.
    Sessions replace on reload, so loading the same file twice does not duplicate.

    Args:
        service: where to store.
        sources: fixture file paths, ``"-"`` for standard input, or binary file objects.
        skip_projects: leave out every line with a ``project_id`` (and count them).
        on_progress: called with (sessions stored, sessions to store) after each session.

    Returns:
        What was stored and how long it took.

    Raises:
        FixtureError: a bad line, or a project line the backend cannot store.
        OSError: a file cannot be read.
    """
    started = time.perf_counter()
    lines = read_fixtures(sources)
    kept = [line for line in lines if not (skip_projects and line.session.project_id is not None)]
    skipped = len(lines) - len(kept)
    if not service.supports_project_scoping():
        in_projects = [line for line in kept if line.session.project_id is not None]
        if in_projects:
            problems = [
                FixtureProblem(
                    line.source,
                    line.line_number,
                    f"{_in_project(line.session)}, "
                    f"which {type(service).__name__} cannot store (it has no project support)",
                )
                for line in in_projects[:_MAX_PROBLEMS_KEPT]
            ]
            hint = (
                "; load into a backend with projects (Neo4j), or leave project sessions out "
                "with --skip-projects (skip_projects=True)"
            )
            raise FixtureError(problems, len(in_projects), kind="project line", hint=hint)
    users: set[tuple[str, str]] = set()
    entries = 0
    for done, line in enumerate(kept, start=1):
        await _store(service, line.session)
        users.add((line.session.app_name, line.session.user_id))
        entries += len(line.session.entries)
        if on_progress is not None:
            on_progress(done, len(kept))
    return LoadReport(
        sessions=len(kept),
        entries=entries,
        users=len(users),
        skipped_project_sessions=skipped,
        seconds=time.perf_counter() - started,
    )


def _in_project(session: FixtureSession) -> str:
    """``session "s" is in project "p"`` for a line with a project id."""
    assert session.project_id is not None
    what = "a line of entries outside any session" if session.session_id is None else (
        f"session {quote_ids(session.session_id)}"
    )
    return f"{what} is in project {quote_ids(session.project_id)}"


async def _store(service: MemoryService, session: FixtureSession) -> None:
    app, user, project = session.app_name, session.user_id, session.project_id
    if session.session_id is None:
        for entry in session.memory_entries():
            if project is None:
                await service.add_entry(app, user, entry)
            else:
                await service.add_entry_to_project(app, user, project, entry)
    elif project is None:
        await service.add_session(app, user, session.session_id, session.memory_entries())
    else:
        await service.add_session_to_project(app, user, session.session_id, project, session.memory_entries())


async def export_fixtures(
    service: MemoryService,
    app_name: str,
    user_id: str,
    project_id: str | None = None,
    *,
    all_projects: bool = False,
) -> list[FixtureSession]:
    """A scope of one user as fixture sessions (what ``graphmem export`` writes).

    The scope is that of :meth:`MemoryService.list_entries`: global entries
    (``project_id=None``), one project's entries, or everything (``all_projects=True``).
    Loading the result into an empty store reproduces the same search results.
    """
    stored = await service.list_entries(app_name, user_id, project_id, all_projects=all_projects)
    sessions: list[FixtureSession] = []
    group: list[StoredEntry] = []

    def flush() -> None:
        if group:
            sessions.append(
                FixtureSession(
                    app_name=app_name,
                    user_id=user_id,
                    session_id=group[0].session_id,
                    project_id=group[0].project_id,
                    entries=[
                        FixtureEntry(
                            author=e.memory.author,
                            role=e.memory.content.role,
                            text=e.memory.text,
                            timestamp=e.memory.timestamp,
                        )
                        for e in group
                    ],
                )
            )
            group.clear()

    for entry in stored:  # ordered by project, session and position
        if group and (entry.project_id, entry.session_id) != (group[0].project_id, group[0].session_id):
            flush()
        group.append(entry)
    flush()
    return sessions


def dump_fixtures(sessions: Iterable[FixtureSession]) -> Iterator[str]:
    """Fixture lines (each ending in a newline) for ``sessions``."""
    for session in sessions:
        data = session.model_dump(mode="json")
        for entry in data["entries"]:
            if entry["timestamp"].endswith("Z"):  # the same spelling as the demo fixtures
                entry["timestamp"] = entry["timestamp"][:-1] + "+00:00"
        yield json.dumps(data, ensure_ascii=False) + "\n"
