"""Attacks on ``graphmem cypher``, the debugging door into the graph: each must be refused.

The catalogue: comment tricks that hide a clause from the check (every line terminator
Neo4j's lexer or another Cypher lexer might honour), file reads through LOAD CSV, admin
procedures, commands, plugin functions, odd characters, and queries that never end. Each
runs on both backends through the public entry point (:func:`run_read_only`, which the
command calls) and must fail with a one-line reason, changing nothing.

Then the second line of defence, the embedded server itself (scripts/neo4j), checked by
talking to it directly as a client that bypasses graphmem would: LOAD CSV cannot read
files, and no procedure outside the allowlist exists.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from conftest import PrivateNeo4j, neo4j_uri_or_skip
from graphmem import Content, Decomposer, MemoryEntry, MemoryService, Part
from graphmem.cli._app import app
from graphmem.cli._context import CliError
from graphmem.cli._cypher_run import run_read_only
from graphmem.cli._cypher_text import READ_PROCEDURES, check_read_only, tokenize

PASSWD = "LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row"
#: Characters Neo4j 5.26 does not end a // comment at, though some lexers do (Unicode line
#: and paragraph separators, NEL, vertical tab, form feed, the C0 separators).
ODD_LINE_BREAKS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u2028", "\u2029"]
#: Built-in procedures that change server state, or reveal it, and run in a READ transaction.
ADMIN_PROCEDURES = [
    "CALL dbms.killConnections(['bolt-1'])",
    "CALL dbms.killConnection('bolt-1')",
    "CALL db.clearQueryCaches()",
    "CALL db.prepareForReplanning()",
    "CALL db.resampleOutdatedIndexes()",
    "CALL db.resampleIndex('graphmem_v1_entry_owner')",
    "CALL db.stats.clear('QUERIES')",
    "CALL db.stats.collect('QUERIES')",
    "CALL db.stats.stop('QUERIES')",
    "CALL tx.setMetaData({a: 1})",
    "CALL dbms.listConfig()",
    "CALL dbms.listConnections()",
    "CALL dbms.queryJmx('*:*')",
    "CALL db.createLabel('Sneaky')",
    "CALL `dbms`.`killConnections`(['bolt-1'])",
    "call DBMS.KILLCONNECTIONS(['bolt-1'])",
    "MATCH (n) CALL db.clearQueryCaches() YIELD value RETURN value",
    "OPTIONAL CALL dbms.killConnections(['bolt-1'])",
    "CALL apoc.load.json('file:///etc/passwd')",
]
ATTACKS = {
    # A // comment ends at \r as well as \n: the clause after it runs.
    "comment ended by CR": f"// x\r{PASSWD}",
    "comment ended by CRLF": f"// x\r\n{PASSWD}",
    "comment ended by CR after a read": f"MATCH (n) RETURN n // x\rUNION {PASSWD}",
    "block comment": f"/* x */{PASSWD}",
    **{f"comment holding U+{ord(c):04X}": f"// x{c}{PASSWD}" for c in ODD_LINE_BREAKS},
    "file URL escaping the import directory": "LOAD CSV FROM 'file:///../../../etc/passwd' AS row RETURN row",
    "LOAD CSV in a subquery": "CALL { LOAD CSV FROM 'file:///etc/passwd' AS row RETURN row } RETURN row",
    "LOAD CSV in a map value": "RETURN {k: COLLECT { LOAD CSV FROM 'file:///etc/passwd' AS r RETURN r }} AS m",
    "LOAD CSV over http": "LOAD CSV FROM 'http://127.0.0.1:7474/' AS row RETURN row",
    "in transactions": "CALL { MATCH (n) RETURN n } IN TRANSACTIONS OF 1 ROW RETURN 1",
    "use": "USE system MATCH (n) RETURN n",
    "show users": "SHOW USERS",
    "show settings": "SHOW SETTINGS YIELD name, value RETURN name, value",
    "show transactions": "SHOW TRANSACTIONS",
    "terminate": "TERMINATE TRANSACTIONS 'neo4j-transaction-1'",
    "alter user": "ALTER USER neo4j SET PASSWORD 'owned' CHANGE NOT REQUIRED",
    "create user": "CREATE USER eve SET PASSWORD 'x'",
    "stop database": "STOP DATABASE neo4j",
    "create index": "CREATE INDEX sneaky FOR (n:Entry) ON (n.text)",
    "write after WITH *": "MATCH (n) WITH * CREATE (m:Entry {id: 'x'})",
    "write after UNION": "RETURN 1 AS x UNION MERGE (m:Entry {id: 'x'}) RETURN 2 AS x",
    "plugin function": "RETURN apoc.cypher.runFirstColumnSingle('MATCH (n) DETACH DELETE n', {}) AS x",
    "quoted plugin function": "RETURN `apoc.cypher.runFirstColumnSingle`('RETURN 1', {}) AS x",
    "explain": "EXPLAIN MATCH (n) RETURN n",
    "cypher options": "CYPHER runtime=slotted MATCH (n) RETURN n",
    "two statements": "MATCH (n) RETURN n; MATCH (n) DETACH DELETE n",
    "unknown clause": "MATCH (n) RETURN n FINISH",
    "no-break space before a clause": f"MATCH (n) RETURN n\u00a0UNION {PASSWD}",
    "NEL inside a word": "MATCH\x85(n) RETURN n",
    "unterminated string": "MATCH (n) WHERE n.text = 'x RETURN n",
    "a list nested 400 deep": "RETURN " + "[" * 400 + "1" + "]" * 400 + " AS x",
    **{f"procedure: {q}": q for q in ADMIN_PROCEDURES},
}


async def _snapshot(service: MemoryService) -> Any:
    return await service.stats()


@pytest.mark.parametrize("query", list(ATTACKS.values()), ids=list(ATTACKS))
async def test_attacks_are_refused_with_one_line(service: MemoryService, query: str) -> None:
    await service.add_session("app", "u", "s", [_entry("Maria lives in Lisbon")])
    before = await _snapshot(service)
    with pytest.raises(CliError) as refused:
        await run_read_only(service, query, {})
    message = str(refused.value)
    assert "\n" not in message and ("refused this query" in message or "cannot read the query" in message), message
    assert await _snapshot(service) == before


def test_every_attack_is_refused_by_the_check_itself() -> None:
    # Not by the backend failing later: check_read_only names a reason for each one.
    for name, query in ATTACKS.items():
        if name != "unterminated string":
            assert check_read_only(query) is not None, name


@pytest.mark.neo4j
def test_line_comments_end_where_neo4j_ends_them() -> None:
    """The tokenizer's rule, checked against the server, for every line terminator candidate.

    Whatever the check accepts, the tokenizer must end the comment exactly where the server
    does; Neo4j 5.26 ends it at \\n and \\r only, and the check refuses the other candidates
    (another Cypher version's lexer might end the comment there).
    """
    from neo4j import GraphDatabase, RoutingControl
    from neo4j.exceptions import CypherSyntaxError

    from conftest import neo4j_auth

    accepted = []
    with GraphDatabase.driver(neo4j_uri_or_skip(), auth=neo4j_auth()) as driver:
        for char in ["\n", "\r", "\r\n", *ODD_LINE_BREAKS]:
            query = f"// x{char}RETURN 1 AS one"
            try:
                records = driver.execute_query(query, routing_=RoutingControl.READ).records
                server_ends_it = [r["one"] for r in records] == [1]
            except CypherSyntaxError:  # the rest of the text was comment: an empty query
                server_ends_it = False
            if check_read_only(query) is None:
                accepted.append(char)
                assert (tokenize(query)[0].text == "// x") == server_ends_it, repr(char)
    assert accepted == ["\n", "\r", "\r\n"]


#: Pieces of string-literal text that lexers disagree about: escapes, comment markers, quotes.
_PIECES = ["a", " ", "/", "*", "//", "/*", "*/", "`", "\\\\", "\\n", "\\q", "\\u00e9", "\n", "\r", "\u2028", "é"]


@pytest.mark.neo4j
@settings(max_examples=150, deadline=None)
@given(quote=st.sampled_from(["'", '"']), pieces=st.lists(st.sampled_from([*_PIECES, "QUOTE", "OTHER"]), max_size=12))
def test_string_literals_end_and_decode_where_neo4j_says(quote: str, pieces: list[str]) -> None:
    """The tokenizer against the server: the same end of each string literal, the same value.

    If they disagreed about where a string ends, text the check reads as data would run as
    Cypher on the server (or the other way round).
    """
    from neo4j import GraphDatabase, RoutingControl

    from conftest import neo4j_auth

    other = '"' if quote == "'" else "'"
    body = "".join("\\" + quote if p == "QUOTE" else other if p == "OTHER" else p for p in pieces)
    query = f"RETURN {quote}{body}{quote} AS s // {quote}"
    tokens = [t for t in tokenize(query) if t.kind not in ("space", "comment")]
    assert [t.kind for t in tokens] == ["word", "string", "word", "word"]
    assert check_read_only(query) is None
    with GraphDatabase.driver(neo4j_uri_or_skip(), auth=neo4j_auth()) as driver:
        records = driver.execute_query(query, routing_=RoutingControl.READ).records
    assert [r["s"] for r in records] == [tokens[1].value]


def _entry(text: str) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user", parts=[Part(text=text)]), author="user")


# ---------------------------------------------------------------------------- time bounds

#: A cartesian product no engine finishes: 6 independent matches over every Token.
ENDLESS = "MATCH (a:Token) MATCH (b:Token) MATCH (c:Token) MATCH (d:Token) MATCH (e:Token) MATCH (f:Token) RETURN a.value"


@pytest.mark.timeout(120)
async def test_a_query_that_never_ends_is_stopped(service: MemoryService) -> None:
    words = " ".join(f"word{i}" for i in range(40))
    await service.add_session("app", "u", "s", [_entry(f"{words} in Lisbon")])
    with pytest.raises(CliError, match=r"ran longer than 0\.5 s and was stopped"):
        await run_read_only(service, ENDLESS, {}, timeout=0.5)
    # The service still answers afterwards.
    rows = (await run_read_only(service, "MATCH (t:Token) WHERE t.value = 'lisbon' RETURN t.value AS v", {})).rows
    assert rows == [["lisbon"]]


async def test_deeply_nested_parameters_are_refused_on_networkx(decomposer: Decomposer) -> None:
    from graphmem import GraphMemoryService

    service = GraphMemoryService(nlp=decomposer)
    deep: Any = 1
    for _ in range(400):
        deep = [deep]
    with pytest.raises(CliError, match="nested more than 64 deep"):
        await run_read_only(service, "MATCH (t:Token) WHERE t.value IN $p RETURN t.value", {"p": deep})


@pytest.mark.timeout(120)
def test_the_command_takes_a_timeout(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "memory.journal")
    assert runner.invoke(app, ["--store", store, "load", "--demo", "--skip-projects"]).exit_code == 0
    result = runner.invoke(app, ["--store", store, "cypher", ENDLESS, "--timeout", "0.5"])
    assert result.exit_code == 1 and "ran longer than 0.5 s" in " ".join(result.output.split())
    ok = runner.invoke(app, ["--store", store, "cypher", "CALL db.labels()", "--json"])
    assert ok.exit_code == 1 and "networkx backend cannot read" in " ".join(ok.output.split())
    read = runner.invoke(app, ["--store", store, "cypher", "MATCH (x:Entry) RETURN count(x) AS n", "--json"])
    assert read.exit_code == 0 and json.loads(read.stdout)[0]["n"] > 0


@pytest.mark.parametrize("timeout", ["inf", "1e9", "86401", "0", "-1"])
def test_a_timeout_out_of_range_is_a_usage_error(tmp_path: Path, timeout: str) -> None:
    """inf and 1e9 overflowed a thread join into a traceback; a timeout is above 0 and at most a day."""
    result = CliRunner().invoke(
        app, ["--store", str(tmp_path / "m.journal"), "cypher", "MATCH (x:Entry) RETURN x", "--timeout", timeout]
    )
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--timeout" in result.output


async def test_the_library_refuses_a_timeout_out_of_range(decomposer: Decomposer) -> None:
    from graphmem import GraphMemoryService

    service = GraphMemoryService(nlp=decomposer)
    for timeout in (float("inf"), 1e9, float("nan"), 0.0):
        with pytest.raises(CliError, match="at most 86400"):
            await run_read_only(service, "MATCH (t:Token) RETURN t.value", {}, timeout=timeout)


# ---------------------------------------------------------------------------- the server itself


@pytest.fixture(scope="module")
def embedded() -> Iterator[PrivateNeo4j]:
    """A server started by scripts/neo4j, as configured there (not whatever the URI points at)."""
    import tempfile

    neo4j_uri_or_skip()  # the same gate as every Neo4j test
    with tempfile.TemporaryDirectory(prefix="graphmem-adversarial-") as home:
        server = PrivateNeo4j(Path(home) / "neo4j")
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
async def direct(embedded: PrivateNeo4j) -> AsyncIterator[Any]:
    """A driver on the embedded server that bypasses graphmem's check altogether."""
    from neo4j import AsyncGraphDatabase

    driver = AsyncGraphDatabase.driver(embedded.uri)
    try:
        yield driver
    finally:
        await driver.close()


@pytest.mark.neo4j
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_server_reads_no_file_even_if_the_check_is_bypassed(direct: Any) -> None:
    from neo4j import RoutingControl
    from neo4j.exceptions import ClientError

    for url in ("file:///etc/passwd", "file:///../../../etc/passwd", "file:///import-empty/x.csv"):
        with pytest.raises(ClientError, match="allow_csv_import_from_file_urls"):
            await direct.execute_query(f"LOAD CSV FROM '{url}' AS row RETURN row", routing_=RoutingControl.READ)


@pytest.mark.neo4j
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_the_server_has_only_the_allowed_procedures(direct: Any) -> None:
    from neo4j import RoutingControl
    from neo4j.exceptions import ClientError

    records, _, _ = await direct.execute_query("SHOW PROCEDURES YIELD name RETURN name")
    own_needs = {"db.awaitIndex", "db.awaitIndexes", "db.ping", "dbms.routing.getRoutingTable"}
    own_needs.add("dbms.cluster.routing.getRoutingTable")
    assert {r["name"] for r in records} == READ_PROCEDURES | own_needs
    for query in ADMIN_PROCEDURES:
        if "`" in query or "DBMS" in query or "apoc" in query or not query.startswith("CALL"):
            continue  # variants of the same names, for the check
        with pytest.raises(ClientError, match="ProcedureNotFound|There is no procedure"):
            await direct.execute_query(query, routing_=RoutingControl.READ)


@pytest.mark.neo4j
@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_query_that_needs_too_much_memory_fails_with_one_line(
    embedded: PrivateNeo4j, decomposer: Decomposer
) -> None:
    # On the private server: the memory pool is shared by all of a server's transactions.
    from graphmem.backends.neo4j import Neo4jMemoryService

    service = Neo4jMemoryService(embedded.uri, nlp=decomposer)
    try:
        with pytest.raises(CliError, match="needs more memory than Neo4j allows a transaction") as refused:
            await run_read_only(service, "UNWIND range(1, 300000000) AS x RETURN size(collect(x)) AS n", {})
        assert refused.value.exit_code == 1
        assert (await run_read_only(service, "RETURN 1 AS one", {})).rows == [[1]]
    finally:
        await service.close()
