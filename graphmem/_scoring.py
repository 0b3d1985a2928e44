"""The scorer: a pure function from graph statistics to scores.

Backends only gather statistics from their graph (how many entries the user has, how
many entries hold each query token or entity — the degree of its node — and, for every
entry that shares something with the query, what it shares and which entries are its
``NEXT`` neighbours). Everything else happens here, once, so both backends rank the same
data identically.

The rules:

1. A query token's weight is its inverse document frequency among the user's entries,
   ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the user's entry count and
   ``df`` the degree of the token node. A query entity (a query span that names an
   ``Entity`` node of the user's graph; spans naming none are ignored) weighs the same
   way, times ``entity_weight``.
2. An entry's *direct* score is the weight of what it shares with the query divided by
   the weight of the whole query: the share of the query the entry itself matches, in
   [0, 1].
3. An entry also takes a share of its conversation context. ``context`` is the best
   direct score among the entries one ``NEXT`` step away (the turns just before and after
   it) and, times ``second_neighbour_decay``, among those two steps away; then
   ``score = direct + context_share * (1 - direct) * context``. This stays in [0, 1], a
   full match still scores 1, and an answer turn that shares no word with the question
   ("Where does she live?" / "Lisbon.") is still found next to the turn that does. Two
   steps, because in dialogue the answer often comes after an acknowledgement or a
   follow-up question.
4. Ties go to the newer entry (timestamp, then position in its session), then to a stable
   order of session and entry ids.

Pruning. A term held by many of the user's entries (the speaker's name is on half of them)
weighs little but would make a search read half the graph. So a search may first gather
only from its *seed* terms (the rarer ones) and read the others — the *weak* terms, whose
weights add up to the share ``w`` of the query — only on entries within two ``NEXT`` steps
of a seed holder. Let ``b = w + share * (1 - w) * w``. An entry holding no seed term has a
direct score of at most ``w``; so if its score is above ``b``, some entry within two steps
lends it more than ``w``, and that entry holds a seed term. Then it was gathered, with its
direct score in full, and the lender too; any entry it was not gathered with lends at most
``w``, less than the lender: its score is exact. A seed holder is exact as well (everything
within two steps of it was gathered). So every score above ``b`` is exact, and when the
``limit``-th best score is above ``b`` the pruned answer is the full one
(:meth:`QueryScores.decides`); otherwise the search gathers again from every term.

Sums use :func:`math.fsum`, so the order in which a backend returns statistics cannot
change a score in its last bit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "CandidateStats",
    "CorpusStats",
    "ScoredEntry",
    "ScoringWeights",
    "rank",
    "score_candidates",
    "QueryScores",
    "score_query",
    "term_weight",
]


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Tunable constants of the scorer (general, not fitted to one data set)."""

    #: An entity's words are tokens already; a shared entity adds half their weight again.
    entity_weight: float = 0.5
    #: How much of the headroom ``1 - direct`` the best neighbour's match can fill.
    context_share: float = 0.8
    #: A neighbour two NEXT steps away counts this much of one a step away.
    second_neighbour_decay: float = 0.7


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Degrees of the query's token and entity nodes in the user's graph."""

    entry_count: int
    token_df: Mapping[str, int] = field(default_factory=dict)
    entity_df: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CandidateStats:
    """An in-scope entry that shares at least one query token or entity.

    ``neighbour_ids`` are the entries one ``NEXT`` step away (either direction),
    ``second_neighbour_ids`` those exactly two steps away.
    """

    entry_id: str
    matched_tokens: frozenset[str]
    matched_entities: frozenset[str]
    neighbour_ids: tuple[str, ...] = ()
    second_neighbour_ids: tuple[str, ...] = ()
    project_id: str | None = None


@dataclass(frozen=True, slots=True)
class ScoredEntry:
    entry_id: str
    score: float
    direct: float
    context: float
    matched_tokens: tuple[str, ...]
    matched_entities: tuple[str, ...]


def term_weight(df: int, entry_count: int) -> float:
    """Inverse document frequency of a term held by ``df`` of ``entry_count`` entries."""
    n = max(entry_count, df)
    return math.log1p((n - df + 0.5) / (df + 0.5))


def _weights(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    weights: ScoringWeights,
) -> tuple[dict[str, float], dict[str, float], float]:
    token_w = {
        t: term_weight(corpus.token_df.get(t, 0), corpus.entry_count) for t in set(query_tokens)
    }
    # A query entity is a span linked to an Entity node: one the graph lacks names nothing.
    entity_w = {
        e: weights.entity_weight * term_weight(corpus.entity_df[e], corpus.entry_count)
        for e in set(query_entities)
        if corpus.entity_df.get(e, 0) > 0
    }
    return token_w, entity_w, math.fsum([*token_w.values(), *entity_w.values()])


def _scores(
    token_w: Mapping[str, float],
    entity_w: Mapping[str, float],
    total: float,
    candidates: Sequence[CandidateStats],
    weights: ScoringWeights,
) -> tuple[dict[str, float], dict[str, float]]:
    """Direct and final scores by entry id (final only where it is above 0)."""
    direct: dict[str, float] = {}
    for cand in candidates:
        held = [token_w[t] for t in cand.matched_tokens if t in token_w]
        if cand.matched_entities:
            held.extend(entity_w[e] for e in cand.matched_entities if e in entity_w)
        direct[cand.entry_id] = min(1.0, math.fsum(held) / total) if held else 0.0
    # NEXT links are symmetric: every link a candidate declares carries score both ways,
    # so each entry (candidate or not) gets the best score among its neighbours.
    context: dict[str, float] = {}
    decay = weights.second_neighbour_decay
    for cand in candidates:
        me = cand.entry_id
        own = direct[me]
        far = own * decay
        best = context.get(me, 0.0)
        for other in cand.neighbour_ids:
            if other != me:
                if own > context.get(other, 0.0):
                    context[other] = own
                theirs = direct.get(other, 0.0)
                if theirs > best:
                    best = theirs
        for other in cand.second_neighbour_ids:
            if other != me:
                if far > context.get(other, 0.0):
                    context[other] = far
                theirs = direct.get(other, 0.0) * decay
                if theirs > best:
                    best = theirs
        if best > 0.0:
            context[me] = best
    share = weights.context_share
    final: dict[str, float] = {}
    for entry_id in direct.keys() | context.keys():
        own = direct.get(entry_id, 0.0)
        score = min(1.0, own + share * (1.0 - own) * context.get(entry_id, 0.0))
        if score > 0.0:
            final[entry_id] = score
    return direct, final


def _scored_entry(
    entry_id: str,
    score: float,
    direct: Mapping[str, float],
    by_id: Mapping[str, CandidateStats],
    token_w: Mapping[str, float],
    entity_w: Mapping[str, float],
) -> ScoredEntry:
    own = direct.get(entry_id, 0.0)
    cand = by_id.get(entry_id)
    return ScoredEntry(
        entry_id=entry_id,
        score=score,
        direct=own,
        context=score - own,
        matched_tokens=tuple(sorted(t for t in cand.matched_tokens if t in token_w)) if cand else (),
        matched_entities=tuple(sorted(e for e in cand.matched_entities if e in entity_w)) if cand else (),
    )


def score_candidates(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    candidates: Sequence[CandidateStats],
    weights: ScoringWeights = ScoringWeights(),
) -> dict[str, ScoredEntry]:
    """Score every candidate and every neighbour of a candidate.

    Args:
        query_tokens: the query's tokens.
        query_entities: the query's entity names.
        corpus: entry count and document frequencies of the query terms.
        candidates: in-scope entries sharing a query term, with their neighbours.
        weights: the scorer's constants.

    Returns:
        Scores by entry id, for candidates and for their neighbours (context hits).
    """
    token_w, entity_w, total = _weights(query_tokens, query_entities, corpus, weights)
    if total <= 0.0:
        return {}
    direct, final = _scores(token_w, entity_w, total, candidates, weights)
    by_id = {c.entry_id: c for c in candidates}
    return {
        entry_id: _scored_entry(entry_id, score, direct, by_id, token_w, entity_w)
        for entry_id, score in final.items()
    }


#: Scores are compared rounded to 12 digits (ties); bounds must clear the cut by more.
_TIE_MARGIN = 1e-9


@dataclass(frozen=True, slots=True)
class QueryScores:
    """The scores of one query over its candidates and their neighbours.

    Ranking needs each entry's recency only to break ties, so a search scores everything
    first, then fetches only the :meth:`contenders` and ranks those with :func:`rank`.
    """

    final: Mapping[str, float]
    direct: Mapping[str, float]
    candidates: Mapping[str, CandidateStats]
    token_weights: Mapping[str, float]
    entity_weights: Mapping[str, float]
    #: Share of the query's weight held by weak terms (0 when every term was a seed).
    weak_share: float = 0.0
    #: Every score above this is exact (pruned gathering; see "Pruning" above).
    exact_above: float = 0.0

    def decides(self, limit: int) -> bool:
        """Whether the first ``limit`` entries (ties included) are certain: always after a
        full gathering; after a pruned one, when the ``limit``-th best score is above
        :attr:`exact_above`."""
        if self.weak_share <= 0.0:
            return True
        if len(self.final) < limit:
            return False
        return heapq.nlargest(limit, self.final.values())[-1] - _TIE_MARGIN > self.exact_above

    def contenders(self, limit: int, min_score: float | None = None) -> list[str]:
        """The ids that can make the first ``limit``: the ``limit`` best scores (at least
        ``min_score``) and every id tied with the last of them."""
        floor = 0.0 if min_score is None else min_score
        kept = self.final if floor <= 0.0 else {i: s for i, s in self.final.items() if s >= floor}
        if len(kept) <= limit:
            return list(kept)
        # Ties are equal scores at 12 digits; rounding is monotonic, so the cut is the
        # rounded limit-th best, and only scores within a rounding step of it need rounding.
        cut = round(heapq.nlargest(limit, kept.values())[-1], 12)
        near = cut - 1e-12
        return [i for i, s in kept.items() if s >= near and round(s, 12) >= cut]

    def scored(self, entry_id: str) -> ScoredEntry:
        return _scored_entry(
            entry_id,
            self.final[entry_id],
            self.direct,
            self.candidates,
            self.token_weights,
            self.entity_weights,
        )


def score_query(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    candidates: Sequence[CandidateStats],
    weights: ScoringWeights = ScoringWeights(),
    *,
    weak_tokens: Iterable[str] = (),
    weak_entities: Iterable[str] = (),
) -> QueryScores:
    """Score a query's candidates and their neighbours without building a hit for each.

    ``weak_tokens`` and ``weak_entities`` are the query terms that were not used to gather
    (see "Pruning" above); ``candidates`` must then hold every in-scope entry within two
    ``NEXT`` steps of an entry holding a gathered term, each matched against every term.
    """
    token_w, entity_w, total = _weights(query_tokens, query_entities, corpus, weights)
    if total <= 0.0:
        return QueryScores({}, {}, {}, token_w, entity_w)
    direct, final = _scores(token_w, entity_w, total, candidates, weights)
    by_id = {c.entry_id: c for c in candidates}
    weak = math.fsum(
        [
            *(token_w[t] for t in set(weak_tokens) if t in token_w),
            *(entity_w[e] for e in set(weak_entities) if e in entity_w),
        ]
    )
    weak_share = min(1.0, weak / total)
    return QueryScores(
        final,
        direct,
        by_id,
        token_w,
        entity_w,
        weak_share=weak_share,
        exact_above=min(1.0, weak_share + weights.context_share * (1.0 - weak_share) * weak_share),
    )


@dataclass(frozen=True, slots=True)
class RecencyKey:
    """What breaks a tie between equal scores: newer first, then a stable order."""

    timestamp: datetime
    position: int
    session_id: str
    project_id: str | None
    entry_id: str

    @property
    def order(self) -> tuple[float, int, str, str, str]:
        """Sort key: newer first (timestamp, then position), then a stable order of ids."""
        return (
            -self.timestamp.timestamp(),
            -self.position,
            self.session_id,
            self.project_id or "",
            self.entry_id,
        )


def rank(
    scored: Mapping[str, ScoredEntry],
    recency: Mapping[str, RecencyKey],
    *,
    limit: int,
    min_score: float | None = None,
) -> list[ScoredEntry]:
    """Order scored entries best first (ties to the newer entry) and cut to ``limit``.

    Entries missing from ``recency`` (not in scope) are dropped.
    """
    floor = 0.0 if min_score is None else min_score
    kept = [s for s in scored.values() if s.entry_id in recency and s.score >= floor and s.score > 0]
    kept.sort(key=lambda s: (-round(s.score, 12), *recency[s.entry_id].order))
    return kept[:limit]
