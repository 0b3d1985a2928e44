"""Tests specific to the Neo4j backend: its Cypher files, schema, graph hygiene, parity
with the networkx backend, outages, concurrency, hostile input and packaging.

Behaviour every backend shares is tested once, by the conformance suite over the
``service`` fixture; these tests look at what only Neo4j has.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import zipfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, PrivateNeo4j, make_neo4j_service, neo4j_auth, neo4j_uri_or_skip
from graphmem import (
    BackendUnavailableError,
    Content,
    Decomposer,
    GraphmemError,
    GraphMemoryService,
    InvalidStoreUriError,
    MemoryEntry,
    MemoryService,
    Part,
    SearchRequest,
    open_memory,
)
from graphmem._related import load_related_words

pytestmark = pytest.mark.neo4j

CYPHER_DIR = REPO / "cypher"
BACKEND_MODULE = REPO / "graphmem" / "backends" / "neo4j.py"
FIXTURES = Path(str(files("graphmem") / "_data" / "demo_fixtures.jsonl"))


def entry(text: str, author: str = "user", role: str = "user", minute: int = 0) -> MemoryEntry:
    return MemoryEntry(
        content=Content(role=role, parts=[Part(text=text)]),
        author=author,
        timestamp=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=minute),
    )


@pytest.fixture
async def neo(decomposer: Decomposer) -> AsyncIterator[Any]:
    """The Neo4j service alone, on an empty database."""
    svc = await make_neo4j_service(decomposer)
    try:
        yield svc
    finally:
        await svc.close()


async def count(svc: Any, query: str, **params: Any) -> int:
    result = await svc.driver.execute_query(query, params)
    return int(result.records[0][0])


async def schema_snapshot(svc: Any) -> list[tuple[Any, ...]]:
    indexes = await svc.driver.execute_query("SHOW INDEXES YIELD name, type, labelsOrTypes, properties, state")
    constraints = await svc.driver.execute_query("SHOW CONSTRAINTS YIELD name, type, labelsOrTypes, properties")
    return sorted(
        tuple(str(v) for v in r.values()) for r in [*indexes.records, *constraints.records]
    )


# ---------------------------------------------------------------------- the Cypher files


def test_every_cypher_file_is_used_by_the_backend() -> None:
    from graphmem._cypher import cypher_names

    source = BACKEND_MODULE.read_text(encoding="utf-8")
    used = set(re.findall(r'"([a-z_0-9]+)"', source))
    names = cypher_names()
    assert names, "no Cypher files found"
    # schema_v<N> files are loaded by version number.
    unused = [n for n in names if n not in used and not re.fullmatch(r"schema_v\d+", n)]
    assert unused == []
    assert {p.stem for p in CYPHER_DIR.glob("*.cypher")} == set(names)


def test_backend_never_builds_query_text() -> None:
    """No f-string, .format or % on anything: query text only comes from the files."""
    tree = ast.parse(BACKEND_MODULE.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            assert node.func.attr != "format", f"str.format call at line {node.lineno}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            assert not isinstance(node.left, ast.Constant), f"%-formatting at line {node.lineno}"
        if isinstance(node, ast.Call) and any(
            isinstance(arg, ast.JoinedStr) for arg in [*node.args, *(k.value for k in node.keywords)]
        ):
            name = ast.unparse(node.func)
            # f-strings are fine in messages (an error, its note) and in file names, never as query text.
            assert name.endswith(("Error", "load_statements", "load_cypher", "Exception", ".add_note")), (
                f"f-string passed to {name}() at line {node.lineno}"
            )
    source = BACKEND_MODULE.read_text(encoding="utf-8")
    # Every query the module runs is loaded by name.
    assert not re.search(r"\b(MATCH|MERGE|CREATE|UNWIND)\s*\(", source.replace("cypher/", ""))


def test_cypher_files_hold_no_literal_values() -> None:
    """Values travel as $parameters: no quoted strings in the queries (comments aside)."""
    from graphmem._cypher import cypher_names, load_cypher

    for name in cypher_names():
        text = load_cypher(name)
        literals = re.findall(r"'[^']*'|\"[^\"]*\"", text)
        # The empty string of coalesce() is the only literal: it is not user data.
        assert set(literals) <= {"''"}, f"{name}.cypher has literals {literals}"


def test_list_parameters_travel_in_one_map() -> None:
    """Neo4j 5 plans a query once per size bucket of each list parameter (~0.5-1.3 s a plan
    for a search query): a search's lists change size from query to query, so they go in
    the map ``$lists``, which carries no size hint. Every file reads its lists from there,
    and ``_sent`` puts every list there, scalars left where they are."""
    from graphmem._cypher import cypher_names, load_cypher
    from graphmem.backends.neo4j import _sent

    for name in cypher_names():
        code = "\n".join(line.split("//")[0] for line in load_cypher(name).splitlines())
        stray = re.findall(r"(?:UNWIND|\bIN)\s+\$(?!lists\.)(\w+)", code)
        assert not stray, f"{name}.cypher takes lists outside $lists: {stray}"
    sent = _sent({"app_name": "a", "ids": ["x", "y"], "pairs": (["x", "y"],), "written": {"x": 1}, "reach": 2})
    assert sent == {"app_name": "a", "written": {"x": 1}, "reach": 2, "lists": {"ids": ["x", "y"], "pairs": (["x", "y"],)}}
    assert _sent({"app_name": "a"}) == {"app_name": "a"}


def test_a_gathered_row_becomes_its_candidate() -> None:
    """``_candidates`` fills CandidateStats by position (it is built hundreds of times a
    search): every field lands where it belongs, nulls (a node deleted meanwhile) and the
    entry itself are left out of its terms and neighbours, and a second neighbour that is
    also a first one counts once, as a first."""
    from graphmem._scoring import CandidateStats
    from graphmem.backends.neo4j import _candidates

    row = ["e1", ["film", None], ["Ana"], "p", ["e0", None, "e1", "e2"], ["e2", "e3", None, "e1"], "Ana",
           ["2023-05-08T13:56:00+00:00", ["2023-05-01/2023-05-07"]], 4]
    assert _candidates([row, [None, [], [], None, [], [], None, None, None]]) == [
        CandidateStats(
            entry_id="e1",
            matched_tokens=frozenset({"film"}),
            matched_entities=frozenset({"Ana"}),
            neighbour_ids=("e0", "e2"),
            second_neighbour_ids=("e3",),
            project_id="p",
            day=datetime(2023, 5, 8).toordinal(),
            time_refs=((datetime(2023, 5, 1).toordinal(), datetime(2023, 5, 7).toordinal()),),
            author="Ana",
            position=4,
        )
    ]
    untimed = _candidates([["e1", [], [None], None, [], [], None, None, None]])[0]
    assert (untimed.matched_entities, untimed.day, untimed.time_refs, untimed.author, untimed.position) == (
        frozenset(), None, (), None, None
    )


async def test_every_cypher_file_parses(neo: Any) -> None:
    from graphmem._cypher import cypher_names, load_statements

    # Warnings that only say the database is empty, or that EXPLAIN got no parameters.
    expected = {"01N50", "01N51", "01N52", "01N60"}
    async with neo.driver.session(notifications_min_severity="WARNING") as session:
        for name in cypher_names():
            for statement in load_statements(name):
                result = await session.run(f"EXPLAIN {statement}")
                summary = await result.consume()
                assert summary.plan is not None, name
                # No deprecation or performance warnings.
                warnings = [
                    n
                    for n in summary.gql_status_objects
                    if n.severity.name == "WARNING" and n.gql_status not in expected
                ]
                assert warnings == [], f"{name}.cypher: {[w.status_description for w in warnings]}"


def plan_operators(step: dict[str, Any]) -> list[str]:
    """The operators of a plan (EXPLAIN's), depth first."""
    return [step["operatorType"].split("@")[0], *(o for child in step.get("children", []) for o in plan_operators(child))]


async def test_a_neighbourhood_seeks_its_holders_by_element_id(neo: Any) -> None:
    """With the label and the owner in the same MATCH as the element id, the planner read
    every entry of the owner once per holder (its index, then an id comparison): a pruned
    step of a user of 10,000 entries took 0.5-1 s instead of ~20 ms. The plan must seek."""
    from graphmem._cypher import load_cypher
    from graphmem.backends.neo4j import _sent

    await neo.add_session("app", "u", "s", [entry(f"turn {i} about kiwis and plans", minute=i) for i in range(300)])
    records = (await neo.driver.execute_query(
        "MATCH (e:Entry {app_name: 'app', user_id: 'u'}) RETURN elementId(e) LIMIT 40"
    )).records
    params = {
        "app_name": "app", "user_id": "u", "project_id": None, "with_times": False, "tokens": ["kiwis", "plans"],
        "entities": ["kiwi"], "reach": 2, "holding_only": True, "around": [r[0] for r in records],
    }
    async with neo.driver.session() as session:
        plan = (await (await session.run("EXPLAIN " + load_cypher("neighbourhood"), _sent(params))).consume()).plan
    operators = plan_operators(plan)
    assert "NodeByElementIdSeek" in operators, operators
    assert not [o for o in operators if o in ("NodeIndexSeek", "NodeByLabelScan", "AllNodesScan")], operators


def test_every_read_names_the_seek_of_its_term_nodes() -> None:
    """The plan a server picks depends on its statistics and on what it planned before (the
    test below sees a scan only on some servers), so the rule is checked in the text too:
    in every query file, a term node matched by its owner and value or name is followed by
    its ``USING INDEX SEEK``."""
    term = re.compile(r"MATCH \((\w*):(Token|Entity) \{app_name: \$app_name, user_id: \$user_id, (value|name): \w+\}\)")
    unnamed = []
    for path in sorted((REPO / "cypher").glob("*.cypher")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if (m := term.search(line)) is None or line.lstrip().startswith("//"):
                continue
            seek = f"USING INDEX SEEK {m.group(1)}:{m.group(2)}(app_name, user_id, {m.group(3)})"
            if not m.group(1) or i + 1 >= len(lines) or lines[i + 1].strip() != seek:
                unnamed.append(f"{path.name}:{i + 1}: {line.strip()}")
    assert unnamed == []


@pytest.mark.parametrize(
    ("query", "extra"),
    [
        ("term_stats_or_gather", {"full_at_most": 1000, "prefetch_df_share": 0.25}),  # a small user, gathered
        ("term_stats_or_gather", {"full_at_most": 10, "prefetch_df_share": 0.25}),  # a larger one, prefetched
        ("term_stats", {}),
        ("postings", {}),
        ("neighbourhood_of_holders", {}),
        ("name_uses", {"values": ["kiwi", "place 3"]}),
    ],
)
async def test_term_nodes_are_sought_never_scanned(neo: Any, query: str, extra: dict[str, Any]) -> None:
    """Left to choose, the planner read a small user's gathering by scanning the whole Entity
    index (every user's entity nodes, filtered by owner and name), and so did the holders'
    neighbourhood and the prefetch of a larger user's postings: a search cost grew with
    every other user's terms. Every term node is found by a seek on its owner and value
    (whichever plan this server would have picked without the hints)."""
    from graphmem._cypher import load_cypher
    from graphmem._decompose import Decomposition, Entity
    from graphmem._service import EntryRecord
    from graphmem.backends.neo4j import _sent

    for user, count in (("u", 60), ("other", 600)):
        records = [
            EntryRecord(
                entry(f"turn {i}", minute=i),
                terms=Decomposition((f"w{i % 50}", "kiwi"), (Entity(f"Place {i}", "GPE"),), "en"),
            )
            for i in range(count)
        ]
        await neo.restore_session("app", user, "s", records)
    params = {
        "app_name": "app", "user_id": "u", "project_id": None, "with_times": False,
        "tokens": ["kiwi", "w3"], "entities": ["place 3", "kiwi"], **extra,
    }  # fmt: skip
    async with neo.driver.session() as session:
        plan = (await (await session.run("EXPLAIN " + load_cypher(query), _sent(params))).consume()).plan
    operators = plan_operators(plan)
    assert [o for o in operators if o.endswith("Scan")] == [], operators


# ---------------------------------------------------------------------- schema


async def test_schema_migration_twice_changes_nothing(neo: Any) -> None:
    from graphmem.backends.neo4j import SCHEMA_VERSION

    before = await schema_snapshot(neo)
    assert await neo.ensure_schema() == SCHEMA_VERSION
    assert await neo.ensure_schema() == SCHEMA_VERSION
    after = await schema_snapshot(neo)
    assert before == after
    names = {row[0] for row in after}
    assert {
        "graphmem_v1_entry_id",
        "graphmem_v1_token_key",
        "graphmem_v1_entity_key",
        "graphmem_v1_entry_owner",
        "graphmem_v1_entry_session",
        "graphmem_v1_entry_project",
        "graphmem_v1_session_lock",
        "graphmem_v2_user_key",
    } <= names
    assert all(row[4] == "ONLINE" for row in after if len(row) == 5)


async def test_token_uniqueness_is_enforced(neo: Any) -> None:
    await neo.add_session("app", "u", "s", [entry("apples and pears")])
    with pytest.raises(Exception, match="already exists"):
        await neo.driver.execute_query(
            "CREATE (:Token {app_name: $a, user_id: $u, value: $v})", {"a": "app", "u": "u", "v": "apple"}
        )


# ---------------------------------------------------------------------- graph hygiene


async def test_graph_shape_matches_the_shared_model(neo: Any) -> None:
    await neo.add_session("app", "u", "s", [entry("Maria lives in Lisbon", minute=0), entry("Nice city", minute=1)])
    await neo.add_session_to_project("app", "u", "s2", "proj", [entry("Lisbon budget", minute=2)])
    result = await neo.driver.execute_query(
        "MATCH (e:Entry) RETURN properties(e) AS p ORDER BY e.timestamp"
    )
    props = [r["p"] for r in result.records]
    assert len(props) == 3
    # Null properties are simply absent in Neo4j; the rest are exactly entry_properties(),
    # and Neo4j's write stamp (what an erasure in batches deletes by).
    assert set(props[0]) == {
        "id", "app_name", "user_id", "session_id", "position", "author", "role", "text", "timestamp", "time_refs",
        "language", "written",
    }
    assert props[0]["written"] == props[1]["written"] != props[2]["written"]  # one per write
    tokens = await neo.driver.execute_query("MATCH (t:Token) RETURN t.value AS v, properties(t) AS p")
    assert all(set(r["p"]) == {"app_name", "user_id", "value", "speaker", "user_speaker"} for r in tokens.records)
    assert {r["v"] for r in tokens.records if r["p"]["speaker"]} == {"user"}  # the author's name
    assert {r["v"] for r in tokens.records if r["p"]["user_speaker"]} == {"user"}  # in the role "user"
    assert props[2]["project_id"] == "proj"
    assert datetime.fromisoformat(props[0]["timestamp"]) == datetime(2026, 1, 1, tzinfo=UTC)
    assert await count(neo, "MATCH (:Entry)-[:NEXT]->(:Entry) RETURN count(*)") == 1
    assert await count(neo, "MATCH (n) WHERE n.app_name IS NULL OR n.user_id IS NULL RETURN count(n)") == 0
    labels = await neo.driver.execute_query("MATCH (n) RETURN DISTINCT labels(n) AS l")
    # The shared model's nodes, and one Neo4j-only counter node per user that holds entries.
    assert sorted(r["l"] for r in labels.records) == [["Entity"], ["Entry"], ["GraphmemUser"], ["Token"]]
    counters = await neo.driver.execute_query("MATCH (c:GraphmemUser) RETURN properties(c) AS p")
    [counter] = [r["p"] for r in counters.records]
    # ``stamp``: random, new with every write transaction (what a copy of the user is checked by).
    assert isinstance(counter.pop("stamp"), str)
    assert counter == {"app_name": "app", "user_id": "u", "entries": 3, "project_entries": 1}
    assert await count(neo, "MATCH (n:Entity {name: 'lisbon'}) RETURN count(n)") == 1


async def test_delete_user_leaves_no_node_of_that_user(neo: Any) -> None:
    for user in ("gone", "kept"):
        await neo.add_session("app", user, "s1", [entry("Maria lives in Lisbon"), entry("She loves pastries")])
        await neo.add_session_to_project("app", user, "s2", "p", [entry("Project Atlas moves billing to Postgres")])
        await neo.add_entry("app", user, entry("Standalone note about Berlin"))
    kept_before = await count(neo, "MATCH (n {app_name: 'app', user_id: 'kept'}) RETURN count(n)")

    assert await count(neo, "MATCH (c:GraphmemUser {app_name: 'app', user_id: 'gone'}) RETURN count(c)") == 1
    assert await neo.delete_user("app", "gone") == 4
    assert await count(neo, "MATCH (n) WHERE n.app_name = $a AND n.user_id = $u RETURN count(n)", a="app", u="gone") == 0
    assert await count(neo, "MATCH (c:GraphmemUser {app_name: 'app', user_id: 'gone'}) RETURN count(c)") == 0
    assert await counter(neo, "app", "kept") == (4, 1)
    assert await count(neo, "MATCH (n {app_name: 'app', user_id: 'kept'}) RETURN count(n)") == kept_before
    assert await neo.delete_user("app", "gone") == 0


def reads_counted(neo: Any) -> list[str]:
    """The names of the Cypher files ``neo`` reads from now on, in order (cleared by the caller)."""
    reads: list[str] = []
    original = neo._read

    async def counting(name: str, params: dict[str, Any]) -> list[Any]:
        reads.append(name)
        return await original(name, params)

    neo._read = counting
    return reads


async def test_a_small_users_search_is_two_round_trips(neo: Any) -> None:
    """The term statistics and a small user's full gathering come in one read, then the
    entries that can make the cut, with the messages around them that a reply's walk reads
    (rule 7), in a second; a user above the size prunes (a read more).
    A query linking a name that is no speaker's ("Maria" here) also reads the user's names,
    to group them (graphmem._entities): one read, and only then."""
    await neo.add_session("app", "u", "s1", [entry("Maria lives in Lisbon"), entry("She loves pastries", minute=1)])
    reads = reads_counted(neo)
    request = SearchRequest(query="Where does Maria live?", app_name="app", user_id="u", limit=1)
    first = await neo.search(request)
    assert reads == ["term_stats_or_gather", "names", "fetch_entries_around"]
    assert [h.memory.text for h in first.hits] == ["Maria lives in Lisbon"]
    reads.clear()
    await neo.search(SearchRequest(query="Where does she live?", app_name="app", user_id="u", limit=1))
    assert reads == ["term_stats_or_gather", "fetch_entries_around"]
    reads.clear()
    neo.full_gathering_entries = 1  # the user holds 2: pruned steps, the same answer
    pruned = await neo.search(request)
    # The first read prefetches the rarer terms' postings: then their holders' neighbourhood.
    assert reads[0] == "term_stats_or_gather" and "neighbourhood" in reads
    assert [(h.entry_id, h.score) for h in pruned.hits] == [(h.entry_id, h.score) for h in first.hits]


async def test_a_search_reads_the_users_names_at_most_once(neo: Any) -> None:
    """The rules that read a query's names (names in Han, kana or Devanagari, a speaker's
    name in Latin letters, the names of one thing) share one read of the user's entity
    names and speakers' words (``names``) instead of one read each."""
    await neo.add_session(
        "app", "u", "s1", [entry("我妹妹住在上海。", author="Li Na"), entry("上海很好玩！", author="王强", minute=1)]
    )
    reads = reads_counted(neo)
    hits = (await neo.search(SearchRequest(query="李娜的妹妹住在哪里？", app_name="app", user_id="u"))).hits
    assert hits and hits[0].memory.text == "我妹妹住在上海。"
    assert reads.count("names") <= 1 and not {"speaker_tokens", "entity_names"} & set(reads), reads


async def test_a_reply_in_several_messages_folds_without_a_read_more(neo: Any) -> None:
    """Rule 7 walks out from a run of one author's messages to the next author's: the
    messages it walks came with the entries ranked, so the walk asks nothing more, and the
    answer is the one a search that reads as it goes (``read_ahead`` off) gives."""
    chat = [
        entry("Did you go fishing at the harbour?", author="Ana"),
        entry("Yes, early on Sunday.", author="Ben", minute=1),
        entry("We caught sardines and mackerel.", author="Ben", minute=2),
        entry("The sardines were grilled for lunch.", author="Ben", minute=3),
        entry("Sounds delicious!", author="Ana", minute=4),
    ]
    await neo.add_session("app", "u", "s1", chat)
    reads = reads_counted(neo)
    request = SearchRequest(query="sardines", app_name="app", user_id="u", limit=3)
    ahead = await neo.search(request)
    assert reads == ["term_stats_or_gather", "fetch_entries_around"]
    reply = [s.memory for s in ahead.hits[0].reply]
    assert {m.author for m in reply} == {"Ben"} and {e.text for e in chat[2:4]} <= {m.text for m in reply}
    neo.read_ahead = False
    reads.clear()
    asked = await neo.search(request)
    assert "entries_around" in reads and "fetch_entries_around" not in reads
    assert [(h.entry_id, h.score, [s.entry_id for s in h.reply]) for h in asked.hits] == [
        (h.entry_id, h.score, [s.entry_id for s in h.reply]) for h in ahead.hits
    ]


async def test_prefetched_postings_name_holders_a_neighbourhood_reads(neo: Any) -> None:
    """The first read's prefetched postings and postings.cypher name holders alike (element
    ids), and the neighbourhood read takes those keys: a key it did not recognise would
    only make a pruned search fall back to reading every holder, with the same answer."""
    from graphmem._gathering import NeighbourhoodRequest
    from graphmem._service import Owner

    await neo.add_session("app", "u", "s1", [entry(f"kiwi note {i}", minute=i) for i in range(4)] + [entry("mango")])
    owner = Owner("app", "u")
    first = await neo._term_stats_or_gather(
        owner, None, ["kiwi", "mango"], [], full_at_most=1, with_times=True, prefetch_df_share=1.0
    )
    read = await neo._postings(owner, None, ["kiwi", "mango"], [], with_times=True)
    assert first.postings is not None
    assert {t: set(h) for t, h in first.postings.tokens.items()} == {t: set(h) for t, h in read.tokens.items()}
    assert len(read.tokens["kiwi"]) == 4 and all(read.days.get(key) is not None for key in read.tokens["kiwi"])
    request = NeighbourhoodRequest(("kiwi", "mango"), (), tuple(first.postings.tokens["mango"]), 2, holding_only=True)
    found = await neo._neighbourhood(owner, None, request)
    # mango's entry, and the kiwi entries within two NEXT steps of it.
    assert sorted(sorted(c.matched_tokens) for c in found) == [["kiwi"], ["kiwi"], ["mango"]]


async def test_schema_version_3_flags_the_speakers_of_a_store_written_before_it(neo: Any) -> None:
    """A store written before ``Token.user_speaker`` was kept (schema version 2) has no such
    property: its speakers read as speaking as no user until ``ensure_schema`` runs version
    3's data step (or that author's next entry in the role "user" flags their words)."""
    from graphmem._service import Owner, SpeakerWords
    from graphmem.backends.neo4j import SCHEMA_VERSION

    owner, other = Owner("app", "u"), Owner("app", "v")
    await neo.add_session("app", "u", "s1", [entry("Bob here", author="Bob"), entry("Hi", author="helper", role="model")])
    await neo.add_session("app", "v", "s1", [entry("Ann here", author="Ann"), entry("Hi", author="helper", role="model")])
    flagged = SpeakerWords(frozenset({"bob", "helper"}), frozenset({"bob"}))
    assert await neo._speakers(owner) == flagged
    # Back to version 2: no index of version 3, no flags.
    await neo.driver.execute_query("DROP INDEX graphmem_v3_token_speaker")
    await neo.driver.execute_query("MATCH (t:Token) REMOVE t.user_speaker")
    assert await neo._speakers(owner) == SpeakerWords(frozenset({"bob", "helper"}), frozenset())
    await neo.add_session("app", "v", "s2", [entry("Ann again", author="Ann")])  # a write flags its author's words
    assert (await neo._speakers(other)).as_user == {"ann"}
    assert await neo.ensure_schema() == SCHEMA_VERSION
    assert await neo._speakers(owner) == flagged and (await neo._speakers(other)).as_user == {"ann"}
    flags = await neo.driver.execute_query("MATCH (t:Token {user_id: 'u'}) WHERE t.speaker RETURN t.value AS v, t.user_speaker AS f")
    assert {r["v"]: r["f"] for r in flags.records} == {"bob": True, "helper": False}
    assert await neo.ensure_schema() == SCHEMA_VERSION  # nothing left to do


async def test_schema_version_4_links_across_the_reactions_of_a_store_written_before_it(neo: Any) -> None:
    """A store written before rule 12 has ``NEXT`` only between positions ``p`` and ``p + 1``:
    ``ensure_schema`` runs version 4's data step, which adds the links across reactions that
    a write makes now (and only those)."""
    from graphmem.backends.neo4j import SCHEMA_VERSION

    turns = [entry("Where does Ana live?"), entry("haha"), entry("Lisbon."), entry("lol"), entry("Porto before")]
    await neo.add_session("app", "u", "s1", turns)
    await neo.add_session_to_project("app", "u", "s1", "p", turns)
    links = "MATCH (a:Entry {user_id: 'u'})-[:NEXT]->(b:Entry) RETURN a.text AS a, b.text AS b, coalesce(a.project_id, '') AS p"
    written = sorted(tuple(r.values()) for r in (await neo.driver.execute_query(links)).records)
    assert ("Where does Ana live?", "Lisbon.", "") in written and ("Lisbon.", "Porto before", "p") in written
    # Back to version 3: no index of version 4, no links across reactions.
    await neo.driver.execute_query("DROP INDEX graphmem_v4_entry_session_position")
    await neo.driver.execute_query("MATCH (a:Entry)-[n:NEXT]->(b:Entry) WHERE b.position > a.position + 1 DELETE n")
    assert len((await neo.driver.execute_query(links)).records) == 8
    assert await neo.ensure_schema() == SCHEMA_VERSION
    assert sorted(tuple(r.values()) for r in (await neo.driver.execute_query(links)).records) == written
    assert await neo.ensure_schema() == SCHEMA_VERSION  # nothing left to do
    assert sorted(tuple(r.values()) for r in (await neo.driver.execute_query(links)).records) == written


async def test_deletes_remove_orphan_tokens_and_entities(neo: Any) -> None:
    orphans = (
        "MATCH (n) WHERE (n:Token OR n:Entity) AND NOT EXISTS { (n)<--() } RETURN count(n)"
    )
    await neo.add_session("app", "u", "s1", [entry("Maria visits Lisbon in April"), entry("zebra quagga")])
    await neo.add_session("app", "u", "s2", [entry("Maria bakes pastries")])
    await neo.add_session_to_project("app", "u", "s3", "p", [entry("Rotterdam warehouse site")])
    await neo.add_entry("app", "u", entry("okapi sighting in Berlin"))

    assert await neo.delete_entries("app", "u", "zebra") == 1
    assert await count(neo, "MATCH (t:Token {value: 'quagga'}) RETURN count(t)") == 0
    assert await neo.delete_entries("app", "u", "okapi") == 1
    assert await count(neo, "MATCH (n:Entity {name: 'berlin'}) RETURN count(n)") == 0
    assert await neo.delete_session("app", "u", "s1") == 1
    assert await count(neo, "MATCH (n:Entity {name: 'lisbon'}) RETURN count(n)") == 0
    assert await count(neo, "MATCH (n:Entity {name: 'maria'}) RETURN count(n)") == 1  # s2 still uses it
    assert await neo.delete_project("app", "u", "p") == 1
    assert await count(neo, "MATCH (t:Token {value: 'warehouse'}) RETURN count(t)") == 0
    # Replacing a session drops what only the old version used.
    await neo.add_session("app", "u", "s2", [entry("Maria sings")])
    assert await count(neo, "MATCH (t:Token {value: 'pastry'}) RETURN count(t)") == 0
    assert await count(neo, orphans) == 0
    assert (await neo.stats("app", "u")).entries == 1


async def test_replacing_a_session_is_all_or_nothing(neo: Any) -> None:
    """A write that fails half-way leaves the old session as it was.

    Fault injection through the backend primitive: two new entries with one id, so the
    unique constraint refuses the second after the old entries were read for replacement.
    """
    from graphmem import EntryIdConflictError
    from graphmem._service import Owner

    await neo.add_session("app", "u", "s", [entry("the original words")])
    before = await count(neo, "MATCH (n) RETURN count(n)")
    (prepared,) = await neo._prepare([entry("replacement words")], session_id="s", project_id=None)

    with pytest.raises(EntryIdConflictError, match="nothing of this write was stored"):
        await neo._replace_session(Owner("app", "u"), None, "s", [prepared, prepared])

    assert await count(neo, "MATCH (n) RETURN count(n)") == before
    hits = await neo.search(SearchRequest(app_name="app", user_id="u", query="original"))
    assert [m.text for m in hits.memories] == ["the original words"]


# ---------------------------------------------------------------------- the per-user entry counter


async def counter(svc: Any, app: str, user: str) -> tuple[int, int] | None:
    """The (entries, project_entries) of the owner's GraphmemUser node; None without one."""
    result = await svc.driver.execute_query(
        "MATCH (c:GraphmemUser {app_name: $a, user_id: $u}) RETURN c.entries AS n, c.project_entries AS p",
        {"a": app, "u": user},
    )
    assert len(result.records) <= 1
    return (result.records[0]["n"], result.records[0]["p"]) if result.records else None


async def stored_counts(svc: Any, app: str, user: str) -> tuple[int, int] | None:
    """What the counter should say: the owner's entries counted one by one (None: none)."""
    result = await svc.driver.execute_query(
        "MATCH (e:Entry {app_name: $a, user_id: $u}) RETURN count(e) AS n, count(e.project_id) AS p",
        {"a": app, "u": user},
    )
    n, p = result.records[0]["n"], result.records[0]["p"]
    return (n, p) if n else None


async def test_the_entry_counter_is_exact_after_every_write_path(neo: Any) -> None:
    """Every public write, on one owner among others (same user in another app, another
    user in the same app): the counter equals a count of the stored entries, and a user
    left with no entry has no counter node."""
    from graphmem import EntryRecord

    owners = [("app", "u"), ("app", "v"), ("other", "u")]
    for app, user in owners[1:]:
        await neo.add_session(app, user, "s1", [entry("apples"), entry("pears", minute=1)])
        await neo.add_session_to_project(app, user, "s1", "p", [entry("plums")])

    async def ids_of(session: str | None, project: str | None = None) -> list[str]:
        return [e.entry_id for e in await neo.list_entries("app", "u", project) if e.session_id == session]

    async def delete_one() -> None:
        await neo.delete_entry("app", "u", (await ids_of("s1"))[0])

    async def delete_by_ids() -> None:  # a project's entry, a global one, and an unknown id
        ids = [*(await ids_of(None, "q")), (await ids_of("s1"))[0], "no-such-entry"]
        assert await neo.delete_entries_by_id("app", "u", ids) == 2

    async def restore_keeping_ids() -> None:
        kept = await neo.list_entries("app", "u")
        records = [EntryRecord(e.memory, e.entry_id, e.position) for e in kept if e.session_id == "s1"]
        await neo.restore_session("app", "u", "s1", [*records, EntryRecord(entry("and a new one", minute=9), position=9)])

    steps: list[tuple[str, Any]] = [
        ("add_session", lambda: neo.add_session("app", "u", "s1", [entry("a cat"), entry("a dog", minute=1)])),
        ("replace with more", lambda: neo.add_session("app", "u", "s1", [entry(f"cat {i}", minute=i) for i in range(4)])),
        ("replace with fewer", lambda: neo.add_session("app", "u", "s1", [entry("one cat")])),
        ("add_sessions", lambda: neo.add_sessions("app", "u", {"s2": [entry("owls")], "s1": [entry("cats"), entry("x", minute=1)]})),
        ("to a project", lambda: neo.add_session_to_project("app", "u", "s3", "p", [entry("Atlas"), entry("Berlin", minute=1)])),
        ("replace in a project", lambda: neo.add_session_to_project("app", "u", "s3", "p", [entry("Atlas again")])),
        ("append", lambda: neo.append_to_session("app", "u", "s2", [entry("more owls", minute=5)])),
        ("append in a project", lambda: neo.append_to_session_in_project("app", "u", "s3", "p", [entry("later", minute=6)])),
        ("add_entry", lambda: neo.add_entry("app", "u", entry("a lone note"))),
        ("add_entry_to_project", lambda: neo.add_entry_to_project("app", "u", "q", entry("a project note"))),
        ("restore keeping ids", restore_keeping_ids),
        ("restore in a project", lambda: neo.restore_session("app", "u", None, [EntryRecord(entry("restored"))], project_id="q")),
        ("delete_entries", lambda: neo.delete_entries("app", "u", "owls")),
        ("delete_entries_in_project", lambda: neo.delete_entries_in_project("app", "u", "q", "restored")),
        ("delete_entry", delete_one),
        ("delete_entries_by_id", delete_by_ids),
        ("delete_session", lambda: neo.delete_session("app", "u", "s1")),
        ("delete_project", lambda: neo.delete_project("app", "u", "p")),
    ]
    for step, write in steps:
        await write()
        for app, user in owners:
            assert await counter(neo, app, user) == await stored_counts(neo, app, user), (step, app, user)
    for kept in await neo.list_entries("app", "u", all_projects=True):
        await neo.delete_entry("app", "u", kept.entry_id)
        assert await counter(neo, "app", "u") == await stored_counts(neo, "app", "u")
    assert await counter(neo, "app", "u") is None  # the last entry took the counter with it
    await neo.add_entry_to_project("app", "u", "p", entry("back again"))
    assert await counter(neo, "app", "u") == (1, 1)
    assert await neo.delete_user("app", "u") == 1
    assert await counter(neo, "app", "u") is None
    for app, user in owners[1:]:
        assert await counter(neo, app, user) == (3, 1)


async def test_a_failed_write_leaves_the_counter_as_it_was(neo: Any) -> None:
    """The counter is written in the write's own transaction: a write refused half-way
    (the unique constraint, after the old entries were deleted and new ones created) counts
    nothing."""
    from graphmem import EntryIdConflictError
    from graphmem._service import Owner

    await neo.add_session("app", "u", "s", [entry("the original words"), entry("two", minute=1)])
    (prepared,) = await neo._prepare([entry("replacement words")], session_id="s", project_id=None)
    with pytest.raises(EntryIdConflictError, match="nothing of this write was stored"):
        await neo._replace_session(Owner("app", "u"), None, "s", [prepared, prepared])
    assert await counter(neo, "app", "u") == (2, 0)
    # A first write of a user that fails leaves no counter either.
    (fresh,) = await neo._prepare([entry("new user words")], session_id="s", project_id=None)
    with pytest.raises(EntryIdConflictError, match="nothing of this write was stored"):
        await neo._replace_session(Owner("app", "w"), None, "s", [fresh, fresh])
    assert await counter(neo, "app", "w") is None
    assert await stored_counts(neo, "app", "w") is None


async def test_a_store_written_before_the_counter_searches_the_same_and_counts_on_its_next_write(
    neo: Any,
) -> None:
    """A store from schema version 1 has no counter nodes: searches count the entries
    themselves (the same statistics, so the same answers, small and pruned), and the next
    write of a user, whichever it is, counts its entries once and keeps them counted."""
    sessions = load_fixture_sessions()
    for s in sessions:
        if s["app_name"] == "companion" and s.get("project_id") is None:
            await neo.add_session(s["app_name"], s["user_id"], s["session_id"], fixture_entries(s))
    await neo.add_session_to_project("companion", "alice", "p1", "p", [entry("Maria moved to Porto")])
    queries = [(a, u, q) for a, u, q in PARITY_QUERIES if a == "companion"]

    async def answers() -> list[list[tuple[str, float]]]:
        found = []
        for full_at_most in (1200, 1):  # a small user's one read, and the pruned steps
            neo.full_gathering_entries = full_at_most
            found += [await ranked(neo, a, u, q) for a, u, q in queries]
        neo.full_gathering_entries = 1200
        return found

    counted = await answers()
    expected = {user: await counter(neo, "companion", user) for user in ("alice", "bob")}
    await neo.driver.execute_query("MATCH (c:GraphmemUser) DELETE c")  # as before version 2
    assert await answers() == counted
    # The next write counts: one that adds, and one that deletes.
    await neo.add_entry("companion", "alice", entry("a note"))
    assert await counter(neo, "companion", "alice") == await stored_counts(neo, "companion", "alice")
    assert await counter(neo, "companion", "alice") == (expected["alice"][0] + 1, 1)  # type: ignore[index]
    assert await counter(neo, "companion", "bob") is None
    bobs = await neo.list_entries("companion", "bob")
    assert await neo.delete_entry("companion", "bob", bobs[0].entry_id) == 1
    assert await counter(neo, "companion", "bob") == (expected["bob"][0] - 1, 0)  # type: ignore[index]


async def test_a_pruned_search_never_returns_an_entry_out_of_scope(neo: Any) -> None:
    """Postings skip the scope check when the counter says no entry is in a project; a
    project entry written meanwhile (here: the counter made to say so) may then be among
    the postings, but the neighbourhood read checks each holder it expands."""
    await neo.add_session("app", "u", "g", [entry(f"global words about kiwi {i}", minute=i) for i in range(6)])
    await neo.add_session_to_project("app", "u", "p", "proj", [entry("project words about kiwi and mango")])
    neo.full_gathering_entries = 1  # the pruned steps
    request = SearchRequest(app_name="app", user_id="u", query="kiwi mango", limit=10)
    before = [(h.entry_id, h.score) for h in (await neo.search(request)).hits]
    assert len(before) == 6
    await neo.driver.execute_query("MATCH (c:GraphmemUser) SET c.project_entries = 0")  # a racing write
    assert [(h.entry_id, h.score) for h in (await neo.search(request)).hits] == before
    in_project = SearchRequest(app_name="app", user_id="u", project_id="proj", query="kiwi mango", limit=10)
    assert "project words about kiwi and mango" in [m.text for m in (await neo.search(in_project)).memories]


# ---------------------------------------------------------------------- parity with networkx

PARITY_QUERIES = [
    ("companion", "alice", "where does my sister Maria live"),
    ("companion", "alice", "Biscuit limping paw vet"),
    ("companion", "alice", "Lisbon trip in April"),
    ("companion", "alice", "dark mode vegetarian preferences"),
    ("companion", "alice", "birthday present for my sister"),
    ("companion", "alice", "Japan 東京タワー"),
    ("companion", "bob", "Portland Marathon training"),
    ("companion", "bob", "Lily science fair"),
    ("companion", "bob", "coach Rachel Kim"),
    ("companion", "bob", "knee injury club run"),
    ("companion", "bob", "snacks for long runs"),
    ("workdesk", "alice", "Northwind Labs planning offsite"),
    ("workdesk", "alice", "performance review self-review May"),
    ("workdesk", "carol", "Berlin trip to meet Henrik"),
    ("workdesk", "carol", "meeting preferences focus time"),
    ("workdesk", "carol", "procurement Amsterdam office"),
    # A speaker named (speaker focus) and times named (the time weighs in).
    ("companion", "alice", "What did Alice say about her sister's move?"),
    ("companion", "bob", "What did Bob eat before his runs in January 2026?"),
    ("companion", "alice", "What happened with Biscuit on 14 February 2026?"),
    ("workdesk", "carol", "What did Carol plan last week?"),
]


def load_fixture_sessions() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURES.read_text(encoding="utf-8").splitlines() if line.strip()]


def fixture_entries(session: dict[str, Any]) -> list[MemoryEntry]:
    return [
        MemoryEntry(
            content=Content(role=e["role"], parts=[Part(text=e["text"])]),
            author=e["author"],
            timestamp=datetime.fromisoformat(e["timestamp"]),
        )
        for e in session["entries"]
    ]


async def ranked(svc: MemoryService, app: str, user: str, query: str) -> list[tuple[str, float]]:
    response = await svc.search(SearchRequest(app_name=app, user_id=user, query=query, limit=50))
    return [(h.memory.text, h.score) for h in response.hits]


def assert_same_ranking(expected: list[tuple[str, float]], actual: list[tuple[str, float]], query: str) -> None:
    assert [t for t, _ in actual] == [t for t, _ in expected], query
    for (_, want), (_, got) in zip(expected, actual, strict=True):
        assert got == pytest.approx(want, abs=1e-6), query


async def test_parity_with_networkx_on_the_demo_fixtures(neo: Any, decomposer: Decomposer) -> None:
    sessions = load_fixture_sessions()
    reference = GraphMemoryService(nlp=decomposer)
    for s in sessions:
        if s["project_id"] is None:
            await reference.add_session(s["app_name"], s["user_id"], s["session_id"], fixture_entries(s))
            await neo.add_session(s["app_name"], s["user_id"], s["session_id"], fixture_entries(s))

    nonempty = 0
    for app, user, query in PARITY_QUERIES:
        expected = await ranked(reference, app, user, query)
        nonempty += bool(expected)
        assert_same_ranking(expected, await ranked(neo, app, user, query), query)
    assert nonempty >= len(PARITY_QUERIES) - 1

    # Now the project sessions too (networkx cannot hold them). Users without projects rank
    # exactly as before; for the others, project entries count in the idf (N and df cover
    # every project, by design) but never appear in a global search.
    project_texts: set[str] = set()
    for s in sessions:
        if s["project_id"] is not None:
            await neo.add_session_to_project(
                s["app_name"], s["user_id"], s["session_id"], s["project_id"], fixture_entries(s)
            )
            project_texts.update(e["text"] for e in s["entries"])
    for app, user, query in PARITY_QUERIES:
        got = await ranked(neo, app, user, query)
        assert not {t for t, _ in got} & project_texts, query
        if app == "companion":
            assert_same_ranking(await ranked(reference, app, user, query), got, query)


# ---------------------------------------------------------------------- outage


@pytest.mark.slow
@pytest.mark.timeout(600)
async def test_outage_fails_fast_and_the_same_service_recovers(tmp_path: Path, decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    neo4j_uri_or_skip()  # the same gate as every Neo4j test
    if not (REPO / "scripts" / "neo4j").is_file():
        pytest.skip("scripts/neo4j is missing")
    server = PrivateNeo4j(tmp_path / "neo4j")
    server.start()
    svc = Neo4jMemoryService(server.uri, nlp=decomposer)
    impatient = Neo4jMemoryService(server.uri, nlp=decomposer, read_timeout=3.0)
    try:
        await svc.ensure_schema()
        await svc.add_session("app", "u", "s", [entry("Maria lives in Lisbon")])
        request = SearchRequest(app_name="app", user_id="u", query="Lisbon")
        assert (await svc.search(request)).memories

        # A server that accepts connections but never answers (frozen): reads time out.
        assert (await impatient.search(request)).memories
        os.kill(server.pid(), signal.SIGSTOP)
        try:
            # Bounded without a clock assert: a hang would end in asyncio's TimeoutError,
            # which pytest.raises(BackendUnavailableError) does not accept.
            with pytest.raises(BackendUnavailableError, match="did not answer"):
                await asyncio.wait_for(impatient.search(request), timeout=30)
        finally:
            os.kill(server.pid(), signal.SIGCONT)
        await impatient.health_check()

        server.stop()
        calls = {
            "health_check": svc.health_check,
            "search": lambda: svc.search(request),
            "add_entry": lambda: svc.add_entry("app", "u", entry("lost words")),
            "delete_user": lambda: svc.delete_user("app", "u"),
        }
        for _name, call in calls.items():
            with pytest.raises(BackendUnavailableError, match=re.escape(server.uri)):
                await asyncio.wait_for(call(), timeout=30)

        server.start()
        await svc.health_check()
        assert [m.text for m in (await svc.search(request)).memories] == ["Maria lives in Lisbon"]
        assert await svc.add_entry("app", "u", entry("back again")) is not None
    finally:
        await svc.close()
        await impatient.close()
        server.stop()


def test_one_service_serves_one_event_loop_after_another(decomposer: Decomposer) -> None:
    """An async driver's connections belong to the loop that opened them, and agents call
    a service from one loop after another (``asyncio.run`` per call; ADK's synchronous
    ``Runner.run`` makes a loop per turn). The second loop got "attached to a different
    loop" from inside the driver; a service that made its driver now makes one per loop."""
    from graphmem.backends.neo4j import Neo4jMemoryService

    uri = neo4j_uri_or_skip()
    svc = Neo4jMemoryService(uri, auth=neo4j_auth(), nlp=decomposer)
    request = SearchRequest(query="Where does Maria live?", app_name="loops", user_id="u")
    try:
        asyncio.run(svc.add_session("loops", "u", "s", [entry("Maria lives in Lisbon")]))
        for _ in range(2):  # a new loop each time, the first loop closed
            assert [m.text for m in asyncio.run(svc.search(request)).memories] == ["Maria lives in Lisbon"]
        asyncio.run(svc.add_entry("loops", "u", entry("Maria visits Porto")))
        assert len(asyncio.run(svc.list_entries("loops", "u"))) == 2
    finally:
        asyncio.run(svc.delete_user("loops", "u"))
        asyncio.run(svc.close())

    # A driver the caller gave stays theirs: another loop is a clear error, not the driver's.
    async def make() -> Any:
        from neo4j import AsyncGraphDatabase

        return AsyncGraphDatabase.driver(uri, auth=neo4j_auth())

    driver = asyncio.run(make())
    given = Neo4jMemoryService(driver=driver, nlp=decomposer)
    asyncio.run(given.health_check())
    with pytest.raises(GraphmemError, match="first used in another event loop"):
        asyncio.run(given.health_check())


async def test_unreachable_server_raises_backend_unavailable(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    # A port nothing listens on: refused at once.
    svc = Neo4jMemoryService("bolt://127.0.0.1:9", nlp=decomposer, retry_time=0.5)
    try:
        with pytest.raises(BackendUnavailableError, match="127.0.0.1:9"):
            await asyncio.wait_for(svc.health_check(), timeout=30)
        with pytest.raises(BackendUnavailableError, match="Check that Neo4j is running"):
            await asyncio.wait_for(svc.add_session("app", "u", "s", [entry("hello world")]), timeout=30)
    finally:
        await svc.close()


async def test_a_database_the_server_does_not_have_is_a_clear_error(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    uri = neo4j_uri_or_skip()
    svc = Neo4jMemoryService(uri, auth=neo4j_auth(), database="nosuchdb", nlp=decomposer)
    try:
        for call in (
            svc.health_check(),
            svc.search(SearchRequest(query="hello", app_name="app", user_id="u")),
            svc.add_session("app", "u", "s", [entry("hello world")]),
        ):
            with pytest.raises(BackendUnavailableError, match="no database named 'nosuchdb'"):
                await call
    finally:
        await svc.close()
    # The server's catalogue holds no graph: refused before any I/O.
    with pytest.raises(InvalidStoreUriError, match="'system'"):
        Neo4jMemoryService(uri, database="System", nlp=decomposer)
    with pytest.raises(InvalidStoreUriError, match="'system'"):
        await open_memory(f"{uri}?database=system", nlp=decomposer)


# ---------------------------------------------------------------------- concurrency


@pytest.mark.timeout(300)
async def test_concurrent_adds_and_searches_lose_nothing(neo: Any) -> None:
    users = ["u0", "u1", "u2"]
    vocabulary = "maria lisbon marathon coach billing postgres warehouse contoso biscuit pastry".split()

    async def worker(n: int) -> None:
        user = users[n % len(users)]
        for i in range(5):
            words = " ".join(vocabulary[(n + i + k) % len(vocabulary)] for k in range(4))
            await neo.add_session(
                "app", user, f"w{n}-s{i}", [entry(f"{words} {n} {i}", minute=i), entry(f"reply {words}", minute=i)]
            )
            await neo.add_entry("app", user, entry(f"note {words} {n}-{i}"))
            await neo.search(SearchRequest(app_name="app", user_id=user, query=words))

    await asyncio.gather(*(worker(n) for n in range(20)))

    for index, user in enumerate(users):
        workers = [n for n in range(20) if n % len(users) == index]
        stats = await neo.stats("app", user)
        assert stats.entries == len(workers) * 5 * 3
        assert stats.sessions == len(workers) * 5
        texts = {e.memory.text for e in await neo.list_entries("app", user, all_projects=True)}
        for n in workers:
            for i in range(5):
                assert any(t.endswith(f" {n} {i}") for t in texts)
                assert any(t.endswith(f" {n}-{i}") for t in texts)
    # MERGE on the unique constraints: never two nodes for one token.
    duplicates = await count(
        neo,
        "MATCH (t:Token) WITH t.app_name AS a, t.user_id AS u, t.value AS v, count(*) AS c WHERE c > 1 RETURN count(*)",
    )
    assert duplicates == 0


@pytest.mark.timeout(300)
async def test_bulk_adds_batch_transactions_and_keep_each_session_whole(
    neo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import graphmem.backends.neo4j as neo4j_module

    # Small batches: this call writes three transactions of up to two sessions each.
    monkeypatch.setattr(neo4j_module, "_ENTRIES_PER_TRANSACTION", 6)
    sessions = {f"s{i}": [entry(f"turn {j} of session {i} pelican", minute=j) for j in range(3)] for i in range(5)}
    await neo.add_sessions("app", "bulk", sessions)
    await neo.add_sessions("app", "bulk", {"s2": [entry("replaced pelican", minute=0)]})
    stats = await neo.stats("app", "bulk")
    assert (stats.entries, stats.sessions) == (13, 5)
    # NEXT links stay inside a session, in order, across transaction boundaries.
    chains = await neo.driver.execute_query(
        "MATCH (a:Entry {user_id: 'bulk'})-[:NEXT]->(b:Entry) RETURN a.session_id AS s, a.position AS p, b.session_id AS t, b.position AS q"
    )
    links = sorted((r["s"], r["p"], r["t"], r["q"]) for r in chains.records)
    assert links == sorted((f"s{i}", j, f"s{i}", j + 1) for i in (0, 1, 3, 4) for j in range(2))


@pytest.mark.timeout(300)
async def test_a_bulk_add_failing_in_a_later_transaction_says_which_sessions_it_stored(
    neo: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call of more entries than a transaction takes commits its sessions in several: when
    a later one fails (the server gone), the earlier sessions stay stored. The error used
    to say nothing of them, so the caller could not tell what to write again."""
    import graphmem.backends.neo4j as neo4j_module

    monkeypatch.setattr(neo4j_module, "_ENTRIES_PER_TRANSACTION", 6)
    real_batch = neo._replace_batch
    written: list[list[str]] = []

    async def second_transaction_fails(owner: Any, project_id: Any, batch: Any) -> None:
        if written:
            raise BackendUnavailableError("the server went away")
        await real_batch(owner, project_id, batch)
        written.append([session_id for session_id, _ in batch])

    monkeypatch.setattr(neo, "_replace_batch", second_transaction_fails)
    sessions = {f"s{i}": [entry(f"turn {j} of session {i} ibis", minute=j) for j in range(3)] for i in range(5)}
    with pytest.raises(BackendUnavailableError) as failed:
        await neo.add_sessions("app", "cut", sessions)
    assert written == [["s0", "s1"]]
    assert failed.value.__notes__ == [
        'written in transactions of up to 6 entries: the first 2 session(s) of this call were stored ("s0" ... "s1"), '
        "the others were not (each session is all or nothing)"
    ]
    stored = sorted({e.session_id for e in await neo.list_entries("app", "cut")})
    assert stored == ["s0", "s1"]


def test_bulk_batches_never_split_a_session_or_repeat_one() -> None:
    from graphmem.backends.neo4j import _batches

    def sessions(*spec: tuple[str, int]) -> list[tuple[str, list[int]]]:
        return [(name, list(range(size))) for name, size in spec]

    grouped = _batches(sessions(("a", 3), ("b", 3), ("c", 9), ("d", 1), ("a", 2)), 6)  # type: ignore[arg-type]
    assert [[name for name, _ in batch] for batch in grouped] == [["a", "b"], ["c"], ["d", "a"]]
    # The same session twice in one transaction would read its old entries once and keep
    # both new versions: a repeated id starts a new transaction.
    repeated = _batches(sessions(("a", 1), ("a", 1)), 6)  # type: ignore[arg-type]
    assert [[name for name, _ in batch] for batch in repeated] == [["a"], ["a"]]


async def test_concurrent_bulk_adds_of_the_same_sessions_never_duplicate(neo: Any) -> None:
    # Overlapping session sets in opposite orders: the locks are taken sorted, so neither
    # deadlocks for long, and each session ends up stored once.
    ids = [f"s{i}" for i in range(6)]

    async def load(order: list[str], tag: str) -> None:
        await neo.add_sessions("app", "race", {s: [entry(f"{tag} {s} heron"), entry(f"{tag} reply {s}")] for s in order})

    await asyncio.gather(*(load(ids if n % 2 else ids[::-1], f"w{n}") for n in range(6)))
    stats = await neo.stats("app", "race")
    assert (stats.entries, stats.sessions) == (12, 6)
    writers_by_session: dict[str | None, set[str]] = {}
    for stored in await neo.list_entries("app", "race"):
        writers_by_session.setdefault(stored.session_id, set()).add(stored.memory.text.split()[0])
    assert sorted(writers_by_session) == ids
    assert all(len(tags) == 1 for tags in writers_by_session.values())  # one writer's version, whole


async def test_concurrent_delete_and_add_sharing_terms(neo: Any) -> None:
    """A delete that orphans a term races an add that links to it: no error, no lost link."""
    orphans = "MATCH (n) WHERE (n:Token OR n:Entity) AND NOT EXISTS { (n)<--() } RETURN count(n)"
    for i in range(12):
        await neo.add_entry("app", "u", entry(f"zebra quagga in Lisbon first{i}"))
        await asyncio.gather(
            neo.delete_entries("app", "u", f"first{i}"),
            neo.add_entry("app", "u", entry(f"zebra quagga in Lisbon second{i}")),
        )
        linked = await count(
            neo,
            "MATCH (e:Entry {text: $t})-[:HAS_TOKEN|MENTIONS]->(n) RETURN count(n)",
            t=f"zebra quagga in Lisbon second{i}",
        )
        assert linked >= 4, i  # zebra, quagga, lisbon, second<i> (+ the entity lisbon)
        assert await count(neo, orphans) == 0
        assert await neo.delete_user("app", "u") == 1


# ---------------------------------------------------------------------- hostile input

HOSTILE = [
    "it's \"quoted\" `back` ticks",
    "}) MATCH (n) DETACH DELETE n //",
    "'; MATCH (n) DETACH DELETE n; //",
    "RETURN 1 UNION MATCH (x) RETURN x",
    "title:(foo AND bar) OR baz~2 && qux* ?wild",
    "${app_name} $user_id \\u0027 \\'",
]


async def test_hostile_ids_and_text_are_plain_text(neo: Any) -> None:
    for i, hostile in enumerate(HOSTILE):
        app, user = f"app{hostile}", f"user}} {i}"
        await neo.add_session(app, user, hostile, [entry(f"{hostile} marker{i}"), entry(f"reply to {hostile}")])
        await neo.add_session_to_project(app, user, hostile, f"proj {hostile}", [entry(f"project {hostile} marker{i}")])
    assert await count(neo, "MATCH (e:Entry) RETURN count(e)") == 3 * len(HOSTILE)

    for i, hostile in enumerate(HOSTILE):
        app, user = f"app{hostile}", f"user}} {i}"
        response = await neo.search(SearchRequest(app_name=app, user_id=user, query=f"{hostile} marker{i}"))
        assert response.memories[0].text == f"{hostile} marker{i}"
        assert response.hits[0].session_id == hostile
        scoped = await neo.search(
            SearchRequest(app_name=app, user_id=user, query=f"marker{i}", project_id=f"proj {hostile}")
        )
        assert f"project {hostile} marker{i}" in {m.text for m in scoped.memories}
        assert await neo.delete_entries_in_project(app, user, f"proj {hostile}", f"marker{i}") == 1
        assert await neo.delete_session(app, user, hostile) == 2
    assert await count(neo, "MATCH (n) RETURN count(n)") == 0


async def test_very_long_text_and_ids(neo: Any) -> None:
    long_text = "needle " + "haystack " * 5_000 + "}) // ` ' \""
    long_id = "x'}`" * 64  # 256 characters, the longest id allowed
    await neo.add_session(long_id, long_id, long_id, [entry(long_text)])
    response = await neo.search(SearchRequest(app_name=long_id, user_id=long_id, query=f"needle {long_text[:2000]}"))
    assert [m.text for m in response.memories] == [long_text]
    assert response.hits[0].session_id == long_id


# ---------------------------------------------------------------------- construction


async def test_an_existing_driver_is_used_and_not_closed(decomposer: Decomposer) -> None:
    import neo4j

    from graphmem.backends.neo4j import Neo4jMemoryService

    driver = neo4j.AsyncGraphDatabase.driver(neo4j_uri_or_skip(), auth=neo4j_auth())
    try:
        async with Neo4jMemoryService(driver=driver, nlp=decomposer) as svc:
            assert svc.driver is driver
            assert svc.supports_project_scoping()
            await svc.ensure_schema()
            await svc.health_check()
            await svc.add_session("drv", "u", "s", [entry("driver supplied by the caller")])
            assert (await svc.list_recent("drv", "u"))[0].text == "driver supplied by the caller"
            await svc.delete_user("drv", "u")
        await svc.close()  # idempotent
        with pytest.raises(BackendUnavailableError, match="closed"):
            await svc.health_check()
        # The caller's driver is still open.
        await driver.verify_connectivity()
    finally:
        await driver.close()


async def test_a_call_running_when_the_service_closes_says_it_was_closed_not_that_neo4j_is_down(
    decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call that passed the "closed?" check before close() closed the driver met a closed
    driver, and was told to check that Neo4j runs, and that the service reconnects."""
    from graphmem.backends.neo4j import Neo4jMemoryService

    svc = Neo4jMemoryService(neo4j_uri_or_skip(), auth=neo4j_auth(), nlp=decomposer)
    await svc.health_check()
    await svc.close()
    monkeypatch.setattr(svc, "_check_open", lambda: None)  # it passed the check before close()
    with pytest.raises(BackendUnavailableError) as raised:
        await svc.search(SearchRequest(query="where does Rex play?", app_name="closing", user_id="u"))
    assert "was closed while the call ran" in str(raised.value) and "reconnects" not in str(raised.value)


def test_constructor_does_no_io(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    # Nothing listens there; construction must still succeed at once.
    Neo4jMemoryService("bolt://127.0.0.1:9", nlp=decomposer)
    with pytest.raises(ValueError):
        Neo4jMemoryService(nlp=decomposer)


# ---------------------------------------------------------------------- packaging


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wheel_ships_every_cypher_file(tmp_path: Path) -> None:
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("graphmem-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {f"graphmem/cypher/{p.name}" for p in CYPHER_DIR.glob("*.cypher")}
    assert expected and expected <= names
    assert "graphmem/_data/related_words.npz" in names  # the table a search reads

    # Installed (here: unpacked) the package loads its queries from inside itself.
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import graphmem._cypher as c, graphmem._related as r; print(c._folder()); "
            "print(len(c.load_cypher('neighbourhood'))); print(len(r.load_related_words()))",
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(unpacked)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    folder, size, words = probe.stdout.split()
    assert Path(folder) == unpacked / "graphmem" / "cypher"
    shipped = load_related_words()
    assert int(size) > 0 and shipped is not None and int(words) == len(shipped) > 10_000
