"""Every read a Neo4j search sends, timed one by one: which query files cost what, and
which reads are slow the first time a server sees them (planning) but not after.

Builds the speed corpus (``benchmarks/speed.py``; decompositions cached) on the server,
then searches every question ``--passes`` times. Per pass it prints each query file's
count, total and p50/max wall time, and every read slower than ``--slow-ms`` with the sizes
of its list parameters (a plan is cached per query and per size bucket of each list
parameter unless the lists travel in a map; see ``graphmem.backends.neo4j._sent``)::

    scripts/neo4j start --temp      # prints the URI; the corpus's users are deleted after
    python benchmarks/neo4j_reads.py --uri bolt://127.0.0.1:7687 --size 10000 --entries-per-user 0

Use a fresh server to see first-time planning: the plan cache lives as long as the server.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.search_cpu import _Arm
from benchmarks.speed import APP, build_corpus, build_queries


def _shape(params: dict[str, Any]) -> str:
    lists = params.get("lists", params)
    return " ".join(f"{name}={len(value)}" for name, value in lists.items() if isinstance(value, list | tuple))


async def _main(args: argparse.Namespace) -> int:
    import graphmem
    from benchmarks._systems import CachingDecomposer
    from graphmem import open_memory

    corpus = build_corpus(args.size, args.entries_per_user, args.data)
    queries = build_queries(corpus, args.queries, args.data)
    decomposer = CachingDecomposer(n_process=1)
    decomposer.decompose_many(sorted({t.text for u in corpus for _, s in u.sessions for t in s}))
    decomposer.decompose_many([q for _, q in queries])
    service = await open_memory(args.uri, nlp=decomposer)
    arm = _Arm("neo4j", graphmem, service)
    try:
        for u in corpus:
            await service.delete_user(APP, u.user)
        started = time.perf_counter()
        await arm.load(corpus)
        print(f"# {args.size} entries, {len(corpus)} users, stored in {time.perf_counter() - started:.1f} s")
        reads: list[tuple[str, float, dict[str, Any]]] = []
        send = service._read  # type: ignore[attr-defined]

        async def timed(name: str, params: dict[str, Any]) -> list[Any]:
            t = time.perf_counter()
            try:
                return await send(name, params)
            finally:
                reads.append((name, (time.perf_counter() - t) * 1000, params))

        service._read = timed  # type: ignore[attr-defined]
        for number in range(1, args.passes + 1):
            reads.clear()
            for user, question in queries:
                await arm.search(user, question)
            by_file: dict[str, list[float]] = collections.defaultdict(list)
            for name, ms, _ in reads:
                by_file[name].append(ms)
            slow = [(name, ms, params) for name, ms, params in reads if ms > args.slow_ms]
            print(f"\n## pass {number}: {len(queries)} searches, {len(reads)} reads, {len(slow)} over {args.slow_ms:g} ms")
            print("| query file | reads | total ms | p50 ms | max ms |\n|---|---:|---:|---:|---:|")
            for name, times in sorted(by_file.items(), key=lambda kv: -sum(kv[1])):
                print(f"| {name} | {len(times)} | {sum(times):.0f} | {statistics.median(times):.2f} | {max(times):.1f} |")
            for name, ms, params in slow:
                print(f"- {name}: {ms:.0f} ms ({_shape(params)})")
    finally:
        for u in corpus:
            await service.delete_user(APP, u.user)
        await service.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--uri", required=True, help="a Neo4j Bolt URI (the corpus's users are deleted before and after)")
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--entries-per-user", type=int, default=0, help="0: one user holds the whole corpus")
    parser.add_argument("--queries", type=int, default=150)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--slow-ms", type=float, default=200.0)
    parser.add_argument("--data", default=None, help="LoCoMo conversations.json (default ../shared/data/locomo-dev/)")
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())
