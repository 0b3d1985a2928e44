"""graphmem as an MCP server (``graphmem mcp``): memory tools for any MCP client.

The store is any URI :func:`graphmem.open_memory` takes. The app and user (and optionally a
project) are fixed when the server starts, never chosen by the client: every tool reads and
deletes that user's memory only, so one server per user is the unit of isolation.

Tools: ``remember``, ``recall``, ``recent``, ``forget`` and ``stats``. Results are compact
JSON (also sent as structured content with an output schema); a failure is an MCP tool
error (``isError``) whose text is one line saying why. Bad arguments are refused by the
input schema or by graphmem's validation, never crash the server; an argument a tool does
not take (a misspelt ``limt``) is refused too, never ignored. While the backend is down a
tool answers with an error, and the next call after it is back succeeds.

Needs the ``mcp`` extra (``pip install 'graphmem[mcp]'``).
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import json
import logging
import os
import socket
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphmem._decompose import clean_text
from graphmem._errors import BackendUnavailableError, GraphmemError, ProjectScopingUnsupportedError
from graphmem._models import (
    Content,
    MemoryEntry,
    SearchHit,
    SearchRequest,
    parse_time_bound,
    validate_identifier,
    validate_project_id,
)
from graphmem._open import open_memory, parse_store_uri
from graphmem._service import MemoryService, StoredEntry

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"the MCP server needs the mcp SDK: pip install 'graphmem[mcp]' ({exc})") from exc

if TYPE_CHECKING:
    from graphmem._decompose import Decomposer

__all__ = ["CannotListenError", "LazyStore", "MemoryScope", "create_server", "serve"]

logger = logging.getLogger("graphmem.mcp")
T = TypeVar("T")

#: The longest text ``remember`` takes, a tenth of graphmem's own limit (``MAX_TEXT_LENGTH``,
#: 1,048,576): any text this long fits the SDK's 4 MiB limit on an HTTP request however the
#: client encodes it (12 bytes a character at most, an emoji as JSON escapes), where a
#: 1,048,576-character one of emoji is refused by the transport, a protocol error instead of
#: one line saying why. A call stores a fact or a turn; a document goes in parts.
REMEMBER_MAX_CHARS = 100_000

INSTRUCTIONS = (
    "Long-term memory of one user. Call `recall` with the user's question before answering anything that may "
    "depend on earlier conversations; call `remember` with facts worth keeping (one fact or turn per call; pass "
    "the same session_id for turns of one conversation). Recall matches words and names (and, for English, "
    "nouns and adjectives close in meaning: 'pet' finds 'puppy'), not paraphrases: use the words the memory "
    "would contain. Each hit says which words and names matched and its score (0..1)."
)


@dataclass(frozen=True, slots=True)
class MemoryScope:
    """Whose memory the server serves: fixed at start, never chosen by the client."""

    app_name: str
    user_id: str
    project_id: str | None = None

    def __post_init__(self) -> None:
        validate_identifier(self.app_name, "app_name")
        validate_identifier(self.user_id, "user_id")
        if self.project_id is not None:
            validate_project_id(self.project_id)

    def sees(self, entry: StoredEntry) -> bool:
        """Whether an entry is in this scope: global memory, plus the project's if one is fixed."""
        return entry.project_id is None or entry.project_id == self.project_id


# ---------------------------------------------------------------------------- results


class _Compact(BaseModel):
    def compact(self) -> dict[str, Any]:
        """The result as JSON data, with the empty fields of the items in its lists left out."""
        return {key: _pruned(value) for key, value in self.model_dump(mode="json", exclude_none=True).items()}


def _pruned(value: Any) -> Any:
    if isinstance(value, list):
        return [_pruned(item) for item in value]
    if isinstance(value, dict):
        return {key: _pruned(item) for key, item in value.items() if item not in (None, [], {})}
    return value


