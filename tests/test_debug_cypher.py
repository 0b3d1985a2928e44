"""The Cypher debugging library runs unchanged on both backends, with the same results.

Every file of ``cypher/debug/`` (and every feature of the networkx subset that
``graphmem cypher --help`` promises) runs on the networkx backend through grand-cypher and
on Neo4j, over the same data: the demo fixtures' global sessions. Entry ids are random, so
each id in a result is replaced by the entry's (session, position) before comparing.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from conftest import make_neo4j_service
from graphmem import Decomposer, GraphMemoryService, MemoryService
from graphmem._fixtures import demo_fixtures_path, load_fixtures
from graphmem.cli._app import app
from graphmem.cli._context import CliError
from graphmem.cli._cypher_run import CypherResult, run_read_only
from graphmem.cli._cypher_text import parameter_names

DEBUG = Path(__file__).resolve().parent.parent / "cypher" / "debug"
DEBUG_FILES = sorted(DEBUG.glob("*.cypher"))
PARAMS = {"app": "companion", "user": "alice", "name": "maria", "entry": ""}

#: Queries exercising each feature of the subset the help text promises for networkx.
SUBSET = {
    "label alternatives and property maps": (
        "MATCH (n:Token|Entity {app_name: $app, user_id: $user}) RETURN n.app_name AS app, COUNT(n) AS nodes"
    ),
    "where operators": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        WHERE x.position >= 2 AND x.position < 4 AND (x.author = 'Alice' OR x.author <> "Bob")
          AND NOT x.text CONTAINS 'zzz' AND x.session_id STARTS WITH 'companion' AND x.session_id ENDS WITH '2'
          AND x.role IN ['user', 'model'] AND x.project_id IS NULL AND x.session_id IS NOT NULL
        RETURN x.session_id AS session, x.position AS position ORDER BY session, position""",
    "exists subquery": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        WHERE NOT EXISTS { MATCH (x)-[:MENTIONS]->(:Entity) }
        RETURN x.session_id AS session, COUNT(x) AS without_entities ORDER BY session""",
    "distinct": "MATCH (x:Entry {app_name: $app, user_id: $user}) RETURN DISTINCT x.session_id ORDER BY x.session_id DESC",
    "aggregations": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        RETURN x.author AS author, count(x) AS n, sum(x.position) AS s, min(x.timestamp) AS first,
               max(x.position) AS top, collect(x.position) AS positions
        ORDER BY author""",
    "functions": """
        MATCH (x:Entry {app_name: $app, user_id: $user})-[r:NEXT]->(y:Entry)
        WHERE x.session_id = 'companion-alice-02'
        RETURN toLower(x.author) AS lower, toUpper(y.role) AS upper, trim(x.author) AS trimmed,
               size(x.text) AS length, coalesce(x.project_id, 'global') AS scope, type(r) AS rel
        ORDER BY length""",
    "skip and limit after order by": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        RETURN x.session_id AS session, x.position AS position ORDER BY session DESC, position SKIP 2 LIMIT 3""",
    "several match clauses": """
        MATCH (x:Entry {app_name: $app, user_id: $user})-[:MENTIONS]->(n:Entity {name: $name})
        MATCH (x)-[:HAS_TOKEN]->(t:Token {value: 'lisbon'})
        RETURN x.session_id AS session, x.position AS position ORDER BY session, position""",
    "nodes and relationships": """
        /* whole nodes come back as their labels and properties */
        MATCH (n:Entity {app_name: $app, user_id: $user, name: $name})<-[r:MENTIONS]-(x:Entry {position: 0})
        RETURN n, r, x.session_id AS session ORDER BY session""",
    "unaliased columns": "MATCH (x:Entry {app_name: $app, user_id: $user}) RETURN x.author, count(x) ORDER BY x.author",
    # grand-cypher cut each separate pattern to SKIP + LIMIT matches before WHERE: no rows.
    "separate patterns joined by WHERE, with a limit": """
        MATCH (a:Token {app_name: $app, user_id: $user}) MATCH (b:Token {app_name: $app, user_id: 'bob'})
        WHERE a.value = b.value RETURN a.value AS shared ORDER BY shared SKIP 1 LIMIT 5""",
    # grand-cypher bound x of the first pattern to every node its property index gave (tokens and
    # entities too: rows of nulls), and left a pattern without matches out of the join.
    "separate patterns sharing no node": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        MATCH (t:Token {app_name: $app, user_id: $user, value: 'lisbon'})
        RETURN x.session_id AS session, x.position AS position, t.value AS token ORDER BY session, position""",
    "separate patterns, counted": """
        MATCH (x:Entry {app_name: $app, user_id: $user}) MATCH (n:Entity {app_name: $app, user_id: 'bob'})
        RETURN n.name AS entity, count(x) AS entries ORDER BY entity""",
    "separate patterns, one matching nothing": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        MATCH (t:Token {app_name: $app, user_id: $user, value: 'no-such-word'})
        RETURN x.session_id AS session""",
    # An alias named limit came back as the column "x.session_id AS" on networkx.
    "aliases named like keywords": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        RETURN x.session_id AS limit, x.position AS skip ORDER BY limit DESC, skip SKIP 1 LIMIT 3""",
    # grand-cypher counted nulls, averaged them as 0, gave Infinity for min and -Infinity for max.
    "aggregations over nulls": """
        MATCH (x:Entry {app_name: $app, user_id: $user})
        RETURN x.author AS author, count(x.project_id) AS in_projects, min(x.project_id) AS first,
               max(x.project_id) AS last, avg(x.project_id) AS mean, count(x) AS entries
        ORDER BY author""",
    # ... and failed on min and max over strings among nulls.
    "min and max over strings and nulls": """
        MATCH (n:Token|Entity {app_name: $app, user_id: $user})
        RETURN n.app_name AS app, min(n.value) AS first_token, max(n.name) AS last_entity, count(n.label) AS entities""",
}
#: Queries whose right answer is no row (orphans should be none).
NO_ROWS = {"orphan_terms.cypher", "separate patterns, one matching nothing"}


