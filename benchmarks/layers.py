"""The cost of the MCP layer on a search: p50 of a direct ``search()`` against the same
search through the MCP server (``recall``), in one run, on one store.

Usage (from the repository root)::

    python benchmarks/layers.py [--uri STORE] [--rounds 5] [--queries 50]

The store (default: a fresh journal in a temporary directory; any URI of ``open_memory``,
e.g. a throwaway Neo4j ``bolt://127.0.0.1:7707``) gets the demo fixtures, and the queries are
the first words of the user's own entries (companion / alice, 68 entries). Four ways, one
after the other, each warmed up first:

- ``direct``: ``service.search(...)`` in this process;
- ``mcp in-process``: the SDK's ``Client`` connected to the server object in this process
  (the MCP dispatch, argument validation and result JSON, no transport);
- ``mcp stdio``: ``graphmem mcp`` as a subprocess, as an MCP client starts it;
- ``mcp http``: ``graphmem mcp --http`` on 127.0.0.1 (streamable HTTP).

Each number is the round trip the caller sees. A journal has one writer, so the direct
search reads it ``read_only`` and the servers run one at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from mcp import Client, StdioServerParameters  # noqa: E402

from graphmem import SearchRequest, load_fixtures, open_memory  # noqa: E402
from graphmem._fixtures import demo_fixtures_path  # noqa: E402
from graphmem._mcp import MemoryScope, create_server  # noqa: E402

APP, USER = "companion", "alice"


async def timed(call: Callable[[str], Awaitable[object]], queries: list[str], rounds: int) -> list[float]:
    for query in queries[:10]:  # warm up: pipelines, connections, caches
        await call(query)
    samples = []
    for _ in range(rounds):
        for query in queries:
            start = time.perf_counter()
            await call(query)
            samples.append((time.perf_counter() - start) * 1000)
    return samples


def server_args(uri: str) -> list[str]:
    return ["-m", "graphmem.cli", "mcp", "--uri", uri, "--app", APP, "--user", USER]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def through(client: Client, queries: list[str], rounds: int) -> list[float]:
    async def recall(query: str) -> None:
        result = await client.call_tool("recall", {"query": query, "limit": 10})
        assert not result.is_error, result.content

    return await timed(recall, queries, rounds)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uri", help="the store (default: a journal in a temporary directory)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory()
    uri = args.uri or str(Path(tmp.name) / "memory.journal")

    writer = await open_memory(uri)
    await load_fixtures(writer, [demo_fixtures_path()], skip_projects=not writer.supports_project_scoping())
    entries = await writer.list_entries(APP, USER)
    await writer.close()
    queries = [" ".join(e.memory.text.split()[:8]) for e in entries][: args.queries]

    results: dict[str, list[float]] = {}
    reader = await open_memory(uri, read_only=True)

    async def search(query: str) -> None:
        await reader.search(SearchRequest(query=query, app_name=APP, user_id=USER, limit=10))

    results["direct"] = await timed(search, queries, args.rounds)
    await reader.close()

    server, store = create_server(uri, MemoryScope(APP, USER))
    async with Client(server) as client:
        results["mcp in-process"] = await through(client, queries, args.rounds)
    await store.close()

    env = {"PYTHONPATH": str(REPO), **{k: v for k, v in os.environ.items() if k.startswith("GRAPHMEM_NEO4J_")}}
    stdio = StdioServerParameters(command=sys.executable, args=server_args(uri), env=env)
    async with Client(stdio) as client:
        results["mcp stdio"] = await through(client, queries, args.rounds)

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, *server_args(uri), "--http", "--port", str(port)],
        env={**os.environ, **env},
        stderr=subprocess.DEVNULL,
    )
    try:
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None:
                    raise SystemExit("the HTTP server exited") from None
                time.sleep(0.2)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            results["mcp http"] = await through(client, queries, args.rounds)
    finally:
        process.terminate()
        process.wait(timeout=30)
    tmp.cleanup()

    direct = statistics.median(results["direct"])
    store_kind = "Neo4j" if "://" in uri and not uri.startswith("file:") else "networkx journal"
    print(f"store: {store_kind}; {len(queries)} queries x {args.rounds} rounds; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    print("| path | p50 ms | p90 ms | p50 overhead vs direct |")
    print("|---|---|---|---|")
    for name, samples in results.items():
        p50 = statistics.median(samples)
        p90 = statistics.quantiles(samples, n=10)[-1]
        extra = "" if name == "direct" else f"{p50 - direct:+.2f} ms"
        print(f"| {name} | {p50:.2f} | {p90:.2f} | {extra} |")


if __name__ == "__main__":
    asyncio.run(main())