class Hit(_Compact):
    id: str = Field(description="entry id (for forget)")
    text: str
    score: float = Field(description="0..1; higher is a better match")
    author: str
    time: str = Field(description="when it was said, ISO 8601 UTC")
    session: str | None = None
    project: str | None = None
    matched: list[str] = Field(default_factory=list, description="query words (lemmas) the memory contains")
    entities: list[str] = Field(default_factory=list, description="names the memory shares with the query")
    context: float | None = Field(None, description="part of the score from neighbouring turns of its conversation")
    context_from: str | None = Field(None, description="id of the neighbouring turn whose match lent that part")
    time_match: str | None = Field(None, description="how it matched a date or time named in the query")
    related_to: dict[str, str] | None = Field(
        None, description="matched words read as related to a query word, and that word ({'puppy': 'pet'})"
    )
    read_as: dict[str, str] | None = Field(
        None, description="query words read as another word of the memory (a misspelling, a name spelled another way, "
        "'I' read as the author 'user', or as the name of the one speaking in the role 'user')",
    )
    other_speaker: bool | None = Field(
        None, description="true when the query names a speaker and someone else said this (its score was lowered)"
    )
    folded: list[Hit] | None = Field(
        None, description="the other messages of the same reply (its author's consecutive messages) recalled too"
    )


class RecallResult(_Compact):
    hits: list[Hit]


def _hit(hit: SearchHit) -> Hit:
    """A search hit as the recall tool shows it (the reply's other messages nested)."""
    return Hit(
        id=hit.entry_id,
        text=hit.memory.text,
        score=round(hit.score, 3),
        author=hit.memory.author,
        time=_when(hit.memory.timestamp),
        session=hit.session_id,
        project=hit.project_id,
        matched=hit.matched_tokens,
        entities=hit.matched_entities,
        context=round(hit.context_score, 3) if hit.context_score else None,
        context_from=hit.context_from,
        time_match=hit.matched_time,
        related_to=hit.related_to or None,
        read_as=hit.read_as or None,
        other_speaker=True if hit.by_named_speaker is False else None,
        folded=[_hit(other) for other in hit.folded] or None,
    )


class Memory(_Compact):
    id: str
    text: str
    author: str
    time: str
    session: str | None = None
    project: str | None = None


class RecentResult(_Compact):
    memories: list[Memory]


class RememberResult(_Compact):
    id: str = Field(description="the new entry's id")
    session: str | None = None


class ForgetResult(_Compact):
    removed: int = Field(description="how many memories were deleted")


class StatsResult(_Compact):
    entries: int
    sessions: int
    tokens: int
    entities: int
    projects: int


def _result(model: _Compact) -> CallToolResult:
    # The SDK would indent the text copy; the model reads compact JSON just as well, in fewer tokens.
    data = model.compact()
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def _when(value: datetime) -> str:
    return value.isoformat(timespec="seconds").replace("+00:00", "Z")


def _memory(entry: StoredEntry) -> Memory:
    return Memory(
        id=entry.entry_id,
        text=entry.memory.text,
        author=entry.memory.author,
        time=_when(entry.memory.timestamp),
        session=entry.session_id,
        project=entry.project_id,
    )


# ---------------------------------------------------------------------------- the store


class LazyStore:
    """The service, opened on first use and again after an open that failed (a server
    started while its backend was down serves once the backend is up)."""

    def __init__(self, uri: str | os.PathLike[str], nlp: Decomposer | str | None) -> None:
        self.uri = uri
        self._nlp = nlp
        self._service: MemoryService | None = None
        self._opening = asyncio.Lock()

    async def get(self) -> MemoryService:
        if self._service is None:
            async with self._opening:
                if self._service is None:
                    self._service = await open_memory(self.uri, nlp=self._nlp)
        return self._service

    async def close(self) -> None:
        if self._service is not None:
            await self._service.close()
            self._service = None


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "failed"


def _first_problem(exc: ValidationError) -> tuple[str, str]:
    """Where the first refused value is and why, without pydantic's "Value error, " prefix
    (our validators' messages are whole sentences)."""
    first = exc.errors()[0]
    return ".".join(str(p) for p in first["loc"]), str(first["msg"]).removeprefix("Value error, ")


def _visible(text: str) -> bool:
    """Whether ``text`` shows anything: more than spaces and the control and format
    characters the pipeline reads as spaces or deletes (``\\u200b``, a soft hyphen, NUL)."""
    return bool(clean_text(text).strip())