async def _load_demo(service: MemoryService) -> MemoryService:
    await load_fixtures(service, [demo_fixtures_path()], skip_projects=True)
    return service


async def _id_keys(service: MemoryService) -> dict[str, str]:
    keys = {}
    for app_name, user in (("companion", "alice"), ("companion", "bob"), ("workdesk", "alice"), ("workdesk", "carol")):
        for e in await service.list_entries(app_name, user, all_projects=True):
            keys[e.entry_id] = f"<{app_name}/{user}/{e.session_id}#{e.position}>"
    return keys


def _id_of(keys: dict[str, str], suffix: str) -> str:
    return next(entry_id for entry_id, key in keys.items() if key.endswith(f"/{suffix}>"))


def _normalise(value: Any, keys: dict[str, str]) -> Any:
    if isinstance(value, str):
        return keys.get(value, value)
    if isinstance(value, list):  # COLLECT has no defined order
        return sorted((_normalise(v, keys) for v in value), key=repr)
    if isinstance(value, dict):
        return {k: _normalise(v, keys) for k, v in value.items()}
    return value


def _comparable(result: CypherResult, keys: dict[str, str]) -> tuple[list[str], list[list[Any]], list[list[Any]]]:
    """Columns; rows with ids replaced, sorted; and the row order with id cells left out.

    Rows that differ only in an entry id may be ordered by that id, which differs between
    two stores of the same data: their order is compared without the ids.
    """
    rows = [[_normalise(v, keys) for v in row] for row in result.rows]
    ordered = [
        [v for v, raw in zip(row, raw_row, strict=True) if not (isinstance(raw, str) and raw in keys)]
        for row, raw_row in zip(rows, result.rows, strict=True)
    ]
    return result.columns, sorted(rows, key=repr), ordered


