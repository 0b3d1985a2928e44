"""The one error tree of graphmem.

Every error graphmem raises on purpose about a store or a backend (unreachable, locked,
corrupt, read-only, closed), about an id, and every refusal of an entry point's input (a
store URI, a fixture file, an ADK event or memory) derives from :class:`GraphmemError`, so
an application can catch the whole family with one ``except``; those about a value given
are also ValueErrors. Two kinds are left as Python and pydantic raise them: an argument
or record a method refuses (a ``limit`` out of range, an unknown ``language``, a blank or
over-long text, restored positions that do not increase) is a plain ``ValueError`` or
``TypeError``, as a standard function raises it; and validation errors of the pydantic
models (``pydantic.ValidationError``, a ``ValueError``) already name the field and the
rule that failed.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "DecompositionError",
    "EntryIdConflictError",
    "GraphmemError",
    "InvalidIdentifierError",
    "InvalidMemoryError",
    "InvalidProjectIdError",
    "InvalidStoreUriError",
    "JournalCompactionError",
    "JournalCorruptError",
    "ProjectScopingUnsupportedError",
    "ReadOnlyStoreError",
    "ServiceClosedError",
    "StoreLockedError",
    "UnsupportedOperationError",
]


class GraphmemError(Exception):
    """Root of every error graphmem raises on purpose."""


class InvalidIdentifierError(GraphmemError, ValueError):
    """An app, user, session or project id is not a non-empty string of at most 256 characters."""


class InvalidProjectIdError(InvalidIdentifierError):
    """A project id is empty, not a string, or longer than 256 characters."""


class InvalidStoreUriError(GraphmemError, ValueError):
    """A store URI that names no store graphmem can open: an unknown scheme, a malformed URI,
    or a path that cannot be a journal (a directory). The message shows the URI without its
    password."""


class InvalidMemoryError(GraphmemError, ValueError):
    """An ADK write (:mod:`graphmem.adk`) that cannot be stored as given: an event timestamp
    that is no time in seconds since the epoch, a memory timestamp that is not ISO 8601 (or
    leaves years 1 to 9999), or ``custom_metadata`` naming another project than the
    service's. Nothing of the call was stored."""


class ServiceClosedError(GraphmemError):
    """A call on a :class:`graphmem.adk.GraphmemMemoryService` after its ``close()``: a
    closed service never opens its store again (build a new one)."""


class UnsupportedOperationError(GraphmemError, NotImplementedError):
    """The backend does not implement this optional operation."""


class ProjectScopingUnsupportedError(UnsupportedOperationError):
    """A project-scoped call reached a backend whose ``supports_project_scoping()`` is false.

    Raised before anything is changed: a backend without project support never widens a
    project write or delete to the global scope.
    """

    def __init__(self, method: str, backend: str, *, call: str | None = None) -> None:
        """``call``: what asked for a project when it was no method of ``backend`` (a
        service built around it), as the message should name it."""
        self.method = method
        self.backend = backend
        super().__init__(
            f"{call or f'{backend}.{method}()'} needs project scoping, which {backend} does not support "
            f"(supports_project_scoping() is False). Use a backend whose "
            f"supports_project_scoping() is True, such as Neo4jMemoryService, or call the "
            f"global method (without a project id) on purpose."
        )


class BackendUnavailableError(GraphmemError, ConnectionError):
    """The storage backend cannot be reached (or failed while answering)."""


class EntryIdConflictError(GraphmemError, ValueError):
    """An entry id given to :meth:`~graphmem.MemoryService.restore_session` (or in a fixture)
    is already used by another entry: another user's, or this user's in another session or
    scope; or one given to :meth:`~graphmem.MemoryService.append_to_session` is used by any
    entry (an append never replaces one). Nothing was stored; load into a store without
    those entries, or leave the ids out to get new ones."""


class DecompositionError(GraphmemError, RuntimeError):
    """Decomposing texts in a worker process failed (see ``Decomposer(n_process=...)``).

    Raised before anything is stored. The error the worker raised, with its traceback,
    is the ``__cause__``.
    """


class JournalCorruptError(GraphmemError):
    """A networkx store file cannot be read as a graphmem journal.

    It is not a regular file, does not start with graphmem's header, or has a line that is
    not a valid record (unreadable JSON before the end, or a record of the wrong shape).
    The message names the file and, for a bad line, its line number. Nothing is written
    to such a file.
    """


class StoreLockedError(GraphmemError):
    """Another process is writing to this networkx store (one writer at a time).

    The message names the holder (pid, host and command, as it wrote them into the lock
    file). Open the store with ``read_only=True`` to read it meanwhile.
    """


class ReadOnlyStoreError(GraphmemError):
    """A write was called on a service opened with ``read_only=True``; nothing changed."""


class JournalCompactionError(GraphmemError, OSError):
    """A delete or replacement took effect, but its old text could not be erased from disk.

    The change is durable (its journal record was written) and visible, but compacting the
    journal failed (for example, the disk is full or the directory read-only), so the
    removed text is still in the journal file. The next write or the next writable open
    compacts again. The cause is the ``__cause__``.
    """
