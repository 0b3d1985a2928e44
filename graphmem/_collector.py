"""Searches pause Python's cyclic garbage collector while they run.

A search allocates thousands of short-lived objects (a candidate, its term sets and
neighbour tuples per entry gathered; on Neo4j, the driver's records). With the collector
running, the young collections these allocations trigger move the live ones to the oldest
generation, and every few searches that sets off a full collection, which walks every object
of the process: the store (networkx: 0.1-0.2 s at 10k entries, 0.4-2 s at 100k) or whatever
else the host holds (Neo4j: 70-80 ms in a benchmark process, most of the slowest searches'
time; benchmarks/README.md). Paused, a search's objects are freed by reference counting when
it ends (they hold no cycles) and never reach the older generations; the answer is the same.

Pauses are re-entrant across threads and tasks: the collector resumes when the last one
ends, if it was on before the first. A server whose searches always overlap would then never
collect, so while the collector is off for longer than :data:`MAX_PAUSE_SECONDS` at a
stretch, the end of each pause runs one collection of the two younger generations (what was
allocated since, not the whole process): cyclic garbage made meanwhile is freed, and a full
collection waits for a moment without a search. Not while a *long* pause is on (a store
loading millions of objects, none of them garbage): a young collection would walk them all.

When the collector resumes after a load, the first young collections still walk every object
the load made, and later a full one walks them again (at 100k entries about 15% of opening
the store). A process that keeps what it loads until it ends (the command line: one command,
or the MCP server it runs) may say so with :func:`loads_kept_frozen`: the end of a long
pause then moves every object alive to the collector's permanent generation (``gc.freeze``),
which no collection walks, and the process goes on with a collector that sees only what it
allocates itself. A library cannot do that for its host (whatever cyclic garbage the host
held at that moment would never be freed), so nothing else does it.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Iterator

__all__ = ["MAX_PAUSE_SECONDS", "collector_paused", "loads_kept_frozen"]

#: How long the collector may stay off at a stretch while pauses overlap.
MAX_PAUSE_SECONDS = 1.0

#: Pauses in progress (any thread or task) and how many of them are long, whether the
#: collector was on before the first of them (the last one to end turns it back on), and
#: since when it is off.
_pauses = 0
_long_pauses = 0
_resume = False
_off_since = 0.0
_lock = threading.Lock()

#: Whether the end of a long pause freezes what is alive (:func:`loads_kept_frozen`).
_freeze_after_loads = False


@contextlib.contextmanager
def collector_paused(*, long: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector for the block (see the module docstring).
    ``long``: the block allocates a great many lasting objects (a store's load), and no
    young collection may run until it ends."""
    global _pauses, _long_pauses, _resume, _off_since
    with _lock:
        if _pauses == 0:
            _resume = gc.isenabled()
            gc.disable()
            _off_since = time.monotonic()
        _pauses += 1
        _long_pauses += long
    try:
        yield
    finally:
        young = False
        with _lock:
            _pauses -= 1
            _long_pauses -= long
            if _pauses == 0:
                if _resume:
                    if long and _freeze_after_loads:
                        gc.freeze()
                    gc.enable()
            elif _resume and not _long_pauses and time.monotonic() - _off_since > MAX_PAUSE_SECONDS:
                _off_since = time.monotonic()
                young = True
        if young:
            gc.collect(1)


@contextlib.contextmanager
def loads_kept_frozen() -> Iterator[None]:
    """While the block runs, the end of a long pause (a store's load) freezes every object
    alive (``gc.freeze``) before the collector resumes: for a process that keeps what it
    loads until it ends (see the module docstring). Frozen objects stay frozen after the block; the
    setting is as before."""
    global _freeze_after_loads
    was = _freeze_after_loads
    _freeze_after_loads = True
    try:
        yield
    finally:
        _freeze_after_loads = was
