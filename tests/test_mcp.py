"""The MCP server (``graphmem mcp``) through the SDK's real client: over stdio with the server
as a subprocess, over streamable HTTP on 127.0.0.1, on both backends.

The stdio servers are started from the README's configuration snippets, so the snippets are
tested as written (only the store, the user and the ``graphmem`` executable are swapped for
this checkout's).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from conftest import in_ci, neo4j_uri_or_skip
from graphmem import Decomposer, open_memory

try:
    from mcp import Client, StdioServerParameters
except ImportError:  # outside CI the MCP tests skip without the extra; in CI they must run
    if in_ci():
        raise
    pytest.skip("the MCP server needs the mcp extra: pip install 'graphmem[mcp]'", allow_module_level=True)

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")
APP = "mcp-test"
pytestmark = pytest.mark.slow


def readme_section() -> str:
    start = README.index("## Use it over MCP")
    return README[start : README.index("\n## ", start + 1)]


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", readme_section(), flags=re.S)


def readme_config(backend: str) -> dict[str, Any]:
    """The README's client configuration for a backend (the first snippet: a journal; the second: Neo4j)."""
    configs = [json.loads(block)["mcpServers"]["graphmem"] for block in readme_blocks("json")]
    config: dict[str, Any] = configs[0] if backend == "networkx" else configs[1]
    return config


def server_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {"PYTHONPATH": str(REPO), **(extra or {})}
    for name in ("GRAPHMEM_NEO4J_USER", "GRAPHMEM_NEO4J_PASSWORD", "CI"):
        if name in os.environ and name not in env:
            env[name] = os.environ[name]
    return env


def swap(args: list[str], option: str, value: str) -> list[str]:
    out = list(args)
    out[out.index(option) + 1] = value
    return out


def stdio_server(backend: str, uri: str, user: str) -> StdioServerParameters:
    """The README's configuration, run from this checkout on this store and user."""
    config = readme_config(backend)
    assert config["command"] == "graphmem" and config["args"][0] == "mcp"
    args = swap(swap(swap(config["args"], "--uri", uri), "--app", APP), "--user", user)
    env = dict(config.get("env", {}))
    if backend == "neo4j":
        # The snippet's credentials are an example; the test server's are the environment's.
        env = {k: v for k, v in env.items() if k in os.environ}
    return StdioServerParameters(
        command=sys.executable, args=["-m", "graphmem.cli", *args], env=server_env(env), cwd=str(REPO)
    )


@pytest.fixture(params=["networkx", "neo4j"])
async def backend_uri(request: pytest.FixtureRequest, tmp_path: Path, decomposer: Decomposer) -> AsyncIterator[tuple[str, str]]:
    """(backend, store URI) with the test users empty."""
    if request.param == "networkx":
        yield "networkx", str(tmp_path / "memory.journal")
        return
    uri = neo4j_uri_or_skip()
    service = await open_memory(uri, nlp=decomposer)
    try:
        for user in ("ann", "bob"):
            await service.delete_user(APP, user)
    finally:
        await service.close()
    yield "neo4j", uri


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    text = result.content[0].text  # type: ignore[union-attr]
    assert "\n" not in text  # compact
    data: dict[str, Any] = json.loads(text)
    assert data == result.structured_content
    return data


