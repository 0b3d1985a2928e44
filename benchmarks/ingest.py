"""Ingest throughput of graphmem with NER on: one ``add_session`` per session against one
``add_sessions`` batch per user, in this process and with worker processes, in one run.

    python benchmarks/ingest.py [--repeat 2] [--neo4j-uri bolt://127.0.0.1:7687]

Every turn of the LoCoMo dev conversations (repeated ``--repeat`` times under new users,
about 480 turns per user) goes through the real pipeline each time: nothing is cached.
Entries per second of wall time over every call, for these paths:

- ``add_session``, in this process: one call per session (15-30 turns each);
- ``add_sessions``, in this process: one call per user with all of its sessions;
- ``add_sessions`` with ``Decomposer(n_process=2)``, the workers started before the clock
  (``start_workers()``: a bulk load that has warmed up), and cold: the first call starts
  them, so their start-up (a few seconds) counts.

``batch_size`` is 128, so each user's batch is split among the workers (a single session
never is: it stays in this process). With ``--neo4j-uri`` the same paths run on
``Neo4jMemoryService`` too (each user deleted again afterwards). The machine and versions
are printed with the table; on a shared machine run it when the machine is quiet.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._env import checkout, machine, versions  # noqa: E402
from benchmarks._locomo import load_conversations  # noqa: E402
from graphmem import Content, Decomposer, MemoryEntry, MemoryService, open_memory  # noqa: E402

Users = list[tuple[str, dict[str, list[MemoryEntry]]]]
#: (path, worker processes, workers started before the clock)
RUNS = (
    ("add_session", 1, True),
    ("add_sessions", 1, True),
    ("add_sessions", 2, True),
    ("add_sessions", 2, False),
)


def sessions_per_user(repeat: int) -> Users:
    users = []
    for r in range(repeat):
        for conv in load_conversations():
            sessions = {
                s.session_id: [
                    MemoryEntry(content=Content(role="user").with_text(t.text), author=t.speaker, timestamp=t.timestamp)
                    for t in s.turns
                ]
                for s in conv.sessions
            }
            users.append((f"{conv.sample_id}-{r}", sessions))
    return users


async def make_service(backend: str, decomposer: Decomposer, uri: str | None) -> MemoryService:
    if backend != "networkx" and uri is None:
        raise SystemExit("the neo4j backend needs a URI (GRAPHMEM_NEO4J_URI)")
    return await open_memory("memory:" if backend == "networkx" else uri, nlp=decomposer)


async def run(backend: str, mode: str, n_process: int, warm: bool, users: Users, uri: str | None) -> float:
    with Decomposer(n_process=n_process, batch_size=128) as decomposer:
        decomposer.nlp  # noqa: B018 - load the pipeline before the clock starts
        if warm:
            decomposer.start_workers()
        service = await make_service(backend, decomposer, uri)
        entries = sum(len(e) for _, sessions in users for e in sessions.values())
        try:
            start = time.perf_counter()
            for user, sessions in users:
                if mode == "add_session":
                    for session_id, session_entries in sessions.items():
                        await service.add_session("bench-ingest", user, session_id, session_entries)
                else:
                    await service.add_sessions("bench-ingest", user, sessions)
            return entries / (time.perf_counter() - start)
        finally:
            if backend != "networkx":
                for user, _ in users:
                    await service.delete_user("bench-ingest", user)
            await service.close()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="copies of the three conversations (new users)")
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"), help="also run on this Neo4j")
    args = parser.parse_args()
    users = sessions_per_user(args.repeat)
    entries = sum(len(e) for _, sessions in users for e in sessions.values())
    print(f"checkout {checkout()} | machine {machine()} | {versions()}")
    print(f"\n{entries:,} entries, {len(users)} users, NER on, batch_size 128\n")
    print("| backend | path | spaCy worker processes | entries/s |\n|---|---|---|---:|")
    for backend in ("networkx", "neo4j") if args.neo4j_uri else ("networkx",):
        for mode, n_process, warm in RUNS:
            rate = await run(backend, mode, n_process, warm, users, args.neo4j_uri)
            workers = "none (this process)" if n_process == 1 else f"{n_process}, " + ("started before" if warm else "start-up timed")
            print(f"| {backend} | `{mode}` | {workers} | {rate:,.0f} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