async def _answer(work: Callable[[], Awaitable[T]]) -> T:
    """Run a tool's work; every failure becomes a one-line tool error, none crashes the server."""
    try:
        return await work()
    except ToolError:
        raise
    except BackendUnavailableError as exc:
        raise ToolError(_one_line(f"memory is unavailable, try again later: {exc}")) from exc
    except ValidationError as exc:
        where, message = _first_problem(exc)
        # A message that names its field already ("timestamp ... is outside years 1 to 9999")
        # is not prefixed with it again.
        named = not where or message.startswith(f"{where} ")
        raise ToolError(_one_line(message if named else f"{where}: {message}")) from exc
    except (GraphmemError, ValueError, TypeError) as exc:
        raise ToolError(_one_line(str(exc) or type(exc).__name__)) from exc
    except Exception as exc:  # a bug must not take the server down with it
        logger.exception("graphmem tool failed")
        raise ToolError(f"internal error ({type(exc).__name__}); the server keeps running") from exc


# ---------------------------------------------------------------------------- the server


def _refusing_unknown_arguments(tool: Tool) -> Tool:
    """The tool with an arguments model that refuses a name it does not declare, and an input
    schema saying so (``additionalProperties: false``).

    The SDK's models ignore such a name (pydantic's default; modelcontextprotocol/python-sdk
    issue 3067, with no option to change it): ``remember(sesion_id=...)`` stored the text
    outside its conversation, ``recall(limt=1)`` recalled the default 5.
    """
    lenient = tool.fn_metadata.arg_model
    # A subclass keeps the SDK's fields and config (pydantic merges it) and only adds extra="forbid".
    strict: type[BaseModel] = type(
        lenient.__name__, (lenient,), {"model_config": ConfigDict(extra="forbid"), "__module__": __name__}
    )
    metadata = tool.fn_metadata.model_copy(update={"arg_model": strict})
    return tool.model_copy(update={"fn_metadata": metadata, "parameters": strict.model_json_schema(by_alias=True)})


class _GraphmemMcp(MCPServer[Any]):
    """The SDK's server, with arguments refused by the input schema reported in one line
    (the SDK passes pydantic's multi-line report through)."""

    def __init__(self, name: str, *, tools: list[Tool], **options: Any) -> None:
        super().__init__(name, tools=tools, **options)
        # What each tool takes, for the error naming an argument it does not.
        self._takes = {tool.name: list(tool.parameters.get("properties", {})) for tool in tools}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problem = self._argument_problem(name, cause)
                raise ToolError(_one_line(f"invalid arguments for {name}: {problem}")) from cause
            if isinstance(cause, ToolError):
                # graphmem's own refusal, a sentence of its own: without the SDK's "Error
                # executing tool recall: " before it (the client knows what it called).
                raise ToolError(_one_line(str(cause))) from cause.__cause__
            raise ToolError(_one_line(str(exc))) from cause

    def _argument_problem(self, tool: str, exc: ValidationError) -> str:
        # An unknown name first: a misspelt required argument is also reported missing, and
        # the name is what to correct.
        unknown = [repr(error["loc"][0]) for error in exc.errors() if error["type"] == "extra_forbidden"]
        if unknown:
            takes = ", ".join(self._takes.get(tool, [])) or "no arguments"
            return f"unknown argument{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} ({tool} takes {takes})"
        where, message = _first_problem(exc)
        return f"{where}: {message}"


