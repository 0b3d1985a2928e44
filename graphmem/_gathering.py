"""What a search reads from its backend, and in what order: every traversal rule in one place.

A backend offers two plain reads over one user's graph, in the search's scope (global
entries, plus one project's), and knows no rule of the search:

- :meth:`GraphReader.postings`: for each given term, the entries holding it (the incoming
  ``HAS_TOKEN`` / ``MENTIONS`` edges of its node);
- :meth:`GraphReader.neighbourhood`: for given entries, or for every entry holding a
  query term, those entries and every entry within ``reach`` ``NEXT`` steps of one, each
  with the query terms it holds and the ids of its neighbours one and two steps away
  (a :class:`~graphmem._scoring.CandidateStats`): a bounded neighbourhood.

With the postings of a query that names a time, a backend may also hand over a
:class:`DayIndex` (its entries by the day said and the days referred to), so that which
holders may match the time is read by set operations rather than holder by holder.

Everything else is decided here, once, for every backend: which terms a search reads
first (the *seeds*), which of their holders it expands and how far
(:data:`~graphmem._scoring.CONTEXT_STEPS`), when what it read decides the answer and what
it reads next (:func:`graphmem._scoring.plan_gathering`). A new backend only stores and
fetches, and ranks exactly as the others do.

A holder is named by a *holder key* of the backend's own (an entry id, or a node key):
this module only counts, compares and hands keys back to the backend that gave them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from graphmem._scoring import (
    CONTEXT_STEPS,
    CandidateStats,
    CorpusStats,
    GatherPlan,
    QueryScorer,
    QueryScores,
    ScoringWeights,
    TermGroups,
    days_match,
    matching_days,
    plan_gathering,
    query_shares,
    score_query,
)
from graphmem._time import QueryTime

__all__ = [
    "EXPANSION_GROWTH",
    "FIRST_EXPANSION",
    "FULL_GATHERING_ENTRIES",
    "IN_PROCESS_FULL_GATHERING_ENTRIES",
    "SEED_DF_SHARE",
    "DayIndex",
    "FirstRead",
    "GraphReader",
    "NeighbourhoodRequest",
    "PrunedGathering",
    "ScoreGathering",
    "TermPostings",
    "SeedShares",
    "gather_scores",
    "seed_terms",
]

KeyT = TypeVar("KeyT", bound=Hashable)
TermT = TypeVar("TermT", bound=Hashable)

#: A query term held by more than this share of the user's entries is *weak*: a pruned
#: search does not read its postings (see ``graphmem._scoring``, "Pruning"). A quarter
#: rather than a fifth: the weak share then bounds fewer questions too loosely to decide
#: early (one user of 100k: CPU p99 43 -> 21 ms, p50 unchanged; users of 1,000 p50 -5%;
#: Neo4j one user of 10k unchanged; session 25, benchmarks/README.md).
SEED_DF_SHARE = 0.25
#: A pruned search first expands at most this many seed holders per result asked for.
FIRST_EXPANSION = 4
#: Each later step of a pruned search expands at most this many times as many new holders
#: as the step before (best first): the ``limit``-th score the steps find rises with what
#: they read, and the holders a step must expand fall with it.
EXPANSION_GROWTH = 2
#: A user holding at most this many entries is searched in one full gathering: reading every
#: holder of every query term took 0.84x the pruned steps' CPU (median per search) in one
#: user of 1,000 LoCoMo turns, about as much at 1,500, 1.2x at 2,000 (``benchmarks/
#: search_cpu.py``; benchmarks/README.md, "Users of 1,000: about 30% less CPU"). On Neo4j
#: it still pays: one round trip instead of a step's two (users of 1,000: wall p50 18 ms
#: full, 29 ms pruned; session 25).
FULL_GATHERING_ENTRIES = 1200
#: The same for a store in this process (networkx), where a step is no round trip: since the
#: pruned steps got cheaper (sessions 14-22) they cost less than a full gathering from about
#: 500 entries (median CPU per search, pruned / full: 1.12 at 150 entries per user, 1.04 at
#: 400, 0.93 at 600, 0.84 at 800, 0.73 at 1,000; session 25, benchmarks/README.md).
IN_PROCESS_FULL_GATHERING_ENTRIES = 500


#: An entry's day (``date.toordinal()``, UTC) and the day ranges its text refers to.
Days = tuple[int, tuple[tuple[int, int], ...]]


class DayIndex(Protocol):
    """One user's entries by the day they were said and the day ranges they refer to, as a
    backend may offer it with the postings of a query with a time
    (:attr:`TermPostings.day_index`). Which holders may match the time is then a few set
    operations per group of holders instead of a question per holder
    (:meth:`PrunedGathering._split`); what matches stays the scorer's rule
    (:func:`graphmem._scoring.matching_days`). Keys are the postings' holder keys."""

    def span(self) -> tuple[int, int] | None:
        """The first and last day (ordinals) an entry was said on or refers to; ``None``:
        no entry."""
        ...

    def said_in(self, ranges: Sequence[tuple[int, int]]) -> frozenset[Hashable]:
        """The entries said on a day of one of ``ranges`` (inclusive ordinals)."""
        ...

    def referring_to(self, ranges: Sequence[tuple[int, int]], max_days: int) -> frozenset[Hashable]:
        """The entries referring to a day range of at most ``max_days`` days that shares a
        day with one of ``ranges``."""
        ...

    def unread_among(self, keys: Iterable[Hashable]) -> AbstractSet[Hashable]:
        """Those of ``keys`` whose references the index does not know (their text was not
        read for times yet): they are asked one by one."""
        ...


