"""The scorer: a pure function from graph statistics to scores.

Backends only gather statistics from their graph (how many entries the user has, how
many entries hold each query token or entity — the degree of its node — and, for every
entry that shares something with the query, what it shares and which entries are its
``NEXT`` neighbours; what they read, and when, is decided in :mod:`graphmem._gathering`).
Everything else happens here, once, so both backends rank the same data identically.

The rules:

0. A question that asks for a kind of thing ("where", "which cities") holds that kind's
   type token (``@place``) as a term, and so does every entry naming such a thing (see
   :mod:`graphmem._answer_types`): to the scorer it is one more token, except that a
   kind no entry names is left out (unlike an unknown word, which lowers every score alike).
1. A query token's weight is its inverse document frequency among the user's entries,
   ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` with ``N`` the user's entry count and
   ``df`` the degree of the token node. A query entity (a query span that names an
   ``Entity`` node of the user's graph; spans naming none are ignored) weighs the same
   way, times ``entity_weight``.
1b. Groups. A query term may stand for a group of the user's terms (:class:`TermGroups`):
   the names of one thing (:mod:`graphmem._entities`) and the words such names are spelled
   as. Every member weighs what the group does, the weight of its most frequent member
   (the largest ``df``, as Lucene's ``SynonymQuery``); an entry holding any member holds
   the group, once, and the query's weight counts the group once.
1c. Related words. A query word may also stand for the user's words related to it
   (:mod:`graphmem._related`: "pet" for "dog"), each with its similarity ``s``: a weaker
   group. The word weighs its own idf and is what the query's weight counts; a related
   word weighs ``related_word_weight * s * min(its idf, the word's)``, never more than the
   word. An entry holding several members holds the group once, at its best member.
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
4. When the query names one of the user's speakers ("What are Kate's hobbies?"), an
   entry said by someone else counts ``other_speaker_factor`` (0.75) of its score. An
   entry that matches the query is judged by its author; one recalled only as context
   holds no query term, so it was not said by the named speaker (the words of a speaker's
   name are tokens of every entry they said). A question in the first person asks so about
   the author ``user``, or the one speaking as the user (:mod:`graphmem._asker`): the
   name is read as a query token, but an
   entry that holds nothing else of the query matches nothing asked (direct score 0:
   "what did I eat?" does not recall every message the user typed).
5. When the query names a time (see :mod:`graphmem._time`), an entry that does not match
   it counts ``1 / (1 + time_share)`` (2/3) of its score. An entry matches when it holds a
   query term and was said in that time (its own day, from the day before the query's
   range to a week after it: people tell of an event on the day or in the days after) or
   its text refers to it ("last week" said in early June refers to late May). A date alone
   recalls nothing.
6. Ties go to an entry whose text refers to a time (its ``time_refs``: "yesterday", "last
   week", "on 3 May": it tells of a dated event, what a question about someone's doings
   asks for), then to the newer entry (timestamp, then position in its session), then to a
   stable order of session and entry ids. Only the order within a tie changes, never a
   score, so pruning stays exact (ties at the cut are all fetched).
7. A reply typed as several messages is one hit. Ranked entries that are consecutive
   messages of one author in one session, with a message of another author just before
   or just after them, are one reply (:func:`reply_runs`, :func:`fold_replies`): its
   best-ranked message is the hit and the others are folded into it (``SearchHit.folded``),
   so ten hits are ten replies, not three fragments of one answer and the context they
   lend each other. Scores do not change; the service ranks deeper until ``limit`` replies
   are certain (each depth is ranked exactly). One author's entries that no one answers
   (notes, a journal) are never folded, and ``SearchRequest(fold_replies=False)`` turns
   the rule off.

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
(:meth:`QueryScores.decides`); otherwise the search gathers more (see below). Rules 4
and 5 only scale scores down, and only for entries whose author and times every gathering
knows (those holding a query term) or that hold no query term, so the bound holds as it is.
A group of terms (rules 1b, 1c) is weak when any of its members is (the heaviest weak
member's weight counted once in ``w``), and each member has its own share, so a holder of
two members is given more than it holds: a bound all the same.

(The service prunes only users holding more than ``full_gathering_entries`` entries: in a
smaller one a full gathering costs less than the steps below.)

Expanding the best holders first. Reading a seed's postings is cheap; what costs is each
holder's neighbourhood. So a search may expand only some seed holders: a holder's *seed
share* ``s`` (the weight of the seed terms it holds, over the query's) is known from the
postings alone, and its direct score is at most ``s + w``. Let ``u`` be the largest
``s + w`` of a holder that was not expanded, and ``m = max(w, u)``. Take an entry whose
computed score may be wrong (too low, or missing). If it was gathered, its direct score is
exact and at most ``m`` (it holds no seed, or it is a holder not expanded), and what its
context misses comes from entries that were not gathered, whose direct scores are at most
``m`` too. If it was not gathered, it holds no seed or was not expanded (direct at most
``m``), and nothing within two steps of it was expanded (context at most ``m``). Either way
its true score is at most ``b(m)``, and a score computed for it is at most the true one. So
when the ``limit``-th best computed score is above ``b(m)``, every entry at or above it is
exact and no other entry reaches it: the answer is the full one (``exact_above = b(m)``;
with every holder expanded, ``m = w`` as above).

Choosing what to gather next (MaxScore). A gathering that cannot decide still knows a
``limit``-th best score ``t``, a lower bound of the true one (its computed scores are at most
the true ones, and gathering more only adds candidates and neighbours). Any gathering with
``b(m) >= t`` would leave the answer as uncertain, so :func:`plan_gathering` asks for the
least that can decide: with the same seeds, every holder whose ``s + w`` reaches
``b⁻¹(t)``; when even all holders cannot (``b(w) >= t``), the weak terms moved into the
seeds rarest first (the cheapest to read and the heaviest), only until ``b(w) < t``; else
every term (the full gathering, which always decides). Each step expands at least one more
holder or adds a seed, so a search ends, and its answer is always the full one. A gathering
may expand only some of the holders a plan allows (``graphmem._gathering`` caps each step
at twice the one before, best first): the bound above holds for any set of holders
expanded, since ``u`` is the best share among those that were not.

Times and pruning. With a time in the query, an entry that does not match it keeps only
``keep = 1 / (1 + time_share)`` of its score, and only an entry holding a query term can
match it. The postings of a query with a time carry each holder's day and ``time_refs``, so
a holder not expanded is known to match the time or not. Let ``u`` be the highest seed share
of a holder not expanded that may match it, ``u'`` of one that does not, ``m = max(w, u + w,
u' + w)`` (what an entry not gathered, or gathered without its neighbourhood, may lend as
context) and ``m_t = max(w, u + w)``. An entry whose computed score may be wrong and that
does not match the time scores at most ``keep * b(m)``. One that may match it holds a query
term, so it is a holder of weak terms only (direct at most ``w``) or a seed holder not
expanded that may match (at most ``u + w``); its context is at most ``m``: it scores at most
``m_t + share * (1 - m_t) * m``. Every score above the larger of the two is exact (without
weak terms and with no such holder left, only the first counts); without a time, or when
every holder may match, this is ``b(m)`` as above. Planning the next gathering then asks for
two floors (``GatherPlan.min_share`` for holders that may match, ``min_share_untimed`` for
the others) from the same two bounds, so a date in the query no longer makes a search expand
every holder of its seeds: those said (and referring) elsewhere weigh a third less.

Sums use :func:`math.fsum`, so the order in which a backend returns statistics cannot
change a score in its last bit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from graphmem._answer_types import TYPE_TOKENS
from graphmem._decompose import speaker_tokens
from graphmem._time import QueryTime

__all__ = [
    "CONTEXT_STEPS",
    "CandidateStats",
    "CorpusStats",
    "ScoredEntry",
    "ScoringWeights",
    "TermGroups",
    "Place",
    "fold_replies",
    "rank",
    "reply_runs",
    "score_candidates",
    "QueryScorer",
    "QueryScores",
    "score_query",
    "GatherPlan",
    "plan_gathering",
    "query_shares",
    "term_weight",
]


#: How many ``NEXT`` steps an entry's context reaches (rule 3): a candidate lists its
#: neighbours one and two steps away, and a pruned gathering reads that far around each seed
#: holder it expands (``graphmem._gathering``).
CONTEXT_STEPS = 2


@dataclass(frozen=True, slots=True)
class ScoringWeights:
    """Tunable constants of the scorer (general, not fitted to one data set)."""

    #: An entity's words are tokens already; a shared entity adds half their weight again.
    entity_weight: float = 0.5
    #: How much of the headroom ``1 - direct`` the best neighbour's match can fill.
    context_share: float = 0.8
    #: A neighbour two NEXT steps away counts this much of one a step away.
    second_neighbour_decay: float = 0.7
    #: When the query names one of the user's speakers, an entry by someone else that
    #: matches it counts this much (the question is about what that speaker said).
    other_speaker_factor: float = 0.75
    #: When the query names a time, an entry that does not match it counts
    #: ``1 / (1 + time_share)`` of its score (the time weighs half as much as the words).
    time_share: float = 0.5
    #: An entry said up to this many days after the query's time may tell of it.
    time_told_within_days: int = 7
    #: Whether a query's nouns and adjectives are also read as the user's words related to
    #: them (rule 1c, the table of :mod:`graphmem._related`). On LoCoMo dev it lifts
    #: recall@10 0.796 -> 0.803 and recall@5 0.718 -> 0.725, for about 9% more search time
    #: (benchmarks/README.md, "Related words from a table").
    related_words: bool = True
    #: A related word weighs this much of the smaller of its own idf and the word's, times
    #: its similarity: half the evidence of the word at most (the same half as
    #: ``entity_weight``).
    related_word_weight: float = 0.5


@dataclass(frozen=True, slots=True)
class TermGroups:
    """Query terms that stand for a group of the user's terms (rules "Groups" and "Related
    words"): each maps a term of the group to the group's key, one of the query's own
    terms. ``entities``: the names of one thing (:mod:`graphmem._entities`); ``tokens``:
    the words such names are spelled as ("katharine" and "katherine"), and the words
    related to a query word (``similarity``). A term in neither is a group of its own."""

    tokens: Mapping[str, str] = field(default_factory=dict)
    entities: Mapping[str, str] = field(default_factory=dict)
    #: Tokens related to the query word that is their key (rule "Related words"), each with
    #: its similarity (0..1); a group whose members are here is a group of related words.
    similarity: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Degrees of the query's token and entity nodes in the user's graph."""

    entry_count: int
    token_df: Mapping[str, int] = field(default_factory=dict)
    entity_df: Mapping[str, int] = field(default_factory=dict)
    #: The query tokens that are words of a speaker's name (an author of the user's
    #: entries, now or before): the query names that speaker.
    speaker_tokens: frozenset[str] = frozenset()
    #: The query tokens that are words of a speaker's name the query asks about without
    #: naming them: a question in the first person asks about the author ``user``, or the
    #: one speaking as the user (:mod:`graphmem._asker`). They weigh and focus as a named speaker's (rule 4), but an
    #: entry holding nothing else of the query matches nothing asked (its direct score is 0).
    asked_about: frozenset[str] = frozenset()