async def error(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    text: str = result.content[0].text  # type: ignore[union-attr]
    assert text and "\n" not in text and "Traceback" not in text
    assert "Value error" not in text  # pydantic's prefix: our messages are sentences of their own
    assert not text.startswith("Error executing tool")  # nor the SDK's
    return text


# ---------------------------------------------------------------------------- stdio


async def test_tools_over_stdio(backend_uri: tuple[str, str]) -> None:
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"remember", "recall", "recent", "forget", "stats"}
        for tool in tools.values():
            assert tool.description and tool.input_schema["type"] == "object"
        assert tools["recall"].input_schema["properties"]["limit"]["minimum"] == 1
        assert "app_name" not in json.dumps([t.input_schema for t in tools.values()])  # never the client's choice

        first = await call(client, "remember", text="My sister Maria moved to Lisbon.", session_id="s1", author="Ann",
                           timestamp="2026-01-05T10:00:00Z")
        answer = await call(client, "remember", text="She teaches piano there.", session_id="s1", author="Ann",
                            timestamp="2026-01-05T10:01:00Z")
        alone = await call(client, "remember", text="I drink green tea every morning.")
        assert answer["session"] == "s1" and "session" not in alone and first["id"] != answer["id"]

        hits = (await call(client, "recall", query="Where does Maria live?", limit=5))["hits"]
        assert [h["text"] for h in hits] == ["My sister Maria moved to Lisbon.", "She teaches piano there."]
        # "Where" asks for a place, which the stored turn names (graphmem._answer_types).
        assert hits[0]["matched"] == ["@place", "maria"] and hits[0]["entities"] == ["maria"] and 0 < hits[0]["score"] <= 1
        assert "matched" not in hits[1] and hits[1]["context"] > 0  # recalled as the next turn
        assert hits[1]["context_from"] == hits[0]["id"] and "context_from" not in hits[0]
        assert hits[0]["time"] == "2026-01-05T10:00:00Z"
        assert "folded" not in hits[0]  # no one answers Ann's two messages: they are two hits

        # Another author answers: Ann's two messages are one reply, one hit (rule 7).
        ben = await call(client, "remember", text="How lovely!", session_id="s1", author="Ben",
                         timestamp="2026-01-05T10:02:00Z")
        [reply, *others] = (await call(client, "recall", query="Where does Maria live?", limit=5))["hits"]
        assert reply["id"] == first["id"] and [f["id"] for f in reply["folded"]] == [answer["id"]]
        assert reply["folded"][0]["text"] == "She teaches piano there." and reply["folded"][0]["context"] > 0
        assert answer["id"] not in [h["id"] for h in others]
        assert await call(client, "forget", entry_id=ben["id"]) == {"removed": 1}

        recent = (await call(client, "recent", limit=2))["memories"]
        assert [m["text"] for m in recent][0] == "I drink green tea every morning."
        assert (await call(client, "stats"))["entries"] == 3

        # A hit read through a related word says so ("puppy" for "pets"); the others do not.
        puppy = await call(client, "remember", text="We adopted a puppy last week!", author="Ann")
        [pet] = (await call(client, "recall", query="What pets do I have?", limit=5))["hits"]
        assert pet["text"] == "We adopted a puppy last week!" and pet["related_to"] == {"puppy": "pet"}
        assert "related_to" not in hits[0] and "read_as" not in hits[0]
        assert await call(client, "forget", entry_id=puppy["id"]) == {"removed": 1}

        assert await call(client, "forget", entry_id=alone["id"]) == {"removed": 1}
        assert await call(client, "forget", entry_id=alone["id"]) == {"removed": 0}
        assert await call(client, "forget", query="piano") == {"removed": 1}
        assert await call(client, "forget", session_id="s1") == {"removed": 1}
        assert (await call(client, "stats"))["entries"] == 0


async def test_recall_windows_take_dates_and_times_as_typed(backend_uri: tuple[str, str]) -> None:
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as client:
        for day, hour in [("02", "23"), ("03", "18"), ("04", "08")]:
            await call(client, "remember", text=f"Tea at the harbour, day {day}.", timestamp=f"2023-05-{day}T{hour}:00:00Z")

        async def days(**window: str) -> list[str]:
            hits = (await call(client, "recall", query="tea harbour", limit=10, **window))["hits"]
            return sorted(h["time"][:10] for h in hits)

        # A date alone as until keeps all of that day (it was its first moment: the day was lost).
        assert await days(since="2023-05-03", until="2023-05-03") == ["2023-05-03"]
        assert await days(until="2023-05-03") == ["2023-05-02", "2023-05-03"]
        assert await days(until="20230503") == ["2023-05-02", "2023-05-03"]  # ISO 8601's basic form too
        assert await days(since="2023-05-03T18:00", until="2023-05-04T07:59:59.5+00:00") == ["2023-05-03"]
        # A date asked alone: the memories of that date (the day before counts, for time zones).
        hits = (await call(client, "recall", query="What did we talk about on 4 May 2023?", limit=10))["hits"]
        assert sorted((h["time"][:10], h["time_match"]) for h in hits) == [
            ("2023-05-03", "said 2023-05-03"),
            ("2023-05-04", "said 2023-05-04"),
        ]


