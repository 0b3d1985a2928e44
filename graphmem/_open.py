"""``open_memory``: one way to open a store, from a backend URI.

Every caller that opens a store (the CLI, ``scripts/load_fixtures.py``, the benchmarks,
the tests, the MCP server, the ADK service) goes through :func:`open_memory`, so none of
them picks a backend class or remembers a setup step of its own.

=================================================  =======================================
URI                                                store
=================================================  =======================================
``memory:``                                        networkx, in this process only
``file:///path/to/memory.journal`` or a plain path networkx with its journal
``bolt://``, ``bolt+s://``, ``neo4j://``,          Neo4j; ``user:password@`` in the URI or
``neo4j+s://`` (and ``+ssc``)                      ``GRAPHMEM_NEO4J_PASSWORD``; ``?database=``
=================================================  =======================================

Each may carry a ``graphmem+`` prefix (``graphmem+neo4j://...``, ``graphmem+file:///...``),
as registries that dispatch on the scheme (Google ADK's) need.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from graphmem._errors import BackendUnavailableError, GraphmemError, InvalidStoreUriError
from graphmem._service import MemoryService

if TYPE_CHECKING:
    from spacy.language import Language

    from graphmem._decompose import Decomposer
    from graphmem._scoring import ScoringWeights

__all__ = ["StoreUri", "neo4j_store_uri", "on_or_off", "open_memory", "parse_store_uri", "redact_uri"]

#: The Neo4j driver's own schemes (``+s``: TLS with a verified certificate; ``+ssc``: self-signed).
NEO4J_SCHEMES = frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"})
#: The optional prefix of every scheme, for registries keyed by scheme.
PREFIX = "graphmem+"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")
_KNOWN = "memory:, file:///path, a plain path, bolt://, bolt+s://, neo4j://, neo4j+s://"


@dataclass(frozen=True, slots=True)
class StoreUri:
    """A parsed store URI: which backend, and what it needs to connect.

    ``kind`` is ``"memory"``, ``"file"`` or ``"neo4j"``; ``display`` is the URI as it may
    be shown (never with a password).
    """

    kind: str
    display: str
    path: Path | None = None
    neo4j_uri: str | None = None
    user: str | None = None
    password: str | None = None
    database: str | None = None
    #: Neo4j settings the URI gave (``?replica_max_entries=0``), as constructor arguments.
    settings: tuple[tuple[str, int], ...] = ()


def redact_uri(uri: str | os.PathLike[str]) -> str:
    """The URI without its password (``bolt://neo4j:***@host``), fit for a message or a log.

    Read by hand, not by ``urlsplit``: a password holding an unencoded ``/``, ``?`` or
    ``#`` (generated ones often do) ends ``urlsplit``'s host part early, which then saw no
    password at all and gave the URI back whole. Everything between ``://`` and the last
    ``@`` is the user and password."""
    if not isinstance(uri, str):
        return os.fspath(uri)
    scheme, sep, rest = uri.partition("://")
    if sep:
        if "@" not in rest:
            return _without_query_values(uri)
        userinfo, _, host = rest.rpartition("@")
        user, colon, _password = userinfo.partition(":")
        return _without_query_values(f"{scheme}://{user}:***@{host}" if colon else uri)
    # No "//": "neo4j:s3cr3t@host" (a user and password with the scheme forgotten: the user
    # reads as a scheme) or "bolt:/user:pw@host". Everything before the "@" but the first
    # word is hidden; a path's drive letter is no such word ("C:\\notes@home").
    head, at, host = uri.rpartition("@")
    word = _LEADING_WORD.match(head) if at else None
    return uri if word is None else _without_query_values(f"{word.group(1)}:***@{host}")


#: A scheme or user name before a colon, of two characters or more.
_LEADING_WORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")


def _without_query_values(uri: str) -> str:
    """``uri`` with the values of its query options hidden but those of ``?database=`` and
    :data:`NEO4J_URI_SETTINGS`: another option may be a password put there
    ("?password=...")."""
    base, question, query = uri.partition("?")
    if not question:
        return uri
    shown = []
    for option in query.split("&"):
        name, _, value = option.partition("=")
        shown.append(option if not value or name in ("database", *NEO4J_URI_SETTINGS) else f"{name}=***")
    return f"{base}?{'&'.join(shown)}"


def parse_store_uri(uri: str | os.PathLike[str]) -> StoreUri:
    """Read a store URI (see the module's table); nothing is opened or connected.

    Raises:
        InvalidStoreUriError: an unknown scheme, a malformed URI, or a path that cannot be
            a journal file (a directory, an empty path).
    """
    if isinstance(uri, os.PathLike):
        return _file_store(Path(os.fspath(uri)), os.fspath(uri))
    if not isinstance(uri, str):
        raise InvalidStoreUriError(f"a store URI must be a string or a path, got {type(uri).__name__}")
    text = uri.strip()
    if not text:
        raise InvalidStoreUriError(f"the store URI is empty: use one of {_KNOWN}")
    if text.lower().startswith(PREFIX):
        text = text[len(PREFIX) :]
    match = _SCHEME.match(text)
    # One letter before the colon is a Windows drive (C:\...), not a scheme.
    if match is None or len(match.group(1)) == 1:
        return _file_store(Path(text), text)
    scheme = match.group(1).lower()
    if scheme == "memory":
        if text[len("memory:") :].strip("/"):
            raise InvalidStoreUriError(f"{redact_uri(uri)!r}: memory: takes nothing after the colon")
        return StoreUri("memory", "memory:")
    if scheme == "file":
        return _file_uri(text, uri)
    if scheme in NEO4J_SCHEMES:
        return _neo4j_uri(text, uri)
    raise InvalidStoreUriError(f"unknown store scheme {scheme + ':'!r} in {redact_uri(uri)!r}: use one of {_KNOWN}")


def _file_uri(text: str, original: str) -> StoreUri:
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise InvalidStoreUriError(f"{redact_uri(original)!r} is not a valid file: URI ({exc})") from None
    if parts.netloc not in ("", "localhost"):
        raise InvalidStoreUriError(
            f"{redact_uri(original)!r} names host {parts.netloc.rpartition('@')[2]!r}: a journal must be on "
            "this machine (file:///absolute/path)"
        )
    if parts.query or parts.fragment:
        raise InvalidStoreUriError(f"{redact_uri(original)!r}: a file: URI takes no ?query or #fragment")
    return _file_store(Path(unquote(parts.path)), original)


def _file_store(path: Path, original: str) -> StoreUri:
    if not str(path).strip() or str(path) == ".":
        raise InvalidStoreUriError(f"{original!r} names no file: give the journal's path, such as memory.journal")
    if "\x00" in str(path):
        raise InvalidStoreUriError(f"{original!r} holds a NUL character, which no file name can")
    if original.rstrip().endswith(("/", os.sep)):
        # Path() drops the slash; one written says a directory is meant, which is no journal.
        raise InvalidStoreUriError(
            f"{original!r} ends with a slash, so it names a directory: name the journal file inside it, "
            f"such as {path.expanduser() / 'memory.journal'}"
        )
    path = path.expanduser()
    if path.is_dir():
        raise InvalidStoreUriError(
            f"{original!r} is a directory: name the journal file inside it, such as {path / 'memory.journal'}"
        )
    return StoreUri("file", os.fspath(path), path=path)


#: The Neo4j service's settings a store URI may carry (``?replica_max_entries=0``): the
#: process's copies of large users (see :mod:`graphmem.backends._replica`).
NEO4J_URI_SETTINGS = ("replica_min_entries", "replica_max_entries")


def _neo4j_uri(text: str, original: str) -> StoreUri:
    shown = redact_uri(original)
    try:
        parts = urlsplit(text)
        port = parts.port  # raises on a port that is not a number, or out of range
    except ValueError:
        # Not the parser's message: it quotes what it took for the port, which is part of
        # the password when one holds an unencoded "/", "?" or "#".
        raise InvalidStoreUriError(
            f"{shown!r} is not a valid Neo4j URI ({_port_problem(text)}; a password holding / ? # @ [ ] "
            "must be percent-encoded, or given in GRAPHMEM_NEO4J_PASSWORD)"
        ) from None
    if parts.netloc and "@" in parts.path + parts.query + parts.fragment:
        # The user's part ended early at an unencoded "/", "?" or "#" of the password: what
        # the parser took for a path, option or fragment is the rest of the password.
        raise InvalidStoreUriError(
            f"{shown!r} is not a valid Neo4j URI (an @ after its host: a password holding / ? # @ [ ] "
            "must be percent-encoded, or given in GRAPHMEM_NEO4J_PASSWORD)"
        )
    if not parts.hostname:
        raise InvalidStoreUriError(
            f"{shown!r} names no host: write it as bolt://host:7687"
            + (", a user and password as bolt://user:password@host:7687" if "@" in text else "")
        )
    if parts.path not in ("", "/") or parts.fragment or text.endswith("#"):
        # Silently dropped by the driver: bolt://host:7687/mydb opened the default database.
        raise InvalidStoreUriError(
            f"{shown!r}: a Neo4j URI has no path or #fragment; name a database with ?database=NAME"
        )
    options = parse_qs(parts.query, keep_blank_values=True)
    unknown = sorted(set(options) - {"database", *NEO4J_URI_SETTINGS})
    if unknown:
        raise InvalidStoreUriError(
            f"{shown!r}: unknown option {unknown[0]!r}; the options are ?database=NAME and "
            + ", ".join(f"?{name}=N" for name in NEO4J_URI_SETTINGS)
        )
    databases = options.get("database", [])
    if len(databases) > 1 or (databases and not databases[0]):
        raise InvalidStoreUriError(f"{shown!r}: give ?database= once, with a name")
    settings = []
    for name in NEO4J_URI_SETTINGS:
        values = options.get(name, [])
        if len(values) > 1 or (values and not values[0].isascii()) or (values and not values[0].isdigit()):
            raise InvalidStoreUriError(f"{shown!r}: give ?{name}= once, as a whole number (0 or more)")
        if values:
            settings.append((name, int(values[0])))
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = host if port is None else f"{host}:{port}"
    bare = urlunsplit((parts.scheme.lower(), netloc, "", "", ""))
    user = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    return StoreUri(
        "neo4j",
        redact_uri(text),
        neo4j_uri=bare,
        user=user,
        password=password,
        database=databases[0] if databases else None,
        settings=tuple(settings),
    )


def _port_problem(text: str) -> str:
    """What is wrong with the port of a URI the parser refused, without quoting it (it may
    be part of a password)."""
    try:
        host_and_port = urlsplit(text).netloc.rpartition("@")[2]
    except ValueError:  # an unencoded "[" or "]" (the parser reads brackets as an IPv6 host)
        return "an unencoded [ or ] (only an IPv6 host is written in brackets)"
    port = host_and_port.rpartition("]")[2] if host_and_port.startswith("[") else host_and_port
    if ":" in port and re.fullmatch(r"[+-]?\d+", port.rpartition(":")[2]):
        return "port must be a number from 0 to 65535"
    return "its port is no number"


def neo4j_store_uri(
    uri: str, *, user: str | None = None, password: str | None = None, database: str | None = None
) -> str:
    """A Neo4j store URI from separate settings (as the CLI's ``--neo4j-*`` options give them).

    The user and password written in ``uri`` are kept unless the arguments override them:
    a ``password`` replaces the URI's, a ``user`` other than ``neo4j`` replaces the URI's
    user (``neo4j`` is the default every caller passes when none was set, so it does not
    override a user the URI names).

    Raises:
        InvalidStoreUriError: ``uri`` cannot be read as a URI (the message holds no password).
    """
    try:
        parts = urlsplit(uri)
        written_user = unquote(parts.username) if parts.username else None
    except ValueError:  # (urllib's bare "Invalid IPv6 URL", or a port that is no number)
        raise InvalidStoreUriError(f"{redact_uri(uri)!r} is not a valid Neo4j URI: {_port_problem(uri)}") from None
    netloc = parts.netloc.rpartition("@")[2]
    written_password = unquote(parts.password) if parts.password is not None else None
    if user == "neo4j" and written_user is not None:
        user = None
    user = user or written_user
    password = password or written_password
    if password:
        netloc = f"{quote(user or 'neo4j', safe='')}:{quote(password, safe='')}@{netloc}"
    elif user and user != "neo4j":
        netloc = f"{quote(user, safe='')}@{netloc}"
    query = parts.query
    if database:  # (in place of the URI's database; its other options kept)
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "database"]
        query = urlencode([("database", database), *kept], quote_via=quote, safe="")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


async def open_memory(
    uri: str | os.PathLike[str],
    *,
    nlp: Language | str | Decomposer | None = None,
    read_only: bool = False,
    weights: ScoringWeights | None = None,
    language: str | None = None,
    related_words: bool | None = None,
    **options: Any,
) -> MemoryService:
    """Open the store a URI names, ready to use: reachable, and with its schema in place.

    ``memory:`` keeps memory in this process (networkx); ``file:///path/memory.journal`` or a
    plain path opens a networkx journal (its files created when it is opened for writing); ``bolt://``,
    ``bolt+s://``, ``neo4j://`` and ``neo4j+s://`` connect to Neo4j, with the user and
    password from the URI (``bolt://neo4j:secret@host:7687``) or else from
    ``GRAPHMEM_NEO4J_USER`` (default ``neo4j``) and ``GRAPHMEM_NEO4J_PASSWORD`` (none: auth
    off), and the database from ``?database=NAME``. Any of them may be written with a
    ``graphmem+`` prefix. The factory checks the store can be reached and, for a writer,
    sets up Neo4j's schema (idempotent: it costs one read when the schema is there).

    Args:
        uri: the store URI, or a path (``pathlib.Path``) to a journal.
        nlp: the spaCy pipeline, its name, or a ``Decomposer`` (shared with the caller).
        read_only: open for reading. A journal is then read without taking the writer's
            lock and every write raises ``ReadOnlyStoreError``; on Neo4j the schema is not
            touched (reads work without it). ``memory:`` cannot be opened read-only.
        weights: the scorer's constants.
        language: every entry's and query's language (``"ja"``, ...), ``"auto"``, or
            ``None`` to leave it to the decomposer (see :class:`MemoryService`).
        related_words: whether a query's nouns and adjectives are also read as the user's
            words close to them in meaning (``ScoringWeights.related_words``, on by
            default). ``None``: from ``GRAPHMEM_RELATED_WORDS`` (``1``, ``true``, ``yes``,
            ``on``, or ``0``, ``false``, ``no``, ``off``), else as ``weights`` say. So every
            entry point that opens a store through this factory (CLI, MCP server, ADK
            service) can turn it off.
        **options: passed to the backend's constructor (for Neo4j: ``connection_timeout``,
            ``retry_time``, ``read_timeout``, ...).

    Returns:
        The service; the caller closes it (``await service.close()`` or ``async with``).

    Raises:
        InvalidStoreUriError: an unknown scheme, a malformed URI, a directory where the
            journal should be.
        BackendUnavailableError: the server cannot be reached or refuses the credentials
            (the message names the URI without its password).
        StoreLockedError: another process writes the journal (open ``read_only`` to read).
        JournalCorruptError: the file is not a graphmem journal, or cannot be one (a path
            under a file, a device).
        OSError: the file system refuses to make or open one of the journal's files (no
            permission, a parent that cannot be made, a full disk); it names that file.
        ImportError: a Neo4j URI without the ``neo4j`` extra installed.
        ValueError: an unknown ``language``, or one given with a ``Decomposer``; a
            ``GRAPHMEM_RELATED_WORDS`` that is no on/off value.
    """
    store = parse_store_uri(uri)
    if related_words is None and (setting := os.environ.get("GRAPHMEM_RELATED_WORDS", "").strip()):
        related_words = on_or_off(setting, "GRAPHMEM_RELATED_WORDS")
    if related_words is not None:
        from graphmem._scoring import ScoringWeights

        weights = dataclasses.replace(weights or ScoringWeights(), related_words=related_words)
    service: MemoryService
    if store.kind in ("memory", "file"):
        from graphmem.backends.networkx import GraphMemoryService

        if read_only and store.path is None:
            raise InvalidStoreUriError("memory: cannot be opened read-only: it starts empty and nothing can write it")
        service = GraphMemoryService(
            nlp, path=store.path, read_only=read_only, weights=weights, language=language, **options
        )
    else:
        try:
            from graphmem.backends.neo4j import Neo4jMemoryService
        except ImportError as exc:
            raise ImportError(f"{store.display} needs the neo4j driver: pip install 'graphmem[neo4j]'") from exc
        # The driver logs each retry against an unreachable server; the error says it once.
        logging.getLogger("neo4j").addHandler(logging.NullHandler())
        password = store.password if store.password is not None else os.environ.get("GRAPHMEM_NEO4J_PASSWORD")
        user = store.user or os.environ.get("GRAPHMEM_NEO4J_USER") or "neo4j"
        assert store.neo4j_uri is not None
        service = Neo4jMemoryService(
            store.neo4j_uri,
            auth=(user, password) if password else None,
            database=store.database,
            nlp=nlp,
            weights=weights,
            language=language,
            **{**dict(store.settings), **options},
        )
    try:
        try:
            await service.health_check()
        except BackendUnavailableError as exc:
            raise BackendUnavailableError(_unreachable(store, exc)) from exc
        except OSError as exc:
            if isinstance(exc, GraphmemError):
                raise
            if isinstance(exc, NotADirectoryError | IsADirectoryError) and _names_the_store(exc, store):
                # A journal under a file, or a path that is a directory: the URI is wrong.
                raise InvalidStoreUriError(f"cannot use {store.display} as a journal: {exc.strerror or exc}") from exc
            # One of the store's own files (its lock, segments, a snapshot) is of the wrong
            # kind: the URI is right, and the error names that file.
            # Permissions, a full disk, an I/O error: the URI is right, the file system refuses.
            if exc.filename is None:
                raise OSError(exc.errno, exc.strerror or str(exc), str(store.path or store.display)) from exc
            raise
        if not read_only:
            await service.ensure_schema()
    except BaseException:
        await service.close()
        raise
    return service


def on_or_off(value: str, name: str) -> bool:
    """An on/off setting written as ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``."""
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={value!r}: use 1, true, yes or on (or 0, false, no, off)")


def _names_the_store(exc: OSError, store: StoreUri) -> bool:
    """Whether ``exc`` is about the store's path itself (or names no file)."""
    if exc.filename is None or store.path is None:
        return True
    return bool(os.path.realpath(exc.filename) == os.path.realpath(store.path))


def _unreachable(store: StoreUri, exc: BackendUnavailableError) -> str:
    if store.kind != "neo4j":
        return f"cannot open {store.display}: {exc}"
    from neo4j.exceptions import AuthError

    cause = exc.__cause__
    if isinstance(cause, AuthError):
        return (
            f"Neo4j at {store.display} refused the credentials: put them in the URI "
            "(bolt://user:password@host:7687) or set GRAPHMEM_NEO4J_USER and GRAPHMEM_NEO4J_PASSWORD"
        )
    if getattr(cause, "code", None) == "Neo.ClientError.Database.DatabaseNotFound":
        return f"{exc}".rstrip(".")  # reached, but it serves no database of that name
    reason = type(cause).__name__ if cause is not None else str(exc)
    return f"cannot reach Neo4j at {store.display} ({reason}): is the server running? (graphmem neo4j start)"