@pytest.fixture
async def networkx_demo(decomposer: Decomposer) -> MemoryService:
    return await _load_demo(GraphMemoryService(decomposer))


@pytest.fixture
async def neo4j_demo(decomposer: Decomposer) -> AsyncIterator[MemoryService]:
    service = await make_neo4j_service(decomposer)
    try:
        yield await _load_demo(service)
    finally:
        await service.close()


def test_every_file_says_what_it_shows_and_its_parameters() -> None:
    assert len(DEBUG_FILES) >= 6
    for path in DEBUG_FILES:
        text = path.read_text(encoding="utf-8")
        first, rest = text.split("\n", 1)
        assert first.startswith("// ") and len(first) > 20, f"{path.name}: first line must be a // comment"
        assert "//" not in rest, f"{path.name}: only the first line is a comment"
        declared = re.search(r"Parameters: ([\w, ]+?)(?: \(|\.)", first)
        names = {n.strip() for n in declared.group(1).split(",")} if declared else set()
        assert declared or "No parameters." in first, f"{path.name}: say 'Parameters: a, b.' or 'No parameters.'"
        assert names == parameter_names(text), f"{path.name}: the comment names {names}"


async def test_every_file_runs_on_networkx(networkx_demo: MemoryService) -> None:
    for path in DEBUG_FILES:
        result = await run_read_only(networkx_demo, path.read_text(encoding="utf-8"), PARAMS)
        assert result.columns, path.name
    assert (await run_read_only(networkx_demo, (DEBUG / "orphan_terms.cypher").read_text(), {})).rows == []


@pytest.mark.neo4j
async def test_every_file_gives_the_same_results_on_both_backends(
    networkx_demo: MemoryService, neo4j_demo: MemoryService
) -> None:
    queries = {path.name: path.read_text(encoding="utf-8") for path in DEBUG_FILES} | SUBSET
    nx_keys, neo_keys = await _id_keys(networkx_demo), await _id_keys(neo4j_demo)
    # The same entry on each backend, by the first characters of its id, as a person would give it.
    nx_params = PARAMS | {"entry": _id_of(nx_keys, "companion-alice-02#2")[:8]}
    neo_params = PARAMS | {"entry": _id_of(neo_keys, "companion-alice-02#2")[:8]}
    different = []
    for name, query in queries.items():
        on_networkx = _comparable(await run_read_only(networkx_demo, query, nx_params), nx_keys)
        on_neo4j = _comparable(await run_read_only(neo4j_demo, query, neo_params), neo_keys)
        # Orphans should be none: test_orphans_are_found_on_both_backends shows the file finds them.
        assert on_networkx[1] or name in NO_ROWS, f"{name}: no rows, so the comparison proves nothing"
        if on_networkx != on_neo4j:
            different.append(f"{name}:\n  networkx {str(on_networkx)[:1500]}\n  neo4j    {str(on_neo4j)[:1500]}")
    assert not different, "\n".join(different)


async def test_separate_patterns_are_joined_as_cypher_joins_them(networkx_demo: MemoryService) -> None:
    """Two MATCH clauses that share no variable: every match of one with every match of the
    other, as on Neo4j. grand-cypher also bound x to the tokens and entities its property
    index gave for {app_name, user_id} (rows of nulls; with ORDER BY x.id a TypeError), and
    gave all of alice's entries for the last query, where no token matches."""
    ids = sorted(e.entry_id for e in await networkx_demo.list_entries("companion", "alice"))
    params = {"app": "companion", "user": "alice"}
    both = (
        "MATCH (x:Entry {app_name: $app, user_id: $user}) "
        "MATCH (t:Token {app_name: $app, user_id: $user, value: 'lisbon'}) "
    )
    result = await run_read_only(networkx_demo, both + "RETURN x.id, t.value ORDER BY x.id", params)
    assert result.rows == [[entry_id, "lisbon"] for entry_id in ids]
    counted = await run_read_only(networkx_demo, both + "RETURN count(t) AS n, count(x) AS m", params)
    assert counted.rows == [[len(ids), len(ids)]]
    nothing = await run_read_only(
        networkx_demo,
        "MATCH (x:Entry {app_name: $app, user_id: $user}) MATCH (t:Token {value: 'no-such-word'}) RETURN x.id",
        params,
    )
    assert nothing.rows == []


