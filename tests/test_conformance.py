"""The conformance suite: the behaviour every backend owes, through the public API only.

Every test takes the ``service`` fixture (parametrised over the backends in
``conftest.py``), so one suite checks them all. Where a rule depends on a capability the
test branches on ``service.supports_project_scoping()``: a backend without projects must
refuse every project call and change nothing; a backend with projects must scope by them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import unicodedata
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from graphmem import (
    Content,
    Decomposition,
    Entity,
    EntryIdConflictError,
    EntryRecord,
    GraphmemError,
    InvalidIdentifierError,
    InvalidProjectIdError,
    MemoryEntry,
    MemoryService,
    MemoryServiceAdapter,
    Part,
    ProjectScopingUnsupportedError,
    SearchRequest,
    SearchResponse,
    _service,
    validate_project_id,
)
from graphmem._models import MAX_POSITION

APP = "conformance-app"
USER = "alice"
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def entry(text: str, *, at: float = 0, author: str = "user", role: str = "user") -> MemoryEntry:
    """An entry ``at`` minutes after T0."""
    return MemoryEntry(
        content=Content(role=role).with_text(text),
        author=author,
        timestamp=T0 + timedelta(minutes=at),
    )


async def search(
    service: MemoryService,
    query: str,
    *,
    app: str = APP,
    user: str = USER,
    project: str | None = None,
    limit: int | None = 100,
    min_score: float | None = None,
    fold_replies: bool = False,
) -> SearchResponse:
    """A search in which every entry is a hit of its own by default: these tests are about
    each entry's score and explanation (folding replies has its own tests, test_replies)."""
    return await service.search(
        SearchRequest(
            query=query,
            app_name=app,
            user_id=user,
            project_id=project,
            limit=limit,
            min_score=min_score,
            fold_replies=fold_replies,
        )
    )


async def texts_found(service: MemoryService, query: str, **kw: Any) -> list[str]:
    return [m.text for m in (await search(service, query, **kw)).memories]


async def stored_texts(service: MemoryService, app: str = APP, user: str = USER) -> list[str]:
    return sorted(e.memory.text for e in await service.list_entries(app, user, all_projects=True))


async def snapshot(service: MemoryService, owners: list[tuple[str, str]]) -> Any:
    """Everything observable about the given owners' stores, to compare before and after."""
    per_owner = []
    for app, user in owners:
        entries = await service.list_entries(app, user, all_projects=True)
        per_owner.append(
            (
                sorted(
                    (e.entry_id, e.memory.text, e.memory.author, e.memory.timestamp, e.session_id, e.project_id, e.position)
                    for e in entries
                ),
                await service.stats(app, user),
            )
        )
    return per_owner, await service.stats()


def needs_projects(service: MemoryService) -> None:
    if not service.supports_project_scoping():
        pytest.skip(f"{type(service).__name__} has no project scoping; its refusals are tested instead")


def needs_no_projects(service: MemoryService) -> None:
    if service.supports_project_scoping():
        pytest.skip(f"{type(service).__name__} supports project scoping; its scoping is tested instead")


# ---------------------------------------------------------------------------- capabilities


async def test_health_check_passes(service: MemoryService) -> None:
    await service.health_check()
    assert isinstance(service.supports_project_scoping(), bool)


ProjectCall = Callable[[MemoryService], Awaitable[Any]]

PROJECT_CALLS: dict[str, tuple[str, ProjectCall]] = {
    "add_session_to_project": (
        "add_session_to_project",
        lambda s: s.add_session_to_project(APP, USER, "s-new", "proj", [entry("violin recital tonight")]),
    ),
    "add_entry_to_project": (
        "add_entry_to_project",
        lambda s: s.add_entry_to_project(APP, USER, "proj", entry("violin recital tonight")),
    ),
    "delete_entries_in_project": (
        "delete_entries_in_project",
        lambda s: s.delete_entries_in_project(APP, USER, "proj", "violin"),
    ),
    "delete_project": ("delete_project", lambda s: s.delete_project(APP, USER, "proj")),
    "check_entry_ids_with_project_id": (
        "check_entry_ids",
        lambda s: s.check_entry_ids(APP, USER, "s1", ["e-new"], project_id="proj"),
    ),
    "append_to_session_in_project": (
        "append_to_session_in_project",
        lambda s: s.append_to_session_in_project(APP, USER, "s1", "proj", [entry("violin recital tonight")]),
    ),
    "list_recent_with_project_id": ("list_recent", lambda s: s.list_recent(APP, USER, 5, project_id="proj")),
    "recent_entries_with_project_id": (
        "recent_entries",
        lambda s: s.recent_entries(APP, USER, 5, project_id="proj"),
    ),
    "search_with_project_id": ("search", lambda s: search(s, "violin", project="proj")),
    "scope_stats": ("scope_stats", lambda s: s.scope_stats(APP, USER, "proj")),
    "entity_mentions": ("entity_mentions", lambda s: s.entity_mentions(APP, USER, "maria", project_id="proj")),
    "adapter.with_project_id.search": (
        "search",
        lambda s: MemoryServiceAdapter(s, APP, USER).with_project_id("proj").search("violin"),
    ),
    "adapter.with_project_id.add": (
        "add_entry_to_project",
        lambda s: MemoryServiceAdapter(s, APP, USER).with_project_id("proj").add(entry("violin recital")),
    ),
    "adapter.with_project_id.delete": (
        "delete_entries_in_project",
        lambda s: MemoryServiceAdapter(s, APP, USER).with_project_id("proj").delete("violin"),
    ),
    "adapter.search_in_project": (
        "search",
        lambda s: MemoryServiceAdapter(s, APP, USER).search_in_project("violin", "proj"),
    ),
    "adapter.add_to_project": (
        "add_entry_to_project",
        lambda s: MemoryServiceAdapter(s, APP, USER).add_to_project(entry("violin recital"), "proj"),
    ),
}


@pytest.mark.parametrize("call_name", list(PROJECT_CALLS))
async def test_project_call_refused_and_changes_nothing(service: MemoryService, call_name: str) -> None:
    needs_no_projects(service)
    method, call = PROJECT_CALLS[call_name]
    # Global entries that a silently widened write or delete would touch.
    await service.add_session(APP, USER, "s1", [entry("violin lessons on monday"), entry("violin strings", at=1)])
    await service.add_entry(APP, USER, entry("violin bow rosin", at=2))
    before = await snapshot(service, [(APP, USER)])

    with pytest.raises(ProjectScopingUnsupportedError) as raised:
        await call(service)

    message = str(raised.value)
    assert f"{method}()" in message
    assert "supports_project_scoping()" in message  # says what to use instead
    assert raised.value.method == method
    assert isinstance(raised.value, GraphmemError)
    assert await snapshot(service, [(APP, USER)]) == before
    assert len(await texts_found(service, "violin")) == 3


async def test_adapter_reports_capability_and_health(service: MemoryService) -> None:
    adapter = MemoryServiceAdapter(service, APP, USER)
    assert adapter.supports_project_scoping() is service.supports_project_scoping()
    assert adapter.with_project_id("p").supports_project_scoping() is service.supports_project_scoping()
    await adapter.health_check()


@pytest.mark.parametrize("bad", [None, "", "x" * 300, "a\nb", 5])
async def test_adapter_refuses_a_bad_app_or_user_when_built(service: MemoryService, bad: object) -> None:
    """Built with ``user_id=None``, an adapter's ``search`` raised pydantic's ValidationError
    and its ``add`` InvalidIdentifierError: now the constructor refuses it, as a bad project."""
    with pytest.raises(InvalidIdentifierError, match="app_name"):
        MemoryServiceAdapter(service, bad, USER)  # type: ignore[arg-type]
    with pytest.raises(InvalidIdentifierError, match="user_id"):
        MemoryServiceAdapter(service, APP, bad)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- isolation


COLLIDING_OWNERS = [("a/b", "c"), ("a", "b/c"), ("a:b", "c"), ("a", "b:c"), ("a", "bc"), ("ab", "c"), ("c", "a")]


async def test_tuple_keys_never_collide(service: MemoryService) -> None:
    for i, (app, user) in enumerate(COLLIDING_OWNERS):
        await service.add_session(app, user, "shared-session", [entry(f"garden tomato harvest number {i}")])

    for i, (app, user) in enumerate(COLLIDING_OWNERS):
        assert await texts_found(service, "garden tomato", app=app, user=user) == [f"garden tomato harvest number {i}"]
        assert (await service.stats(app, user)).entries == 1

    # Deleting one owner's data leaves every look-alike owner intact.
    assert await service.delete_entries("a/b", "c", "tomato") == 1
    assert await service.delete_user("a", "b/c") == 1
    assert await service.delete_session("a:b", "c", "shared-session") == 1
    for i, (app, user) in enumerate(COLLIDING_OWNERS):
        expected = [] if i < 3 else [f"garden tomato harvest number {i}"]
        assert await texts_found(service, "garden tomato", app=app, user=user) == expected


async def test_other_users_and_apps_are_invisible(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("my passport number is in the drawer")])
    await service.add_session(APP, "bob", "s1", [entry("bob keeps his passport in the safe")])
    await service.add_session("other-app", USER, "s1", [entry("alice lost her passport in another app")])

    assert await texts_found(service, "passport") == ["my passport number is in the drawer"]
    assert await texts_found(service, "passport", user="bob") == ["bob keeps his passport in the safe"]
    assert await texts_found(service, "passport", app="other-app") == ["alice lost her passport in another app"]
    assert await texts_found(service, "passport", user="nobody") == []
    assert await service.list_recent(APP, "nobody") == []
    assert [m.text for m in await service.list_recent(APP, USER)] == ["my passport number is in the drawer"]


async def test_other_users_entries_are_not_scored(service: MemoryService) -> None:
    """Another user's entries must not change this user's term weights (idf)."""
    await service.add_session(APP, USER, "s1", [entry("violin practice"), entry("tennis practice", at=1)])
    alone = {h.memory.text: h.score for h in (await search(service, "violin tennis")).hits}

    # Many entries elsewhere that hold "violin" would lower its idf if they were counted.
    for i in range(5):
        await service.add_session(APP, f"user-{i}", "s1", [entry("violin violin"), entry("violin concert", at=1)])
        await service.add_session(f"app-{i}", USER, "s1", [entry("violin"), entry("violin teacher", at=1)])
    crowded = {h.memory.text: h.score for h in (await search(service, "violin tennis")).hits}

    assert crowded == pytest.approx(alone)
    assert set(alone) == {"violin practice", "tennis practice"}


async def test_delete_user_leaves_other_owners_untouched(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("quantum physics lecture"), entry("physics homework", at=1)])
    await service.add_entry(APP, USER, entry("physics exam on friday", at=2))
    await service.add_session(APP, "bob", "s1", [entry("physics exam for bob")])
    await service.add_session("other-app", USER, "s1", [entry("physics exam in another app")])
    others_before = await snapshot(service, [(APP, "bob"), ("other-app", USER)])
    store_before = await service.stats()
    user_before = await service.stats(APP, USER)
    assert user_before.entries == 3 and user_before.tokens > 0

    assert await service.delete_user(APP, USER) == 3

    assert (await search(service, "physics exam")).hits == []
    assert await service.list_recent(APP, USER) == []
    assert await service.list_entries(APP, USER, all_projects=True) == []
    after = await service.stats(APP, USER)
    assert (after.entries, after.tokens, after.entities, after.sessions, after.users) == (0, 0, 0, 0, 0)
    # Nothing of the erased user is left anywhere, token and entity nodes included.
    store_after = await service.stats()
    assert store_after.entries == store_before.entries - 3
    assert store_after.tokens == store_before.tokens - user_before.tokens
    assert store_after.entities == store_before.entities - user_before.entities
    assert store_after.users == store_before.users - 1
    # Others, unchanged (their stats are part of the snapshot, but the store-wide ones are not).
    assert (await snapshot(service, [(APP, "bob"), ("other-app", USER)]))[0] == others_before[0]
    assert await service.delete_user(APP, USER) == 0


# ---------------------------------------------------------------------------- projects


async def test_search_scopes_global_and_one_project(service: MemoryService) -> None:
    needs_projects(service)
    await service.add_session(APP, USER, "g", [entry("budget meeting notes global")])
    await service.add_session_to_project(APP, USER, "p-sess", "p1", [entry("budget meeting for project one", at=1)])
    await service.add_entry_to_project(APP, USER, "p2", entry("budget meeting for project two", at=2))

    assert await texts_found(service, "budget meeting") == ["budget meeting notes global"]
    assert sorted(await texts_found(service, "budget meeting", project="p1")) == [
        "budget meeting for project one",
        "budget meeting notes global",
    ]
    hits = (await search(service, "budget meeting", project="p2")).hits
    assert {(h.memory.text, h.project_id) for h in hits} == {
        ("budget meeting for project two", "p2"),
        ("budget meeting notes global", None),
    }
    assert await texts_found(service, "budget meeting", project="p3") == ["budget meeting notes global"]
    # Another user's project of the same name is invisible.
    await service.add_session_to_project(APP, "bob", "s", "p1", [entry("budget meeting of bob")])
    assert "budget meeting of bob" not in await texts_found(service, "budget meeting", project="p1")


async def test_scope_stats_count_what_a_search_of_the_scope_sees(service: MemoryService) -> None:
    await service.add_session(APP, USER, "g", [entry("walnut bread recipe"), entry("walnut oil", at=1)])
    await service.add_session(APP, "bob", "g", [entry("zebra stripes")])
    whole = await service.stats(APP, USER)
    if not service.supports_project_scoping():
        assert await service.scope_stats(APP, USER) == whole  # every entry is global
    else:
        await service.add_session_to_project(APP, USER, "p", "p1", [entry("kumquat audit")])
        scoped = await service.scope_stats(APP, USER)
        assert (scoped.entries, scoped.sessions, scoped.projects, scoped.tokens) == (2, 1, 0, whole.tokens)
        in_p1 = await service.scope_stats(APP, USER, "p1")
        assert (in_p1.entries, in_p1.sessions, in_p1.projects) == (3, 2, 1) and in_p1.tokens > whole.tokens
        assert await service.scope_stats(APP, USER, "p2") == scoped
    assert (await service.scope_stats(APP, "nobody")).entries == 0


