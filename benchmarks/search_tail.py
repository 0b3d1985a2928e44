"""Where a networkx search's time goes, search by search: the slow tail explained.

Builds the speed corpus (``benchmarks/speed.py``; decompositions cached, so the timings are
graph and scoring work, as search_cpu.py measures), then searches every question
``--repeats`` times and records, per search, CPU time (``time.process_time``) spent in each
step of ``MemoryService._score`` and after it (the postings and neighbourhoods it read,
see ``graphmem._gathering``), how many neighbourhoods it read (of given holders, or full),
how many candidates they returned, and the collector's pauses::

    python benchmarks/search_tail.py --size 10000 --entries-per-user 0
    python benchmarks/search_tail.py --size 10000 --entries-per-user 0 --worst 15

Prints the step totals over all searches and over the slowest 1% and 5%, then the slowest
searches one by one (the question, steps, gatherings, candidates).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.speed import APP, build_corpus, build_queries

STEPS = ("term_stats", "name_variants", "term_stats_again", "postings", "neighbourhood", "gather_full", "score_query", "plan", "fetch+rank+hits")


def _pct(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * pct / 100))]


async def _main(args: argparse.Namespace) -> int:
    import graphmem._gathering as gathering_module
    from benchmarks._systems import CachingDecomposer
    from graphmem import Content, MemoryEntry, SearchRequest, open_memory

    corpus = build_corpus(args.size, args.entries_per_user, args.data)
    queries = build_queries(corpus, args.queries, args.data)
    decomposer = CachingDecomposer(n_process=args.processes)
    decomposer.decompose_many(sorted({t.text for u in corpus for _, s in u.sessions for t in s}))
    decomposer.decompose_many([q for _, q in queries])
    service = await open_memory("memory:", nlp=decomposer)
    for u in corpus:
        sessions = {
            sid: [MemoryEntry(content=Content(role="user").with_text(t.text), author=t.speaker, timestamp=t.timestamp) for t in turns]
            for sid, turns in u.sessions
        }
        await service.add_sessions(APP, u.user, sessions)

    current: dict[str, Any] = {}

    def timed(name: str, fn: Any, *, sync: bool = False) -> Any:
        if sync:
            def wrapper(*a: Any, **k: Any) -> Any:
                t0 = time.process_time()
                try:
                    return fn(*a, **k)
                finally:
                    current[name] = current.get(name, 0.0) + (time.process_time() - t0) * 1000
            return wrapper

        async def awrapper(*a: Any, **k: Any) -> Any:
            t0 = time.process_time()
            try:
                return await fn(*a, **k)
            finally:
                current[name] = current.get(name, 0.0) + (time.process_time() - t0) * 1000
        return awrapper

    original_postings = service._postings
    original_neighbourhood = service._neighbourhood

    async def postings(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        result = await original_postings(*a, **k)
        current["postings"] = current.get("postings", 0.0) + (time.process_time() - t0) * 1000
        return result

    async def neighbourhood(owner: Any, project_id: Any, request: Any) -> Any:
        t0 = time.process_time()
        result = await original_neighbourhood(owner, project_id, request)
        kind = "gather_full" if request.around is None else "neighbourhood"
        current[kind] = current.get(kind, 0.0) + (time.process_time() - t0) * 1000
        current.setdefault("gatherings", []).append(
            ("full" if request.around is None else "pruned", len(result), None if request.around is None else len(request.around))
        )
        return result

    service._postings = postings  # type: ignore[method-assign]
    service._neighbourhood = neighbourhood  # type: ignore[method-assign]
    original_stats_or_gather = service._term_stats_or_gather
    original_term_stats = service._term_stats

    async def term_stats_or_gather(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        current["_in_stats"] = True
        first = await original_stats_or_gather(*a, **k)
        current["_in_stats"] = False
        current["term_stats"] = current.get("term_stats", 0.0) + (time.process_time() - t0) * 1000
        return first

    async def term_stats(*a: Any, **k: Any) -> Any:
        if current.get("_in_stats"):
            return await original_term_stats(*a, **k)
        t0 = time.process_time()
        out = await original_term_stats(*a, **k)
        current["term_stats_again"] = current.get("term_stats_again", 0.0) + (time.process_time() - t0) * 1000
        return out

    service._term_stats_or_gather = term_stats_or_gather  # type: ignore[method-assign]
    service._term_stats = term_stats  # type: ignore[method-assign]
    service._name_variants = timed("name_variants", service._name_variants)  # type: ignore[method-assign]
    gathering_module.score_query = timed("score_query", gathering_module.score_query, sync=True)  # type: ignore[assignment]
    gathering_module.plan_gathering = timed("plan", gathering_module.plan_gathering, sync=True)  # type: ignore[assignment]
    original_score = service._score

    async def score(*a: Any, **k: Any) -> Any:
        t0 = time.process_time()
        out = await original_score(*a, **k)
        current["_score_total"] = (time.process_time() - t0) * 1000
        return out

    service._score = score  # type: ignore[method-assign]

    gc_pause: dict[str, float] = {}

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            gc_pause["t"] = time.perf_counter()
        elif "t" in gc_pause:
            current["gc_ms"] = current.get("gc_ms", 0.0) + (time.perf_counter() - gc_pause.pop("t")) * 1000
            current.setdefault("gc_gens", []).append(info.get("generation"))

    gc.callbacks.append(on_gc)
    for user, q in queries[:20]:  # warm-up
        await service.search(SearchRequest(query=q, app_name=APP, user_id=user, limit=10))
    records: list[dict[str, Any]] = []
    for _ in range(args.repeats):
        for user, q in queries:
            current = {}
            t0, w0 = time.process_time(), time.perf_counter()
            await service.search(SearchRequest(query=q, app_name=APP, user_id=user, limit=10))
            current["cpu"] = (time.process_time() - t0) * 1000
            current["wall"] = (time.perf_counter() - w0) * 1000
            current["fetch+rank+hits"] = current["cpu"] - current.get("_score_total", 0.0)
            current["q"] = q
            records.append(current)
    gc.callbacks.remove(on_gc)

    cpu = [r["cpu"] for r in records]
    print(f"# {args.size} entries, {len(corpus)} user(s); {len(records)} searches ({len(queries)} x {args.repeats}); "
          f"load {os.getloadavg()}")
    print(f"# CPU p50 {statistics.median(cpu):.2f} ms, p90 {_pct(cpu, 90):.2f}, p99 {_pct(cpu, 99):.2f}, max {max(cpu):.2f}; "
          f"wall p50 {statistics.median([r['wall'] for r in records]):.2f}, p99 {_pct([r['wall'] for r in records], 99):.2f}")
    ranked = sorted(records, key=lambda r: -r["cpu"])
    groups = {"all": records, "slowest 5%": ranked[: max(1, len(records) // 20)], "slowest 1%": ranked[: max(1, len(records) // 100)]}
    print("\n| searches | n | CPU mean ms | " + " | ".join(STEPS) + " | gc ms | gatherings mean | pruned | full | candidates mean |")
    print("|---|---:|---:|" + "---:|" * len(STEPS) + "---:|---:|---:|---:|---:|")
    for name, group in groups.items():
        n = len(group)
        steps = " | ".join(f"{sum(r.get(s, 0.0) for r in group) / n:.2f}" for s in STEPS)
        gath = [r.get("gatherings", []) for r in group]
        print(f"| {name} | {n} | {statistics.fmean(r['cpu'] for r in group):.2f} | {steps} | "
              f"{sum(r.get('gc_ms', 0.0) for r in group) / n:.2f} | {statistics.fmean(len(g) for g in gath):.2f} | "
              f"{statistics.fmean(sum(1 for x in g if x[0] == 'pruned') for g in gath):.2f} | "
              f"{statistics.fmean(sum(1 for x in g if x[0] == 'full') for g in gath):.2f} | "
              f"{statistics.fmean(sum(x[1] for x in g) for g in gath):.0f} |")
    print(f"\n## the slowest {args.worst}")
    seen: set[str] = set()
    shown = 0
    for r in ranked:
        if r["q"] in seen:
            continue
        seen.add(r["q"])
        steps = ", ".join(f"{s} {r[s]:.1f}" for s in (*STEPS, "gc_ms") if r.get(s, 0.0) >= 0.5)
        gath = "; ".join(f"{k}({n} cand, around {around})" for k, n, around in r.get("gatherings", []))
        print(f"- {r['cpu']:.1f} ms CPU: {r['q']!r}: {steps}; gatherings: {gath}")
        shown += 1
        if shown >= args.worst:
            break
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--entries-per-user", type=int, default=0)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--worst", type=int, default=12)
    parser.add_argument("--data", default=None)
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
