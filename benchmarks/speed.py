"""Ingest rate, search latency and memory of graphmem and its peers at 1k, 10k and 100k entries.

Run from anywhere (it takes a while at 100k: run it in the background)::

    python benchmarks/speed.py                                    # every system, 1k/10k/100k
    python benchmarks/speed.py --sizes 1000,10000 --systems graphmem,bm25

Corpus: the LoCoMo dev turns (three conversations, 1,451 turns) replayed under many users.
Each user gets ``--entries-per-user`` turns (default 1,000) drawn without replacement from
the pool in a shuffled order, with its own speaker timeline, cut into sessions of 15-30
turns with varied session ids and dates; so 1k = 1 user, 10k = 10 users, 100k = 100 users.
Everything is seeded: every system gets the same corpus and the same queries.

Per system and size, a fresh subprocess (so memory peaks never mix) builds the corpus,
loads what it needs, then measures:

- ingest: entries/s over a bulk load, one ``add_sessions`` call per user (all of its
  sessions, 1,000 entries by default) plus any index building after it. graphmem runs
  spaCy with NER on every turn, in ``--processes`` (default 2) worker processes
  (``Decomposer(n_process=2)``, started before the clock like the pipeline itself); the
  peers have no batch call, so theirs is one ``add_session`` per session. Before the
  clock, graphmem-neo4j stores and deletes a throwaway user's 12 sessions (a fresh server
  plans its queries and compiles its write path on the first calls). Also, for
  graphmem, "per session": entries/s of one ``add_session`` per session (spaCy in this
  process, ~22 turns a call) over the first user's sessions, stored under a throwaway
  user, after the searches, and deleted again;
- search: ``--queries`` (300) QA questions of categories 1-4, each asked of a seeded random
  user, ``limit=10``, after 20 untimed warm-up searches (and, on Neo4j, after the copies of
  large users those started are read: ``settle_s`` in speed.json); p50 and p99 of the wall time of
  each call. For graphmem also "p50 query cached": the same searches with the queries'
  decompositions already cached, i.e. the graph and scoring work alone;
- memory: the process's peak RSS during ingest and search above its RSS just before ingest
  (the peak is reset through /proc/self/clear_refs), and the RSS still held after ingest.
  For Neo4j the store is in the server: its RSS growth is reported beside the client's.

spaCy dominates graphmem's ingest (about 390 turns/s per core on this machine). To keep
the run bounded, above ``--real-ner-max`` entries (default 10,000) the networkx replicas
reuse the decompositions of the 1,451 pool texts (computed once, untimed): their ingest
column then measures graph building only and is marked. Neo4j always runs spaCy. The
spaCy workers' memory is their own (about 170 MB each), not in the RSS columns.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._env import checkout, machine, versions
from benchmarks._locomo import Turn, load_conversations

HERE = Path(__file__).resolve().parent
APP = "graphmem-bench-speed"
ALL_SYSTEMS = ("graphmem", "graphmem-neo4j", "bm25", "bm25s", "adk")
DEFAULT_SIZES = (1_000, 10_000, 100_000)
WARMUP = 20
SEED = 20240501


# ---------------------------------------------------------------------------- corpus


@dataclass(frozen=True, slots=True)
class UserCorpus:
    user: str
    sessions: tuple[tuple[str, tuple[Turn, ...]], ...]


def build_corpus(size: int, entries_per_user: int, data: str | None = None) -> list[UserCorpus]:
    """``size`` turns of the LoCoMo dev pool replayed under ``ceil(size / entries_per_user)`` users."""
    pool = [t for c in load_conversations(data) for t in c.turns]
    per_user = entries_per_user or size
    rng = random.Random(SEED)
    users: list[UserCorpus] = []
    left = size
    index = 0
    while left > 0:
        n = min(per_user, left)
        user = f"user-{index:05d}-{rng.getrandbits(32):08x}"
        picks: list[Turn] = []
        while len(picks) < n:  # without replacement while the pool lasts, then again
            order = pool[:]
            rng.shuffle(order)
            picks.extend(order[: n - len(picks)])
        when = datetime(2022, 1, 1, tzinfo=UTC) + timedelta(days=rng.randrange(365))
        sessions: list[tuple[str, tuple[Turn, ...]]] = []
        start = 0
        while start < n:
            length = rng.randint(15, 30)
            session_id = f"s{len(sessions):04d}-{rng.getrandbits(24):06x}"
            when += timedelta(days=rng.randint(1, 14), minutes=rng.randrange(1440))
            turns = tuple(
                Turn(key=f"{user}/{session_id}/{i}", speaker=t.speaker, text=t.text, timestamp=when)
                for i, t in enumerate(picks[start : start + length])
            )
            sessions.append((session_id, turns))
            start += length
        users.append(UserCorpus(user, tuple(sessions)))
        left -= n
        index += 1
    return users


def build_queries(users: Sequence[UserCorpus], count: int, data: str | None = None) -> list[tuple[str, str]]:
    """``count + WARMUP`` (user, question) pairs: QA questions of categories 1-4, random users."""
    questions = [q.question for c in load_conversations(data) for q in c.questions]
    rng = random.Random(SEED + 1)
    picked = rng.sample(questions, min(len(questions), count + WARMUP))
    while len(picked) < count + WARMUP:
        picked.append(rng.choice(questions))
    return [(rng.choice(users).user, q) for q in picked]


# ---------------------------------------------------------------------------- memory


def _status_kb(field: str, pid: int | str = "self") -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _neo4j_server_pid(uri: str) -> int | None:
    """The pid of the ``scripts/neo4j`` server (as ``GRAPHMEM_NEO4J_HOME`` selects) serving ``uri``."""
    try:
        out = subprocess.run(
            [str(HERE.parent / "scripts" / "neo4j"), "status"], capture_output=True, text=True, timeout=30
        ).stdout.split()
    except (OSError, subprocess.SubprocessError):
        return None
    if not out or out[-1].rstrip("/") != uri.rstrip("/"):
        return None  # another server: its memory says nothing about ours
    for word in out:
        word = word.strip("()")
        if word.isdigit():
            return int(word)
    return None


# ---------------------------------------------------------------------------- one measurement


async def _measure(system_name: str, size: int, args: argparse.Namespace) -> dict[str, Any]:
    from benchmarks._systems import (
        AdkSystem,
        Bm25sSystem,
        Bm25System,
        CachingDecomposer,
        GraphmemSystem,
        System,
        neo4j_service,
    )

    corpus = build_corpus(size, args.entries_per_user, args.data)
    queries = build_queries(corpus, args.queries, args.data)
    entries = sum(len(t) for u in corpus for _, t in u.sessions)
    result: dict[str, Any] = {"system": system_name, "size": entries, "users": len(corpus), "notes": []}

    decomposer: CachingDecomposer | None = None
    system: System
    if system_name.startswith("graphmem"):
        decomposer = CachingDecomposer(n_process=args.processes)
        decomposer.decompose("warm up the pipeline")  # load spaCy before the baseline
        decomposer.start_workers()  # and its worker processes
        decomposer.clear_cache()
        decomposer.enabled = False  # real NER unless the replicas reuse decompositions
        if system_name == "graphmem":
            from graphmem import open_memory

            system = GraphmemSystem(await open_memory("memory:", nlp=decomposer), APP)
            if entries > args.real_ner_max:
                pool = sorted({t.text for u in corpus for _, s in u.sessions for t in s})
                decomposer.enabled = True
                decomposer.decompose_many(pool)  # untimed: the replicas reuse these
                result["ingest_reused_ner"] = True
                result["notes"].append(f"ingest reuses the decompositions of {len(pool)} unique texts (graph building only)")
        else:
            system = GraphmemSystem(await neo4j_service(args.neo4j_uri, decomposer), APP, name=system_name)
            for u in corpus:  # a store shared across runs: start empty
                await system.clear(u.user)
            # An untimed bulk load under a throwaway user first: a fresh server plans its
            # write queries and JIT-compiles the write path on the first calls, a cost a
            # long-running server has paid long before (it halved the 1k row's rate).
            await system.add_sessions("graphmem-bench-warmup", corpus[0].sessions[:12])
            await system.clear("graphmem-bench-warmup")
    elif system_name == "bm25":
        system = Bm25System()
    elif system_name == "bm25s":
        system = Bm25sSystem()
    elif system_name == "adk":
        system = AdkSystem(APP)
    else:
        raise SystemExit(f"unknown system {system_name!r}")

    if args.no_related_words and isinstance(system, GraphmemSystem):
        # Queries read no related words (graphmem._related, on by default).
        system.service.weights = dataclasses.replace(system.service.weights, related_words=False)
    if isinstance(system, GraphmemSystem):
        result["related_words"] = system.service.weights.related_words

    server_pid = _neo4j_server_pid(args.neo4j_uri) if system_name == "graphmem-neo4j" else None
    server_before = _status_kb("VmRSS", server_pid) if server_pid else None
    gc.collect()
    rss_before = _status_kb("VmRSS") or 0
    peak_reset = _reset_peak()

    started = time.perf_counter()
    for u in corpus:
        await system.add_sessions(u.user, u.sessions)
    await system.build()
    ingest_s = time.perf_counter() - started
    result["ingest_s"] = ingest_s
    result["ingest_per_s"] = entries / ingest_s

    gc.collect()
    result["held_mb"] = ((_status_kb("VmRSS") or 0) - rss_before) / 1024
    if server_pid:
        after = _status_kb("VmRSS", server_pid)
        if server_before is not None and after is not None:
            result["server_rss_growth_mb"] = (after - server_before) / 1024

    if decomposer is not None:
        decomposer.enabled = False  # queries go through spaCy, as in use
        decomposer.clear_cache()

    async def run_queries() -> list[float]:
        for user, q in queries[:WARMUP]:
            await system.search(user, q, 10)
        # A Neo4j service copies a large user in the background after its first searches
        # (graphmem.backends._replica): timed apart, the searches below are the steady state.
        t0 = time.perf_counter()
        await system.settle()
        result.setdefault("settle_s", []).append(round(time.perf_counter() - t0, 3))
        times = []
        for user, q in queries[WARMUP:]:
            t0 = time.perf_counter()
            await system.search(user, q, 10)
            times.append((time.perf_counter() - t0) * 1000)
        return times

    times = await run_queries()
    result["search_p50_ms"] = statistics.median(times)
    result["search_p99_ms"] = _percentile(times, 99)
    result["queries"] = len(times)
    peak_kb = _status_kb("VmHWM") if peak_reset else None
    if peak_kb is None:
        import resource

        peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        result["notes"].append("peak from ru_maxrss (includes the model load)")
    result["peak_mb"] = (peak_kb - rss_before) / 1024

    if decomposer is not None:
        # The same searches with the queries already decomposed: graph and scoring alone.
        decomposer.enabled = True
        decomposer.decompose_many([q for _, q in queries])
        no_ner = await run_queries()
        result["search_p50_no_ner_ms"] = statistics.median(no_ner)
        result["search_p99_no_ner_ms"] = _percentile(no_ner, 99)

    if args.profile:
        await _profile(system, corpus, queries, system_name, entries, Path(args.profile))

    if decomposer is not None:
        result["processes"] = args.processes
        if not result.get("ingest_reused_ner"):
            # One add_session per session, spaCy in this process: the first user's sessions
            # under a throwaway user, measured last (so that it cannot shape the memory
            # columns) and deleted again. Real NER, as in the ingest above.
            decomposer.enabled = False
            throwaway = f"{corpus[0].user}-per-session"
            first = sum(len(t) for _, t in corpus[0].sessions)
            started = time.perf_counter()
            for session_id, turns in corpus[0].sessions:
                await system.add_session(throwaway, session_id, turns)
            result["ingest_per_session_per_s"] = first / (time.perf_counter() - started)
            await system.clear(throwaway)

    if system_name == "graphmem-neo4j":
        for u in corpus:
            await system.clear(u.user)
    await system.close()
    return result


def _percentile(values: Sequence[float], pct: float) -> float:
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


async def _profile(system: Any, corpus: Sequence[UserCorpus], queries: Sequence[tuple[str, str]], name: str, size: int, out: Path) -> None:
    """cProfile profiles (standard library: no extra package) of searching (NER on) and of
    re-ingesting two users' sessions: ``.prof`` files and their text, by own time."""
    import cProfile
    import io
    import pstats

    def save(profiler: cProfile.Profile, stem: str) -> None:
        profiler.dump_stats(out / f"{stem}.prof")
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(40)
        stats.sort_stats("cumulative").print_stats(40)
        (out / f"{stem}.txt").write_text(text.getvalue())

    out.mkdir(parents=True, exist_ok=True)
    decomposer = getattr(getattr(system, "service", None), "decomposer", None)
    if decomposer is not None and hasattr(decomposer, "enabled"):
        decomposer.enabled = False  # profile real spaCy work
    profiler = cProfile.Profile()
    profiler.enable()
    for user, q in queries:
        await system.search(user, q, 10)
    profiler.disable()
    save(profiler, f"{name}-{size}-search")
    profiler = cProfile.Profile()
    profiler.enable()
    for u in corpus[:2]:  # add_session replaces a session: same work as the first ingest
        for session_id, turns in u.sessions:
            await system.add_session(u.user, session_id, turns)
    profiler.disable()
    save(profiler, f"{name}-{size}-ingest")