async def test_listing_one_project_never_lists_the_others(service: MemoryService) -> None:
    """A project and ``all_projects=True`` together are refused (``all_projects`` used to
    win, so a caller asking for P, an export of P, got Q's entries too), on every backend."""
    from graphmem import export_fixtures

    with pytest.raises(ValueError, match="not both"):
        await service.list_entries(APP, USER, "p1", all_projects=True)
    with pytest.raises(ValueError, match="not both"):
        await export_fixtures(service, APP, USER, "p1", all_projects=True)
    if service.supports_project_scoping():
        await service.add_session_to_project(APP, USER, "s", "p1", [entry("plan for p1")])
        await service.add_session_to_project(APP, USER, "s", "p2", [entry("plan for p2")])
        assert [e.memory.text for e in await service.list_entries(APP, USER, "p1")] == ["plan for p1"]


async def test_project_deletes_stay_in_their_scope(service: MemoryService) -> None:
    needs_projects(service)
    await service.add_session(APP, USER, "g", [entry("invoice for march"), entry("weather report", at=1)])
    await service.add_session_to_project(APP, USER, "s1", "p1", [entry("invoice draft p1", at=2), entry("logo sketch p1", at=3)])
    await service.add_entry_to_project(APP, USER, "p1", entry("invoice final p1", at=4))
    await service.add_session_to_project(APP, USER, "s2", "p2", [entry("invoice for p2", at=5), entry("roadmap p2", at=6)])

    # delete_entries: only global entries that match.
    assert await service.delete_entries(APP, USER, "invoice") == 1
    assert await stored_texts(service) == sorted(
        ["weather report", "invoice draft p1", "logo sketch p1", "invoice final p1", "invoice for p2", "roadmap p2"]
    )
    # delete_entries_in_project: only that project's matches.
    assert await service.delete_entries_in_project(APP, USER, "p1", "invoice") == 2
    assert await stored_texts(service) == sorted(["weather report", "logo sketch p1", "invoice for p2", "roadmap p2"])
    # delete_project: everything of that project, nothing else.
    assert await service.delete_project(APP, USER, "p2") == 2
    assert await stored_texts(service) == sorted(["weather report", "logo sketch p1"])
    assert await service.delete_project(APP, USER, "p2") == 0
    # delete_user: every project too.
    assert await service.delete_user(APP, USER) == 2
    assert await stored_texts(service) == []


async def test_project_session_replacement_is_scoped(service: MemoryService) -> None:
    needs_projects(service)
    await service.add_session(APP, USER, "same", [entry("global apricot jam")])
    await service.add_session_to_project(APP, USER, "same", "p1", [entry("project apricot pie", at=1)])
    await service.add_session_to_project(APP, USER, "same", "p1", [entry("project apricot tart", at=2)])

    assert await stored_texts(service) == ["global apricot jam", "project apricot tart"]
    # delete_session removes the session in every scope.
    assert await service.delete_session(APP, USER, "same") == 2
    assert await stored_texts(service) == []


async def test_project_adapter_routes_to_project(service: MemoryService) -> None:
    needs_projects(service)
    adapter = MemoryServiceAdapter(service, APP, USER)
    project = adapter.with_project_id("p1")
    assert project.project_id == "p1" and adapter.project_id is None
    await adapter.add(entry("global kayak trip"))
    await project.add(entry("project kayak rental", at=1))
    await adapter.add_to_project(entry("other project kayak", at=2), "p2")

    assert [m.text for m in await adapter.search("kayak")] == ["global kayak trip"]
    assert [m.text for m in await project.search("kayak")] == ["project kayak rental", "global kayak trip"]
    assert [m.text for m in await adapter.search_in_project("kayak", "p2")] == [
        "other project kayak",
        "global kayak trip",
    ]
    assert await project.delete("kayak") == 1
    assert await stored_texts(service) == ["global kayak trip", "other project kayak"]
    assert await adapter.delete("kayak") == 1
    assert await stored_texts(service) == ["other project kayak"]


async def test_list_recent_spans_global_and_projects(service: MemoryService) -> None:
    needs_projects(service)
    await service.add_session(APP, USER, "g", [entry("oldest global", at=0), entry("newest global", at=30)])
    await service.add_entry_to_project(APP, USER, "p1", entry("middle project", at=10))
    await service.add_session_to_project(APP, USER, "s", "p2", [entry("late project", at=20)])

    assert [m.text for m in await service.list_recent(APP, USER, 10)] == [
        "newest global",
        "late project",
        "middle project",
        "oldest global",
    ]
    assert [m.text for m in await service.list_recent(APP, USER, 2)] == ["newest global", "late project"]
    project_entries = await service.list_entries(APP, USER, "p1")
    assert [(e.memory.text, e.project_id) for e in project_entries] == [("middle project", "p1")]
    stats = await service.stats(APP, USER)
    assert (stats.entries, stats.projects, stats.sessions) == (4, 2, 2)


async def test_what_a_picture_reads(service: MemoryService) -> None:
    """entity_mentions, get_entries and next_links (what `graphmem graph` draws from) start
    from an entity or from ids, and answer alike on every backend."""
    await service.add_session(
        APP, USER, "s1",
        [entry("Maria moved to Lisbon.", at=0), entry("Lisbon is lovely in spring.", at=1),
         entry("Maria bakes bread in Lisbon.", at=2)],
    )
    await service.add_session(APP, USER, "s2", [entry("I called Maria yesterday.", at=3)])
    await service.add_session(APP, "bob", "s1", [entry("Maria is my neighbour.", at=4)])
    ids = {e.memory.text: e.entry_id for e in await service.list_entries(APP, USER)}
    moved, lovely, bakes, called = (ids[t] for t in ids)

    mentions = await service.entity_mentions(APP, USER, "maria", limit=2)
    assert mentions.total == 3  # bob's Maria is not alice's
    assert [e.entry_id for e in mentions.entries] == [called, bakes]  # the newest first
    assert mentions.entries[0].memory.text == "I called Maria yesterday." and mentions.entries[0].session_id == "s2"
    assert (await service.entity_mentions(APP, USER, "nobody")).total == 0
    assert (await service.entity_mentions(APP, "carol", "maria")).entries == []
    # A name as people write it is the stored name: capitalised, shouted, possessive.
    for written in ("Maria", "MARIA", "Maria's"):
        assert (await service.entity_mentions(APP, USER, written)).total == 3, written
    with pytest.raises(ValueError):
        await service.entity_mentions(APP, USER, "maria", limit=0)

    got = await service.get_entries(APP, USER, [bakes, "no-such-id", moved, bakes])
    assert [e.entry_id for e in got] == [bakes, moved]  # in the order asked, each once
    assert await service.get_entries(APP, "bob", [bakes]) == []  # ids never cross users

    assert await service.next_links(APP, USER, [called, bakes, lovely, moved]) == sorted(
        [(moved, lovely), (lovely, bakes)]
    )
    assert await service.next_links(APP, USER, [moved, bakes]) == []  # the link between is not asked for
    assert await service.next_links(APP, "bob", [moved, lovely]) == []

    if service.supports_project_scoping():
        await service.add_session_to_project(APP, USER, "s3", "p1", [entry("Maria joined the p1 team.", at=5)])
        await service.add_session_to_project(APP, USER, "s3", "p2", [entry("Maria left the p2 team.", at=6)])
        in_p1 = await service.entity_mentions(APP, USER, "maria", project_id="p1", limit=1)
        assert in_p1.total == 4 and [e.memory.text for e in in_p1.entries] == ["Maria joined the p1 team."]
        assert (await service.entity_mentions(APP, USER, "maria")).total == 3  # global entries only


# ---------------------------------------------------------------------------- adding


async def test_add_session_with_existing_id_replaces(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("we talked about sailing"), entry("sailing is fun", at=1)])
    await service.add_session(
        APP, USER, "s1", [entry("we talked about sailing"), entry("sailing is fun", at=1), entry("and chess", at=2)]
    )

    assert await stored_texts(service) == ["and chess", "sailing is fun", "we talked about sailing"]
    direct = [h.memory.text for h in (await search(service, "sailing")).hits if h.matched_tokens]
    assert sorted(direct) == ["sailing is fun", "we talked about sailing"]
    await service.add_session(APP, USER, "s1", [entry("only chess now", at=3)])
    assert await stored_texts(service) == ["only chess now"]
    assert await texts_found(service, "sailing") == []
    stats = await service.stats(APP, USER)
    assert (stats.entries, stats.sessions) == (1, 1)


async def test_entries_without_text_are_skipped(service: MemoryService) -> None:
    empty_entries = [
        MemoryEntry(content=Content(role="user", parts=[]), timestamp=T0),
        MemoryEntry(content=Content(role="user", parts=[Part(text=None)]), timestamp=T0),
        MemoryEntry(content=Content(role="user", parts=[Part(text="")]), timestamp=T0),
        MemoryEntry(content=Content(role="user", parts=[Part(text="  \n\t ")]), timestamp=T0),
    ]
    await service.add_session(APP, USER, "s1", [empty_entries[0], entry("penguins live in antarctica", at=1), *empty_entries[1:]])
    for e in empty_entries:
        assert await service.add_entry(APP, USER, e) is None

    assert await stored_texts(service) == ["penguins live in antarctica"]
    assert (await service.stats(APP, USER)).entries == 1


async def test_add_entry_returns_id_of_the_hit(service: MemoryService) -> None:
    entry_id = await service.add_entry(APP, USER, entry("the wifi password is on the fridge"))
    assert isinstance(entry_id, str) and entry_id
    (hit,) = (await search(service, "wifi password")).hits
    assert hit.entry_id == entry_id
    assert hit.session_id is None
    assert hit.project_id is None


async def test_stored_entry_round_trips(service: MemoryService) -> None:
    original = MemoryEntry(
        content=Content(role="model").with_text("Your dentist appointment is on Tuesday").with_text("at noon."),
        author="assistant-bot",
        timestamp=datetime(2024, 2, 29, 23, 59, 58, 123456, tzinfo=UTC),
    )
    await service.add_session(APP, USER, "s1", [original])

    (hit,) = (await search(service, "dentist")).hits
    assert hit.memory.text == "Your dentist appointment is on Tuesday at noon."
    assert hit.memory.author == "assistant-bot"
    assert hit.memory.content.role == "model"
    assert hit.memory.timestamp == original.timestamp
    assert hit.session_id == "s1"
    (stored,) = await service.list_entries(APP, USER)
    assert stored.memory.text == original.text and stored.position == 0


async def test_naive_timestamps_are_taken_as_utc(service: MemoryService) -> None:
    naive = MemoryEntry(content=Content().with_text("naive noon lunch"), timestamp=datetime(2024, 1, 1, 12, 0))
    # 13:00 at UTC+2 is 11:00 UTC: older than the naive noon, although its wall clock is later.
    plus_two = timezone(timedelta(hours=2))
    aware = MemoryEntry(content=Content().with_text("aware lunch"), timestamp=datetime(2024, 1, 1, 13, 0, tzinfo=plus_two))
    assert naive.timestamp == datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert naive.timestamp.utcoffset() == timedelta(0)

    await service.add_session(APP, USER, "s1", [aware])
    await service.add_session(APP, USER, "s2", [naive])
    recent = await service.list_recent(APP, USER)
    assert [m.text for m in recent] == ["naive noon lunch", "aware lunch"]
    assert recent[0].timestamp == datetime(2024, 1, 1, 12, 0, tzinfo=UTC)
    assert recent[1].timestamp == datetime(2024, 1, 1, 11, 0, tzinfo=UTC)
    assert all(m.timestamp.utcoffset() == timedelta(0) for m in recent)
    # Equal scores: the tie goes to the (truly) newer entry.
    assert await texts_found(service, "lunch") == ["naive noon lunch", "aware lunch"]


# ---------------------------------------------------------------------------- searching


@pytest.mark.parametrize("query", ["", "   ", "\n\t", "the and of a", "is it that they were", "?!.,"])
async def test_empty_and_stop_word_queries_return_nothing(service: MemoryService, query: str) -> None:
    await service.add_session(APP, USER, "s1", [entry("the and of a were they it"), entry("gardening tips", at=1)])
    response = await search(service, query)
    assert response.hits == [] and response.memories == []
    assert await service.delete_entries(APP, USER, query) == 0
    assert len(await stored_texts(service)) == 2


async def test_unknown_words_and_unknown_users_return_nothing(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("gardening tips")])
    assert (await search(service, "xylophone")).hits == []
    assert (await search(service, "gardening", user="stranger")).hits == []


def test_search_request_validation() -> None:
    request = SearchRequest(query="q", user_id="u", app_name="a")
    assert request.limit is None and request.effective_limit == 10
    assert SearchRequest(query="q", user_id="u", app_name="a", limit=1).effective_limit == 1
    for bad_limit in (0, -1):
        with pytest.raises(ValidationError):
            SearchRequest(query="q", user_id="u", app_name="a", limit=bad_limit)
    for bad_score in (-0.01, 1.01, float("nan")):
        with pytest.raises(ValidationError):
            SearchRequest(query="q", user_id="u", app_name="a", min_score=bad_score)
    for good_score in (0.0, 0.5, 1.0):
        assert SearchRequest(query="q", user_id="u", app_name="a", min_score=good_score).min_score == good_score


async def test_limit_defaults_to_ten_and_is_honoured(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry(f"bicycle ride number {i}", at=i) for i in range(15)])

    assert len((await search(service, "bicycle", limit=None)).hits) == 10
    assert len((await search(service, "bicycle", limit=3)).hits) == 3
    assert len((await search(service, "bicycle", limit=50)).hits) == 15
    assert len(await MemoryServiceAdapter(service, APP, USER).search("bicycle")) == 10


async def test_scores_are_in_range_and_hits_explain_themselves(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "trip",
        [
            entry("Alice is flying to Lisbon in June"),
            entry("She booked a hotel near the river", at=1, author="model", role="model"),
            entry("June weather in Lisbon is warm", at=2),
        ],
    )
    await service.add_entry(APP, USER, entry("Paris hotel prices", at=3))

    response = await search(service, "hotel in Lisbon")
    assert response.memories == [h.memory for h in response.hits]
    assert len(response.hits) >= 3
    query_tokens = set(service.decomposer.decompose("hotel in Lisbon").tokens)
    for hit in response.hits:
        assert 0.0 < hit.score <= 1.0
        assert 0.0 <= hit.context_score <= hit.score
        assert set(hit.matched_tokens) <= query_tokens
        assert set(hit.matched_tokens) <= set(service.decomposer.decompose(hit.memory.text).tokens)
        assert hit.project_id is None
    assert [h.score for h in response.hits] == sorted((h.score for h in response.hits), reverse=True)
    by_text = {h.memory.text: h for h in response.hits}
    assert by_text["June weather in Lisbon is warm"].matched_entities == ["lisbon"]
    assert by_text["June weather in Lisbon is warm"].session_id == "trip"
    assert by_text["Paris hotel prices"].session_id is None
    assert by_text["Paris hotel prices"].matched_tokens == ["hotel"]