def create_server(
    uri: str | os.PathLike[str],
    scope: MemoryScope,
    *,
    nlp: Decomposer | str | None = None,
) -> tuple[MCPServer[Any], LazyStore]:
    """Build the MCP server over the store at ``uri`` for one app and user.

    Nothing is opened here: the store opens on the first tool call (or on
    :func:`serve`'s start), and again on the next call if it could not be reached.
    Close it with ``await store.close()`` when the server is done.

    Args:
        uri: the store, as :func:`graphmem.open_memory` takes it.
        scope: the app, user and optional project every tool works on.
        nlp: the spaCy pipeline (name or ``Decomposer``) for the store.

    Returns:
        The server and its store.

    Raises:
        InvalidStoreUriError: a URI that names no store.
    """
    parse_store_uri(uri)  # a malformed URI fails now, not on the first call
    store = LazyStore(uri, nlp)
    # One conversation appended at a time: an append rewrites the session (see remember).
    session_writes = asyncio.Lock()
    app, user, project = scope.app_name, scope.user_id, scope.project_id
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    tools: list[Tool] = []

    def tool(**options: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """The SDK's ``@server.tool(...)``, for a tool that refuses an argument it does not take."""

        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            tools.append(_refusing_unknown_arguments(Tool.from_function(fn, **options)))
            return fn

        return register

    @tool(
        description=(
            "Store a memory for this user: a fact, a preference, or one turn of a conversation. "
            "Give session_id to add it as the next turn of that conversation (turns next to a match are "
            "recalled with it); without one it is stored on its own. Returns the new memory's id."
        ),
        annotations=ToolAnnotations(destructive_hint=False, idempotent_hint=False, open_world_hint=False),
    )
    async def remember(
        text: Annotated[
            str, Field(min_length=1, max_length=REMEMBER_MAX_CHARS, description="what to remember, as plain text")
        ],
        session_id: Annotated[
            str | None,
            Field(min_length=1, max_length=256, description="conversation id; appends to that conversation"),
        ] = None,
        author: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=256,
                description="who said it (its name is searchable); default 'user', or 'assistant' for the role 'model'",
            ),
        ] = None,
        role: Annotated[
            Literal["user", "model"],
            Field(
                description="'user' for what a person said, 'model' for the assistant's own words: a question in "
                "the first person asks about the one speaking as the user"
            ),
        ] = "user",
        # A string, read by MemoryEntry as every entry point reads a time: typed as a datetime,
        # pydantic read "20240503" as seconds since 1970.
        timestamp: Annotated[
            str | None, Field(description="when it was said, ISO 8601; default now; no zone means UTC")
        ] = None,
    ) -> Annotated[CallToolResult, RememberResult]:
        async def work() -> CallToolResult:
            if not _visible(text):
                # Only spaces, or only characters that show nothing (zero-width spaces, soft
                # hyphens, control characters): stored, it could never be recalled or forgotten.
                raise ToolError("text is blank (nothing but spaces or invisible characters): nothing to remember")
            # The assistant's words under the author "user" read as the person's own: "what's my
            # dog called?" then found what the assistant said.
            said_by = author if author is not None else ("assistant" if role == "model" else "user")
            if not _visible(said_by) or any(unicodedata.category(ch) == "Cc" for ch in said_by):
                # A name the model garbled: stored, it would be a speaker no question can name.
                raise ToolError(f"author {said_by!r} is blank or holds control characters: give who said it")
            given = {"content": Content(role=role).with_text(text), "author": said_by}
            entry = MemoryEntry.model_validate(given if timestamp is None else {**given, "timestamp": timestamp})
            service = await store.get()
            if session_id is None:
                if project is None:
                    entry_id = await service.add_entry(app, user, entry)
                else:
                    entry_id = await service.add_entry_to_project(app, user, project, entry)
                assert entry_id is not None  # the text is not blank
                return _result(RememberResult(id=entry_id))
            async with session_writes:
                return _result(RememberResult(id=await _append(service, session_id, entry), session=session_id))

        return await _answer(work)

    async def _append(service: MemoryService, session_id: str, entry: MemoryEntry) -> str:
        # The next turn of that conversation: NEXT links it to the last one stored.
        if project is None:
            ids = await service.append_to_session(app, user, session_id, [entry])
        else:
            ids = await service.append_to_session_in_project(app, user, session_id, project, [entry])
        return ids[0]

    @tool(
        description=(
            "Search this user's memories by the words and names they share with the query, and by English nouns "
            "and adjectives close in meaning to the query's (`related_to`: 'puppy' for 'pet'; off when the server "
            "runs with --no-related-words). "
            "Returns the best matches first, each with its score (0..1), the words (`matched`) and names "
            "(`entities`) it shares with the query, and `context` when part of its score comes from the "
            "neighbouring turns of its conversation. A date in the query (\"on 3 May 2023\", \"last week\") "
            "favours memories from then (`time_match`); a query asking for a date alone (\"what did we talk "
            "about yesterday?\") returns the memories of that date. A question in the first person (\"what's my "
            "dog called?\") favours what the author 'user' (remember's default) said, or else the author "
            "speaking in the role 'user' beside an assistant. since/until keep only "
            "memories stamped in that window."
        ),
        annotations=read_only,
    )
    async def recall(
        query: Annotated[str, Field(min_length=1, max_length=10_000, description="what to look for")],
        # Strict: lax pydantic would read true as 1 and "5" as 5.
        limit: Annotated[int, Field(ge=1, le=100, strict=True, description="at most this many memories")] = 5,
        min_score: Annotated[
            float | None,
            Field(
                ge=0.0, le=1.0, strict=True, allow_inf_nan=False, description="leave out memories scoring below this"
            ),
        ] = None,
        since: Annotated[
            str | None,
            Field(description="only memories from this date or time on, ISO 8601; no zone means UTC"),
        ] = None,
        until: Annotated[
            str | None,
            Field(description="only memories up to this date (the whole day) or time, ISO 8601; no zone means UTC"),
        ] = None,
    ) -> Annotated[CallToolResult, RecallResult]:
        async def work() -> CallToolResult:
            service = await store.get()
            response = await service.search(
                SearchRequest(
                    query=query,
                    app_name=app,
                    user_id=user,
                    limit=limit,
                    min_score=min_score,
                    project_id=project,
                    since=None if since is None else parse_time_bound(since),
                    until=None if until is None else parse_time_bound(until, end_of_day=True),
                )
            )
            hits = [_hit(hit) for hit in response.hits]
            return _result(RecallResult(hits=hits))

        return await _answer(work)

    @tool(description="This user's newest memories first, with their ids.", annotations=read_only)
    async def recent(
        limit: Annotated[int, Field(ge=1, le=100, strict=True, description="at most this many memories")] = 10,
    ) -> Annotated[CallToolResult, RecentResult]:
        async def work() -> CallToolResult:
            service = await store.get()
            # Scoped before the limit is applied: other projects' newer entries do not shorten the page.
            entries = await service.recent_entries(app, user, limit, project_id=project, global_only=project is None)
            return _result(RecentResult(memories=[_memory(e) for e in entries if scope.sees(e)]))

        return await _answer(work)

    @tool(
        description=(
            "Delete memories of this user, for good. Give exactly one of: entry_id (one memory, from recall or "
            "recent), session_id (every memory of that conversation), or query (every memory that shares a word "
            "or name with it as written, its author's own name aside; a date or time in it is neither a word nor a "
            "filter, and a query asking only for a date removes nothing; misspellings and related words are not "
            "read as recall reads them, and recall shows only its best hits: to remove exactly what recall showed, "
            "forget those by entry_id). Returns how many were removed."
        ),
        annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=True, open_world_hint=False),
    )
    async def forget(
        entry_id: Annotated[str | None, Field(min_length=1, max_length=256, description="one memory's id")] = None,
        session_id: Annotated[
            str | None, Field(min_length=1, max_length=256, description="a conversation's id")
        ] = None,
        query: Annotated[
            str | None, Field(min_length=1, max_length=10_000, description="forget what matches this")
        ] = None,
    ) -> Annotated[CallToolResult, ForgetResult]:
        async def work() -> CallToolResult:
            given = [name for name, value in (("entry_id", entry_id), ("session_id", session_id), ("query", query))
                     if value is not None]
            if len(given) != 1:
                raise ToolError(f"give exactly one of entry_id, session_id or query (got {', '.join(given) or 'none'})")
            service = await store.get()
            if entry_id is not None:
                found = await service.get_entry(app, user, entry_id)
                removed = await service.delete_entry(app, user, entry_id) if found and scope.sees(found) else 0
            elif session_id is not None:
                validate_identifier(session_id, "session_id")
                async with session_writes:
                    doomed = [e.entry_id for e in await service.list_entries(app, user, all_projects=True)
                              if e.session_id == session_id and scope.sees(e)]
                    removed = await service.delete_entries_by_id(app, user, doomed)
            else:
                assert query is not None
                removed = await service.delete_entries(app, user, query)
                if project is not None:
                    removed += await service.delete_entries_in_project(app, user, project, query)
            return _result(ForgetResult(removed=removed))

        return await _answer(work)

    @tool(description="How much this user has stored: memories, conversations, words, names.", annotations=read_only)
    async def stats() -> Annotated[CallToolResult, StatsResult]:
        async def work() -> CallToolResult:
            service = await store.get()
            # What this server's scope sees, never another project's counts or words.
            counts = await service.scope_stats(app, user, project)
            return _result(
                StatsResult(
                    entries=counts.entries,
                    sessions=counts.sessions,
                    tokens=counts.tokens,
                    entities=counts.entities,
                    projects=counts.projects,
                )
            )

        return await _answer(work)

    server = _GraphmemMcp("graphmem", tools=tools, instructions=INSTRUCTIONS, version=_version(), log_level="WARNING")
    return server, store