async def test_a_time_recall_shows_kept_as_until_keeps_its_memory(backend_uri: tuple[str, str]) -> None:
    """A memory is stored to the microsecond and shown to the second: recall(until=<the time
    shown>) left it out."""
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "bob")) as client:
        await call(client, "remember", text="The heron nests by the old mill.", timestamp="2023-05-03T10:00:00.250Z")
        await call(client, "remember", text="The heron flew off.", timestamp="2023-05-08T09:00:00Z")
        shown = (await call(client, "recent"))["memories"][-1]
        assert shown["time"] == "2023-05-03T10:00:00Z"

        async def texts(**window: str) -> list[str]:
            return sorted(h["text"] for h in (await call(client, "recall", query="heron", **window))["hits"])

        assert await texts(until=shown["time"]) == ["The heron nests by the old mill."]
        assert await texts(since=shown["time"], until=shown["time"]) == ["The heron nests by the old mill."]
        assert await texts(until="2023-05-03T10:00") == ["The heron nests by the old mill."]  # the whole minute
        assert await texts(until="2023-05-03T09:59:59") == []
        # A week (ISO 8601's 2023-W18: 1 to 7 May) as until keeps the week, not its Monday.
        assert await texts(since="2023-W18", until="2023-W18") == ["The heron nests by the old mill."]


async def test_remember_reads_a_timestamp_as_every_entry_point_does(backend_uri: tuple[str, str]) -> None:
    """remember(timestamp="20240503") was stored as 1970-08-23 (pydantic's lax datetime)."""
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as client:
        await call(client, "remember", text="Dentist appointment", timestamp="20240503")
        assert [m["time"] for m in (await call(client, "recent"))["memories"]] == ["2024-05-03T00:00:00Z"]
        for bad in ("20240503.0", "1.7e9"):
            assert "ISO 8601" in await error(client, "remember", text="tea", timestamp=bad)
        assert len((await call(client, "recent"))["memories"]) == 1


async def test_remember_keeps_the_role_a_question_in_the_first_person_reads(backend_uri: tuple[str, str]) -> None:
    """An agent that stores the person under their name and its own words in the role
    "model": "I" is that person, whose turn comes before the assistant's echo of it."""
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as client:
        said = await call(client, "remember", text="We adopted a shelter dog in spring.", author="Ann", session_id="s")
        await call(client, "remember", text="Which dog did you adopt?", author="helper", role="model", session_id="s")
        hits = (await call(client, "recall", query="Which dog did I adopt?"))["hits"]
        assert [h["author"] for h in hits] == ["Ann", "helper"]
        assert hits[0]["id"] == said["id"] and hits[0]["read_as"] == {"I": "ann"} and hits[1]["other_speaker"] is True
        assert "role" in await error(client, "remember", text="tea", role="system")


async def test_bad_arguments_are_one_line_errors_and_the_server_keeps_serving(backend_uri: tuple[str, str]) -> None:
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as client:
        assert "limit" in await error(client, "recall", query="tea", limit=0)
        assert "query" in await error(client, "recall")
        assert "min_score" in await error(client, "recall", query="tea", min_score=2)
        assert "timestamp" in await error(client, "remember", text="tea", timestamp="yesterday")
        assert "blank" in await error(client, "remember", text="   ")
        assert "since" in await error(client, "recall", query="tea", since="2026-02-01", until="2026-01-01")
        assert "ISO 8601" in await error(client, "recall", query="tea", since="last week")
        assert "session_id" in await error(client, "remember", text="tea", session_id="a\x00b")
        for author in (" ", "a\x00b", "Ann\n"):
            assert "author" in await error(client, "remember", text="tea", author=author)
        assert "exactly one" in await error(client, "forget", entry_id="x", query="tea")
        assert "exactly one" in await error(client, "forget")
        assert "query" in await error(client, "recall", query="tea " * 5000)
        assert "limit" in await error(client, "recent", limit="many")
        # Numbers are numbers: lax pydantic would read true as 1 and "5" as 5.
        assert "limit" in await error(client, "recall", query="tea", limit=True)
        assert "limit" in await error(client, "recall", query="tea", limit="5")
        assert "limit" in await error(client, "recent", limit=True)
        assert "min_score" in await error(client, "recall", query="tea", min_score=True)
        assert await error(client, "no_such_tool")
        # Still serving, and nothing was stored by the refused calls.
        assert (await call(client, "stats"))["entries"] == 0
        assert (await call(client, "remember", text="green tea"))["id"]


