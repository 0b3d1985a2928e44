"""Lab: Cypher for the fetch primitives of a pruned one-user search on Neo4j, timed.

Not a production path. It builds (or reuses) one user holding ``--size`` LoCoMo turns
cycled as ``benchmarks/speed.py --entries-per-user 0`` builds them (decompositions cached,
so loading is graph writing only), runs the speed benchmark's questions through the
production ``Neo4jMemoryService`` once to record every read it makes (each pruned
gathering's ``SeedRequest``), then replays alternative Cypher for the same inputs:

- *postings* (choosing the seed holders to expand): today's choice in Cypher, versus the
  postings returned per term (entity ids, internal ids, element ids) and chosen in Python
  with :func:`graphmem._service.expand_holders`, versus ``sum(share)`` ordered in Cypher;
- *neighbourhood* (reach 2 of the chosen holders, each entry with the query terms it
  holds, its neighbours one and two steps away and its author): today's pattern, looked
  up by id, by internal id, and with the matched terms found from the query's term nodes;
- *round trips*: the term statistics and the seed postings in one query.

Every variant runs in an auto-commit read transaction of a read session, as
``Neo4jMemoryService._read`` does; rows are fully consumed. The variants alternate query by
query (the order reversed every other one). Wall time per read and the server's own time
(``result_available_after + result_consumed_after``)::

    GRAPHMEM_NEO4J_URI=bolt://127.0.0.1:7731 python benchmarks/neo4j_primitives.py --size 10000
    python benchmarks/neo4j_primitives.py --size 100000 --queries 100 --repeats 2

``--prototype`` also searches through a lab subclass whose pruned gathering is the two
primitives (postings chosen in Python, then the neighbourhood) and compares its answers and
wall time with the production service, search by search.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.speed import build_corpus, build_queries

# --------------------------------------------------------------------------- the variants

_SCOPE = "(s.project_id IS NULL OR s.project_id = $project_id)"

#: Choosing in Cypher, as cypher/gather_pruned.cypher does (its first CALL alone).
CHOOSE_IN_CYPHER = f"""
CALL () {{
  UNWIND $seed_tokens AS seed
  MATCH (:Token {{app_name: $app_name, user_id: $user_id, value: seed[0]}})<-[:HAS_TOKEN]-(s:Entry)
  WHERE {_SCOPE}
  RETURN s, seed[1] AS share
  UNION ALL
  UNWIND $seed_entities AS seed
  MATCH (:Entity {{app_name: $app_name, user_id: $user_id, name: seed[0]}})<-[:MENTIONS]-(s:Entry)
  WHERE {_SCOPE}
  RETURN s, seed[1] AS share
}}
WITH s, sum(share) AS share
ORDER BY share DESC
WITH collect([s, share]) AS ranked
WITH ranked, [h IN ranked WHERE h[1] >= $min_share][..coalesce($max_holders, size(ranked))] AS expanded
RETURN [h IN expanded | h[0].id] AS holders,
       CASE WHEN size(expanded) < size(ranked) THEN ranked[size(expanded)][1] END AS unexpanded
"""


def _postings(what: str, scope: str | None = _SCOPE, label: str = ":Entry") -> str:
    """One row per seed term: [kind, term, the in-scope holders as ``what``]."""
    where = f"WHERE {scope}" if scope else ""
    return f"""
