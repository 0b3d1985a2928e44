"""The cost of the Google ADK layer on a search: ``GraphmemMemoryService.search_memory``
against the direct ``MemoryService.search`` it wraps, in the same run on the same store.

    python benchmarks/adk_overhead.py                          # networkx, plus Neo4j with GRAPHMEM_NEO4J_URI
    python benchmarks/adk_overhead.py --conversations conv-26 --rounds 5 --json /tmp/adk.json

Protocol: one LoCoMo dev conversation (all of its sessions, one ``add_session`` each, under
one app and user) in a fresh store per backend; its QA questions (categories 1-4) are the
queries, ``limit=10``. Every query is first run once through each path, untimed (the query
decompositions are then cached for both, so the difference is the layer alone). Then
``--rounds`` rounds: each query through both paths, back to back, in alternating order
(direct first on even queries, ADK first on odd ones). Reported: p50 and p99 of each
path's wall time per call, and the p50 of the per-query difference (ADK minus direct).
Writes ``benchmarks/results/adk-overhead.{md,json}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._env import checkout, machine, versions
from benchmarks._locomo import load_conversations
from graphmem import Content, MemoryEntry, MemoryService, SearchRequest, open_memory
from graphmem.adk import GraphmemMemoryService

RESULTS = Path(__file__).resolve().parent / "results"
APP, USER = "adk-overhead", "locomo"


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


async def measure(service: MemoryService, conversation: Any, rounds: int) -> dict[str, Any]:
    await service.delete_user(APP, USER)
    for session in conversation.sessions:
        entries = [
            MemoryEntry(content=Content(role="user").with_text(t.text), author=t.speaker, timestamp=t.timestamp)
            for t in session.turns
        ]
        await service.add_session(APP, USER, session.session_id, entries)
    adk = GraphmemMemoryService(service, limit=10)
    queries = [q.question for q in conversation.questions]

    async def direct(query: str) -> int:
        response = await service.search(SearchRequest(query=query, app_name=APP, user_id=USER, limit=10))
        return len(response.hits)

    async def through_adk(query: str) -> int:
        return len((await adk.search_memory(app_name=APP, user_id=USER, query=query)).memories)

    for query in queries:  # warm-up: caches, query plans; both paths must agree
        assert await direct(query) == await through_adk(query)
    times: dict[str, list[float]] = {"direct": [], "adk": []}
    differences: list[float] = []
    for _ in range(rounds):
        for n, query in enumerate(queries):
            order = (("direct", direct), ("adk", through_adk)) if n % 2 == 0 else (("adk", through_adk), ("direct", direct))
            took = {}
            for name, call in order:
                start = time.perf_counter()
                await call(query)
                took[name] = time.perf_counter() - start
                times[name].append(took[name])
            differences.append(took["adk"] - took["direct"])
    await service.delete_user(APP, USER)
    ms = 1000.0
    return {
        "entries": sum(len(s.turns) for s in conversation.sessions),
        "queries": len(queries),
        "calls_per_path": len(times["direct"]),
        "direct_p50_ms": percentile(times["direct"], 0.5) * ms,
        "direct_p99_ms": percentile(times["direct"], 0.99) * ms,
        "adk_p50_ms": percentile(times["adk"], 0.5) * ms,
        "adk_p99_ms": percentile(times["adk"], 0.99) * ms,
        "overhead_p50_ms": statistics.median(differences) * ms,
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", default="conv-26", help="LoCoMo sample ids, comma-separated")
    parser.add_argument("--data", default=None, help="LoCoMo conversations.json")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"))
    parser.add_argument("--json", default=str(RESULTS / "adk-overhead.json"))
    args = parser.parse_args()

    conversations = load_conversations(args.data, args.conversations.split(","))
    stores = [("networkx", "memory:")] + ([("neo4j", args.neo4j_uri)] if args.neo4j_uri else [])
    rows = []
    for backend, uri in stores:
        service = await open_memory(uri)
        try:
            for conversation in conversations:
                row = {"backend": backend, "conversation": conversation.sample_id}
                row.update(await measure(service, conversation, args.rounds))
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            await service.close()
    if not args.neo4j_uri:
        print("no Neo4j URI (--neo4j-uri or GRAPHMEM_NEO4J_URI): the Neo4j row is skipped", file=sys.stderr)

    lines = [
        "| backend | conversation | entries | calls per path | direct p50 (ms) | ADK p50 (ms) | overhead p50 (ms) "
        "| direct p99 (ms) | ADK p99 (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['backend']} | {r['conversation']} | {r['entries']} | {r['calls_per_path']} | {r['direct_p50_ms']:.2f} "
            f"| {r['adk_p50_ms']:.2f} | {r['overhead_p50_ms']:.3f} | {r['direct_p99_ms']:.2f} | {r['adk_p99_ms']:.2f} |"
        )
    table = "\n".join(lines)
    print(table)
    record = {"rows": rows, "machine": machine(), "versions": versions(), "checkout": checkout(), "rounds": args.rounds}
    Path(args.json).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    Path(args.json).with_suffix(".md").write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    asyncio.run(main())