async def test_full_match_scores_one(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("my cat is called Whiskers"), entry("dogs bark", at=1)])
    hits = (await search(service, "cat Whiskers")).hits
    assert hits[0].memory.text == "my cat is called Whiskers"
    assert hits[0].score == pytest.approx(1.0)
    assert all(h.score <= 1.0 for h in hits)


async def test_min_score_filters(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s1",
        [entry("red apple pie recipe"), entry("apple orchard visit", at=5), entry("red car", at=10), entry("pie chart", at=15)],
    )
    everything = (await search(service, "red apple pie")).hits
    scores = sorted({round(h.score, 9) for h in everything})
    assert len(scores) >= 2, "the fixture needs distinct scores to test a threshold"
    threshold = (scores[0] + scores[-1]) / 2

    kept = (await search(service, "red apple pie", min_score=threshold)).hits
    assert kept, "the best hit scores above the threshold"
    assert all(h.score >= threshold for h in kept)
    assert [h.entry_id for h in kept] == [h.entry_id for h in everything if h.score >= threshold]
    assert (await search(service, "red apple pie", min_score=1.0)).hits == [h for h in everything if h.score >= 1.0]


async def test_ties_go_to_the_newer_entry(service: MemoryService) -> None:
    # Inserted newest first, so insertion order cannot be what puts the newer one first.
    await service.add_session(APP, USER, "later", [entry("bought a red bicycle", at=60)])
    await service.add_session(APP, USER, "earlier", [entry("bought a red bicycle", at=0)])
    await service.add_entry(APP, USER, entry("bought a red bicycle", at=30))

    hits = (await search(service, "red bicycle")).hits
    assert len({h.score for h in hits}) == 1
    assert [h.memory.timestamp for h in hits] == [T0 + timedelta(minutes=m) for m in (60, 30, 0)]


async def test_ties_go_to_the_newer_entry_by_a_microsecond_far_ahead(service: MemoryService) -> None:
    # In the year 9000 a float of seconds holds no microseconds: the older entry, whose
    # session id comes first, would take the tie.
    newer_at = datetime(9000, 6, 1, 12, 0, 0, 1, tzinfo=UTC)
    older_at = newer_at - timedelta(microseconds=1)
    text = "bought a red bicycle"
    await service.add_session(APP, USER, "a", [MemoryEntry(content=Content().with_text(text), timestamp=older_at)])
    await service.add_session(APP, USER, "b", [MemoryEntry(content=Content().with_text(text), timestamp=newer_at)])
    hits = (await search(service, "red bicycle")).hits
    assert len({h.score for h in hits}) == 1
    assert [h.memory.timestamp for h in hits] == [newer_at, older_at]


async def test_ties_within_a_session_go_to_the_later_turn(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("pizza tonight", at=0, author="ann"), entry("pizza tonight", at=0, author="bea")])
    hits = (await search(service, "pizza tonight")).hits
    assert [h.memory.author for h in hits] == ["bea", "ann"]
    assert hits[0].score == hits[1].score


async def test_neighbour_share_recalls_an_answer_with_no_shared_word(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "family",
        [
            entry("Where does your sister live these days?"),
            entry("Lisbon.", at=1, author="model", role="model"),
            entry("Unrelated: the printer needs toner", at=2),
        ],
    )
    await service.add_session(APP, USER, "other", [entry("Oporto.", at=3, author="model", role="model")])

    # (A "where" question would also ask for a place, which "Lisbon." names: see the answer types.)
    hits = {h.memory.text: h for h in (await search(service, "does my sister live there")).hits}
    answer = hits["Lisbon."]
    assert answer.matched_tokens == [] and answer.matched_entities == []
    assert answer.score > 0 and answer.context_score == pytest.approx(answer.score)
    question = hits["Where does your sister live these days?"]
    assert answer.score < question.score
    # The hit says which turn lent it the context; a hit matching alone took none.
    assert answer.context_from == question.entry_id and answer.to_json_dict()["context_from"] == question.entry_id
    assert question.context_score == 0 and question.context_from is None
    assert "Oporto." not in hits  # not a neighbour of anything that matched


async def test_the_context_lender_is_the_best_neighbour_one_step_before_two(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("Rex loves the beach."),
            entry("Sounds fun.", at=1, author="Ann"),
            entry("Tell me more.", at=2, author="Ann"),
            entry("I adopted a puppy named Rex.", at=3),
        ],
    )
    hits = {h.memory.text: h for h in (await search(service, "puppy Rex")).hits}
    ids = {text: h.entry_id for text, h in hits.items()}
    full, weak = hits["I adopted a puppy named Rex."], hits["Rex loves the beach."]
    # Three steps apart: neither lends to the other.
    assert full.context_from is None and weak.context_from is None and weak.context_score == 0
    assert hits["Tell me more."].context_from == full.entry_id
    # "Sounds fun." is one step from the weaker match (it holds only "rex", the commoner
    # word: well under 0.7 of the query) and two from the full one, which lends 0.7 of 1.
    assert weak.score - weak.context_score < 0.7
    assert hits["Sounds fun."].context_from == ids["I adopted a puppy named Rex."]


async def test_equal_context_lenders_tie_to_the_earlier_turn_whatever_the_ids(service: MemoryService) -> None:
    """Two neighbours lending the same share: the earlier turn lends (the question before
    the answer), not the smaller id, so every load of the same conversation (ids given, or
    random ones from add_session) and every backend names the same turn."""

    async def lenders(session_id: str, texts: list[str], ids: list[str], query: str) -> dict[int, int | None]:
        records = [EntryRecord(entry(text, at=i), entry_id) for i, (text, entry_id) in enumerate(zip(texts, ids, strict=True))]
        await service.restore_session(APP, USER, session_id, records)
        hits = (await search(service, query)).hits
        position = {entry_id: i for i, entry_id in enumerate(ids)}
        return {
            position[h.entry_id]: position[h.context_from] if h.context_from else None
            for h in hits
            if h.session_id == session_id
        }

    # The turn between two equal matches is recalled as context alone (it holds no query
    # term); the later match has the smaller id, which the tie went to before.
    kiwi = ["kiwi smoothie", "sounds good", "kiwi smoothie"]
    assert await lenders("kiwi", kiwi, ["k-b", "k-c", "k-a"], "kiwi") == {0: None, 1: 0, 2: None}
    # The turn between holds a query term itself (a weaker match, gathered with the others).
    mango = ["mango lassi please", "mango is fine", "mango lassi please"]
    found = await lenders("mango", mango, ["m-b", "m-c", "m-a"], "mango lassi")
    assert found[1] == 0


async def test_a_reaction_between_a_question_and_its_answer_does_not_part_them(service: MemoryService) -> None:
    """Rule 12: ``NEXT`` also links the turns on either side of a run of reactions, so the
    answer after "haha" takes the question's context as a neighbour's, not a second one's."""
    turns = [
        entry("Where does your sister live these days?"),
        entry("haha", at=1, author="model", role="model"),
        entry("😂 omg", at=2, author="model", role="model"),
        entry("Lisbon, near the river.", at=3, author="model", role="model"),
    ]
    await service.add_session(APP, USER, "s", turns)
    ids = [e.entry_id for e in sorted(await service.list_entries(APP, USER), key=lambda e: e.position)]
    assert await service.next_links(APP, USER, ids) == sorted(
        [(ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[3]), (ids[0], ids[3])]
    )
    hits = {h.memory.text: h for h in (await search(service, "does my sister live there")).hits}
    answer = hits["Lisbon, near the river."]
    assert answer.context_from == ids[0] and answer.context_score == pytest.approx(answer.score)
    assert "haha" not in hits and "😂 omg" not in hits  # reactions borrow context, never shown (rule 12)
    # Appended after reactions, the answer links to the turn before them too.
    await service.add_session(APP, USER, "t", [entry("Which bakery sells the best custard tarts?"), entry("lol", at=1)])
    await service.append_to_session(APP, USER, "t", [entry("Pastelaria Aurora.", at=2, author="model", role="model")])
    t_ids = [e.entry_id for e in sorted(await service.session_entries(APP, USER, "t"), key=lambda e: e.position)]
    assert (t_ids[0], t_ids[2]) in await service.next_links(APP, USER, t_ids)
    # Deleting a reaction of the run leaves a gap, as deleting any turn does: the link
    # across it goes too (an export of the session would not make it again).
    assert await service.delete_entry(APP, USER, ids[2]) == 1
    assert await service.next_links(APP, USER, ids) == [(ids[0], ids[1])]
    # A run of more reactions than are linked across keeps its ends apart.
    many = [entry("What is your favourite colour?"), *(entry("haha", at=i) for i in range(1, 18)), entry("Teal.", at=18)]
    await service.add_session(APP, USER, "u", many)
    u_ids = [e.entry_id for e in sorted(await service.session_entries(APP, USER, "u"), key=lambda e: e.position)]
    assert (u_ids[0], u_ids[-1]) not in await service.next_links(APP, USER, u_ids)


async def test_deleting_a_turn_does_not_join_its_neighbours(service: MemoryService) -> None:
    """After a middle turn is deleted, its former neighbours are not each other's context."""
    await service.add_session(
        APP, USER, "s1", [entry("question about the violin"), entry("tennis aside"), entry("Yes.", at=1, author="model")]
    )
    assert await service.delete_entries(APP, USER, "tennis") == 1
    assert await texts_found(service, "violin") == ["question about the violin"]


# ---------------------------------------------------------------------------- deleting


async def test_delete_entries_removes_only_matches_and_counts(service: MemoryService) -> None:
    await service.add_session(
        APP, USER, "s1", [entry("salmon for dinner"), entry("grilled salmon recipe", at=1), entry("buy lemons", at=2)]
    )
    await service.add_entry(APP, USER, entry("salmon fishing trip", at=3))
    await service.add_session(APP, "bob", "s1", [entry("salmon sushi")])

    assert await service.delete_entries(APP, USER, "salmon") == 3
    assert await stored_texts(service) == ["buy lemons"]
    assert await texts_found(service, "salmon") == []
    assert await stored_texts(service, user="bob") == ["salmon sushi"]
    assert await service.delete_entries(APP, USER, "salmon") == 0
    assert await service.delete_entries(APP, USER, "nonexistentword") == 0
    assert await stored_texts(service) == ["buy lemons"]


async def test_delete_entries_by_a_title_or_a_contraction_keeps_what_shares_only_grammar(
    service: MemoryService,
) -> None:
    # "won't" was read as the token "will", and a query in Title Case kept "about" and "the"
    # as names: each delete removed every turn holding them.
    await service.add_session(
        APP,
        USER,
        "s1",
        [
            entry("Anna won't eat shellfish."),
            entry("I won't be home tonight.", at=1),
            entry("Shopping list\nThe milk\nThe bread", at=2),
            entry("Our dog loves the park.", at=3),
        ],
    )
    assert await service.delete_entries(APP, USER, "shellfish Anna won't eat") == 1
    assert await service.delete_entries(APP, USER, "Forget About The Dog") == 1
    assert await stored_texts(service) == ["I won't be home tonight.", "Shopping list\nThe milk\nThe bread"]


async def test_delete_entries_does_not_match_an_author_by_their_own_name(service: MemoryService) -> None:
    """The words of an author's name are tokens of everything they said: a query that
    names them ("the user's dog") deletes what it is about, not all they said."""
    await service.add_session(
        APP, USER, "s1",
        [entry("my dog is called Rex"), entry("I like green tea", at=1), entry("Kate walks the dog", at=2, author="Kate")],
    )
    # "user" in the text of an entry by "user" cannot be told from the author's name: kept.
    await service.add_entry(APP, USER, entry("the user manual is in the drawer", at=3))
    assert await service.delete_entries(APP, USER, "the user's dog") == 2
    assert await stored_texts(service) == ["I like green tea", "the user manual is in the drawer"]
    await service.add_entry(APP, USER, entry("my birthday is in May", at=4, author="Sam"))
    await service.add_entry(APP, USER, entry("Sam sends her love", at=5))  # Sam named in its text
    assert await service.delete_entries(APP, USER, "Sam") == 1
    assert await stored_texts(service) == ["I like green tea", "my birthday is in May", "the user manual is in the drawer"]


async def test_delete_entries_reads_the_query_as_a_search_does(service: MemoryService) -> None:
    """A time the query names is a time, not words ("3", "May", "2023" would take every
    entry saying them); one character of a script without spaces is too little to delete
    by when the query holds longer words. Each entry kept here shares only those with it."""
    await service.add_session(
        APP,
        USER,
        "s1",
        [
            entry("Dentist appointment moved to the 3rd."),
            entry("We adopted Biscuit in May 2023.", at=1),
            entry("I run 3 miles every day.", at=2),
            entry("東京タワーに登りました。", at=3),
            entry("ラーメンが大好きです。", at=4),
            entry("赤ワインを飲みました。", at=5),
        ],
    )
    hits = (await search(service, "the dentist appointment on 3 May 2023")).hits
    assert {h.memory.text for h in hits if h.matched_tokens or h.matched_entities} == {
        "Dentist appointment moved to the 3rd."
    }
    assert await service.delete_entries(APP, USER, "the dentist appointment on 3 May 2023") == 1
    assert await service.delete_entries(APP, USER, "東京タワー") == 1
    assert await stored_texts(service) == sorted(
        ["We adopted Biscuit in May 2023.", "I run 3 miles every day.", "ラーメンが大好きです。", "赤ワインを飲みました。"]
    )


async def test_a_delete_by_a_query_that_is_only_a_time_deletes_nothing(service: MemoryService) -> None:
    """A search matches such a query by its words; a delete did too, and "on 3 May 2023"
    took every entry saying "3" or "2023". Its time is no words (and no filter: README)."""
    texts = ["We bought 3 apples.", "Back in 2023 we moved.", "We adopted Biscuit in May 2023.", "See you tomorrow."]
    await service.add_session(APP, USER, "s1", [entry(text, at=i) for i, text in enumerate(texts)])
    for query in ("on 3 May 2023", "May 2023", "2023-05-03", "tomorrow", "last week"):
        assert await service.delete_entries(APP, USER, query) == 0, query
    assert await stored_texts(service) == sorted(texts)
    # A search still matches a time alone by its words.
    assert "We adopted Biscuit in May 2023." in {h.memory.text for h in (await search(service, "May 2023")).hits}


