"""``open_memory``: one factory opens every store from its URI, ready to use."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from conftest import REPO, in_ci, neo4j_uri_or_skip
from graphmem import (
    BackendUnavailableError,
    Content,
    Decomposer,
    GraphmemError,
    GraphMemoryService,
    InvalidStoreUriError,
    MemoryEntry,
    MemoryService,
    ReadOnlyStoreError,
    ScoringWeights,
    SearchRequest,
    StoreLockedError,
    open_memory,
)
from graphmem._open import neo4j_store_uri, parse_store_uri, redact_uri


def entry(text: str) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author="Ann")


async def remember_and_recall(service: MemoryService, user: str = "ann") -> list[str]:
    await service.add_session("app", user, "s1", [entry("My sister Maria moved to Lisbon.")])
    response = await service.search(SearchRequest(query="Where is Maria?", app_name="app", user_id=user))
    return [hit.memory.text for hit in response.hits]


@pytest.fixture(params=["networkx-file", "neo4j"])
async def store_uri(request: pytest.FixtureRequest, tmp_path: Path, decomposer: Decomposer) -> AsyncIterator[str]:
    """A store URI of each backend, its user "ann" empty."""
    if request.param == "networkx-file":
        yield (tmp_path / "memory.journal").as_uri()
        return
    uri = neo4j_uri_or_skip()
    service = await open_memory(uri, nlp=decomposer)
    await service.delete_user("app", "ann")
    await service.close()
    yield uri


# ---------------------------------------------------------------------------- both backends


async def test_open_write_close_reopen_and_recall(store_uri: str, decomposer: Decomposer) -> None:
    service = await open_memory(store_uri, nlp=decomposer)
    try:
        assert await remember_and_recall(service) == ["My sister Maria moved to Lisbon."]
    finally:
        await service.close()
    # Opened again, as a reader: what was written is there, and schema setup ran twice.
    async with await open_memory(store_uri, nlp=decomposer, read_only=True) as again:
        assert (await again.stats("app", "ann")).entries == 1


async def test_the_graphmem_prefix_opens_the_same_store(store_uri: str, decomposer: Decomposer) -> None:
    async with await open_memory(store_uri, nlp=decomposer) as service:
        await remember_and_recall(service)
    async with await open_memory("graphmem+" + store_uri, nlp=decomposer, read_only=True) as service:
        assert (await service.stats("app", "ann")).entries == 1


async def test_read_only_refuses_writes_on_a_journal(tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "memory.journal"
    async with await open_memory(path, nlp=decomposer) as writer:
        await remember_and_recall(writer)
        # A second writer is refused while the first holds the store; a reader is not.
        with pytest.raises(StoreLockedError):
            await open_memory(str(path), nlp=decomposer)
        async with await open_memory(str(path), nlp=decomposer, read_only=True) as reader:
            with pytest.raises(ReadOnlyStoreError):
                await reader.add_session("app", "ann", "s2", [entry("never written")])
            assert (await reader.stats()).entries == 1


# ---------------------------------------------------------------------------- networkx URIs


@pytest.mark.parametrize("form", ["plain", "path", "file-uri", "prefixed"])
async def test_every_form_of_a_journal_uri(form: str, tmp_path: Path, decomposer: Decomposer) -> None:
    path = tmp_path / "a dir" / "memory.journal"  # a space: percent-encoded in the file: URI
    uri: str | Path = {
        "plain": str(path),
        "path": path,
        "file-uri": path.as_uri(),
        "prefixed": "graphmem+" + path.as_uri(),
    }[form]
    async with await open_memory(uri, nlp=decomposer) as service:
        assert isinstance(service, GraphMemoryService)
        await remember_and_recall(service)
    assert path.is_file()


async def test_memory_uri_is_in_memory(decomposer: Decomposer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    async with await open_memory("memory:", nlp=decomposer) as service:
        assert await remember_and_recall(service)
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(InvalidStoreUriError, match="read-only"):
        await open_memory("memory:", nlp=decomposer, read_only=True)


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("uri", "message"),
    [
        ("postgres://ann:hunter2@db/memory", "unknown store scheme 'postgres:'"),
        ("redis:", "unknown store scheme 'redis:'"),
        ("", "empty"),
        ("bolt://", "names no host"),
        ("bolt://ann:hunter2@host:port", "not a valid Neo4j URI"),
        ("bolt://ann:hunter2@host?db=x", "unknown option 'db'"),
        ("bolt://host?replica_max_entries=-1", "as a whole number"),
        ("bolt://host?replica_min_entries=lots", "as a whole number"),
        ("bolt://host?replica_max_entries=1&replica_max_entries=2", "once"),
        ("file://elsewhere/memory.journal", "on this machine"),
        ("memory:somewhere", "takes nothing"),
        ("file:///tmp/x%00y.journal", "NUL character"),
        ("/tmp/a\x00b.journal", "NUL character"),
        ("/tmp/graphmem-not-yet-a-folder/", "ends with a slash"),
        ("file:///tmp/graphmem-not-yet-a-folder/", "ends with a slash"),
        # A password holding an unencoded / ? # (generated ones do) ended the parser's host
        # part early: the URI was shown whole, and its port error quoted part of it.
        ("bolt://neo4j:hunter2/pQ#7zz@127.0.0.1:7687", "not a valid Neo4j URI"),
        ("bolt://neo4j:hunter2?x@127.0.0.1:7687", "not a valid Neo4j URI"),
        # ... and when digits before it passed for a port, the rest was read as an option,
        # a path or a fragment, and the unknown option's name was quoted.
        ("bolt://neo4j:2024?hunter2@127.0.0.1:7687", "percent-encoded"),
        ("neo4j://neo4j:2024?hunter2@db.example.com:7687?database=neo4j", "percent-encoded"),
        ("bolt://neo4j:2024/hunter2@127.0.0.1:7687", "percent-encoded"),
        ("bolt://neo4j:2024#hunter2@127.0.0.1:7687", "percent-encoded"),
        ("file://neo4j:hunter2@host/x.journal", "on this machine"),
        # A path or fragment was dropped: bolt://host/mydb opened the default database.
        ("bolt://ann:hunter2@127.0.0.1:7687/mydb", "no path or #fragment"),
        ("neo4j://ann:hunter2@127.0.0.1:7687#primary", "no path or #fragment"),
        # The scheme forgotten ("neo4j" then reads as one) or written without its "//".
        ("neo4j:hunter2@127.0.0.1:7687", "bolt://user:password@host:7687"),
        ("bolt:/neo4j:hunter2@127.0.0.1:7687", "names no host"),
        ("bolt:neo4j:hunter2@127.0.0.1:7687", "names no host"),
        # A password put in an option.
        ("bolt://127.0.0.1:7687?password=hunter2", "unknown option 'password'"),
        ("bolt://ann:x@127.0.0.1:7687?database=db&auth=hunter2", "unknown option 'auth'"),
    ],
)
async def test_a_bad_uri_is_one_clear_error_without_the_password(uri: str, message: str) -> None:
    with pytest.raises(InvalidStoreUriError) as raised:
        await open_memory(uri)
    text = str(raised.value)
    assert message in text and "hunter2" not in text and "\n" not in text
    assert "hunter2" not in redact_uri(uri)


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc, where nothing can be made")
async def test_a_journal_the_file_system_will_not_make_is_an_os_error_naming_the_file(decomposer: Decomposer) -> None:
    """As the README and open_memory's docstring say: not InvalidStoreUriError (the URI is
    right), an OSError that names what could not be made."""
    with pytest.raises(OSError) as raised:
        await open_memory("/proc/graphmem-nowhere/memory.journal", nlp=decomposer)
    assert not isinstance(raised.value, GraphmemError)
    assert raised.value.filename is not None and "/proc/graphmem-nowhere" in str(raised.value.filename)


async def test_a_directory_or_a_path_under_a_file_is_refused(tmp_path: Path, decomposer: Decomposer) -> None:
    with pytest.raises(InvalidStoreUriError, match="is a directory"):
        await open_memory(tmp_path, nlp=decomposer)
    a_file = tmp_path / "plain.txt"
    a_file.write_text("x")
    with pytest.raises(GraphmemError, match="plain.txt/memory.journal.*Not a directory"):
        await open_memory(a_file / "memory.journal", nlp=decomposer)
    assert a_file.read_text() == "x"


async def test_an_unreachable_server_names_the_uri_without_its_password(decomposer: Decomposer) -> None:
    # Port 9 (discard) on this machine: nothing answers Bolt there.
    with pytest.raises(BackendUnavailableError) as raised:
        await open_memory("bolt://ann:hunter2@127.0.0.1:9", nlp=decomposer, retry_time=0.5, connection_timeout=1.0)
    text = str(raised.value)
    assert "cannot reach Neo4j at bolt://ann:***@127.0.0.1:9" in text
    assert "hunter2" not in text


async def test_the_factory_sets_up_the_neo4j_schema(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import SCHEMA_VERSION, Neo4jMemoryService

    uri = neo4j_uri_or_skip()
    service = await open_memory(uri, nlp=decomposer)
    assert isinstance(service, Neo4jMemoryService)
    try:
        await service.driver.execute_query("DROP INDEX graphmem_v1_entry_owner IF EXISTS")
        assert await service.ensure_schema() == SCHEMA_VERSION  # put back by hand, then by the factory
        await service.driver.execute_query("DROP INDEX graphmem_v1_entry_owner IF EXISTS")
    finally:
        await service.close()
    async with await open_memory(uri, nlp=decomposer) as again:
        assert isinstance(again, Neo4jMemoryService)
        records, _, _ = await again.driver.execute_query("SHOW INDEXES YIELD name RETURN collect(name) AS names")
        assert "graphmem_v1_entry_owner" in records[0]["names"]


async def test_the_database_comes_from_the_uri(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    async with await open_memory(neo4j_uri_or_skip() + "?database=neo4j", nlp=decomposer) as service:
        assert isinstance(service, Neo4jMemoryService) and service.database == "neo4j"


# ---------------------------------------------------------------------------- parsing


def test_credentials_and_database_are_read_from_the_uri() -> None:
    store = parse_store_uri("graphmem+bolt://ann:p%40ss%3Aword@127.0.0.1:7687?database=memories")
    assert (store.kind, store.neo4j_uri, store.user, store.password, store.database) == (
        "neo4j", "bolt://127.0.0.1:7687", "ann", "p@ss:word", "memories",
    )
    assert "p@ss" not in store.display and "***" in store.display


def test_copy_settings_are_read_from_the_uri_and_kept_beside_a_database() -> None:
    store = parse_store_uri("bolt://127.0.0.1:7687?replica_max_entries=0&replica_min_entries=20000")
    assert dict(store.settings) == {"replica_max_entries": 0, "replica_min_entries": 20000}
    uri = neo4j_store_uri("bolt://127.0.0.1:7687?replica_max_entries=0&database=old", database="new")
    store = parse_store_uri(uri)
    assert (store.database, dict(store.settings)) == ("new", {"replica_max_entries": 0})


async def test_copy_settings_in_the_uri_reach_the_service(decomposer: Decomposer) -> None:
    from graphmem.backends.neo4j import Neo4jMemoryService

    uri = neo4j_uri_or_skip() + "?replica_min_entries=7&replica_max_entries=0"
    async with await open_memory(uri, nlp=decomposer) as service:
        assert isinstance(service, Neo4jMemoryService)
        assert (service._replicas.min_entries, service._replicas.max_entries) == (7, 0)


@pytest.mark.parametrize(
    ("uri", "shown"),
    [
        ("neo4j:hunter2@127.0.0.1:7687", "neo4j:***@127.0.0.1:7687"),
        ("bolt://127.0.0.1:7687?database=db&replica_min_entries=5&password=hunter2", "bolt://127.0.0.1:7687?database=db&replica_min_entries=5&password=***"),
        # What holds no password is shown as it is: a path with an "@", a drive letter.
        ("/tmp/notes@home/memory.journal", "/tmp/notes@home/memory.journal"),
        ("C:\\notes@home\\memory.journal", "C:\\notes@home\\memory.journal"),
        ("bolt://ann@127.0.0.1:7687", "bolt://ann@127.0.0.1:7687"),
    ],
)
def test_what_a_message_shows_of_a_uri(uri: str, shown: str) -> None:
    assert redact_uri(uri) == shown


def test_cli_settings_map_to_a_uri_and_back() -> None:
    uri = neo4j_store_uri("bolt://127.0.0.1:7687", user="ann", password="p@ss/word", database="db")
    store = parse_store_uri(uri)
    assert (store.user, store.password, store.database, store.neo4j_uri) == ("ann", "p@ss/word", "db", "bolt://127.0.0.1:7687")
    assert redact_uri(uri) == "bolt://ann:***@127.0.0.1:7687?database=db"


def test_the_uri_credentials_are_kept_unless_the_settings_override_them() -> None:
    """``--neo4j-uri bolt://alice:secret@host`` without ``--neo4j-password`` connected as
    ``neo4j`` without a password: the URI's credentials were dropped."""
    from graphmem.cli._context import Settings

    def credentials(uri: str, user: str | None, password: str | None) -> tuple[str | None, str | None]:
        store = parse_store_uri(neo4j_store_uri(uri, user=user, password=password))
        return store.user, store.password

    written = "bolt://alice:s%40cret@127.0.0.1:7687"
    assert credentials(written, None, None) == ("alice", "s@cret")
    assert credentials(written, "neo4j", None) == ("alice", "s@cret")  # the CLI's default user overrides nothing
    assert credentials(written, "bob", None) == ("bob", "s@cret")
    assert credentials(written, "neo4j", "other") == ("alice", "other")
    assert credentials(written, "bob", "other") == ("bob", "other")
    assert credentials("bolt://alice@127.0.0.1:7687", "neo4j", None) == ("alice", None)
    assert credentials("bolt://127.0.0.1:7687", "neo4j", None) == (None, None)
    assert credentials("bolt://127.0.0.1:7687", "neo4j", "pw") == ("neo4j", "pw")
    cli = Settings(backend="neo4j", store=None, neo4j_uri=written, neo4j_user="neo4j", neo4j_password=None,
                   neo4j_database=None)
    store = parse_store_uri(cli.target())
    assert (store.user, store.password) == ("alice", "s@cret")
    assert "cret" not in cli.describe()