async def test_ordering_by_a_property_null_on_some_rows_says_what_to_do(decomposer: Decomposer) -> None:
    """grand-cypher orders a null as infinity, which no string compares with: the command
    said only "TypeError: '<' not supported between instances of 'float' and 'str'"."""
    from graphmem import Content, EntryRecord, MemoryEntry

    def entry(text: str) -> MemoryEntry:
        return MemoryEntry(content=Content(role="user").with_text(text), author="Dave", timestamp="2024-05-03T00:00:00Z")

    service = GraphMemoryService(decomposer)
    await service.add_session("app", "dave", "s1", [entry("Rex saw the vet."), entry("Rex likes the park.")])
    await service.restore_session("app", "dave", None, [EntryRecord(entry("No session here."), entry_id="b1")])
    for query, key in (
        ("MATCH (x:Entry {app_name: 'app'}) RETURN x.id, x.session_id ORDER BY x.session_id", "x.session_id"),
        ("MATCH (x:Entry) RETURN x.session_id AS s, count(x) AS n ORDER BY n, s DESC LIMIT 1", "n, s"),
    ):
        with pytest.raises(CliError) as raised:
            await run_read_only(service, query, {})
        message = str(raised.value)
        assert message.startswith(f"ORDER BY {key} fails on the networkx backend: some rows have no value (null)")
        assert 'coalesce(x.session_id, "") AS k and ORDER BY k' in message and "\n" not in message, message
    fixed = 'MATCH (x:Entry) RETURN x.id AS id, coalesce(x.session_id, "") AS k ORDER BY k, id'
    assert [row[1] for row in (await run_read_only(service, fixed, {})).rows] == ["", "s1", "s1"]


@pytest.mark.neo4j
async def test_orphans_are_found_on_both_backends(decomposer: Decomposer) -> None:
    # The files must find what they look for, not just agree on finding nothing.
    query = (DEBUG / "orphan_terms.cypher").read_text(encoding="utf-8")
    networkx = GraphMemoryService(decomposer)
    await networkx.add_session("a", "u", "s", [])
    networkx.graph.add_node(("Token", "a", "u", "lost"), __labels__={"Token"}, app_name="a", user_id="u", value="lost")
    neo4j = await make_neo4j_service(decomposer)
    try:
        await neo4j.driver.execute_query("CREATE (:Token {app_name: 'a', user_id: 'u', value: 'lost'})")  # type: ignore[attr-defined]
        expected = [["a", "u", "lost", ""]]
        assert (await run_read_only(networkx, query, {})).rows == expected
        assert (await run_read_only(neo4j, query, {})).rows == expected
    finally:
        await neo4j.close()


def test_debug_files_run_through_the_command(tmp_path: Path) -> None:
    runner = CliRunner()
    store = str(tmp_path / "memory.journal")
    loaded = runner.invoke(app, ["--store", store, "load", "--demo", "--skip-projects"])
    assert loaded.exit_code == 0, loaded.output
    params = [arg for k, v in PARAMS.items() for arg in ("--param", f"{k}={v}")]
    for path in DEBUG_FILES:
        result = runner.invoke(app, ["--store", store, "cypher", "--file", str(path), *params, "--json"])
        assert result.exit_code == 0, f"{path.name}: {result.output}"


