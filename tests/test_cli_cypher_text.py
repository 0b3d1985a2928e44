"""The Cypher text helpers of the CLI: the read-only check, parameters as literals, the networkx dialect.

The attack catalogue (comment tricks, file reads, admin procedures) is tests/test_adversarial_cypher.py.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import networkx as nx
import pytest
from grandcypher import GrandCypher
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.cli._cypher_text import (
    CypherTextError,
    check_read_only,
    networkx_misreading,
    parameter_names,
    return_columns,
    to_grand_cypher,
    tokenize,
    without_final_paging,
)


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("CREATE (n:Entry {id: 'x'})", "CREATE is refused"),
        ("match (n) detach delete n", "DETACH DELETE is refused"),
        ("MATCH (n) DELETE n", "DELETE is refused"),
        ("MATCH (n:Token) SET n.value = 'x'", "SET is refused"),
        ("MATCH (n:Token) REMOVE n.value", "REMOVE is refused"),
        ("MERGE (n:Token {value: 'x'})", "MERGE is refused"),
        ("DROP INDEX graphmem_v1_entry_owner", "DROP is refused"),
        ("LOAD CSV FROM 'file:///x.csv' AS row RETURN row", "LOAD CSV is refused"),
        ("CALL { MATCH (n) RETURN n } IN TRANSACTIONS RETURN 1", "CALL { ... } IN TRANSACTIONS is refused"),
        ("MATCH (n) FOREACH (x IN [1] | SET n.a = x)", "FOREACH is refused"),
        ("MATCH (n) RETURN n UNION CREATE (m) RETURN m", "CREATE is refused"),
        ("/* read */ MATCH (n) WITH n CALL { WITH n DELETE n } RETURN 1", "DELETE is refused"),
        ("GRANT ROLE admin TO alice", "GRANT is refused"),
        ("MATCH (n) RETURN n FROBNICATE n", "FROBNICATE is not a read clause"),
    ],
)
def test_what_is_not_a_read_is_refused(query: str, reason: str) -> None:
    refusal = check_read_only(query)
    assert refusal is not None and refusal.reason.startswith(reason), refusal


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Entry) RETURN n.text",
        "MATCH (n) WHERE n.text = 'CREATE (x) DELETE y' RETURN n",  # in a string
        'MATCH (n) WHERE n.text CONTAINS "SET \\" MERGE" RETURN n',  # escaped quote in a string
        "MATCH (n) RETURN n // DELETE everything",  # in a comment
        "MATCH (n) /* SET n.x = 1 */ RETURN n",
        "MATCH (n:Set)-[:DELETE]->(m:Create) RETURN m",  # labels and types
        "MATCH (n) RETURN n.set, n.remove, n.create AS merge",  # properties and aliases
        "RETURN {create: 1, delete: 2} AS m",  # map keys
        "MATCH (`CREATE`) RETURN `CREATE`",  # backtick names
        "MATCH (n) WHERE n.value STARTS WITH 'x' RETURN n",
        "OPTIONAL MATCH (n:Entry) WITH n, count(*) AS c WHERE c > 1 RETURN n.id ORDER BY n.id DESC SKIP 1 LIMIT 2",
        "UNWIND [1, 2] AS x RETURN x UNION ALL MATCH (n) RETURN n.position AS x",
        "MATCH (n) RETURN CASE WHEN n.x IS NULL THEN 1 ELSE 2 END AS k, [x IN range(1, 3) WHERE x > 1 | x * 2] AS l",
        "MATCH (n) WHERE COUNT { (n)-->() } > 1 AND EXISTS { MATCH (n)<--(m) } RETURN n",
        "MATCH (n) CALL (n) { MATCH (n)-->(m) RETURN count(m) AS c } RETURN c",
        "CALL db.labels() YIELD label RETURN label ORDER BY label",
        "CALL dbms.components()",
        "RETURN point.distance(point({x: 0, y: 0}), point({x: 1, y: 1})) AS d;",
    ],
)
def test_reads_are_accepted(query: str) -> None:
    assert check_read_only(query) is None


def test_the_refusal_says_where() -> None:
    refusal = check_read_only("MATCH (n)\nWHERE n.a = 1\n  SET n.b = 2")
    assert refusal is not None and refusal.where == "line 3, column 3"
    assert str(refusal).endswith("(at line 3, column 3)")


def test_tokenize_gives_the_text_back_and_decodes_strings() -> None:
    query = "MATCH (n {v: 'it\\'s \\u00e9'}) // c\nRETURN $p, $`odd name`"
    tokens = tokenize(query)
    assert "".join(t.text for t in tokens) == query
    assert [t.value for t in tokens if t.kind == "string"] == ["it's é"]
    assert parameter_names(query) == {"p", "odd name"}


def test_strings_decode_as_neo4j_decodes_them() -> None:
    # Neo4j 5 keeps an unknown escape pair as written, and has no \U escape.
    tokens = [t for t in tokenize("RETURN '\\q\\U0001F600\\/\\t' AS s") if t.kind == "string"]
    assert tokens[0].value == "\\q\\U0001F600\\/\t"
    with pytest.raises(CypherTextError, match="four hexadecimal digits"):
        tokenize("RETURN '\\u00' AS s")


@pytest.mark.parametrize("query", ["RETURN 'open", "MATCH (n) /* open", "MATCH (`open) RETURN 1"])
def test_unterminated_text_is_an_error(query: str) -> None:
    with pytest.raises(CypherTextError, match="unterminated"):
        tokenize(query)


def test_missing_parameters_are_named() -> None:
    with pytest.raises(CypherTextError, match=r"\$app, \$user: give --param app=\.\.\. --param user=\.\.\."):
        to_grand_cypher("MATCH (n {app_name: $app, user_id: $user}) RETURN n", {})


def test_the_networkx_dialect() -> None:
    text = to_grand_cypher(
        "// top\nMATCH (x:Entry {app_name: $app})-[:HAS_TOKEN]->(t) /* c */\n"
        "WHERE x.session_id IS NOT NULL AND t.value <> 'a' RETURN t.value, count(x) AS n LIMIT $n;",
        {"app": 'a"b', "n": 5},
    )
    assert "//" not in text and "/*" not in text and not text.endswith(";")
    assert '{app_name: "a\\"b"}' in text
    assert "NOT x.session_id IS  NULL" in text
    assert 't.value <> "a"' in text and "COUNT(x)" in text and text.endswith("LIMIT 5")


def test_return_columns_are_named_as_neo4j_names_them() -> None:
    assert return_columns("MATCH (x) RETURN DISTINCT x.a, count(x) AS n, coalesce(x.b, 'c') ORDER BY n") == [
        "x.a",
        "n",
        "coalesce(x.b, 'c')",
    ]
    assert return_columns("MATCH (x) WHERE EXISTS { MATCH (x)-->(y) RETURN y } RETURN x.a AS `a b` LIMIT 2") == ["a b"]


def test_aliases_and_properties_named_like_keywords_are_names() -> None:
    """An alias named limit came back as the column "x.id AS" on networkx, and a SKIP or
    LIMIT after an alias named so was left to grand-cypher (which cuts before WHERE)."""
    assert return_columns("MATCH (x) RETURN x.id AS limit ORDER BY x.id") == ["limit"]
    assert return_columns("MATCH (x) RETURN x.position AS skip, x.limit, x.id AS order ORDER BY x.id LIMIT 1") == [
        "skip",
        "x.limit",
        "order",
    ]
    body, skip, limit = without_final_paging("MATCH (x) RETURN x.id AS skip ORDER BY skip SKIP 1 LIMIT 2", {})
    assert (skip, limit) == (1, 2) and body.split() == "MATCH (x) RETURN x.id AS skip ORDER BY skip".split()


def _graph(values: list[str]) -> nx.DiGraph[Any]:
    graph: nx.DiGraph[Any] = nx.DiGraph()
    for i, value in enumerate(values):
        graph.add_node(i, __labels__={"Token"}, value=value)
    return graph


@settings(max_examples=300, deadline=None)
@given(value=st.text(), other=st.text())
def test_any_string_parameter_reaches_grand_cypher_unchanged(value: str, other: str) -> None:
    # A parameter is data: whatever it holds (quotes, backslashes, newlines, comment
    # markers), grand-cypher compares against exactly that string and nothing else.
    graph = _graph([value, other + "\x00different"])
    query = to_grand_cypher("MATCH (n:Token) WHERE n.value = $v RETURN n.value AS v", {"v": value})
    assert GrandCypher(graph).run(query)["v"] == [value]


@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.one_of(st.integers(-(2**53), 2**53), st.booleans(), st.none()), min_size=1, max_size=4))
def test_list_parameters_work_with_in(values: list[Any]) -> None:
    graph = _graph(["x"])
    query = to_grand_cypher("MATCH (n:Token) WHERE n.value IN $v RETURN n.value AS v", {"v": [*values, "x"]})
    assert GrandCypher(graph).run(query)["v"] == ["x"]


def test_maps_and_nan_have_no_literal() -> None:
    with pytest.raises(CypherTextError, match="dict"):
        to_grand_cypher("RETURN $m", {"m": {"a": 1}})
    with pytest.raises(CypherTextError, match="nan"):
        to_grand_cypher("RETURN $f", {"f": float("nan")})


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("MATCH (x:Entry)-[:NEXT]-(y:Entry) RETURN x.id", "without a direction"),
        ("MATCH (x:Entry)--(y) RETURN x.id", "without a direction"),
        ('MATCH (x:Entry) WHERE x.author = "Alice" OR x.position = 0 AND x.role = "model" RETURN x.id', "AND and OR"),
    ],
)
def test_what_networkx_would_read_differently_is_said_not_answered(query: str, says: str) -> None:
    """grand-cypher matched nothing for an undirected pattern and bound AND and OR alike,
    silently: such a query is refused on networkx with the way to write it."""
    reason = networkx_misreading(query)
    assert reason is not None and says in reason


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (x:Entry)-[:NEXT]->(y:Entry) RETURN x.id",
        "MATCH (x:Entry)<-[:NEXT]-(y)-->(z) RETURN x.id",
        'MATCH (x:Entry) WHERE (x.author = "Alice" OR x.position = 0) AND x.role = "model" RETURN x.id',
        'MATCH (x:Entry) WHERE x.author = "Alice" AND x.position = 0 RETURN x.position - (1) AS p',
        'MATCH (x) WHERE EXISTS { MATCH (x)-[:HAS_TOKEN]->(t) WHERE t.value = "a" OR t.value = "b" } AND x.c = 1 RETURN x',
    ],
)
def test_what_networkx_reads_as_neo4j_does_passes(query: str) -> None:
    assert networkx_misreading(query) is None


@pytest.mark.parametrize(
    ("query", "parameters", "says"),
    [
        ("MATCH (e:Entry) RETURN e.position ORDER BY e.position DESC SKIP -1", {}, "SKIP -1 at line 1, column 60"),
        ("MATCH (e:Entry) RETURN e.position LIMIT $n", {"n": -5}, "LIMIT $n (= -5)"),
        ("MATCH (e:Entry) RETURN e.position LIMIT 2.5", {}, "LIMIT 2.5"),
        ("MATCH (e:Entry) RETURN e.position SKIP 1e1", {}, "SKIP 1e1"),
        ("MATCH (e:Entry) RETURN e.position skip $n", {"n": 1.0}, "SKIP $n (= 1.0)"),
        ("MATCH (e:Entry) RETURN e.position LIMIT $n", {"n": True}, "LIMIT $n (= true)"),
    ],
)
def test_a_skip_or_limit_neo4j_refuses_is_refused_on_networkx(query: str, parameters: dict[str, Any], says: str) -> None:
    """grand-cypher sliced the rows with a negative SKIP or LIMIT (``SKIP -1`` kept the last
    row, ``LIMIT -5`` none) and truncated a fraction, where Neo4j refuses them."""
    reason = networkx_misreading(query, parameters)
    assert reason is not None and says in reason and "whole number of 0 or more" in reason


@pytest.mark.parametrize(
    ("query", "parameters"),
    [
        ("MATCH (e:Entry) RETURN e.position SKIP 0 LIMIT $n", {"n": 3}),
        ("MATCH (e:Entry) RETURN e.position LIMIT $n", {}),  # missing: to_grand_cypher names it
        ("MATCH (e:Entry {limit: -1}) RETURN e.skip - 1 AS limit ORDER BY limit", {}),
    ],
)
def test_a_skip_or_limit_neo4j_takes_passes(query: str, parameters: dict[str, Any]) -> None:
    assert networkx_misreading(query, parameters) is None


def test_every_debug_file_reads_alike_on_networkx() -> None:
    debug = Path(__file__).resolve().parent.parent / "cypher" / "debug"
    assert [f.name for f in sorted(debug.glob("*.cypher")) if networkx_misreading(f.read_text(encoding="utf-8"))] == []


def test_the_final_skip_and_limit_are_cut_by_the_runner() -> None:
    """grand-cypher cut each separate pattern's matches to SKIP + LIMIT before WHERE (two
    MATCH clauses joined by WHERE found nothing): the networkx runner cuts the rows itself."""
    query = "MATCH (a:Token) MATCH (b:Token) WHERE a.value = b.value RETURN a.value AS v ORDER BY v SKIP 2 LIMIT $n"
    body, skip, limit = without_final_paging(query, {"n": 5})
    assert (skip, limit) == (2, 5) and "SKIP" not in body and "LIMIT" not in body and body.rstrip().endswith("BY v")
    assert without_final_paging("MATCH (e {limit: 1}) RETURN e.skip AS limit", {}) == (
        "MATCH (e {limit: 1}) RETURN e.skip AS limit",
        0,
        None,
    )
    assert without_final_paging("MATCH (e) RETURN e LIMIT $n", {})[2] is None  # missing: left to be named


@pytest.mark.parametrize(
    ("query", "names"),
    [
        (
            "MATCH (e1:Entity)<-[:MENTIONS]-(x:Entry {app_name: $app})-[:NEXT]->(y:Entry)-[:MENTIONS]->(e2:Entity) "
            "WHERE e1.name = e2.name RETURN e1.name",
            ("e1 (at", "e2 (at"),
        ),
        ("MATCH (x:Entry)-[:MENTIONS]->(e:Entity) MATCH (y:Entry)-[:MENTIONS]->(e) RETURN e.name, count(y)", ("x (", "y (")),
        ("MATCH (x:Entry)-[:NEXT]->(y) MATCH (z:Entry)-[:HAS_TOKEN]->(t) MATCH (x)-[:HAS_TOKEN]->(t) RETURN t", ("x (", "z (")),
        ("MATCH (x:Entry)-[:NEXT]->(y:Entry) MATCH (z:Entry)-[:NEXT]->(y) RETURN x.id", ("x (", "z (")),
        ("MATCH (x)-[:NEXT*1..3]->(y) MATCH (x)-[:NEXT]->(z) RETURN z.id", ("y (", "z (")),
        ("MATCH (x)-[:NEXT*2..3]->(y) MATCH (w:Entry)-[:MENTIONS]->(e) MATCH (x)-[:MENTIONS]->(e) RETURN e", ("x (", "w (")),
        ("MATCH (x:Entry) WHERE EXISTS { MATCH (x)-[:NEXT]->(:Entry)-[:NEXT]->(y), (x)-[:NEXT]->(z) } RETURN x", ("y (",)),
    ],
)
def test_two_nodes_neo4j_may_bind_to_one_node_are_refused(query: str, names: tuple[str, ...]) -> None:
    """grand-cypher matches every node of a connected pattern, across MATCH clauses, to a
    different node; Neo4j binds two variables to one node unless a relationship keeps them
    apart. The chained NEXT pattern above gave no rows on networkx, the second query counted
    x = y out."""
    reason = networkx_misreading(query)
    assert reason is not None and "may be one node on Neo4j" in reason and "--backend neo4j" in reason, reason
    assert all(name in reason for name in names), reason


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (n:Entity {name: $name})<-[:MENTIONS]-(x:Entry)-[:MENTIONS]->(o:Entity) RETURN o.name",
        "MATCH (x)-[:MENTIONS]->(e)<-[:MENTIONS]-(y) RETURN x.id, y.id",
        "MATCH (x:Entry)-[:NEXT]->(y:Entry)-[:NEXT]->(z:Entry) RETURN z.id",  # NEXT has no cycle
        "MATCH (x:Entry)<-[:NEXT]-(y)-->(z) RETURN x.id",
        "MATCH (x:Entry)-[:NEXT*1..2]->(y:Entry)-[:MENTIONS]->(e) RETURN e.name",
        "MATCH (x:Entry)-[r:HAS_TOKEN|MENTIONS]->(n) RETURN n",
        "MATCH (x:Entry)-[:HAS_TOKEN]->(t:Token) MATCH (x)-[:MENTIONS]->(e:Entity) RETURN t.value, e.name",
        # separate patterns: grand-cypher joins any node with any node, as Neo4j does
        "MATCH (a:Token {user_id: 'alice'}) MATCH (b:Token {user_id: 'bob'}) WHERE a.value = b.value RETURN a.value",
    ],
)
def test_nodes_that_are_different_on_neo4j_too_pass(query: str) -> None:
    assert networkx_misreading(query) is None


def test_a_variable_on_a_variable_length_relationship_is_refused() -> None:
    reason = networkx_misreading("MATCH (x:Entry)-[r:NEXT*1..2]->(y:Entry) RETURN size(r) AS hops")
    assert reason is not None and reason.startswith("r names a variable-length relationship at line 1, column 16")
    assert networkx_misreading("MATCH (x:Entry)-[r:NEXT]->(y:Entry) RETURN type(r)") is None


@pytest.mark.parametrize(
    ("query", "parameters", "says"),
    [
        ("MATCH (x:Entry) WHERE x.position = true RETURN x.id", {}, "takes true for 1"),
        ("MATCH (t:Token {speaker: 1}) RETURN t.value", {}, "speaker is a boolean"),
        ("MATCH (t:Token) WHERE t.user_speaker <> $p RETURN t.value", {"p": 0}, "takes true for 1"),
        ("MATCH (x:Entry) WHERE x.position IN [true, 'a'] RETURN x.id", {}, "takes true for 1"),
        ("MATCH (x:Entry) WHERE x.time_refs CONTAINS '2023' RETURN x.id", {}, "x.time_refs is a list"),
        ("MATCH (x:Entry) WHERE x.time_refs STARTS WITH '2023' RETURN x.id", {}, "STARTS WITH reads strings"),
        ("MATCH (x:Entry) WHERE x.position > '3' RETURN x.id", {}, "orders a number against a string"),
        ("MATCH (a:Entry)-[:NEXT]->(b:Entry) WHERE a.position <= b.position RETURN a.id", {}, "not another property"),
        ("MATCH (x:Entry)-[:MENTIONS]->(e:Entity) RETURN e, count(x)", {}, "whole node or relationship e"),
        ("MATCH (x:Entry)-[:MENTIONS]->(e:Entity) RETURN DISTINCT e", {}, "RETURN DISTINCT by the whole node"),
        ("MATCH (x:Entry) RETURN x.time_refs AS refs, count(x)", {}, "by the list x.time_refs"),
        ("MATCH (x:Entry) RETURN DISTINCT x.time_refs", {}, "by the list x.time_refs"),
        # grand-cypher looked the column up by its expression: KeyError: 'x.author'.
        ("MATCH (x:Entry) RETURN DISTINCT x.author AS a ORDER BY x.author", {}, "drop the AS"),
    ],
)
def test_what_python_compares_or_groups_otherwise_is_refused(query: str, parameters: dict[str, Any], says: str) -> None:
    """Python's True == 1 and list membership for CONTAINS matched rows Neo4j does not; the
    other shapes failed with grand-cypher's own TypeError (unhashable type: 'dict', ...)."""
    reason = networkx_misreading(query, parameters)
    assert reason is not None and says in reason and "\n" not in reason, reason