@dataclass(frozen=True, slots=True)
class TermPostings:
    """The in-scope holders of each term asked for (an empty collection when none), and,
    when asked ``with_times``, each holder's :data:`Days` by key (a holder missing there,
    deleted meanwhile, is taken as possibly matching any time) and, where the backend
    keeps one, its :class:`DayIndex` (``None``: the days are asked holder by holder)."""

    tokens: Mapping[str, Collection[Hashable]] = field(default_factory=dict)
    entities: Mapping[str, Collection[Hashable]] = field(default_factory=dict)
    days: Mapping[Hashable, Days] = field(default_factory=dict)
    day_index: DayIndex | None = None


@dataclass(frozen=True, slots=True)
class FirstRead:
    """A search's first read: the statistics, and what the backend read with them ahead
    of need: every holder of every term (``full``, a small user's full gathering), or the
    postings of the rarer terms (``postings``; terms missing there are read when needed)."""

    corpus: CorpusStats
    full: list[CandidateStats] | None = None
    postings: TermPostings | None = None


@dataclass(frozen=True, slots=True)
class NeighbourhoodRequest:
    """A bounded neighbourhood to fetch: the entries ``around`` (holder keys from
    :meth:`GraphReader.postings`; ``None``: every in-scope entry holding one of
    ``tokens`` / ``entities``) and every entry within ``reach`` ``NEXT`` steps of one
    (0 to :data:`~graphmem._scoring.CONTEXT_STEPS`), each matched against ``tokens`` and
    ``entities``. ``with_times``: each also carries the day it was said and the day ranges
    its text refers to. ``holding_only``: of the entries reached, only those holding a
    request term are returned."""

    tokens: tuple[str, ...]
    entities: tuple[str, ...]
    around: tuple[Hashable, ...] | None = None
    reach: int = 0
    with_times: bool = False
    holding_only: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.reach <= CONTEXT_STEPS:
            raise ValueError(f"reach must be 0 to {CONTEXT_STEPS}, got {self.reach}")


class GraphReader(Protocol):
    """One user's graph in one scope, as a search reads it (see the module docstring).

    A key that names no entry any more (deleted since it was read) is skipped."""

    async def postings(
        self, tokens: Sequence[str], entities: Sequence[str], *, with_times: bool = False
    ) -> TermPostings: ...

    async def neighbourhood(self, request: NeighbourhoodRequest) -> list[CandidateStats]: ...


def seed_terms(dfs: Mapping[TermT, int], entry_count: int, max_df_share: float) -> set[TermT]:
    """The terms a pruned search gathers from: those held by at most ``max_df_share`` of
    the ``entry_count`` entries, and always the rarest held term(s). Terms held by no entry
    are no seeds (they match nothing)."""
    held = {term: df for term, df in dfs.items() if df > 0}
    if not held:
        return set()
    rarest = min(held.values())
    return {term for term, df in held.items() if df == rarest or df <= max_df_share * entry_count}


