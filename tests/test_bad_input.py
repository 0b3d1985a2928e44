"""Bad and unusual input: a clear error or correct storage, never a crash or a partial write.

Every test that expects an error also checks that the store is exactly as it was before.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from graphmem import (
    Content,
    Decomposition,
    Entity,
    EntryRecord,
    GraphmemError,
    InvalidIdentifierError,
    MemoryEntry,
    MemoryService,
    Part,
    SearchRequest,
)
from graphmem._models import is_identifier

APP, USER = "bad-input-app", "alice"
T0 = datetime(2024, 7, 1, tzinfo=UTC)


def entry(text: str, at: float = 0) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), timestamp=T0 + timedelta(minutes=at))


async def snapshot(service: MemoryService) -> Any:
    entries = await service.list_entries(APP, USER, all_projects=True)
    return (
        sorted((e.entry_id, e.memory.text, e.session_id, e.position) for e in entries),
        await service.stats(),
    )


async def seeded(service: MemoryService) -> Any:
    await service.add_session(APP, USER, "s1", [entry("orange juice for breakfast"), entry("orange marmalade", at=1)])
    await service.add_entry(APP, USER, entry("buy oranges", at=2))
    return await snapshot(service)


async def found(service: MemoryService, query: str, app: str = APP, user: str = USER) -> list[str]:
    response = await service.search(SearchRequest(query=query, app_name=app, user_id=user, limit=100))
    return [h.memory.text for h in response.hits if h.matched_tokens or h.matched_entities]


# ---------------------------------------------------------------------------- identifiers

BAD_IDS: dict[str, object] = {
    "none": None,
    "int": 42,
    "bytes": b"alice",
    "list": ["alice"],
    "empty": "",
    "too_long": "u" * 257,
    "nul": "ali\x00ce",
    "newline": "ali\nce",
    "lone_surrogate": "ali\ud800ce",
}

IdCall = Callable[[MemoryService, Any, Any], Awaitable[Any]]

CALLS_TAKING_IDS: dict[str, IdCall] = {
    "add_session": lambda s, app, user: s.add_session(app, user, "s9", [entry("orange soda")]),
    "add_entry": lambda s, app, user: s.add_entry(app, user, entry("orange soda")),
    "delete_entries": lambda s, app, user: s.delete_entries(app, user, "orange"),
    "delete_session": lambda s, app, user: s.delete_session(app, user, "s1"),
    "delete_user": lambda s, app, user: s.delete_user(app, user),
    "list_recent": lambda s, app, user: s.list_recent(app, user),
    "list_entries": lambda s, app, user: s.list_entries(app, user),
    "stats": lambda s, app, user: s.stats(app, user),
}


@pytest.mark.parametrize("which", ["app_name", "user_id"])
@pytest.mark.parametrize("bad", list(BAD_IDS.values()), ids=list(BAD_IDS))
async def test_bad_ids_raise_a_clear_error_and_change_nothing(service: MemoryService, which: str, bad: object) -> None:
    before = await seeded(service)
    for name, call in CALLS_TAKING_IDS.items():
        app, user = (bad, USER) if which == "app_name" else (APP, bad)
        if name == "stats" and bad is None:
            # stats() with one of the two ids left out is a usage error of its own.
            with pytest.raises(ValueError, match="both app_name and user_id"):
                await call(service, app, user)
            continue
        with pytest.raises(InvalidIdentifierError) as raised:
            await call(service, app, user)
        assert which in str(raised.value), name
        assert isinstance(raised.value, ValueError) and isinstance(raised.value, GraphmemError)
    assert await snapshot(service) == before


# Pydantic's lax mode decodes bytes to str in a model field, so bytes are not "bad" there.
SEARCH_BAD_IDS = {k: v for k, v in BAD_IDS.items() if k != "bytes"}


@pytest.mark.parametrize("bad", list(SEARCH_BAD_IDS.values()), ids=list(SEARCH_BAD_IDS))
async def test_bad_ids_in_a_search_raise(service: MemoryService, bad: object) -> None:
    await seeded(service)
    for fields in ({"app_name": bad, "user_id": USER}, {"app_name": APP, "user_id": bad}):
        # Pydantic rejects what is not a string; graphmem rejects the strings it cannot key by.
        with pytest.raises((ValidationError, InvalidIdentifierError)):
            await service.search(SearchRequest(query="orange", **fields))  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["", "s" * 257, None, 7, "s\x00"], ids=["empty", "too_long", "none", "int", "nul"])
async def test_bad_session_ids_raise_and_change_nothing(service: MemoryService, bad: object) -> None:
    before = await seeded(service)
    with pytest.raises(InvalidIdentifierError, match="session_id"):
        await service.add_session(APP, USER, bad, [entry("orange soda")])  # type: ignore[arg-type]
    with pytest.raises(InvalidIdentifierError, match="session_id"):
        await service.delete_session(APP, USER, bad)  # type: ignore[arg-type]
    assert await snapshot(service) == before


def test_an_id_is_refused_for_exactly_the_unicode_control_characters() -> None:
    """The check became one regex (replaying a journal validates every entry id): it must
    refuse what asking unicodedata for category Cc refused, and nothing else."""
    control = {chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cc"}
    refused = {chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF and not is_identifier(chr(c))}
    assert refused == control


async def test_ids_are_exact_not_normalised(service: MemoryService) -> None:
    owners = [(APP, "Alice"), (APP, "alice"), (APP, " alice"), (APP, "u" * 256), (APP, "ユーザー"), (APP, "👩‍💻")]
    for i, (app, user) in enumerate(owners):
        await service.add_entry(app, user, entry(f"kiwi number {i}"))
    for i, (app, user) in enumerate(owners):
        assert await found(service, "kiwi", app=app, user=user) == [f"kiwi number {i}"]


# ---------------------------------------------------------------------------- entries


@pytest.mark.parametrize(
    "entries",
    [None, [None], [entry("kept?"), None], ["a plain string"], [{"text": "a dict"}], entry("not in a list"), 42],
    ids=["none", "list_of_none", "entry_then_none", "list_of_str", "list_of_dict", "bare_entry", "int"],
)
async def test_non_entries_raise_and_nothing_is_written(service: MemoryService, entries: Any) -> None:
    before = await seeded(service)
    with pytest.raises(TypeError):
        await service.add_session(APP, USER, "s1", entries)
    with pytest.raises(TypeError):
        await service.add_session(APP, USER, "fresh-session", entries)
    assert await snapshot(service) == before


@pytest.mark.parametrize("bad", [None, "text", 3, {"content": "x"}], ids=["none", "str", "int", "dict"])
async def test_add_entry_rejects_non_entries(service: MemoryService, bad: Any) -> None:
    before = await seeded(service)
    with pytest.raises(TypeError):
        await service.add_entry(APP, USER, bad)
    assert await snapshot(service) == before


@pytest.mark.parametrize("make", [tuple, lambda xs: (x for x in xs), lambda xs: iter(list(xs))], ids=["tuple", "generator", "iterator"])
async def test_entries_as_any_iterable_are_stored_in_full(service: MemoryService, make: Callable[[list[MemoryEntry]], Any]) -> None:
    await service.add_session(APP, USER, "s1", [entry("old version of the session")])
    batch = [entry("lemon cake recipe"), entry("lemon tart", at=1), entry("lime pie", at=2)]
    await service.add_session(APP, USER, "s1", make(batch))
    stored = await service.list_entries(APP, USER)
    assert [(e.memory.text, e.position) for e in stored] == [("lemon cake recipe", 0), ("lemon tart", 1), ("lime pie", 2)]


@pytest.mark.parametrize("bad", [None, 42, b"orange"], ids=["none", "int", "bytes"])
async def test_non_string_delete_query_raises_and_deletes_nothing(service: MemoryService, bad: Any) -> None:
    before = await seeded(service)
    with pytest.raises((TypeError, ValueError)):
        await service.delete_entries(APP, USER, bad)
    assert await snapshot(service) == before


@pytest.mark.parametrize("bad", [None, 42, ["orange"], b"orange"], ids=["none", "int", "list", "bytes"])
def test_non_string_search_query_is_a_validation_error(bad: Any) -> None:
    with pytest.raises(ValidationError):
        SearchRequest(query=bad, app_name=APP, user_id=USER)


@pytest.mark.parametrize(
    ("field", "bad"),
    [("limit", True), ("limit", "5"), ("limit", b"5"), ("min_score", True), ("min_score", "0.5")],
)
def test_a_limit_or_min_score_that_is_no_number_is_a_validation_error(field: str, bad: Any) -> None:
    """Lax pydantic would read ``True`` as 1 and ``"5"`` as 5; numbers of either kind pass."""
    with pytest.raises(ValidationError, match=f"{field} must be a number"):
        SearchRequest(query="orange", app_name=APP, user_id=USER, **{field: bad})
    assert SearchRequest(query="orange", app_name=APP, user_id=USER, limit=5, min_score=0).min_score == 0.0


@pytest.mark.parametrize(
    "update",
    [
        {"limit": 0},
        {"limit": "3"},
        {"query": None},
        {"min_score": 2.0},
        {"since": datetime(2024, 1, 1, tzinfo=UTC), "until": datetime(2023, 1, 1, tzinfo=UTC)},
    ],
    ids=["limit-0", "limit-str", "query-none", "min-score-2", "since-after-until"],
)
async def test_a_request_changed_without_validation_is_validated_by_the_search(
    service: MemoryService, update: dict[str, Any]
) -> None:
    """``model_copy(update=...)`` skips validation: a limit of 0 raised an IndexError from
    the scorer, a string limit a TypeError, a window ending before it starts and a
    min_score of 2 matched nothing silently."""
    await service.add_entry(APP, USER, entry("orange juice"))
    request = SearchRequest(query="orange", app_name=APP, user_id=USER)
    with pytest.raises(ValidationError):
        await service.search(request.model_copy(update=update))
    # What validation would read as given is searched as if validated.
    since = request.model_copy(update={"since": "2020-01-01", "limit": 2.0})
    hits = (await service.search(since)).hits
    assert [h.memory.text for h in hits] == ["orange juice"]


async def test_one_entry_id_given_as_a_string_is_refused_not_read_as_its_characters(service: MemoryService) -> None:
    """A string is a sequence of one-letter ids, none of which exists: ``[]`` would say the
    entry is not there."""
    entry_id = await service.add_entry(APP, USER, MemoryEntry(content=Content().with_text("orange")))
    for call in (service.get_entries, service.next_links, service.delete_entries_by_id):
        with pytest.raises(TypeError, match="not one string"):
            await call(APP, USER, entry_id)  # type: ignore[operator]
    assert [e.entry_id for e in await service.get_entries(APP, USER, [entry_id])] == [entry_id]


@pytest.mark.parametrize("bad", [None, 42, b"maria"], ids=["none", "int", "bytes"])
async def test_an_entity_name_that_is_no_string_is_refused(service: MemoryService, bad: Any) -> None:
    """Not an answer of no mentions: the caller passed something else than a name."""
    with pytest.raises(TypeError, match="entity name"):
        await service.entity_mentions(APP, USER, bad)


def test_non_string_texts_are_validation_errors() -> None:
    for bad in (42, 4.2, ["list"], {"text": "dict"}):
        with pytest.raises(ValidationError):
            Part(text=bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MemoryEntry(content=Content().with_text("x"), timestamp="not a date")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        MemoryEntry(content="just a string")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- unusual text


async def test_a_one_megabyte_text_is_stored_whole_and_recallable(service: MemoryService) -> None:
    # A pasted blob: mostly one unbroken run, with words at both ends (cheap for spaCy,
    # and long enough to be cut into several chunks on the way).
    blob = os.urandom(375_000).hex()
    huge = f"zeppelin manifest {blob} trailing walrus"
    assert len(huge.encode("utf-8")) > 750_000
    huge = huge + " " + "q" * (1_048_576 - len(huge) - 1)
    assert len(huge) == 1_048_576
    await service.add_session(APP, USER, "big", [entry("before the blob"), entry(huge, at=1), entry("after the blob", at=2)])

    stored = {e.memory.text: e for e in await service.list_entries(APP, USER)}
    assert set(stored) == {"before the blob", huge, "after the blob"}
    assert stored[huge].position == 1
    assert await found(service, "zeppelin") == [huge]
    assert await found(service, "walrus") == [huge]
    best = (await service.search(SearchRequest(query="zeppelin walrus", app_name=APP, user_id=USER))).hits[0]
    assert best.memory.text == huge
    assert best.matched_tokens == ["walrus", "zeppelin"]
    assert await service.delete_entries(APP, USER, "walrus") == 1
    assert sorted(stored_text.memory.text for stored_text in await service.list_entries(APP, USER)) == ["after the blob", "before the blob"]


async def test_a_text_over_the_limit_is_refused_and_nothing_is_stored(service: MemoryService) -> None:
    """Ten megabytes of words took minutes and gigabytes and ran the embedded Neo4j out of
    heap: one user's call took memory down for every user. Refused before any work."""
    from graphmem import EntryRecord
    from graphmem._models import MAX_TEXT_LENGTH

    too_long = "word " * (MAX_TEXT_LENGTH // 5) + "xy"
    assert len(too_long) == MAX_TEXT_LENGTH + 1
    calls = [
        lambda: service.add_session(APP, USER, "s", [entry("kept out too"), entry(too_long, at=1)]),
        lambda: service.add_sessions(APP, USER, {"s": [entry("kept out too")], "t": [entry(too_long)]}),
        lambda: service.add_entry(APP, USER, entry(too_long)),
        lambda: service.restore_session(APP, USER, "s", [EntryRecord(memory=entry(too_long))]),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="characters long; the limit is 1,048,576"):
            await call()
    assert await service.list_entries(APP, USER, all_projects=True) == []


async def test_a_query_over_the_limit_is_refused_before_it_is_read(service: MemoryService) -> None:
    """A query is read as an entry's text is, in time that grows with its length: 600k
    characters took 10 s, ten megabytes would seem to hang. The limit is an entry's, so a
    query may be anything that could be stored; longer is refused by every call taking one,
    and a delete by such a query deletes nothing."""
    from graphmem._models import MAX_TEXT_LENGTH

    await service.add_session(APP, USER, "s", [entry("word of the day")])
    too_long = "word " * (MAX_TEXT_LENGTH // 5) + "xy"
    assert len(too_long) == MAX_TEXT_LENGTH + 1
    with pytest.raises(ValidationError, match="query is 1,048,577 characters long; the limit is 1,048,576"):
        SearchRequest(query=too_long, app_name=APP, user_id=USER)
    built = SearchRequest.model_construct(query=too_long, app_name=APP, user_id=USER, limit=None, min_score=None,
                                          project_id=None, since=None, until=None, as_of=None, fold_replies=True)
    with pytest.raises(ValidationError, match="query is 1,048,577 characters long"):
        await service.search(built)
    with pytest.raises(ValueError, match="query is 1,048,577 characters long"):
        await service.delete_entries(APP, USER, too_long)
    assert [e.memory.text for e in await service.list_entries(APP, USER)] == ["word of the day"]
    at_the_limit = too_long[:MAX_TEXT_LENGTH]
    assert SearchRequest(query=at_the_limit, app_name=APP, user_id=USER).query == at_the_limit


UNUSUAL_TEXTS = {
    "emoji": ("🎉 birthday party 🎂 with the family 👨‍👩‍👧", "birthday"),
    "mixed_scripts": ("Meeting in 東京 with Мария about café ☕ and مرحبا", "мария"),
    "cjk": ("東京タワーの夜景がきれい", "東京"),
    "korean": ("서울에서 만나요", "서울"),
    "devanagari": ("नमस्ते दुनिया", "दुनिया"),
    "control_characters": ("nul\x00 bell\x07 escape\x1b[31m vertical\x0btab delete\x7f saxophone", "saxophone"),
    "line_breaks": ("first line\r\nsecond line\u2028third\u2029fourth accordion", "accordion"),
    "zero_width_and_bidi": ("zero\u200bwidth \u200e\u202e trombone \u202c\ufeff", "trombone"),
    "combining_marks": ("Zalgo z\u0301\u0302\u0303 harmonica", "harmonica"),
    "json_and_markup": ('{"text": "x"}\n<script>alert(1)</script> \\n \\" banjo', "banjo"),
    "cypher_like": ("'}) MATCH (n) DETACH DELETE n // clarinet", "clarinet"),
}


@pytest.mark.parametrize("text,word", list(UNUSUAL_TEXTS.values()), ids=list(UNUSUAL_TEXTS))
async def test_unusual_text_is_stored_exactly_and_recalled(service: MemoryService, text: str, word: str) -> None:
    await service.add_session(APP, USER, "s1", [entry(text)])
    await service.add_entry(APP, "bob", entry("bob keeps his own notes"))

    (stored,) = await service.list_entries(APP, USER)
    assert stored.memory.text == text
    assert await found(service, word) == [text]
    assert [m.text for m in await service.list_recent(APP, USER)] == [text]
    assert await found(service, "notes", user="bob") == ["bob keeps his own notes"]


@pytest.mark.parametrize("query", ["🎉", "☕☕☕", "\x00", "\u200b", "👨‍👩‍👧", "\ufeff", "\x1b[0m"])
async def test_queries_without_words_return_nothing(service: MemoryService, query: str) -> None:
    before = await seeded(service)
    assert (await service.search(SearchRequest(query=query, app_name=APP, user_id=USER))).hits == []
    assert await service.delete_entries(APP, USER, query) == 0
    assert await snapshot(service) == before


LONE_SURROGATES = {"high": "broken \ud800 text", "low": "broken \udfff text", "alone": "\udc80"}


@pytest.mark.parametrize("text", list(LONE_SURROGATES.values()), ids=list(LONE_SURROGATES))
async def test_lone_surrogates_are_rejected_cleanly(service: MemoryService, text: str) -> None:
    """A lone surrogate is not Unicode text: no backend can store it, so it is refused up front."""
    before = await seeded(service)
    with pytest.raises(ValueError):
        bad_entry = MemoryEntry(content=Content(parts=[Part(text="fine"), Part(text=text)]))
        await service.add_session(APP, USER, "s1", [entry("would replace s1"), bad_entry])
    with pytest.raises(ValueError):
        await service.add_entry(APP, USER, MemoryEntry(content=Content().with_text("fine"), author=text))
    with pytest.raises(ValueError):
        await service.search(SearchRequest(query=text, app_name=APP, user_id=USER))
    with pytest.raises(ValueError):
        await service.delete_entries(APP, USER, text)
    assert await snapshot(service) == before


async def test_list_recent_refuses_a_limit_above_the_largest_32_bit_integer(service: MemoryService) -> None:
    before = await seeded(service)
    for bad in (2**31, 2**63, 10**100):
        with pytest.raises(ValueError, match="limit must be an integer from 1 to 2147483647"):
            await service.list_recent(APP, USER, limit=bad)
    newest_first = [m.text for m in await service.list_recent(APP, USER, limit=2**31 - 1)]
    assert newest_first == ["buy oranges", "orange marmalade", "orange juice for breakfast"]
    assert await snapshot(service) == before


@pytest.mark.parametrize(
    "terms",
    [
        Decomposition(tokens=("orange", "\ud800"), entities=()),
        Decomposition(tokens=("orange",), entities=(Entity("\udfff", "PERSON"),)),
        Decomposition(tokens=("orange", 7), entities=()),  # type: ignore[arg-type]
    ],
    ids=["surrogate-token", "surrogate-entity", "not-a-string"],
)
async def test_restored_terms_that_are_no_text_raise_and_store_nothing(service: MemoryService, terms: Any) -> None:
    before = await seeded(service)
    with pytest.raises((ValueError, TypeError), match="EntryRecord.terms"):
        await service.restore_session(APP, USER, "s2", [EntryRecord(memory=entry("orange cake"), terms=terms)])
    assert await snapshot(service) == before


def test_times_given_as_numbers_and_unknown_fields_are_refused_not_misread() -> None:
    """``timestamp=20240503`` was stored as 23 August 1970 (seconds since 1970), and an
    unknown keyword was dropped: ``Content(text=...)`` a message with no parts (stored as
    nothing), ``SearchRequest(projectid=...)`` a search of global memory."""
    from pydantic import ValidationError

    from graphmem import Content, MemoryEntry, Part, SearchRequest

    text = Content(role="user", parts=[Part(text="x")])
    for when in (20240503, 1.7e9, True):
        with pytest.raises(ValidationError, match="ISO 8601"):
            MemoryEntry(content=text, timestamp=when)  # type: ignore[arg-type]
        for field in ("since", "until", "as_of"):
            with pytest.raises(ValidationError, match="ISO 8601"):
                SearchRequest(query="q", app_name="a", user_id="u", **{field: when})
    assert MemoryEntry(content=text, timestamp="2024-05-03T10:00:00Z").timestamp.year == 2024
    for make in (
        lambda: Content(role="user", text="My sister moved to Lisbon"),  # type: ignore[call-arg]
        lambda: Part(txt="x"),  # type: ignore[call-arg]
        lambda: MemoryEntry(content=text, timestamps="2020-01-01"),  # type: ignore[call-arg]
        lambda: SearchRequest(query="q", app_name="a", user_id="u", projectid="P"),  # type: ignore[call-arg]
    ):
        with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
            make()


@pytest.mark.parametrize("when", ["20240503.0", "1.7e9", "1700000000", " +20240503 ", "2024-05-03T10:00:00x"])
def test_a_string_of_a_number_is_refused_as_a_time_everywhere_never_read_as_seconds_since_1970(when: str) -> None:
    """Only strings of digits were refused: pydantic read "20240503.0" as 23 August 1970
    and "1.7e9" as 14 November 2023. Every time field reads strings one way (ISO 8601)."""
    from pydantic import ValidationError

    from graphmem import Content, MemoryEntry, Part, SearchRequest

    text = Content(role="user", parts=[Part(text="x")])
    with pytest.raises(ValidationError, match="ISO 8601"):
        MemoryEntry(content=text, timestamp=when)  # type: ignore[arg-type]
    for field in ("since", "until", "as_of"):
        with pytest.raises(ValidationError, match="ISO 8601"):
            SearchRequest(query="q", app_name="a", user_id="u", **{field: when})


def test_an_iso_8601_basic_date_is_that_date_everywhere() -> None:
    """"20240503" is ISO 8601's basic form of 3 May 2024 (the CLI read it so): a time field
    reads it as that day, as it reads "2024-05-03", never as seconds since 1970."""
    from datetime import UTC, datetime

    from graphmem import Content, MemoryEntry, Part, SearchRequest

    text = Content(role="user", parts=[Part(text="x")])
    for when in ("20240503", "2024-05-03", "20240503T000000Z"):
        assert MemoryEntry(content=text, timestamp=when).timestamp == datetime(2024, 5, 3, tzinfo=UTC)  # type: ignore[arg-type]
        request = SearchRequest(query="q", app_name="a", user_id="u", since=when, as_of=when)  # type: ignore[arg-type]
        assert request.since == request.as_of == datetime(2024, 5, 3, tzinfo=UTC)


async def test_restored_terms_must_not_be_blank(service: MemoryService) -> None:
    """A blank token was stored, and then the user's export failed for good."""
    from graphmem import Decomposition, Entity, EntryRecord

    for terms in (Decomposition(("ok", ""), ()), Decomposition(("ok",), (Entity("\t", "PERSON"),))):
        with pytest.raises(ValueError, match="blank token or entity name"):
            await service.restore_session(APP, USER, "s1", [EntryRecord(memory=entry("some text"), terms=terms)])
    assert await service.list_entries(APP, USER) == []
