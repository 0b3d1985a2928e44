"""How long the CLI takes to open a one-user networkx store, and what the store holds.

    python benchmarks/startup.py [--sizes 10000,100000] [--dir /tmp/graphmem-startup]

For each size, builds (once, kept in ``--dir``) a journal of one user holding that many
LoCoMo dev turns, as ``benchmarks/speed.py --entries-per-user 0`` lays them out, with each
pool text's decomposition computed once and reused (spaCy would take minutes at 100k; the
store is the same). Then times ``graphmem --store PATH stats`` (a read-only open: what every
CLI command pays first) three times each way:

- *journal alone*: a copy of the store without its snapshots (every segment line replayed);
- *with snapshot*: the store as a writer leaves it on closing (a snapshot, no tail);
- *empty store*: the interpreter and imports alone.

Reports the median wall time, the CPU time (user + system) of that run, and its peak RSS.
On a shared machine the CPU time is the steadier number: wall time grows with the load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._env import checkout, machine  # noqa: E402
from benchmarks._systems import CachingDecomposer, GraphmemSystem  # noqa: E402
from benchmarks.speed import APP, build_corpus  # noqa: E402
from graphmem import Content, MemoryEntry  # noqa: E402
from graphmem.backends.networkx import GraphMemoryService  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


async def build(size: int, store: Path, data: str | None) -> None:
    """One user holding ``size`` turns, written through the public API; closing snapshots it."""
    corpus = build_corpus(size, 0, data)
    decomposer = CachingDecomposer()
    decomposer.decompose_many(sorted({t.text for u in corpus for _, s in u.sessions for t in s}))
    service = GraphMemoryService(decomposer, path=store)
    system = GraphmemSystem(service, APP)
    for user in corpus:
        for i in range(0, len(user.sessions), 200):  # a few records of a few MB each
            await system.add_sessions(user.user, user.sessions[i : i + 200])
    await service.close()


async def build_empty(store: Path) -> None:
    """A store that holds nothing: made by a write (the CLI refuses a path with no store,
    8bb8248), then emptied again."""
    service = GraphMemoryService(path=store)
    await service.add_session(APP, "nobody", "s", [MemoryEntry(content=Content(role="user").with_text("hello"), author="nobody")])
    await service.delete_user(APP, "nobody")
    await service.close()


def time_stats(store: Path, runs: int = 3) -> tuple[float, float, int]:
    """Median wall seconds of ``graphmem --store store stats``, that run's CPU seconds and
    peak RSS (KB), as GNU time reports them (a forked child's own rusage would count the
    memory of this process, which built the store, in its peak)."""
    results = []
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for _ in range(runs):
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%e %U %S %M", sys.executable, "-c", "from graphmem.cli import main; main()",
             "--store", str(store), "stats"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO, check=True,
        )
        wall, user, system, rss = done.stderr.split()[-4:]
        results.append((float(wall), float(user) + float(system), int(rss)))
    results.sort()
    return results[len(results) // 2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dir", default="/tmp/graphmem-startup", help="where the stores are built and kept")
    parser.add_argument("--data", default=None, help="LoCoMo conversations.json (default ../shared/data/locomo-dev/)")
    args = parser.parse_args()
    root = Path(args.dir)
    info = machine()
    print(f"graphmem {checkout()} · {info.get('cpu')} · load average {os.getloadavg()[0]:.1f}")
    print("| entries | open | wall s (median of 3) | CPU s | peak RSS MB |")
    print("|---:|---|---:|---:|---:|")
    empty = root / "empty" / "memory.journal"
    if not empty.exists():
        empty.parent.mkdir(parents=True, exist_ok=True)
        asyncio.run(build_empty(empty))
    wall, cpu, rss = time_stats(empty)
    print(f"| 0 | empty store | {wall:.2f} | {cpu:.2f} | {rss / 1024:.0f} |")
    for size in (int(s) for s in args.sizes.split(",")):
        store = root / f"one-user-{size}" / "memory.journal"
        if not store.exists():
            store.parent.mkdir(parents=True, exist_ok=True)
            asyncio.run(build(size, store, args.data))
        alone = root / f"one-user-{size}-journal-alone"
        shutil.rmtree(alone, ignore_errors=True)
        shutil.copytree(store.parent, alone)
        for snapshot in alone.glob("*.d/*.snapshot"):
            snapshot.unlink()
        for label, path in (("journal alone", alone / store.name), ("with snapshot", store)):
            wall, cpu, rss = time_stats(path)
            print(f"| {size:,} | {label} | {wall:.2f} | {cpu:.2f} | {rss / 1024:.0f} |")
        print(f"(load average {statistics.fmean(os.getloadavg()):.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