class SeedShares:
    """Each seed holder's *seed share* (the sum of the shares of the seed terms it holds),
    kept as groups of holders with one share: most holders hold one seed, so a group per
    seed of those, and the few holding several by their sums. Built with set operations
    (at C speed) from each seed's share and holders; a step then chooses holders group by
    group, best first, instead of ranking every holder.

    Built lazily, best share first: a step takes the best few holders, whose shares are
    known from the seeds with the highest shares (the rarer terms, whose postings are the
    short ones), so the commonest seeds' long postings are not sorted out until a step
    reaches their share. Seeds are taken highest share first; once some have been taken,
    every holder of any of them has its exact share (its other seeds are probed), and a
    holder of none of them holds only seeds not taken, so its share is at most theirs
    summed (:attr:`_bound`). A group whose share reaches that bound is the best one left,
    and is handed out; the others wait for more seeds to be taken. A 100k user's
    questions (7 seeds, 26k holders at the median) sorted out 30% of their seeds' holders
    this way (the median question 14%; benchmarks/README.md, "Seed shares built as the
    steps reach them").

    A holder's share is the same float a left-to-right sum would give: the seeds' shares
    added in the order of their postings, longest first (and the bound is such a sum over
    a superset of a holder's seeds, so it is never below one: rounding is monotonic)."""

    def __init__(self, postings: Iterable[tuple[float, Collection[Hashable]]]) -> None:
        ordered = sorted((p for p in postings if p[1]), key=lambda p: -len(p[1]))
        #: Seed ``k`` (its bit in a holder's mask): its share, its holders as a set, and as given.
        self._shares = [share for share, _ in ordered]
        self._sets = [frozenset(holders) for _, holders in ordered]
        self._given = [holders for _, holders in ordered]
        #: The seeds not taken yet, the next one last: highest share first, then shortest.
        self._todo = sorted(range(len(ordered)), key=lambda k: (self._shares[k], -len(self._sets[k])))
        self._taken: list[int] = []
        #: The holders two seeds share, kept from the first seed of the two to be taken.
        self._met: dict[tuple[int, int], AbstractSet[Hashable]] = {}
        self._bound = self._sum_of(self._todo)
        #: Groups known but not handed out yet, by share: ``(share, members, sources)``.
        self._waiting: list[tuple[float, Collection[Hashable], tuple[Collection[Hashable], ...]]] = []
        #: ``(share, members, sources)``, best share first: the holders with this share, and
        #: sequences holding them all, in whose order a step takes some of them: the seed's
        #: postings for the holders of one seed; for the holders of several, the order they
        #: were summed in (hashing's, which may change from process to process: which of
        #: equal holders a step takes first changes the work, never the answer). Read
        #: through :attr:`groups`, which builds more as it is read.
        self._handed: list[tuple[float, Collection[Hashable], tuple[Collection[Hashable], ...]]] = []

    def _sum_of(self, seeds: Iterable[int]) -> float:
        total = 0.0
        for k in sorted(seeds):
            total += self._shares[k]
        return total

    @property
    def groups(self) -> Iterator[tuple[float, Collection[Hashable], tuple[Collection[Hashable], ...]]]:
        """The groups, best share first (each step reads them again from the first)."""
        read = 0
        while True:
            while read < len(self._handed):
                yield self._handed[read]
                read += 1
            if not self._hand_out():
                return

    def _hand_out(self) -> bool:
        """Take seeds until a waiting group is known to be the best left, and hand out every
        such group; ``False`` when every group was handed out."""
        waiting = self._waiting
        while self._todo and (not waiting or waiting[-1][0] < self._bound):
            self._take(self._todo.pop())
        if not waiting:
            return False
        bound = self._bound if self._todo else -math.inf
        while waiting and waiting[-1][0] >= bound:
            self._handed.append(waiting.pop())
        return True

    def _take(self, k: int) -> None:
        """Group the holders of seed ``k`` that no seed taken before holds, by their shares."""
        sets, shares = self._sets, self._shares
        members = sets[k]
        earlier: set[Hashable] = set()
        for j in self._taken:
            earlier |= self._met.pop((j, k))
        later: set[Hashable] = set()
        mine: list[tuple[int, AbstractSet[Hashable]]] = []
        for j in self._todo:
            met = members & sets[j]  # (a set's intersection walks the smaller side)
            self._met[(k, j)] = met
            if met:
                mine.append((j, met))
                later |= met
        later -= earlier
        self._taken.append(k)
        self._bound = self._sum_of(self._todo)
        found: dict[float, list[Hashable]] = {}
        if later:
            # Each new holder of several seeds: its seeds as the bits of a mask (from the
            # holders this seed shares with each other one), then the holders with one mask,
            # whose share is summed once, in the seeds' order.
            mask_of = dict.fromkeys(later, 1 << k)
            for j, common in mine:
                bit = 1 << j
                for key in common:
                    if key in mask_of:
                        mask_of[key] |= bit
            by_mask: dict[int, list[Hashable]] = {}
            for key, mask in mask_of.items():
                holding = by_mask.get(mask)
                if holding is None:
                    by_mask[mask] = [key]
                else:
                    holding.append(key)
            for mask, holding in by_mask.items():
                total = 0.0
                for bit, share in enumerate(shares):
                    if mask >> bit & 1:
                        total += share
                found.setdefault(total, []).extend(holding)
        new: list[tuple[float, Collection[Hashable], tuple[Collection[Hashable], ...]]] = []
        for total, holding in found.items():
            keys = frozenset(holding)
            new.append((total, keys, (keys,)))
        # The holders of this seed only: a view, not a copy (a step takes a few of a long
        # posting's holders, in its order).
        removed = earlier | later
        only = _Without(members, removed) if removed else members
        if only:
            new.append((shares[k], only, (self._given[k],)))
        if new:
            # Waiting groups are kept best share last (a step hands them out from there).
            self._waiting.extend(new)
            self._waiting.sort(key=lambda g: g[0])

    def expand(
        self, min_share: float, max_holders: int | None, expanded: Collection[Hashable] = frozenset()
    ) -> tuple[list[Hashable], float | None]:
        """The holders to expand, none of ``expanded``: those with a share of at least
        ``min_share``, and at most ``max_holders`` of them (``None``: no cap), the highest
        first; and the highest share among the other holders not in ``expanded`` (``None``
        when there are none)."""
        chosen: list[Hashable] = []
        for share, members, order in self.groups:
            if expanded and members <= expanded:  # type: ignore[operator]
                continue
            room = None if max_holders is None else max_holders - len(chosen)
            if share < min_share or room == 0:
                return chosen, share
            left = members - expanded if expanded else members  # type: ignore[operator]
            if room is None or len(left) <= room:
                chosen.extend(left)
                continue
            chosen.extend(_first(left, room, order))
            return chosen, share
        return chosen, None

    def expand_timed(
        self,
        known_off: Callable[[Hashable], bool],
        plan: GatherPlan,
        max_holders: int | None,
        untimed_weight: float,
        expanded: Collection[Hashable] = frozenset(),
        split: Callable[[Collection[Hashable]], tuple[Collection[Hashable], Collection[Hashable]]] | None = None,
    ) -> tuple[list[Hashable], float | None, float | None]:
        """:meth:`expand` for a query with a time, where a holder for which ``known_off``
        is true is known not to match it: those need ``plan.min_share_untimed``, and under
        the cap they rank by their share times ``untimed_weight`` (what the time leaves of
        their score). ``known_off`` is asked only about the holders that could be chosen,
        and about others until each kind's highest share is known. ``split``, when given,
        tells of a whole group at once which of its holders may match and which do not
        (what ``known_off`` tells of each), and is asked instead.

        Returns:
            The holders to expand, the highest share among the others that may match the time,
            and among those that do not (each ``None`` when there are none).
        """
        floor = plan.min_share
        untimed_floor = floor if plan.min_share_untimed is None else plan.min_share_untimed
        lowest = min(floor, untimed_floor)
        chosen: list[Hashable] = []
        rest: list[float | None] = [None, None]  # may match the time, does not
        # Parts of groups known not to match, waiting for their rank (their share times
        # untimed_weight) to come: groups come best share first, so this stays ordered.
        waiting: list[tuple[float, float, Collection[Hashable], tuple[Collection[Hashable], ...]]] = []
        on_part: Collection[Hashable]
        off_part: Collection[Hashable]

        def offer(
            share: float, off: bool, members: Collection[Hashable], order: tuple[Collection[Hashable], ...]
        ) -> None:
            room = None if max_holders is None else max_holders - len(chosen)
            if share < (untimed_floor if off else floor) or room == 0:
                taken = 0
            elif room is None or len(members) <= room:
                chosen.extend(members)
                return
            else:
                chosen.extend(_first(members, room, order))
                taken = room
            if taken < len(members):
                best = rest[off]
                rest[off] = share if best is None else max(best, share)

        for share, members, order in self.groups:
            while waiting and waiting[0][0] >= share:
                _, theirs, their_part, their_order = waiting.pop(0)
                offer(theirs, True, their_part, their_order)
            if expanded and members <= expanded:  # type: ignore[operator]
                continue
            room = None if max_holders is None else max_holders - len(chosen)
            if room == 0 or share < lowest:
                # None of these can be chosen: only whether each kind is among them counts.
                if rest[0] is not None and rest[1] is not None:
                    break  # and those after them (what waits is offered below)
                left = members - expanded if expanded else members  # type: ignore[operator]
                if split is not None:
                    for kind, part in enumerate(split(left)):
                        if part and (rest[kind] is None or rest[kind] < share):  # type: ignore[operator]
                            rest[kind] = share
                    continue
                for key in left:
                    off = known_off(key)
                    if rest[off] is None or rest[off] < share:  # type: ignore[operator]
                        rest[off] = share
                        if rest[not off] is not None and rest[not off] >= share:  # type: ignore[operator]
                            break
                continue
            left = members - expanded if expanded else members  # type: ignore[operator]
            if room is not None and share >= max(floor, untimed_floor) and len(left) > room:
                # More than the room, each one eligible whether it matches the time or not:
                # the first ones in the postings' order fill it, not asked about. Those left
                # may be of either kind, so each kind's highest share left is this (a bound).
                chosen.extend(_first(left, room, order))
                for kind in (0, 1):
                    best = rest[kind]
                    rest[kind] = share if best is None else max(best, share)
                continue
            if split is not None:
                # Both kinds at once, by set operations (not a question per holder); those
                # known not to match wait for their rank, as below.
                on_part, off_part = split(left)
            elif room is not None and share >= floor and len(left) > room:
                # More than the room, and only those that may match the time eligible: the
                # first such ones in the postings' order fill it, when there are enough.
                on_first, off_seen, asked_all = _first_matching(left, room, order, known_off)
                if not asked_all:
                    chosen.extend(on_first)
                    for kind in (0, 1):
                        best = rest[kind]
                        rest[kind] = share if best is None else max(best, share)
                    continue
                on_part, off_part = on_first, frozenset(off_seen)
            else:
                off_part = frozenset(k for k in left if known_off(k))
                on_part = left - off_part if off_part else left  # type: ignore[operator]
            if on_part:
                offer(share, False, on_part, order)
            if off_part:
                waiting.append((share * untimed_weight, share, off_part, order))
        for _, theirs, their_part, their_order in waiting:
            offer(theirs, True, their_part, their_order)
        return chosen, rest[0], rest[1]


