#!/usr/bin/env python3
"""Load graphmem fixture files into a backend, for tests and demos (no CLI extra needed).

Usage:
    scripts/load_fixtures.py [--uri URI | --backend networkx|neo4j [--store PATH]]
                             [--skip-projects] [--demo] [FILE ...]

The store is a URI as ``graphmem.open_memory`` takes it (``--uri``, GRAPHMEM_URI), or else
the same settings as the ``graphmem`` command: GRAPHMEM_BACKEND, GRAPHMEM_STORE,
GRAPHMEM_NEO4J_URI, GRAPHMEM_NEO4J_USER, GRAPHMEM_NEO4J_PASSWORD, GRAPHMEM_NEO4J_DATABASE.
Every line of every file is validated before anything is stored; a bad line is reported with its file and line number.
``graphmem load`` does the same with a progress bar.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="fixture files (JSON Lines); - for standard input")
    parser.add_argument("--demo", action="store_true", help="also load the demo fixtures shipped with graphmem")
    parser.add_argument("--skip-projects", action="store_true", help="leave out sessions that belong to a project")
    parser.add_argument("--uri", default=env("GRAPHMEM_URI"), help="the store URI (memory:, a path, bolt://...)")
    parser.add_argument(
        "--redecompose", action="store_true", help="ignore the files' tokens and entities; decompose every text again"
    )
    parser.add_argument("--backend", default=env("GRAPHMEM_BACKEND", "networkx"), choices=("networkx", "neo4j"))
    parser.add_argument("--store", default=env("GRAPHMEM_STORE"), help="networkx journal file (required for networkx)")
    parser.add_argument("--neo4j-uri", default=env("GRAPHMEM_NEO4J_URI", "bolt://127.0.0.1:7687"))
    parser.add_argument("--neo4j-user", default=env("GRAPHMEM_NEO4J_USER", "neo4j"))
    parser.add_argument("--neo4j-password", default=env("GRAPHMEM_NEO4J_PASSWORD"))
    parser.add_argument("--neo4j-database", default=env("GRAPHMEM_NEO4J_DATABASE"))
    return parser


async def _main(args: argparse.Namespace) -> str:
    from graphmem import GraphmemError, open_memory
    from graphmem._fixtures import demo_fixtures_path, load_fixtures
    from graphmem._open import neo4j_store_uri, parse_store_uri

    sources: list[str | Path] = list(args.files)
    if args.demo:
        sources.append(demo_fixtures_path())
    if not sources:
        raise GraphmemError("give fixture files or --demo")
    target: str | Path
    if args.uri:
        target = args.uri
    elif args.backend == "neo4j":
        target = neo4j_store_uri(
            args.neo4j_uri, user=args.neo4j_user, password=args.neo4j_password, database=args.neo4j_database
        )
    elif args.store:
        target = Path(args.store)
    else:
        raise GraphmemError(
            "the networkx backend needs --store PATH (or GRAPHMEM_STORE, or --uri): "
            "memory in this process would be lost"
        )
    store = parse_store_uri(target)
    if store.kind == "memory":
        raise GraphmemError("memory: would be lost when this script ends: load into a journal path or Neo4j")
    service = await open_memory(target)
    try:
        report = await load_fixtures(service, sources, args.skip_projects, redecompose=args.redecompose)
    finally:
        await service.close()
    skipped = (
        f"; left out {report.skipped_project_sessions} project sessions" if report.skipped_project_sessions else ""
    )
    where = f"Neo4j at {store.display}" if store.kind == "neo4j" else f"networkx store {store.display}"
    return (
        f"loaded {report.sessions} sessions, {report.entries} entries, {report.users} users "
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
