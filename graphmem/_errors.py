"""The one error tree of graphmem.

Every error graphmem raises on purpose derives from :class:`GraphmemError`, so an
application can catch the whole family with one ``except``. Validation errors of
the pydantic models (``pydantic.ValidationError``, a ``ValueError``) are left as
pydantic raises them: they already name the field and the rule that failed.
"""

from __future__ import annotations

__all__ = [
    "BackendUnavailableError",
    "DecompositionError",
    "GraphmemError",
    "InvalidIdentifierError",
    "InvalidProjectIdError",
    "ProjectScopingUnsupportedError",
    "UnsupportedOperationError",
]


class GraphmemError(Exception):
    """Root of every error graphmem raises on purpose."""


class InvalidIdentifierError(GraphmemError, ValueError):
    """An app, user, session or project id is not a non-empty string of at most 256 characters."""


class InvalidProjectIdError(InvalidIdentifierError):
    """A project id is empty, not a string, or longer than 256 characters."""


class UnsupportedOperationError(GraphmemError, NotImplementedError):
    """The backend does not implement this optional operation."""


class ProjectScopingUnsupportedError(UnsupportedOperationError):
    """A project-scoped call reached a backend whose ``supports_project_scoping()`` is false.

    Raised before anything is changed: a backend without project support never widens a
    project write or delete to the global scope.
    """

    def __init__(self, method: str, backend: str) -> None:
        self.method = method
        self.backend = backend
        super().__init__(
            f"{backend}.{method}() needs project scoping, which {backend} does not support "
            f"(supports_project_scoping() is False). Use a backend whose "
            f"supports_project_scoping() is True, such as Neo4jMemoryService, or call the "
            f"global method (without a project id) on purpose."
        )


class BackendUnavailableError(GraphmemError, ConnectionError):
    """The storage backend cannot be reached (or failed while answering)."""


class DecompositionError(GraphmemError, RuntimeError):
    """Decomposing texts in a worker process failed (see ``Decomposer(n_process=...)``).

    Raised before anything is stored. The error the worker raised, with its traceback,
    is the ``__cause__``.
    """