class _Without(AbstractSet[Hashable]):
    """``base`` without ``removed`` (a subset of it), as a set, read without copying
    ``base``: its length, membership and order (``base``'s) are read through."""

    __slots__ = ("_base", "_removed")

    def __init__(self, base: AbstractSet[Hashable], removed: AbstractSet[Hashable]) -> None:
        self._base = base
        self._removed = removed

    @classmethod
    def _from_iterable(cls, it: Iterable[Hashable]) -> frozenset[Hashable]:  # type: ignore[override]
        # What the Set mixins (``&``, ``|``) build: a plain frozenset.
        return frozenset(it)

    def __len__(self) -> int:
        return len(self._base) - len(self._removed)

    def __contains__(self, key: object) -> bool:
        return key in self._base and key not in self._removed

    def __iter__(self) -> Iterator[Hashable]:
        removed = self._removed
        return (key for key in self._base if key not in removed)

    def __sub__(self, other: AbstractSet[Any]) -> AbstractSet[Hashable]:
        # Linear in ``other`` (the few holders already expanded), not in ``base``.
        gone = self._removed | (other & self._base)
        return _Without(self._base, gone) if len(gone) > len(self._removed) else self

    def __le__(self, other: AbstractSet[Any]) -> bool:
        return len(self) <= len(other) and all(key in other for key in self)

    __hash__ = None  # type: ignore[assignment]  # a view of sets, like a set