# Not frozen: a search builds one per candidate (hundreds), and a frozen dataclass's
# ``__init__`` (``object.__setattr__`` per field) took five times as long. Treat it as
# read-only all the same: it is built per search and never shared.
@dataclass(slots=True)
class CandidateStats:
    """An in-scope entry that shares at least one query token or entity (read-only).

    ``neighbour_ids`` are the entries one ``NEXT`` step away (either direction),
    ``second_neighbour_ids`` those exactly two steps away.
    """

    entry_id: str
    matched_tokens: frozenset[str]
    matched_entities: frozenset[str]
    neighbour_ids: tuple[str, ...] = ()
    second_neighbour_ids: tuple[str, ...] = ()
    project_id: str | None = None
    #: The day the entry was said (``date.toordinal()``, UTC) and the day ranges its text
    #: refers to (``time_refs``, as ordinal pairs); gathered only for a query with a time.
    day: int | None = None
    time_refs: tuple[tuple[int, int], ...] = ()
    #: Who said the entry (its author).
    author: str | None = None
    #: Its place in its session (what breaks a tie between two neighbours lending it the
    #: same context: the earlier turn, see :meth:`QueryScores.context_lenders`).
    position: int | None = None


@dataclass(frozen=True, slots=True)
class ScoredEntry:
    entry_id: str
    score: float
    direct: float
    context: float
    matched_tokens: tuple[str, ...]
    matched_entities: tuple[str, ...]
    #: How the entry matched the query's time (``"said 2023-05-08"`` or
    #: ``"refers to 2023-05-01/2023-05-07"``), or ``None``.
    time_match: str | None = None
    #: The part of ``score`` that the time match added.
    time_score: float = 0.0
    #: When the query names a speaker: whether this entry (matching it directly) was said
    #: by a named speaker (``False``: by someone else, its score weighed down); else ``None``.
    by_named_speaker: bool | None = None


def time_match(cand: CandidateStats, when: QueryTime, weights: ScoringWeights) -> str | None:
    """How ``cand`` matches the query's time, or ``None``: said within the query's time (or
    up to ``time_told_within_days`` after it, or the day before, for time zones), or
    referring to a range that overlaps it and is not much longer than it (a whole "last
    year" does not pin a day)."""
    return days_match(cand.day, cand.time_refs, when, weights)


