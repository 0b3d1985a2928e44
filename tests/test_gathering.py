"""The two reads a backend offers a search (``graphmem._gathering``), the same on every
backend, and the pure rules that choose what to read."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from graphmem import Content, Decomposer, GraphMemoryService, MemoryEntry, MemoryService, SearchRequest
from graphmem._gathering import Days, NeighbourhoodRequest, SeedShares, seed_terms
from graphmem._service import Owner

TEXTS = [
    "We adopted a puppy called Biscuit.",
    "How old is the puppy?",
    "Nine weeks, and already chewing shoes.",
    "My sister visited us in Porto.",
    "Did she like Porto?",
    "She loved the river and the puppy.",
    "Tomorrow we drive to Lisbon.",
]


def entry(text: str, minute: int) -> MemoryEntry:
    return MemoryEntry(
        content=Content(role="user").with_text(text),
        author="Ana" if minute % 2 == 0 else "Ben",
        timestamp=datetime(2024, 3, 1, 12, tzinfo=UTC) + timedelta(minutes=minute),
    )


async def stored(service: MemoryService) -> tuple[Owner, list[str]]:
    """One session of TEXTS and one other user's; the ids in position order."""
    await service.add_session("app", "ana", "s1", [entry(t, i) for i, t in enumerate(TEXTS)])
    await service.add_session("app", "eve", "s1", [entry(t, i) for i, t in enumerate(TEXTS)])
    entries = await service.list_entries("app", "ana")
    by_text = {e.memory.text: e.entry_id for e in entries}
    return Owner("app", "ana"), [by_text[t] for t in TEXTS]


async def test_postings_name_the_holders_of_each_term(service: MemoryService) -> None:
    owner, ids = await stored(service)
    postings = await service._postings(owner, None, ["puppy", "porto", "nothing"], ["porto", "nowhere"])
    around = tuple(postings.tokens["puppy"])
    found = await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy",), (), around))
    assert sorted(c.entry_id for c in found) == sorted([ids[0], ids[1], ids[5]])
    assert len(postings.tokens["porto"]) == 2 and len(postings.entities["porto"]) == 2
    assert not postings.tokens.get("nothing") and not postings.entities.get("nowhere")


@pytest.mark.parametrize(("reach", "expected"), [(0, [3]), (1, [2, 3, 4]), (2, [1, 2, 3, 4, 5])])
async def test_a_neighbourhood_reaches_as_many_next_steps_as_asked(
    service: MemoryService, reach: int, expected: list[int]
) -> None:
    owner, ids = await stored(service)
    around = tuple((await service._postings(owner, None, ["sister"], [])).tokens["sister"])
    request = NeighbourhoodRequest(("puppy", "sister"), ("porto",), around, reach)
    found = {c.entry_id: c for c in await service._neighbourhood(owner, None, request)}
    assert sorted(found) == sorted(ids[i] for i in expected)
    # Each entry comes with the request terms it holds and its neighbours one and two steps away.
    middle = found[ids[3]]
    assert middle.matched_tokens == {"sister"} and middle.matched_entities == {"porto"}
    assert set(middle.neighbour_ids) == {ids[2], ids[4]} and set(middle.second_neighbour_ids) == {ids[1], ids[5]}
    if reach == 2:
        assert found[ids[5]].matched_tokens == {"puppy"} and found[ids[1]].author == "Ben"
    holding = await service._neighbourhood(owner, None, dataclasses.replace(request, holding_only=True))
    assert sorted(c.entry_id for c in holding) == sorted(
        i for i, c in found.items() if c.matched_tokens or c.matched_entities
    )


async def test_every_holder_is_the_neighbourhood_without_around(service: MemoryService) -> None:
    owner, ids = await stored(service)
    found = await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy", "river"), ()))
    assert sorted(c.entry_id for c in found) == sorted([ids[0], ids[1], ids[5]])
    assert all(c.day is None for c in found)
    timed = await service._neighbourhood(owner, None, NeighbourhoodRequest(("river",), (), with_times=True))
    assert [c.day for c in timed] == [datetime(2024, 3, 1).toordinal()]