async def test_an_argument_a_tool_does_not_take_is_refused_not_ignored() -> None:
    """The SDK's argument models ignored a name they do not declare: remember(sesion_id=...)
    stored the text outside its conversation, recall(limt=1) recalled the default 5."""
    async with in_process("memory:", "ann") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert {name: tool.input_schema.get("additionalProperties") for name, tool in tools.items()} == dict.fromkeys(
            tools, False
        )
        assert await error(client, "remember", text="Rex likes the beach.", sesion_id="trip") == (
            "invalid arguments for remember: unknown argument 'sesion_id' "
            "(remember takes text, session_id, author, role, timestamp)"
        )
        assert await error(client, "recall", query="Rex", limt=1) == (
            "invalid arguments for recall: unknown argument 'limt' (recall takes query, limit, min_score, since, until)"
        )
        assert "unknown argument 'entryid' (forget takes entry_id, session_id, query)" in await error(
            client, "forget", entryid="abc"
        )
        assert "unknown arguments 'app_name', 'user_id' (recent takes limit)" in await error(
            client, "recent", app_name="other", user_id="bob"
        )
        assert "unknown argument 'verbose' (stats takes no arguments)" in await error(client, "stats", verbose=True)
        # A misspelt required argument is also missing: the name to correct is what is said.
        assert "unknown argument 'txt'" in await error(client, "remember", txt="Rex likes the park.")
        assert (await call(client, "stats"))["entries"] == 0  # nothing was stored by the refused calls


async def test_the_readme_table_names_what_each_tool_takes_and_returns() -> None:
    """The table left out the ``project`` that recall's hits and recent's memories carry,
    and the cap on remember's text, a tenth of graphmem's own."""
    rows = {
        cells[0].strip("` "): cells[1:]
        for line in readme_section().splitlines()
        if line.startswith("| `") and len(cells := line.strip("| ").split(" | ")) == 3
    }
    async with in_process("memory:", "ann") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(rows) == set(tools)
    for name, (takes, returns) in rows.items():
        tool = tools[name]
        assert set(re.findall(r"`(\w+)`", takes)) == set(tool.input_schema["properties"]), name
        output = tool.output_schema or {}
        fields = set(output["properties"]).union(*(d.get("properties", {}) for d in output.get("$defs", {}).values()))
        assert set(re.findall(r'"(\w+)"', returns)) == fields, name
    assert f"at most {tools['remember'].input_schema['properties']['text']['maxLength']:,} characters" in rows["remember"][0]


async def test_a_second_users_server_cannot_see_or_forget_the_first_users_memory(backend_uri: tuple[str, str]) -> None:
    backend, uri = backend_uri
    async with Client(stdio_server(backend, uri, "ann")) as ann:
        kept = await call(ann, "remember", text="Ann's locker code is 4512.", session_id="s1")
    # One server at a time: a journal has one writer (on Neo4j they could run side by side).
    async with Client(stdio_server(backend, uri, "bob")) as bob:
        assert (await call(bob, "recall", query="locker code 4512"))["hits"] == []
        assert (await call(bob, "recent"))["memories"] == []
        assert await call(bob, "forget", entry_id=kept["id"]) == {"removed": 0}
        assert await call(bob, "forget", session_id="s1") == {"removed": 0}
        assert await call(bob, "forget", query="locker code") == {"removed": 0}
        assert (await call(bob, "stats"))["entries"] == 0
    async with Client(stdio_server(backend, uri, "ann")) as ann:
        assert [h["id"] for h in (await call(ann, "recall", query="locker code"))["hits"]] == [kept["id"]]