def test_json_output_holds_no_infinity(tmp_path: Path) -> None:
    """min over no value was Infinity on networkx, which is no JSON; Neo4j's is null."""
    runner = CliRunner()
    store = str(tmp_path / "memory.journal")
    assert runner.invoke(app, ["--store", store, "load", "--demo", "--skip-projects"]).exit_code == 0
    query = "MATCH (x:Entry) RETURN min(x.project_id) AS first, max(x.project_id) AS last, count(x.project_id) AS n"
    result = runner.invoke(app, ["--store", store, "cypher", query, "--json"])
    assert result.exit_code == 0, result.output

    def no_constant(word: str) -> None:
        raise AssertionError(f"{word} in --json output")

    assert json.loads(result.stdout, parse_constant=no_constant) == [{"first": None, "last": None, "n": 0}]
    assert CypherResult(["x", "y"], [[float("nan"), [float("-inf")]]]).json_records() == [{"x": "NaN", "y": ["-Infinity"]}]


async def test_the_property_kinds_the_networkx_checks_use_are_every_property_stored(decomposer: Decomposer) -> None:
    """graphmem cypher refuses a comparison on networkx by each property's kind
    (PROPERTY_KINDS): a property the model stores that the table lacks, or holds as
    another kind, would pass unchecked."""
    from datetime import UTC, datetime

    from graphmem import Content, MemoryEntry, Part
    from graphmem.backends._graph_model import PROPERTY_KINDS

    service = GraphMemoryService(decomposer)
    when = datetime(2024, 5, 3, tzinfo=UTC)
    await service.add_session(
        "app", "maria", "s1",
        [MemoryEntry(content=Content(parts=[Part(text=t)]), author=a, timestamp=when.isoformat())
         for t, a in (("Maria met Ben in Lisbon yesterday.", "maria"), ("Nice, Maria!", "ben"))],
    )
    kinds = {bool: "boolean", int: "number", float: "number", str: "string", list: "list", tuple: "list"}
    seen: dict[str, set[str]] = {}
    for _, properties in service.graph.nodes(data=True):
        for name, value in properties.items():
            if name != "__labels__" and value is not None:
                seen.setdefault(name, set()).add(kinds[type(value)])
    assert {"time_refs", "speaker", "position", "value", "name"} <= set(seen)  # the model's kinds all met
    assert {name: {PROPERTY_KINDS.get(name)} for name in seen} == seen


#: Texts with spaces Python's ``str.strip`` removes around them: Neo4j's trim() keeps the
#: no-break ones and NEL (Java's ``Character.isWhitespace``) and removes the rest.
_PADDED = {
    "s1": "\u00a0no-break\u00a0",
    "s2": "\u2007figure space\u202f",
    "s3": "\u0085next line\u0085",
    "s4": "\u2003\t em space \u3000\n",
}
_TRIMMED_AS_NEO4J_TRIMS = {
    "s1": "\u00a0no-break\u00a0",
    "s2": "\u2007figure space\u202f",
    "s3": "\u0085next line\u0085",
    "s4": "em space",
}


async def _padded_store(service: MemoryService) -> MemoryService:
    from graphmem import Content, MemoryEntry

    for session_id, text in _PADDED.items():
        entry = MemoryEntry(
            content=Content(role="user").with_text(text), author="Dave", timestamp="2024-05-03T00:00:00Z"
        )
        await service.add_session("app", "dave", session_id, [entry])
    return service


_TRIM_QUERY = "MATCH (x:Entry {app_name: 'app', user_id: 'dave'}) RETURN x.session_id AS s, trim(x.text) AS t ORDER BY s"


async def test_trim_removes_what_neo4j_removes_on_networkx(decomposer: Decomposer) -> None:
    """grand-cypher's trim() was Python's ``str.strip``, which also removes no-break spaces:
    the same query returned another string on networkx than on Neo4j."""
    service = await _padded_store(GraphMemoryService(decomposer))
    result = await run_read_only(service, _TRIM_QUERY, {})
    assert result.rows == [[s, t] for s, t in _TRIMMED_AS_NEO4J_TRIMS.items()]
    # Put back after the query: the rest of the process keeps grand-cypher's own function.
    import grandcypher

    assert grandcypher._strip("\u00a0a\u00a0") == "a"


