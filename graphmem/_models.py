"""Public data models (pydantic v2) and identifier validation.

Timestamps: a naive ``datetime`` (no tzinfo) is taken as UTC, never rejected; every
timestamp graphmem returns is timezone-aware UTC.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, TypeGuard

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from graphmem._errors import InvalidIdentifierError, InvalidProjectIdError

__all__ = [
    "DEFAULT_SEARCH_LIMIT",
    "MAX_ID_LENGTH",
    "MAX_POSITION",
    "MAX_TEXT_LENGTH",
    "Content",
    "MemoryEntry",
    "Part",
    "SearchHit",
    "SearchRequest",
    "SearchResponse",
    "check_author",
    "check_query_length",
    "check_text_length",
    "ensure_unicode",
    "quote_ids",
    "validate_identifier",
    "validate_project_id",
]

DEFAULT_SEARCH_LIMIT = 10
MAX_ID_LENGTH = 256
#: The largest position of an entry in its session: Neo4j stores 64-bit integers, and a
#: session grows past its last position (``NEXT`` joins ``p`` and ``p + 1``), so far below 2**63.
MAX_POSITION = 2**62


# Unicode's control characters (category Cc) are these 65, and stay so (its stability
# policy): one regex search, where asking unicodedata per character made replaying a
# journal's entry ids seven times slower.
_CONTROL_CHARACTER = re.compile("[\x00-\x1f\x7f-\x9f]")


def _has_control_characters(value: str) -> bool:
    return _CONTROL_CHARACTER.search(value) is not None


def _is_unicode(value: str) -> bool:
    # A lone surrogate ("\ud800") is a Python str but not Unicode text: neither the
    # journal (UTF-8) nor Bolt can carry it, and spaCy fails on it.
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def ensure_unicode(value: str, kind: str = "text") -> str:
    """Return ``value`` unchanged, or raise ``ValueError`` when it holds a lone surrogate."""
    if not _is_unicode(value):
        raise ValueError(f"{kind} holds a lone surrogate and is not valid Unicode; decode it properly first")
    return value


#: A string that must be valid Unicode (no lone surrogates); checked at the model boundary.
UnicodeStr = Annotated[str, AfterValidator(ensure_unicode)]


def validate_identifier(value: object, kind: str = "id") -> str:
    """Check an app, user or session id and return it unchanged.

    Args:
        value: the identifier to check.
        kind: what the identifier is ("app_name", "user_id", ...), used in the message.

    Returns:
        The identifier, unchanged (ids are compared exactly, never normalised).

    Raises:
        InvalidIdentifierError: when it is not a string, is empty, is longer than
            256 characters, or holds control characters or a lone surrogate.
    """
    if not isinstance(value, str):
        raise InvalidIdentifierError(f"{kind} must be a string, got {type(value).__name__}")
    if not value:
        raise InvalidIdentifierError(f"{kind} must not be empty")
    if len(value) > MAX_ID_LENGTH:
        raise InvalidIdentifierError(
            f"{kind} is {len(value)} characters long; the limit is {MAX_ID_LENGTH}"
        )
    if _has_control_characters(value):
        raise InvalidIdentifierError(f"{kind} must not contain control characters")
    if not _is_unicode(value):
        raise InvalidIdentifierError(f"{kind} holds a lone surrogate and is not valid Unicode")
    return value


def is_identifier(value: object) -> TypeGuard[str]:
    """Whether ``value`` is a valid id (:func:`validate_identifier` accepts it): a string
    that is not one names no stored entry, user or session."""
    try:
        validate_identifier(value)
    except InvalidIdentifierError:
        return False
    return True


def validate_project_id(project_id: object) -> str:
    """Check a project id and return it unchanged.

    Every write that takes a project id calls this before touching storage.

    Raises:
        InvalidProjectIdError: when the id is not a string, is empty, is longer than
            256 characters, or holds control characters or a lone surrogate.
    """
    if not isinstance(project_id, str):
        raise InvalidProjectIdError(
            f"project_id must be a string, got {type(project_id).__name__}"
        )
    if not project_id:
        raise InvalidProjectIdError("project_id must not be empty")
    if len(project_id) > MAX_ID_LENGTH:
        raise InvalidProjectIdError(
            f"project_id is {len(project_id)} characters long; the limit is {MAX_ID_LENGTH}"
        )
    if _has_control_characters(project_id):
        raise InvalidProjectIdError("project_id must not contain control characters")
    if not _is_unicode(project_id):
        raise InvalidProjectIdError("project_id holds a lone surrogate and is not valid Unicode")
    return project_id


def parse_time_bound(text: str, *, end_of_day: bool = False) -> datetime:
    """A time given as text (an entry's timestamp; a ``since``, ``until`` or ``as_of``): an
    ISO 8601 date, or date and time, as ``datetime.fromisoformat`` reads them (seconds,
    fractions and an offset optional, none meaning UTC; ``20230503`` and ``2023-W18-3`` are
    dates too, ``2023-W18`` a week). A date alone is its first moment, or its last with
    ``end_of_day``: an ``until`` of a day keeps that day's entries, of a week that week's;
    and an ``until`` written to the minute or the second keeps that whole minute or second
    (the MCP server shows times to the second, stored to the microsecond: a time it shows
    keeps its memory as ``until``).

    Raises:
        ValueError: not such a date or time (the message says what is accepted).
    """
    text = text.strip()
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"{text[:40]!r} is not an ISO 8601 date or time (2023-05-03, 2023-05-03T18:30, "
            "2023-05-03T18:30:00+02:00)"
        ) from None
    if end_of_day:
        if _WEEK.fullmatch(text):
            # (The calendar's last week ends on its last day: 9999-W52's Sunday is in year 10000.)
            when = datetime.combine(min(when.date(), date.max - timedelta(days=6)) + timedelta(days=6), time.max)
        elif _is_a_date(text):
            when = datetime.combine(when.date(), time.max)
        elif (written := _TIME_OF_DAY.fullmatch(text)) is not None:
            when += _last_unit(written) - timedelta(microseconds=1)
    return when


#: An ISO 8601 week without its day ("2023-W18", "2023W18"): ``fromisoformat`` reads its Monday.
_WEEK = re.compile(r"\d{4}-?W\d\d", re.ASCII)
#: A date and a time of day as ``fromisoformat`` reads them, to tell the last unit written.
_TIME_OF_DAY = re.compile(
    r"(?:\d{4}-?\d\d-?\d\d|\d{4}-?W\d\d-?\d).(?P<h>\d\d)(?::?(?P<m>\d\d)(?::?(?P<s>\d\d)(?:[.,](?P<f>\d+))?)?)?"
    r"(?:Z|[+-]\d\d(?::?\d\d(?::?\d\d(?:[.,]\d+)?)?)?)?",
    re.ASCII,
)


def _last_unit(written: re.Match[str]) -> timedelta:
    """The length of the last unit a time of day is written to: an hour, a minute, a second,
    or a tenth, hundredth ... of one (a microsecond at the finest)."""
    if written.group("f"):
        return timedelta(microseconds=10 ** max(0, 6 - len(written.group("f"))))
    if written.group("s"):
        return timedelta(seconds=1)
    return timedelta(minutes=1) if written.group("m") else timedelta(hours=1)


def _is_a_date(text: str) -> bool:
    """Whether ``text``, which ``datetime.fromisoformat`` reads, is a date alone (in any of
    ISO 8601's forms: ``2023-05-03``, ``20230503``, ``2023-W18-3``)."""
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def as_utc(value: datetime) -> datetime:
    """Return ``value`` as an aware UTC datetime; a naive value is taken as UTC.

    Raises:
        ValueError: the value in UTC falls outside years 1 to 9999 (e.g. year 1 at +05:00).
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        # A ValueError, so pydantic reports it as a field error instead of a traceback.
        raise ValueError(
            f"timestamp {value.isoformat()} is outside years 1 to 9999 once converted to UTC"
        ) from None


def quote_ids(*ids: str) -> str:
    """Ids as people should read them in a message: each quoted, joined by `` / ``.

    Quoting keeps ``("a/b", "c")`` and ``("a", "b/c")`` apart, and escaping every character
    that does not print (bidi overrides, zero-width and other format characters, unusual
    spaces) keeps an id from hiding or reordering the text around it, as in a confirmation
    prompt: ``quote_ids("a/b", "c")`` is ``"a/b" / "c"``.
    """
    return " / ".join(_quote(value) for value in ids)


def _quote(value: str) -> str:
    out = ['"']
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def utc_now() -> datetime:
    return datetime.now(UTC)


#: The longest text one entry may hold, in characters (1 Mi: a pasted page or log is stored
#: whole). Ten times that in words took 4 minutes and 6 GB to decompose, ~600,000 tokens,
#: and ran the embedded Neo4j out of heap: a longer document is stored in parts.
MAX_TEXT_LENGTH = 1_048_576


def check_author(author: str) -> None:
    """Refuse an author longer than :data:`MAX_ID_LENGTH` characters (``ValueError``): an
    author is a name, and every one of its words becomes a token of the entry."""
    if len(author) > MAX_ID_LENGTH:
        raise ValueError(f"an entry's author is {len(author):,} characters long; the limit is {MAX_ID_LENGTH}")


def check_text_length(text: str) -> None:
    """Refuse a text longer than :data:`MAX_TEXT_LENGTH` (``ValueError``)."""
    if len(text) > MAX_TEXT_LENGTH:
        raise ValueError(
            f"an entry's text is {len(text):,} characters long; the limit is {MAX_TEXT_LENGTH:,} "
            "(store a long document in parts)"
        )


def check_query_length(query: str) -> None:
    """Refuse a query longer than :data:`MAX_TEXT_LENGTH` (``ValueError``): a query is read
    as an entry's text is (spaCy, the time scans), in time that grows with its length, about
    18 s for the longest text an entry may hold; a longer one would seem to hang."""
    if len(query) > MAX_TEXT_LENGTH:
        raise ValueError(
            f"query is {len(query):,} characters long; the limit is {MAX_TEXT_LENGTH:,} "
            "(the longest text an entry may hold)"
        )


def read_time(value: Any, field: str, *, end_of_day: bool = False) -> Any:
    """A time as every entry point takes it (``MemoryEntry.timestamp``, ``SearchRequest``'s
    ``since``, ``until`` and ``as_of``, a fixture's ``timestamp``, the MCP tools): a
    ``datetime``, a ``date`` (its first moment, or its last with ``end_of_day``, as an
    ``until`` reads it), or an ISO 8601 string read by :func:`parse_time_bound`
    (``"20240503"``, the basic form, is 3 May 2024; a date alone as above). Anything else
    is refused, not left to pydantic, which reads a number, or a string such as
    ``"20240503.0"`` or ``"1.7e9"``, as seconds since 1970. ``None`` is passed on (a field's
    own type decides whether it may be missing). For a ``mode="before"`` validator.

    Raises:
        ValueError: a number, or a string that is no ISO 8601 date or time.
    """
    if value is None or isinstance(value, datetime):
        return value
    if isinstance(value, date):
        return datetime.combine(value, time.max if end_of_day else time.min)
    if isinstance(value, str):
        return parse_time_bound(value, end_of_day=end_of_day)
    raise ValueError(f"{field} must be an ISO 8601 string or a datetime, got {type(value).__name__} {value!r:.40}")


class Part(BaseModel):
    """One part of a message; only text parts are remembered."""

    # An unknown keyword (``Part(txt=...)``) is an error, not a part without text.
    model_config = ConfigDict(frozen=True, extra="forbid")

    text: UnicodeStr | None = None


class Content(BaseModel):
    """A message: who spoke (``role``) and its parts."""

    # ``Content(text=...)`` would be a message without parts: stored as nothing.
    model_config = ConfigDict(frozen=True, extra="forbid")

    role: UnicodeStr = "user"
    parts: list[Part] = Field(default_factory=list)

    def with_text(self, text: str) -> Content:
        """Return a copy of this content with a text part appended."""
        return Content(role=self.role, parts=[*self.parts, Part(text=text)])

    @property
    def text(self) -> str:
        """The text parts joined by a space (empty parts skipped)."""
        return " ".join(p.text for p in self.parts if p.text)


class MemoryEntry(BaseModel):
    """One remembered message.

    ``timestamp`` defaults to now; a naive timestamp is taken as UTC. It is a ``datetime``
    (a ``date``: its first moment) or an ISO 8601 string (``"2024-05-03T10:00:00Z"``;
    ``"20240503"`` is 3 May 2024): a number, or a string ``datetime.fromisoformat`` does not
    read, is refused, never read as seconds since 1970 (``20240503`` would be 23 August 1970).

    ``author`` defaults to ``"user"``, or to ``"assistant"`` when the content's role is
    ``"model"`` (as the MCP server's ``remember`` does): the assistant's words stored under
    the author ``user`` would answer "what's my dog called?" as if the person had said them.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    content: Content
    author: UnicodeStr = "user"
    timestamp: datetime = Field(default_factory=utc_now)

    @model_validator(mode="before")
    @classmethod
    def _the_models_words_are_the_assistants(cls, data: Any) -> Any:
        if isinstance(data, dict) and "author" not in data:
            content = data.get("content")
            role = content.role if isinstance(content, Content) else None
            if isinstance(content, dict):
                role = content.get("role")
            if role == "model":
                return {**data, "author": "assistant"}
        return data

    @field_validator("timestamp", mode="before")
    @classmethod
    def _timestamp_is_a_time(cls, value: Any) -> Any:
        return read_time(value, "timestamp")

    @field_validator("timestamp")
    @classmethod
    def _timestamp_is_utc(cls, value: datetime) -> datetime:
        return as_utc(value)

    @property
    def text(self) -> str:
        """The content's text (its text parts joined by a space)."""
        return self.content.text


class SearchRequest(BaseModel):
    """What to recall, for whom.

    ``limit=None`` means 10; a limit below 1 is a validation error. ``min_score`` is in
    [0, 1]. ``project_id=None`` searches global entries only; ``project_id=P`` searches
    global entries plus P's entries.

    ``since`` / ``until`` keep only entries whose timestamp is at or after / at or before
    them (inclusive; naive datetimes are UTC; a date alone, a ``date`` or a string such as
    ``"2023-05-03"``, is its first moment as ``since`` and its last as ``until``, so that
    day is kept; ``since`` after ``until`` is a validation error); entries outside still
    lend conversation context to those inside. ``as_of`` is the moment the question is
    asked, against which relative times in the query ("last summer", "yesterday") are read;
    ``None`` is now.

    ``fold_replies`` (on by default): a reply typed as several messages (one author's
    consecutive entries in a session) is one hit, its best-scoring message, with the
    others it recalled in :attr:`SearchHit.folded`; ``limit`` then counts replies. Off,
    every entry is a hit of its own.

    An unknown field (``limt=5``, ``projectid=...``) is a validation error, not ignored;
    times are ``datetime``s or ISO 8601 strings, never numbers (see :class:`MemoryEntry`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    query: UnicodeStr
    # Strict: ids are compared exactly, so bytes are refused rather than decoded.
    user_id: Annotated[str, Field(strict=True)]
    app_name: Annotated[str, Field(strict=True)]
    limit: Annotated[int, Field(ge=1)] | None = None
    min_score: Annotated[float, Field(ge=0.0, le=1.0)] | None = None
    project_id: Annotated[str, Field(strict=True)] | None = None
    since: datetime | None = None
    until: datetime | None = None
    as_of: datetime | None = None
    fold_replies: Annotated[bool, Field(strict=True)] = True

    @field_validator("query", mode="before")
    @classmethod
    def _query_is_text(cls, value: Any) -> Any:
        # Bytes would be decoded as UTF-8 whatever they are in; the ids refuse them too.
        if isinstance(value, bytes | bytearray):
            raise ValueError("query must be a str, not bytes (decode it first)")
        return value

    @field_validator("query")
    @classmethod
    def _query_is_not_too_long(cls, value: str) -> str:
        check_query_length(value)
        return value

    @field_validator("limit", "min_score", mode="before")
    @classmethod
    def _numbers_are_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        # Lax pydantic reads True as 1 and "5" as 5: a caller's mistake, refused here.
        if isinstance(value, bool | str | bytes):
            raise ValueError(f"{info.field_name} must be a number, got {value!r}")
        return value

    @field_validator("since", "until", "as_of", mode="before")
    @classmethod
    def _times_are_times(cls, value: Any, info: ValidationInfo) -> Any:
        # A day as ``until`` keeps that day: its last moment, not its first.
        return read_time(value, str(info.field_name), end_of_day=info.field_name == "until")

    @field_validator("since", "until", "as_of")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else as_utc(value)

    @model_validator(mode="after")
    def _window(self) -> SearchRequest:
        if self.since is not None and self.until is not None and self.since > self.until:
            raise ValueError(f"since ({self.since.isoformat()}) is after until ({self.until.isoformat()})")
        return self

    def validated(self) -> SearchRequest:
        """This request, validated again when a field is not what validation makes it.

        ``model_copy(update=...)`` and ``model_construct()`` skip validation: a limit of 0
        or a ``since`` given as a string failed deep inside a search, or matched nothing.
        The check is of kinds and bounds only (a full validation costs a search some
        30 µs); anything it doubts goes through the validators, which decide.
        """
        times = (self.since, self.until, self.as_of)
        if (
            type(self.query) is str
            and len(self.query) <= MAX_TEXT_LENGTH
            and type(self.user_id) is str
            and type(self.app_name) is str
            and (self.project_id is None or type(self.project_id) is str)
            and (self.limit is None or (type(self.limit) is int and self.limit >= 1))
            and (self.min_score is None or (type(self.min_score) is float and 0.0 <= self.min_score <= 1.0))
            and type(self.fold_replies) is bool
            and all(t is None or (type(t) is datetime and t.tzinfo is UTC) for t in times)
            and (self.since is None or self.until is None or self.since <= self.until)
        ):
            return self
        return SearchRequest.model_validate(dict(self))

    def in_window(self, timestamp: datetime) -> bool:
        """Whether an entry's timestamp passes ``since`` and ``until``."""
        return (self.since is None or timestamp >= self.since) and (self.until is None or timestamp <= self.until)

    @property
    def effective_limit(self) -> int:
        """``limit``, or the default when it is not given."""
        return DEFAULT_SEARCH_LIMIT if self.limit is None else self.limit


class SearchHit(BaseModel):
    """One recalled memory and why it was recalled.

    ``matched_tokens`` and ``matched_entities`` are what the entry itself shares with the
    query; ``session_id`` is ``None`` for an entry added on its own (``add_entry``);
    ``context_score`` is the part of ``score`` that came from neighbouring entries of the
    same conversation (a hit with no matches of its own was recalled as context) and
    ``context_from`` the id of the entry, one or two turns away, whose match lent it (the
    best, then the nearer, then the earlier turn);
    ``matched_time`` says how the entry matched a time named in the query (``"said
    2023-05-08"``, ``"refers to 2023-05-01/2023-05-07"``) and ``time_score`` what that
    added to ``score``; ``by_named_speaker`` is ``True`` / ``False`` when the query names
    one of the user's speakers and this entry was / was not said by them (then its score
    was weighed down; an entry recalled only as context holds no query term, so not the
    speaker's name, and is ``False``), ``None`` otherwise (or when its author is unknown);
    ``read_as`` maps a query word the search read as another (a misspelling, a name
    spelled another way, "I" read as the author ``user`` or as the name of the author
    speaking in the role ``"user"``) to the matched token it was
    read as; ``related_to`` maps a
    matched token that the search read as related to a query word ("puppy" for "pets",
    through word vectors) to that query word's token (``{"puppy": "pet"}``); ``folded``
    holds the other messages of the same reply that the search ranked too (its author's
    consecutive messages in this session, each a hit of its own, in conversation order;
    see :attr:`SearchRequest.fold_replies`: a search ranks as deep as it takes to find
    ``limit`` replies, so a small ``limit`` may fold fewer of them); ``position`` is the entry's place in its
    session (``None`` outside any session), which orders a hit among its folded messages.
    """

    model_config = ConfigDict(frozen=True)

    entry_id: str
    score: float
    memory: MemoryEntry
    matched_tokens: list[str] = Field(default_factory=list)
    matched_entities: list[str] = Field(default_factory=list)
    session_id: str | None = None
    project_id: str | None = None
    context_score: float = 0.0
    matched_time: str | None = None
    time_score: float = 0.0
    by_named_speaker: bool | None = None
    read_as: dict[str, str] = Field(default_factory=dict)
    related_to: dict[str, str] = Field(default_factory=dict)
    context_from: str | None = None
    position: int | None = None
    folded: list[SearchHit] = Field(default_factory=list)

    @property
    def reply(self) -> list[SearchHit]:
        """This hit and its folded messages, in conversation order."""
        if not self.folded:
            return [self]
        return sorted([self, *self.folded], key=lambda h: -1 if h.position is None else h.position)

    def to_json_dict(self) -> dict[str, Any]:
        """The hit as plain JSON values, flat (what ``graphmem search --json`` prints)."""
        return {
            "entry_id": self.entry_id,
            "score": self.score,
            "author": self.memory.author,
            "role": self.memory.content.role,
            "timestamp": self.memory.timestamp.isoformat(),
            "text": self.memory.text,
            "matched_tokens": self.matched_tokens,
            "matched_entities": self.matched_entities,
            "context_score": self.context_score,
            "context_from": self.context_from,
            "matched_time": self.matched_time,
            "time_score": self.time_score,
            "by_named_speaker": self.by_named_speaker,
            "read_as": self.read_as,
            "related_to": self.related_to,
            "session_id": self.session_id,
            "project_id": self.project_id,
            "position": self.position,
            "folded": [hit.to_json_dict() for hit in self.folded],
        }


class SearchResponse(BaseModel):
    """The recalled memories, best first, and a hit per memory explaining it."""

    model_config = ConfigDict(frozen=True)

    memories: list[MemoryEntry] = Field(default_factory=list)
    hits: list[SearchHit] = Field(default_factory=list)
