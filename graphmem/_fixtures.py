"""Fixture files: conversations as JSON Lines, to seed a memory store and to export one.

One line is one session::

    {"app_name": "companion", "user_id": "alice", "session_id": "s1", "project_id": null,
     "entries": [{"author": "Alice", "role": "user", "text": "...",
                  "timestamp": "2026-01-05T19:02:00+00:00"}]}

- ``project_id`` is ``null`` (or left out) for global memory, or a project id.
- ``session_id`` may be ``null``: the entries are then stored one by one outside any
  session (as ``add_entry`` stores them).
- ``author``, ``role`` and ``text`` are required. Everything else of an entry is optional
  in a hand-written file and written by every export, which is what makes export then load
  a faithful copy:

  - ``timestamp``: without a timezone it is taken as UTC; left out, it is the time of the
    load (one instant for the whole load), as ``MemoryEntry`` defaults to now.
  - ``id``: the entry id to keep (ids are part of the contract: search hits and the ADK
    memory ids carry them); left out, a new one. An id held by another user's entry, or by
    another session or scope of the same user, stops the load before anything is stored.
  - ``position``: the entry's place in its session. Give every entry of a line one, or
    none (then 0, 1, 2, ...); they must increase. ``NEXT`` links positions ``p`` and
    ``p + 1`` only, so the gap a deleted turn left stays a gap after a reload.
  - ``tokens`` and ``entities`` (``[name, label]`` pairs), together: the entry's terms as
    stored, used as given instead of running spaCy (``redecompose=True`` ignores them).
    Edit an entry's text and you must drop them, or the old words stay searchable.
  - ``language``: the language the text was decomposed as; left out, detected from the text.

- Only lines with a session id, or entries with ids, replace on reload; loading a
  ``null``-session line without ids twice stores its entries twice.
- Blank lines are skipped. Unknown keys are errors, so a typo never loads silently.

Reading validates every line of every file before anything is stored: a bad line is
reported with its file and line number, and nothing of it (or of any other line) is stored.
That includes what storing would refuse later (a lone surrogate in any text, a timestamp
outside years 1 to 9999 in UTC, an entry id held elsewhere) and JSON nested too deeply to
parse safely.
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
from typing import IO, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graphmem._decompose import Decomposition, Entity
from graphmem._errors import BackendUnavailableError, EntryIdConflictError, GraphmemError
from graphmem._language import ENTRY_LANGUAGES
from graphmem._models import (
    MAX_POSITION,
    Content,
    MemoryEntry,
    Part,
    UnicodeStr,
    as_utc,
    check_author,
    check_text_length,
    quote_ids,
    read_time,
    utc_now,
    validate_identifier,
    validate_project_id,
)
from graphmem._service import EntryRecord, MemoryService, StoredEntry, restored_positions

__all__ = [
    "FixtureEntry",
    "FixtureError",
    "FixtureLine",
    "FixtureProblem",
    "FixtureSession",
    "LoadReport",
    "check_fixture_lines",
    "demo_fixtures_path",
    "dump_fixtures",
    "export_fixtures",
    "fixture_json_schema",
    "kept_fixture_lines",
    "load_fixture_lines",
    "load_fixtures",
    "read_fixtures",
]

#: How many bad lines a :class:`FixtureError` lists at most (the count is always exact).
_MAX_PROBLEMS_KEPT = 50

#: The deepest JSON nesting a line may have. A valid line nests 3 deep (line, entries,
#: entry); far deeper input would make the json module raise RecursionError.
MAX_JSON_DEPTH = 32

# A JSON string literal (whose brackets do not nest), or a bracket outside one. A string
# left open runs to the end of the line: each character is read once, where stripping only
# closed strings rescanned to the end from every quote of an open one (a line cut short
# inside a string of many \" took minutes).
_JSON_STRING_OR_BRACKET = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]')


#: Every language code an entry may store.
KNOWN_LANGUAGES = ENTRY_LANGUAGES


class FixtureEntry(BaseModel):
    """One message of a fixture session."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    # UnicodeStr: a lone surrogate is refused here, with the line number, not when storing.
    author: UnicodeStr = Field(description="Who wrote it, e.g. 'Alice' or 'assistant'. Its words become tokens.")
    role: UnicodeStr = Field(description="The message role, e.g. 'user' or 'model'.")
    text: UnicodeStr = Field(description="The message text; must not be blank.")
    timestamp: datetime | None = Field(
        default=None,
        description="ISO 8601 date and time; without a timezone it is taken as UTC. Optional: left out, "
        "it is the time of the load (one instant for the whole load). Exports always write it.",
    )
    id: str | None = Field(
        default=None,
        description="The entry id, kept by the load. Optional: left out, the entry gets a new id. An id held "
        "by another user's entry, or by another session or scope of this user, is refused. Exports always "
        "write it.",
    )
    position: Annotated[int, Field(strict=True)] | None = Field(
        default=None,
        ge=0,
        le=MAX_POSITION,
        description="The entry's place in its session: give it on every entry of the line or on none "
        "(then 0, 1, 2, ... in order); positions must increase. NEXT links positions p and p+1 only, so "
        "a gap stays a gap. Exports always write it.",
    )
    tokens: list[UnicodeStr] | None = Field(
        default=None,
        description="The entry's tokens as stored, used as given (no spaCy) but lowercased, as every stored "
        "term is; with entities. Optional: left out, the text is decomposed. Drop both if you edit the text. "
        "Exports always write them.",
    )
    entities: list[tuple[UnicodeStr, UnicodeStr]] | None = Field(
        default=None,
        description="The entry's entities as stored, [name, label] pairs, used as given but the names "
        "lowercased (a search matches lowercased names); with tokens.",
    )
    language: str | None = Field(
        default=None,
        description="The language the text was decomposed as ('en', 'es', 'fr', 'de', 'it', 'pt', 'hi', 'ja', "
        "'zh', 'ko' or 'xx' for an unknown script). Optional: left out, it is detected from the text (or "
        "decided by the decomposer's language setting). Exports write it when the store holds it.",
    )

    @field_validator("text")
    @classmethod
    def _text_not_blank(cls, value: str) -> str:
        if not value.strip():
            # The service skips blank entries: loading one would silently store nothing.
            raise ValueError("text must not be blank")
        check_text_length(value)  # refused with the other bad lines, before anything is stored
        return value

    @field_validator("author")
    @classmethod
    def _author_not_too_long(cls, value: str) -> str:
        check_author(value)
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp_is_a_time(cls, value: Any) -> Any:
        return read_time(value, "timestamp")

    @field_validator("timestamp")
    @classmethod
    def _timestamp_is_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        if value is not None and value not in KNOWN_LANGUAGES:
            raise ValueError(f"language must be one of {', '.join(KNOWN_LANGUAGES)}, got {value!r}")
        return value

    @field_validator("id")
    @classmethod
    def _valid_entry_id(cls, value: str | None) -> str | None:
        return None if value is None else validate_identifier(value, "id")

    @field_validator("tokens")
    @classmethod
    def _tokens_lowercased(cls, value: list[str] | None) -> list[str] | None:
        # Every stored term is lowercase (what the decomposer and a query's words are): a
        # hand-written "Lisbon" would be stored and never matched.
        return None if value is None else [token.lower() for token in value]

    @field_validator("entities")
    @classmethod
    def _entity_names_lowercased(cls, value: list[tuple[str, str]] | None) -> list[tuple[str, str]] | None:
        return None if value is None else [(name.lower(), label) for name, label in value]

    @model_validator(mode="after")
    def _terms_together(self) -> FixtureEntry:
        if (self.tokens is None) != (self.entities is None):
            raise ValueError("give tokens and entities together, or neither (the text is then decomposed)")
        if self.tokens is not None and any(not t.strip() for t in self.tokens):
            raise ValueError("tokens must not be blank")
        if self.entities is not None and any(not name.strip() for name, _ in self.entities):
            raise ValueError("entity names must not be blank")
        return self

    def to_memory_entry(self, default_timestamp: datetime | None = None) -> MemoryEntry:
        """The message; ``default_timestamp`` (else now) when the entry gives none."""
        return MemoryEntry(
            content=Content(role=self.role, parts=[Part(text=self.text)]),
            author=self.author,
            timestamp=self.timestamp or default_timestamp or utc_now(),
        )

    def to_record(self, default_timestamp: datetime, *, with_terms: bool = True) -> EntryRecord:
        """What :meth:`MemoryService.restore_session` stores for this entry."""
        terms = None
        if with_terms and self.tokens is not None and self.entities is not None:
            terms = Decomposition(
                tokens=tuple(dict.fromkeys(self.tokens)),
                entities=tuple({name: Entity(name, label) for name, label in self.entities}.values()),
            )
        return EntryRecord(
            memory=self.to_memory_entry(default_timestamp),
            entry_id=self.id,
            position=self.position,
            terms=terms,
            # The line's language: of its terms, or how to decompose its text (re-decomposing
            # with another pipeline, ``with_terms=False``, lets that pipeline decide).
            language=self.language if with_terms else None,
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

    @model_validator(mode="after")
    def _positions_and_ids(self) -> FixtureSession:
        # What restore_session would refuse, refused here with the line number.
        restored_positions([e.position for e in self.entries], in_session=self.session_id is not None)
        ids = [e.id for e in self.entries if e.id is not None]
        if len(set(ids)) != len(ids):
            raise ValueError(f"entry id {quote_ids(next(i for i in ids if ids.count(i) > 1))} is given twice")
        return self

    def memory_entries(self, default_timestamp: datetime | None = None) -> list[MemoryEntry]:
        """The session's entries as :class:`MemoryEntry` objects (``default_timestamp`` for
        an entry that gives none)."""
        return [e.to_memory_entry(default_timestamp) for e in self.entries]

    def records(self, default_timestamp: datetime, *, with_terms: bool = True) -> list[EntryRecord]:
        """The session's entries as :meth:`MemoryService.restore_session` stores them
        (``with_terms``: with the tokens and entities the line gives, when it gives both)."""
        return [e.to_record(default_timestamp, with_terms=with_terms) for e in self.entries]


def fixture_json_schema() -> dict[str, Any]:
    """The JSON Schema of one fixture line (``graphmem fixture-schema`` prints it)."""
    schema = FixtureSession.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["description"] = (
        "One line of a graphmem fixture file (JSON Lines: one session per line). Required per entry: "
        "author, role, text; timestamp, id, position, tokens and entities are optional in a hand-written "
        "file (see their descriptions for the defaults) and written by every export. Timestamps without "
        "a timezone are taken as UTC."
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
    """Fixture lines that cannot be loaded; nothing was stored, unless :attr:`stored` says
    how many sessions a load stored before a line failed while storing.

    Attributes:
        problems: the bad lines (at most the first 50), each with its file and line number.
        count: how many lines are bad in all.
        stored: the sessions stored before the failure (0: nothing was stored).
    """

    def __init__(
        self,
        problems: Sequence[FixtureProblem],
        count: int | None = None,
        *,
        kind: str = "bad line",
        hint: str = "",
        stored: int = 0,
    ) -> None:
        self.problems = list(problems)
        self.count = len(self.problems) if count is None else count
        self.stored = stored
        first = str(self.problems[0]) if self.problems else "no valid fixture lines"
        more = f" (and {self.count - 1} more {kind}{'s' if self.count > 2 else ''})" if self.count > 1 else ""
        outcome = (
            "nothing was loaded"
            if not stored
            else f"the {stored} session{'s' if stored > 1 else ''} before it {'were' if stored > 1 else 'was'} "
            "stored, and loading the file again once it is fixed replaces them"
        )
        super().__init__(f"{first}{more}; {outcome}{hint}")


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
    for token in _JSON_STRING_OR_BRACKET.finditer(text):
        found = token.group()
        if found[0] == '"':
            continue
        depth += 1 if found in "[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


class _RepeatedKey(ValueError):
    """A JSON object of a fixture line gives one key twice (JSON keeps the last silently)."""


def _each_key_once(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    for key, value in pairs:
        if key in data:
            raise _RepeatedKey(key)
        data[key] = value
    return data


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
        # Without its line end: JSON cut short would be "line 2, column 1" of the text with it.
        line = text.rstrip("\r\n")
        try:
            data = json.loads(line, object_pairs_hook=_each_key_once)
        except json.JSONDecodeError as exc:
            where = "at the end of the line" if exc.pos >= len(line) else f"at column {exc.colno}"
            # Some of Python's messages end in "at" ("Invalid control character at").
            message = exc.msg.removesuffix(" at")
            yield FixtureProblem(source, number, f"not valid JSON ({message} {where})")
            continue
        except _RepeatedKey as exc:
            yield FixtureProblem(source, number, f"key {exc.args[0]!r:.60} is given twice in one object")
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

            if sys.stdin is None:
                yield FixtureProblem("<stdin>", 0, "standard input is closed: give a file, or pipe the fixtures in")
                return
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
    redecompose: bool = False,
) -> LoadReport:
    """Validate fixture files, then store their sessions.

    Nothing is stored unless every line is valid and storable: a bad line, a project line on
    a backend without project support (unless ``skip_projects``), a session on two lines of
    this load, or an entry id held elsewhere (by another user, another session or scope, or
    another line of this load) stops the load before the first write. A session is never
    widened from a project to global memory. Sessions (and entries with ids) replace on
    reload, so loading the same file twice does not duplicate them; entries outside any
    session (``session_id`` null) that have no id are added again by every load. Entries
    keep their ids, positions and terms (:meth:`MemoryService.restore_session`), so loading
    an export reproduces the store.

    Args:
        service: where to store.
        sources: fixture file paths, ``"-"`` for standard input, or binary file objects.
        skip_projects: leave out every line with a ``project_id`` (and count them).
        on_progress: called with (sessions stored, sessions to store) after each session.
        redecompose: ignore the lines' ``tokens`` and ``entities`` and decompose every text
            with this service's pipeline (to move a store to a new pipeline).

    Returns:
        What was stored and how long it took.

    Raises:
        FixtureError: a bad line, a project line the backend cannot store, a repeated
            session, or an entry id held elsewhere.
        OSError: a file cannot be read.
    """
    started = time.perf_counter()
    lines = read_fixtures(sources)
    return await load_fixture_lines(
        service, lines, skip_projects, on_progress=on_progress, redecompose=redecompose, started=started
    )


async def load_fixture_lines(
    service: MemoryService,
    lines: Sequence[FixtureLine],
    skip_projects: bool = False,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    redecompose: bool = False,
    started: float | None = None,
) -> LoadReport:
    """:func:`load_fixtures` of lines :func:`read_fixtures` has read: checked (see
    :func:`check_fixture_lines`), then stored.

    Args:
        started: when the load began (``time.perf_counter()``), for the report's seconds:
            before the lines were read; default now.
    """
    started = time.perf_counter() if started is None else started
    kept = await check_fixture_lines(service, lines, skip_projects)
    loaded_at = utc_now()  # the timestamp of entries that give none: one instant per load
    users: set[tuple[str, str]] = set()
    async with service.bulk_writes():  # (networkx: one segment rewrite per user, at the end)
        entries = await _store_lines(service, kept, loaded_at, redecompose, users, on_progress)
    return LoadReport(
        sessions=len(kept),
        entries=entries,
        users=len(users),
        skipped_project_sessions=len(lines) - len(kept),
        seconds=time.perf_counter() - started,
    )


def kept_fixture_lines(lines: Sequence[FixtureLine], skip_projects: bool = False) -> list[FixtureLine]:
    """The lines a load stores: all of them, or with ``skip_projects`` those outside any project."""
    return [line for line in lines if not (skip_projects and line.session.project_id is not None)]


async def check_fixture_lines(
    service: MemoryService, lines: Sequence[FixtureLine], skip_projects: bool = False
) -> list[FixtureLine]:
    """The lines a load into ``service`` stores (without those in a project with
    ``skip_projects``), checked as :func:`load_fixtures` checks them before its first write.

    Raises:
        FixtureError: a project line the backend cannot store, a session on two lines, or
            an entry id held elsewhere.
    """
    kept = kept_fixture_lines(lines, skip_projects)
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
    _check_each_session_once(kept)
    await _check_entry_ids(service, kept)
    return kept


async def _store_lines(
    service: MemoryService,
    kept: Sequence[FixtureLine],
    loaded_at: datetime,
    redecompose: bool,
    users: set[tuple[str, str]],
    on_progress: Callable[[int, int], None] | None,
) -> int:
    """Store each line's session, in order; returns how many entries were stored."""
    entries = 0
    for done, line in enumerate(kept, start=1):
        session = line.session
        try:
            await service.restore_session(
                session.app_name,
                session.user_id,
                session.session_id,
                session.records(loaded_at, with_terms=not redecompose),
                project_id=session.project_id,
            )
        except EntryIdConflictError as exc:
            # Stored since the check (another load, another process): each line is its own
            # write, so what came before it stays; say so, and where.
            problem = FixtureProblem(line.source, line.line_number, str(exc).split("; nothing")[0])
            raise FixtureError([problem], kind="entry id conflict", stored=done - 1) from exc
        except BackendUnavailableError as exc:
            raise BackendUnavailableError(
                f"{exc}; loading {line.location} failed, and the {done - 1} session(s) before it were stored "
                "(loading the file again replaces them)"
            ) from exc
        except OSError as exc:
            # A store's file that cannot be written (a full disk): this line's write was
            # undone, the lines before it were stored; say both, and where.
            said = f"cannot use {exc.filename}: {exc.strerror}" if exc.filename and exc.strerror else str(exc)
            problem = FixtureProblem(line.source, line.line_number, said)
            raise FixtureError([problem], kind="write failure", stored=done - 1) from exc
        users.add((session.app_name, session.user_id))
        entries += len(session.entries)
        if on_progress is not None:
            on_progress(done, len(kept))
    return entries


def _in_project(session: FixtureSession) -> str:
    """``session "s" is in project "p"`` for a line with a project id."""
    assert session.project_id is not None
    what = "a line of entries outside any session" if session.session_id is None else (
        f"session {quote_ids(session.session_id)}"
    )
    return f"{what} is in project {quote_ids(session.project_id)}"


def _check_each_session_once(lines: Sequence[FixtureLine]) -> None:
    """Refuse a session on two lines of one load (the same file given twice, or a session
    split over lines): storing a line replaces its session, so all but the last would be
    lost without a word. Lines of entries outside any session (``session_id`` null) add
    their entries and may repeat."""
    problems: list[FixtureProblem] = []
    first_seen: dict[tuple[str, str, str | None, str], FixtureLine] = {}
    for line in lines:
        session = line.session
        if session.session_id is None:
            continue
        place = (session.app_name, session.user_id, session.project_id, session.session_id)
        seen = first_seen.setdefault(place, line)
        if seen is not line:
            scope = f" in project {quote_ids(session.project_id)}" if session.project_id is not None else ""
            problems.append(
                FixtureProblem(
                    line.source,
                    line.line_number,
                    f"session {quote_ids(session.session_id)} of {quote_ids(session.app_name, session.user_id)}"
                    f"{scope} is also on {seen.location}; a session is one line (a later line would replace it)",
                )
            )
    if problems:
        raise FixtureError(problems[:_MAX_PROBLEMS_KEPT], len(problems), kind="repeated session")


async def _check_entry_ids(service: MemoryService, lines: Sequence[FixtureLine]) -> None:
    """Refuse, before anything is stored, entry ids that two lines put in different places
    or that the store holds elsewhere (see :meth:`MemoryService.check_entry_ids`)."""
    problems: list[FixtureProblem] = []
    first_seen: dict[str, tuple[tuple[str, str, str | None, str | None], FixtureLine]] = {}
    for line in lines:
        session = line.session
        place = (session.app_name, session.user_id, session.project_id, session.session_id)
        ids = [e.id for e in session.entries if e.id is not None]
        for entry_id in ids:
            seen = first_seen.setdefault(entry_id, (place, line))
            if seen[1] is not line:
                # Another session or scope; or, outside sessions, another line: the later
                # would replace the earlier entry without a word.
                where = "in another session or scope" if seen[0] != place else "a later line would replace it"
                problems.append(
                    FixtureProblem(
                        line.source,
                        line.line_number,
                        f"entry id {quote_ids(entry_id)} is also on {seen[1].location}, {where}",
                    )
                )
                break
        else:
            if ids:
                try:
                    await service.check_entry_ids(
                        session.app_name, session.user_id, session.session_id, ids, project_id=session.project_id
                    )
                except EntryIdConflictError as exc:
                    problems.append(FixtureProblem(line.source, line.line_number, str(exc).split("; nothing")[0]))
    if problems:
        raise FixtureError(problems[:_MAX_PROBLEMS_KEPT], len(problems), kind="entry id conflict")


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
    Every entry carries what the store holds of it: author, role, text, timestamp, id,
    position in its session, tokens and entities (with their nodes' labels). Loading the
    result into a store without those entries (on either backend) reproduces them: the
    same search results, scores and order, and the same rows from every ``cypher/debug``
    query. An entry deleted from inside a session leaves a gap in the positions, which a
    load keeps (``NEXT`` links positions ``p`` and ``p + 1`` only).

    Raises:
        ValueError: the store holds a value no fixture line can (a store written by an
            older graphmem, or changed by hand: an author over 256 characters, say); the
            message names the session and entry. Not a ``ValidationError``: the caller's
            arguments are not what is wrong.
    """
    stored = await service.list_entries(app_name, user_id, project_id, all_projects=all_projects)
    terms = await service.entry_terms(app_name, user_id, [e.entry_id for e in stored])
    sessions: list[FixtureSession] = []
    group: list[StoredEntry] = []

    def unexportable(exc: ValidationError, entry: StoredEntry | None = None) -> ValueError:
        first = group[0]
        where = "outside any session" if first.session_id is None else f"session {quote_ids(first.session_id)}"
        if first.project_id is not None:
            where += f", project {quote_ids(first.project_id)}"
        what = f"entry {quote_ids(entry.entry_id)} ({where})" if entry is not None else f"the entries ({where})"
        return ValueError(
            f"{what} of {quote_ids(app_name, user_id)} cannot be exported: the store holds what no fixture "
            f"can ({_describe_validation_error(exc)})"
        )

    def exported(e: StoredEntry) -> FixtureEntry:
        try:
            return FixtureEntry(
                author=e.memory.author,
                role=e.memory.content.role,
                text=e.memory.text,
                timestamp=e.memory.timestamp,
                id=e.entry_id,
                position=e.position,
                tokens=list(terms[e.entry_id].tokens),
                entities=[(x.name, x.label) for x in terms[e.entry_id].entities],
                language=e.language,
            )
        except ValidationError as exc:
            raise unexportable(exc, e) from exc

    def flush() -> None:
        if group:
            entries = [exported(e) for e in group]
            try:
                session = FixtureSession(
                    app_name=app_name,
                    user_id=user_id,
                    session_id=group[0].session_id,
                    project_id=group[0].project_id,
                    entries=entries,
                )
            except ValidationError as exc:
                raise unexportable(exc) from exc
            sessions.append(session)
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
        data["entries"] = [{k: v for k, v in entry.items() if v is not None} for entry in data["entries"]]
        for entry in data["entries"]:
            if entry.get("timestamp", "").endswith("Z"):  # the same spelling as the demo fixtures
                entry["timestamp"] = entry["timestamp"][:-1] + "+00:00"
        yield json.dumps(data, ensure_ascii=False) + "\n"
