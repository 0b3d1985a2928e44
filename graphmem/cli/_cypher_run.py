"""Run a read-only Cypher query on either backend and get the same plain rows back.

Every query first passes :func:`check_read_only` (an allowlist of read clauses). Then:

- Neo4j: ``execute_query`` with READ routing and a transaction timeout, so the server runs
  it in a read transaction (refusing a write even if the check missed one) and stops it
  when the time is up.
- networkx: grand-cypher over the service's live graph, after :func:`to_grand_cypher`, in
  a forked worker process that is killed when the time is up (grand-cypher is pure Python:
  a thread could not be stopped); see :func:`_bounded` for other platforms.

Values come back as plain Python: a node is ``{"_labels": [...], **properties}``, a
relationship ``{"_type": ..., **properties}``; properties that are null are left out, as
Neo4j cannot store a null property.
"""

from __future__ import annotations

import asyncio
import math
import multiprocessing
import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from graphmem._service import MemoryService
from graphmem.backends._graph_model import ENTITY, ENTRY, TOKEN
from graphmem.cli._context import EXIT_UNAVAILABLE, EXIT_USAGE, CliError
from graphmem.cli._cypher_text import (
    CypherTextError,
    check_read_only,
    networkx_misreading,
    order_by_keys,
    return_columns,
    to_grand_cypher,
    without_final_paging,
)

__all__ = ["DEFAULT_TIMEOUT", "MAX_TIMEOUT", "CypherResult", "parse_param", "parse_params", "run_read_only"]

#: Seconds a debugging query may run before it is stopped (``graphmem cypher --timeout``).
DEFAULT_TIMEOUT = 30.0
#: The longest timeout taken: a day. Thread joins and pipe polls overflow past ~1e9 seconds.
MAX_TIMEOUT = 86400.0

_PARAM_NAME = re.compile(r"[^\W\d]\w*")
_NODE_LABELS = frozenset({ENTRY, TOKEN, ENTITY})


@dataclass(slots=True)
class CypherResult:
    """Columns and rows of a query result."""

    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def json_records(self) -> list[dict[str, Any]]:
        """:meth:`records` as JSON can hold them: a NaN or infinite number (Neo4j's
        ``0.0 / 0.0``) becomes the string ``"NaN"``, ``"Infinity"`` or ``"-Infinity"``, which
        JSON has no number for."""
        return [{k: _finite(v) for k, v in record.items()} for record in self.records()]


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"
    if isinstance(value, list):
        return [_finite(v) for v in value]
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    return value


def parse_params(texts: Sequence[str]) -> dict[str, Any]:
    """Every ``--param``, each name once (:func:`parse_param`)."""
    params: dict[str, Any] = {}
    for text in texts:
        name, value = parse_param(text)
        if name in params:
            raise CliError(f"--param {name} is given twice: give each parameter once", EXIT_USAGE)
        params[name] = value
    return params


def parse_param(text: str) -> tuple[str, Any]:
    """``k=v`` gives the string ``v``; ``k:=v`` reads ``v`` as JSON (a number, list, ...)."""
    import json

    name, sep, value = text.partition("=")
    if not sep:
        raise CliError(f"--param {text!r}: write name=value (a string) or name:=JSON (e.g. limit:=10)", EXIT_USAGE)
    as_json = name.endswith(":")
    name = name[:-1] if as_json else name
    if not _PARAM_NAME.fullmatch(name):
        raise CliError(f"--param {text!r}: {name!r} is not a parameter name", EXIT_USAGE)
    if not as_json:
        return name, value
    def no_constant(word: str) -> Any:
        # Python's json reads NaN and Infinity, which JSON has not (nor a Cypher literal).
        raise ValueError(f"{word} is no JSON value")

    def finite(number: str) -> float:
        # 1e400 is JSON, but beyond a float: Python reads it as inf.
        if math.isinf(read := float(number)):
            raise ValueError(f"{number} is beyond the largest float (about 1.8e308)")
        return read

    try:
        parsed = json.loads(value, parse_constant=no_constant, parse_float=finite)
    except ValueError as exc:
        raise CliError(f"--param {text!r}: the value after := is not JSON ({exc})", EXIT_USAGE) from None
    if _has_huge_int(parsed):
        raise CliError(
            f"--param {text[:60]!r}: an integer beyond 64 bits, which Cypher has no type for", EXIT_USAGE
        )
    return name, parsed


