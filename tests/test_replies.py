"""Rule 7: a reply typed as several messages is one hit (graphmem._scoring.reply_runs and
fold_replies, pure), and the service folds only runs that another author answers, on
every backend (the ``service`` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import Content, MemoryEntry, MemoryService, SearchRequest
from graphmem._scoring import Place, ScoredEntry, fold_replies, reply_runs

APP, USER = "replies-app", "ana"
T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)


def scored(entry_id: str, score: float) -> ScoredEntry:
    return ScoredEntry(entry_id, score, score, 0.0, (), ())


def ranked_of(*ids: str) -> list[ScoredEntry]:
    return [scored(i, 1.0 - n / 100) for n, i in enumerate(ids)]


# ---------------------------------------------------------------------------- pure rules


def test_runs_are_consecutive_messages_of_one_author_in_one_session() -> None:
    places = {
        "a1": Place("s", None, 1, "ana"),
        "a2": Place("s", None, 2, "ana"),
        "a3": Place("s", None, 3, "ana"),
        "b4": Place("s", None, 4, "ben"),
        "a5": Place("s", None, 5, "ana"),  # after ben: another run
        "a7": Place("s", None, 7, "ana"),  # a gap (position 6 not ranked): not joined to a5
        "t1": Place("t", None, 1, "ana"),  # another session
        "t2": Place("t", "p", 2, "ana"),  # another scope
        "loose": Place(None, None, 0, "ana"),  # outside any session
    }
    ranked = ranked_of("a3", "b4", "a7", "a1", "t1", "a5", "t2", "loose", "a2", "unknown")
    assert reply_runs(ranked, places) == [("a1", "a2", "a3")]
    places["a6"] = Place("s", None, 6, "ana")
    assert sorted(reply_runs([*ranked, scored("a6", 0.1)], places)) == [("a1", "a2", "a3"), ("a5", "a6", "a7")]


def test_a_reply_is_its_best_message_with_the_others_folded_in_order() -> None:
    ranked = ranked_of("x", "a2", "y", "a3", "a1")
    hits = fold_replies(ranked, [("a1", "a2", "a3")])
    assert [(h.entry_id, [f.entry_id for f in folded]) for h, folded in hits] == [
        ("x", []),
        ("a2", ["a1", "a3"]),
        ("y", []),
    ]
    assert fold_replies(ranked, []) == [(s, []) for s in ranked]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 12), st.sampled_from("ab")), unique_by=lambda t: t[:2], max_size=25), st.randoms())
def test_folding_keeps_every_ranked_entry_once_and_the_ranking_order(
    cells: list[tuple[int, int, str]], rnd: object
) -> None:
    places = {f"{s}:{p}": Place(f"s{s}", None, p, author) for s, p, author in cells}
    ids = list(places)
    rnd.shuffle(ids)  # type: ignore[attr-defined]
    ranked = ranked_of(*ids)
    runs = reply_runs(ranked, places)
    for run in runs:  # each run: one author, one session, consecutive positions
        where = [places[i] for i in run]
        assert len({(p.session_id, p.author) for p in where}) == 1 and len(run) > 1
        assert [p.position for p in where] == list(range(where[0].position, where[0].position + len(run)))
    hits = fold_replies(ranked, runs)
    shown = [s.entry_id for hit, folded in hits for s in (hit, *folded)]
    assert sorted(shown) == sorted(ids)  # nothing lost, nothing twice
    order = {i: n for n, i in enumerate(ids)}
    assert [order[h.entry_id] for h, _ in hits] == sorted(order[h.entry_id] for h, _ in hits)
    for hit, folded in hits:
        assert all(order[hit.entry_id] < order[f.entry_id] for f in folded)  # the best heads its reply


# ---------------------------------------------------------------------------- every backend


def said(text: str, author: str, minute: int) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=T0 + timedelta(minutes=minute))


CHAT = [
    said("How was the weekend?", "Ben", 0),
    said("We drove to the coast.", "Ana", 1),
    said("The kids built a sandcastle.", "Ana", 1),
    said("Then we ate grilled sardines by the harbour.", "Ana", 1),
    said("Sounds lovely, sardines are my favourite.", "Ben", 2),
    said("I cooked sardines at home last week.", "Ben", 3),
    said("Any good recipe?", "Ana", 4),
]


async def session_ids(service: MemoryService) -> list[str]:
    return [e.entry_id for e in sorted(await service.list_entries(APP, USER), key=lambda e: e.position)]


async def test_a_reply_in_several_messages_is_one_hit(service: MemoryService) -> None:
    await service.add_session(APP, USER, "chat", CHAT)
    ids = await session_ids(service)
    request = SearchRequest(query="sandcastle at the coast", app_name=APP, user_id=USER, limit=10)
    hits = (await service.search(request)).hits
    first = hits[0]
    assert first.memory.author == "Ana" and first.entry_id in ids[1:4]
    assert {h.entry_id for h in first.folded} | {first.entry_id} == set(ids[1:4])
    assert [h.memory.text for h in first.reply] == [e.text for e in CHAT[1:4]]
    assert all(h.entry_id not in ids[1:4] for h in hits[1:])

    unfolded = (await service.search(request.model_copy(update={"fold_replies": False}))).hits
    assert all(not h.folded for h in unfolded)
    assert {h.entry_id for h in unfolded} >= set(ids[1:4])
    assert [h.score for h in unfolded] == sorted((h.score for h in unfolded), reverse=True)
    assert hits[0].score == max(h.score for h in unfolded)  # folding changes no score


async def test_limit_counts_replies(service: MemoryService) -> None:
    await service.add_session(APP, USER, "chat", CHAT)
    ids = await session_ids(service)
    hits = (await service.search(SearchRequest(query="sardines", app_name=APP, user_id=USER, limit=2))).hits
    assert len(hits) == 2
    # Ben's two messages in a row are one reply (Ana answers after them); the other hit is
    # Ana's reply, with whichever of its other messages were ranked.
    replies = [[s.entry_id for s in h.reply] for h in hits]
    assert ids[4:6] in replies and any(ids[3] in r and set(r) <= set(ids[1:4]) for r in replies)
    unfolded = (
        await service.search(SearchRequest(query="sardines", app_name=APP, user_id=USER, limit=2, fold_replies=False))
    ).hits
    assert len(unfolded) == 2 and sum(len(h.folded) for h in hits) > 0
    assert {h.entry_id for h in unfolded} <= {s.entry_id for h in hits for s in h.reply}


async def test_one_authors_notes_are_never_folded(service: MemoryService) -> None:
    notes = [said(text, "Ana", n) for n, text in enumerate(["buy sardines", "sardines for the party", "call mum"])]
    await service.add_session(APP, USER, "notes", notes)
    hits = (await service.search(SearchRequest(query="sardines", app_name=APP, user_id=USER))).hits
    assert len(hits) >= 2 and all(not h.folded for h in hits)


#: Made-up words: no related word (``apple`` reads ``pear``), no typo of one another.
WORDS = [
    "blorvex", "cromtil", "dafunk", "eshkin", "fravolt", "gloomp", "hextil", "istrane", "jorbul", "kwazzle",
    "lumtrix", "mordane", "nuxolo", "ospravi", "pelquin", "quorbat", "rhystle", "sumbrak", "tavvix", "ulderon",
    "vextoran", "wimbolt",
]


async def test_a_monologue_longer_than_the_walk_is_not_folded(service: MemoryService) -> None:
    from graphmem._service import REPLY_WALK_MESSAGES

    assert REPLY_WALK_MESSAGES + 6 <= len(WORDS)
    words = WORDS[: REPLY_WALK_MESSAGES + 6]
    await service.add_session(APP, USER, "s", [said("hello there", "Ben", 0), *(said(f"I saw a {w}", "Ana", 1) for w in words)])

    async def search(query: str) -> list[tuple[str, list[str]]]:
        hits = (await service.search(SearchRequest(query=query, app_name=APP, user_id=USER, limit=5))).hits
        return [(h.memory.text, [f.memory.text for f in h.folded]) for h in hits if h.matched_tokens]

    # Next to Ben's message: a reply. Further along than the walk reaches: two hits.
    (near,) = await search(f"{words[0]} {words[1]}")
    assert {f"I saw a {w}" for w in words[:2]} <= {near[0], *near[1]}
    far = await search(f"{words[-1]} {words[-2]}")
    assert len(far) == 2 and all(not folded for _, folded in far)


@pytest.mark.parametrize("between", [0, 1, 16, 17])
async def test_the_walk_reads_as_many_of_the_authors_own_messages_as_it_says(service: MemoryService, between: int) -> None:
    """Up to REPLY_WALK_MESSAGES of the author's own messages may come between another
    author's message and the run (here: the two messages that match, all others below
    min_score)."""
    from graphmem._service import REPLY_WALK_MESSAGES

    assert REPLY_WALK_MESSAGES == 16
    filler = [said(f"filler message {n}", "Ana", 1) for n in range(between)]
    run = [said("blorvex cromtil one", "Ana", 2), said("blorvex cromtil two", "Ana", 2)]
    await service.add_session(APP, USER, "s", [said("hello there", "Ben", 0), *filler, *run])
    request = SearchRequest(query="blorvex cromtil", app_name=APP, user_id=USER, min_score=0.9)
    hits = (await service.search(request)).hits
    assert len(hits) == (1 if between <= REPLY_WALK_MESSAGES else 2)


def test_fold_replies_must_be_a_bool() -> None:
    with pytest.raises(ValueError):
        SearchRequest(query="x", app_name=APP, user_id=USER, fold_replies="no")  # type: ignore[arg-type]


async def test_the_adapter_returns_each_hit_whole(service: MemoryService) -> None:
    """MemoryServiceAdapter.search returns memories only (no hits to nest them in): a reply
    comes back whole, its messages in order, not only its best message."""
    from graphmem import MemoryServiceAdapter

    await service.add_session(APP, USER, "chat", CHAT)
    texts = [m.text for m in await MemoryServiceAdapter(service, APP, USER).search("sandcastle at the coast", limit=2)]
    reply = [e.text for e in CHAT[1:4]]
    start = texts.index(reply[0])
    assert texts[start : start + 3] == reply
    assert len(texts) > 2  # limit counted replies


async def test_a_reaction_is_no_hit_for_the_context_it_borrows(service: MemoryService) -> None:
    chat = [
        said("Did you see the northern lights in Tromsø?", "Ben", 0),
        said("lol", "Ana", 1),
        said("Yes! Green curtains dancing over the fjord all night.", "Ana", 2),
        said("I had pancakes for breakfast.", "Ben", 3),
    ]
    await service.add_session(APP, USER, "chat", chat)
    ids = await session_ids(service)
    request = SearchRequest(query="northern lights in Tromsø", app_name=APP, user_id=USER, limit=10)
    for fold in (True, False):
        hits = (await service.search(request.model_copy(update={"fold_replies": fold}))).hits
        shown = [s.entry_id for h in hits for s in h.reply]
        assert ids[1] not in shown  # "lol" borrows context from the question: not shown
        assert ids[0] in shown and ids[2] in shown  # the question, and the answer beside the reaction
    # Nor for its author's name, which every entry of theirs holds.
    named = SearchRequest(query="What did Ana say about the northern lights?", app_name=APP, user_id=USER, limit=10)
    assert ids[1] not in [s.entry_id for h in (await service.search(named)).hits for s in h.reply]
    # A reaction that matches the query itself is shown.
    hits = (await service.search(SearchRequest(query="lol", app_name=APP, user_id=USER, limit=10))).hits
    assert ids[1] in [h.entry_id for h in hits]



async def test_a_yes_after_a_question_is_shown_as_its_answer(service: MemoryService) -> None:
    await service.add_session(
        APP, USER, "chat", [said("Did you finish the quarterly report?", "Ben", 0), said("yes", "Ana", 1)]
    )
    ids = await session_ids(service)
    hits = (await service.search(SearchRequest(query="quarterly report finished", app_name=APP, user_id=USER))).hits
    assert [h.entry_id for h in hits] == ids  # "yes" borrows the question's context and is its answer


# ---------------------------------------------------------------------------- rule 12: links across reactions


def test_next_links_the_turns_on_either_side_of_reactions() -> None:
    from graphmem._service import next_pairs

    assert next_pairs([0, 1, 2, 3]) == [(0, 1), (1, 2), (2, 3)]
    assert next_pairs([0, 1, 2, 3], [False, True, True, False]) == [(0, 1), (0, 3), (1, 2), (2, 3)]
    # A gap stays a gap; a reaction at an end links nothing more; two reactions in a row too.
    assert next_pairs([0, 1, 3], [False, True, False]) == [(0, 1)]
    assert next_pairs([0, 1, 2], [True, False, True]) == [(0, 1), (1, 2)]
    assert next_pairs([0, 1], [True, True]) == [(0, 1)]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 2), st.booleans()), min_size=0, max_size=40),
    st.integers(0, 40),
)
def test_an_append_links_what_the_whole_session_would(steps: list[tuple[int, bool]], cut: int) -> None:
    """:func:`linked_after` over a session's tail and what is appended makes the links of
    :func:`next_pairs` over the whole session that reach an appended entry."""
    from graphmem._service import MAX_REACTIONS_LINKED_ACROSS, linked_after, next_pairs

    entries: list[tuple[int, bool]] = []
    position = 0
    for gap, reaction in steps:
        position += gap
        entries.append((position, reaction))
    cut = min(cut, len(entries))
    before, added = entries[:cut], entries[cut:]
    tail = before[-(MAX_REACTIONS_LINKED_ACROSS + 1) :]
    whole = next_pairs([p for p, _ in entries], [r for _, r in entries])
    expected = sorted((i - cut, j - cut) for i, j in whole if j >= cut)
    assert sorted(linked_after(tail, added)) == expected