# ---------------------------------------------------------------------------- HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(uri: str, user: str) -> Iterator[str]:
    """The README's HTTP command on a free port of 127.0.0.1; yields its URL."""
    (command,) = [line for block in readme_blocks("bash") for line in block.splitlines() if "--http" in line]
    args = command.split()
    assert args[:2] == ["graphmem", "mcp"]
    port = free_port()
    args = swap(swap(swap(swap(args[1:], "--uri", uri), "--port", str(port)), "--app", APP), "--user", user)
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmem.cli", *args],
        env={**os.environ, **server_env()},
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for_port(process, port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def wait_for_port(process: subprocess.Popen[bytes], port: int) -> None:
    # The server loads spaCy and opens the store before it listens: wait for the socket
    # (bounded by the test timeout), failing at once if the process dies instead.
    while True:
        if process.poll() is not None:
            assert process.stderr is not None
            raise AssertionError(f"the server exited: {process.stderr.read().decode()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            try:
                process.wait(timeout=0.2)  # returns early if the process dies
            except subprocess.TimeoutExpired:
                pass


async def test_tools_over_http(backend_uri: tuple[str, str]) -> None:
    _, uri = backend_uri
    with http_server(uri, "ann") as url:
        async with Client(url) as client:
            assert {t.name for t in (await client.list_tools()).tools} == {"remember", "recall", "recent", "forget", "stats"}
            stored = await call(client, "remember", text="The spare key is under the blue pot.")
            assert "limit" in await error(client, "recall", query="key", limit=0)
        # A second session of the same server sees what the first stored.
        async with Client(url) as client:
            hits = (await call(client, "recall", query="Where is the spare key?"))["hits"]
            assert [h["id"] for h in hits] == [stored["id"]] and "key" in hits[0]["matched"]
            assert await call(client, "forget", entry_id=stored["id"]) == {"removed": 1}
    with http_server(uri, "bob") as url:
        async with Client(url) as client:
            assert (await call(client, "recall", query="spare key blue pot"))["hits"] == []


# ---------------------------------------------------------------------------- outage


class Proxy:
    """A TCP forwarder to Neo4j that can be cut and restored: an outage of a real server."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = free_port()
        self.server: asyncio.Server | None = None
        self.pipes: set[asyncio.StreamWriter] = set()

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)

    async def stop(self) -> None:
        assert self.server is not None
        self.server.close()
        for writer in list(self.pipes):
            writer.close()
        await self.server.wait_closed()
        self.server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        self.pipes |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except OSError:
                pass
            finally:
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))


@asynccontextmanager
async def in_process(uri: str, user: str, project: str | None = None) -> AsyncIterator[Client]:
    from graphmem._mcp import MemoryScope, create_server

    server, store = create_server(uri, MemoryScope(APP, user, project))
    try:
        async with Client(server) as client:
            yield client
    finally:
        await store.close()


async def test_an_outage_is_a_tool_error_and_the_server_recovers(decomposer: Decomposer) -> None:
    from urllib.parse import urlsplit

    target = urlsplit(neo4j_uri_or_skip()).port or 7687
    proxy = Proxy(target)
    uri = f"bolt://127.0.0.1:{proxy.port}"
    # Down when the server starts: the tools say so, and work once Neo4j is reachable.
    async with in_process(uri, "ann") as client:
        assert "unavailable" in await error(client, "stats")
        await proxy.start()
        await call(client, "forget", query="umbrella")
        stored = await call(client, "remember", text="The red umbrella is in the car.")
        await proxy.stop()
        assert "unavailable" in await error(client, "recall", query="umbrella")
        assert "unavailable" in await error(client, "remember", text="lost during the outage")
        await proxy.start()
        hits = (await call(client, "recall", query="umbrella"))["hits"]
        assert [h["id"] for h in hits] == [stored["id"]]
        assert await call(client, "forget", query="umbrella") == {"removed": 1}
    await proxy.stop()


# ---------------------------------------------------------------------------- refused at start


def mcp_command(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "mcp", "--app", APP, "--user", "ann", *args],
        capture_output=True, text=True, env=os.environ | {"COLUMNS": "300"}, timeout=120, check=False,
        stdin=subprocess.DEVNULL,
    )


def test_a_project_on_a_store_without_projects_is_refused_at_start(tmp_path: Path) -> None:
    """Every tool would fail; the server does not start instead."""
    completed = mcp_command("--project", "p", "--uri", str(tmp_path / "memory.journal"))
    assert completed.returncode == 1
    # (It named add_session_to_project(), which no one called, and "--backend neo4j", which --uri overrides.)
    assert completed.stderr.strip() == (
        "error: the networkx backend has no projects, which --project needs: serve a Neo4j store "
        "(--uri bolt://..., or --backend neo4j) for project memory, or leave --project out"
    )


def test_a_store_uri_that_names_no_store_is_a_usage_error(tmp_path: Path) -> None:
    completed = mcp_command("--uri", "ftp://example.org/x")
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.startswith("error: ") and "Traceback" not in completed.stderr
    assert "(--uri, GRAPHMEM_URI)" in completed.stderr


async def test_recent_fills_its_page_from_the_servers_scope(decomposer: Decomposer) -> None:
    """Newer memories of another project are out of scope and do not shorten the page."""
    from datetime import UTC, datetime, timedelta

    from graphmem import Content, MemoryEntry

    uri = neo4j_uri_or_skip()
    service = await open_memory(uri, nlp=decomposer)
    start = datetime(2026, 1, 1, tzinfo=UTC)

    def at(text: str, minutes: int) -> MemoryEntry:
        return MemoryEntry(content=Content(role="user").with_text(text), author="Ann", timestamp=start + timedelta(minutes=minutes))

    try:
        await service.delete_user(APP, "ann")
        await service.add_session(APP, "ann", "g", [at("global old", 0), at("global new", 1)])
        await service.add_session_to_project(APP, "ann", "a", "p1", [at("p1 memory", 2)])
        await service.add_session_to_project(APP, "ann", "b", "p2", [at(f"p2 memory {i}", 10 + i) for i in range(5)])
        async with in_process(uri, "ann", "p1") as client:
            memories = (await call(client, "recent", limit=3))["memories"]
            assert [m["text"] for m in memories] == ["p1 memory", "global new", "global old"]
        async with in_process(uri, "ann") as client:
            memories = (await call(client, "recent", limit=2))["memories"]
            assert [m["text"] for m in memories] == ["global new", "global old"]
    finally:
        await service.delete_user(APP, "ann")
        await service.close()


async def test_stats_counts_the_servers_scope_only(decomposer: Decomposer) -> None:
    """A server for one project counted the whole user: how many other projects there
    are, their entries and their words. Now what its searches see: global and its own."""
    from datetime import UTC, datetime

    from graphmem import Content, MemoryEntry

    uri = neo4j_uri_or_skip()
    service = await open_memory(uri, nlp=decomposer)

    def said(text: str) -> MemoryEntry:
        return MemoryEntry(content=Content(role="user").with_text(text), author="Ann", timestamp=datetime(2026, 1, 1, tzinfo=UTC))

    try:
        await service.delete_user(APP, "ann")
        await service.add_session(APP, "ann", "g", [said("walnut bread recipe")])
        await service.add_session_to_project(APP, "ann", "a", "p1", [said("walnut harvest in Porto")])
        await service.add_session_to_project(APP, "ann", "b", "p2", [said("secret merger with Acme"), said("zebra")])
        await service.add_entry_to_project(APP, "ann", "p3", said("quarterly kumquat audit"))
        async with in_process(uri, "ann", "p1") as client:
            counts = await call(client, "stats")
        async with in_process(uri, "ann") as client:
            global_counts = await call(client, "stats")
        terms = await service.entry_terms(
            APP, "ann", [e.entry_id for e in await service.list_entries(APP, "ann", all_projects=True)
                         if e.project_id in (None, "p1")]
        )
        tokens = {t for d in terms.values() for t in d.tokens}
        entities = {e.name for d in terms.values() for e in d.entities}
        assert counts == {"entries": 2, "sessions": 2, "tokens": len(tokens), "entities": len(entities), "projects": 1}
        assert global_counts["entries"] == 1 and global_counts["projects"] == 0 and global_counts["sessions"] == 1
        whole = await service.stats(APP, "ann")
        assert (whole.entries, whole.projects) == (5, 3) and whole.tokens > counts["tokens"]
    finally:
        await service.delete_user(APP, "ann")
        await service.close()


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.1", "127.0.0.2", "::1", "[::1]"])
def test_a_loopback_server_names_only_loopback_hosts_however_written(host: str) -> None:
    """The SDK guarded three spellings of loopback against DNS rebinding; 127.1 or
    127.0.0.2 let a web page that points its domain at this machine read the memory."""
    from graphmem._mcp import _transport_security

    settings = _transport_security(host)
    assert settings is not None and settings.enable_dns_rebinding_protection
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    assert set(settings.allowed_hosts) == {f"{h}:*" for h in ("127.0.0.1", "localhost", "[::1]", shown)}
    assert set(settings.allowed_origins) == {f"http://{h}:*" for h in ("127.0.0.1", "localhost", "[::1]", shown)}


def test_an_empty_host_is_refused_and_another_address_is_the_operators_choice() -> None:
    from graphmem._mcp import _transport_security

    with pytest.raises(ValueError, match="every interface"):
        _transport_security("")
    assert _transport_security("0.0.0.0") is None  # documented: the operator's choice


def test_a_foreign_host_header_is_refused_on_any_loopback_spelling() -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "graphmem.cli", "mcp", "--http", "--host", "127.0.0.2", "--port", str(port),
         "--uri", "memory:", "--app", APP, "--user", "ann"],
        env={**os.environ, **server_env()}, cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    try:
        while True:  # the server loads spaCy before it listens; fail at once if it dies
            if process.poll() is not None:
                assert process.stderr is not None
                raise AssertionError(process.stderr.read().decode())
            try:
                socket.create_connection(("127.0.0.2", port), timeout=1).close()
                break
            except OSError:
                try:
                    process.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    pass
        import http.client

        connection = http.client.HTTPConnection("127.0.0.2", port, timeout=30)
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        connection.request("POST", "/mcp", body, {
            "Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}",
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        })
        assert connection.getresponse().status in (403, 421)
    finally:
        process.terminate()
        process.wait(timeout=30)
        assert process.stderr is not None
        process.stderr.close()


def test_a_port_in_use_is_one_line_and_no_unreachable_code(tmp_path: Path) -> None:
    """uvicorn's own line for the failed bind came first (two lines, where the README says one)."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        completed = subprocess.run(
            [sys.executable, "-m", "graphmem.cli", "mcp", "--http", "--port", str(port), "--uri", "memory:",
             "--app", APP, "--user", "ann"],
            env={**os.environ, **server_env()}, cwd=str(REPO), capture_output=True, text=True, timeout=300,
        )
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.splitlines() == [f"error: cannot listen on 127.0.0.1:{port}: the port is in use"]


def test_an_empty_uri_is_refused_not_the_default_store(tmp_path: Path) -> None:
    env = {**os.environ, **server_env(), "XDG_DATA_HOME": str(tmp_path)}
    for args in (["--uri", "", "stats"], ["mcp", "--uri", "", "--app", APP, "--user", "ann"]):
        completed = subprocess.run(
            [sys.executable, "-m", "graphmem.cli", *args], env=env, cwd=str(REPO), capture_output=True, text=True,
            timeout=300, stdin=subprocess.DEVNULL,
        )
        assert completed.returncode == 2 and "URI is empty" in completed.stderr, completed.stderr
    assert not any(tmp_path.rglob("*.journal*"))  # nothing was opened in the default place


def test_an_empty_project_or_store_variable_is_refused_not_global_memory(tmp_path: Path) -> None:
    """An unset variable in a template (``GRAPHMEM_PROJECT=$PROJECT``) is the empty string,
    which click reads as no value: the server would serve global memory, which every
    project reads. Refused; the option on the command line wins over the variable."""
    base = {**os.environ, **server_env(), "XDG_DATA_HOME": str(tmp_path)}
    store = (tmp_path / "m.journal").as_uri()
    cases = [
        ({"GRAPHMEM_PROJECT": ""}, ["mcp", "--uri", store, "--app", APP, "--user", "ann"], "GRAPHMEM_PROJECT"),
        ({"GRAPHMEM_PROJECT": " "}, ["mcp", "--uri", store, "--app", APP, "--user", "ann"], "GRAPHMEM_PROJECT"),
        # (click read an empty GRAPHMEM_APP as unset: "Missing option '--app'", the variable unnamed.)
        ({"GRAPHMEM_APP": ""}, ["mcp", "--uri", store, "--user", "ann"], "GRAPHMEM_APP"),
        ({"GRAPHMEM_USER": ""}, ["mcp", "--uri", store, "--app", APP], "GRAPHMEM_USER"),
        ({"GRAPHMEM_URI": ""}, ["stats"], "GRAPHMEM_URI"),
        ({"GRAPHMEM_STORE": ""}, ["stats"], "GRAPHMEM_STORE"),
        ({"GRAPHMEM_NEO4J_DATABASE": ""}, ["--backend", "neo4j", "stats"], "GRAPHMEM_NEO4J_DATABASE"),
    ]
    for variables, args, named in cases:
        completed = subprocess.run(
            [sys.executable, "-m", "graphmem.cli", *args], env={**base, **variables}, cwd=str(REPO),
            capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
        )
        assert completed.returncode == 2, (variables, completed.stderr)
        assert f"error: {named} is set but empty" in completed.stderr, completed.stderr
        # --app and --user have no default to fall back on: unset, they must be given.
        advice = {"GRAPHMEM_APP": "unset it and give --app", "GRAPHMEM_USER": "unset it and give --user"}
        assert advice.get(named, "unset it for the default") in completed.stderr, completed.stderr
    unset = {k: v for k, v in base.items() if k not in ("GRAPHMEM_APP", "GRAPHMEM_USER")}
    completed = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "mcp", "--uri", store, "--user", "ann"], env=unset, cwd=str(REPO),
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    assert completed.returncode == 2 and completed.stderr.strip() == (
        "error: missing option --app: give it, or set GRAPHMEM_APP"
    ), completed.stderr
    assert not any(tmp_path.rglob("*.journal*"))  # nothing was opened
    # Given on the command line, the option wins: the empty variable is not read.
    completed = subprocess.run(
        [sys.executable, "-m", "graphmem.cli", "--store", str(tmp_path / "s.journal"), "stats", "--json"],
        env={**base, "GRAPHMEM_STORE": ""}, cwd=str(REPO), capture_output=True, text=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )
    # (A reading command on a path with no store says so: the path is the one given.)
    assert completed.returncode == 1 and f"no store at {tmp_path / 's.journal'}" in completed.stderr, completed.stderr