@pytest.mark.neo4j
async def test_trim_gives_the_same_strings_on_both_backends(decomposer: Decomposer) -> None:
    networkx = await _padded_store(GraphMemoryService(decomposer))
    neo4j = await _padded_store(await make_neo4j_service(decomposer))
    try:
        on_neo4j = (await run_read_only(neo4j, _TRIM_QUERY, {})).rows
        assert on_neo4j == [[s, t] for s, t in _TRIMMED_AS_NEO4J_TRIMS.items()]
        assert (await run_read_only(networkx, _TRIM_QUERY, {})).rows == on_neo4j
    finally:
        await neo4j.close()


async def _positions_store(service: MemoryService) -> MemoryService:
    from graphmem import Content, MemoryEntry

    entries = [
        MemoryEntry(content=Content(role="user").with_text(f"Turn {i}."), author="Dave", timestamp="2024-05-03T00:00:00Z")
        for i in range(4)
    ]
    await service.add_session("app", "dave", "s1", entries)
    return service


_AVG_QUERY = "MATCH (x:Entry {app_name: 'app', user_id: 'dave'}) WHERE x.position IN [0, 1, 3] RETURN avg(x.position) AS mean"
_ROWS_QUERY = "MATCH (x:Entry {app_name: 'app', user_id: 'dave'}) WHERE x.position IN [0, 1, 3] RETURN x.position AS p"


def _running_mean(values: list[int]) -> float:
    mean = 0.0
    for count, value in enumerate(values, 1):
        mean += (value - mean) / count
    return mean


def test_avg_is_a_running_mean_as_on_neo4j() -> None:
    """Neo4j's avg() is a running mean; the networkx one divided the sum, which rounds
    another way for these values (4/3 to its last bit)."""
    from graphmem.cli._cypher_run import cypher_avg

    assert _running_mean([0, 1, 3]) != sum([0, 1, 3]) / 3  # the two ways differ here: the test can tell them apart
    assert cypher_avg([0, 1, 3]) == _running_mean([0, 1, 3])
    assert cypher_avg([None, 0, 1, None, 3]) == _running_mean([0, 1, 3]) and cypher_avg([None]) is None


async def _avg_of_the_rows_as_they_come(service: MemoryService) -> tuple[float, float]:
    """avg() of three positions, and the running mean of them in the order the backend gives
    its rows (no ORDER BY: on networkx the order changes from one process to the next, and
    the running mean's last bit with it; the flaky test compared a fixed order)."""
    avg = (await run_read_only(service, _AVG_QUERY, {})).rows
    rows = (await run_read_only(service, _ROWS_QUERY, {})).rows
    assert sorted(row[0] for row in rows) == [0, 1, 3]
    return avg[0][0], _running_mean([row[0] for row in rows])


async def test_avg_on_networkx_is_the_running_mean_of_its_rows(decomposer: Decomposer) -> None:
    mean, expected = await _avg_of_the_rows_as_they_come(await _positions_store(GraphMemoryService(decomposer)))
    assert mean == expected


@pytest.mark.neo4j
async def test_avg_gives_the_same_number_on_both_backends(decomposer: Decomposer) -> None:
    networkx = await _positions_store(GraphMemoryService(decomposer))
    neo4j = await _positions_store(await make_neo4j_service(decomposer))
    try:
        on_neo4j, expected_on_neo4j = await _avg_of_the_rows_as_they_come(neo4j)
        on_networkx, expected_on_networkx = await _avg_of_the_rows_as_they_come(networkx)
        assert (on_neo4j, on_networkx) == (expected_on_neo4j, expected_on_networkx)
        assert abs(on_neo4j - on_networkx) <= 2 * 2**-52 * 4 / 3  # the same mean, up to its order
    finally:
        await neo4j.close()
