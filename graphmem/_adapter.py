"""``MemoryServiceAdapter``: a service bound to one app and user (and optionally a project)."""

from __future__ import annotations

from graphmem._models import MemoryEntry, SearchRequest, validate_identifier, validate_project_id
from graphmem._service import MemoryService

__all__ = ["MemoryServiceAdapter"]


class MemoryServiceAdapter:
    """Binds a :class:`MemoryService` to one (app_name, user_id) and, optionally, a project.

    A project-bound adapter (from :meth:`with_project_id`) routes ``search``, ``add`` and
    ``delete`` to the project methods of the service, so on a backend without project
    support they raise ``ProjectScopingUnsupportedError`` instead of touching global memory.

    Args:
        service: the memory service.
        app_name: the app every call is scoped to.
        user_id: the user every call is scoped to.
        project_id: the project every call is scoped to, or ``None`` for global memory.

    Raises:
        InvalidIdentifierError: a bad ``app_name`` or ``user_id`` (checked here, not by the
            first call, where ``search`` raised pydantic's ``ValidationError``).
        InvalidProjectIdError: a bad ``project_id``.
    """

    def __init__(
        self,
        service: MemoryService,
        app_name: str,
        user_id: str,
        project_id: str | None = None,
    ) -> None:
        validate_identifier(app_name, "app_name")
        validate_identifier(user_id, "user_id")
        if project_id is not None:
            validate_project_id(project_id)
        self.service = service
        self.app_name = app_name
        self.user_id = user_id
        self.project_id = project_id

    def with_project_id(self, project_id: str) -> MemoryServiceAdapter:
        """Return an adapter bound to the same app and user and to ``project_id``."""
        return MemoryServiceAdapter(self.service, self.app_name, self.user_id, validate_project_id(project_id))

    def supports_project_scoping(self) -> bool:
        """Whether the wrapped service supports project-scoped calls."""
        return self.service.supports_project_scoping()

    async def health_check(self) -> None:
        """Check that the wrapped service's backend can be reached (see
        :meth:`MemoryService.health_check`)."""
        await self.service.health_check()

    async def search(self, query: str, limit: int | None = None) -> list[MemoryEntry]:
        """Recall memories for ``query`` (global, or global plus the bound project), best
        first. A reply typed as several messages comes back whole, its messages in order
        (rule 7 in :mod:`graphmem._scoring`: ``limit`` counts replies, so more entries may come back)."""
        request = SearchRequest(
            query=query,
            app_name=self.app_name,
            user_id=self.user_id,
            limit=limit,
            project_id=self.project_id,
        )
        return [message.memory for hit in (await self.service.search(request)).hits for message in hit.reply]

    async def search_in_project(self, query: str, project_id: str, limit: int | None = None) -> list[MemoryEntry]:
        """Recall memories for ``query`` from global memory plus ``project_id``."""
        return await self.with_project_id(project_id).search(query, limit)

    async def add(self, entry: MemoryEntry) -> str | None:
        """Remember one entry (in the bound project, if any); returns its id."""
        if self.project_id is None:
            return await self.service.add_entry(self.app_name, self.user_id, entry)
        return await self.service.add_entry_to_project(self.app_name, self.user_id, self.project_id, entry)

    async def add_to_project(self, entry: MemoryEntry, project_id: str) -> str | None:
        """Remember one entry in ``project_id``."""
        return await self.with_project_id(project_id).add(entry)

    async def delete(self, query: str) -> int:
        """Delete the entries matching ``query`` (global, or only the bound project's)."""
        if self.project_id is None:
            return await self.service.delete_entries(self.app_name, self.user_id, query)
        return await self.service.delete_entries_in_project(self.app_name, self.user_id, self.project_id, query)
