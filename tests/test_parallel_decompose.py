"""Decomposition in worker processes (``Decomposer(n_process=2)``).

Real spaCy pipelines in real worker processes: the workers must give exactly what this
process gives, be reused, stop on ``close()`` and at interpreter exit, and fail loudly
without storing anything. Worker processes are found through
``multiprocessing.active_children()``, which lists every process this one started.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path

import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc

from conftest import BACKENDS, make_neo4j_service
from graphmem import (
    Content,
    Decomposer,
    DecompositionError,
    GraphMemoryService,
    MemoryEntry,
    MemoryService,
)

BATCH = 16  # small, so that a batch of a few dozen texts already goes to the workers


def demo_texts() -> list[str]:
    """Every entry text of the demo fixtures: ordinary conversation with names and places."""
    lines = (files("graphmem") / "_data" / "demo_fixtures.jsonl").read_text(encoding="utf-8").splitlines()
    return [entry["text"] for line in lines if line.strip() for entry in json.loads(line)["entries"]]


def varied_texts() -> list[str]:
    long_text = " ".join(
        f"Day {i}: Maria Lopez met Dr. Chen at the Louvre in Paris and they talked about Google, "
        f"the Paris Agreement and {i % 7} paintings."
        for i in range(1_200)
    )
    assert len(long_text) > 100_000  # longer than spaCy's max_length: decomposed in pieces
    return [
        *demo_texts(),
        "東京タワーに行きました。とても楽しかった！",
        "我在北京大学学习中文。",
        "서울에서 친구를 만났어요.",
        "Mixed: I flew from 東京 to Berlin with Angela Merkel's biographer.",
        "",
        " ",
        "...",
        "🙂🙂🙂",
        "a",
        "the of and",
        "zero\u200bwidth\u00a0space and NFD cafe\u0301 in São Paulo",
        long_text,
        "We moved to the US in May; IT support at NASA is great.",
    ]


def children() -> set[multiprocessing.process.BaseProcess]:
    return set(multiprocessing.active_children())


@pytest.fixture(scope="module")
def parallel() -> Iterator[Decomposer]:
    """Two workers on the default pipeline, shared by the tests of this module."""
    with Decomposer(n_process=2, batch_size=BATCH) as decomposer:
        yield decomposer


def test_workers_decompose_exactly_like_this_process(decomposer: Decomposer, parallel: Decomposer) -> None:
    texts = varied_texts()
    in_workers = parallel.decompose_many(texts)
    assert parallel.uses_workers and len(children()) >= 2
    # The same pipeline, and every text in its language's (as the workers route them).
    here = Decomposer(decomposer.nlp, batch_size=BATCH, language="auto").decompose_many(texts)
    assert in_workers == here
    # Not trivially equal: the batch holds entities, CJK grams and the long text's terms.
    assert any(d.entities for d in here)
    assert "東京" in here[len(demo_texts())].tokens
    assert {"maria lopez", "paris"} <= {e.name for e in here[-2].entities}


def test_the_workers_are_reused_across_calls(parallel: Decomposer) -> None:
    texts = demo_texts()
    first = parallel.decompose_many(texts)
    workers = {p.pid for p in children()}
    assert len(workers) >= 2
    second = parallel.decompose_many(list(reversed(texts)))
    assert {p.pid for p in children()} == workers
    assert second == list(reversed(first))


def test_small_batches_and_queries_stay_in_this_process(decomposer: Decomposer) -> None:
    with Decomposer(n_process=2, batch_size=BATCH) as fresh:
        before = children()
        session = demo_texts()[:BATCH]
        assert fresh.decompose_many(session) == decomposer.decompose_many(session)
        assert fresh.decompose_query("Where does Maria live?") == decomposer.decompose_query("Where does Maria live?")
        assert children() == before


def test_close_stops_the_workers_and_the_decomposer_stays_usable(decomposer: Decomposer) -> None:
    texts = demo_texts()
    fresh = Decomposer(n_process=2, batch_size=BATCH)
    before = children()
    fresh.start_workers()
    workers = children() - before
    assert len(workers) == 2
    fresh.close()
    assert not any(p.is_alive() for p in workers)
    assert children() == before
    fresh.close()  # idempotent
    # A later large batch starts new workers.
    assert fresh.decompose_many(texts) == decomposer.decompose_many(texts)
    assert len(children() - before) == 2
    fresh.close()
    assert children() == before


@pytest.mark.slow
def test_no_worker_outlives_the_interpreter(tmp_path: Path) -> None:
    script = tmp_path / "bulk.py"
    script.write_text(
        textwrap.dedent(
            """
            import multiprocessing
            from graphmem import Decomposer

            if __name__ == "__main__":
                decomposer = Decomposer(n_process=2, batch_size=4)
                decomposer.start_workers()
                decomposer.decompose_many(["Maria lives in Lisbon."] * 20)
                print(" ".join(str(p.pid) for p in multiprocessing.active_children()))
                # no close(): the interpreter exits with the workers running
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]), *sys.path])}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.split()]
    assert len(pids) == 2
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_a_worker_that_dies_is_reported_and_replaced(decomposer: Decomposer) -> None:
    texts = demo_texts()
    with Decomposer(n_process=2, batch_size=BATCH) as fresh:
        before = children()
        fresh.start_workers()
        workers = children() - before
        for process in workers:  # as the out-of-memory killer would
            assert process.pid is not None
            os.kill(process.pid, signal.SIGKILL)
            process.join()
        with pytest.raises(DecompositionError, match="stopped unexpectedly"):
            fresh.decompose_many(texts)
        # The next call starts new workers and works.
        assert fresh.decompose_many(texts) == decomposer.decompose_many(texts)
        assert not (children() - before) & workers


