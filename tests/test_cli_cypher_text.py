"""The Cypher text helpers of the CLI: write detection, parameters as literals, the networkx dialect."""

from __future__ import annotations

from typing import Any

import networkx as nx
import pytest
from grandcypher import GrandCypher
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem.cli._cypher_text import (
    CypherTextError,
    find_write,
    parameter_names,
    return_columns,
    to_grand_cypher,
    tokenize,
)


@pytest.mark.parametrize(
    ("query", "clause"),
    [
        ("CREATE (n:Entry {id: 'x'})", "CREATE"),
        ("match (n) detach delete n", "DETACH DELETE"),
        ("MATCH (n) DELETE n", "DELETE"),
        ("MATCH (n:Token) SET n.value = 'x'", "SET"),
        ("MATCH (n:Token) REMOVE n.value", "REMOVE"),
        ("MERGE (n:Token {value: 'x'})", "MERGE"),
        ("DROP INDEX graphmem_v1_entry_owner", "DROP"),
        ("LOAD CSV FROM 'file:///x.csv' AS row RETURN row", "LOAD CSV"),
        ("CALL { MATCH (n) RETURN n } IN TRANSACTIONS RETURN 1", "CALL { ... } IN TRANSACTIONS"),
        ("MATCH (n) FOREACH (x IN [1] | SET n.a = x)", "FOREACH"),
        ("MATCH (n) RETURN n UNION CREATE (m) RETURN m", "CREATE"),
        ("/* read */ MATCH (n) WITH n CALL { WITH n DELETE n } RETURN 1", "DELETE"),
        ("GRANT ROLE admin TO alice", "GRANT"),
    ],
)
def test_writes_are_found(query: str, clause: str) -> None:
    write = find_write(query)
    assert write is not None and write.clause == clause


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
    ],
)
def test_reads_are_not_mistaken_for_writes(query: str) -> None:
    assert find_write(query) is None


def test_write_position_is_reported() -> None:
    write = find_write("MATCH (n)\nWHERE n.a = 1\n  SET n.b = 2")
    assert write is not None and write.where == "line 3, column 3"


def test_tokenize_gives_the_text_back_and_decodes_strings() -> None:
    query = "MATCH (n {v: 'it\\'s \\u00e9'}) // c\nRETURN $p, $`odd name`"
    tokens = tokenize(query)
    assert "".join(t.text for t in tokens) == query
    assert [t.value for t in tokens if t.kind == "string"] == ["it's é"]
    assert parameter_names(query) == {"p", "odd name"}


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
