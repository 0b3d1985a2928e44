"""The ``graphmem`` command line (needs the ``cli`` extra: ``pip install 'graphmem[cli]'``).

``main`` is the console script. Importing this package imports nothing of the command
line itself, so a missing extra is reported as one line, not as a traceback.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

_CLI_EXTRA = frozenset({"typer", "click", "rich", "platformdirs", "grandcypher", "lark", "matplotlib"})


def main(argv: list[str] | None = None) -> None:
    """Run ``graphmem`` with ``argv`` (default: the process arguments)."""
    try:
        from graphmem.cli._app import run
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in _CLI_EXTRA:
            raise
        sys.stderr.write(
            f"error: the graphmem command line needs the cli extra ({exc.name} is missing): "
            "pip install 'graphmem[cli]'\n"
        )
        raise SystemExit(1) from None
    # The process is the command line's own (one command, or the MCP server it runs): a
    # store it loads lives until it ends, so the collector need never walk it
    # (graphmem._collector; about 15% of opening a 100k-entry store).
    from graphmem._collector import loads_kept_frozen

    with loads_kept_frozen():
        run(argv)
