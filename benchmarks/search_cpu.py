"""CPU time of graphmem searches: settings of one store, or this checkout against another
commit, in one process, query by query.

An A/B harness for search changes on a shared, noisy machine: the store is built once
(the speed corpus of ``benchmarks/speed.py``, decompositions cached so that ingest takes
seconds), the queries are decomposed once (so the timings are graph and scoring work), and
every arm searches the same corpus with the same queries, the arms taking turns query by
query (the order alternating). Time is ``time.process_time`` per search: CPU time of this
process, so other processes' load counts only through shared caches and clock speed, and
it counts alike for both arms of a pair. Every arm's answers (the turns found, and their
scores) are compared with the first arm's::

    # this checkout against its HEAD, users of 1,000
    python benchmarks/search_cpu.py --size 10000 --against HEAD
    # settings of this checkout (attribute=value,... set on the service; '' = defaults)
    python benchmarks/search_cpu.py --size 10000 --entries-per-user 0 \\
        --variant '' --variant 'first_expansion=None'
    python benchmarks/search_cpu.py --size 10000 --entries-per-user 0 --profile /tmp/p.prof
    # a field of ScoringWeights is set on the service's weights
    python benchmarks/search_cpu.py --size 10000 --variant 'related_words=False' --variant 'related_words=True'

``--against REV`` copies ``graphmem/`` at REV (``git archive``) into a temporary package
``graphmem_base`` and searches a second store built by it (networkx only). ``--uri`` puts
this checkout's store on a Neo4j server instead (its users are deleted before and after);
CPU time then leaves out the server's work, so compare the wall-time column there.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import cProfile
import dataclasses
import importlib
import io
import os
import pstats
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.speed import APP, UserCorpus, build_corpus, build_queries

ROOT = Path(__file__).resolve().parent.parent


def _parse_variant(text: str) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = part.partition("=")
        settings[name.strip()] = ast.literal_eval(value.strip())
    return settings


def _setting(service: Any, name: str) -> Any:
    """A service attribute, or a field of its ``ScoringWeights`` (``related_words=False``)."""
    weights = service.weights
    return getattr(weights, name) if name in getattr(type(weights), "__dataclass_fields__", {}) else getattr(service, name)


def _set(service: Any, name: str, value: Any) -> None:
    weights = service.weights
    if name in getattr(type(weights), "__dataclass_fields__", {}):
        service.weights = dataclasses.replace(weights, **{name: value})
    else:
        setattr(service, name, value)


def _pct(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round((len(ordered) - 1) * pct / 100))]


def _base_package(rev: str, into: Path) -> ModuleType:
    """``graphmem/`` at ``rev``, importable as ``graphmem_base``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "graphmem"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    package = into / "graphmem_base"
    (into / "graphmem").rename(package)
    for path in package.rglob("*.py"):
        text = path.read_text()
        text = re.sub(r"\bfrom graphmem([. ])", r"from graphmem_base\1", text)
        text = re.sub(r"\bimport graphmem\b", "import graphmem_base", text)
        path.write_text(text)
    sys.path.insert(0, str(into))
    return importlib.import_module("graphmem_base")


class _Arm:
    """One store and the package that built it; answers are reported as turn keys."""

    def __init__(self, name: str, package: ModuleType, service: Any) -> None:
        self.name = name
        self.package = package
        self.service = service
        self.keys: dict[str, str] = {}

    async def load(self, corpus: Sequence[UserCorpus]) -> None:
        pkg = self.package
        for u in corpus:
            sessions = {
                session_id: [
                    pkg.MemoryEntry(content=pkg.Content(role="user").with_text(t.text), author=t.speaker, timestamp=t.timestamp)
                    for t in turns
                ]
                for session_id, turns in u.sessions
            }
            await self.service.add_sessions(APP, u.user, sessions)
            by_session = {s: [t.key for t in turns if t.text.strip()] for s, turns in u.sessions}
            for stored in await self.service.list_entries(APP, u.user):
                self.keys[stored.entry_id] = by_session[stored.session_id][stored.position]

    async def search(self, user: str, query: str) -> list[tuple[str, float]]:
        response = await self.service.search(self.package.SearchRequest(query=query, app_name=APP, user_id=user, limit=10))
        return [(self.keys.get(h.entry_id, h.entry_id), round(h.score, 12)) for h in response.hits]


def _foreign_decomposer(package: ModuleType, source: Any) -> Any:
    """A ``package`` Decomposer that answers from ``source`` (a CachingDecomposer) and so
    never loads spaCy itself: both arms see identical decompositions."""
    module = importlib.import_module(f"{package.__name__}._decompose")
    convert: dict[int, Any] = {}

    def as_ours(parts: Any) -> Any:
        found = convert.get(id(parts))
        if found is None:
            found = convert[id(parts)] = (
                parts,
                module.Decomposition(
                    tuple(parts.tokens), tuple(module.Entity(e.name, e.label) for e in parts.entities), parts.language
                ),
            )
        return found[1]

    class Foreign(module.Decomposer):  # type: ignore[misc, name-defined]
        def decompose_many(self, texts: Sequence[str]) -> list[Any]:
            return [as_ours(p) for p in source.decompose_many(texts)]

        def decompose_query(self, text: str) -> Any:
            return as_ours(source.decompose_query(text))

        def decompose_query_now(self, text: str) -> Any:
            return as_ours(source.decompose_query(text))

    return Foreign()