def _first(members: Collection[Hashable], room: int, sources: Iterable[Collection[Hashable]]) -> list[Hashable]:
    """``room`` of ``members``, the first ones in the order of ``sources`` (which hold them)."""
    taken: dict[Hashable, None] = {}
    for source in sources:
        for key in source:
            if key in members and key not in taken:
                taken[key] = None
                if len(taken) == room:
                    return list(taken)
    return list(taken)


def _first_matching(
    members: Collection[Hashable],
    room: int,
    sources: Iterable[Collection[Hashable]],
    known_off: Callable[[Hashable], bool],
) -> tuple[list[Hashable], list[Hashable], bool]:
    """The first ``room`` of ``members`` for which ``known_off`` is false, in the order of
    ``sources`` (which hold them all), and those met before for which it is true; and
    whether every member was asked about."""
    on: list[Hashable] = []
    off: list[Hashable] = []
    sources = tuple(sources)
    if isinstance(members, _Without) and len(sources) == 1 and sources[0] is members._base:
        # One seed's holders less some (the usual group): its posting holds each once, and
        # a member is one not removed (read here, not through the view, per holder).
        removed = members._removed
        for key in sources[0]:
            if key not in removed:
                if known_off(key):
                    off.append(key)
                else:
                    on.append(key)
                    if len(on) == room:
                        return on, off, len(on) + len(off) == len(members)
        return on, off, True
    seen: set[Hashable] = set()
    for source in sources:
        for key in source:
            if key in members and key not in seen:
                seen.add(key)
                if known_off(key):
                    off.append(key)
                else:
                    on.append(key)
                    if len(on) == room:
                        return on, off, len(seen) == len(members)
    return on, off, True