async def test_delete_entries_spares_context_only_hits(service: MemoryService) -> None:
    await service.add_session(
        APP, USER, "s1", [entry("Where does your sister live?"), entry("Lisbon.", at=1, author="model", role="model")]
    )
    hits = {h.memory.text: h for h in (await search(service, "sister live")).hits}
    context_hit = hits["Lisbon."]
    assert context_hit.matched_tokens == [] and context_hit.matched_entities == [] and context_hit.context_score > 0

    assert await service.delete_entries(APP, USER, "sister live") == 1
    assert await stored_texts(service) == ["Lisbon."]


@pytest.mark.parametrize("session_id", ["s1", None])
async def test_delete_entries_keeps_an_entry_rewritten_after_it_read_the_store(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch, session_id: str | None
) -> None:
    """delete_entries listed the ids that matched, then deleted those ids: a restore that
    kept an entry's id with text that no longer matches (what ``load`` and the ADK service
    do), landing in between, had its new entry deleted and counted. The rewrite is injected
    after delete_entries read the query and the store, just before its delete write (on the
    old code: after it listed the ids): the new text survives and is not counted."""

    async def delete_after_a_rewrite(project: str | None) -> None:
        user, rewritten = f"rewritten-{session_id}-{project}", f"x-{session_id}-{project}"
        await service.restore_session(
            APP, user, session_id, [EntryRecord(entry("my secret word is zanzibar"), rewritten)], project_id=project
        )
        await service.restore_session(
            APP, user, "other", [EntryRecord(entry("zanzibar again", at=1), f"y-{session_id}-{project}")],
            project_id=project,
        )
        rewrites: list[str] = []

        def rewriting_first(step: Callable[..., Awaitable[int]]) -> Callable[..., Awaitable[int]]:
            async def step_after_a_rewrite(*args: Any, **kwargs: Any) -> int:
                if not rewrites:  # once: the restore below writes no delete of its own through here
                    rewrites.append(rewritten)
                    await service.restore_session(
                        APP, user, session_id, [EntryRecord(entry("nothing to see, just the park", at=2), rewritten)],
                        project_id=project,
                    )
                return await step(*args, **kwargs)

            return step_after_a_rewrite

        with monkeypatch.context() as patch:
            # The steps that write the delete: the old code's delete by listed ids; the match
            # and delete in one write that replaced it (absent from the old code).
            patch.setattr(service, "_delete_entries", rewriting_first(service._delete_entries))
            if hasattr(service, "_delete_matching"):
                patch.setattr(service, "_delete_matching", rewriting_first(service._delete_matching))
            if project is None:
                removed = await service.delete_entries(APP, user, "zanzibar")
            else:
                removed = await service.delete_entries_in_project(APP, user, project, "zanzibar")
        assert rewrites == [rewritten]
        assert removed == 1
        kept = await service.get_entry(APP, user, rewritten)
        assert kept is not None and kept.memory.text == "nothing to see, just the park"
        assert await stored_texts(service, user=user) == ["nothing to see, just the park"]
        assert [h.memory.text for h in (await search(service, "park", user=user, project=project)).hits] == [
            "nothing to see, just the park"
        ]

    await delete_after_a_rewrite(None)
    if service.supports_project_scoping():
        await delete_after_a_rewrite("p1")


async def test_delete_session_removes_only_that_session(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("hiking boots"), entry("hiking trail map", at=1)])
    await service.add_session(APP, USER, "s2", [entry("hiking with friends", at=2)])
    await service.add_entry(APP, USER, entry("hiking alone", at=3))
    await service.add_session(APP, "bob", "s1", [entry("bob hiking")])

    assert await service.delete_session(APP, USER, "s1") == 2
    assert await stored_texts(service) == ["hiking alone", "hiking with friends"]
    assert sorted(await texts_found(service, "hiking")) == ["hiking alone", "hiking with friends"]
    assert await stored_texts(service, user="bob") == ["bob hiking"]
    assert await service.delete_session(APP, USER, "s1") == 0
    assert await service.delete_session(APP, USER, "never-existed") == 0


async def test_session_entries_are_one_session_of_one_scope_in_position_order(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("first turn"), entry("second turn", at=1), entry("third turn", at=2)])
    await service.append_to_session(APP, USER, "s1", [entry("appended turn", at=3)])
    await service.add_session(APP, USER, "s2", [entry("another session")])
    await service.add_entry(APP, USER, entry("outside any session"))
    await service.add_session(APP, "bob", "s1", [entry("bob's turn")])
    middle = next(e for e in await service.list_entries(APP, USER) if e.memory.text == "second turn")
    await service.delete_entry(APP, USER, middle.entry_id)  # a gap in the positions stays a gap

    found = await service.session_entries(APP, USER, "s1")
    assert [(e.memory.text, e.position, e.session_id, e.project_id) for e in found] == [
        ("first turn", 0, "s1", None), ("third turn", 2, "s1", None), ("appended turn", 3, "s1", None)]
    listed = {e.entry_id: e for e in await service.list_entries(APP, USER)}
    assert all(listed[e.entry_id] == e for e in found)  # the same entries list_entries gives
    assert [e.memory.text for e in await service.session_entries(APP, "bob", "s1")] == ["bob's turn"]
    assert await service.session_entries(APP, USER, "never-existed") == []
    assert await service.session_entries("other-app", USER, "s1") == []
    for bad in ("", None, "x" * 300):
        with pytest.raises(InvalidIdentifierError):
            await service.session_entries(APP, USER, bad)  # type: ignore[arg-type]
        with pytest.raises(InvalidIdentifierError):
            await service.session_entries(APP, bad, "s1")  # type: ignore[arg-type]

    if not service.supports_project_scoping():
        with pytest.raises(ProjectScopingUnsupportedError, match=r"session_entries\(\)"):
            await service.session_entries(APP, USER, "s1", project_id="p1")
        return
    await service.add_session_to_project(APP, USER, "s1", "p1", [entry("project turn"), entry("project reply", at=1)])
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1", project_id="p1")] == [
        "project turn", "project reply"]
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1")] == [
        "first turn", "third turn", "appended turn"]  # the global session, not the project's
    assert await service.session_entries(APP, USER, "s1", project_id="p2") == []
    with pytest.raises(InvalidProjectIdError):
        await service.session_entries(APP, USER, "s1", project_id="")


async def test_recent_entries_of_a_scope_fill_the_page_from_that_scope(service: MemoryService) -> None:
    """The scope is applied before the limit: newer entries of other projects do not shorten it."""
    needs_projects(service)
    await service.add_session(APP, USER, "g", [entry("global one", at=0), entry("global two", at=1)])
    await service.add_session_to_project(APP, USER, "s", "p1", [entry("p1 entry", at=2)])
    await service.add_session_to_project(APP, USER, "t", "p2", [entry(f"p2 entry {i}", at=10 + i) for i in range(3)])

    async def texts(limit: int, **scope: Any) -> list[str]:
        return [e.memory.text for e in await service.recent_entries(APP, USER, limit, **scope)]

    assert await texts(2, project_id="p1") == ["p1 entry", "global two"]
    assert await texts(3, project_id="p1") == ["p1 entry", "global two", "global one"]
    assert await texts(2, global_only=True) == ["global two", "global one"]
    assert await texts(2) == ["p2 entry 2", "p2 entry 1"]  # everything, as before
    assert await texts(2, project_id="nothing-here") == ["global two", "global one"]
    assert [m.text for m in await service.list_recent(APP, USER, 1, project_id="p1")] == ["p1 entry"]
    with pytest.raises(ValueError, match="not both"):
        await service.recent_entries(APP, USER, 2, project_id="p1", global_only=True)


async def test_recent_entries_global_only_on_any_backend(service: MemoryService) -> None:
    await service.add_session(APP, USER, "g", [entry("global one", at=0), entry("global two", at=1)])
    await service.add_entry(APP, "bob", entry("bob's", at=5))
    assert [e.memory.text for e in await service.recent_entries(APP, USER, 5, global_only=True)] == [
        "global two", "global one"]


async def test_recent_entries_carry_ids_that_delete_by_id_takes(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("hiking boots"), entry("hiking trail map", at=1)])
    own = await service.add_entry(APP, USER, entry("hiking alone", at=3))
    await service.add_session(APP, "bob", "s1", [entry("bob hiking", at=4)])
    recent = await service.recent_entries(APP, USER, 2)
    assert [(e.entry_id == own, e.memory.text, e.session_id) for e in recent] == [
        (True, "hiking alone", None), (False, "hiking trail map", "s1")]
    bobs = [e.entry_id for e in await service.recent_entries(APP, "bob")]

    # Another user's id, an unknown one and a repeated one remove nothing more than the owner's own.
    assert await service.delete_entries_by_id(APP, USER, [own, own, *bobs, "no-such-id"]) == 1
    assert await stored_texts(service) == ["hiking boots", "hiking trail map"]
    assert await stored_texts(service, user="bob") == ["bob hiking"]
    assert await service.delete_entries_by_id(APP, USER, []) == 0
    # Strings that are no valid id name no entry either: skipped alike on every backend (a
    # lone surrogate once reached the Neo4j driver, which cannot encode it).
    assert await service.delete_entries_by_id(APP, USER, ["\ud800", "", "a\nb", "x" * 300]) == 0
    assert await stored_texts(service) == ["hiking boots", "hiking trail map"]
    with pytest.raises(TypeError):
        await service.delete_entries_by_id(APP, USER, own)  # type: ignore[arg-type]


async def test_adapter_routes_global_calls(service: MemoryService) -> None:
    adapter = MemoryServiceAdapter(service, APP, USER)
    other = MemoryServiceAdapter(service, APP, "bob")
    entry_id = await adapter.add(entry("umbrella in the car"))
    await other.add(entry("umbrella at the office"))
    assert isinstance(entry_id, str)

    assert [m.text for m in await adapter.search("umbrella")] == ["umbrella in the car"]
    assert [m.text for m in await other.search("umbrella")] == ["umbrella at the office"]
    assert await adapter.delete("umbrella") == 1
    assert await adapter.search("umbrella") == []
    assert [m.text for m in await other.search("umbrella")] == ["umbrella at the office"]
    assert await adapter.add(MemoryEntry(content=Content())) is None


# ---------------------------------------------------------------------------- listing and stats


async def test_list_recent_newest_first(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("first", at=0), entry("third", at=20)])
    await service.add_entry(APP, USER, entry("second", at=10))
    await service.add_session(APP, USER, "s2", [entry("fourth", at=30)])

    assert [m.text for m in await service.list_recent(APP, USER)] == ["fourth", "third", "second", "first"]
    assert [m.text for m in await service.list_recent(APP, USER, 2)] == ["fourth", "third"]
    for bad in (0, -1, True, 2.5):
        with pytest.raises(ValueError):
            await service.list_recent(APP, USER, bad)  # type: ignore[arg-type]


async def test_stats_and_list_entries(service: MemoryService) -> None:
    assert (await service.stats()).entries == 0
    await service.add_session(APP, USER, "s1", [entry("alpha beta"), entry("beta gamma", at=1)])
    await service.add_session(APP, USER, "s2", [entry("delta", at=2)])
    await service.add_entry(APP, USER, entry("epsilon", at=3))
    await service.add_session(APP, "bob", "s1", [entry("alpha", at=4)])

    mine = await service.stats(APP, USER)
    assert (mine.users, mine.entries, mine.sessions, mine.projects) == (1, 4, 2, 0)
    # Tokens: alpha beta gamma delta epsilon, the author "user", and the type token of
    # any entity spaCy finds among them (graphmem._answer_types).
    ids = [e.entry_id for e in await service.list_entries(APP, USER)]
    held = {t for parts in (await service.entry_terms(APP, USER, ids)).values() for t in parts.tokens}
    assert {"alpha", "beta", "gamma", "delta", "epsilon", "user"} <= held
    assert len(held - {"alpha", "beta", "gamma", "delta", "epsilon", "user"}) <= mine.entities
    assert mine.tokens == len(held)
    everyone = await service.stats()
    assert (everyone.users, everyone.entries, everyone.sessions) == (2, 5, 3)
    assert (await service.stats("nobody-app", "nobody")).entries == 0
    with pytest.raises(ValueError):
        await service.stats(APP)
    with pytest.raises(ValueError):
        await service.stats(user_id=USER)

    listed = await service.list_entries(APP, USER)
    assert [(e.session_id, e.position, e.memory.text) for e in listed if e.session_id is not None] == [
        ("s1", 0, "alpha beta"),
        ("s1", 1, "beta gamma"),
        ("s2", 0, "delta"),
    ]
    assert sorted(e.memory.text for e in listed) == ["alpha beta", "beta gamma", "delta", "epsilon"]
    assert len({e.entry_id for e in listed}) == 4
    assert all(e.project_id is None for e in listed)


# ---------------------------------------------------------------------------- validate_project_id


@pytest.mark.parametrize("bad", ["", "x" * 257, 123, None, b"bytes", "tab\there"])
def test_validate_project_id_rejects(bad: object) -> None:
    with pytest.raises(InvalidProjectIdError) as raised:
        validate_project_id(bad)
    assert isinstance(raised.value, ValueError)
    assert isinstance(raised.value, GraphmemError)
    assert "project_id" in str(raised.value)


@pytest.mark.parametrize("good", ["x" * 256, "p", "proj/with/slashes", "プロジェクト"])
def test_validate_project_id_accepts(good: str) -> None:
    assert validate_project_id(good) == good


async def test_project_writes_validate_the_project_id(service: MemoryService) -> None:
    adapter = MemoryServiceAdapter(service, APP, USER)
    for bad in ("", "x" * 257):
        with pytest.raises(InvalidProjectIdError):
            adapter.with_project_id(bad)
    if not service.supports_project_scoping():
        return  # the refusal comes first, and is tested above
    before = await snapshot(service, [(APP, USER)])
    for bad in ("", "x" * 257):
        with pytest.raises(InvalidProjectIdError):
            await service.add_entry_to_project(APP, USER, bad, entry("never stored"))
        with pytest.raises(InvalidProjectIdError):
            await service.add_session_to_project(APP, USER, "s", bad, [entry("never stored")])
        with pytest.raises(InvalidProjectIdError):
            await service.delete_project(APP, USER, bad)
    assert await snapshot(service, [(APP, USER)]) == before
    await service.add_entry_to_project(APP, USER, "x" * 256, entry("stored in a long project"))
    assert await texts_found(service, "stored", project="x" * 256) == ["stored in a long project"]


# ---------------------------------------------------------------------------- concurrency


