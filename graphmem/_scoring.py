"""The scorer: a pure function from graph statistics to scores.

Backends only gather statistics from their graph (how many entries the user has, how
many entries hold each query token or entity — the degree of its node — and, for every
entry that shares something with the query, what it shares and which entries are its
``NEXT`` neighbours). Everything else happens here, once, so both backends rank the same
data identically.

The rules:

1. A query token's weight is its inverse document frequency among the user's entries,
   ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the user's entry count and
   ``df`` the degree of the token node. A query entity weighs the same way, times
   ``entity_weight``.
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

Sums use :func:`math.fsum`, so the order in which a backend returns statistics cannot
change a score in its last bit.
"""

from __future__ import annotations

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
    q_tokens = sorted(set(query_tokens))
    q_entities = sorted(set(query_entities))
    token_w = {t: term_weight(corpus.token_df.get(t, 0), corpus.entry_count) for t in q_tokens}
    entity_w = {
        e: weights.entity_weight * term_weight(corpus.entity_df.get(e, 0), corpus.entry_count)
        for e in q_entities
    }
    total = math.fsum([*token_w.values(), *entity_w.values()])
    if total <= 0.0:
        return {}

    direct: dict[str, float] = {}
    matches: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
    # neighbours[a][b] = the factor with which b's direct score reaches a (symmetric).
    neighbours: dict[str, dict[str, float]] = {}

    def link(a: str, b: str, factor: float) -> None:
        if a == b:
            return
        for x, y in ((a, b), (b, a)):
            row = neighbours.setdefault(x, {})
            row[y] = max(row.get(y, 0.0), factor)

    for cand in candidates:
        toks = tuple(sorted(t for t in cand.matched_tokens if t in token_w))
        ents = tuple(sorted(e for e in cand.matched_entities if e in entity_w))
        matches[cand.entry_id] = (toks, ents)
        direct[cand.entry_id] = min(
            1.0, math.fsum([*(token_w[t] for t in toks), *(entity_w[e] for e in ents)]) / total
        )
        for other in cand.neighbour_ids:
            link(cand.entry_id, other, 1.0)
        for other in cand.second_neighbour_ids:
            link(cand.entry_id, other, weights.second_neighbour_decay)

    scored: dict[str, ScoredEntry] = {}
    for entry_id in set(direct) | set(neighbours):
        own = direct.get(entry_id, 0.0)
        context = max(
            (direct.get(n, 0.0) * f for n, f in neighbours.get(entry_id, {}).items()), default=0.0
        )
        score = own + weights.context_share * (1.0 - own) * context
        if score <= 0.0:
            continue
        toks, ents = matches.get(entry_id, ((), ()))
        scored[entry_id] = ScoredEntry(
            entry_id=entry_id,
            score=min(1.0, score),
            direct=own,
            context=score - own,
            matched_tokens=toks,
            matched_entities=ents,
        )
    return scored


@dataclass(frozen=True, slots=True)
class RecencyKey:
    """What breaks a tie between equal scores: newer first, then a stable order."""

    timestamp: datetime
    position: int
    session_id: str
    project_id: str | None
    entry_id: str


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

    def key(s: ScoredEntry) -> tuple[float, float, int, str, str, str]:
        r = recency[s.entry_id]
        return (
            -round(s.score, 12),
            -r.timestamp.timestamp(),
            -r.position,
            r.session_id,
            r.project_id or "",
            r.entry_id,
        )

    kept.sort(key=key)
    return kept[:limit]