# ---------------------------------------------------------------------------- a worker that fails

_COMPONENT = "graphmem_test_only_in_the_parent"


@Language.component(_COMPONENT)
def _only_in_the_parent(doc: Doc) -> Doc:
    # Registered by this test module only: a spawned worker cannot load a pipeline that
    # uses it, as with a custom component an application registers in its own script.
    return doc


@pytest.fixture(scope="module")
def parent_only_pipeline(tmp_path_factory: pytest.TempPathFactory) -> str:
    nlp = spacy.blank("en")
    nlp.add_pipe(_COMPONENT)
    path = tmp_path_factory.mktemp("pipeline")
    nlp.to_disk(path)
    return str(path)


def entry(text: str, author: str = "Alice") -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author)


async def make_service(backend: str, nlp: Decomposer) -> MemoryService:
    return GraphMemoryService(nlp=nlp) if backend == "networkx" else await make_neo4j_service(nlp)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_failing_worker_raises_a_clear_error_and_stores_nothing(backend: str, parent_only_pipeline: str) -> None:
    decomposer = Decomposer(parent_only_pipeline, n_process=2, batch_size=4)
    service = await make_service(backend, decomposer)
    try:
        # A small session decomposes in this process, where the component exists.
        await service.add_session("app", "alice", "s1", [entry("I live in Boston."), entry("With my dog.")])
        before = await service.list_entries("app", "alice", all_projects=True)
        sessions = {
            "s1": [entry(f"Replacement turn {i} about Lisbon.") for i in range(6)],
            "s2": [entry(f"New turn {i} about Porto.") for i in range(6)],
        }
        with pytest.raises(DecompositionError) as failed:
            await service.add_sessions("app", "alice", sessions)
        assert _COMPONENT in str(failed.value) and "n_process=1" in str(failed.value)
        assert isinstance(failed.value.__cause__, ValueError)  # what the worker raised
        after = await service.list_entries("app", "alice", all_projects=True)
        assert [(e.entry_id, e.memory.text) for e in after] == [(e.entry_id, e.memory.text) for e in before]
    finally:
        await service.close()
        decomposer.close()


# ---------------------------------------------------------------------------- ownership


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_decomposer_passed_in_outlives_the_service(backend: str, parallel: Decomposer) -> None:
    parallel.start_workers()
    workers = children()
    service = await make_service(backend, parallel)
    sessions = {f"s{i}": [entry(t) for t in demo_texts()[i * 10 : i * 10 + 10]] for i in range(4)}
    await service.add_sessions("app", "bob", sessions)
    assert (await service.stats("app", "bob")).entries == 40
    await service.close()
    assert all(p.is_alive() for p in workers)  # the caller's: still running, still reused
    assert parallel.decompose_many(demo_texts()[:40]) and children() == workers


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_service_closes_the_decomposer_it_created(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    service = GraphMemoryService() if backend == "networkx" else None
    if service is None:
        from conftest import neo4j_auth, neo4j_uri_or_skip
        from graphmem.backends.neo4j import Neo4jMemoryService

        service = Neo4jMemoryService(neo4j_uri_or_skip(), auth=neo4j_auth())
    closed: list[bool] = []
    monkeypatch.setattr(service.decomposer, "close", lambda: closed.append(True))
    await service.close()
    await service.close()
    assert closed  # the decomposer it created is released with it


def test_a_loaded_language_stays_in_this_process(decomposer: Decomposer, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="graphmem"):
        given = Decomposer(decomposer.nlp, n_process=2, batch_size=4)
    assert "n_process=2 is ignored" in caplog.text
    assert not given.uses_workers
    before = children()
    texts = demo_texts()[:30]
    assert given.decompose_many(texts) == decomposer.decompose_many(texts)
    assert children() == before


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_n_process_and_batch_size_must_be_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError, match="n_process"):
        Decomposer(n_process=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="batch_size"):
        Decomposer(batch_size=bad)  # type: ignore[arg-type]