async def test_recall_tells_the_model_it_reads_words_close_in_meaning_as_it_does() -> None:
    """The server told the model that recall matched "not by meaning", while related words
    are on by default: a model believing it avoids the general words that do work."""
    from graphmem._mcp import INSTRUCTIONS

    async with in_process("memory:", "ann") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        await call(client, "remember", text="We adopted a puppy last week!")
        hits = (await call(client, "recall", query="What pets do I have?"))["hits"]
    assert hits and hits[0]["related_to"] == {"puppy": "pet"}
    description = tools["recall"].description or ""
    assert "`related_to`" in description and "not by meaning" not in description
    assert "close in meaning" in INSTRUCTIONS and "not meanings" not in INSTRUCTIONS


async def test_the_assistants_words_are_not_stored_as_the_users() -> None:
    """remember(role="model") without an author stored the assistant's words under the
    author "user": "what's my dog called?" then read them as the person's own."""
    async with in_process("memory:", "ann") as client:
        await call(client, "remember", text="My dog is called Rex.", session_id="s")
        await call(client, "remember", text="Your dog Bello sounds lovely.", role="model", session_id="s")
        hits = (await call(client, "recall", query="What is my dog called?", limit=2))["hits"]
        assert [(h["author"], h["text"].split()[0]) for h in hits] == [("user", "My"), ("assistant", "Your")]
        assert hits[1]["other_speaker"] is True
        # An author given is kept, whatever the role.
        await call(client, "remember", text="Bello is a name I like.", role="model", author="helper")
        assert {m["author"] for m in (await call(client, "recent", limit=10))["memories"]} == {"user", "assistant", "helper"}


@pytest.mark.parametrize("invisible", ["\u200b", "\u00ad", "\ufeff", "\u2060", "\x00", "\x07", "\u200b \u200b"])
async def test_text_or_an_author_of_invisible_characters_is_refused(invisible: str) -> None:
    """Only a zero-width space, a soft hyphen or a control character was stored: a memory no
    query can recall or forget, counted by stats; such an author passed the blank check."""
    async with in_process("memory:", "ann") as client:
        assert "text is blank" in await error(client, "remember", text=invisible)
        assert "author" in await error(client, "remember", text="Rex likes the park.", author=invisible)
        assert (await call(client, "stats"))["entries"] == 0


async def test_a_message_that_names_its_field_is_not_prefixed_with_it_again() -> None:
    async with in_process("memory:", "ann") as client:
        message = await error(client, "remember", text="Rex.", timestamp="0001-01-01T00:00:00+14:00")
        assert message.startswith("timestamp 0001-01-01T00:00:00+14:00 is outside years 1 to 9999"), message
        assert (await error(client, "remember", text="Rex.", timestamp="yesterday")).startswith("timestamp: ")
