"""Load the Cypher queries of the Neo4j backend from ``.cypher`` files, by name.

Every query graphmem sends to Neo4j lives in a file of its own, so it can be read,
``EXPLAIN``-ed and diffed as Cypher, and so no query text is ever built in Python:
values always travel as ``$parameters``, lists inside the one map ``$lists`` (``$lists.ids``;
Neo4j plans a query once per size of each list parameter, see
``graphmem.backends.neo4j._sent``).

The files live in the repository's top-level ``cypher/`` folder; the wheel ships that
folder inside the package as ``graphmem/cypher``. The installed copy is preferred, and a
source checkout falls back to the top-level folder.
"""

from __future__ import annotations

import functools
import importlib.resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["cypher_names", "load_cypher", "load_statements", "shipped_debug_query"]

_SUFFIX = ".cypher"


@functools.cache
def _folder() -> Traversable:
    packaged = importlib.resources.files("graphmem") / "cypher"
    if packaged.is_dir():
        return packaged
    checkout = Path(__file__).resolve().parent.parent / "cypher"
    if checkout.is_dir():
        return checkout
    raise FileNotFoundError(
        "graphmem's Cypher files are missing: neither the package folder graphmem/cypher nor "
        f"the source checkout folder {checkout} exists. Reinstall graphmem."
    )


def shipped_debug_query(file_name: str) -> Traversable | None:
    """The debugging query ``cypher/debug/<file_name>`` as graphmem ships it, or ``None``
    when it ships none of that name."""
    query = _folder() / "debug" / file_name
    return query if query.is_file() else None


def cypher_names() -> list[str]:
    """The names of every Cypher file (without the ``.cypher`` suffix), sorted."""
    return sorted(
        entry.name[: -len(_SUFFIX)]
        for entry in _folder().iterdir()
        if entry.is_file() and entry.name.endswith(_SUFFIX)
    )


@functools.cache
def load_cypher(name: str) -> str:
    """The text of ``cypher/<name>.cypher`` (one query), without comment lines.

    Raises:
        FileNotFoundError: there is no such file.
    """
    source = _folder() / f"{name}{_SUFFIX}"
    if not source.is_file():
        raise FileNotFoundError(f"no Cypher file named {name!r} (known: {', '.join(cypher_names())})")
    lines = [line for line in source.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")]
    return "\n".join(lines).strip()


def load_statements(name: str) -> tuple[str, ...]:
    """The statements of a file holding several, separated by a ``;`` at the end of a line.

    Schema migrations are such files: schema commands cannot share one query.
    """
    text = load_cypher(name)
    parts = (part.strip().rstrip(";").strip() for part in text.split(";\n"))
    return tuple(part for part in parts if part)