async def test_concurrent_adds_and_searches_lose_nothing(service: MemoryService) -> None:
    words = ["maple", "cedar", "birch", "willow", "spruce"]

    async def add_session(i: int) -> None:
        await service.add_session(APP, USER, f"s{i}", [entry(f"{words[i % 5]} tree {i}", at=i), entry(f"note {i}", at=i)])

    async def add_single(i: int) -> None:
        await service.add_entry(APP, USER, entry(f"{words[i % 5]} leaf {i}", at=i))

    async def look(i: int) -> SearchResponse:
        return await search(service, words[i % 5])

    results = await asyncio.gather(
        *(add_session(i) for i in range(20)), *(add_single(i) for i in range(20)), *(look(i) for i in range(20))
    )

    expected = sorted([f"{words[i % 5]} tree {i}" for i in range(20)] + [f"note {i}" for i in range(20)] + [f"{words[i % 5]} leaf {i}" for i in range(20)])
    assert await stored_texts(service) == expected
    for i, response in enumerate(results[40:]):
        # A hit holds the word, or is context, or another tree read as related to it.
        assert all(
            words[i % 5] in h.memory.text or set(h.matched_tokens) <= h.related_to.keys()
            for h in response.hits  # type: ignore[union-attr]
        )
    for word in words:
        found = await texts_found(service, word)
        assert sum(1 for t in found if word in t) == 8


async def test_concurrent_replacements_of_one_session_never_duplicate(service: MemoryService) -> None:
    batches = [[entry(f"version {v} line {n} marmalade", at=n) for n in range(3)] for v in range(8)]
    await asyncio.gather(*(service.add_session(APP, USER, "same", batch) for batch in batches))

    stored = await stored_texts(service)
    assert len(stored) == 3
    assert any(stored == sorted(e.text for e in batch) for batch in batches)
    assert (await service.stats(APP, USER)).sessions == 1


# ---------------------------------------------------------------------------- add_sessions (bulk)


async def test_add_sessions_stores_like_add_session_one_by_one(service: MemoryService) -> None:
    sessions = {
        "s1": [entry("My sister Maria lives in Lisbon.", at=0), entry("Where does she work?", at=1)],
        "s2": [entry("She bakes at Pastelaria Aurora.", at=10), entry("", at=11)],
    }
    await service.add_sessions(APP, USER, sessions)
    assert sorted(await stored_texts(service)) == sorted(
        ["My sister Maria lives in Lisbon.", "Where does she work?", "She bakes at Pastelaria Aurora."]
    )
    # The same session ids again replace, as add_session does.
    await service.add_sessions(APP, USER, {"s2": [entry("She moved to Porto.", at=20)]})
    assert "She bakes at Pastelaria Aurora." not in await stored_texts(service)
    assert "She moved to Porto." in await texts_found(service, "Porto")
    # Within a session, NEXT links were made: the answer turn is recalled as context.
    hits = (await search(service, "sister Maria")).hits
    assert [h.memory.text for h in hits][:2] == ["My sister Maria lives in Lisbon.", "Where does she work?"]


async def test_add_sessions_with_a_bad_session_id_stores_nothing(service: MemoryService) -> None:
    with pytest.raises(InvalidIdentifierError):
        await service.add_sessions(APP, USER, {"fine": [entry("kept out")], "": [entry("bad id")]})
    assert await stored_texts(service) == []


async def test_a_bad_entry_deep_in_a_bulk_add_is_named_and_nothing_is_stored(service: MemoryService) -> None:
    from graphmem._models import MAX_TEXT_LENGTH

    sessions = {"first": [entry("kept out")], "second": [entry("fine"), entry("fine too"), entry("x" * (MAX_TEXT_LENGTH + 1))]}
    with pytest.raises(ValueError, match=r'^entries\[2\] of session "second": an entry\'s text is .* nothing was stored$'):
        await service.add_sessions(APP, USER, sessions)
    long_author = {"first": [MemoryEntry(content=Content().with_text("hi"), author="a" * 257)]}
    with pytest.raises(ValueError, match=r'^entries\[0\] of session "first": an entry\'s author is 257 characters long'):
        await service.add_sessions(APP, USER, long_author)
    with pytest.raises(TypeError, match=r'^entries\[1\] of session "first": entries must be MemoryEntry objects'):
        await service.add_sessions(APP, USER, {"first": [entry("kept out"), "not an entry"]})  # type: ignore[list-item]
    assert await stored_texts(service) == []


async def test_a_query_naming_a_speaker_prefers_what_they_said(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("I love pottery classes on weekends.", at=0, author="Melanie"),
            entry("Pottery classes sound lovely, I tried once.", at=1, author="Caroline"),
        ],
    )
    response = await search(service, "Does Melanie like pottery classes?")
    assert [h.memory.author for h in response.hits[:2]] == ["Melanie", "Caroline"]
    assert [h.by_named_speaker for h in response.hits[:2]] == [True, False]
    plain = await search(service, "pottery classes")
    assert all(h.by_named_speaker is None for h in plain.hits)


async def test_a_question_in_the_first_person_asks_about_what_the_user_said(service: MemoryService) -> None:
    # An assistant's memory: what the person types is stored under the author "user" (ADK,
    # the MCP server, MemoryEntry's default), the assistant's replies under its name.
    said = entry("We adopted a dog from the shelter downtown.", at=0)
    echoed = entry("Adopting a shelter dog is wonderful! Which dog breed did you adopt?", at=1, author="helper")
    await service.add_session(APP, USER, "s", [said, echoed, entry("A beagle.", at=2)])
    await service.add_session(APP, USER, "t", [entry("Lunch was great today.", at=5)])  # by the user, about nothing asked
    response = await search(service, "Which dog did I adopt?")
    # The lunch matches nothing asked; the beagle is the user's answer, recalled as context.
    assert [h.memory.text for h in response.hits] == [said.text, echoed.text, "A beagle."]
    assert [h.by_named_speaker for h in response.hits] == [True, False, True]
    assert "user" in response.hits[0].matched_tokens and response.hits[0].read_as == {"I": "user"}
    assert response.hits[1].read_as == {} and response.hits[2].context_score == response.hits[2].score > 0
    # Without the first person, the newer reply wins the tie, and nobody is asked about.
    plain = await search(service, "Which dog was adopted?")
    assert [h.memory.text for h in plain.hits[:2]] == [echoed.text, said.text] and plain.hits[0].score == plain.hits[1].score
    assert all(h.by_named_speaker is None for h in plain.hits)
    # A question naming a speaker asks about them; "me" is then only the one asking.
    named = await search(service, "Which dog breed did helper ask me about?")
    assert [h.memory.author for h in named.hits[:2]] == ["helper", "user"] and named.hits[0].by_named_speaker is True
    assert [h.by_named_speaker for h in named.hits[1:]] == [False, False] and all(h.read_as == {} for h in named.hits)


async def test_the_models_words_without_an_author_are_the_assistants_not_the_users(service: MemoryService) -> None:
    # MemoryEntry's author defaults to "user": the model's reply stored without one was the
    # person's own, and "which dog did I adopt?" recalled what the assistant said first.
    def said(text: str, role: str, at: float) -> MemoryEntry:
        return MemoryEntry(content=Content(role=role).with_text(text), timestamp=T0 + timedelta(minutes=at))

    guess = said("Maybe you adopted a poodle dog?", "model", 0)
    own = said("I adopted a dog, a beagle.", "user", 1)
    await service.add_session(APP, USER, "s", [guess, own])
    stored = {e.memory.text: e.memory.author for e in await service.list_entries(APP, USER)}
    assert stored == {guess.text: "assistant", own.text: "user"}
    response = await search(service, "Which dog did I adopt?")
    assert [h.memory.text for h in response.hits] == [own.text, guess.text]
    assert response.hits[0].read_as == {"I": "user"} and response.hits[1].by_named_speaker is False


async def test_a_question_in_the_first_person_asks_about_the_author_speaking_as_the_user(
    service: MemoryService,
) -> None:
    # An app that stores its user under their name, in the role "user", and the assistant
    # in the role "model" (graphmem's demo fixtures are kept so).
    said = entry("We adopted a dog from the shelter downtown.", at=0, author="Bob")
    echoed = entry("A shelter dog is wonderful! Which dog breed did you adopt?", at=1, author="assistant", role="model")
    answer = entry("A beagle.", at=2, author="Bob")
    await service.add_session(APP, USER, "s", [said, echoed, answer])
    await service.add_session(APP, USER, "t", [entry("Lunch was great today.", at=5, author="Bob")])
    response = await search(service, "Which dog did I adopt?")
    assert [h.memory.text for h in response.hits] == [said.text, echoed.text, answer.text]
    assert [h.by_named_speaker for h in response.hits] == [True, False, True]
    assert "bob" in response.hits[0].matched_tokens and response.hits[0].read_as == {"I": "bob"}
    # Once Bob says nothing in the role "user" any more, "I" is no one in particular: the
    # newer reply wins the tie, as it does without the first person.
    bobs = [h.entry_id for h in (*response.hits, *(await search(service, "lunch")).hits) if h.memory.author == "Bob"]
    await service.delete_entries_by_id(APP, USER, bobs)
    await service.add_session(APP, USER, "u", [entry("We adopted a dog from the shelter downtown.", at=9, author="Bob", role="model")])
    mine, plain = await search(service, "Which dog did I adopt?"), await search(service, "Which dog was adopted?")
    assert [h.memory.author for h in mine.hits] == ["Bob", "assistant"]
    assert [(h.entry_id, h.score) for h in mine.hits] == [(h.entry_id, h.score) for h in plain.hits]
    assert all(h.by_named_speaker is None and h.read_as == {} for h in mine.hits)


async def test_the_first_person_asks_about_no_one_when_every_author_speaks_as_the_user(service: MemoryService) -> None:
    # People's chats stored with every author in the role "user" (as the benchmarks' are):
    # the person asking is not told apart from the others.
    await service.add_session(
        APP, USER, "s", [entry("Walked the dog by the river.", author="Kate"), entry("Nice dog!", at=1, author="Ben")]
    )
    mine, plain = await search(service, "Where did I walk my dog?"), await search(service, "Where did we walk the dog?")
    assert [(h.entry_id, h.score, h.by_named_speaker) for h in mine.hits] == [
        (h.entry_id, h.score, None) for h in plain.hits
    ]


async def test_a_question_in_the_first_person_is_read_in_its_language(service: MemoryService) -> None:
    said = entry("Adoptamos un perro del refugio en primavera.", at=0)
    echoed = entry("¡Qué bien adoptar un perro del refugio! ¿De qué raza es el perro?", at=1, author="asistente")
    await service.add_session(APP, USER, "s", [said, echoed])
    response = await search(service, "¿Qué perro adopté yo del refugio?")
    assert [h.memory.author for h in response.hits] == ["user", "asistente"]
    assert response.hits[0].read_as == {"yo": "user"} and response.hits[1].by_named_speaker is False


async def test_the_first_person_asks_about_no_one_without_another_speaker_or_the_user(service: MemoryService) -> None:
    # Notes of one author: everything is the user's, the question asks what it asked before.
    await service.add_session(APP, USER, "s", [entry("Walked the dog by the river.", at=0), entry("Dog food is low.", at=1)])
    mine, plain = await search(service, "Where did I walk my dog?"), await search(service, "Where did we walk the dog?")
    assert [(h.entry_id, h.score, h.by_named_speaker) for h in mine.hits] == [
        (h.entry_id, h.score, h.by_named_speaker) for h in plain.hits
    ]
    assert all(h.by_named_speaker is None for h in mine.hits)
    # People's chats, no author "user": "I" is no one in particular.
    await service.add_session(APP, "bob", "s", [entry("Walked the dog by the river.", author="Kate"), entry("Sounds lovely.", at=1, author="Ben")])
    mine = await search(service, "Where did I walk my dog?", user="bob")
    assert [h.by_named_speaker for h in mine.hits] == [None, None]


async def test_a_speakers_name_spelled_another_way_in_the_query_still_names_them(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("My favourite hobby is kayaking on the lake.", at=0, author="Katherine"),
            entry("My favourite hobby is chess.", at=1, author="Bob"),
        ],
    )
    response = await search(service, "What is Katharine's favourite hobby?")
    assert [h.memory.author for h in response.hits[:2]] == ["Katherine", "Bob"]
    assert "katherine" in response.hits[0].matched_tokens
    assert [h.by_named_speaker for h in response.hits[:2]] == [True, False]
    # A name nobody has is left alone. (Written lowercase, "katharine" is no English word:
    # the typo rule reads it as the token "katherine", see graphmem._spelling.)
    assert all(h.by_named_speaker is None for h in (await search(service, "What is Roberta's hobby?")).hits)


async def test_a_nickname_names_the_speaker_whose_given_name_it_is(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("I painted the old barn last weekend.", at=0, author="Robert"),
            entry("Nice! I painted a barn once too.", at=1, author="Maria"),
        ],
    )
    response = await search(service, "What did Bob paint?")
    assert [h.memory.author for h in response.hits] == ["Robert", "Maria"]
    assert [h.by_named_speaker for h in response.hits] == [True, False]
    assert response.hits[0].read_as == {"bob": "robert"}
    # The others call him Bob: the word is held, and still names him.
    await service.add_session(APP, USER, "t", [entry("Bob, your barn looks great in red!", at=5, author="Maria")])
    response = await search(service, "What did Bob paint?")
    assert response.hits[0].memory.author == "Robert" and response.hits[0].by_named_speaker is True


async def test_a_speaker_stored_under_a_chat_handle_is_named_by_their_name(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("I painted a sunset at the lake.", at=0, author="mel_92"),
            entry("Your sunset painting is lovely! I painted one too.", at=1, author="caro88"),
        ],
    )
    response = await search(service, "What did Melanie paint?")
    assert [h.memory.author for h in response.hits] == ["mel_92", "caro88"]
    assert [h.by_named_speaker for h in response.hits] == [True, False]
    assert response.hits[0].read_as == {"melanie": "mel_92"}
    # An agent's name (in the role "model") is an identifier, not a handle: "Agent" names no one.
    await service.add_session(
        APP,
        "bob",
        "s",
        [entry("Book me a hotel in Rome.", at=0), entry("I booked a hotel in Rome.", at=1, author="booking_agent", role="model")],
    )
    hits = (await search(service, "Which hotel did Agent book?", user="bob")).hits
    assert len(hits) == 2 and all(h.by_named_speaker is None and h.read_as == {} for h in hits)