# ---------------------------------------------------------------------------- driver


def _fmt(value: Any, spec: str = ".1f") -> str:
    return "–" if value is None else format(value, spec)


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| system | entries | users | ingest entries/s | per session | search p50 ms | search p99 ms | p50 query cached ms | peak RSS Δ MB | held RSS Δ MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(rows, key=lambda r: (ALL_SYSTEMS.index(r["system"]) if r["system"] in ALL_SYSTEMS else 99, r["size"])):
        if "error" in r:
            lines.append(f"| {r['system']} | {r['size']:,} | | failed: {r['error']} | | | | | | |")
            continue
        ingest = f"{r['ingest_per_s']:,.0f}" + ("†" if r.get("ingest_reused_ner") else "")
        held = _fmt(r.get("held_mb"), ",.0f")
        if "server_rss_growth_mb" in r:
            held += f" (+ server {r['server_rss_growth_mb']:,.0f})"
        lines.append(
            f"| {r['system']} | {r['size']:,} | {r['users']} | {ingest} | {_fmt(r.get('ingest_per_session_per_s'), ',.0f')} | "
            f"{_fmt(r['search_p50_ms'], '.2f')} | "
            f"{_fmt(r['search_p99_ms'], '.2f')} | {_fmt(r.get('search_p50_no_ner_ms'), '.2f')} | "
            f"{_fmt(r.get('peak_mb'), ',.0f')} | {held} |"
        )
    if any(r.get("ingest_reused_ner") for r in rows):
        lines.append("")
        lines.append("† decompositions reused (spaCy not run during this ingest): graph building only, not comparable")
    lines.append("")
    lines.append(
        "ingest: one add_sessions per user (graphmem: spaCy in worker processes, see processes in speed.json); "
        "per session: one add_session per session of the first user (spaCy in the calling process)"
    )
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[dict[str, Any]], path: Path, title: str = "Search latency p50 against corpus size") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9.5, 4.5))
    for name in ALL_SYSTEMS:
        points = sorted((r["size"], r["search_p50_ms"]) for r in rows if r["system"] == name and "error" not in r)
        if not points:
            continue
        (line,) = ax.plot(*zip(*points, strict=True), marker="o", label=name)
        no_ner = sorted((r["size"], r["search_p50_no_ner_ms"]) for r in rows if r["system"] == name and "search_p50_no_ner_ms" in r)
        if no_ner:
            ax.plot(*zip(*no_ner, strict=True), marker=".", linestyle="--", color=line.get_color(), label=f"{name} (query decomposition cached)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("corpus size (entries)")
    ax.set_ylabel("search latency p50 (ms)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="center left", bbox_to_anchor=(1.01, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _run_worker(system: str, size: int, args: argparse.Namespace, say: Any) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", system, "--size", str(size), "--worker-out", str(out),
               "--entries-per-user", str(args.entries_per_user), "--queries", str(args.queries), "--real-ner-max", str(args.real_ner_max),
               "--processes", str(args.processes)]
        for opt in ("data", "neo4j_uri", "profile"):
            if getattr(args, opt):
                cmd += [f"--{opt.replace('_', '-')}", str(getattr(args, opt))]
        if args.no_related_words:
            cmd += ["--no-related-words"]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            say(f"  {system} @ {size}: FAILED: {tail[0]}")
            return {"system": system, "size": size, "error": tail[0][:120]}
        result = json.loads(out.read_text())
        say(f"  {system} @ {size:,}: ingest {result['ingest_per_s']:,.0f}/s, p50 {result['search_p50_ms']:.2f} ms, "
            f"p99 {result['search_p99_ms']:.2f} ms, peak {result['peak_mb']:,.0f} MB ({time.perf_counter() - started:.0f} s)")
        return result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)), help="comma-separated corpus sizes (default 1000,10000,100000)")
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help=f"comma-separated, from: {', '.join(ALL_SYSTEMS)}")
    parser.add_argument("--entries-per-user", type=int, default=1000, help="entries per user (0: one user holds the whole corpus)")
    parser.add_argument("--queries", type=int, default=300, help="timed searches per system and size (default 300)")
    parser.add_argument("--processes", type=int, default=2, help="graphmem's spaCy worker processes for ingest (default 2; 1 = none)")
    parser.add_argument("--real-ner-max", type=int, default=10_000, help="above this size graphmem networkx reuses decompositions (default 10000)")
    parser.add_argument("--no-related-words", action="store_true", help="graphmem reads no related words (ScoringWeights(related_words=False); on by default)")
    parser.add_argument("--neo4j-uri", default=os.environ.get("GRAPHMEM_NEO4J_URI"), help="Bolt URI for graphmem-neo4j (default $GRAPHMEM_NEO4J_URI)")
    parser.add_argument("--data", default=None, help="LoCoMo conversations.json (default ../shared/data/locomo-dev/)")
    parser.add_argument("--out", default=str(HERE / "results"), help="where speed.json and speed.md go (default benchmarks/results)")
    parser.add_argument(
        "--plot",
        default=None,
        help="the PNG plot (default: search_latency.png in --out when given, else benchmarks/search_latency.png)",
    )
    parser.add_argument("--profile", default=None, metavar="DIR", help="also write cProfile profiles of graphmem search and ingest to DIR")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        result = asyncio.run(_measure(args.worker, args.size, args))
        Path(args.worker_out).write_text(json.dumps(result))
        return 0

    say = (lambda m: None) if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in ALL_SYSTEMS]
    if unknown:
        parser.error(f"unknown system(s) {unknown}; choose from {', '.join(ALL_SYSTEMS)}")
    notes: list[str] = []
    if "graphmem-neo4j" in systems:
        reason = None
        if not args.neo4j_uri:
            reason = "no Neo4j URI (give --neo4j-uri or set GRAPHMEM_NEO4J_URI; start one with scripts/neo4j start)"
        else:
            try:
                import graphmem.backends.neo4j  # noqa: F401
            except ImportError as exc:
                reason = f"graphmem.backends.neo4j is not importable ({exc})"
        if reason:
            systems.remove("graphmem-neo4j")
            notes.append(f"graphmem-neo4j skipped: {reason}")
            say(notes[-1])
    meta = {"date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(), "versions": versions(), "checkout": checkout(),
            "entries_per_user": args.entries_per_user, "queries": args.queries, "real_ner_max": args.real_ner_max,
            "processes": args.processes, "related_words": not args.no_related_words}
    rows: list[dict[str, Any]] = []
    for size in sizes:
        say(f"{size:,} entries")
        for system in systems:
            rows.append(_run_worker(system, size, args, say))
    meta["load_avg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    table = markdown_table(rows)
    print(table)
    for note in notes:
        print(f"- {note}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "speed.json").write_text(json.dumps({"meta": meta, "notes": notes, "rows": rows}, indent=1))
    (out / "speed.md").write_text(table + "".join(f"\n- {n}" for n in notes) + "\n")
    per_user = f"{args.entries_per_user:,} entries per user" if args.entries_per_user else "one user"
    # A run written elsewhere (a trial, a comparison) leaves the README's picture alone.
    picture = Path(args.plot) if args.plot else (HERE if out == HERE / "results" else out) / "search_latency.png"
    plot(rows, picture, f"Search p50 against corpus size ({per_user}, limit=10)")
    say(f"wrote {out / 'speed.md'}, {out / 'speed.json'} and {picture}")
    return 0 if not any("error" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
