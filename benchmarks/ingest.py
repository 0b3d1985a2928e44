"""Ingest throughput of graphmem with NER on: one ``add_session`` per session against one
``add_sessions`` batch per user, in one run.

    python benchmarks/ingest.py [--repeat 2]

Every turn of the LoCoMo dev conversations (repeated ``--repeat`` times under new users)
goes through the real pipeline each time: nothing is cached. Entries per second of wall
time; the machine and versions are printed with the table.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._env import checkout, machine, versions  # noqa: E402
from benchmarks._locomo import load_conversations  # noqa: E402
from graphmem import Content, Decomposer, GraphMemoryService, MemoryEntry  # noqa: E402


def sessions_per_user(repeat: int) -> list[tuple[str, dict[str, list[MemoryEntry]]]]:
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


async def run(mode: str, n_process: int, users: list[tuple[str, dict[str, list[MemoryEntry]]]]) -> float:
    decomposer = Decomposer(n_process=n_process, batch_size=128)
    decomposer.nlp  # load the pipeline before the clock starts
    service = GraphMemoryService(nlp=decomposer)
    entries = sum(len(e) for _, sessions in users for e in sessions.values())
    start = time.perf_counter()
    for user, sessions in users:
        if mode == "add_session":
            for session_id, session_entries in sessions.items():
                await service.add_session("bench", user, session_id, session_entries)
        else:
            await service.add_sessions("bench", user, sessions)
    return entries / (time.perf_counter() - start)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="copies of the three conversations (new users)")
    args = parser.parse_args()
    users = sessions_per_user(args.repeat)
    entries = sum(len(e) for _, sessions in users for e in sessions.values())
    print(f"checkout {checkout()} | machine {machine()} | {versions()}")
    print(f"\n{entries:,} entries, {len(users)} users, NER on\n")
    print("| path | spaCy processes | entries/s |\n|---|---:|---:|")
    # n_process=2 was tried too: about +10% here, with spaCy warning that worker processes
    # did not complete (they are forked from the worker thread that keeps spaCy off the event
    # loop), so it is not offered as a recommendation.
    for mode, n_process in (("add_session", 1), ("add_sessions", 1)):
        rate = await run(mode, n_process, users)
        print(f"| `{mode}` | {n_process} | {rate:,.0f} |", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