def days_match(
    day: int | None, time_refs: Sequence[tuple[int, int]], when: QueryTime, weights: ScoringWeights
) -> str | None:
    """:func:`time_match` of an entry said on ``day`` (an ordinal) referring to ``time_refs``."""
    if day is not None:
        if when.matches_day(day + 1, after=weights.time_told_within_days + 1):
            return f"said {date.fromordinal(day).isoformat()}"
    if not time_refs:
        return None
    longest = longest_reference(when)
    for lo, hi in time_refs:
        if hi - lo + 1 <= longest and when.overlaps(lo, hi):
            return f"refers to {date.fromordinal(lo).isoformat()}/{date.fromordinal(hi).isoformat()}"
    return None


def longest_reference(when: QueryTime) -> int:
    """The most days a range an entry refers to may span and still pin ``when`` (a whole
    "last year" does not pin a day; a month or two does)."""
    return max(31, 2 * when.longest_days())


@dataclass(frozen=True, slots=True)
class MatchingDays:
    """:func:`days_match` as day ranges, for an index of days (``first`` to ``last``,
    ordinals, inclusive ranges that may overlap): an entry matches exactly when it was
    said on a day of ``said``, or refers to a range of at most ``longest_reference`` days
    that shares a day with ``referred``."""

    said: tuple[tuple[int, int], ...]
    referred: tuple[tuple[int, int], ...]
    longest_reference: int


def matching_days(when: QueryTime, weights: ScoringWeights, first: int, last: int) -> MatchingDays:
    """The :class:`MatchingDays` of ``when`` from ``first`` to ``last`` (ordinals)."""
    said = when.day_ranges(first + 1, last + 1, after=weights.time_told_within_days + 1)
    return MatchingDays(
        tuple((lo - 1, hi - 1) for lo, hi in said),
        tuple(when.day_ranges(first, last)),
        longest_reference(when),
    )


def term_weight(df: int, entry_count: int) -> float:
    """Inverse document frequency of a term held by ``df`` of ``entry_count`` entries."""
    n = max(entry_count, df)
    return math.log1p((n - df + 0.5) / (df + 0.5))


def _weights(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    weights: ScoringWeights,
    groups: TermGroups | None = None,
) -> tuple[dict[str, float], dict[str, float], float]:
    token_w = {
        t: term_weight(corpus.token_df.get(t, 0), corpus.entry_count)
        for t in set(query_tokens)
        # A kind that no entry names asks nothing (it would only lower every score alike).
        if t not in TYPE_TOKENS or corpus.token_df.get(t, 0) > 0
    }
    # A query entity is a span linked to an Entity node: one the graph lacks names nothing.
    entity_w = {
        e: weights.entity_weight * term_weight(corpus.entity_df[e], corpus.entry_count)
        for e in set(query_entities)
        if corpus.entity_df.get(e, 0) > 0
    }
    if groups is None or not (groups.tokens or groups.entities):
        return token_w, entity_w, math.fsum([*token_w.values(), *entity_w.values()])
    related = {t: weights.related_word_weight * s for t, s in groups.similarity.items()}
    token_w, token_total = _grouped_weights(token_w, corpus.token_df, groups.tokens, related)
    entity_w, entity_total = _grouped_weights(entity_w, corpus.entity_df, groups.entities)
    return token_w, entity_w, math.fsum([*token_total, *entity_total])


def _grouped_weights(
    own: Mapping[str, float],
    df: Mapping[str, int],
    key_of: Mapping[str, str],
    related: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], list[float]]:
    """Rule "Groups": every held member of a group weighs what the group does, the weight
    of its most frequent member (as Lucene's ``SynonymQuery`` takes the largest document
    frequency); a member no entry holds is left out unless it is the query's own term.
    Rule "Related words": a member in ``related`` (its factor, ``related_word_weight``
    times its similarity) weighs that factor times the smaller of its weight and the
    key's, and the group weighs the key's own weight.
    Returns the weights by term and the query's weights, each group once."""
    out: dict[str, float] = {}
    by_group: dict[str, list[str]] = {}
    for term in own:
        key = key_of.get(term)
        if key is None:
            out[term] = own[term]
        elif term == key or df.get(term, 0) > 0:
            by_group.setdefault(key, []).append(term)
    totals = list(out.values())
    for key, members in by_group.items():
        if related and key in own and any(t in related for t in members):
            mine = own[key]
            out[key] = mine
            out.update((t, related[t] * min(own[t], mine)) for t in members if t in related)
            totals.append(mine)
            continue
        held = [own[t] for t in members if df.get(t, 0) > 0]
        weight = min(held) if held else own[key] if key in own else min(own[t] for t in members)
        out.update(dict.fromkeys(members, weight))
        totals.append(weight)
    return out, totals


def _scores(
    token_w: Mapping[str, float],
    entity_w: Mapping[str, float],
    total: float,
    candidates: Sequence[CandidateStats],
    weights: ScoringWeights,
    groups: TermGroups | None = None,
    asked_about: frozenset[str] = frozenset(),
) -> tuple[dict[str, float], dict[str, float]]:
    """Direct and final scores by entry id (final only where it is above 0)."""
    # Written for speed (it runs over hundreds of candidates a search), computing exactly
    # what the rules say.
    direct: dict[str, float] = {}
    _score_directly(candidates, token_w, entity_w, total, _grouping(groups), direct, {}, asked_about)
    context: dict[str, float] = {}
    _lend_context(candidates, direct, context, weights.second_neighbour_decay, {})
    context_of = context.get
    # score = min(1, direct + share * (1 - direct) * context), written out for the two
    # common cases (no context: the direct score; no direct match: share * context), and
    # without calls to min().
    share = weights.context_share
    final: dict[str, float] = {}
    for entry_id, own in direct.items():
        near = context_of(entry_id)
        if near is not None:
            own += share * (1.0 - own) * near
            if own > 1.0:
                own = 1.0
        if own > 0.0:
            final[entry_id] = own
    for entry_id, near in context.items():
        if entry_id not in direct:
            score = share * near
            if score > 1.0:
                score = 1.0
            if score > 0.0:
                final[entry_id] = score
    return direct, final


def _grouping(groups: TermGroups | None) -> TermGroups | None:
    """``groups`` when it groups any term, else ``None`` (a direct score then sums plainly)."""
    return groups if groups is not None and (groups.tokens or groups.entities) else None


def _score_directly(
    candidates: Iterable[CandidateStats],
    token_w: Mapping[str, float],
    entity_w: Mapping[str, float],
    total: float,
    groups: TermGroups | None,
    direct: dict[str, float],
    by_terms: dict[tuple[frozenset[str], frozenset[str]], float],
    asked_about: frozenset[str] = frozenset(),
) -> None:
    """Write each candidate's direct score into ``direct``. Many candidates match the same
    terms, so a score is computed once per set of matched terms and kept in ``by_terms``
    (``fsum`` is exact in any order). ``groups``: see :func:`_grouping`."""
    for cand in candidates:
        terms = (cand.matched_tokens, cand.matched_entities)
        own = by_terms.get(terms)
        if own is None:
            if (
                asked_about
                and not any(t in token_w and t not in asked_about for t in cand.matched_tokens)
                and not any(e in entity_w for e in cand.matched_entities)
            ):
                # Only the name of the speaker asked about: the entry matches nothing asked.
                held = []
            elif groups is not None:
                held = _held_once(cand, token_w, entity_w, groups)
            else:
                held = [token_w[t] for t in cand.matched_tokens if t in token_w]
                if cand.matched_entities:
                    held.extend(entity_w[e] for e in cand.matched_entities if e in entity_w)
            own = by_terms[terms] = min(1.0, math.fsum(held) / total) if held else 0.0
        direct[cand.entry_id] = own


