"""What every command shares: the global options, opening a backend, turning errors into one line."""

from __future__ import annotations

import asyncio
import functools
import logging
import sys
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from graphmem._decompose import Decomposer
from graphmem._errors import BackendUnavailableError, GraphmemError, ProjectScopingUnsupportedError
from graphmem._fixtures import FixtureError
from graphmem._service import MemoryService
from graphmem.cli._render import plain

__all__ = [
    "BACKENDS",
    "EXIT_ERROR",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CliError",
    "Settings",
    "default_store",
    "err_console",
    "fail",
    "open_service",
    "out_console",
    "run_async",
    "user_errors",
]

BACKENDS = ("networkx", "neo4j")
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3

out_console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


class CliError(Exception):
    """A user-facing failure: one line saying what happened and what to do."""

    def __init__(self, message: str, exit_code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def fail(message: str, exit_code: int = EXIT_ERROR) -> typer.Exit:
    """Print ``error: message`` (one line) on stderr; return the ``typer.Exit`` to raise.

    The message is shown as text, with control characters visible: it may quote user input.
    """
    one_line = " ".join(message.split())
    err_console.print(Text("error: ", "bold red") + plain(one_line), soft_wrap=True)
    return typer.Exit(exit_code)


def default_store() -> Path:
    """The networkx journal used when neither ``--store`` nor ``GRAPHMEM_STORE`` is given."""
    import platformdirs

    return platformdirs.user_data_path("graphmem") / "memory.journal"


@dataclass(frozen=True, slots=True)
class Settings:
    """The global options."""

    backend: str
    store: Path | None
    neo4j_uri: str
    neo4j_user: str
    neo4j_password: str | None
    neo4j_database: str | None

    @property
    def store_path(self) -> Path:
        return self.store if self.store is not None else default_store()

    def describe(self) -> str:
        if self.backend == "neo4j":
            return f"Neo4j at {self.neo4j_uri}"
        return f"networkx store {self.store_path}"


@functools.cache
def shared_decomposer() -> Decomposer:
    """One spaCy pipeline per process, loaded on first use (commands run in-process share it)."""
    return Decomposer()


@asynccontextmanager
async def open_service(settings: Settings, *, writes: bool = False) -> AsyncIterator[MemoryService]:
    """The memory service the global options name, checked reachable, closed afterwards.

    Args:
        writes: the command writes; on Neo4j the schema is ensured first. A networkx store
            is opened read-only otherwise: no lock (so it works beside a process writing to
            the store) and nothing written.
    """
    service: MemoryService
    if settings.backend == "networkx":
        from graphmem.backends.networkx import GraphMemoryService

        service = GraphMemoryService(shared_decomposer(), path=settings.store_path, read_only=not writes)
    elif settings.backend == "neo4j":
        # The driver logs each retry of an unreachable server; the one-line error says it all.
        logging.getLogger("neo4j").addHandler(logging.NullHandler())
        try:
            from graphmem.backends.neo4j import Neo4jMemoryService
        except ImportError as exc:
            raise CliError(f"{exc}; or use --backend networkx") from exc
        auth = (settings.neo4j_user, settings.neo4j_password) if settings.neo4j_password else None
        service = Neo4jMemoryService(
            settings.neo4j_uri, auth=auth, database=settings.neo4j_database, nlp=shared_decomposer()
        )
    else:  # the option callback has already refused it; kept for callers from Python
        raise CliError(f"unknown backend {settings.backend!r}: use one of {', '.join(BACKENDS)}", EXIT_USAGE)
    try:
        try:
            await service.health_check()
        except BackendUnavailableError as exc:
            raise _unreachable(settings, exc) from exc
        if writes and hasattr(service, "ensure_schema"):
            await service.ensure_schema()
        yield service
    finally:
        await service.close()


def _unreachable(settings: Settings, exc: BackendUnavailableError) -> CliError:
    cause = exc.__cause__ if exc.__cause__ is not None else exc
    if settings.backend == "neo4j":
        if type(cause).__name__ == "AuthError":
            return CliError(
                f"Neo4j at {settings.neo4j_uri} refused the credentials: check --neo4j-user and "
                "--neo4j-password (GRAPHMEM_NEO4J_USER, GRAPHMEM_NEO4J_PASSWORD)",
                EXIT_UNAVAILABLE,
            )
        return CliError(
            f"cannot reach Neo4j at {settings.neo4j_uri} ({type(cause).__name__}): start it with "
            "`graphmem neo4j start`, or point --neo4j-uri (GRAPHMEM_NEO4J_URI) at a running server",
            EXIT_UNAVAILABLE,
        )
    return CliError(f"cannot open the networkx store {settings.store_path}: {exc}", EXIT_UNAVAILABLE)


P = ParamSpec("P")
T = TypeVar("T")


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def user_errors(command: Callable[P, T]) -> Callable[P, T]:
    """Report user mistakes and unreachable backends as one line and an exit code, no traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return command(*args, **kwargs)
        except CliError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except FixtureError as exc:
            raise fail(str(exc)) from None
        except ProjectScopingUnsupportedError as exc:
            backend = "networkx" if exc.backend == "GraphMemoryService" else exc.backend
            raise fail(
                f"the {backend} backend has no projects, which {exc.method}() needs: "
                "use --backend neo4j for project memory"
            ) from None
        except BackendUnavailableError as exc:
            raise fail(str(exc), EXIT_UNAVAILABLE) from None
        except GraphmemError as exc:  # invalid ids, unsupported operations, a corrupt journal
            raise fail(str(exc)) from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            message = str(first["msg"]).removeprefix("Value error, ")
            raise fail(f"{where}: {message}" if where else message, EXIT_USAGE) from None
        except ValueError as exc:  # a value the library refuses (e.g. a limit it cannot serve)
            raise fail(str(exc) or type(exc).__name__) from None
        except FileNotFoundError as exc:
            raise fail(f"no such file: {exc.filename}") from None
        except OSError as exc:
            name = f" {exc.filename}" if exc.filename else ""
            raise fail(f"cannot use{name}: {exc.strerror or exc}") from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def is_terminal() -> bool:
    return sys.stdin.isatty() and err_console.is_terminal