def _has_huge_int(value: Any) -> bool:
    """Whether a JSON value holds an integer outside Cypher's 64 bits (Neo4j's driver raised
    a bare OverflowError on it; networkx matched it against nothing)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return not -(2**63) <= value < 2**63
    if isinstance(value, list):
        return any(_has_huge_int(v) for v in value)
    if isinstance(value, dict):
        return any(_has_huge_int(v) for v in value.values())
    return False


def refuse_unless_read_only(query: str) -> None:
    """Raise :class:`CliError` unless ``query`` passes :func:`check_read_only`."""
    try:
        refusal = check_read_only(query)
    except CypherTextError as exc:
        raise CliError(f"cannot read the query: {exc}") from None
    if refusal is not None:
        raise CliError(f"graphmem cypher only reads, and refused this query: {refusal}")


async def run_read_only(
    service: MemoryService, query: str, params: Mapping[str, Any], timeout: float = DEFAULT_TIMEOUT
) -> CypherResult:
    """Run ``query`` (read-only) on the service's backend, for at most ``timeout`` seconds.

    Raises:
        CliError: the query is refused, fails, runs out of time, or uses Cypher the backend
            cannot run.
    """
    if not 0 < timeout <= MAX_TIMEOUT:
        raise CliError(f"the timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:g}, not {timeout}")
    refuse_unless_read_only(query)
    view = service.cypher_view()
    if view is not None and view.graph is not None:
        return await _run_grand_cypher(view.graph, query, params, timeout)
    if view is not None and view.driver is not None:
        return await _run_neo4j(view.driver, view.database, query, params, timeout)
    raise CliError(f"{type(service).__name__} cannot run Cypher")


def _too_slow(timeout: float) -> CliError:
    return CliError(
        f"the query ran longer than {timeout:g} s and was stopped; narrow it (LIMIT, a property map) "
        "or give --timeout SECONDS"
    )


# ---------------------------------------------------------------------------- networkx


async def _run_grand_cypher(graph: Any, query: str, params: Mapping[str, Any], timeout: float) -> CypherResult:
    import grandcypher  # noqa: F401  imported here, before the fork, so the worker never imports

    try:
        misreading = networkx_misreading(query, params)
        to_grand_cypher(query, params)  # a missing parameter, one without a literal: said first
        body, skip, limit = without_final_paging(query, params)
        text = to_grand_cypher(body, params)
    except CypherTextError as exc:
        raise CliError(str(exc)) from None
    if misreading is not None:
        raise CliError(misreading)

    def work() -> CypherResult:
        result = _grand_cypher_rows(graph, query, text)
        result.rows = result.rows[skip:] if limit is None else result.rows[skip : skip + limit]
        return result

    outcome = await asyncio.to_thread(_bounded, work, timeout)
    if outcome is None:
        raise _too_slow(timeout)
    ok, value = outcome
    if not ok:
        raise CliError(str(value))
    assert isinstance(value, CypherResult)
    return value


def _bounded(work: Callable[[], CypherResult], timeout: float) -> tuple[bool, object] | None:
    """``(True, result)``, ``(False, message)``, or ``None`` if ``work`` ran out of time.

    On Linux the work runs in a forked child (which shares the graph without copying it)
    that is killed at the deadline. Elsewhere fork is unavailable or unsafe (macOS system
    libraries), so it runs in a daemon thread that is abandoned at the deadline: it cannot
    be stopped, and goes on running until the process (the CLI command) exits.
    """
    if sys.platform != "linux":
        outcomes: list[tuple[bool, object]] = []
        thread = threading.Thread(target=lambda: outcomes.append(_attempt(work)), daemon=True)
        thread.start()
        thread.join(timeout)
        return outcomes[0] if outcomes else None
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)

    parent = os.getpid()

    def child() -> None:
        # Leave at once when answered: a forked child inherits the parent's exit handlers
        # and multiprocessing finalizers (a worker pool's, a queue's), which would wait for
        # threads that exist only in the parent; os._exit runs none of them.
        code = 0
        try:
            _die_with(parent, timeout)
            send.send(_attempt(work))
        except BaseException:
            code = 1
        finally:
            os._exit(code)

    process = context.Process(target=child, daemon=True)
    process.start()
    send.close()
    try:
        if not receive.poll(timeout):
            return None
        outcome: tuple[bool, object] = receive.recv()
        return outcome
    except EOFError:  # the child died without answering (killed, out of memory)
        return False, f"the networkx query worker stopped unexpectedly (exit code {process.exitcode})"
    finally:
        receive.close()
        if process.is_alive():
            process.kill()
        process.join()


def _die_with(parent: int, timeout: float) -> None:
    """In the worker: end with the command. Killed when the parent dies (a killed CLI left
    it running on, at full CPU), on Ctrl-C or SIGTERM at once (the command waited for it
    until its timeout), and by its own alarm a little after the timeout whatever happens."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.alarm(max(1, math.ceil(timeout)) + 5)
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # pragma: no cover - no prctl: the alarm still ends it
        pass
    if os.getppid() != parent:  # the parent died before the death signal was asked for
        os._exit(1)


