"""What every command shares: the global options, opening a backend, turning errors into one line."""

from __future__ import annotations

import asyncio
import functools
import os
import secrets
import stat
import sys
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ParamSpec, TextIO, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from graphmem._decompose import Decomposer
from graphmem._errors import (
    BackendUnavailableError,
    GraphmemError,
    InvalidIdentifierError,
    InvalidStoreUriError,
    ProjectScopingUnsupportedError,
)
from graphmem._fixtures import FixtureError
from graphmem._open import neo4j_store_uri, open_memory, parse_store_uri
from graphmem._service import MemoryService
from graphmem.backends._journal import orphaned_segments
from graphmem.cli._render import plain

__all__ = [
    "BACKENDS",
    "EXIT_ERROR",
    "EXIT_UNAVAILABLE",
    "EXIT_USAGE",
    "CliError",
    "refuse_empty_variables",
    "Settings",
    "default_store",
    "err_console",
    "fail",
    "missing_store",
    "open_service",
    "out_console",
    "refuse_a_missing_store",
    "refuse_the_stores_own_files",
    "replacing_file",
    "run_async",
    "terminal_to_ask",
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


#: Options a command refuses to go without (``graphmem mcp``'s ``--app`` and ``--user``).
_NO_DEFAULT = frozenset({"app_name", "user_id"})


def refuse_empty_variables(ctx: typer.Context, *params: str) -> None:
    """Refuse the environment variable of any of these options set to the empty string (or
    blanks), unless the option was given on the command line: a :class:`CliError` (usage).
    The variable is the one the option declares (``envvar``).

    click reads an empty variable as unset, so the option's default would be used without a
    word: an unset variable in a template or a compose file (``GRAPHMEM_PROJECT=$PROJECT``)
    would serve global memory instead of a project, or open the default store."""
    declared = {p.name: p.envvar for p in ctx.command.params if isinstance(p.envvar, str)}
    options = {p.name: max(p.opts, key=len) for p in ctx.command.params}
    for param in params:
        variable = declared[param]
        value = os.environ.get(variable)
        source = ctx.get_parameter_source(param)  # (typer's own click: compared by name)
        given = source is not None and source.name == "COMMANDLINE"
        if value is not None and not value.strip() and not given:
            # --app and --user have no default: unset, they are missing.
            option = options[param]
            unset = f"and give {option}" if param in _NO_DEFAULT else "for the default"
            raise CliError(f"{variable} is set but empty: give it a value, or unset it {unset}", EXIT_USAGE)


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
    """The global options. ``uri`` (``--uri``, ``GRAPHMEM_URI``) names the store when given;
    otherwise the older options (``--backend``, ``--store``, ``--neo4j-*``) are mapped to one."""

    backend: str
    store: Path | None
    neo4j_uri: str
    neo4j_user: str
    neo4j_password: str | None
    neo4j_database: str | None
    uri: str | None = None
    #: Every text's language (``--language``), or ``"auto"`` to detect it per text.
    language: str = "auto"

    @property
    def store_path(self) -> Path:
        return self.store if self.store is not None else default_store()

    def target(self) -> str | Path:
        """The store as :func:`graphmem.open_memory` takes it: a URI, or the journal's path."""
        if self.uri:
            return self.uri
        if self.backend == "neo4j":
            return neo4j_store_uri(
                self.neo4j_uri, user=self.neo4j_user, password=self.neo4j_password, database=self.neo4j_database
            )
        # A Path, not a string: a file name with a colon in it is still a file name.
        return self.store_path

    def origin(self) -> str:
        """The option (and variable) that named the store, for an error about it."""
        if self.uri:
            return "--uri, GRAPHMEM_URI"
        if self.backend == "neo4j":
            return "--neo4j-uri, GRAPHMEM_NEO4J_URI"
        return "--store, GRAPHMEM_STORE"

    def describe(self) -> str:
        store = parse_store_uri(self.target())
        if store.kind == "neo4j":
            return f"Neo4j at {store.display}"
        return "networkx in memory" if store.path is None else f"networkx store {store.display}"


@functools.cache
def shared_decomposer(language: str = "auto") -> Decomposer:
    """One decomposer per language setting and process, its pipelines loaded on first use
    (commands run in-process share it)."""
    return Decomposer(language=language)


def missing_store(settings: Settings) -> str | None:
    """The journal the global options name, when there is no store at its path (a mistyped
    ``--store``); ``None`` when there is one, or the store is no journal. A link to a file
    that is not there is no store either."""
    store = parse_store_uri(settings.target())
    if store.kind != "file" or store.path is None or os.path.exists(store.path):
        return None
    segments = store.path.with_name(store.path.name + ".d")
    if segments.is_dir() and any(name.endswith(".journal") for name in os.listdir(segments)):
        # A store whose header is gone: opening it says so, and what to restore.
        return None
    if os.path.islink(store.path):
        return f"{store.display} (a link to {os.readlink(store.path)}, which is not there)"
    return store.display


def refuse_a_missing_store(settings: Settings, *, writes: bool) -> None:
    """Raise the :class:`CliError` for a journal path where there is no store (see
    :func:`missing_store`), or for ``memory:``; do nothing when there is a store, or the
    store is no journal.

    Args:
        writes: the command would have written; the message then says nothing was changed
            (else that nothing was read).
    """
    if parse_store_uri(settings.target()).kind == "memory":
        # Every command is a process of its own, and memory: lives in it: always empty here,
        # where "nothing stored" would pass for an answer (as a mistyped --store once did).
        raise CliError(
            f"memory: holds nothing between commands (each graphmem command is a process of its own): nothing "
            f"was {'changed' if writes else 'read'}; give --uri (GRAPHMEM_URI) a journal path or a Neo4j URI "
            "(memory: is for graphmem mcp, which keeps it while it runs)",
            EXIT_USAGE,
        )
    if (missing := missing_store(settings)) is not None:
        raise CliError(
            f"no store at {missing}: nothing was {'changed' if writes else 'read'} (check --store / "
            "GRAPHMEM_STORE or --uri / GRAPHMEM_URI; a store is made by its first write)"
        )
    store = parse_store_uri(settings.target())
    if store.kind == "file" and store.path is not None and not _has_content(store.path):
        # A store whose header is gone: said here, before a delete asks "Delete ...?".
        if (orphaned := orphaned_segments(store.path)) is not None:
            raise CliError(str(orphaned))


def _has_content(path: Path) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


@asynccontextmanager
async def open_service(
    settings: Settings, *, writes: bool = False, makes_store: bool = False
) -> AsyncIterator[MemoryService]:
    """The memory service the global options name, checked reachable, closed afterwards.

    Args:
        writes: the command writes; the factory then sets up the store's schema. A store
            is opened read-only otherwise: a journal without its lock (so it works beside a
            process writing to it) and nothing written.
        makes_store: a journal path where there is no store is a store to make (``load``):
            read-only it reads as empty and nothing is made, with ``writes`` it is made.
            Otherwise it is refused: a mistyped path read as an empty store made an export
            "of everything stored" write an empty file and exit 0, and a check that a user
            was erased pass; a delete there removed nothing, exited 0 and left an empty
            store behind for those reads to pass on.
    """
    try:
        if not makes_store:
            refuse_a_missing_store(settings, writes=writes)
        service = await open_memory(
            settings.target(), nlp=shared_decomposer(settings.language), read_only=not writes
        )
    except BackendUnavailableError as exc:
        raise CliError(f"{exc}; or point --uri (GRAPHMEM_URI) at another store", EXIT_UNAVAILABLE) from exc
    except InvalidStoreUriError as exc:
        raise CliError(f"{exc} ({settings.origin()})", EXIT_USAGE) from exc
    except ImportError as exc:  # a Neo4j URI without the neo4j extra
        raise CliError(str(exc)) from exc
    try:
        yield service
    finally:
        await service.close()


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
                "use a Neo4j store for project memory (--uri bolt://..., or --backend neo4j)"
            ) from None
        except BackendUnavailableError as exc:
            raise fail(str(exc), EXIT_UNAVAILABLE) from None
        except InvalidIdentifierError as exc:  # an --app, --user, session or project id given
            raise fail(str(exc), EXIT_USAGE) from None
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
        except OSError as exc:  # exc.filename is None when a write to an open file fails (disk full)
            name = f" {exc.filename}" if exc.filename else ""
            raise fail(f"cannot use{name}: {exc.strerror or exc}") from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper


