"""Unit tests of the pure scorer in ``graphmem._scoring``: statistics in, scores out.

Expected values are derived from the documented rules (idf, share of the query's weight,
neighbour share), never copied from a run.
"""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem._scoring import (
    CandidateStats,
    CorpusStats,
    QueryScores,
    RecencyKey,
    ScoringWeights,
    TermGroups,
    rank,
    score_candidates,
    term_weight,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def cand(
    entry_id: str,
    tokens: set[str] = frozenset(),  # type: ignore[assignment]
    entities: set[str] = frozenset(),  # type: ignore[assignment]
    neighbours: tuple[str, ...] = (),
    second_neighbours: tuple[str, ...] = (),
) -> CandidateStats:
    return CandidateStats(entry_id, frozenset(tokens), frozenset(entities), neighbours, second_neighbours)


def recency(
    entry_id: str, minutes: float = 0, position: int = 0, session: str = "s", *, refers_to_time: bool = False
) -> RecencyKey:
    return RecencyKey(T0 + timedelta(minutes=minutes), position, session, None, entry_id, refers_to_time)


# ---------------------------------------------------------------------------- term weights


@given(n=st.integers(1, 10_000), data=st.data())
def test_idf_falls_as_a_term_gets_commoner(n: int, data: st.DataObject) -> None:
    df = data.draw(st.integers(0, n - 1))
    assert term_weight(df, n) > term_weight(df + 1, n) > 0.0


@given(df=st.integers(0, 1000), n=st.integers(1, 10_000))
def test_idf_rises_with_the_number_of_entries(df: int, n: int) -> None:
    assert term_weight(df, n + 1) >= term_weight(df, n) > 0.0


def test_idf_is_positive_and_finite_at_the_edges() -> None:
    for df, n in [(0, 0), (0, 1), (1, 1), (5, 5), (7, 3), (10**6, 10**6)]:
        weight = term_weight(df, n)
        assert 0.0 < weight < math.inf
    # A degree above the count (statistics read at different moments) weighs like df == n.
    assert term_weight(7, 3) == term_weight(7, 7)


# ---------------------------------------------------------------------------- direct scores


def test_empty_query_scores_nothing() -> None:
    corpus = CorpusStats(3, {}, {})
    assert score_candidates([], [], corpus, [cand("e1", {"apple"})]) == {}


def test_full_match_scores_exactly_one() -> None:
    corpus = CorpusStats(10, {"apple": 3, "pie": 7}, {"paris": 2})
    scored = score_candidates(["apple", "pie"], ["paris"], corpus, [cand("e1", {"apple", "pie"}, {"paris"})])
    assert scored["e1"].score == 1.0
    assert scored["e1"].direct == 1.0 and scored["e1"].context == 0.0


def test_direct_score_is_the_matched_share_of_the_query_weight() -> None:
    corpus = CorpusStats(20, {"apple": 2, "pie": 10, "recipe": 15}, {})
    scored = score_candidates(["apple", "pie", "recipe"], [], corpus, [cand("e1", {"apple", "recipe"})])
    w = {t: term_weight(df, 20) for t, df in corpus.token_df.items()}
    assert scored["e1"].score == pytest.approx((w["apple"] + w["recipe"]) / sum(w.values()))
    assert scored["e1"].matched_tokens == ("apple", "recipe")


def test_rarer_terms_weigh_more() -> None:
    corpus = CorpusStats(100, {"rare": 1, "common": 60}, {})
    scored = score_candidates(["rare", "common"], [], corpus, [cand("r", {"rare"}), cand("c", {"common"})])
    assert scored["r"].score > scored["c"].score
    assert scored["r"].score + scored["c"].score == pytest.approx(1.0)


def test_unknown_query_terms_still_count_in_the_query_weight() -> None:
    """A query word no entry holds makes every match a partial one."""
    corpus = CorpusStats(10, {"apple": 2}, {})
    scored = score_candidates(["apple", "xylophone"], [], corpus, [cand("e1", {"apple"})])
    assert 0.0 < scored["e1"].score < 1.0


def test_matched_terms_outside_the_query_are_ignored() -> None:
    corpus = CorpusStats(10, {"apple": 2}, {"paris": 1})
    plain = score_candidates(["apple"], [], corpus, [cand("e1", {"apple"})])
    noisy = score_candidates(["apple"], [], corpus, [cand("e1", {"apple", "banana"}, {"paris"})])
    assert noisy["e1"].score == plain["e1"].score == 1.0
    assert noisy["e1"].matched_tokens == ("apple",) and noisy["e1"].matched_entities == ()


def test_entity_weight_scales_entity_matches() -> None:
    corpus = CorpusStats(10, {"trip": 4}, {"lisbon": 4})
    candidates = [cand("ent", entities={"lisbon"}), cand("tok", {"trip"})]
    even = score_candidates(["trip"], ["lisbon"], corpus, candidates, ScoringWeights(entity_weight=1.0))
    assert even["ent"].score == pytest.approx(even["tok"].score)
    default = score_candidates(["trip"], ["lisbon"], corpus, candidates)
    assert default["ent"].score == pytest.approx(ScoringWeights().entity_weight * default["tok"].score)
    heavy = score_candidates(["trip"], ["lisbon"], corpus, candidates, ScoringWeights(entity_weight=3.0))
    assert heavy["ent"].score == pytest.approx(3 * heavy["tok"].score)
    off = score_candidates(["trip"], ["lisbon"], corpus, candidates, ScoringWeights(entity_weight=0.0))
    assert "ent" not in off and off["tok"].score == 1.0


def test_a_query_entity_the_graph_lacks_changes_nothing() -> None:
    """Query entities are candidate names; one that names no Entity node is not part of the query."""
    corpus = CorpusStats(10, {"trip": 4}, {"lisbon": 0})
    with_unknown = score_candidates(["trip"], ["lisbon"], corpus, [cand("tok", {"trip"})])
    without = score_candidates(["trip"], [], corpus, [cand("tok", {"trip"})])
    assert with_unknown["tok"].score == without["tok"].score == 1.0


# ---------------------------------------------------------------------------- groups


def test_an_entry_naming_any_name_of_a_group_matches_the_group() -> None:
    """Rule "Groups": the query's "aurora" stands for its group; an entry naming
    "pastelaria aurora" matches it as fully as one naming "aurora"."""
    corpus = CorpusStats(20, {"cake": 5}, {"aurora": 2, "pastelaria aurora": 3})
    groups = TermGroups(entities={"aurora": "aurora", "pastelaria aurora": "aurora"})
    candidates = [cand("short", {"cake"}, {"aurora"}), cand("long", {"cake"}, {"pastelaria aurora"})]
    scored = score_candidates(["cake"], ["aurora", "pastelaria aurora"], corpus, candidates, groups=groups)
    assert scored["short"].score == scored["long"].score == 1.0
    assert scored["long"].matched_entities == ("pastelaria aurora",)


def test_a_group_weighs_as_its_most_frequent_member_and_counts_once() -> None:
    corpus = CorpusStats(20, {"cake": 5}, {"aurora": 2, "pastelaria aurora": 3})
    groups = TermGroups(entities={"aurora": "aurora", "pastelaria aurora": "aurora"})
    both = cand("both", entities={"aurora", "pastelaria aurora"})
    scored = score_candidates(["cake"], ["aurora", "pastelaria aurora"], corpus, [both], groups=groups)
    group = ScoringWeights().entity_weight * term_weight(3, 20)
    assert scored["both"].score == pytest.approx(group / (term_weight(5, 20) + group))


def test_a_member_no_entry_holds_weighs_nothing_unless_it_is_the_querys_own() -> None:
    corpus = CorpusStats(20, {"katharine": 2, "katherine": 0, "cake": 5}, {})
    alone = score_candidates(["katharine", "cake"], [], corpus, [cand("e", {"katharine", "cake"})])
    groups = TermGroups(tokens={"katharine": "katharine", "katherine": "katharine"})
    grouped = score_candidates(
        ["katharine", "katherine", "cake"], [], corpus, [cand("e", {"katharine", "cake"})], groups=groups
    )
    assert grouped["e"].score == alone["e"].score == 1.0


def test_terms_of_no_group_score_as_without_groups() -> None:
    corpus = CorpusStats(20, {"apple": 2, "pie": 10}, {"paris": 3, "lisbon": 4})
    candidates = [cand("a", {"apple"}, {"paris"}), cand("b", {"pie"}, {"lisbon"}, neighbours=("a",))]
    plain = score_candidates(["apple", "pie"], ["paris", "lisbon"], corpus, candidates)
    grouped = score_candidates(
        ["apple", "pie"], ["paris", "lisbon"], corpus, candidates, groups=TermGroups(entities={"x": "x", "y": "x"})
    )
    assert plain == grouped


# ---------------------------------------------------------------------------- neighbour share


def test_a_neighbour_without_matches_takes_a_share_of_the_best_match() -> None:
    corpus = CorpusStats(10, {"sister": 2, "live": 5}, {})
    scored = score_candidates(
        ["sister", "live"], [], corpus, [cand("question", {"sister", "live"}, neighbours=("answer",))], ScoringWeights(context_share=0.4)
    )
    answer = scored["answer"]
    assert answer.direct == 0.0 and answer.matched_tokens == () and answer.matched_entities == ()
    assert answer.score == pytest.approx(0.4 * scored["question"].direct)
    assert answer.context == pytest.approx(answer.score)


def test_neighbour_share_is_taken_from_the_best_neighbour_only() -> None:
    corpus = CorpusStats(10, {"a": 2, "b": 2, "c": 2}, {})
    weights = ScoringWeights(context_share=0.5)
    candidates = [cand("left", {"a"}, neighbours=("mid",)), cand("right", {"a", "b"}, neighbours=("mid",)), cand("mid", {"c"})]
    scored = score_candidates(["a", "b", "c"], [], corpus, candidates, weights)
    own, best = scored["mid"].direct, scored["right"].direct
    assert best > scored["left"].direct
    assert scored["mid"].score == pytest.approx(own + 0.5 * (1 - own) * best)


def test_neighbour_links_count_both_ways_and_not_to_oneself() -> None:
    corpus = CorpusStats(10, {"a": 2}, {})
    weights = ScoringWeights(context_share=0.5)
    # The link is declared by x in one case and by y in the other: y is x's neighbour either way.
    declared_by_x = score_candidates(["a"], [], corpus, [cand("x", {"a"}, neighbours=("y",))], weights)
    declared_by_y = score_candidates(["a"], [], corpus, [cand("x", {"a"}), cand("y", neighbours=("x",))], weights)
    for scored in (declared_by_x, declared_by_y):
        assert scored.keys() == {"x", "y"}
        assert scored["x"].score == 1.0  # y has no direct score to share back
        assert scored["y"].score == pytest.approx(0.5 * scored["x"].direct)
    self_loop = score_candidates(["a"], [], corpus, [cand("x", {"a"}, neighbours=("x",))], weights)
    assert self_loop.keys() == {"x"} and self_loop["x"].context == 0.0


def test_two_steps_away_counts_less_than_one_step() -> None:
    corpus = CorpusStats(10, {"a": 2}, {})
    weights = ScoringWeights(context_share=0.5, second_neighbour_decay=0.6)
    candidates = [cand("q", {"a"}, neighbours=("near",), second_neighbours=("far",))]
    scored = score_candidates(["a"], [], corpus, candidates, weights)
    assert scored["near"].score == pytest.approx(0.5 * 1.0)
    assert scored["far"].score == pytest.approx(0.5 * 0.6 * 1.0)
    assert scored["q"].score > scored["near"].score > scored["far"].score > 0.0
    # Without decay budget the second step recalls nothing.
    flat = score_candidates(["a"], [], corpus, candidates, ScoringWeights(second_neighbour_decay=0.0))
    assert "far" not in flat and "near" in flat


def test_zero_context_share_recalls_no_context_hits() -> None:
    corpus = CorpusStats(10, {"a": 2}, {})
    scored = score_candidates(["a"], [], corpus, [cand("x", {"a"}, neighbours=("y",))], ScoringWeights(context_share=0.0))
    assert scored.keys() == {"x"}


# ---------------------------------------------------------------------------- properties

terms = st.sampled_from([f"t{i}" for i in range(8)])
entity_names = st.sampled_from([f"e{i}" for i in range(4)])
ids = st.sampled_from([f"id{i}" for i in range(10)])


@st.composite
def scoring_inputs(draw: st.DrawFn) -> tuple[list[str], list[str], CorpusStats, list[CandidateStats], ScoringWeights]:
    query_tokens = draw(st.lists(terms, max_size=5))
    query_entities = draw(st.lists(entity_names, max_size=3))
    n = draw(st.integers(0, 50))
    token_df = {t: draw(st.integers(0, n + 2)) for t in set(query_tokens)}
    entity_df = {e: draw(st.integers(0, n + 2)) for e in set(query_entities)}
    entry_ids = draw(st.lists(ids, unique=True, max_size=8))
    candidates = [
        CandidateStats(
            i,
            frozenset(draw(st.lists(terms, max_size=5))),
            frozenset(draw(st.lists(entity_names, max_size=3))),
            tuple(draw(st.lists(ids, max_size=3))),
            tuple(draw(st.lists(ids, max_size=3))),
        )
        for i in entry_ids
    ]
    weights = ScoringWeights(
        entity_weight=draw(st.floats(0.0, 5.0)),
        context_share=draw(st.floats(0.0, 1.0)),
        second_neighbour_decay=draw(st.floats(0.0, 1.0)),
    )
    return query_tokens, query_entities, CorpusStats(n, token_df, entity_df), candidates, weights


@settings(max_examples=200)
@given(inputs=scoring_inputs())
def test_scores_stay_in_the_unit_interval(inputs: tuple) -> None:  # type: ignore[type-arg]
    scored = score_candidates(*inputs)
    for s in scored.values():
        assert 0.0 < s.score <= 1.0
        assert 0.0 <= s.direct <= s.score
        assert s.context == pytest.approx(s.score - s.direct)


@settings(max_examples=200)
@given(inputs=scoring_inputs(), seed=st.integers(0, 2**32 - 1))
def test_scores_do_not_depend_on_the_order_of_inputs(inputs: tuple, seed: int) -> None:  # type: ignore[type-arg]
    query_tokens, query_entities, corpus, candidates, weights = inputs
    shuffle = random.Random(seed).sample
    reordered = (
        shuffle(query_tokens, len(query_tokens)),
        shuffle(query_entities, len(query_entities)),
        CorpusStats(
            corpus.entry_count,
            dict(shuffle(list(corpus.token_df.items()), len(corpus.token_df))),
            dict(shuffle(list(corpus.entity_df.items()), len(corpus.entity_df))),
        ),
        [
            CandidateStats(
                c.entry_id,
                c.matched_tokens,
                c.matched_entities,
                tuple(shuffle(list(c.neighbour_ids), len(c.neighbour_ids))),
                tuple(shuffle(list(c.second_neighbour_ids), len(c.second_neighbour_ids))),
            )
            for c in shuffle(candidates, len(candidates))
        ],
        weights,
    )
    assert score_candidates(*reordered) == score_candidates(*inputs)  # equal to the last bit


def test_inputs_are_not_changed() -> None:
    token_df = {"a": 1, "b": 3}
    candidates = [cand("x", {"a"}, neighbours=("y",)), cand("y", {"b"})]
    snapshot = (dict(token_df), list(candidates))
    score_candidates(["a", "b"], [], CorpusStats(5, token_df, {}), candidates)
    assert (token_df, candidates) == snapshot


# ---------------------------------------------------------------------------- ranking


def scored_equally(*entry_ids: str) -> dict:  # type: ignore[type-arg]
    corpus = CorpusStats(10, {"a": 3}, {})
    return score_candidates(["a"], [], corpus, [cand(i, {"a"}) for i in entry_ids])


def test_ties_go_to_the_newer_entry() -> None:
    scored = scored_equally("old", "new", "middle")
    keys = {"old": recency("old", 0), "new": recency("new", 60), "middle": recency("middle", 30)}
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["new", "middle", "old"]


@pytest.mark.parametrize("year", [2500, 9000, 9999])
def test_ties_go_to_the_newer_entry_by_a_microsecond_in_any_year(year: int) -> None:
    # A float of seconds since 1970 holds no microseconds there: the older entry, at the
    # later position and with the smaller id, would take the tie.
    newer_at = datetime(year, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)
    scored = scored_equally("a-older", "b-newer")
    keys = {
        "a-older": RecencyKey(newer_at - timedelta(microseconds=1), 1, "s", None, "a-older"),
        "b-newer": RecencyKey(newer_at, 0, "s", None, "b-newer"),
    }
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["b-newer", "a-older"]


def test_ties_go_to_an_entry_that_refers_to_a_time_before_a_newer_one() -> None:
    scored = scored_equally("old_dated", "new", "older_dated")
    keys = {
        "old_dated": recency("old_dated", 30, refers_to_time=True),
        "new": recency("new", 60),
        "older_dated": recency("older_dated", 0, refers_to_time=True),
    }
    # Dated ones first (newer first among them), then the rest by recency.
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["old_dated", "older_dated", "new"]
    assert [s.entry_id for s in rank(scored, keys, limit=1)] == ["old_dated"]


def test_a_time_reference_never_beats_a_better_score() -> None:
    corpus = CorpusStats(10, {"a": 3, "b": 3}, {})
    scored = score_candidates(["a", "b"], [], corpus, [cand("full", {"a", "b"}), cand("half_dated", {"a"})])
    keys = {"full": recency("full", 0), "half_dated": recency("half_dated", 600, refers_to_time=True)}
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["full", "half_dated"]
    assert scored["half_dated"].score < scored["full"].score  # the score itself is untouched


def test_equal_times_go_to_the_later_position() -> None:
    scored = scored_equally("first", "second")
    keys = {"first": recency("first", 5, position=0), "second": recency("second", 5, position=1)}
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["second", "first"]


def test_full_ties_have_a_stable_order() -> None:
    scored = scored_equally("b", "a", "c")
    keys = {i: recency(i) for i in ("a", "b", "c")}
    orders = {tuple(s.entry_id for s in rank(dict(reversed(list(scored.items()))), keys, limit=10)), tuple(s.entry_id for s in rank(scored, keys, limit=10))}
    assert len(orders) == 1


def test_a_better_score_beats_a_newer_entry() -> None:
    corpus = CorpusStats(10, {"a": 3, "b": 3}, {})
    scored = score_candidates(["a", "b"], [], corpus, [cand("old_full", {"a", "b"}), cand("new_half", {"a"})])
    keys = {"old_full": recency("old_full", 0), "new_half": recency("new_half", 600)}
    assert [s.entry_id for s in rank(scored, keys, limit=10)] == ["old_full", "new_half"]


def test_rank_applies_limit_min_score_and_scope() -> None:
    corpus = CorpusStats(10, {"a": 2, "b": 8}, {})
    scored = score_candidates(["a", "b"], [], corpus, [cand("both", {"a", "b"}), cand("a_only", {"a"}), cand("b_only", {"b"}), cand("hidden", {"a", "b"})])
    keys = {i: recency(i) for i in ("both", "a_only", "b_only")}  # "hidden" is out of scope
    ranked = rank(scored, keys, limit=10)
    assert [s.entry_id for s in ranked] == ["both", "a_only", "b_only"]
    assert [s.entry_id for s in rank(scored, keys, limit=2)] == ["both", "a_only"]
    threshold = scored["a_only"].score
    assert [s.entry_id for s in rank(scored, keys, limit=10, min_score=threshold)] == ["both", "a_only"]
    assert [s.entry_id for s in rank(scored, keys, limit=10, min_score=1.0)] == ["both"]


# ---------------------------------------------------------------------- speaker focus


def said_by(entry_id: str, tokens: set[str], author: str, neighbours: tuple[str, ...] = ()) -> CandidateStats:
    return CandidateStats(entry_id, frozenset(tokens), frozenset(), neighbours, (), author=author)


def test_a_named_speakers_own_entries_outrank_others_saying_the_same() -> None:
    corpus = CorpusStats(100, {"melanie": 50, "hobby": 4}, {}, speaker_tokens=frozenset({"melanie"}))
    weights = ScoringWeights(other_speaker_factor=0.75)
    scored = score_candidates(
        ["melanie", "hobby"],
        (),
        corpus,
        [said_by("hers", {"melanie", "hobby"}, "Melanie"), said_by("about-her", {"melanie", "hobby"}, "Caroline")],
        weights,
    )
    assert scored["hers"].score == pytest.approx(1.0)
    assert scored["about-her"].score == pytest.approx(0.75)
    assert scored["hers"].by_named_speaker is True and scored["about-her"].by_named_speaker is False


def test_no_focus_when_the_query_names_no_speaker() -> None:
    # "melanie" is a word here but not a speaker's name: no entry is weighed down.
    corpus = CorpusStats(100, {"melanie": 50, "hobby": 4}, {})
    scored = score_candidates(
        ["melanie", "hobby"], (), corpus,
        [said_by("a", {"melanie", "hobby"}, "Melanie"), said_by("b", {"melanie", "hobby"}, "Caroline")],
    )
    assert scored["a"].score == pytest.approx(scored["b"].score) == pytest.approx(1.0)
    assert scored["a"].by_named_speaker is None


def test_two_named_speakers_keep_both_speakers_entries() -> None:
    corpus = CorpusStats(100, {"ana": 40, "lee": 40, "city": 4}, {}, speaker_tokens=frozenset({"ana", "lee"}))
    scored = score_candidates(
        ["ana", "lee", "city"], (), corpus,
        [said_by("a", {"ana", "city"}, "Ana"), said_by("l", {"lee", "city"}, "Lee"), said_by("x", {"city"}, "Sam")],
    )
    assert scored["a"].score == pytest.approx(scored["l"].score)
    assert scored["x"].score < scored["a"].score * 0.76


def test_context_only_entries_are_weighed_as_another_speakers() -> None:
    # The answer holds no query term, so not "melanie", a token of every entry Melanie
    # said: it is someone else's turn and counts 0.75, like the question it follows.
    corpus = CorpusStats(100, {"melanie": 50, "hobby": 4}, {}, speaker_tokens=frozenset({"melanie"}))
    question = said_by("q", {"hobby"}, "Caroline", neighbours=("answer",))
    scored = score_candidates(["melanie", "hobby"], (), corpus, [question])
    question_share = scored["q"].score
    assert scored["q"].by_named_speaker is False and scored["q"].direct == pytest.approx(question_share)
    assert scored["answer"].by_named_speaker is False
    # context: the question's direct score before weighing (0.75 of it is question_share).
    assert scored["answer"].score == pytest.approx(ScoringWeights().context_share * question_share)
    # Without a named speaker, the same answer is not weighed.
    plain = score_candidates(["hobby"], (), CorpusStats(100, {"hobby": 4}, {}), [question])
    assert plain["answer"].by_named_speaker is None
    assert plain["answer"].score == pytest.approx(ScoringWeights().context_share * plain["q"].score)


def test_a_named_speakers_answer_after_anothers_question_outranks_the_others_answer() -> None:
    # Kate's own turn that shares only her name beats a context-only turn of Ben's with the
    # same neighbour: the question is about what Kate said.
    corpus = CorpusStats(100, {"kate": 50, "hobby": 4}, {}, speaker_tokens=frozenset({"kate"}))
    ask = said_by("ask", {"hobby"}, "Ann", neighbours=("kates", "bens"))
    kates = said_by("kates", {"kate"}, "Kate", neighbours=("ask",))
    scored = score_candidates(["kate", "hobby"], (), corpus, [ask, kates])
    assert scored["kates"].score > scored["bens"].score
    assert scored["kates"].by_named_speaker is True and scored["bens"].by_named_speaker is False


def test_the_speaker_asked_about_in_the_first_person_alone_matches_nothing_asked() -> None:
    # "Which dog did I adopt?" in an assistant's memory: "user" is read as a term (graphmem._asker).
    corpus = CorpusStats(
        100, {"user": 50, "dog": 4}, {}, speaker_tokens=frozenset({"user"}), asked_about=frozenset({"user"})
    )
    told = said_by("told", {"user", "dog"}, "user", neighbours=("answer",))
    echo = said_by("echo", {"dog"}, "helper")
    answer = said_by("answer", {"user"}, "user", neighbours=("told",))  # the user's reply after it
    lunch = said_by("lunch", {"user", "lunch"}, "user")  # a word the query does not weigh
    scored = score_candidates(["user", "dog"], (), corpus, [told, echo, answer, lunch])
    assert scored["told"].score == pytest.approx(1.0) and scored["told"].by_named_speaker is True
    assert scored["echo"].by_named_speaker is False and scored["echo"].score < scored["told"].score * 0.76
    assert "lunch" not in scored  # only the user's name: nothing asked
    # The user's reply is recalled as context, as the user's: not weighed down.
    assert scored["answer"].direct == 0.0 and scored["answer"].by_named_speaker is True
    assert scored["answer"].score == pytest.approx(ScoringWeights().context_share * scored["told"].direct)
    # Named as written ("What dog did user adopt?"), the name is a match of its own.
    named = CorpusStats(100, {"user": 50, "dog": 4}, {}, speaker_tokens=frozenset({"user"}))
    assert score_candidates(["user", "dog"], (), named, [told, echo, answer, lunch])["lunch"].score > 0


def test_the_context_lender_is_the_best_then_the_nearer_then_the_smaller_id() -> None:
    weights = ScoringWeights(second_neighbour_decay=0.5)
    far = CandidateStats("far", frozenset({"x"}), frozenset(), ("m",), ("hit",))
    near = CandidateStats("near", frozenset({"x"}), frozenset(), ("hit",), ())
    twin = CandidateStats("a-twin", frozenset({"x"}), frozenset(), ("hit2",), ())
    other = CandidateStats("b-twin", frozenset({"x"}), frozenset(), ("hit2",), ())
    for order in ([far, near, twin, other], [other, twin, near, far]):
        scores = QueryScores(
            {}, {"far": 1.0, "near": 0.5, "a-twin": 0.4, "b-twin": 0.4}, {c.entry_id: c for c in order}, {}, {},
            weights=weights,
        )
        # far lends 1.0 * 0.5 two steps away, near 0.5 one step away: a tie, the nearer wins;
        # equal lenders one step away: the smaller id, whatever order the backend gave.
        assert scores.context_lenders(["hit", "hit2", "m", "nobody"]) == {"hit": "near", "hit2": "a-twin", "m": "far"}


def test_equal_context_lenders_tie_to_the_earlier_turn_before_the_smaller_id() -> None:
    # The question (position 4) and a repeat after the answer (position 6) lend the answer
    # (position 5) the same share: the earlier turn lends, whatever the ids (random ones
    # from add_session) and the order the backend gave them in; the id decides only
    # between lenders without a position.
    question = CandidateStats("z-question", frozenset({"x"}), frozenset(), ("answer",), (), position=4)
    repeat = CandidateStats("a-repeat", frozenset({"x"}), frozenset(), ("answer",), (), position=6)
    answer = CandidateStats("answer", frozenset(), frozenset(), ("z-question", "a-repeat"), (), position=5)
    direct = {"z-question": 1.0, "a-repeat": 1.0, "answer": 0.0}
    for order in ([question, repeat, answer], [answer, repeat, question]):
        gathered = QueryScores({}, direct, {c.entry_id: c for c in order}, {}, {})
        assert gathered.context_lenders(["answer"]) == {"answer": "z-question"}
        scan = QueryScores({}, direct, {c.entry_id: c for c in order if c is not answer}, {}, {})
        assert scan.context_lenders(["answer"]) == {"answer": "z-question"}
    unplaced = CandidateStats("b-unplaced", frozenset({"x"}), frozenset(), ("answer",), ())
    with_unplaced = QueryScores({}, {**direct, "b-unplaced": 1.0}, {"z-question": question, "b-unplaced": unplaced}, {}, {})
    assert with_unplaced.context_lenders(["answer"]) == {"answer": "z-question"}


def test_a_gathered_hit_finds_its_lender_among_its_own_neighbours() -> None:
    # "hit" is a candidate itself (gathered, matching nothing): its own neighbour lists name
    # the lenders, with the same order of preference as the scan for hits never gathered.
    weights = ScoringWeights(second_neighbour_decay=0.5)
    hit = CandidateStats("hit", frozenset(), frozenset(), ("near", "b"), ("far",))
    near = CandidateStats("near", frozenset({"x"}), frozenset(), ("hit",), ())
    b = CandidateStats("b", frozenset({"x"}), frozenset(), ("hit",), ())
    far = CandidateStats("far", frozenset({"x"}), frozenset(), (), ("hit",))
    direct = {"hit": 0.0, "near": 0.5, "b": 0.5, "far": 1.0}
    scores = QueryScores({}, direct, {c.entry_id: c for c in (hit, near, b, far)}, {}, {}, weights=weights)
    assert scores.context_lenders(["hit"]) == {"hit": "b"}  # 0.5 one step (tie: smaller id) = 1.0 two steps
    # Without "hit" among the candidates the scan over the others names the same lender.
    scan = QueryScores({}, direct, {c.entry_id: c for c in (near, b, far)}, {}, {}, weights=weights)
    assert scan.context_lenders(["hit"]) == {"hit": "b"}


# ---------------------------------------------------------------------------- related words


def test_a_related_word_weighs_half_its_similarity_times_the_smaller_idf() -> None:
    """Rule "Related words": "dog" read for "pet" (similarity 0.8) weighs
    0.5 * 0.8 * min(idf(dog), idf(pet)); the query's weight counts "pet" only."""
    corpus = CorpusStats(40, {"pet": 2, "dog": 6, "kate": 20}, {})
    groups = TermGroups(tokens={"pet": "pet", "dog": "pet"}, similarity={"dog": 0.8})
    scored = score_candidates(
        ["pet", "kate", "dog"], [], corpus, [cand("dog", {"dog", "kate"}), cand("pet", {"pet", "kate"})], groups=groups
    )
    pet, dog, kate = term_weight(2, 40), term_weight(6, 40), term_weight(20, 40)
    related = 0.5 * 0.8 * min(dog, pet)
    assert scored["dog"].score == pytest.approx((related + kate) / (pet + kate))
    assert scored["pet"].score == pytest.approx(1.0)
    assert scored["dog"].matched_tokens == ("dog", "kate")


def test_a_related_word_never_weighs_more_than_the_word() -> None:
    # "pet" is common, "corgi" rare: the related word is capped at the word's idf.
    corpus = CorpusStats(40, {"pet": 20, "corgi": 1}, {})
    groups = TermGroups(tokens={"pet": "pet", "corgi": "pet"}, similarity={"corgi": 1.0})
    scored = score_candidates(["pet", "corgi"], [], corpus, [cand("c", {"corgi"})], groups=groups)
    assert scored["c"].score == pytest.approx(0.5)


def test_an_entry_holding_the_word_and_a_related_word_holds_the_group_once_at_its_best() -> None:
    corpus = CorpusStats(40, {"pet": 3, "dog": 3, "cat": 5, "kate": 20}, {})
    groups = TermGroups(tokens={"pet": "pet", "dog": "pet", "cat": "pet"}, similarity={"dog": 0.8, "cat": 0.7})
    query = ["pet", "kate", "dog", "cat"]
    candidates = [cand("all", {"pet", "dog", "cat"}), cand("two", {"dog", "cat"}), cand("dog", {"dog"})]
    scored = score_candidates(query, [], corpus, candidates, groups=groups)
    total = term_weight(3, 40) + term_weight(20, 40)
    assert scored["all"].score == pytest.approx(term_weight(3, 40) / total)
    assert scored["two"].score == pytest.approx(scored["dog"].score)  # dog (0.8) beats cat (0.7)
    assert scored["dog"].score == pytest.approx(0.5 * 0.8 * term_weight(3, 40) / total)


def test_related_words_weigh_nothing_when_their_weight_is_zero() -> None:
    assert ScoringWeights().related_words is True  # on by default
    corpus = CorpusStats(40, {"pet": 2, "dog": 6}, {})
    groups = TermGroups(tokens={"pet": "pet", "dog": "pet"}, similarity={"dog": 0.8})
    scored = score_candidates(
        ["pet", "dog"], [], corpus, [cand("d", {"dog"})], ScoringWeights(related_word_weight=0.0), groups=groups
    )
    assert "d" not in scored


def test_an_entry_read_back_knows_whether_it_refers_to_a_time() -> None:
    """Rule 6 reads ``time_refs`` as stored; an entry written before they were recorded
    (no property) has them resolved from its text, as the networkx store does."""
    from graphmem.backends._graph_model import stored_entry_from_properties

    props = {
        "id": "e1", "session_id": "s", "project_id": None, "position": 0, "author": "Ann", "role": "user",
        "timestamp": "2024-05-01T12:00:00+00:00", "language": "en",
    }
    said = {**props, "text": "We went hiking yesterday."}
    assert stored_entry_from_properties({**said, "time_refs": ["2024-04-30/2024-04-30"]}).refers_to_time
    assert not stored_entry_from_properties({**said, "time_refs": []}).refers_to_time  # as stored
    assert stored_entry_from_properties(said).refers_to_time  # not stored: resolved
    assert not stored_entry_from_properties({**props, "text": "Hiking is great."}).refers_to_time