async def test_keys_of_another_user_or_of_nothing_name_nothing(service: MemoryService) -> None:
    owner, _ = await stored(service)
    eve = Owner("app", "eve")
    theirs = tuple((await service._postings(eve, None, ["puppy"], [])).tokens["puppy"])
    assert len(theirs) == 3
    assert await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy",), (), theirs, 2)) == []
    gone = ("not", "a", "key", 1), "no-such-entry", 7
    assert await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy",), (), gone, 2)) == []


async def test_postings_follow_every_write_to_the_user(service: MemoryService) -> None:
    # The networkx backend keeps each term's holders between searches: a write must drop them.
    owner, ids = await stored(service)
    before = set((await service._postings(owner, None, ["puppy"], [])).tokens["puppy"])
    await service.add_session("app", "ana", "s2", [entry("A second puppy arrived.", 20)])
    after = set((await service._postings(owner, None, ["puppy"], [])).tokens["puppy"])
    assert len(after) == len(before) + 1 and before < after
    await service.delete_session("app", "ana", "s2")
    assert set((await service._postings(owner, None, ["puppy"], [])).tokens["puppy"]) == before
    one = await service.add_entry("app", "ana", entry("The puppy sleeps all day.", 30))
    assert one is not None
    now = set((await service._postings(owner, None, ["puppy"], [])).tokens["puppy"])
    assert before < now and len(now) == len(before) + 1
    added = await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy",), (), tuple(now - before)))
    assert [c.entry_id for c in added] == [one]  # (holder keys are the backend's own)
    await service.delete_entries_by_id("app", "ana", [one])
    await service.delete_entries_by_id("app", "ana", [ids[0]])
    left = (await service._postings(owner, None, ["puppy"], [])).tokens["puppy"]
    assert len(left) == len(before) - 1
    found = await service._neighbourhood(owner, None, NeighbourhoodRequest(("puppy",), (), tuple(before)))
    assert sorted(c.entry_id for c in found) == sorted([ids[1], ids[5]])  # the deleted key names nothing


async def test_postings_give_each_holders_days_as_they_are_after_every_write(service: MemoryService) -> None:
    # A holder's days decide whether a search with a time expands it: after any write, a
    # read gives each holder's days as its entry says them.
    owner, ids = await stored(service)

    async def days_of_puppy_holders() -> dict[str, Days | None]:
        read = await service._postings(owner, None, ["puppy"], [], with_times=True)
        found: dict[str, Days | None] = {}
        for key in read.tokens.get("puppy", ()):
            request = NeighbourhoodRequest(("puppy",), (), (key,), 0, with_times=True)
            (held,) = await service._neighbourhood(owner, None, request)
            assert read.days.get(key) == (held.day, held.time_refs)  # as the entry itself says
            found[held.entry_id] = read.days.get(key)
        return found

    march = datetime(2024, 3, 1).toordinal()
    assert await days_of_puppy_holders() == {ids[0]: (march, ()), ids[1]: (march, ()), ids[5]: (march, ())}
    later = entry("The puppy was sick yesterday.", 0).model_copy(
        update={"timestamp": datetime(2024, 5, 10, tzinfo=UTC)}
    )
    await service.add_session("app", "ana", "s2", [later])
    await service.delete_entries_by_id("app", "ana", [ids[0]])
    may = datetime(2024, 5, 10).toordinal()
    (new_id,) = [e.entry_id for e in await service.list_entries("app", "ana") if e.session_id == "s2"]
    assert await days_of_puppy_holders() == {
        ids[1]: (march, ()),
        ids[5]: (march, ()),
        new_id: (may, ((may - 1, may - 1),)),
    }
    # The session said again on another day: its entries' days are the new ones.
    await service.add_session(
        "app", "ana", "s2", [later.model_copy(update={"timestamp": datetime(2024, 6, 2, tzinfo=UTC)})]
    )
    june = datetime(2024, 6, 2).toordinal()
    assert sorted(d for d in (await days_of_puppy_holders()).values() if d is not None) == [
        (march, ()),
        (march, ()),
        (june, ((june - 1, june - 1),)),
    ]
    await service.delete_user("app", "ana")
    assert await days_of_puppy_holders() == {}