@pytest.mark.parametrize("port", ["99999", "-1", "65536"])
def test_a_port_out_of_range_says_so_without_the_password(port: str) -> None:
    with pytest.raises(InvalidStoreUriError, match="port must be a number from 0 to 65535") as raised:
        parse_store_uri(f"bolt://ann:hunter2@127.0.0.1:{port}")
    assert "hunter2" not in str(raised.value)
    with pytest.raises(InvalidStoreUriError, match="its port is no number"):
        parse_store_uri("bolt://ann:hunter2@127.0.0.1:77x")


@pytest.mark.parametrize("uri", ["bolt://ann:hun[ter2@127.0.0.1:7687", "bolt://[::1", "bolt://ann:hunter2]@127.0.0.1"])
def test_an_unencoded_bracket_is_an_invalid_uri_without_the_password(uri: str) -> None:
    """The parser's ValueError ("Invalid IPv6 URL") escaped as it was, from inside the handler
    that words the refusal."""
    with pytest.raises(InvalidStoreUriError, match=r"unencoded \[ or \]") as raised:
        parse_store_uri(uri)
    assert "hunter2" not in str(raised.value) and "ter2" not in str(raised.value)


def test_a_service_built_with_credentials_in_its_uri_refuses_them_without_the_password() -> None:
    """The driver refused them with the password in its message; open_memory reads them."""
    from graphmem import Neo4jMemoryService

    with pytest.raises(InvalidStoreUriError, match=r"auth=\(user, password\)") as raised:
        Neo4jMemoryService("bolt://neo4j:s3cretpw@127.0.0.1:7687")
    assert "s3cretpw" not in str(raised.value)
    assert parse_store_uri("bolt://neo4j:s3cretpw@127.0.0.1:7687").password == "s3cretpw"