def _lend_context(
    candidates: Iterable[CandidateStats],
    direct: Mapping[str, float],
    context: dict[str, float],
    decay: float,
    changed: dict[str, None],
) -> None:
    """Raise ``context`` to the best neighbour score each of these candidates lends or
    borrows; every entry whose context may be new is put in ``changed``.

    NEXT links are symmetric: every link a candidate declares carries score both ways, so
    each entry (candidate or not) gets the best direct score among its neighbours (the
    second neighbours' times ``decay``). Taking maxima, it is the same in any order and in
    any split of the candidates into batches, which is what lets :class:`QueryScorer` add
    them read by read."""
    context_of, direct_of = context.get, direct.get
    for cand in candidates:
        me = cand.entry_id
        own = direct[me]
        changed[me] = None
        best = context_of(me, 0.0)
        for other in cand.neighbour_ids:
            if other != me:
                if own > context_of(other, 0.0):
                    context[other] = own
                    changed[other] = None
                theirs = direct_of(other, 0.0)
                if theirs > best:
                    best = theirs
        if cand.second_neighbour_ids:
            far = own * decay
            for other in cand.second_neighbour_ids:
                if other != me:
                    if far > context_of(other, 0.0):
                        context[other] = far
                        changed[other] = None
                    theirs = direct_of(other, 0.0) * decay
                    if theirs > best:
                        best = theirs
        if best > 0.0:
            context[me] = best


def _held_once(
    cand: CandidateStats, token_w: Mapping[str, float], entity_w: Mapping[str, float], groups: TermGroups | None
) -> list[float]:
    """The weights of the query terms ``cand`` holds, a group once however many of its
    members it holds."""
    assert groups is not None
    return [
        *_best_by_group(cand.matched_tokens, token_w, groups.tokens),
        *_best_by_group(cand.matched_entities, entity_w, groups.entities),
    ]


def _best_by_group(terms: Iterable[str], weight: Mapping[str, float], key_of: Mapping[str, str]) -> list[float]:
    """The weight of each group among ``terms`` (those weighed), at its heaviest member."""
    best: dict[str, float] = {}
    for term in terms:
        w = weight.get(term)
        if w is not None:
            key = key_of.get(term, term)
            if w > best.get(key, -1.0):
                best[key] = w
    return list(best.values())


def _said_by(cand: CandidateStats | None, speakers: frozenset[str]) -> bool:
    """Whether ``cand`` is known to be said by one of ``speakers`` (words of their names)."""
    return cand is not None and cand.author is not None and not speakers.isdisjoint(speaker_tokens(cand.author))


def _focus_on_speakers(
    final: dict[str, float],
    direct: Mapping[str, float],
    by_id: Mapping[str, CandidateStats],
    named: frozenset[str],
    weights: ScoringWeights,
    asked_about: frozenset[str] = frozenset(),
) -> None:
    """A query that names a speaker asks about what they said: an entry said by someone
    else counts ``other_speaker_factor`` of its score (in place).

    An entry that matches the query itself is weighed by its author (every gathering knows
    the authors of those). An entry recalled only as context (it holds no query term) is
    weighed too, without knowing its author: the words of an author's name are tokens of
    every entry they said, so an entry holding none of the query's terms was not said by a
    speaker the query names. Scores only go down, and an entry's computed direct score is
    0 only when its true one is (or when it was not gathered, and then its score is below
    the pruning bound), so the bound stays as it is. A speaker asked about without being
    named (``asked_about``, the first person) has no name among the entry's matches, so
    there an entry recalled only as context is judged by its author when it is known (every
    gathering reads the authors of the entries holding that speaker's word)."""
    if not named:
        return
    factor = weights.other_speaker_factor
    for entry_id in final:
        if direct.get(entry_id, 0.0) <= 0.0:
            if not (asked_about and _said_by(by_id.get(entry_id), asked_about)):
                final[entry_id] *= factor
            continue
        cand = by_id.get(entry_id)
        if cand is not None and cand.author is not None and not _said_by(cand, named):
            final[entry_id] *= factor


def _weigh_by_time(
    final: dict[str, float],
    direct: Mapping[str, float],
    by_id: Mapping[str, CandidateStats],
    when: QueryTime | None,
    weights: ScoringWeights,
) -> dict[str, str]:
    """When the query names a time, an entry that does not match it counts
    ``1 / (1 + time_share)`` of its score (in place). Returns how each matching entry
    matched.

    Only an entry that holds a query term can match the time (every gathering, full or
    pruned, knows the times of those), and scores only go down, so the pruning bound stays
    as it is and the result never depends on how the candidates were gathered."""
    if when is None or weights.time_share <= 0.0:
        return {}
    matches: dict[str, str] = {}
    for entry_id in final:
        cand = by_id.get(entry_id)
        if cand is None or direct.get(entry_id, 0.0) <= 0.0:
            continue
        how = time_match(cand, when, weights)
        if how is not None:
            matches[entry_id] = how
    keep = 1.0 / (1.0 + weights.time_share)
    for entry_id, score in final.items():
        if entry_id not in matches:
            final[entry_id] = score * keep
    return matches


def _scored_entry(
    entry_id: str,
    score: float,
    direct: Mapping[str, float],
    by_id: Mapping[str, CandidateStats],
    token_w: Mapping[str, float],
    entity_w: Mapping[str, float],
    weights: ScoringWeights,
    time_named: bool = False,
    time_matches: Mapping[str, str] | None = None,
    named_speakers: frozenset[str] = frozenset(),
    asked_about: frozenset[str] = frozenset(),
) -> ScoredEntry:
    """The hit's explanation. The time and the speaker focus scale a score down; the parts
    reported (direct, context) are scaled alike, so that they add up to the score."""
    cand = by_id.get(entry_id)
    own = direct.get(entry_id, 0.0)
    how = time_matches.get(entry_id) if time_matches else None
    by_speaker: bool | None
    if not named_speakers:
        by_speaker = None
    elif own <= 0.0:
        # It holds no query term, so not a named speaker's name; the first person names no one.
        by_speaker = bool(asked_about) and _said_by(cand, asked_about)
    elif cand is None or cand.author is None:
        by_speaker = None
    else:
        by_speaker = _said_by(cand, named_speakers)
    scale = weights.other_speaker_factor if by_speaker is False else 1.0
    if time_named and how is None:
        scale /= 1.0 + weights.time_share
    own *= scale
    return ScoredEntry(
        entry_id=entry_id,
        score=score,
        direct=own,
        # What is left once the direct part is taken (0 up to rounding).
        context=rest if (rest := score - own) > 1e-12 else 0.0,
        matched_tokens=tuple(sorted(t for t in cand.matched_tokens if t in token_w)) if cand else (),
        matched_entities=tuple(sorted(e for e in cand.matched_entities if e in entity_w)) if cand else (),
        time_match=how,
        # How much higher the score is than it would be without the time match.
        time_score=score * weights.time_share / (1.0 + weights.time_share) if how is not None else 0.0,
        by_named_speaker=by_speaker,
    )