class PrunedGathering:
    """The steps of one pruned search: each reads what its :class:`GatherPlan` asks for
    and gives the scores of everything read so far (scoring only what it read).

    Postings are read once per term, and a holder's neighbourhood once per search: a later
    step only adds seeds or holders (more candidates only bring computed scores closer to
    the true ones, and a holder expanded before is no longer "not expanded")."""

    def __init__(
        self,
        reader: GraphReader,
        tokens: Sequence[str],
        entities: Sequence[str],
        corpus: CorpusStats,
        weights: ScoringWeights,
        when: QueryTime | None,
        prefetched: TermPostings | None = None,
        groups: TermGroups | None = None,
    ) -> None:
        self._reader = reader
        self._tokens = tuple(tokens)
        self._entities = tuple(entities)
        self._corpus = corpus
        self._weights = weights
        self._when = when
        self._groups = groups
        self._token_shares, self._entity_shares = query_shares(tokens, entities, corpus, weights, groups)
        self._postings: dict[tuple[int, str], Collection[Hashable]] = {}
        #: With a time in the query: the holders' days from each read, and whether each holder
        #: asked about does not match it (by its days: many holders share theirs, so each
        #: distinct one is matched once).
        self._days: list[Mapping[Hashable, Days]] = []
        self._off: dict[Hashable, bool] = {}
        self._days_off: dict[Days | int, bool] = {}
        #: The backend's index of days, when it keeps one, and the entries it says match the
        #: time (read on first use).
        self._day_index: DayIndex | None = None
        self._matching: frozenset[Hashable] | None = None
        #: The seed shares of the last seeds asked for (a later step often keeps them).
        self._shares: tuple[tuple[tuple[str, ...], tuple[str, ...]], SeedShares] | None = None
        self._expanded: set[Hashable] = set()
        #: Scores what each step adds (a step used to score every candidate read so far again).
        self._scorer = QueryScorer(tokens, entities, corpus, weights, when=when, groups=groups)
        #: The highest seed share of a holder the last step did not expand (``None``: none);
        #: with a time in the query, of those that may match it, and of those that do not
        #: (:attr:`unexpanded_untimed`).
        self.unexpanded: float | None = None
        self.unexpanded_untimed: float | None = None
        if prefetched is not None:
            self._take(prefetched, list(prefetched.tokens), list(prefetched.entities))

    def first_plan(self, max_df_share: float) -> GatherPlan:
        """Seeds by :func:`seed_terms`; every holder may be expanded."""
        seeds = seed_terms(
            {
                **{(0, t): df for t, df in self._corpus.token_df.items()},
                **{(1, e): df for e, df in self._corpus.entity_df.items()},
            },
            self._corpus.entry_count,
            max_df_share,
        )
        return GatherPlan(
            frozenset(t for kind, t in seeds if kind == 0), frozenset(e for kind, e in seeds if kind == 1), 0.0
        )

    def weak_terms(self, plan: GatherPlan) -> tuple[list[str], list[str]]:
        """The held query terms that are no seeds of ``plan`` (read only near seed holders)."""
        return (
            [t for t, df in self._corpus.token_df.items() if df and t not in plan.seed_tokens],
            [e for e, df in self._corpus.entity_df.items() if df and e not in plan.seed_entities],
        )

    def _take(self, read: TermPostings, tokens: Sequence[str], entities: Sequence[str]) -> None:
        """Keep the postings of these terms (none: no holder), and with a time in the query
        their holders' days."""
        fresh = [read.tokens.get(t, ()) for t in tokens] + [read.entities.get(e, ()) for e in entities]
        self._postings.update(((0, t), holders) for t, holders in zip(tokens, fresh, strict=False))
        self._postings.update(((1, e), holders) for e, holders in zip(entities, fresh[len(tokens) :], strict=True))
        if self._when is not None:
            self._days.append(read.days)
            if self._day_index is None:
                self._day_index = read.day_index

    def _known_off(self, key: Hashable) -> bool:
        """Whether the holder ``key`` is known not to match the query's time (a holder whose
        days are unknown may match it)."""
        off = self._off.get(key)
        if off is None:
            known = None
            for days in self._days:
                if (known := days.get(key)) is not None:
                    break
            if known is None:
                off = False
            else:
                assert self._when is not None
                # Most entries refer to no time: their day alone decides (an int key is cheaper).
                memo_key = known[0] if not known[1] else known
                off = self._days_off.get(memo_key)
                if off is None:
                    off = days_match(known[0], known[1], self._when, self._weights) is None
                    self._days_off[memo_key] = off
            self._off[key] = off
        return off

    def _split(self, members: Collection[Hashable]) -> tuple[Collection[Hashable], Collection[Hashable]]:
        """The holders of ``members`` that may match the query's time, and those known not
        to: what :meth:`_known_off` tells of each, read from the backend's
        :class:`DayIndex` (only holders whose references it does not know are asked one
        by one)."""
        index = self._day_index
        assert index is not None
        matching = self._matching
        if matching is None:
            assert self._when is not None
            span = index.span()
            if span is None:
                matching = frozenset()
            else:
                days = matching_days(self._when, self._weights, *span)
                matching = index.said_in(days.said) | index.referring_to(days.referred, days.longest_reference)
            self._matching = matching
        # One seed's holders less some (the usual group) are read through the posting.
        base, removed = (members._base, members._removed) if isinstance(members, _Without) else (members, None)
        on = set(matching.intersection(base))  # (a set's intersection walks the smaller side)
        known_off = self._known_off
        on.update(k for k in index.unread_among(base) if k not in on and not known_off(k))
        if removed:
            on.difference_update(removed)
        if len(on) == len(members):
            return members, ()
        return on, members - on  # type: ignore[operator]

    async def step(self, plan: GatherPlan, max_holders: int | None) -> QueryScores:
        """Read what ``plan`` needs that no earlier step read, expanding at most
        ``max_holders`` new holders (``None``: every one the plan allows), and score
        everything read so far. :attr:`unexpanded` is then the highest seed share of a
        holder not expanded (``None``: every holder was)."""
        seed_tokens = [t for t in sorted(plan.seed_tokens) if t in self._token_shares]
        seed_entities = [e for e in sorted(plan.seed_entities) if e in self._entity_shares]
        missing_t = [t for t in seed_tokens if (0, t) not in self._postings]
        missing_e = [e for e in seed_entities if (1, e) not in self._postings]
        when = self._when
        if missing_t or missing_e:
            read = await self._reader.postings(missing_t, missing_e, with_times=when is not None)
            self._take(read, missing_t, missing_e)
        seeds = (tuple(seed_tokens), tuple(seed_entities))
        if self._shares is None or self._shares[0] != seeds:
            self._shares = seeds, SeedShares(
                [
                    *((self._token_shares[t], self._postings[(0, t)]) for t in seed_tokens),
                    *((self._entity_shares[e], self._postings[(1, e)]) for e in seed_entities),
                ]
            )
        shares = self._shares[1]
        expanded = self._expanded
        unexpanded_untimed = None
        if when is None or self._weights.time_share <= 0.0:
            expand, unexpanded = shares.expand(plan.min_share, max_holders, expanded)
        else:
            keep = 1.0 / (1.0 + self._weights.time_share)
            expand, unexpanded, unexpanded_untimed = shares.expand_timed(
                self._known_off,
                plan,
                max_holders,
                keep,
                expanded,
                split=self._split if self._day_index is not None else None,
            )
        if expand:
            # Entries holding no query term add nothing to the scores: their direct score is
            # 0, and a holder's neighbour lists (links are symmetric) lend them their context.
            found = await self._reader.neighbourhood(
                NeighbourhoodRequest(
                    self._tokens,
                    self._entities,
                    tuple(expand),
                    CONTEXT_STEPS,
                    with_times=self._when is not None,
                    holding_only=True,
                )
            )
            expanded.update(expand)
            self._scorer.add(found)
        self.unexpanded, self.unexpanded_untimed = unexpanded, unexpanded_untimed
        weak_tokens, weak_entities = self.weak_terms(plan)
        return self._scorer.scores(
            weak_tokens=weak_tokens,
            weak_entities=weak_entities,
            unexpanded_share=unexpanded,
            unexpanded_untimed_share=unexpanded_untimed,
        )