async def test_a_name_the_others_call_a_speaker_by_names_them(service: MemoryService) -> None:
    # The app shows her as "Mel"; the others call her Melanie, and so does the question.
    await service.add_session(
        APP,
        USER,
        "s",
        [
            entry("Melanie, your pottery is lovely! Mine keeps cracking.", at=0, author="Caroline"),
            entry("Thanks Caro, I made a bowl at pottery class yesterday.", at=1, author="Mel"),
            entry("Did Melanie show you the pottery studio?", at=2, author="Jon"),
        ],
    )
    await service.add_session(APP, USER, "t", [entry("I went to Melbourne for a pottery fair.", at=3, author="Jon")])
    response = await search(service, "What did Melanie make at pottery class?")
    first = response.hits[0]
    assert first.memory.author == "Mel" and first.by_named_speaker is True
    assert first.read_as == {"melanie": "mel"} and "mel" in first.matched_tokens
    assert [h.by_named_speaker for h in response.hits if h.memory.author != "Mel"] == [False, False, False]
    # The other way round: a speaker stored as "Caroline", whom Mel calls Caro.
    caro = (await search(service, "Is Caro's pottery cracking?")).hits[0]
    assert caro.memory.author == "Caroline" and caro.read_as == {"caro": "caroline"}
    # Never a place ("Melbourne" is no "Mel"), nor a name its speaker writes of someone else.
    assert all(h.read_as == {} for h in (await search(service, "What fair was in Melbourne?")).hits)
    await service.add_session(
        APP,
        USER,
        "u",
        [
            entry("My cousin Melanie visits next week.", at=4, author="Mel"),
            entry("My cousin Melanie loves pottery too.", at=5, author="Mel"),
        ],
    )
    assert all(h.read_as == {} for h in (await search(service, "When does Melanie visit?")).hits)
    # What the rule reads, as the backend reads it and as the base class does from the entries.
    owner = service._owner(APP, USER)
    words = ["melanie", "melbourne", "caro", "nobody"]
    uses = await service._name_uses(owner, words)
    assert uses == await MemoryService._name_uses(service, owner, words)
    assert uses["melanie"].authors == {"Caroline": 1, "Jon": 1, "Mel": 2} and uses["melanie"].label == "PERSON"
    assert uses["melbourne"].label == "GPE" and "nobody" not in uses


async def test_a_message_to_the_assistant_is_searched_for_what_it_asks(service: MemoryService) -> None:
    # What ADK's PreloadMemoryTool searches with: the user's message as written.
    greeting = entry("Hey! Thanks for yesterday, it reminds me of the old days.", at=0, author="Ana")
    await service.add_session(APP, USER, "s", [greeting, entry("Work was long today.", at=1, author="Ana")])
    await service.add_session(APP, USER, "t", [entry("My sister Maria runs a bakery in Lisbon.", at=2, author="Ana")])
    await service.add_session(APP, USER, "u", [entry("Hey, thanks, can you remind me to call mum?", at=3, author="Ana")])
    for day in range(4, 12):  # the rest of a chat: greetings are a few of its turns
        await service.add_session(APP, USER, f"v{day}", [entry(f"Notes on the garden, week {day}.", at=day, author="Ana")])
    message = "Hey! Can you remind me what my sister's bakery is called? Thanks!"
    first = (await search(service, message)).hits[0]
    assert first.memory.text.startswith("My sister Maria") and not {"hey", "thank", "remind"} & set(first.matched_tokens)
    # A message of nothing else is read as written, and a delete reads every word it is given.
    assert (await search(service, "thanks!")).hits[0].memory.text.startswith("Hey")
    assert await service.delete_entries(APP, USER, "remind") == 2


async def test_a_question_asking_for_a_place_finds_the_turn_that_names_one(service: MemoryService) -> None:
    # Separate sessions: no turn lends another its context.
    await service.add_session(APP, USER, "a", [entry("Took a short trip last week to Rome with my sister.", author="Jon")])
    await service.add_session(APP, USER, "b", [entry("Work has been hectic, so many meetings.", at=1, author="Jon")])
    await service.add_session(APP, USER, "c", [entry("I went to Paris last spring!", at=2, author="Gina")])
    response = await search(service, "Which cities has Jon visited?")
    first = response.hits[0]
    assert first.memory.text.startswith("Took a short trip")
    assert "@place" in first.matched_tokens and "jon" in first.matched_tokens
    # Without the question's kind, Jon's two turns would tie (both hold only "jon").
    scores = {h.memory.text[:4]: h.score for h in response.hits}
    assert scores["Took"] > scores["Work"]
    # A question that asks for no kind gives no turn the type token.
    assert all("@place" not in h.matched_tokens for h in (await search(service, "Has Jon been busy?")).hits)


async def test_a_word_written_like_a_type_token_is_no_type_token(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s", [entry("meet me @place or @person later", author="Jon")])
    terms = await service.entry_terms(APP, USER, [e.entry_id for e in await service.list_entries(APP, USER)])
    (parts,) = terms.values()
    assert not {"@place", "@person"} & set(parts.tokens)


async def test_a_name_an_entry_mentions_spelled_another_way_in_the_query_links_to_it(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("I had lunch with Katherine Hughes in Lisbon.", author="Bob")])
    await service.add_session(APP, USER, "b", [entry("I had lunch with my brother.", at=1, author="Bob")])
    response = await search(service, "Did Bob have lunch with Katharine?")
    first = response.hits[0]
    assert first.memory.text.startswith("I had lunch with Katherine")
    assert "katherine" in first.matched_tokens
    # The same with a soft hyphen inside the word (the respelling reads the cleaned text).
    hyphenated = (await search(service, "Did Bob have lunch with Kathar\u00adine?")).hits[0]
    assert hyphenated.read_as == {"katharine": "katherine"} and "katherine" in hyphenated.matched_tokens
    # C and K start the same names ("Catherine"); never linked: another first letter.
    catherine = (await search(service, "Did Bob have lunch with Catherine?")).hits[0]
    assert catherine.read_as == {"catherine": "katherine"} and "katherine" in catherine.matched_tokens
    for query in ("Did Bob have lunch with Matherine?",):
        assert all("katherine" not in h.matched_tokens for h in (await search(service, query)).hits)
    await service.add_session(APP, USER, "c", [entry("I met Kathryn at the gym.", at=2, author="Bob")])
    await service.add_session(APP, USER, "d", [entry("I met Kathlyn at the station.", at=3, author="Bob")])
    # "Kathyn" is one edit from both names: it names neither.
    hits = (await search(service, "Did Bob meet Kathyn?")).hits
    assert hits and all({"kathryn", "kathlyn"}.isdisjoint(h.matched_tokens) for h in hits)


async def test_a_misspelt_query_word_is_read_as_the_word_an_entry_holds(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("I want to pursue counseling as a career.", author="Ann")])
    await service.add_session(APP, USER, "b", [entry("My career in sales is going well.", at=1, author="Ann")])
    first = (await search(service, "Which career does Ann want to persue?")).hits[0]
    assert first.memory.text.startswith("I want to pursue") and "pursue" in first.matched_tokens
    assert first.read_as == {"persue": "pursue"} and first.to_json_dict()["read_as"] == {"persue": "pursue"}
    # A real word is never changed ("purse" is one edit from "pursue" but a word).
    assert all("pursue" not in h.matched_tokens for h in (await search(service, "Did Ann buy a purse?")).hits)


async def test_a_misspelt_word_of_an_entry_is_found_by_the_word_it_misspells(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("That was a couragous talk, I was so moved.", author="Ann")])
    await service.add_session(APP, USER, "b", [entry("The talk was long but the room was warm.", at=1, author="Ann")])
    first = (await search(service, "Which talk was courageous?")).hits[0]
    assert first.memory.text.startswith("That was a couragous talk") and "courageous" in first.matched_tokens
    # The word as written is a token too: a question with the same typo finds it.
    assert "couragous" in (await search(service, "a couragous talk?")).hits[0].matched_tokens
    # Two words equally likely ("movin": "moving" or "movie"), or a word written that way on
    # purpose ("kinda" is frequent itself), are read as neither.
    await service.add_session(APP, USER, "c", [entry("We were movin boxes, kinda tired.", at=2, author="Ann")])
    for query, word in (("Who was moving boxes?", "move"), ("Which movie?", "movie"), ("What kind of boxes?", "kind")):
        hits = [h for h in (await search(service, query)).hits if h.memory.text.startswith("We were movin")]
        assert all(word not in h.matched_tokens for h in hits)
    assert (await search(service, "Who was moving boxes?")).hits  # (the entry's "boxes" is found)


async def test_a_word_typed_with_other_accents_is_read_as_the_word_an_entry_holds(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("I opened a small café downtown.", author="José")])
    await service.add_session(APP, USER, "b", [entry("I opened a bakery near the station.", at=1, author="Ann")])
    await service.add_session(APP, USER, "c", [entry("My resume got me the interview.", at=2, author="Ann")])
    first = (await search(service, "what did jose open? a cafe")).hits[0]
    assert first.memory.text.endswith("café downtown.") and {"josé", "café"} <= set(first.matched_tokens)
    assert first.read_as == {"jose": "josé", "cafe": "café"}
    first = (await search(service, "What got Ann the interview, her résumé?")).hits[0]
    assert first.memory.text.startswith("My resume") and first.read_as == {"résumé": "resume"}
    # A word of another letter is no accent of it: "cave" is not "café".
    assert all("café" not in h.matched_tokens for h in (await search(service, "Who opened a cave?")).hits)
    # A phone's apostrophe finds a keyboard's.
    await service.add_session(APP, USER, "d", [entry("Sean O'Brien fixed the roof.", at=3, author="Ann")])
    first = (await search(service, "Who is O\u2019Brien?")).hits[0]
    assert first.memory.text.startswith("Sean O'Brien") and first.read_as == {"o\u2019brien": "o'brien"}


async def test_a_misspelt_inflected_word_is_read_as_the_token_of_its_lemma(service: MemoryService) -> None:
    # Tokens are lemmas ("camped" -> "camp"): "capmed" is three edits from "camp" but one
    # swap from "camped", a form of it.
    await service.add_session(APP, USER, "a", [entry("We camped by the lake all weekend.", author="Ann")])
    await service.add_session(APP, USER, "b", [entry("We sat by the lake and read.", at=1, author="Ann")])
    first = (await search(service, "Where has Ann capmed?")).hits[0]
    assert first.memory.text.startswith("We camped") and first.read_as == {"capmed": "camp"}


async def test_a_name_written_in_lowercase_is_read_as_the_name(service: MemoryService) -> None:
    # Without a capital, "maria" is read as a word form: the lemma "mare", held by no entry.
    await service.add_session(APP, USER, "a", [entry("My new puppy chewed my shoes.", author="Maria")])
    await service.add_session(APP, USER, "b", [entry("My puppy sleeps all day.", at=1, author="Ben")])
    await service.add_session(APP, USER, "c", [entry("Yesterday I walked with Rosa and Maria.", at=2, author="Ben")])
    first = (await search(service, "what did maria say about her puppy?")).hits[0]
    assert first.memory.author == "Maria" and "maria" in first.matched_tokens
    assert first.by_named_speaker is True and first.read_as == {}
    # A name an entry mentions (spaCy's NER kept it as written in the entry).
    assert "maria" in (await search(service, "who walked with maria?")).hits[0].matched_tokens
    # A lowercase word that is no name of this user stays the word form it is read as.
    assert all("maria" not in h.matched_tokens for h in (await search(service, "did ben ride a mare?")).hits)


async def test_a_name_opening_a_query_is_read_as_the_name(service: MemoryService) -> None:
    # A query has no NER: at a sentence's start only the user's names tell "Rose" (a
    # neighbour an entry names) from a form of "rise", and "Maria" (a speaker) from "mare".
    await service.add_session(
        APP,
        USER,
        "a",
        [
            entry("My neighbour Rose adopted a kitten.", author="Ann"),
            entry("Rents keep rising in this city.", at=1, author="Ann"),
            entry("Prices rose 8% last year.", at=2, author="Ann"),
        ],
    )
    await service.add_session(APP, USER, "b", [entry("I am planting tomatoes.", at=3, author="Maria")])
    first = (await search(service, "Rose")).hits[0]
    assert first.memory.text.startswith("My neighbour Rose") and "rose" in first.matched_tokens
    assert all("rise" not in h.matched_tokens for h in (await search(service, "Rose. What about her kitten?")).hits)
    assert "maria" in (await search(service, "Maria is planting what?")).hits[0].matched_tokens
    # The lemma stays when another word of the query gives it too.
    both = {t for h in (await search(service, "Rose saw prices rise")).hits for t in h.matched_tokens}
    assert {"rose", "rise"} <= both
    # A delete by query never widens a name to another word: only the entry naming Rose goes.
    assert await service.delete_entries(APP, USER, "Rose") == 1
    assert (await search(service, "rising rents")).hits[0].memory.text.startswith("Rents keep rising")


async def test_a_name_that_is_a_stop_word_opening_a_query_is_the_name_only_where_nothing_else_fits(
    service: MemoryService,
) -> None:
    # "Will" and "May" are stop words: "Will she come?" names no one, "Will?" and "Will's
    # trip" can only name the speaker.
    await service.add_session(APP, USER, "a", [entry("I'm planning a trip to Rome.", author="Will")])
    await service.add_session(APP, USER, "b", [entry("I planned a trip to Lisbon.", at=1, author="Anna")])
    first = (await search(service, "Will?")).hits[0]
    assert first.memory.author == "Will" and "will" in first.matched_tokens
    first = (await search(service, "Will's trip plans")).hits[0]
    assert first.memory.author == "Will" and first.by_named_speaker is True
    assert all("will" not in h.matched_tokens for h in (await search(service, "Will Anna plan a trip?")).hits)


def _named_only_word_by_word(text: str, word: str) -> bool:
    """What ``_named_only`` answered for one word before it read every word in one scan."""
    escaped = re.escape(word)
    pattern = rf"(?<!\w){escaped}['’]s(?!\w)|(?:^|[.!?]\s*){escaped}\s*(?:[.!?]|$)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(["Will", "will", "May", "MAY", "Ann", "x", "2", "_", "'s", "’s", "s", " ", "  ", ".", "?", "!", "\n"]),
        max_size=30,
    )
)
def test_the_words_written_where_only_a_name_fits_are_those_each_words_own_scan_found(parts: list[str]) -> None:
    text = "".join(parts)
    named = _service._named_only(text)
    for word in {w.lower() for w in re.findall(r"[^\W\d_]+", text)}:
        assert (word in named) == _named_only_word_by_word(text, word), (text, word)