async def test_networkx_day_index_answers_as_each_entrys_days(decomposer: Decomposer) -> None:
    # What a search with a time reads instead of each holder's days: the entries said in
    # day ranges, those referring to a short enough range sharing a day with them, and
    # the span of both; the same answers as the entries' own days, after writes too.
    service = GraphMemoryService(nlp=decomposer)
    owner = Owner("app", "ana")
    said = ["We hiked yesterday.", "Tea last week.", "Porto in May!", "Nothing dated here.", "Two years ago I moved."]
    for n in range(6):
        day = datetime(2023, 4, 1, 9, tzinfo=UTC) + timedelta(days=11 * n)
        memories = [entry(t, 0).model_copy(update={"timestamp": day + timedelta(minutes=i)}) for i, t in enumerate(said)]
        await service.add_session("app", "ana", f"s{n}", memories)
    await service.delete_session("app", "ana", "s2")
    ids = [e.entry_id for e in await service.list_entries("app", "ana")]
    await service.delete_entries_by_id("app", "ana", ids[:2])
    index = (await service._postings(owner, None, ["tea"], [], with_times=True)).day_index
    assert index is not None
    days = {i: e.days() for i, e in service._entries[owner].items()}
    ends = [d for day, refs in days.values() for d in (day, *(x for r in refs for x in r))]
    assert index.span() == (min(ends), max(ends))
    first = min(ends)
    for lo in range(first - 3, max(ends) + 3, 4):
        for length in (0, 3, 20, 400):
            ranges = [(lo, lo + length), (lo + 300, lo + 301)]
            assert index.said_in(ranges) == {i for i, (d, _) in days.items() if any(a <= d <= b for a, b in ranges)}
            for max_days in (1, 7, 31, 62, 800):
                assert index.referring_to(ranges, max_days) == {
                    i
                    for i, (_, refs) in days.items()
                    if any(hi - lo_ + 1 <= max_days and any(lo_ <= b and a <= hi for a, b in ranges) for lo_, hi in refs)
                }
    assert not index.unread_among(days)  # every entry written now has its references read
    # A user none of whose entries refers to a time: the span is the days said.
    await service.add_session("app", "bob", "s", [entry("Nothing dated here.", 0), entry("Nor here.", 1)])
    bob = (await service._postings(Owner("app", "bob"), None, ["dated"], [], with_times=True)).day_index
    noon = datetime(2024, 3, 1).toordinal()
    assert bob is not None and bob.span() == (noon, noon) and bob.referring_to([(noon - 9, noon + 9)], 800) == set()


async def test_networkx_entries_of_records_without_time_refs_are_asked_one_by_one(
    decomposer: Decomposer, tmp_path: Path
) -> None:
    # A journal written before time_refs were kept: its entries' references are unread
    # (resolved from the text when first asked), so the index lists them as such and a
    # pruned search with a time asks each of them, answering as a full gathering does.
    store = tmp_path / "memory.journal"
    writer = GraphMemoryService(nlp=decomposer, path=store)
    base = datetime(2024, 1, 3, 12, tzinfo=UTC)
    said = ["We hiked in the hills yesterday.", "Hiking boots are expensive.", "A quiet day of tea."]
    sessions = {
        f"s{n:02d}": [entry(said[(n + i) % 3], i).model_copy(update={"timestamp": base + timedelta(days=9 * n, minutes=i)}) for i in range(3)]
        for n in range(30)
    }
    await writer.add_sessions("app", "ana", sessions)
    await writer.close()
    for path in store.parent.glob("*.d/*.snapshot"):
        path.unlink()
    for segment in store.parent.glob("*.d/*"):
        lines = segment.read_text(encoding="utf-8").splitlines()
        records = [json.loads(line) for line in lines]
        for record in records:
            for written in record.get("entries", ()):
                written.pop("time_refs", None)
        segment.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    service = GraphMemoryService(nlp=decomposer, path=store, read_only=True)
    owner = Owner("app", "ana")
    index = (await service._postings(owner, None, ["hike"], [], with_times=True)).day_index
    assert index is not None
    ids = {e.entry_id for e in await service.list_entries("app", "ana")}
    assert len(ids) == 90 and index.unread_among(ids) == ids
    answers = []
    for full_up_to, share in ((10_000, None), (0, 0.05)):
        service.full_gathering_entries = full_up_to
        service.seed_df_share = share
        service.first_expansion = 1
        request = SearchRequest(query="hiking in the hills on 18 February 2024", app_name="app", user_id="ana", limit=3)
        answers.append([(h.entry_id, round(h.score, 12), h.matched_time) for h in (await service.search(request)).hits])
    assert answers[0] == answers[1]
    assert answers[0][0][2] is not None  # the day before the one said: "yesterday", resolved when asked
    await service.close()


