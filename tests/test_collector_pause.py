"""The networkx search pauses Python's cyclic garbage collector while it runs (see
``graphmem.backends.networkx._collector_paused``): it must always hand the collector back
as it found it, whatever the search did and however pauses overlap."""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Iterator

import pytest

from graphmem import Content, Decomposer, MemoryEntry, SearchRequest
from graphmem.backends import networkx as backend
from graphmem.backends.networkx import GraphMemoryService


@pytest.fixture
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


async def _service(decomposer: Decomposer) -> GraphMemoryService:
    service = GraphMemoryService(decomposer)
    turn = lambda text: MemoryEntry(content=Content(role="user").with_text(text), author="Ana")  # noqa: E731
    await service.add_session("app", "ana", "s1", [turn("We watched a film about whales."), turn("It was long.")])
    return service


async def test_a_search_pauses_the_collector_and_resumes_it(decomposer: Decomposer, collector_on: None) -> None:
    service = await _service(decomposer)
    seen: list[bool] = []
    original = service._neighbourhood

    async def gather(*args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(gc.isenabled())
        return await original(*args, **kwargs)

    service._neighbourhood = gather  # type: ignore[method-assign]
    hits = (await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))).hits
    assert hits and seen and not any(seen)  # paused while gathering
    assert gc.isenabled()


async def test_a_failing_search_resumes_the_collector(decomposer: Decomposer, collector_on: None) -> None:
    service = await _service(decomposer)

    async def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    service._neighbourhood = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))
    assert gc.isenabled()


async def test_a_collector_the_host_turned_off_stays_off(decomposer: Decomposer, collector_on: None) -> None:
    service = await _service(decomposer)
    gc.disable()
    await service.search(SearchRequest(query="film about whales", app_name="app", user_id="ana"))
    assert not gc.isenabled()


async def test_overlapping_searches_resume_the_collector_once_the_last_ends(
    decomposer: Decomposer, collector_on: None
) -> None:
    service = await _service(decomposer)
    release = asyncio.Event()
    inside = 0
    original = service._neighbourhood

    async def slow_gather(*args, **kwargs):  # type: ignore[no-untyped-def]
        nonlocal inside
        inside += 1
        await release.wait()  # every search waits here, inside its pause
        return await original(*args, **kwargs)

    service._neighbourhood = slow_gather  # type: ignore[method-assign]
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


def test_pauses_in_threads_overlap(collector_on: None) -> None:
    entered = threading.Barrier(3)
    leave = threading.Event()

    def pause() -> None:
        with backend._collector_paused():
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
