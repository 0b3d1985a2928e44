"""Questions that ask for a day and nothing else, on LoCoMo dev: every system in one run.

One question per day a session of a dev conversation was held, "What did we talk about on
8 May 2023?", and what each system's first 10 hits hold of that day: precision@10, the share
of the 10 said on that day (a system that returns fewer counts the missing as wrong), and
how many questions got no hit at all. Such a question has no word to match but "talk": the
answer is the day's conversation (graphmem's rule 9, "a question that asks for a time and
nothing else")::

    python benchmarks/dates_alone.py
    python benchmarks/dates_alone.py --systems graphmem,graphmem-neo4j,bm25 --neo4j-uri bolt://127.0.0.1:7687

A hit said on another day may still be right (an entry said the day after that says
"yesterday"): graphmem ranks those with the day's own, so its precision is a floor.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._env import checkout
from benchmarks._locomo import load_conversations
from benchmarks.recall import _system_factories, shared_decomposer

SYSTEMS = ("graphmem", "graphmem-neo4j", "bm25", "bm25s", "adk")
K = 10


def question(day: date) -> str:
    return f"What did we talk about on {day.day} {day.strftime('%B')} {day.year}?"


async def _run(args: argparse.Namespace) -> int:
    say = (lambda msg: None) if args.quiet else (lambda msg: print(msg, file=sys.stderr, flush=True))
    names = [s.strip() for s in args.systems.split(",") if s.strip()]
    conversations = load_conversations(args.data)
    factories = _system_factories(names, args.neo4j_uri, say)
    texts = [t.text for c in conversations for t in c.turns]
    await asyncio.to_thread(shared_decomposer().decompose_many, texts)
    rows: list[str] = []
    for name in names:
        factory = factories[name]
        if isinstance(factory, str):
            say(f"{name}: skipped: {factory}")
            continue
        shares: list[float] = []
        empty = 0
        for conv in conversations:
            system = await factory(conv)
            user = conv.sample_id
            day_of = {t.key: t.timestamp.date() for t in conv.turns}
            try:
                await system.clear(user)
                for session in conv.sessions:
                    await system.add_session(user, session.session_id, session.turns)
                await system.build()
                await system.index_keys()
                for day in sorted({s.timestamp.date() for s in conv.sessions}):
                    keys = await system.search(user, question(day), K)
                    empty += not keys
                    shares.append(sum(1 for key in keys[:K] if day_of.get(key) == day) / K)
                await system.clear(user)
            finally:
                await system.close()
        rows.append(f"| {name} | {len(shares)} | {sum(shares) / len(shares):.3f} | {empty} |")
        say(rows[-1])
    print(f"## Questions asking for a day alone, LoCoMo dev (graphmem {checkout()}, {datetime.now(UTC):%Y-%m-%d})\n")
    print(f"| system | questions | precision@{K} (said that day) | questions without a hit |")
    print("|---|---:|---:|---:|")
    print("\n".join(rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default=",".join(SYSTEMS), help=f"comma-separated, from: {', '.join(SYSTEMS)}")
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"), help="Bolt URI for graphmem-neo4j (default: $GRAPHMEM_NEO4J_URI)")
    parser.add_argument("--data", default=None, help="LoCoMo conversations.json (default ../shared/data/locomo-dev/)")
    parser.add_argument("--quiet", action="store_true")
    return asyncio.run(_run(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