def refuse_the_stores_own_files(settings: Settings, output: Path) -> None:
    """An output file (``export -o``, ``graph -o``) must not be a file of the journal store
    being read: writing it would destroy the store."""
    from graphmem.backends._journal import holds_path

    store = parse_store_uri(settings.target())
    if store.kind == "file" and store.path is not None and holds_path(store.path, output):
        raise CliError(f"{output} is a file of the store itself ({store.path}): write the output elsewhere", EXIT_USAGE)


@contextmanager
def replacing_file(path: Path) -> Iterator[IO[bytes]]:
    """Write ``path`` whole or not at all: the bytes go to a temporary file beside it, which
    is ``fsync``-ed and renamed over ``path`` only when the block ends without an error.

    A failed write (disk full, an exception while rendering) leaves an earlier file of that
    name as it was, where writing in place would have truncated it. A symlink is followed (its
    target is replaced, the link stays); a path that is no regular file (``/dev/stdout``, a
    pipe) is written in place, since there is nothing to replace. A new file is its owner's
    alone (mode 600, as the store's files: an export or a picture holds the memories it
    shows); a replaced one keeps its mode, so a file shared on purpose stays shared.
    """
    try:
        before = path.stat()  # follows a symlink, like open() would
    except FileNotFoundError:
        before = None
    try:
        if before is not None and not stat.S_ISREG(before.st_mode):
            with open(path, "wb") as fh:
                yield fh
            return
        target = Path(os.path.realpath(path))
        # A name no one can know beforehand, created new: a link planted at a predictable
        # temporary name would have sent the bytes to its target (the store's journal).
        temporary = target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(8)}.tmp")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "wb") as fh:
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
            if before is not None:
                os.chmod(temporary, stat.S_IMODE(before.st_mode))
            os.replace(temporary, target)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
    except OSError as exc:  # a failed write names no file (exc.filename is None): say which
        raise CliError(f"cannot write {path}: {exc.strerror or exc}") from exc


@contextmanager
def terminal_to_ask() -> Iterator[tuple[TextIO, TextIO] | None]:
    """Where a question to the person running the command is answered and asked: standard
    input, and stderr (or the terminal itself); ``None`` when standard input is no terminal.

    A script or a pipe on standard input has nobody behind it to answer. The question goes to
    stderr when that is a terminal, else to the terminal itself (``/dev/tty``): a command run
    with ``2>log`` still has a person at the keyboard, and once went on without asking them.
    Without ``/dev/tty`` (no controlling terminal, Windows) it goes to stderr, wherever that is.
    """
    if sys.stdin is None or not sys.stdin.isatty():
        yield None
        return
    if sys.stderr is not None and sys.stderr.isatty():
        yield sys.stdin, sys.stderr
        return
    try:
        terminal = open("/dev/tty", "w", encoding=sys.stdin.encoding, errors="backslashreplace")
    except OSError:
        yield sys.stdin, sys.stderr
        return
    with terminal:
        yield sys.stdin, terminal