@pytest.mark.parametrize(
    "query",
    [
        "MATCH (x:Entry) WHERE x.position = 1 AND x.author <> 'true' RETURN x.id",
        "MATCH (t:Token {speaker: true}) WHERE t.value CONTAINS 'a' RETURN t.value, count(t)",
        "MATCH (a:Entry)-[:NEXT]->(b:Entry) WHERE a.session_id = b.session_id RETURN DISTINCT a.author",
        "MATCH (x:Entry) RETURN DISTINCT x.author ORDER BY x.author",
        "MATCH (x:Entry) RETURN x.author AS a, count(x) AS n ORDER BY n DESC",
    ],
)
def test_comparisons_python_reads_as_neo4j_does_pass(query: str) -> None:
    assert networkx_misreading(query) is None


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("MATCH (x:Entry) RETURN x.id, x.id AS copy ORDER BY copy", "x.id is returned twice (at line 1, column 24 and"),
        ("MATCH (x:Entry) RETURN count(x) AS a, COUNT(x) AS b", "count(x) is returned twice"),
        ("MATCH (x:Entry) RETURN x.id AS a, x . id AS b", "x.id is returned twice"),
        ("MATCH (x:Entry) RETURN toLower(x.id) AS a, toLower(x.id) AS b", "toLower(x.id) is returned twice"),
        ("MATCH (x:Entry) RETURN DISTINCT x.author, x.author", "x.author is returned twice"),
    ],
)
def test_the_same_expression_returned_twice_is_refused(query: str, says: str) -> None:
    """grand-cypher keys its columns by expression: it silently returned one column of the two."""
    reason = networkx_misreading(query)
    assert reason is not None and reason.startswith(says) and "return it once" in reason and "\n" not in reason, reason
    assert networkx_misreading("MATCH (x:Entry)-[:NEXT]->(y:Entry) RETURN x.id AS a, y.id AS b, x.ID") is None


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("MATCH (x:Entry) RETURN $k AS k, x.id", "the parameter $k at line 1, column 24 is returned as a column"),
        ("MATCH (x:Entry) RETURN x.id, 'a'", "the value 'a' at line 1, column 30"),
        ("MATCH (x:Entry) RETURN x.id, -1 AS n", "the value -1 at"),
        ("MATCH (x:Entry) RETURN x.id, null AS n", "the value null at"),
    ],
)
def test_a_parameter_or_literal_returned_as_a_column_is_refused(query: str, says: str) -> None:
    """grand-cypher cannot return a value: RETURN $k failed with a parser error about a '"'
    that graphmem itself wrote (the parameter as a literal)."""
    reason = networkx_misreading(query, {"k": "hello"})
    assert reason is not None and reason.startswith(says) and "leave it out of RETURN" in reason, reason
    assert networkx_misreading("MATCH (x:Entry) RETURN coalesce(x.session_id, $k) AS s, x.id AS true", {"k": ""}) is None


def test_a_missing_skip_or_limit_parameter_is_asked_for_as_json() -> None:
    # --param n=5 passes the string "5", which LIMIT refuses.
    with pytest.raises(CypherTextError, match=r"\$n, \$user: give --param n:=\.\.\. --param user=\.\.\.$"):
        to_grand_cypher("MATCH (x:Entry {user_id: $user}) RETURN x.id SKIP $n", {})


def test_every_cypher_example_of_the_readme_passes() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    examples = [m for m in re.findall(r"`([^`\n]*MATCH \([^`\n]*)`", readme) if "…" not in m]
    assert len(examples) >= 2
    assert [e for e in examples if check_read_only(e) is None and networkx_misreading(e) is not None] == []