UNWIND $seed_tokens AS seed
MATCH (:Token {{app_name: $app_name, user_id: $user_id, value: seed[0]}})<-[:HAS_TOKEN]-(s{label})
{where}
RETURN 0 AS kind, seed[0] AS term, collect({what}) AS holders
UNION ALL
UNWIND $seed_entities AS seed
MATCH (:Entity {{app_name: $app_name, user_id: $user_id, name: seed[0]}})<-[:MENTIONS]-(s{label})
{where}
RETURN 1 AS kind, seed[0] AS term, collect({what}) AS holders
"""


POSTINGS_IDS = _postings("s.id")
POSTINGS_NODE_IDS = _postings("id(s)")
POSTINGS_ELEMENT_IDS = _postings("elementId(s)")
POSTINGS_NODE_IDS_NO_SCOPE = _postings("id(s)", scope=None)
#: The scope told by a label instead of a property (no such label exists yet: what a
#: label check costs), and no check at all (HAS_TOKEN and MENTIONS start at entries only).
POSTINGS_NODE_IDS_LABEL_SCOPE = _postings("id(s)", scope="(NOT s:InProject OR s.project_id = $project_id)")
POSTINGS_NODE_IDS_NO_LABEL = _postings("id(s)", scope=None, label="")

_SUMMED = f"""
CALL () {{
  UNWIND $seed_tokens AS seed
  MATCH (:Token {{app_name: $app_name, user_id: $user_id, value: seed[0]}})<-[:HAS_TOKEN]-(s:Entry)
  WHERE {_SCOPE}
  RETURN s, seed[1] AS share
  UNION ALL
  UNWIND $seed_entities AS seed
  MATCH (:Entity {{app_name: $app_name, user_id: $user_id, name: seed[0]}})<-[:MENTIONS]-(s:Entry)
  WHERE {_SCOPE}
  RETURN s, seed[1] AS share
}}
WITH s, sum(share) AS share
"""
#: Every holder's summed share, ordered in Cypher, all rows to Python.
SUMMED_ALL = _SUMMED + "RETURN id(s) AS holder, share ORDER BY share DESC"
#: The best ``max_holders + 1`` by summed share (a top-k in Cypher), as rows.
SUMMED_TOP = _SUMMED + "RETURN id(s) AS holder, share ORDER BY share DESC LIMIT $top"

_ROW = """[
    e.id,
    {terms},
    e.project_id,
    [(e)-[:NEXT]-(n:Entry) | n.id],
    [(e)-[:NEXT]-(:Entry)-[:NEXT]-(f:Entry) WHERE f <> e | f.id],
    e.author,
    CASE WHEN $with_times THEN [e.timestamp, coalesce(e.time_refs, [])] END
  ]"""
_TERMS_BY_VALUE = (
    "[(e)-[:HAS_TOKEN]->(t:Token) WHERE t.value IN $tokens | t.value],\n"
    "    [(e)-[:MENTIONS]->(n:Entity) WHERE n.name IN $entities | n.name]"
)
_TERMS_BY_NODE = "[t IN qt WHERE (e)-[:HAS_TOKEN]->(t) | t.value],\n    [n IN qn WHERE (e)-[:MENTIONS]->(n) | n.name]"
_QUERY_NODES = """
CALL () {
  OPTIONAL MATCH (t:Token {app_name: $app_name, user_id: $user_id}) WHERE t.value IN $tokens
  RETURN collect(t) AS qt
}
CALL () {
  OPTIONAL MATCH (n:Entity {app_name: $app_name, user_id: $user_id}) WHERE n.name IN $entities
  RETURN collect(n) AS qn
}
"""

#: The reach-2 neighbourhood of given entry ids, today's row (gather_pruned's second CALL).
NEIGHBOURHOOD_BY_ID = f"""
UNWIND $ids AS id
MATCH (s:Entry {{id: id}})
MATCH (s)-[:NEXT*0..2]-(e:Entry)
WITH DISTINCT e
RETURN collect({_ROW.format(terms=_TERMS_BY_VALUE)}) AS candidates
"""
#: The same, with the id index forced (fetch_entries.cypher needs the hint).
NEIGHBOURHOOD_BY_ID_HINT = f"""
UNWIND $ids AS id
MATCH (s:Entry {{id: id}})
USING INDEX s:Entry(id)
WHERE s.app_name = $app_name AND s.user_id = $user_id
MATCH (s)-[:NEXT*0..2]-(e:Entry)
WITH DISTINCT e
RETURN collect({_ROW.format(terms=_TERMS_BY_VALUE)}) AS candidates
"""
#: By internal node ids (as the postings variants return them).
NEIGHBOURHOOD_BY_NODE_ID = f"""
MATCH (s:Entry) WHERE id(s) IN $node_ids
MATCH (s)-[:NEXT*0..2]-(e:Entry)
WITH DISTINCT e
RETURN collect({_ROW.format(terms=_TERMS_BY_VALUE)}) AS candidates
"""
#: By internal ids, the matched terms found from the query's term nodes (expand-into).
NEIGHBOURHOOD_BY_NODE_ID_TERM_NODES = f"""
{_QUERY_NODES}
MATCH (s:Entry) WHERE id(s) IN $node_ids
MATCH (s)-[:NEXT*0..2]-(e:Entry)
WITH DISTINCT e, qt, qn
RETURN collect({_ROW.format(terms=_TERMS_BY_NODE)}) AS candidates
"""
#: The whole of today's pruned gathering (for the sum of the two primitives).
GATHER_PRUNED = (Path(__file__).resolve().parent.parent / "cypher" / "gather_pruned.cypher").read_text()

#: The term statistics and, for the terms on at most $seed_df_share of the entries (and
#: the rarest held term), their postings as internal ids: one round trip for both.
STATS_AND_POSTINGS = """
CALL () {
  MATCH (e:Entry {app_name: $app_name, user_id: $user_id})
  RETURN count(e) AS entry_count
}
CALL () {
  UNWIND $tokens AS value
  MATCH (t:Token {app_name: $app_name, user_id: $user_id, value: value})
  RETURN collect([value, COUNT { (t)<-[:HAS_TOKEN]-() }, t.speaker, t]) AS token_df
}
CALL () {
  UNWIND $entities AS name
  MATCH (n:Entity {app_name: $app_name, user_id: $user_id, name: name})
  RETURN collect([name, COUNT { (n)<-[:MENTIONS]-() }, n]) AS entity_df
}
WITH entry_count, token_df, entity_df,
     reduce(m = null, r IN token_df + entity_df | CASE WHEN r[1] > 0 AND (m IS NULL OR r[1] < m) THEN r[1] ELSE m END) AS rarest
