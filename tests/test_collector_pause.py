"""Every backend's search pauses Python's cyclic garbage collector while it runs (see
``graphmem._collector``): it must always hand the collector back as it found it, whatever
the search did and however pauses overlap, and overlapping pauses must not keep it from
collecting for long."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator

import pytest

from graphmem import Content, MemoryEntry, MemoryService, SearchRequest
from graphmem import _collector as collector


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


async def _stored(service: MemoryService) -> MemoryService:
    turn = lambda text: MemoryEntry(content=Content(role="user").with_text(text), author="Ana")  # noqa: E731
    await service.add_session("app", "ana", "s1", [turn("We watched a film about whales."), turn("It was long.")])
    return service


async def test_a_search_pauses_the_collector_and_resumes_it(service: MemoryService, collector_on: None) -> None:
    service = await _stored(service)
    seen: list[bool] = []
    original = service._term_stats_or_gather

    async def gather(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return await original(*args, **kwargs)

    service._term_stats_or_gather = gather  # type: ignore[method-assign]
    hits = (await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))).hits
    assert hits and seen and not any(seen)  # paused while gathering
    assert gc.isenabled()


async def test_a_failing_search_resumes_the_collector(service: MemoryService, collector_on: None) -> None:
    service = await _stored(service)

    async def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    service._term_stats_or_gather = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))
    assert gc.isenabled()


async def test_a_collector_the_host_turned_off_stays_off(service: MemoryService, collector_on: None) -> None:
    service = await _stored(service)
    gc.disable()
    await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))
    assert not gc.isenabled()


async def test_overlapping_searches_resume_the_collector_once_the_last_ends(
    service: MemoryService, collector_on: None
) -> None:
    service = await _stored(service)
    release = asyncio.Event()
    inside = 0
    original = service._term_stats_or_gather

    async def slow_gather(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal inside
        inside += 1
        await release.wait()  # every search waits here, inside its pause
        return await original(*args, **kwargs)

    service._term_stats_or_gather = slow_gather  # type: ignore[method-assign]
    request = SearchRequest(query="film about whales", app_name="app", user_id="ana")
    first = asyncio.create_task(service.search(request))
    second = asyncio.create_task(service.search(request))
    while inside < 2:
        await asyncio.sleep(0)
    assert not gc.isenabled()
    release.set()
    await first
    await second
    assert gc.isenabled()


async def test_a_search_leaves_no_cyclic_garbage(service: MemoryService, collector_on: None) -> None:
    """What a search made is freed by reference counting when it ends: were any of it in a
    reference cycle (a closure calling itself held every entry the search fetched), the
    pause would only put the collector's work off to the next allocation after it."""

    def turn(author: str, text: str) -> MemoryEntry:
        return MemoryEntry(content=Content(role="user").with_text(text), author=author)

    turns = [turn("Ben", "What did you do?"), turn("Ana", "We watched a film about whales."), turn("Ana", "The whales sang.")]
    await service.add_session("app", "ana", "s1", turns)
    request = SearchRequest(query="film about whales", app_name="app", user_id="ana")
    first = await service.search(request)  # (memos filled: they are meant to last)
    assert first.hits and first.hits[0].folded  # a reply of two messages: the fold is built too
    del first
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        response = await service.search(request)
        assert response.hits[0].folded
        del response
        gc.collect()
        ours = [type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("graphmem")]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert ours == []


def test_pauses_in_threads_overlap(collector_on: None) -> None:
    entered = threading.Barrier(3)
    leave = threading.Event()

    def pause() -> None:
        with collector.collector_paused():
            entered.wait()
            leave.wait()

    threads = [threading.Thread(target=pause) for _ in range(2)]
    for t in threads:
        t.start()
    entered.wait()
    assert not gc.isenabled()
    leave.set()
    for t in threads:
        t.join()
    assert gc.isenabled()


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The collector module's clock, set by hand (seconds)."""
    now = [1000.0]
    monkeypatch.setattr(collector.time, "monotonic", lambda: now[0])
    return now


@pytest.fixture
def young_collections(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The generations of the collections the module runs, recorded instead of run."""
    runs: list[int] = []
    monkeypatch.setattr(collector.gc, "collect", lambda generation=2: runs.append(generation) or 0)
    return runs


def test_overlapping_pauses_collect_the_young_generations_once_off_too_long(
    collector_on: None, clock: list[float], young_collections: list[int]
) -> None:
    with collector.collector_paused():
        with collector.collector_paused():  # ends soon: nothing to do
            clock[0] += collector.MAX_PAUSE_SECONDS / 2
        assert young_collections == []
        with collector.collector_paused():  # ends after the collector was off too long
            clock[0] += collector.MAX_PAUSE_SECONDS
        assert young_collections == [1]
        assert not gc.isenabled()  # the outer pause is still on
        with collector.collector_paused():  # the stretch starts again from that collection
            clock[0] += collector.MAX_PAUSE_SECONDS / 2
        assert young_collections == [1]
    assert young_collections == [1]  # the last pause turns the collector back on instead
    assert gc.isenabled()


def test_no_young_collection_during_a_long_pause(
    collector_on: None, clock: list[float], young_collections: list[int]
) -> None:
    with collector.collector_paused(long=True):  # a store loading
        with collector.collector_paused():
            clock[0] += 10 * collector.MAX_PAUSE_SECONDS
    assert young_collections == []
    with collector.collector_paused():
        with collector.collector_paused():
            clock[0] += 10 * collector.MAX_PAUSE_SECONDS
    assert young_collections == [1]  # the long pause's count went back to zero


def test_no_collection_when_the_host_turned_the_collector_off(
    collector_on: None, clock: list[float], young_collections: list[int]
) -> None:
    gc.disable()
    with collector.collector_paused():
        with collector.collector_paused():
            clock[0] += 10 * collector.MAX_PAUSE_SECONDS
    assert young_collections == []
    assert not gc.isenabled()


def test_only_a_process_that_asks_has_its_loads_frozen(collector_on: None) -> None:
    """A library never freezes its host's objects; the command line, which owns its process,
    has what a store's load leaves alive frozen (no collection walks it again)."""
    before = gc.get_freeze_count()
    try:
        with collector.collector_paused(long=True):
            loaded = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() == before
        with collector.loads_kept_frozen():
            with collector.collector_paused():  # a search, not a load
                searched = [[i] for i in range(1_000)]
            assert gc.get_freeze_count() == before
            with collector.collector_paused(long=True):
                loaded = [[i] for i in range(1_000)]
            frozen = gc.get_freeze_count()
        assert frozen >= before + len(loaded) + len(searched)
        assert gc.isenabled()
        with collector.collector_paused(long=True):  # the setting ends with the block
            loaded_after = [[i] for i in range(1_000)]
        assert loaded_after and gc.get_freeze_count() <= frozen
    finally:
        gc.unfreeze()