def score_candidates(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    candidates: Sequence[CandidateStats],
    weights: ScoringWeights = ScoringWeights(),
    *,
    when: QueryTime | None = None,
    groups: TermGroups | None = None,
) -> dict[str, ScoredEntry]:
    """Score every candidate and every neighbour of a candidate.

    Args:
        query_tokens: the query's tokens.
        query_entities: the query's entity names.
        corpus: entry count and document frequencies of the query terms.
        candidates: in-scope entries sharing a query term, with their neighbours.
        weights: the scorer's constants.
        when: the time the query names, if any (candidates then carry their times).
        groups: query terms standing for groups of terms (rule "Groups").

    Returns:
        Scores by entry id, for candidates and for their neighbours (context hits).
    """
    token_w, entity_w, total = _weights(query_tokens, query_entities, corpus, weights, groups)
    if total <= 0.0:
        return {}
    direct, final = _scores(token_w, entity_w, total, candidates, weights, groups, corpus.asked_about)
    named = corpus.speaker_tokens & token_w.keys()
    by_id = {c.entry_id: c for c in candidates}
    _focus_on_speakers(final, direct, by_id, named, weights, corpus.asked_about)
    matches = _weigh_by_time(final, direct, by_id, when, weights)
    return {
        entry_id: _scored_entry(
            entry_id, score, direct, by_id, token_w, entity_w, weights, when is not None, matches, named,
            corpus.asked_about,
        )
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
    #: Every score above this is exact (pruned gathering; see "Pruning" above); 0 after
    #: a full gathering.
    exact_above: float = 0.0
    #: The constants the scores were computed with (for the hits' explanations).
    weights: ScoringWeights = field(default_factory=ScoringWeights)
    #: Whether the query named a time.
    time_named: bool = False
    #: How the entries that match the query's time matched it.
    time_matches: Mapping[str, str] = field(default_factory=dict)
    #: The query tokens that name speakers.
    named_speakers: frozenset[str] = frozenset()
    #: The speakers the query asks about without naming them (the first person).
    asked_about: frozenset[str] = frozenset()
    #: The query's whole weight (each group of terms once); ``None``: the sum of
    #: ``token_weights`` and ``entity_weights``.
    total_weight: float | None = None
    #: The query terms standing for groups of terms (rule "Groups").
    groups: TermGroups | None = None
    #: Scored by the query's time alone (:func:`score_time_alone`).
    time_alone: bool = False

    def decides(self, limit: int) -> bool:
        """Whether the first ``limit`` entries (ties included) are certain: always after a
        full gathering; after a pruned one, when the ``limit``-th best score is above
        :attr:`exact_above`."""
        if self.exact_above <= 0.0:
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

    def context_lenders(self, entry_ids: Iterable[str]) -> dict[str, str]:
        """For each of ``entry_ids`` that took context, the neighbour whose direct score lent
        it: the best one, one ``NEXT`` step away before two, then the earlier in the
        conversation (the question before its answer; a hit's neighbours are turns of its
        session), then the smallest id. Only what is stored decides (an entry's position
        is, its id may be random), so every load of the same data, on every backend, names
        the same one. Only the hits shown need it, so it is found here, once per search,
        rather than while scoring.

        ``NEXT`` links are symmetric and a lender matches the query itself (it is a
        candidate): a hit that is a candidate lists its lenders among its own neighbours;
        only for a hit that is not (recalled as context alone, never gathered) are the
        candidates scanned for those listing it."""
        decay = self.weights.second_neighbour_decay
        best: dict[str, tuple[float, int, bool, int, str]] = {}

        def offer(entry_id: str, lender_id: str, steps: int) -> None:
            own = self.direct.get(lender_id, 0.0)
            if own <= 0.0 or lender_id == entry_id:
                return
            # (A lender matches the query, so it is a candidate; one whose backend gave no
            # position comes after those with one.)
            lender = self.candidates.get(lender_id)
            position = lender.position if lender is not None else None
            key = (
                -(own if steps == 1 else own * decay),
                steps,
                position is None,
                position if position is not None else 0,
                lender_id,
            )
            if entry_id not in best or key < best[entry_id]:
                best[entry_id] = key

        unseen: set[str] = set()
        for entry_id in entry_ids:
            cand = self.candidates.get(entry_id)
            if cand is None:
                unseen.add(entry_id)
                continue
            for lender_id in cand.neighbour_ids:
                offer(entry_id, lender_id, 1)
            for lender_id in cand.second_neighbour_ids:
                offer(entry_id, lender_id, 2)
        if unseen:
            for lender_id, cand in self.candidates.items():
                if self.direct.get(lender_id, 0.0) <= 0.0:
                    continue
                for entry_id in unseen.intersection(cand.neighbour_ids):
                    offer(entry_id, lender_id, 1)
                for entry_id in unseen.intersection(cand.second_neighbour_ids):
                    offer(entry_id, lender_id, 2)
        return {entry_id: key[-1] for entry_id, key in best.items()}

    def scored(self, entry_id: str) -> ScoredEntry:
        if self.time_alone:
            score = self.final[entry_id]
            how = self.time_matches.get(entry_id)
            return ScoredEntry(entry_id, score, score, 0.0, (), (), time_match=how, time_score=score)
        return _scored_entry(
            entry_id,
            self.final[entry_id],
            self.direct,
            self.candidates,
            self.token_weights,
            self.entity_weights,
            self.weights,
            self.time_named,
            self.time_matches,
            self.named_speakers,
            self.asked_about,
        )


def score_time_alone(
    days: Iterable[tuple[str, int, Sequence[tuple[int, int]]]], when: QueryTime, weights: ScoringWeights
) -> QueryScores:
    """Scores for a query that asks for a time and nothing else ("what did we talk about
    on 3 May?", "what happened yesterday?"): no word to match, so every entry of ``days``
    (id, the day it was said, the day ranges it refers to; ordinals) that matches the
    time (:func:`days_match`) is a hit. One said within the time or referring to it in
    at most twice its days scores 1; one said the day before (time zones) or up to
    ``time_told_within_days`` later, or referring to the time in a longer range ("in
    October" for a day), ``1 / (1 + time_share)``, as an entry outside a question's time is
    weighed. Ties are broken by recency, as every score's.
    Everything was read, so the scores decide any limit."""
    final: dict[str, float] = {}
    matches: dict[str, str] = {}
    later = 1.0 / (1.0 + weights.time_share)
    pinning = 2 * when.longest_days()
    for entry_id, day, refs in days:
        how = days_match(day, refs, when, weights)
        if how is None:
            continue
        # Said on a day of the time is exact; said the day before (time zones) or in the
        # days after, only when the entry refers to the time in as few days (at most twice
        # as many: "yesterday" pins a day, "in October" does not), which it then says.
        exact = when.matches_day(day)
        close = [(lo, hi) for lo, hi in refs if hi - lo + 1 <= pinning]
        if not exact and close and (refers := days_match(None, close, when, weights)) is not None:
            how, exact = refers, True
        matches[entry_id] = how
        final[entry_id] = 1.0 if exact else later
    return QueryScores(
        final, final, {}, {}, {}, weights=weights, time_named=True, time_matches=matches, time_alone=True
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
    when: QueryTime | None = None,
    unexpanded_share: float | None = None,
    unexpanded_untimed_share: float | None = None,
    groups: TermGroups | None = None,
) -> QueryScores:
    """Score a query's candidates and their neighbours without building a hit for each.

    ``weak_tokens`` and ``weak_entities`` are the query terms that were not used to gather
    (see "Pruning" above); ``candidates`` must then hold every in-scope entry within two
    ``NEXT`` steps of an entry holding a gathered term, each matched against every term.
    ``when`` is the time the query names, if any (candidates then carry their times).
    ``unexpanded_share``: the largest seed share of a seed holder whose neighbourhood was
    not gathered, or ``None`` when every holder's was (see "Expanding the best holders
    first" above). With a time in the query, ``unexpanded_untimed_share`` is that of the
    holders not gathered that are known not to match the time (their day and
    ``time_refs`` came with the postings), and ``unexpanded_share`` that of the others
    (see "Times and pruning"). ``groups``: query terms standing for groups of terms (rule
    "Groups"); a group is weak when any of its members is.
    """
    token_w, entity_w, total = _weights(query_tokens, query_entities, corpus, weights, groups)
    if total <= 0.0:
        return QueryScores({}, {}, {}, token_w, entity_w)
    direct, final = _scores(token_w, entity_w, total, candidates, weights, groups, corpus.asked_about)
    named = corpus.speaker_tokens & token_w.keys()
    by_id = {c.entry_id: c for c in candidates}
    _focus_on_speakers(final, direct, by_id, named, weights, corpus.asked_about)
    matches = _weigh_by_time(final, direct, by_id, when, weights)
    token_key = groups.tokens if groups is not None else {}
    entity_key = groups.entities if groups is not None else {}
    weak = math.fsum(
        [
            *_best_by_group(set(weak_tokens), token_w, token_key),
            *_best_by_group(set(weak_entities), entity_w, entity_key),
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
        exact_above=_exact_above(
            weak_share,
            unexpanded_share,
            unexpanded_untimed_share,
            1.0 / (1.0 + weights.time_share) if when is not None and weights.time_share > 0.0 else 1.0,
            weights,
        ),
        weights=weights,
        time_named=when is not None,
        time_matches=matches,
        named_speakers=named,
        asked_about=corpus.asked_about,
        total_weight=total,
        groups=groups,
    )


class QueryScorer:
    """:func:`score_query` over candidates that come in batches (the steps of a pruned
    gathering): each :meth:`add` scores only what it adds and the entries it links to,
    not every candidate read so far again. The scores after any batches are those of
    :func:`score_query` over all of them at once (``test_scores_added_in_batches_are_
    the_scores_of_all_at_once``).

    Why that holds: an entry's direct score is its own; its context is the best (decayed)
    direct score among its linked entries, a maximum, which no order changes; ``NEXT``
    links are symmetric (a candidate's neighbours list it back, and so do its second
    neighbours), so a new candidate both lends to and borrows from every entry it lists,
    old or new; and the speaker and time factors depend on the entry alone. So an entry's
    final score changes only when it is added or its context rises, and only those are
    computed again, from their direct score and context, as :func:`_scores` does.

    The mappings of the :class:`QueryScores` it returns are its own, updated by the next
    :meth:`add`: read one before adding more."""

    def __init__(
        self,
        query_tokens: Iterable[str],
        query_entities: Iterable[str],
        corpus: CorpusStats,
        weights: ScoringWeights,
        *,
        when: QueryTime | None = None,
        groups: TermGroups | None = None,
    ) -> None:
        self._token_w, self._entity_w, self._total = _weights(query_tokens, query_entities, corpus, weights, groups)
        self._weights = weights
        self._when = when if weights.time_share > 0.0 else None
        self._time_named = when is not None
        self._groups = groups
        self._grouping = _grouping(groups)
        self._named = corpus.speaker_tokens & self._token_w.keys()
        self._asked_about = corpus.asked_about
        self._direct: dict[str, float] = {}
        self._context: dict[str, float] = {}
        self._final: dict[str, float] = {}
        self._by_id: dict[str, CandidateStats] = {}
        self._matches: dict[str, str] = {}
        self._by_terms: dict[tuple[frozenset[str], frozenset[str]], float] = {}

    def add(self, candidates: Iterable[CandidateStats]) -> None:
        """Score these candidates with those added before (one already added is skipped:
        a candidate is the same whichever read brought it)."""
        if self._total <= 0.0:
            return
        by_id, direct = self._by_id, self._direct
        fresh: list[CandidateStats] = []
        for cand in candidates:
            if cand.entry_id not in by_id:
                by_id[cand.entry_id] = cand
                fresh.append(cand)
        if not fresh:
            return
        _score_directly(
            fresh, self._token_w, self._entity_w, self._total, self._grouping, direct, self._by_terms, self._asked_about
        )
        # The same lending as _scores', over the new candidates. ``changed``: whose context
        # or direct score may be new.
        changed: dict[str, None] = {}
        context = self._context
        _lend_context(fresh, direct, context, self._weights.second_neighbour_decay, changed)
        context_of, direct_of = context.get, direct.get
        share = self._weights.context_share
        final, matches = self._final, self._matches
        named, asked_about, when, weights = self._named, self._asked_about, self._when, self._weights
        speaker_factor = weights.other_speaker_factor
        keep = 1.0 / (1.0 + weights.time_share)
        for entry_id in changed:
            # _scores' final score, then _focus_on_speakers' and _weigh_by_time's factors.
            own = direct_of(entry_id)
            near = context_of(entry_id)
            if own is None:
                score = 0.0 if near is None else share * near
            else:
                score = own
                if near is not None:
                    score += share * (1.0 - own) * near
            if score > 1.0:
                score = 1.0
            if score <= 0.0:
                final.pop(entry_id, None)
                matches.pop(entry_id, None)
                continue
            matches_terms = own is not None and own > 0.0
            if named:
                stats = by_id.get(entry_id)
                if matches_terms:
                    if stats is not None and stats.author is not None and not _said_by(stats, named):
                        score *= speaker_factor
                elif not (asked_about and _said_by(stats, asked_about)):
                    score *= speaker_factor
            if when is not None:
                how = None
                if matches_terms and (stats := by_id.get(entry_id)) is not None:
                    how = time_match(stats, when, weights)
                if how is None:
                    matches.pop(entry_id, None)
                    score *= keep
                else:
                    matches[entry_id] = how
            final[entry_id] = score

    def scores(
        self,
        *,
        weak_tokens: Iterable[str] = (),
        weak_entities: Iterable[str] = (),
        unexpanded_share: float | None = None,
        unexpanded_untimed_share: float | None = None,
    ) -> QueryScores:
        """The scores of everything added, as :func:`score_query` gives them with these
        arguments."""
        token_w, entity_w, total, weights = self._token_w, self._entity_w, self._total, self._weights
        if total <= 0.0:
            return QueryScores({}, {}, {}, token_w, entity_w)
        groups = self._groups
        token_key = groups.tokens if groups is not None else {}
        entity_key = groups.entities if groups is not None else {}
        weak = math.fsum(
            [
                *_best_by_group(set(weak_tokens), token_w, token_key),
                *_best_by_group(set(weak_entities), entity_w, entity_key),
            ]
        )
        weak_share = min(1.0, weak / total)
        return QueryScores(
            self._final,
            self._direct,
            self._by_id,
            token_w,
            entity_w,
            weak_share=weak_share,
            exact_above=_exact_above(
                weak_share,
                unexpanded_share,
                unexpanded_untimed_share,
                1.0 / (1.0 + weights.time_share) if self._time_named and weights.time_share > 0.0 else 1.0,
                weights,
            ),
            weights=weights,
            time_named=self._time_named,
            time_matches=self._matches,
            named_speakers=self._named,
            asked_about=self._asked_about,
            total_weight=total,
            groups=groups,
        )


def _lending_bound(weak_share: float, *unexpanded: float | None) -> float:
    """``m``: the most an entry that was not gathered, or was gathered without its
    neighbourhood, may match directly (and so lend as context)."""
    shares = [u for u in unexpanded if u is not None]
    return weak_share if not shares else max(weak_share, min(1.0, max(shares) + weak_share))


def _exact_above(
    weak_share: float,
    unexpanded: float | None,
    unexpanded_untimed: float | None,
    keep: float,
    weights: ScoringWeights,
) -> float:
    """Every score above this is exact (see "Pruning" and "Times and pruning")."""
    m = _lending_bound(weak_share, unexpanded, unexpanded_untimed)
    if keep >= 1.0:
        return _prune_bound(m, weights)
    # Entries that do not match the time keep only `keep` of their score; those that may
    # match it match at most m_t directly (and take at most m as context).
    untimed = keep * _prune_bound(m, weights)
    if weak_share <= 0.0 and unexpanded is None:
        return untimed  # no entry that may match the time is uncertain
    m_t = _lending_bound(weak_share, unexpanded)
    return max(untimed, min(1.0, m_t + weights.context_share * (1.0 - m_t) * m))


def _prune_bound(weak_share: float, weights: ScoringWeights) -> float:
    """``b(w)``: no score above it can be missed or wrong when weak terms weigh ``w``."""
    return min(1.0, weak_share + weights.context_share * (1.0 - weak_share) * weak_share)


def _prune_bound_inverse(score: float, weights: ScoringWeights) -> float:
    """The ``m`` with ``b(m) = score`` (``b`` increases on [0, 1]); below it ``b(m) < score``."""
    c = weights.context_share
    if score >= 1.0:
        return 1.0
    if c <= 0.0:
        return max(0.0, score)
    return max(0.0, ((1.0 + c) - math.sqrt((1.0 + c) ** 2 - 4.0 * c * score)) / (2.0 * c))


def query_shares(
    query_tokens: Iterable[str],
    query_entities: Iterable[str],
    corpus: CorpusStats,
    weights: ScoringWeights = ScoringWeights(),
    groups: TermGroups | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Each held query term's share of the query's weight: a seed holder's *seed share* is
    the sum of the shares of the seeds it holds (see "Expanding the best holders first").
    Every member of a group has the group's share, so a holder of two members is given
    more than it holds: a bound all the same."""
    token_w, entity_w, total = _weights(query_tokens, query_entities, corpus, weights, groups)
    if total <= 0.0:
        return {}, {}
    return (
        {t: w / total for t, w in token_w.items() if corpus.token_df.get(t, 0) > 0},
        {e: w / total for e, w in entity_w.items()},
    )


@dataclass(frozen=True, slots=True)
class GatherPlan:
    """What the next pruned gathering reads: its seeds, and the seed holders it expands:
    those with a seed share of at least ``min_share``, except that a holder known not to
    match the query's time needs ``min_share_untimed`` (``None``: ``min_share`` too)."""

    seed_tokens: frozenset[str]
    seed_entities: frozenset[str]
    min_share: float
    min_share_untimed: float | None = None


def plan_gathering(
    scores: QueryScores,
    corpus: CorpusStats,
    weak_tokens: Iterable[str],
    weak_entities: Iterable[str],
    unexpanded_share: float | None,
    limit: int,
    *,
    unexpanded_untimed_share: float | None = None,
) -> GatherPlan | None:
    """The least the next gathering must read to be able to decide the first ``limit``,
    after ``scores`` (from a pruned gathering with these weak terms, whose best holders not
    expanded had ``unexpanded_share`` and, known not to match the query's time,
    ``unexpanded_untimed_share``) could not (see "Choosing what to gather next" and "Times
    and pruning").

    Returns:
        The plan, which expands at least one more holder or has more seeds; ``None``: only
        a full gathering can decide.
    """
    weights = scores.weights
    weak_t, weak_e = set(weak_tokens), set(weak_entities)
    if len(scores.final) < limit:
        return None
    best = heapq.nlargest(limit, scores.final.values())[-1] - _TIE_MARGIN
    reach = _prune_bound_inverse(best, weights)
    total = scores.total_weight
    if total is None:
        total = math.fsum([*scores.token_weights.values(), *scores.entity_weights.values()])
    held_t = {t for t, df in corpus.token_df.items() if df and t in scores.token_weights} - weak_t
    held_e = {e for e, df in corpus.entity_df.items() if df and e in scores.entity_weights} - weak_e
    weak_share = min(1.0, scores.weak_share)
    unexpanded = unexpanded_share is not None or unexpanded_untimed_share is not None
    if unexpanded and _prune_bound(weak_share, weights) < best:
        # The same seeds can decide: expand every holder that could reach the bound (at
        # least the best one left, so that every step makes progress).
        keep = 1.0 / (1.0 + weights.time_share) if scores.time_named and weights.time_share > 0.0 else 1.0
        if keep >= 1.0:
            best_left = max(u for u in (unexpanded_share, unexpanded_untimed_share) if u is not None)
            return GatherPlan(frozenset(held_t), frozenset(held_e), max(0.0, min(reach - weak_share, best_left)))
        return _timed_plan(
            GatherPlan(frozenset(held_t), frozenset(held_e), 0.0),
            best,
            keep,
            weak_share,
            unexpanded_share,
            unexpanded_untimed_share,
            weights,
        )
    # Cheapest first: the fewest entries to read; the heaviest too, for a token.
    order = sorted(
        [(corpus.token_df.get(t, 0), 0, t) for t in weak_t] + [(corpus.entity_df.get(e, 0), 1, e) for e in weak_e]
    )
    left = [(scores.entity_weights if kind else scores.token_weights).get(t, 0.0) for _, kind, t in order]
    for taken in range(1, len(order)):
        rest = min(1.0, math.fsum(left[taken:]) / total)
        if _prune_bound(rest, weights) < best:
            moved = order[:taken]
            return GatherPlan(
                frozenset(held_t | {t for _, kind, t in moved if kind == 0}),
                frozenset(held_e | {t for _, kind, t in moved if kind == 1}),
                max(0.0, reach - rest),
            )
    return None


def _timed_plan(
    seeds: GatherPlan,
    best: float,
    keep: float,
    weak_share: float,
    unexpanded: float | None,
    unexpanded_untimed: float | None,
    weights: ScoringWeights,
) -> GatherPlan:
    """The same seeds, with a time in the query: the holders to expand so that
    :func:`_exact_above` falls below ``best`` (see "Times and pruning")."""
    c = weights.context_share
    # Entries not matching the time: keep * b(m') < best, so m' < r1 (none need it when
    # even a full match kept at `keep` stays below best).
    r1 = _prune_bound_inverse(best / keep, weights) if best < keep else math.inf
    untimed_min = r1 - weak_share
    # Entries that may match it: m_t' + c (1 - m_t') m' < best, with m' at most r1 and
    # at most what may lend now.
    lend = min(r1, _lending_bound(weak_share, unexpanded, unexpanded_untimed))
    r2 = (best - c * lend) / (1.0 - c * lend) if c * lend < 1.0 else 0.0
    timed_min = max(0.0, min(r2 - weak_share, untimed_min))
    untimed_min = max(0.0, untimed_min)
    if (unexpanded is None or unexpanded < timed_min) and (
        unexpanded_untimed is None or unexpanded_untimed < untimed_min
    ):
        # Progress: at least the best holder left that may match the time, else the best one.
        if unexpanded is not None:
            timed_min = unexpanded
        elif unexpanded_untimed is not None:
            untimed_min = unexpanded_untimed
    return GatherPlan(seeds.seed_tokens, seeds.seed_entities, timed_min, untimed_min)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _microseconds(when: datetime) -> int:
    """``when`` as whole microseconds since the epoch (a naive time is UTC): exact, where
    ``datetime.timestamp()``'s float holds no microseconds past about 2100, so that two
    entries a microsecond apart would tie there."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MICROSECOND


@dataclass(frozen=True, slots=True)
class RecencyKey:
    """What breaks a tie between equal scores: an entry whose text refers to a time first
    (rule 6), then newer first, then a stable order."""

    timestamp: datetime
    position: int
    session_id: str
    project_id: str | None
    entry_id: str
    #: Whether the entry's text refers to a time ("yesterday", "last week": its
    #: ``time_refs`` are not empty).
    refers_to_time: bool = False

    @property
    def order(self) -> tuple[bool, int, int, str, str, str]:
        """Sort key: an entry that refers to a time first, then newer first (timestamp, then
        position), then a stable order of ids."""
        return (
            not self.refers_to_time,
            -_microseconds(self.timestamp),
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
    """Order scored entries best first (ties to an entry that refers to a time, then to the
    newer entry) and cut to ``limit``.

    Entries missing from ``recency`` (not in scope) are dropped.
    """
    floor = 0.0 if min_score is None else min_score
    kept = [s for s in scored.values() if s.entry_id in recency and s.score >= floor and s.score > 0]
    kept.sort(key=lambda s: (-round(s.score, 12), *recency[s.entry_id].order))
    return kept[:limit]


@dataclass(frozen=True, slots=True)
class Place:
    """Where an entry sits in its conversation: what rule 7 (replies) reads of it."""

    session_id: str | None
    project_id: str | None
    position: int
    author: str


def reply_runs(ranked: Sequence[ScoredEntry], places: Mapping[str, Place]) -> list[tuple[str, ...]]:
    """Rule 7, first half: the runs of ``ranked`` entries that are consecutive messages of
    one author in one session (positions ``p``, ``p + 1``, ...: the entries ``NEXT`` links
    join), two or more each, in conversation order.

    Only what was ranked is compared: two messages with a third between them that was not
    ranked are two runs (nothing here says the third is the same author's). An entry
    outside any session, or missing from ``places``, is in no run."""
    by_author: dict[tuple[str, str | None, str], dict[int, str]] = {}
    for scored in ranked:
        place = places.get(scored.entry_id)
        if place is not None and place.session_id is not None:
            key = (place.session_id, place.project_id, place.author)
            by_author.setdefault(key, {})[place.position] = scored.entry_id
    runs: list[tuple[str, ...]] = []
    for at in by_author.values():
        run: list[str] = []
        for position in sorted(at):
            if run and position - 1 not in at:
                if len(run) > 1:
                    runs.append(tuple(run))
                run = []
            run.append(at[position])
        if len(run) > 1:
            runs.append(tuple(run))
    return runs


def fold_replies(
    ranked: Sequence[ScoredEntry], replies: Iterable[Sequence[str]]
) -> list[tuple[ScoredEntry, list[ScoredEntry]]]:
    """Rule 7, second half: one hit per reply. Each of ``replies`` (runs of
    :func:`reply_runs` that the service found to be replies: next to another author's
    message) is folded into its best-ranked entry: that entry is the hit, and the run's
    others are folded into it, in conversation order.

    Returns:
        Each hit with the entries folded into it, best hit first.
    """
    rank_of = {s.entry_id: i for i, s in enumerate(ranked)}
    by_id = {s.entry_id: s for s in ranked}
    folded: dict[str, list[ScoredEntry]] = {}
    inside: set[str] = set()
    for run in replies:
        best = min(run, key=rank_of.__getitem__)
        folded[best] = [by_id[entry_id] for entry_id in run if entry_id != best]
        inside.update(entry_id for entry_id in run if entry_id != best)
    return [(s, folded.get(s.entry_id, [])) for s in ranked if s.entry_id not in inside]