#: prctl(2) option: the signal this process gets when its parent ends (Linux).
_PR_SET_PDEATHSIG = 1


def _attempt(work: Callable[[], CypherResult]) -> tuple[bool, object]:
    try:
        return True, work()
    except CliError as exc:
        return False, str(exc)
    except RecursionError:
        return False, "the query is nested too deeply for the networkx backend"


def _grand_cypher_rows(graph: Any, query: str, text: str) -> CypherResult:
    from grandcypher import GrandCypher
    from lark.exceptions import LarkError

    try:
        with _cypher_aggregations(), _separate_patterns(), _cypher_trim():
            raw = GrandCypher(graph).run(text)
    except LarkError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CliError(
            f"the networkx backend cannot read this query ({first}); it understands a subset of Cypher, "
            "see `graphmem cypher --help`, or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
        ) from None
    except (RecursionError, CliError):
        raise
    except TypeError as exc:
        if _raised_in(exc, "_apply_order_by") and " not supported between instances of " in str(exc):
            raise CliError(_unorderable(query)) from None
        raise CliError(
            f"grand-cypher failed on this query ({type(exc).__name__}: {exc}); see the supported subset "
            "in `graphmem cypher --help`"
        ) from None
    except Exception as exc:  # grand-cypher is a third-party interpreter of user text
        raise CliError(
            f"grand-cypher failed on this query ({type(exc).__name__}: {exc}); see the supported subset "
            "in `graphmem cypher --help`"
        ) from None
    keys = list(raw)
    columns = _neo4j_column_order(query, [str(k) for k in keys])
    order = [index for _, index in columns]
    values = [list(raw[keys[i]]) for i in order]
    rows = [[_plain_networkx(v) for v in row] for row in zip(*values, strict=True)] if values else []
    return CypherResult([name for name, _ in columns], rows)