async def serve(
    uri: str | os.PathLike[str],
    scope: MemoryScope,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    nlp: Decomposer | str | None = None,
) -> None:
    """Run the MCP server until its client goes away (stdio) or it is stopped (HTTP).

    The store is opened first, so a URI that names no store, a journal held by another
    writer or a corrupt one stops the start with its error, as does a project in ``scope``
    on a store without project support (every tool would fail). An unreachable server does
    not: the tools answer with an error until it is back.

    Args:
        uri: the store, as :func:`graphmem.open_memory` takes it.
        scope: the app, user and optional project every tool works on.
        transport: ``"stdio"`` (the client starts this process) or ``"http"`` (streamable
            HTTP at ``http://host:port/mcp``).
        host: the address to listen on (HTTP).
        port: the port to listen on (HTTP).
        nlp: the spaCy pipeline (name or ``Decomposer``) for the store.

    Raises:
        InvalidStoreUriError: a URI that names no store.
        ProjectScopingUnsupportedError: ``scope`` has a project and the store has no projects.
        CannotListenError: HTTP on an address it cannot listen on (its port in use, an
            address not this machine's).
    """
    security = _transport_security(host) if transport == "http" else None
    server, store = create_server(uri, scope, nlp=nlp)
    try:
        try:
            service = await store.get()
        except BackendUnavailableError as exc:
            logger.warning("%s; starting anyway: the tools answer with an error until it is reachable", exc)
        else:
            if scope.project_id is not None and not service.supports_project_scoping():
                raise ProjectScopingUnsupportedError("add_session_to_project", type(service).__name__)
        if transport == "http":
            bind_failure = _BindFailure()
            uvicorn_log = logging.getLogger("uvicorn.error")
            uvicorn_log.addFilter(bind_failure)  # a logger's filters outlive uvicorn's logging setup
            try:
                await server.run_streamable_http_async(host=host, port=port, transport_security=security)
            except SystemExit as exc:  # uvicorn's way of saying it could not start
                if bind_failure.error is None:
                    raise  # another failure, which uvicorn's own lines (not held back) explain
                raise CannotListenError(host, port, bind_failure.error) from exc
            finally:
                uvicorn_log.removeFilter(bind_failure)
        else:
            await server.run_stdio_async()
    finally:
        await store.close()