async def test_networkx_keeps_no_holders_of_a_user_it_erased_or_never_held(decomposer: Decomposer) -> None:
    # The holder cache is per user: delete_user must leave none of it, and searching a user
    # with no entries must not start one (a trace of the names searched).
    # The same for its index of days (the days its entries were said on and refer to).
    service = GraphMemoryService(nlp=decomposer)
    owner, _ = await stored(service)
    await service._postings(owner, None, ["puppy", "porto"], ["porto"], with_times=True)
    assert owner in service._holder_ids and owner in service._said_days
    await service.delete_user("app", "ana")
    await service._postings(owner, None, ["puppy"], [], with_times=True)
    await service._postings(Owner("app", "nobody"), None, ["puppy"], [], with_times=True)
    assert set(service._holder_ids) <= {Owner("app", "eve")}
    assert set(service._said_days) == {Owner("app", "eve")}


async def test_networkx_holder_cache_stays_in_its_bound_and_answers_as_the_graph(decomposer: Decomposer) -> None:
    # It holds at most _HOLDER_CACHE_SHARE ids per entry of the user (one term above that
    # alone may stay), evicting the terms read least recently; what it answers is what the
    # graph holds, and the count it keeps is what it holds.
    from graphmem.backends.networkx import _HOLDER_CACHE_SHARE

    service = GraphMemoryService(nlp=decomposer)
    owner, _ = await stored(service)
    walks = [entry(f"Walk {n}: the puppy, the river, Porto, Lisbon, shoes and a garden.", 40 + n) for n in range(12)]
    await service.add_session("app", "ana", "walks", walks)
    terms = ["puppy", "porto", "sister", "lisbon", "river", "shoe", "garden", "walk", "old", "drive"]
    room = _HOLDER_CACHE_SHARE * (len(TEXTS) + len(walks))
    pred = service._graph._pred
    expected = {t: frozenset(key[3] for key in pred.get(("Token", "app", "ana", t), ())) for t in terms}
    assert sum(map(len, expected.values())) > room  # so the bound is reached
    for round_ in range(3):
        for term in terms[round_:] + terms[:round_]:
            got = (await service._postings(owner, None, [term], [])).tokens[term]
            assert got == expected[term]
            cache = service._holder_ids[owner]
            assert cache.held == sum(map(len, cache.ids.values()))
            assert cache.held <= room or len(cache.ids) == 1
            assert ("Token", "app", "ana", term) in cache.ids or not got
    assert len(cache.ids) < len(terms)  # the bound was reached: some terms left