async def _main(args: argparse.Namespace) -> int:
    import graphmem
    from benchmarks._systems import CachingDecomposer
    from graphmem import open_memory

    corpus = build_corpus(args.size, args.entries_per_user, args.data)
    queries = build_queries(corpus, args.queries, args.data)
    decomposer = CachingDecomposer(n_process=args.processes)
    decomposer.decompose_many(sorted({t.text for u in corpus for _, s in u.sessions for t in s}))
    decomposer.decompose_many([q for _, q in queries])
    arms = [_Arm("this checkout", graphmem, await open_memory(args.uri, nlp=decomposer))]
    if args.uri != "memory:":
        for u in corpus:
            await arms[0].service.delete_user(APP, u.user)
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            base = _base_package(args.against, Path(tmp))
            arms.append(_Arm(args.against, base, await base.open_memory("memory:", nlp=_foreign_decomposer(base, decomposer))))
        for arm in arms:
            started = time.perf_counter()
            await arm.load(corpus)
            print(f"# {arm.name}: {args.size} entries, {len(corpus)} users, stored in {time.perf_counter() - started:.1f} s")
        settings = [_parse_variant(v) for v in args.variant] or [{}]
        runs = [(arm, s) for arm in arms for s in settings]
        names = [f"{arm.name} `{v or 'defaults'}`" for arm in arms for v in (args.variant or [""])]
        defaults = {name: _setting(arms[0].service, name) for s in settings for name in s}

        async def one(run: tuple[_Arm, dict[str, Any]], user: str, q: str) -> tuple[float, float, list[tuple[str, float]]]:
            arm, chosen = run
            for name, value in {**defaults, **chosen}.items():
                _set(arm.service, name, value)
            t0, w0 = time.process_time(), time.perf_counter()
            hits = await arm.search(user, q)
            return (time.process_time() - t0) * 1000, (time.perf_counter() - w0) * 1000, hits

        for run in runs:  # warm up every path once (time parses, query memos)
            for user, q in queries:
                await one(run, user, q)
        cpu: list[list[float]] = [[] for _ in runs]
        wall: list[list[float]] = [[] for _ in runs]
        same = [True for _ in runs]
        for r in range(args.repeats):
            for i, (user, q) in enumerate(queries):
                order = list(range(len(runs)))
                if (i + r) % 2:
                    order.reverse()
                answers: dict[int, list[tuple[str, float]]] = {}
                for k in order:
                    spent, waited, answers[k] = await one(runs[k], user, q)
                    cpu[k].append(spent)
                    wall[k].append(waited)
                for k in range(1, len(runs)):
                    if answers[k] != answers[0]:
                        same[k] = False
        print(f"# {len(queries)} searches x {args.repeats} rounds, limit 10; load average {os.getloadavg()}")
        print(
            "| arm | CPU p50 ms | p90 | p99 | mean | median of per-search ratio to the first arm | wall p50 ms | wall p99 ms"
            " | answers as the first arm's |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
        for k, name in enumerate(names):
            ratio = statistics.median(a / b for a, b in zip(cpu[k], cpu[0], strict=True) if b > 0)
            print(
                f"| {name} | {statistics.median(cpu[k]):.3f} | {_pct(cpu[k], 90):.2f} | {_pct(cpu[k], 99):.2f} | "
                f"{statistics.fmean(cpu[k]):.3f} | {ratio:.3f} | {statistics.median(wall[k]):.3f} | "
                f"{_pct(wall[k], 99):.2f} | {same[k]} |"
            )
        if args.profile:
            arm, chosen = runs[0]
            for name, value in {**defaults, **chosen}.items():
                _set(arm.service, name, value)
            profiler = cProfile.Profile()
            profiler.enable()
            for user, q in queries:
                await arm.search(user, q)
            profiler.disable()
            profiler.dump_stats(args.profile)
            pstats.Stats(args.profile).sort_stats("tottime").print_stats(25)
        if args.uri != "memory:":
            for u in corpus:
                await arms[0].service.delete_user(APP, u.user)
        for arm in arms:
            await arm.service.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--entries-per-user", type=int, default=1000, help="0: one user holds everything")
    parser.add_argument("--queries", type=int, default=300, help="plus the speed benchmark's 20 warm-up questions")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--variant", action="append", default=[], help="attribute=value,... set on the service")
    parser.add_argument("--against", default=None, metavar="REV", help="also search a store built by graphmem at REV")
    parser.add_argument("--uri", default="memory:", help="this checkout's store (default memory:, networkx)")
    parser.add_argument("--processes", type=int, default=2, help="spaCy processes for the corpus's texts")
    parser.add_argument("--data", default=None)
    parser.add_argument("--profile", default=None, metavar="FILE", help="cProfile the first arm's searches")
    return asyncio.run(_main(parser.parse_args(argv)))


if __name__ == "__main__":
    raise SystemExit(main())
