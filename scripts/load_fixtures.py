#!/usr/bin/env python3
"""Load graphmem fixture files into a backend, for tests and demos (no CLI extra needed).

Usage:
    scripts/load_fixtures.py [--uri URI | --backend networkx|neo4j [--store PATH]]
                             [--skip-projects] [--demo] [FILE ...]

The store is a URI as ``graphmem.open_memory`` takes it (``--uri``, GRAPHMEM_URI), or else
the same settings as the ``graphmem`` command: GRAPHMEM_BACKEND, GRAPHMEM_STORE,
GRAPHMEM_NEO4J_URI, GRAPHMEM_NEO4J_USER, GRAPHMEM_NEO4J_PASSWORD, GRAPHMEM_NEO4J_DATABASE.
As there, the command line wins: a GRAPHMEM_URI from the environment yields to ``--store``,
``--backend`` or ``--neo4j-uri`` given; ``--store`` means networkx, ``--neo4j-uri`` Neo4j,
unless ``--backend`` says otherwise. Every line of every file is validated before anything
is stored, or a store made; a bad line is reported with its file and line number, and a
load refused (or of nothing) makes no store at a journal path that had none.
``graphmem load`` does the same with a progress bar.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    # The store's options default to None: whether one was given decides over the environment.
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="fixture files (JSON Lines); - for standard input")
    parser.add_argument("--demo", action="store_true", help="also load the demo fixtures shipped with graphmem")
    parser.add_argument("--skip-projects", action="store_true", help="leave out sessions that belong to a project")
    parser.add_argument("--uri", help="the store URI (a path, bolt://...; GRAPHMEM_URI)")
    parser.add_argument(
        "--redecompose", action="store_true", help="ignore the files' tokens and entities; decompose every text again"
    )
    parser.add_argument("--backend", choices=("networkx", "neo4j"), help="GRAPHMEM_BACKEND; default networkx")
    parser.add_argument("--store", help="networkx journal file (required for networkx; GRAPHMEM_STORE)")
    parser.add_argument("--neo4j-uri", help="GRAPHMEM_NEO4J_URI; default bolt://127.0.0.1:7687")
    parser.add_argument("--neo4j-user", default=env("GRAPHMEM_NEO4J_USER", "neo4j"))
    parser.add_argument("--neo4j-password", default=env("GRAPHMEM_NEO4J_PASSWORD"))
    parser.add_argument("--neo4j-database", default=env("GRAPHMEM_NEO4J_DATABASE"))
    return parser


def _target(args: argparse.Namespace) -> str | Path:
    """The store the options name, the command line's over the environment's."""
    from graphmem import GraphmemError
    from graphmem._open import neo4j_store_uri

    env = os.environ.get
    if args.uri:
        return str(args.uri)
    if env("GRAPHMEM_URI") and not (args.store or args.backend or args.neo4j_uri):
        return env("GRAPHMEM_URI", "")
    backend = args.backend or ("networkx" if args.store else "neo4j" if args.neo4j_uri else None)
    backend = backend or env("GRAPHMEM_BACKEND") or "networkx"
    if backend not in ("networkx", "neo4j"):
        raise GraphmemError(f"GRAPHMEM_BACKEND is {backend!r}: networkx or neo4j")
    if backend == "neo4j":
        if args.store:
            raise GraphmemError("--store names a networkx journal, and --backend neo4j a Neo4j: give one")
        return neo4j_store_uri(
            args.neo4j_uri or env("GRAPHMEM_NEO4J_URI") or "bolt://127.0.0.1:7687",
            user=args.neo4j_user,
            password=args.neo4j_password,
            database=args.neo4j_database,
        )
    if args.neo4j_uri:
        raise GraphmemError("--neo4j-uri names a Neo4j, and --backend networkx a journal: give one")
    store = args.store or env("GRAPHMEM_STORE")
    if store:
        return Path(store)
    raise GraphmemError(
        "the networkx backend needs --store PATH (or GRAPHMEM_STORE, or --uri): "
        "memory in this process would be lost"
    )


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" if n == 1 else f"{n:,} {what}s"


async def _main(args: argparse.Namespace) -> str:
    from graphmem import GraphmemError, open_memory
    from graphmem._fixtures import (
        check_fixture_lines,
        demo_fixtures_path,
        kept_fixture_lines,
        load_fixture_lines,
        read_fixtures,
    )
    from graphmem._open import parse_store_uri

    sources: list[str | Path] = list(args.files)
    if args.demo:
        sources.append(demo_fixtures_path())
    if not sources:
        raise GraphmemError("give fixture files or --demo")
    target = _target(args)
    store = parse_store_uri(target)
    if store.kind == "memory":
        raise GraphmemError("memory: would be lost when this script ends: load into a journal path or Neo4j")
    started = time.perf_counter()
    lines = read_fixtures(sources)  # every line read and checked before a store is opened, or made
    new = store.kind == "file" and store.path is not None and not os.path.exists(store.path)
    if new and not kept_fixture_lines(lines, args.skip_projects):
        said = "no fixture lines outside projects" if lines else "no fixture lines"
        return f"nothing to load ({said}); no store was made at {store.display}"
    if new:
        # Checked against the empty store it would be (read-only: nothing is made), so that a
        # refused load leaves no empty store at a mistyped path, read as "nothing stored".
        empty = await open_memory(target, read_only=True)
        try:
            await check_fixture_lines(empty, lines, args.skip_projects)
        finally:
            await empty.close()
    service = await open_memory(target)
    try:
        report = await load_fixture_lines(
            service, lines, args.skip_projects, redecompose=args.redecompose, started=started
        )
    finally:
        await service.close()
    skipped = (
        f"; left out {_count(report.skipped_project_sessions, 'project session')}"
        if report.skipped_project_sessions
        else ""
    )
    where = f"Neo4j at {store.display}" if store.kind == "neo4j" else f"networkx store {store.display}"
    entries = f"{report.entries:,} {'entry' if report.entries == 1 else 'entries'}"
    return (
        f"loaded {_count(report.sessions, 'session')}, {entries}, {_count(report.users, 'user')} "
        f"into {where} in {report.seconds:.1f} s{skipped}"
    )


def main() -> int:
    from graphmem import BackendUnavailableError, GraphmemError

    args = _parser().parse_args()
    try:
        print(asyncio.run(_main(args)))
    except GraphmemError as exc:  # bad lines, unreachable backend: one line, no traceback
        print(f"load_fixtures: {' '.join(str(exc).split())}", file=sys.stderr)
        return 3 if isinstance(exc, BackendUnavailableError) else 1
    except ImportError as exc:  # the neo4j extra
        print(f"load_fixtures: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"load_fixtures: cannot read {exc.filename or ''}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