CALL (entry_count, token_df, entity_df, rarest) {
  UNWIND token_df + entity_df AS r
  WITH r WHERE r[1] > 0 AND (r[1] <= $seed_df_share * entry_count OR r[1] = rarest)
  WITH r, r[-1] AS term
  MATCH (term)<-[:HAS_TOKEN|MENTIONS]-(s:Entry)
  WHERE s.project_id IS NULL OR s.project_id = $project_id
  RETURN collect([r[0], size(r) = 4, collect(id(s))]) AS postings
}
RETURN entry_count, [r IN token_df | r[..3]] AS token_df, [r IN entity_df | r[..2]] AS entity_df, postings
"""
# (an aggregate inside a list is not allowed: the last CALL is rewritten below)
STATS_AND_POSTINGS = STATS_AND_POSTINGS.replace(
    """  RETURN collect([r[0], size(r) = 4, collect(id(s))]) AS postings""",
    """  WITH r, collect(id(s)) AS holders
  RETURN collect([r[0], size(r) = 4, holders]) AS postings""",
)
TERM_STATS = (Path(__file__).resolve().parent.parent / "cypher" / "term_stats.cypher").read_text()
ENTRY_COUNT = "MATCH (e:Entry {app_name: $app_name, user_id: $user_id}) RETURN count(e) AS entry_count"


# --------------------------------------------------------------------------- recording


@dataclass
class Recorded:
    """One pruned gathering the production search made."""

    params: dict[str, Any]  # gather_pruned's parameters
    round_no: int  # 1 = the search's first pruned gathering
    expanded_ids: list[str]  # the holders it expanded (from today's choice in Cypher)


class Timer:
    """Runs one statement as ``Neo4jMemoryService._read`` does; wall and server ms."""

    def __init__(self, driver: Any) -> None:
        from neo4j import READ_ACCESS

        self.driver = driver
        self.mode = READ_ACCESS

    async def run(self, query: str, params: dict[str, Any]) -> tuple[list[Any], float, float]:
        t0 = time.perf_counter()
        async with self.driver.session(default_access_mode=self.mode) as session:
            result = await session.run(query, params)
            eager = await result.to_eager_result()
        wall = (time.perf_counter() - t0) * 1000
        summary = eager.summary
        server = float((summary.result_available_after or 0) + (summary.result_consumed_after or 0))
        return list(eager.records), wall, server


def _choose_in_python(rows: Sequence[Any], shares: dict[tuple[int, str], float], min_share: float, max_holders: int | None) -> tuple[list[Any], float | None]:
    from graphmem._service import expand_holders

    summed: dict[Any, float] = {}
    for kind, term, holders in rows:
        share = shares[(kind, term)]
        if not summed:
            summed = dict.fromkeys(holders, share)
            continue
        get = summed.get
        for h in holders:
            summed[h] = get(h, 0.0) + share
    return expand_holders(summed, min_share, max_holders)


# --------------------------------------------------------------------------- main


def _pct(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * pct / 100))]


async def _load(service: Any, app: str, size: int, data: str | None) -> tuple[str, Any]:
    from graphmem import Content, MemoryEntry

    corpus = build_corpus(size, 0, data)
    user = corpus[0].user
    stats = await service.stats(app, user)
    if stats.entries:
        print(f"# reusing {app}/{user}: {stats.entries} entries")
        return user, corpus
    started = time.perf_counter()
    sessions = {
        sid: [MemoryEntry(content=Content(role="user").with_text(t.text), author=t.speaker, timestamp=t.timestamp) for t in turns]
        for sid, turns in corpus[0].sessions
    }
    await service.add_sessions(app, user, sessions)
    print(f"# stored {size} entries in {time.perf_counter() - started:.0f} s")
    return user, corpus


async def _main(args: argparse.Namespace) -> int:
    from benchmarks._systems import CachingDecomposer
    from graphmem import SearchRequest, open_memory
    from graphmem.backends.neo4j import Neo4jMemoryService

    app = f"graphmem-lab-{args.size}"
    corpus = build_corpus(args.size, 0, args.data)
    decomposer = CachingDecomposer(n_process=args.processes)
    decomposer.decompose_many(sorted({t.text for u in corpus for _, s in u.sessions for t in s}))
    queries = [q for _, q in build_queries(corpus, args.queries, args.data)]
    decomposer.decompose_many(queries)
    service = await open_memory(args.uri, nlp=decomposer)
    assert isinstance(service, Neo4jMemoryService)
    user, _ = await _load(service, app, args.size, args.data)

    # Record every pruned gathering of the production search (round by round).
    recorded: list[Recorded] = []
    reads: dict[str, list[float]] = {}
    original_read = service._read
    state = {"round": 0}

    async def recording_read(name: str, params: dict[str, Any]) -> list[Any]:
        t0 = time.perf_counter()
        rows = await original_read(name, params)
        reads.setdefault(name, []).append((time.perf_counter() - t0) * 1000)
        if name == "gather_pruned":
            state["round"] += 1
            recorded.append(Recorded(dict(params), state["round"], []))
        return rows

    service._read = recording_read  # type: ignore[method-assign]
    searches: list[float] = []
    answers: dict[str, list[tuple[str, float]]] = {}
    rounds: list[int] = []
    for q in queries:
        state["round"] = 0
        t0 = time.perf_counter()
        response = await service.search(SearchRequest(query=q, app_name=app, user_id=user, limit=10))
        searches.append((time.perf_counter() - t0) * 1000)
        answers[q] = [(h.entry_id, round(h.score, 12)) for h in response.hits]
        rounds.append(state["round"])
    service._read = original_read  # type: ignore[method-assign]
    reads_per_search = {name: len(v) / len(queries) for name, v in reads.items()}
    print(f"# {args.size} entries, one user; {len(queries)} questions; load {os.getloadavg()}")
    print(f"# production search (first pass, recording): wall p50 {statistics.median(searches):.2f} ms, p99 {_pct(searches, 99):.2f}")
    print(f"# pruned gatherings per search: mean {statistics.fmean(rounds):.2f}; reads per search: "
          + ", ".join(f"{n} {c:.2f}" for n, c in sorted(reads_per_search.items())))

    timer = Timer(service.driver)
    first = [r for r in recorded if r.round_no == 1]
    later = [r for r in recorded if r.round_no > 1]
    print(f"# {len(first)} first-round and {len(later)} later pruned gatherings recorded")

    # Expanded holders per recorded gathering: today's choice (ids), for the neighbourhoods.
    node_of: dict[str, int] = {}
    for rec in recorded:
        rows, _, _ = await timer.run(CHOOSE_IN_CYPHER, rec.params)
        rec.expanded_ids = list(rows[0]["holders"])
    for label, recs in (("first", first), ("later", later)):
        if recs:
            sizes = [len(r.expanded_ids) for r in recs]
            print(f"# holders expanded by a {label}-round gathering: p50 {statistics.median(sizes):.0f}, p90 {_pct(sizes, 90)}, max {max(sizes)}")
    every_id = sorted({i for r in recorded for i in r.expanded_ids})
    rows, _, _ = await timer.run("UNWIND $ids AS i MATCH (e:Entry {id: i}) RETURN e.id AS id, id(e) AS nid", {"ids": every_id})
    node_of = {r["id"]: r["nid"] for r in rows}

    def shares_of(params: dict[str, Any]) -> dict[tuple[int, str], float]:
        return {**{(0, t): s for t, s in params["seed_tokens"]}, **{(1, e): s for e, s in params["seed_entities"]}}

    variants: list[tuple[str, str, Callable[[Recorded], tuple[str, dict[str, Any]]], Callable[[list[Any], Recorded], Any] | None]] = [
        ("postings", "today: choose in Cypher (holders' ids, best share left)", lambda r: (CHOOSE_IN_CYPHER, r.params), None),
        ("postings", "per term collect(s.id), choose in Python", lambda r: (POSTINGS_IDS, r.params),
         lambda rows, r: _choose_in_python([(x["kind"], x["term"], x["holders"]) for x in rows], shares_of(r.params), r.params["min_share"], r.params["max_holders"])),
        ("postings", "per term collect(id(s)), choose in Python", lambda r: (POSTINGS_NODE_IDS, r.params),
         lambda rows, r: _choose_in_python([(x["kind"], x["term"], x["holders"]) for x in rows], shares_of(r.params), r.params["min_share"], r.params["max_holders"])),
        ("postings", "per term collect(elementId(s)), choose in Python", lambda r: (POSTINGS_ELEMENT_IDS, r.params),
         lambda rows, r: _choose_in_python([(x["kind"], x["term"], x["holders"]) for x in rows], shares_of(r.params), r.params["min_share"], r.params["max_holders"])),
        ("postings", "per term collect(id(s)), no scope filter (reads no property)", lambda r: (POSTINGS_NODE_IDS_NO_SCOPE, r.params), None),
        ("postings", "per term collect(id(s)), scope as a label (NOT s:InProject OR ...)", lambda r: (POSTINGS_NODE_IDS_LABEL_SCOPE, r.params), None),
        ("postings", "per term collect(id(s)), no scope filter, no :Entry label", lambda r: (POSTINGS_NODE_IDS_NO_LABEL, r.params), None),
        ("postings", "[id(s), sum(share)] ORDER BY in Cypher, every row", lambda r: (SUMMED_ALL, r.params), None),
        ("postings", "[id(s), sum(share)] ORDER BY ... LIMIT max_holders+1", lambda r: (SUMMED_TOP, {**r.params, "top": (r.params["max_holders"] or 10**9) + 1}), None),
        ("neighbourhood", "today: MATCH (s:Entry {id}) (no hint)", lambda r: (NEIGHBOURHOOD_BY_ID, {**r.params, "ids": r.expanded_ids}), None),
        ("neighbourhood", "by id, USING INDEX s:Entry(id)", lambda r: (NEIGHBOURHOOD_BY_ID_HINT, {**r.params, "ids": r.expanded_ids}), None),
        ("neighbourhood", "by id(s) IN $node_ids", lambda r: (NEIGHBOURHOOD_BY_NODE_ID, {**r.params, "node_ids": [node_of[i] for i in r.expanded_ids]}), None),
        ("neighbourhood", "by id(s), matched terms from the query's term nodes", lambda r: (NEIGHBOURHOOD_BY_NODE_ID_TERM_NODES, {**r.params, "node_ids": [node_of[i] for i in r.expanded_ids]}), None),
        ("whole", "today: gather_pruned.cypher (choose + neighbourhood)", lambda r: (GATHER_PRUNED, r.params), None),
        ("stats", "term_stats.cypher", lambda r: (TERM_STATS, r.params), None),
        ("stats", "entry count alone (owner index)", lambda r: (ENTRY_COUNT, r.params), None),
        ("stats", "term stats + seed postings as id(s), one query", lambda r: (STATS_AND_POSTINGS, {**r.params, "seed_df_share": 0.2}), None),
    ]
    only = [v for v in variants if not args.only or any(o in v[1] for o in args.only)]

    async def measure(recs: Sequence[Recorded], label: str) -> None:
        if not recs:
            return
        wall: list[list[float]] = [[] for _ in only]
        server: list[list[float]] = [[] for _ in only]
        py: list[list[float]] = [[] for _ in only]
        rows_n: list[list[int]] = [[] for _ in only]
        for rec in recs:  # warm-up: plans cached, pages hot
            for _, _, make, _ in only:
                await timer.run(*make(rec))
        for rep in range(args.repeats):
            for i, rec in enumerate(recs):
                order = list(range(len(only)))
                if (i + rep) % 2:
                    order.reverse()
                for k in order:
                    _, _, make, post = only[k]
                    rows, w, s = await timer.run(*make(rec))
                    c0 = time.process_time()
                    if post is not None:
                        post(rows, rec)
                    py[k].append((time.process_time() - c0) * 1000)
                    wall[k].append(w)
                    server[k].append(s)
                    rows_n[k].append(sum(len(x["holders"]) for x in rows) if rows and "holders" in rows[0].keys() and isinstance(rows[0]["holders"], list) and "kind" in rows[0].keys() else len(rows))
        print(f"\n## {label}: {len(recs)} gatherings x {args.repeats}; load {os.getloadavg()}")
        print("| primitive | variant | wall p50 ms | wall p90 | wall p99 | server p50 ms | server p99 | Python choose p50 ms | ids/rows returned p50 |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
        for k, (prim, name, _, post) in enumerate(only):
            pyc = f"{statistics.median(py[k]):.2f}" if post is not None else "–"
            print(f"| {prim} | {name} | {statistics.median(wall[k]):.2f} | {_pct(wall[k], 90):.2f} | {_pct(wall[k], 99):.2f} | "
                  f"{statistics.median(server[k]):.1f} | {_pct(server[k], 99):.1f} | {pyc} | {statistics.median(rows_n[k]):.0f} |")

    await measure(first, "first-round pruned gatherings (min_share 0, max_holders 40)")
    await measure(later, "later pruned gatherings (min_share > 0, no cap)")

    if args.prototype:
        await _prototype(service, app, user, queries, answers, args)
    await service.close()
    return 0


async def _prototype(service: Any, app: str, user: str, queries: Sequence[str], answers: dict[str, list[tuple[str, float]]], args: argparse.Namespace) -> None:
    """Search through a lab subclass whose pruned gathering is two primitives."""
    from graphmem import SearchRequest
    from graphmem._service import CandidateSet
    from graphmem.backends import neo4j as backend

    timer = Timer(service.driver)

    class TwoPrimitives(backend.Neo4jMemoryService):
        async def _gather(self, owner: Any, project_id: Any, tokens: Any, entities: Any, *, seeds: Any = None, with_times: bool = False) -> Any:
            if seeds is None:
                return await super()._gather(owner, project_id, tokens, entities, seeds=seeds, with_times=with_times)
            params = {
                "app_name": owner.app_name, "user_id": owner.user_id, "project_id": project_id, "with_times": with_times,
                "tokens": list(dict.fromkeys(tokens)), "entities": list(dict.fromkeys(entities)),
                "seed_tokens": [[t, s] for t, s in sorted(seeds.tokens.items())],
                "seed_entities": [[e, s] for e, s in sorted(seeds.entities.items())],
            }
            rows, _, _ = await timer.run(POSTINGS_NODE_IDS, params)
            shares = {**{(0, t): s for t, s in seeds.tokens.items()}, **{(1, e): s for e, s in seeds.entities.items()}}
            expand, unexpanded = _choose_in_python([(x["kind"], x["term"], x["holders"]) for x in rows], shares, seeds.min_share, seeds.max_holders)
            corpus = seeds.corpus
            result = CandidateSet.pruned(
                corpus, {t for t in seeds.tokens if corpus.token_df.get(t)}, {e for e in seeds.entities if corpus.entity_df.get(e)}
            )
            result.unexpanded_share = unexpanded
            if not expand:
                return result
            rows, _, _ = await timer.run(NEIGHBOURHOOD_BY_NODE_ID, {**params, "node_ids": expand})
            return backend._candidate_set(result, rows[0]["candidates"])

    lab = TwoPrimitives(driver=service.driver, nlp=service.decomposer)
    same = 0
    wall: dict[str, list[float]] = {"production": [], "two primitives": []}
    for rep in range(args.repeats):
        for i, q in enumerate(queries):
            order = [("production", service), ("two primitives", lab)]
            if (i + rep) % 2:
                order.reverse()
            for name, svc in order:
                t0 = time.perf_counter()
                response = await svc.search(SearchRequest(query=q, app_name=app, user_id=user, limit=10))
                wall[name].append((time.perf_counter() - t0) * 1000)
                if name == "two primitives" and rep == 0:
                    same += [(h.entry_id, round(h.score, 12)) for h in response.hits] == answers[q]
    print(f"\n## whole searches, production against the two primitives ({len(queries)} x {args.repeats}, alternating); load {os.getloadavg()}")
    print("| search | wall p50 ms | p90 | p99 | mean |")
    print("|---|---:|---:|---:|---:|")
    for name, values in wall.items():
        print(f"| {name} | {statistics.median(values):.2f} | {_pct(values, 90):.2f} | {_pct(values, 99):.2f} | {statistics.fmean(values):.2f} |")
    print(f"# answers identical to production on {same} of {len(queries)} questions")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300, help="plus the speed benchmark's 20 warm-up questions")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"))
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--data", default=None)
    parser.add_argument("--only", action="append", default=[], help="run only variants whose name contains this")
    parser.add_argument("--prototype", action="store_true", help="also time whole searches through two primitives")
    args = parser.parse_args(argv)
    if not args.uri:
        parser.error("give --uri or set GRAPHMEM_NEO4J_URI")
    return asyncio.run(_main(args))


if __name__ == "__main__":
    raise SystemExit(main())