class CannotListenError(OSError):
    """The HTTP server cannot listen on its address: one line saying why, with the ``errno``
    of the failed bind (``EADDRINUSE`` for a port in use)."""

    def __init__(self, host: str, port: int, cause: OSError) -> None:
        why = {
            errno.EADDRINUSE: "the port is in use",
            errno.EADDRNOTAVAIL: "the address is not this machine's",
        }.get(cause.errno or 0, cause.strerror or str(cause))
        super().__init__(cause.errno, f"cannot listen on {host}:{port}: {why}")


class _BindFailure(logging.Filter):
    """Holds back uvicorn's log line for an address it could not bind and keeps the error,
    which :func:`serve` reports as graphmem's one line (the two were printed one after the
    other). uvicorn logs that error as the record's message itself (``logger.error(exc)``);
    every other record passes, so its other errors are still printed."""

    def __init__(self) -> None:
        super().__init__()
        self.error: OSError | None = None

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, OSError):
            self.error = record.msg
            return False
        return True


def _transport_security(host: str) -> TransportSecuritySettings | None:
    """What an HTTP server listening on ``host`` accepts as the Host and Origin of a request.

    On a loopback address, however written (``127.0.0.1``, ``127.1``, ``127.0.0.2``,
    ``localhost``, ``::1``), only requests naming a loopback host: a web page that points its
    own domain at 127.0.0.1 (DNS rebinding) is refused, where the MCP SDK turned this on
    only for three spellings. Another address is the operator's choice (README): ``None``.

    Raises:
        ValueError: an empty host, which would listen on every interface.
    """
    if not host.strip():
        raise ValueError("--host is empty, which listens on every interface: give 127.0.0.1 for this machine only")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        try:
            loopback = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
        except OSError:
            loopback = False
    if not loopback:
        return None
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    hosts = dict.fromkeys(["127.0.0.1", "localhost", "[::1]", shown])
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:*" for h in hosts],
        allowed_origins=[f"http://{h}:*" for h in hosts],
    )


def _version() -> str:
    from graphmem import __version__

    return __version__