async def test_related_words_from_the_factory_or_the_environment(
    decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRAPHMEM_RELATED_WORDS", raising=False)
    assert (await open_memory("memory:", nlp=decomposer)).weights.related_words  # on by default
    assert not (await open_memory("memory:", nlp=decomposer, related_words=False)).weights.related_words
    kept = ScoringWeights(context_share=0.5, related_words=False)
    assert not (await open_memory("memory:", nlp=decomposer, weights=kept)).weights.related_words
    opened = await open_memory("memory:", nlp=decomposer, weights=kept, related_words=True)
    assert opened.weights.related_words and opened.weights.context_share == 0.5
    monkeypatch.setenv("GRAPHMEM_RELATED_WORDS", "off")
    assert not (await open_memory("memory:", nlp=decomposer)).weights.related_words
    assert (await open_memory("memory:", nlp=decomposer, related_words=True)).weights.related_words
    monkeypatch.setenv("GRAPHMEM_RELATED_WORDS", "yes")
    assert (await open_memory("memory:", nlp=decomposer, weights=kept)).weights.related_words
    monkeypatch.setenv("GRAPHMEM_RELATED_WORDS", "sometimes")
    with pytest.raises(ValueError, match="GRAPHMEM_RELATED_WORDS"):
        await open_memory("memory:", nlp=decomposer)


@pytest.mark.parametrize("database", ["", "  ", 5])
def test_a_database_that_names_none_is_refused(database: object, decomposer: Decomposer) -> None:
    # ``database=5`` was a raw AttributeError; ``""`` was taken (the URI form refuses it).
    from graphmem.backends.neo4j import Neo4jMemoryService

    with pytest.raises(InvalidStoreUriError, match="database must be a database's name"):
        Neo4jMemoryService("bolt://127.0.0.1:9", database=database, nlp=decomposer)  # type: ignore[arg-type]


def test_the_readme_snippet_opening_each_store_runs_as_a_script(tmp_path: Path) -> None:
    """It awaited at the top level: a SyntaxError when run as written. Run here with the
    journal in a temporary folder, and the Neo4j line on the tests' Neo4j (``memory:``
    where the tests have none, outside CI)."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Opening a store (URIs)", 1)[1].split("\n## ", 1)[0]
    [snippet] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    example = "bolt://neo4j:secret@127.0.0.1:7687?database=neo4j"
    assert example in snippet and "/data/memory.journal" in snippet
    neo4j = neo4j_uri_or_skip() if in_ci() or os.environ.get("GRAPHMEM_NEO4J_URI") else "memory:"
    journal = tmp_path / "memory.journal"
    script = tmp_path / "snippet.py"
    script.write_text(snippet.replace(example, neo4j).replace("/data/memory.journal", str(journal)), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO)}, stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 4 and journal.exists()
