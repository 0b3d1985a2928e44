"""scripts/neo4j, the embedded server's launcher: whose server a state dir names, which
store a start is answered with, and who may read the store on disk."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, PrivateNeo4j, neo4j_uri_or_skip

pytestmark = [pytest.mark.neo4j, pytest.mark.slow]

SCRIPT = str(REPO / "scripts" / "neo4j")


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, *args], env=env, capture_output=True, text=True, timeout=300)


def _private(path: Path) -> bool:
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


@pytest.mark.timeout(600)
def test_a_state_dir_names_only_its_own_server_and_store(tmp_path: Path) -> None:
    neo4j_uri_or_skip()  # the same gate as every Neo4j test
    server = PrivateNeo4j(tmp_path / "neo4j")
    server.start()
    try:
        # The store holds erased text until its pages are reused: no other local user may
        # read it (it was created under the caller's umask, 755 / 644).
        assert _private(tmp_path / "neo4j") and _private(server.data)

        # A start asking for another store (a temporary one, another dir) is refused; it
        # used to be answered with this server's URI: a test suite asking for a throwaway
        # store deletes everything in what it gets.
        for request in ({"GRAPHMEM_NEO4J_DATA": ""}, {"GRAPHMEM_NEO4J_DATA": str(tmp_path / "other")}):
            done = _run({**server.env, **request}, "start")
            assert done.returncode == 1 and "already running" in done.stderr and server.uri not in done.stdout
        assert _run(server.env, "start").stdout.strip().splitlines()[-1] == server.uri  # the same store: its URI
        # An empty --data= is no value (a temporary store was made of it, deleted on stop).
        done = _run(server.env, "start", "--data=")
        assert done.returncode == 1 and "--data needs a value" in done.stderr

        # Another state dir whose pid file names this server (a pid reused after a crash or
        # a reboot) does not take it for its own: not running, and its stop kills nothing.
        other = tmp_path / "other-state"
        other.mkdir()
        (other / "neo4j.pid").write_text(f"{server.pid()}\n")
        (other / "neo4j.uri").write_text("bolt://127.0.0.1:1\n")
        other_env = {**server.env, "GRAPHMEM_NEO4J_HOME": str(other)}
        assert _run(other_env, "status").returncode == 3
        assert _run(other_env, "stop").returncode == 0
        # Nor does a process whose command line cannot be read (a kernel thread) or another
        # program: both used to be "starting", then killed by stop.
        for pid in (os.getpid(), 2):
            (other / "neo4j.pid").write_text(f"{pid}\n")
            assert _run(other_env, "status").returncode == 3
        assert _run(server.env, "status").returncode == 0  # still up
    finally:
        server.stop()
    assert _run(server.env, "status").returncode == 3


@pytest.mark.timeout(600)
def test_the_server_groups_every_nodes_relationships_by_type(tmp_path: Path) -> None:
    """A search walks its candidates' NEXT links: with the relationships of an entry grouped
    by type, that walk does not read its HAS_TOKEN and MENTIONS links too (README, Neo4j)."""
    from neo4j import GraphDatabase

    neo4j_uri_or_skip()  # the same gate as every Neo4j test
    server = PrivateNeo4j(tmp_path / "neo4j")
    server.start()
    try:
        with GraphDatabase.driver(server.uri) as driver:
            records, _, _ = driver.execute_query(
                "SHOW SETTINGS YIELD name, value WHERE name = 'db.relationship_grouping_threshold' RETURN value"
            )
        assert [r["value"] for r in records] == ["1"]
    finally:
        server.stop()


def test_without_a_home_the_state_dir_must_be_named() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_DATA_HOME", "GRAPHMEM_NEO4J_HOME")}
    done = _run(env, "status")
    assert done.returncode == 1 and "GRAPHMEM_NEO4J_HOME" in done.stderr and "unbound" not in done.stderr