def _raised_in(exc: BaseException, function: str) -> bool:
    """Whether ``exc`` was raised in (or below) a function of that name."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == function:
            return True
        tb = tb.tb_next
    return False


def _unorderable(query: str) -> str:
    """What to do when grand-cypher could not order the rows: a key is null on some rows
    and a string on others (it orders a null as infinity, which no string compares with)."""
    keys = order_by_keys(query)
    key = next((e for _, e in keys if re.fullmatch(r"\w+\.\w+", e)), keys[0][1] if keys else "x.prop")
    written = ", ".join(k for k, _ in keys) or "..."
    return (
        f"ORDER BY {written} fails on the networkx backend: some rows have no value (null) for "
        f"a key that others hold a string in, and it cannot order the two (Neo4j puts nulls last); return "
        f'coalesce({key}, "") AS k and ORDER BY k, or leave those rows out with WHERE {key} IS NOT NULL'
    )


@contextmanager
def _cypher_aggregations() -> Iterator[None]:
    """While grand-cypher reads a query, its COUNT, AVG, MIN and MAX skip nulls, as Cypher's do.

    Its own counted nulls, averaged them as 0, and gave -Infinity or Infinity when every value
    was null (and failed on nulls among strings), where Neo4j counts and compares the values
    that are not null and gives null when there is none. grand-cypher looks its aggregations
    up in a table when it parses a query; they are swapped there for the time of the query and
    put back, so that nothing else in the process sees the change.
    """
    import grandcypher

    table = getattr(grandcypher, "_AGGREGATION_FUNCTIONS", None)
    if not isinstance(table, dict) or not {"COUNT", "AVG", "MIN", "MAX"} <= set(table):
        raise CliError(
            "this grand-cypher version keeps its aggregations where graphmem cannot make them skip nulls "
            "as Cypher does; run the query on Neo4j (--uri bolt://..., or --backend neo4j)"
        )
    # Another query's swap may be in place (threads, off Linux): build on the originals.
    saved = {name: getattr(table[name], "graphmem_original", table[name]) for name in ("COUNT", "AVG", "MIN", "MAX")}

    count_base: Any = saved["COUNT"]
    avg_base: Any = saved["AVG"]
    min_base: Any = saved["MIN"]
    max_base: Any = saved["MAX"]

    def non_null(values: list[Any]) -> list[Any]:
        return [v for v in values if v is not None]

    class Count(count_base):  # type: ignore[misc]
        def aggregate(self, values: list[Any]) -> int:
            return len(non_null(values))

    class Avg(avg_base):  # type: ignore[misc]
        def aggregate(self, values: list[Any]) -> Any:
            return cypher_avg(values)

    class Min(min_base):  # type: ignore[misc]
        def aggregate(self, values: list[Any]) -> Any:
            present = non_null(values)
            return min(present) if present else None

    class Max(max_base):  # type: ignore[misc]
        def aggregate(self, values: list[Any]) -> Any:
            present = non_null(values)
            return max(present) if present else None

    for name, cypher in (("COUNT", Count), ("AVG", Avg), ("MIN", Min), ("MAX", Max)):
        cypher.graphmem_original = saved[name]
    table.update(COUNT=Count, AVG=Avg, MIN=Min, MAX=Max)
    try:
        yield
    finally:
        table.update(saved)


def cypher_avg(values: list[Any]) -> Any:
    """avg() as Neo4j computes it: nulls skipped (``None`` when nothing is left), and a
    running mean (measured: the same float on 400 of 400 lists, where sum / count gave it on
    242: 2.0, not 1.9999999999999998). A running mean depends on the order of the values in
    its last bit, and rows without ORDER BY come in no set order, on either backend."""
    present = [v for v in values if v is not None]
    if not present:
        return None
    mean = 0.0
    for count, value in enumerate(present, 1):
        mean += (value - mean) / count
    return mean


#: What Neo4j's trim() leaves in place that Python's ``str.strip`` removes: no-break spaces
#: and NEL are not whitespace to Java's ``Character.isWhitespace``, which trim() follows
#: (measured on Neo4j 5.26 over every character Python reads as a space).
_KEPT_BY_CYPHER_TRIM = frozenset("\u0085\u00a0\u2007\u202f")


def _trimmed_as_cypher_trims(value: Any) -> Any:
    if not isinstance(value, str):
        return value.strip()  # grand-cypher's own behaviour for anything else
    start, end = 0, len(value)
    while start < end and value[start].isspace() and value[start] not in _KEPT_BY_CYPHER_TRIM:
        start += 1
    while end > start and value[end - 1].isspace() and value[end - 1] not in _KEPT_BY_CYPHER_TRIM:
        end -= 1
    return value[start:end]


@contextmanager
def _cypher_trim() -> Iterator[None]:
    """While grand-cypher reads a query, its trim() removes what Neo4j's removes: it used
    ``str.strip``, which also takes no-break spaces off, so the same query gave another
    string on networkx. grand-cypher looks the function up when it parses a query; it is
    swapped for the time of the query and put back, like the aggregations."""
    import grandcypher

    with _swapped(grandcypher, "_strip", lambda _original: _trimmed_as_cypher_trims, "trim it as Cypher does"):
        yield


@contextmanager
def _separate_patterns() -> Iterator[None]:
    """While grand-cypher reads a query, patterns that share no node (``MATCH (x:Entry {...})
    MATCH (t:Token {...})``) are joined as Cypher joins them: every match of one with every
    match of the other, none when one has no match.

    grand-cypher matched each such pattern on its own and joined them, but bound a node
    chosen by its property index without checking its label and properties there (so
    ``x`` also stood for tokens and entities, as rows of nulls), and left a pattern with
    no match out of the join instead of giving no row. Each pattern is matched here on its
    own by grand-cypher's matcher, which then checks every node, and the matches are joined
    afterwards; a query of one pattern is untouched.
    """
    import itertools

    import networkx as nx
    from grandcypher import GrandCypherExecutor

    def joining(original: Any) -> Any:
        def matches_iter(self: Any, motif: Any) -> Iterator[dict[Any, Any]]:
            parts = [motif.subgraph(nodes) for nodes in nx.weakly_connected_components(motif)]
            if len(parts) < 2:
                yield from original(self, motif)
                return
            # Without the hints grand-cypher takes from its property index: they are the product
            # of every pattern node's candidates, which it compares pairwise (18 s for the demo's
            # alice entries with bob's entities, 0.2 s without); each node is checked as it matches.
            saved = self._auto_where_hints, self._auto_node_jsondata_hints
            self._auto_where_hints = self._auto_node_jsondata_hints = False
            try:
                found = [list(original(self, part)) for part in parts]
            finally:
                self._auto_where_hints, self._auto_node_jsondata_hints = saved
            for combination in itertools.product(*found):
                joined: dict[Any, Any] = {}
                for match in combination:
                    joined.update(match)
                yield joined

        return matches_iter

    with _swapped(GrandCypherExecutor, "_matches_iter", joining, "join separate patterns as Cypher does"):
        yield


@contextmanager
def _swapped(holder: Any, name: str, replacement: Callable[[Any], Any], purpose: str) -> Iterator[None]:
    """``holder.name`` replaced by ``replacement(original)`` for the time of a query, then put
    back: grand-cypher looks these up as it reads a query, and nothing else in the process
    sees the change. Built on the original even when another query's swap is in place
    (threads, off Linux). A grand-cypher without the attribute is refused, naming ``purpose``."""
    current = getattr(holder, name, None)
    if not callable(current):
        raise CliError(
            f"this grand-cypher version keeps {name} where graphmem cannot make it {purpose}; "
            "run the query on Neo4j (--uri bolt://..., or --backend neo4j)"
        )
    original: Any = getattr(current, "graphmem_original", current)
    swapped = replacement(original)
    swapped.graphmem_original = original
    setattr(holder, name, swapped)
    try:
        yield
    finally:
        setattr(holder, name, original)


def _neo4j_column_order(query: str, keys: list[str]) -> list[tuple[str, int]]:
    """(name, index into ``keys``) in RETURN order, named as Neo4j names them.

    grand-cypher puts ORDER BY columns first and names an unaliased expression its own
    way (``COUNT(x)`` for ``count(x)``); Neo4j keeps the RETURN order and the text as written.
    """
    wanted = return_columns(query)
    if len(wanted) != len(keys):
        return [(key, i) for i, key in enumerate(keys)]

    def norm(text: str) -> str:
        return "".join(text.split()).casefold()

    left = list(range(len(keys)))
    chosen: list[int | None] = []
    for name in wanted:
        match = next((i for i in left if keys[i] == name), None)
        if match is None:
            match = next((i for i in left if norm(keys[i]) == norm(name)), None)
        if match is not None:
            left.remove(match)
        chosen.append(match)
    result = []
    for name, match in zip(wanted, chosen, strict=True):
        result.append((name, match if match is not None else left.pop(0)))
    return result


def _plain_networkx(value: Any) -> Any:
    if isinstance(value, dict):
        labels = value.get("__labels__")
        props = {str(k): _plain_networkx(v) for k, v in value.items() if k != "__labels__" and v is not None}
        if labels is None:
            return props
        names = sorted(labels)
        # grand-cypher returns nodes and relationships alike as attribute dicts.
        if set(names) <= _NODE_LABELS:
            return {"_labels": names, **props}
        return {"_type": names[0] if len(names) == 1 else names, **props}
    if isinstance(value, (list, tuple)):
        return [_plain_networkx(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted(_plain_networkx(v) for v in value)
    return value


# ---------------------------------------------------------------------------- Neo4j


async def _run_neo4j(
    driver: Any, database: str | None, query: str, params: Mapping[str, Any], timeout: float
) -> CypherResult:
    from neo4j import Query, RoutingControl
    from neo4j.exceptions import ClientError, DriverError, Neo4jError

    try:
        records, _summary, keys = await driver.execute_query(
            Query(query, timeout=timeout),
            dict(params),
            routing_=RoutingControl.READ,
            database_=database,
        )
    except ClientError as exc:
        code = exc.code or ""
        message = (exc.message or str(exc)).strip().splitlines()[0]
        if "TransactionTimedOut" in code:
            raise _too_slow(timeout) from None
        if code.endswith("AccessMode") or "access mode" in message.lower():
            raise CliError(
                f"refused: the query tries to write, and graphmem cypher runs it in a read transaction ({message})"
            ) from None
        if code.endswith("ParameterMissing"):
            raise CliError(f"{message}: give it with --param name=value") from None
        raise CliError(f"Neo4j refused the query: {message}") from None
    except Neo4jError as exc:
        if "MemoryPoolOutOfMemoryError" in (exc.code or ""):
            message = (exc.message or str(exc)).strip().splitlines()[0]
            raise CliError(f"the query needs more memory than Neo4j allows a transaction ({message})") from None
        raise CliError(f"Neo4j failed to run the query ({type(exc).__name__}: {exc})", EXIT_UNAVAILABLE) from None
    except (DriverError, OSError) as exc:
        raise CliError(f"Neo4j failed to run the query ({type(exc).__name__}: {exc})", EXIT_UNAVAILABLE) from None
    return CypherResult(list(keys), [[_plain_neo4j(record[k]) for k in keys] for record in records])


def _plain_neo4j(value: Any) -> Any:
    from neo4j.graph import Node, Path, Relationship

    if isinstance(value, Node):
        return {"_labels": sorted(value.labels), **{k: _plain_neo4j(v) for k, v in dict(value).items()}}
    if isinstance(value, Relationship):
        return {"_type": value.type, **{k: _plain_neo4j(v) for k, v in dict(value).items()}}
    if isinstance(value, Path):
        items: list[Any] = [_plain_neo4j(value.start_node)]
        for rel in value.relationships:
            items += [_plain_neo4j(rel), _plain_neo4j(rel.end_node)]
        return items
    if isinstance(value, list):
        return [_plain_neo4j(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain_neo4j(v) for k, v in value.items()}
    if hasattr(value, "iso_format"):  # neo4j.time types
        return value.iso_format()
    return value