async def gather_scores(
    reader: GraphReader,
    tokens: Sequence[str],
    entities: Sequence[str],
    corpus: CorpusStats,
    *,
    limit: int,
    weights: ScoringWeights,
    when: QueryTime | None,
    seed_df_share: float | None,
    first_expansion: int | None,
    full_at_most: int,
    full: list[CandidateStats] | None = None,
    prefetched: TermPostings | None = None,
    groups: TermGroups | None = None,
) -> QueryScores:
    """Score a query, reading no more of the graph than it takes to know its first
    ``limit`` entries exactly (:meth:`ScoreGathering.scores`, once)."""
    gathering = ScoreGathering(
        reader,
        tokens,
        entities,
        corpus,
        weights=weights,
        when=when,
        seed_df_share=seed_df_share,
        first_expansion=first_expansion,
        full_at_most=full_at_most,
        full=full,
        prefetched=prefetched,
        groups=groups,
    )
    return await gathering.scores(limit)


class ScoreGathering:
    """The gathering of one query's scores, which a search may ask again for a deeper
    ``limit`` (rule 7 of the scorer ranks deeper when replies fold): each call reads only
    what the deeper limit needs beyond what the calls before read.

    A user holding at most ``full_at_most`` entries, or any user with ``seed_df_share=None``,
    is read in one full gathering (every holder of every query term; ``full`` when the
    caller read it already), which decides any limit. Otherwise the search first reads the
    seeds' postings (those not ``prefetched`` by the caller) and expands at most
    ``first_expansion * limit`` of their holders (``None``: all), then what
    :func:`~graphmem._scoring.plan_gathering` asks for, each step at most
    :data:`EXPANSION_GROWTH` times as many new holders as the one before, best first, until
    the scores decide; when only a full gathering can, that (see ``graphmem._scoring``,
    "Pruning" and what follows). A later call goes on from the last step: a step only adds
    seeds or holders, so what was read stays read and the bounds stay true."""

    def __init__(
        self,
        reader: GraphReader,
        tokens: Sequence[str],
        entities: Sequence[str],
        corpus: CorpusStats,
        *,
        weights: ScoringWeights,
        when: QueryTime | None,
        seed_df_share: float | None,
        first_expansion: int | None,
        full_at_most: int,
        full: list[CandidateStats] | None = None,
        prefetched: TermPostings | None = None,
        groups: TermGroups | None = None,
    ) -> None:
        self._reader = reader
        self._tokens, self._entities = tuple(tokens), tuple(entities)
        self._corpus = corpus
        self._weights, self._when, self._groups = weights, when, groups
        self._seed_df_share = seed_df_share
        self._first_expansion = first_expansion
        self._pruned = seed_df_share is not None and corpus.entry_count > full_at_most
        self._full = full
        self._prefetched = prefetched
        self._gathering: PrunedGathering | None = None
        #: The next plan, and the one the last step ran.
        self._plan: GatherPlan | None = None
        self._ran: GatherPlan | None = None
        self._max_holders: int | None = None
        self._last: QueryScores | None = None

    async def _everything(self) -> QueryScores:
        if self._full is None:
            every_holder = NeighbourhoodRequest(self._tokens, self._entities, with_times=self._when is not None)
            self._full = await self._reader.neighbourhood(every_holder)
        self._pruned = False
        self._last = score_query(
            self._tokens, self._entities, self._corpus, self._full, self._weights, when=self._when, groups=self._groups
        )
        return self._last

    def _plan_after(self, scores: QueryScores, limit: int) -> None:
        """The plan that can decide the first ``limit`` after the last step gave ``scores``
        (:func:`~graphmem._scoring.plan_gathering`; ``None``: only a full gathering can),
        and the next step's cap on new holders."""
        gathering, ran = self._gathering, self._ran
        assert gathering is not None and ran is not None
        self._plan = plan_gathering(
            scores,
            self._corpus,
            *gathering.weak_terms(ran),
            gathering.unexpanded,
            limit,
            unexpanded_untimed_share=gathering.unexpanded_untimed,
        )
        if self._max_holders is not None:
            self._max_holders *= EXPANSION_GROWTH

    async def scores(self, limit: int) -> QueryScores:
        """The scores, gathered so far that their first ``limit`` entries are exact."""
        last = self._last
        if last is not None and (not self._pruned or last.decides(limit)):
            return last
        if not self._pruned:
            return await self._everything()
        gathering = self._gathering
        if gathering is None:
            assert self._seed_df_share is not None
            gathering = self._gathering = PrunedGathering(
                self._reader,
                self._tokens,
                self._entities,
                self._corpus,
                self._weights,
                self._when,
                self._prefetched,
                self._groups,
            )
            self._plan = gathering.first_plan(self._seed_df_share)
            self._max_holders = None if self._first_expansion is None else self._first_expansion * limit
        elif last is not None:
            self._plan_after(last, limit)  # asked deeper: plan what can decide it
        while self._plan is not None:
            plan = self._ran = self._plan
            scores = self._last = await gathering.step(plan, self._max_holders)
            if scores.decides(limit):
                return scores
            self._plan_after(scores, limit)
        return await self._everything()