async def test_a_long_query_is_read_for_names_written_alone_in_one_scan(
    service: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each capitalised stop word of a query ("Will", "May", "The") was looked for as a name
    written alone by a scan of the whole query: quadratic in a long one (600,000 characters of
    English took seconds in these scans alone). The query is scanned once."""
    await service.add_session(APP, USER, "a", [entry("I'm planning a trip to Rome.", author="Will")])
    scans: list[str] = []
    scan = _service._named_only

    def counted(*args: Any) -> Any:
        scans.append(args[0])
        return scan(*args)

    monkeypatch.setattr(_service, "_named_only", counted)
    stop_words = ["The", "And", "But", "Then", "When", "What", "Where", "Which", "Who", "Will", "May", "Should"]
    query = " ".join(f"{word} we go there, or not? " for word in stop_words) + "Will?"
    first = (await search(service, query)).hits[0]
    assert first.memory.author == "Will" and "will" in first.matched_tokens  # still read as the name
    assert 1 <= len(scans) <= 2  # once per reading of the query (a respelt query is read again)


async def test_a_speaker_whose_turns_are_all_deleted_is_no_speaker_any_more(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("I love sailing on weekends.", author="Bob")])
    await service.add_session(APP, USER, "b", [entry("Sailing with Bob was fun.", at=1, author="Ann")])
    named = await search(service, "Does Bob like sailing?")
    assert {h.memory.author: h.by_named_speaker for h in named.hits} == {"Bob": True, "Ann": False}
    await service.delete_session(APP, USER, "a")
    # "bob" is still a token (Ann's turn holds it), but no entry of Bob's is left: the
    # query names no speaker, as after reloading the store or restoring an export.
    (left,) = (await search(service, "Does Bob like sailing?")).hits
    assert left.by_named_speaker is None


async def test_an_authors_name_is_the_name_a_question_writes(service: MemoryService) -> None:
    # An apostrophe inside a name ("O'Brien" is one word to the tokenizer) and a name typed
    # with a combining accent (NFD "Zoë"): the author's turns hold the token a question
    # naming them holds, so they are found as theirs.
    nfd_zoe = unicodedata.normalize("NFD", "Zoë")
    await service.add_session(
        APP,
        USER,
        "s1",
        [
            entry("My boat is red.", author="O'Brien"),
            entry("I met O'Brien at the harbour.", at=1, author="Ann"),
            entry("I adopted a kitten.", at=2, author=nfd_zoe),
        ],
    )
    first = (await search(service, "What did O'Brien say?")).hits[0]
    assert (first.memory.text, first.matched_tokens, first.by_named_speaker) == ("My boat is red.", ["o'brien"], True)
    first = (await search(service, "What did Zoë adopt?")).hits[0]
    assert (first.memory.text, first.matched_tokens, first.by_named_speaker) == ("I adopted a kitten.", ["adopt", "zoë"], True)


async def test_a_word_is_a_speakers_name_only_where_its_own_author_says_it(service: MemoryService) -> None:
    # A session restored with its own terms (a hand-written fixture, an old export) in
    # which Kate's turn does not hold "kate" and Ben's, which names her, does: "kate" is
    # then no speaker's word, whether the two entries are written in one call or two.
    kate = EntryRecord(
        memory=entry("I do pottery on weekends.", author="Kate"),
        terms=Decomposition(tokens=("pottery", "weekend"), entities=()),
    )
    ben = EntryRecord(
        memory=entry("Kate told me about pottery.", at=1, author="Ben"),
        terms=Decomposition(tokens=("kate", "pottery", "ben"), entities=()),
    )
    await service.restore_session(APP, USER, "together", [kate, ben])
    await service.restore_session(APP, "bob", "one", [kate])
    await service.restore_session(APP, "bob", "two", [ben])
    for user in (USER, "bob"):
        hits = (await search(service, "What does Kate say about pottery?", user=user)).hits
        assert [(h.memory.author, h.by_named_speaker) for h in hits] == [("Ben", None), ("Kate", None)]


# ---------------------------------------------------------------------------- appending to a session


async def test_an_append_past_the_largest_position_is_refused_and_stores_nothing(service: MemoryService) -> None:
    # A session restored at the last position (an export says so) cannot take more: the
    # entries would have positions no export could write.
    await service.restore_session(APP, USER, "s1", [EntryRecord(memory=entry("the last turn"), position=MAX_POSITION)])
    with pytest.raises(ValueError, match="largest position"):
        await service.append_to_session(APP, USER, "s1", [entry("one more", at=1)])
    assert await stored_texts(service) == ["the last turn"]
    await service.append_to_session(APP, USER, "s2", [entry("a new session", at=2)])  # others go on


async def test_an_appended_turn_addressing_an_earlier_speaker_takes_the_decision_add_session_takes(
    service: MemoryService,
) -> None:
    # A turn that only addresses another participant ("Thanks, Maria!") does not take the name
    # as content. Appended turn by turn (ADK's add_events_to_memory), the participants are
    # the whole session's, not the appended batch's: the same terms as one add_session.
    turns = [entry("I parked on level three.", author="Maria"), entry("Thanks, Maria!", at=1, author="Ben")]
    await service.add_session(APP, USER, "whole", turns)
    await service.add_session(APP, USER, "appended", turns[:1])
    await service.append_to_session(APP, USER, "appended", turns[1:])
    entries = {(e.session_id, e.memory.text): e.entry_id for e in await service.list_entries(APP, USER)}
    terms = await service.entry_terms(APP, USER, list(entries.values()))
    whole, appended = (terms[entries[(s, "Thanks, Maria!")]].tokens for s in ("whole", "appended"))
    assert "maria" not in whole and sorted(appended) == sorted(whole)


async def test_append_to_session_continues_the_next_chain(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("Where does your sister live these days?")])
    ids = await service.append_to_session(
        APP, USER, "s1", [entry("Lisbon.", at=1, author="model", role="model"), entry("", at=2)]
    )
    assert len(ids) == 1  # the empty turn is skipped
    stored = await service.list_entries(APP, USER)
    assert [(e.memory.text, e.session_id, e.position) for e in stored] == [
        ("Where does your sister live these days?", "s1", 0),
        ("Lisbon.", "s1", 1),
    ]
    assert stored[1].entry_id == ids[0]
    # Linked to the turn before it: recalled as its context, sharing no word with the query.
    # (A "where" question would also ask for a place, which "Lisbon." names: see the answer types.)
    hits = {h.memory.text: h for h in (await search(service, "does my sister live there")).hits}
    assert hits["Lisbon."].entry_id == ids[0]
    assert hits["Lisbon."].matched_tokens == [] and hits["Lisbon."].context_score > 0
    assert (await service.stats(APP, USER)).sessions == 1


async def test_append_starts_a_new_session_and_add_session_replaces_it_whole(service: MemoryService) -> None:
    assert await service.append_to_session(APP, USER, "s1", []) == []
    assert await service.append_to_session(APP, USER, "s1", [entry("first kiwi turn")]) != []
    await service.append_to_session(APP, USER, "s1", [entry("second kiwi turn", at=1), entry("third kiwi turn", at=2)])
    assert [(e.memory.text, e.position) for e in await service.list_entries(APP, USER)] == [
        ("first kiwi turn", 0), ("second kiwi turn", 1), ("third kiwi turn", 2)
    ]
    # The whole session again replaces everything appended: no duplicates.
    await service.add_session(APP, USER, "s1", [entry("first kiwi turn"), entry("second kiwi turn", at=1)])
    assert await stored_texts(service) == ["first kiwi turn", "second kiwi turn"]
    assert len(await texts_found(service, "kiwi")) == 2


async def test_append_after_the_last_turn_was_deleted_links_to_the_new_last(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("Where does your sister live?"), entry("tennis aside", at=1)])
    assert await service.delete_entries(APP, USER, "tennis") == 1
    await service.append_to_session(APP, USER, "s1", [entry("Lisbon.", at=2, author="model", role="model")])
    assert [(e.memory.text, e.position) for e in await service.list_entries(APP, USER)] == [
        ("Where does your sister live?", 0), ("Lisbon.", 1)
    ]
    assert "Lisbon." in await texts_found(service, "sister live")


async def test_append_stays_in_its_owner_and_session(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("walnut bread")])
    await service.add_session(APP, USER, "s2", [entry("walnut cake")])
    await service.add_session(APP, "bob", "s1", [entry("walnut oil")])
    await service.append_to_session(APP, USER, "s1", [entry("walnut butter", at=1)])
    assert [(e.memory.text, e.session_id, e.position) for e in await service.list_entries(APP, USER)] == [
        ("walnut bread", "s1", 0), ("walnut butter", "s1", 1), ("walnut cake", "s2", 0)
    ]
    assert await stored_texts(service, user="bob") == ["walnut oil"]
    with pytest.raises(InvalidIdentifierError):
        await service.append_to_session(APP, USER, "", [entry("walnut")])


async def test_concurrent_appends_to_one_session_keep_every_turn_in_one_chain(service: MemoryService) -> None:
    await asyncio.gather(
        *(service.append_to_session(APP, USER, "same", [entry(f"pear turn {n}", at=n)]) for n in range(6))
    )
    stored = await service.list_entries(APP, USER)
    assert sorted(e.memory.text for e in stored) == [f"pear turn {n}" for n in range(6)]
    assert sorted(e.position for e in stored) == list(range(6))  # no two appends took one place
    assert (await service.stats(APP, USER)).sessions == 1


async def test_concurrent_appends_and_replacements_never_duplicate(service: MemoryService) -> None:
    replacement = [entry("plum one"), entry("plum two", at=1)]
    await asyncio.gather(
        service.add_session(APP, USER, "same", replacement),
        *(service.append_to_session(APP, USER, "same", [entry(f"plum extra {n}", at=2 + n)]) for n in range(3)),
        service.add_session(APP, USER, "same", replacement),
    )
    stored = await service.list_entries(APP, USER)
    texts = [e.memory.text for e in stored]
    assert len(texts) == len(set(texts))  # the last replacement removed whatever came before it
    assert sorted(e.position for e in stored) == list(range(len(stored)))
    assert {"plum one", "plum two"} <= set(texts)


async def test_append_in_project_is_scoped(service: MemoryService) -> None:
    needs_projects(service)
    await service.add_session(APP, USER, "s1", [entry("global apricot")])
    await service.add_session_to_project(APP, USER, "s1", "proj", [entry("project apricot")])
    await service.append_to_session_in_project(APP, USER, "s1", "proj", [entry("more apricot", at=1)])
    global_entries = await service.list_entries(APP, USER)
    project_entries = await service.list_entries(APP, USER, "proj")
    assert [(e.memory.text, e.position) for e in global_entries] == [("global apricot", 0)]
    assert [(e.memory.text, e.position) for e in project_entries] == [("project apricot", 0), ("more apricot", 1)]
    assert await texts_found(service, "apricot") == ["global apricot"]
    assert len(await texts_found(service, "apricot", project="proj")) == 3


async def test_append_keeps_the_entry_ids_given(service: MemoryService) -> None:
    """A caller that names its messages (graphmem.adk: after ADK's event ids) appends them
    with those ids, to tell later which ones it already stored."""
    await service.add_session(APP, USER, "s1", [entry("Where does your sister live?")])
    ids = await service.append_to_session(
        APP, USER, "s1", [entry("Lisbon.", at=1, author="model", role="model"), entry(" ", at=2), entry("Since 2021.", at=3)],
        entry_ids=["turn-lisbon", "turn-blank", "turn-since"],
    )
    assert ids == ["turn-lisbon", "turn-since"]  # the blank entry is skipped, its id unused
    assert [(e.entry_id, e.position) for e in (await service.session_entries(APP, USER, "s1"))[1:]] == [
        ("turn-lisbon", 1), ("turn-since", 2)]
    assert "Lisbon." in await texts_found(service, "sister live")  # NEXT-linked as any append

    before = await snapshot(service, [(APP, USER), (APP, "bob")])
    refused: list[tuple[type[Exception], str, Callable[[], Awaitable[object]]]] = [
        # An id already stored, in this session too: an append never replaces an entry.
        (EntryIdConflictError, "already an entry of this session",
         lambda: service.append_to_session(APP, USER, "s1", [entry("new"), entry("again")], entry_ids=["turn-new", "turn-since"])),
        (EntryIdConflictError, 'this user\'s entry of session "s1"',
         lambda: service.append_to_session(APP, USER, "s2", [entry("Lisbon.")], entry_ids=["turn-lisbon"])),
        (EntryIdConflictError, "another user's entry",
         lambda: service.append_to_session(APP, "bob", "s1", [entry("Lisbon.")], entry_ids=["turn-lisbon"])),
        (ValueError, "one id per entry", lambda: service.append_to_session(APP, USER, "s1", [entry("x")], entry_ids=[])),
        (ValueError, "given twice",
         lambda: service.append_to_session(APP, USER, "s1", [entry("x"), entry("y")], entry_ids=["dup", "dup"])),
        (InvalidIdentifierError, "entry_id", lambda: service.append_to_session(APP, USER, "s1", [entry("x")], entry_ids=[""])),
    ]
    for error, message, call in refused:
        with pytest.raises(error, match=message):
            await call()
    assert await snapshot(service, [(APP, USER), (APP, "bob")]) == before  # nothing stored by any


async def test_append_in_project_keeps_the_entry_ids_given(service: MemoryService) -> None:
    needs_projects(service)
    await service.append_to_session_in_project(APP, USER, "s1", "proj", [entry("apricot jam")], entry_ids=["jam"])
    assert [(e.entry_id, e.project_id) for e in await service.list_entries(APP, USER, "proj")] == [("jam", "proj")]
    with pytest.raises(EntryIdConflictError, match="already an entry of this session"):
        await service.append_to_session_in_project(APP, USER, "s1", "proj", [entry("apricot jam")], entry_ids=["jam"])
    with pytest.raises(EntryIdConflictError, match='in project "proj"'):  # the global session of that id is another
        await service.append_to_session(APP, USER, "s1", [entry("apricot jam")], entry_ids=["jam"])
    assert len(await service.list_entries(APP, USER, all_projects=True)) == 1


# ---------------------------------------------------------------------------- one entry by id


async def test_delete_entry_deletes_exactly_that_entry_of_that_user(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", [entry("Where does your sister live?"), entry("Lisbon.", at=1)])
    standalone = await service.add_entry(APP, USER, entry("sister birthday in May", at=2))
    await service.add_session(APP, "bob", "s1", [entry("bob sister")])
    bobs = (await service.list_entries(APP, "bob"))[0].entry_id
    target = next(h for h in (await search(service, "sister")).hits if h.memory.text == "Lisbon.")
    assert standalone is not None

    assert await service.delete_entry(APP, USER, bobs) == 0  # another user's id
    assert await service.delete_entry("other-app", USER, target.entry_id) == 0  # another app
    assert await service.delete_entry(APP, USER, "no-such-id") == 0
    assert await stored_texts(service, user="bob") == ["bob sister"]
    assert await service.delete_entry(APP, USER, target.entry_id) == 1
    assert await stored_texts(service) == ["Where does your sister live?", "sister birthday in May"]
    assert await service.delete_entry(APP, USER, target.entry_id) == 0
    assert await service.delete_entry(APP, USER, standalone) == 1
    assert await stored_texts(service) == ["Where does your sister live?"]
    with pytest.raises(InvalidIdentifierError):
        await service.delete_entry(APP, USER, "")


async def test_get_entry_finds_only_the_users_own(service: MemoryService) -> None:
    entry_id = await service.add_entry(APP, USER, entry("quince jam", at=3))
    assert entry_id is not None
    found = await service.get_entry(APP, USER, entry_id)
    assert found is not None and found.entry_id == entry_id and found.memory.text == "quince jam"
    assert found.session_id is None and found.project_id is None
    assert await service.get_entry(APP, "bob", entry_id) is None
    assert await service.get_entry(APP, USER, "missing") is None


# ---------------------------------------------------------------------------- names of one thing


def named(text: str, tokens: list[str], entities: list[tuple[str, str]], *, at: float = 0, author: str = "user") -> EntryRecord:
    """An entry stored with exactly these terms (so that no NER decides the test)."""
    return EntryRecord(
        entry(text, at=at, author=author),
        terms=Decomposition(tokens=tuple(tokens), entities=tuple(Entity(n, label) for n, label in entities)),
    )


async def hits_by_text(service: MemoryService, query: str, user: str = USER) -> dict[str, Any]:
    return {h.memory.text: h for h in (await search(service, query, user=user)).hits}


async def test_restored_terms_are_lowercased_as_stored_terms_are(service: MemoryService) -> None:
    """Terms given to restore_session in capitals were stored as given and never matched
    (a search's words and entity names are lowercase); now they are lowercased, as fixtures'."""
    await service.restore_session(
        APP, USER, "s1", [named("Bob in Lisbon.", ["Lisbon", "lisbon", "BOB"], [("Bob", "PERSON"), ("bob", "GPE")])]
    )
    hit = (await hits_by_text(service, "lisbon"))["Bob in Lisbon."]
    assert hit.matched_tokens == ["lisbon"]
    assert (await service.entity_mentions(APP, USER, "bob")).total == 1
    terms = (await service.entry_terms(APP, USER, [hit.entry_id]))[hit.entry_id]
    assert terms.tokens == ("bob", "lisbon") and [(e.name, e.label) for e in terms.entities] == [("bob", "PERSON")]


async def test_one_entity_node_per_name_whatever_label_each_mention_has(service: MemoryService) -> None:
    await service.restore_session(
        APP,
        USER,
        "s1",
        [
            named("Aurora called.", ["aurora", "call"], [("aurora", "PERSON")]),
            named("Aurora is lovely in May.", ["aurora", "lovely"], [("aurora", "GPE")], at=1),
        ],
    )
    assert (await service.stats(APP, USER)).entities == 1
    found = await hits_by_text(service, "Aurora")
    assert {t: h.matched_entities for t, h in found.items()} == {
        "Aurora called.": ["aurora"],
        "Aurora is lovely in May.": ["aurora"],
    }


async def test_a_name_inside_a_longer_one_is_matched_as_the_same_thing(service: MemoryService) -> None:
    await service.restore_session(
        APP,
        USER,
        "s1",
        [
            named("Coffee at Pastelaria Aurora.", ["coffee", "pastelaria", "aurora"], [("pastelaria aurora", "ORG")]),
            named("Aurora opens at eight.", ["aurora", "open"], [("aurora", "PERSON")], at=1),
        ],
    )
    found = await hits_by_text(service, "Aurora")
    assert found["Coffee at Pastelaria Aurora."].matched_entities == ["pastelaria aurora"]
    assert found["Coffee at Pastelaria Aurora."].score == found["Aurora opens at eight."].score == 1.0
    # Inside two different names, "Aurora" is neither: the bakery's entry matches its word only.
    (borealis,) = await service.restore_session(
        APP, USER, None, [named("The Aurora Borealis!", ["aurora", "borealis"], [("aurora borealis", "LOC")], at=2)]
    )
    found = await hits_by_text(service, "Aurora")
    assert found["Coffee at Pastelaria Aurora."].matched_entities == []
    assert found["Coffee at Pastelaria Aurora."].score < 1.0
    assert await service.entity_groups(APP, USER) == []
    # Groups are computed from the names stored now: deleting the entry undoes it.
    assert await service.delete_entry(APP, USER, borealis) == 1
    found = await hits_by_text(service, "Aurora")
    assert found["Coffee at Pastelaria Aurora."].matched_entities == ["pastelaria aurora"]
    assert await service.entity_groups(APP, USER) == [("aurora", "pastelaria aurora")]
    assert await service.delete_user(APP, USER) == 2
    assert await service.entity_groups(APP, USER) == []
    assert (await service.stats(APP, USER)).entities == 0
    assert (await search(service, "Aurora")).hits == []


async def test_a_name_spelled_two_ways_is_found_both_ways(service: MemoryService) -> None:
    await service.restore_session(
        APP,
        USER,
        "s1",
        [
            named("Katherine called.", ["katherine", "call"], [("katherine", "PERSON")]),
            named("Katharine is visiting.", ["katharine", "visit"], [("katharine", "PERSON")], at=1),
            named("Mary called.", ["mary", "call"], [("mary", "PERSON")], at=2),
            named("Mark is visiting.", ["mark", "visit"], [("mark", "PERSON")], at=3),
        ],
    )
    found = await hits_by_text(service, "Katharine")
    assert found["Katherine called."].matched_tokens == ["katherine"]
    assert found["Katherine called."].matched_entities == ["katherine"]
    assert found["Katherine called."].score == found["Katharine is visiting."].score == 1.0
    # Short names one letter apart are two people.
    found = await hits_by_text(service, "Mary")
    assert {t for t, h in found.items() if h.matched_tokens or h.matched_entities} == {"Mary called."}


async def test_a_speakers_name_never_links_to_a_longer_name(service: MemoryService) -> None:
    await service.restore_session(
        APP,
        USER,
        "s1",
        [
            named("Bye Caroline, see you!", ["bye", "caroline", "see", "melanie"], [("bye caroline", "PERSON")], author="Melanie"),
            named("Caroline said hi.", ["caroline", "say", "hi", "melanie"], [("caroline", "PERSON")], at=1, author="Melanie"),
            named("Hi!", ["hi", "caroline"], [], at=2, author="Caroline"),
        ],
    )
    found = await hits_by_text(service, "Caroline")
    assert found["Bye Caroline, see you!"].matched_entities == []
    assert found["Caroline said hi."].matched_entities == ["caroline"]


async def test_names_group_alike_whatever_order_they_were_stored_in(service: MemoryService) -> None:
    sessions = {
        "s1": [named("Coffee at Pastelaria Aurora.", ["coffee", "pastelaria", "aurora"], [("pastelaria aurora", "ORG")])],
        "s2": [named("Aurora opens at eight.", ["aurora", "open"], [("aurora", "GPE")], at=1)],
        "s3": [named("Katharine called.", ["katharine", "call"], [("katharine", "PERSON")], at=2)],
        "s4": [named("Katherine is visiting.", ["katherine", "visit"], [("katherine", "PERSON")], at=3)],
    }
    for user, order in (("forward", ["s1", "s2", "s3", "s4"]), ("backward", ["s4", "s3", "s2", "s1"])):
        for session_id in order:
            await service.restore_session(APP, user, session_id, sessions[session_id])
    for query in ("Aurora", "Pastelaria Aurora", "Katherine", "Katharine called"):
        seen = []
        for user in ("forward", "backward"):
            hits = (await search(service, query, user=user)).hits
            seen.append([(h.memory.text, round(h.score, 12), h.matched_tokens, h.matched_entities) for h in hits])
        assert seen[0] == seen[1], query


async def test_a_category_word_finds_the_users_words_related_to_it(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("We adopted a puppy last week!", author="Kate")])
    await service.add_session(APP, USER, "b", [entry("I fixed the fence last week.", at=1, author="Kate")])
    await service.add_session(APP, USER, "c", [entry("My pet project is a garden app.", at=2, author="Ben")])
    hits = (await search(service, "What pets does Kate have?")).hits
    assert hits[0].memory.text.startswith("We adopted a puppy") and "puppy" in hits[0].matched_tokens
    assert hits[0].related_to == {"puppy": "pet"} and hits[0].to_json_dict()["related_to"] == {"puppy": "pet"}
    assert all(h.related_to == {} for h in hits if h.memory.author == "Ben")
    # The word itself counts in full: Ben's "pet" turn outscores Kate's puppy for "pet" alone.
    first = (await search(service, "Which pet project?")).hits[0]
    assert first.memory.author == "Ben" and first.related_to == {}


async def test_related_words_are_on_by_default_and_can_be_turned_off(service: MemoryService) -> None:
    await service.add_session(APP, USER, "a", [entry("We adopted a puppy last week!", author="Kate")])
    await service.add_session(APP, USER, "b", [entry("I fixed the fence last week.", at=1, author="Kate")])
    assert service.weights.related_words
    hits = (await search(service, "What pets does Kate have?")).hits
    assert hits[0].related_to == {"puppy": "pet"}
    service.weights = dataclasses.replace(service.weights, related_words=False)
    hits = (await search(service, "What pets does Kate have?")).hits
    assert all(not h.related_to and "puppy" not in h.matched_tokens for h in hits)


async def test_a_verb_or_a_name_reads_no_related_words(service: MemoryService) -> None:
    # "walk" is a verb more often than a noun (WordNet's sense counts); "Pet" inside a
    # sentence is a name: neither is read as its related words ("stroll", "dog").
    await service.add_session(APP, USER, "a", [entry("We took a long stroll by the river.", author="Kate")])
    await service.add_session(APP, USER, "b", [entry("Our dog loves the beach.", at=1, author="Kate")])
    await service.add_session(APP, USER, "c", [entry("Nothing new today.", at=2, author="Kate")])
    for query in ("Did Kate walk yesterday?", "What did Kate say about Pet Sounds?"):
        hits = (await search(service, query)).hits
        assert all(not h.related_to for h in hits), query


# ---------------------------------------------------------------------------- restores that fail


@pytest.mark.parametrize("session_id", ["s1", None])
async def test_a_position_past_2_to_the_62_is_refused_before_anything_is_written(
    service: MemoryService, session_id: str | None
) -> None:
    """2**63 reached the Neo4j driver as an OverflowError, after a sessionless restore had
    already replaced the entry it reused."""
    await service.restore_session(APP, USER, session_id, [EntryRecord(entry("old note about apples"), "keep-x")])
    before = await snapshot(service, [(APP, USER)])
    for position in (2**63, 2**62 + 1):
        records = [EntryRecord(entry("new note about pears"), "keep-x", position=0),
                   EntryRecord(entry("huge position", at=1), "new-y", position=position)]
        with pytest.raises(ValueError, match=r"from 0 to 2\*\*62"):
            await service.restore_session(APP, USER, session_id, records)
    assert await snapshot(service, [(APP, USER)]) == before
    await service.restore_session(APP, USER, session_id, [EntryRecord(entry("at the limit"), "edge", position=2**62)])
    assert "at the limit" in await stored_texts(service)


async def test_two_users_restoring_one_entry_id_at_once(service: MemoryService) -> None:
    """The id check runs before the write and each user takes their own lock, so both may
    pass it: the store's uniqueness then refuses one, as an EntryIdConflictError, and that
    call stores nothing (not even the replacement of an entry it already held)."""
    for round_ in range(5):
        ann, bob = f"ann-{round_}", f"bob-{round_}"
        await service.restore_session(APP, ann, None, [EntryRecord(entry("ann's old note"), f"ann-x-{round_}")])
        outcomes = await asyncio.gather(
            service.restore_session(APP, ann, None, [
                EntryRecord(entry("ann's new note"), f"ann-x-{round_}"),
                EntryRecord(entry("ann's shared", at=1), f"shared-{round_}"),
            ]),
            service.restore_session(APP, bob, None, [EntryRecord(entry("bob's shared", at=1), f"shared-{round_}")]),
            return_exceptions=True,
        )
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(failed) <= 1 and all(isinstance(o, EntryIdConflictError) for o in failed), outcomes
        anns, bobs = await stored_texts(service, user=ann), await stored_texts(service, user=bob)
        if failed and outcomes[0] is failed[0]:
            assert (anns, bobs) == (["ann's old note"], ["bob's shared"])  # all of ann's write or none
        elif failed:
            assert (anns, bobs) == (["ann's new note", "ann's shared"], [])
        else:  # the second check saw the first write (a backend that serialises writes)
            raise AssertionError(f"both restores of one id succeeded: {anns}, {bobs}")


async def test_which_user_holds_an_id_follows_every_write(service: MemoryService) -> None:
    """A restore refuses an id another user holds. The check asks who holds each id (on
    networkx an index built by the first restore and kept by every write after it, where
    it used to scan every user per id): an id stays refused while held, in any way it was
    stored, and is free once every holder deleted it."""
    await service.restore_session(APP, "ann", None, [EntryRecord(entry("ann's first note"), "id-a")])
    with pytest.raises(EntryIdConflictError):
        await service.restore_session(APP, "bob", None, [EntryRecord(entry("bob's note"), "id-a")])
    await service.delete_entry(APP, "ann", "id-a")
    await service.restore_session(APP, "bob", "s", [EntryRecord(entry("bob's note"), "id-a")])
    with pytest.raises(EntryIdConflictError):
        await service.restore_session(APP, "ann", None, [EntryRecord(entry("ann again"), "id-a")])
    await service.add_session(APP, "bob", "s", [entry("bob's session, replaced")])  # new ids: id-a is gone
    await service.restore_session(APP, "ann", None, [EntryRecord(entry("ann again"), "id-a")])
    await service.delete_user(APP, "ann")
    await service.restore_session(APP, "cat", None, [EntryRecord(entry("cat's note"), "id-a")])
    assert await stored_texts(service, user="cat") == ["cat's note"]
    assert "ann again" not in await stored_texts(service, user="bob")