async def test_networkx_neighbourhood_reads_held_terms_alike_from_cache_postings_or_entries(
    decomposer: Decomposer,
) -> None:
    # Which reached entries hold a term is read three ways: from the holder cache (a seed
    # read before), from the term's postings (no more holders than were reached), or asked
    # of each reached entry (a term held widely and not cached). Each answers as the graph.
    from graphmem.backends._graph_model import ENTRY, TOKEN

    service = GraphMemoryService(nlp=decomposer)
    owner, ids = await stored(service)
    walks = [entry(f"Walk {n}: the puppy, the river and Porto.", 40 + n) for n in range(12)]
    await service.add_session("app", "ana", "walks", walks)
    await service._postings(owner, None, ["river"], ["porto"])  # these two now cached
    tokens, entities = ("puppy", "river", "sister", "shoe", "lisbon"), ("porto",)
    pred, succ = service._graph._pred, service._graph._succ
    cached = service._holder_ids[owner].ids
    for holding_only in (False, True):
        request = NeighbourhoodRequest(tokens, entities, (ids[0], ids[4]), 1, holding_only=holding_only)
        found = {c.entry_id: c for c in await service._neighbourhood(owner, None, request)}
        reached = {ids[0], ids[1], ids[3], ids[4], ids[5]}
        assert len(pred[(TOKEN, "app", "ana", "puppy")]) > len(reached)  # asked per entry
        assert (TOKEN, "app", "ana", "puppy") not in cached and (TOKEN, "app", "ana", "river") in cached
        assert len(pred[(TOKEN, "app", "ana", "sister")]) <= len(reached)  # read from its postings
        expected: dict[str, tuple[set[str], set[str]]] = {}
        for entry_id in reached:
            keys = succ[(ENTRY, "app", "ana", entry_id)]
            matched_tokens = {key[3] for key in keys if key[0] == TOKEN and key[3] in tokens}
            matched_entities = {key[3] for key in keys if key[0] != TOKEN and key[3] in entities}
            if matched_tokens or matched_entities or not holding_only:
                expected[entry_id] = (matched_tokens, matched_entities)
        assert {i: (set(c.matched_tokens), set(c.matched_entities)) for i, c in found.items()} == expected
        assert expected[ids[5]] == ({"puppy", "river"}, set()) and expected[ids[3]] == ({"sister"}, {"porto"})


def test_reach_is_bounded_by_the_context_steps() -> None:
    with pytest.raises(ValueError, match="reach"):
        NeighbourhoodRequest(("puppy",), (), ("x",), 3)


def test_seed_shares_add_up_and_the_best_holders_are_expanded_first() -> None:
    shares = SeedShares([(0.5, ["a", "b"]), (0.25, ["b", "c"]), (0.1, [])])
    assert [(share, sorted(members)) for share, members, _ in shares.groups] == [
        (0.75, ["b"]),
        (0.5, ["a"]),
        (0.25, ["c"]),
    ]
    assert shares.expand(0.0, 1) == (["b"], 0.5)
    assert shares.expand(0.3, None) == (["b", "a"], 0.25)
    assert shares.expand(0.0, None) == (["b", "a", "c"], None)
    assert shares.expand(0.0, 1, {"b"}) == (["a"], 0.25)
    assert shares.expand(0.0, None, {"a", "b", "c"}) == ([], None)


def test_seed_shares_sort_out_a_common_seeds_holders_only_when_a_step_reaches_them() -> None:
    """The best holders are known from the seeds with the highest shares: a step that takes
    them leaves the long posting of a common seed as it is, and a step that goes down to
    that seed's share sorts it out (the same groups as a build of everything at once)."""
    common = [*range(1000), "a"]
    shares = SeedShares([(0.1, common), (0.5, ["a", "b"]), (0.3, ["b", "c"])])
    assert shares.expand(0.0, 2) == (["b", "a"], 0.3)
    assert len(shares._taken) == 2  # the two rare seeds, not the common one (its holders: the next share)
    chosen, rest = shares.expand(0.0, None)
    assert chosen[:3] == ["b", "a", "c"] and sorted(chosen[3:]) == list(range(1000)) and rest is None
    assert [(share, len(members)) for share, members, _ in shares.groups] == [
        (0.8, 1),
        (0.6, 1),
        (0.3, 1),
        (0.1, 1000),
    ]


def test_seeds_are_the_rarer_terms_and_always_the_rarest() -> None:
    assert seed_terms({"rare": 2, "common": 60, "unheld": 0}, 100, 0.2) == {"rare"}
    assert seed_terms({"common": 60, "commoner": 80}, 100, 0.2) == {"common"}
    assert seed_terms({"unheld": 0}, 100, 0.2) == set()
