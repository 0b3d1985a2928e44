"""``graphmem.adk``: graphmem as a Google ADK memory service, through ADK's own code.

The service tests run on every backend (the ``service`` fixture). The end-to-end tests
drive ADK's real ``Runner`` with the example agent of ``examples/adk_agent`` and its
scripted model (no network): session 1 goes into memory through
``add_session_to_memory``, and in session 2 what the ``load_memory`` / ``preload_memory``
tool hands the model holds the recalled turn.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from conftest import in_ci, make_neo4j_service, neo4j_uri_or_skip

if not in_ci():  # in CI the dev extra installs ADK: a missing one must fail, not skip
    pytest.importorskip("google.adk", reason="the adk extra is not installed (pip install 'graphmem[adk]')")

from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry as AdkMemoryEntry  # noqa: E402
from google.adk.sessions.session import Session  # noqa: E402
from google.genai import types  # noqa: E402

from graphmem import (  # noqa: E402
    Content,
    Decomposer,
    Decomposition,
    Entity,
    EntryRecord,
    GraphmemError,
    GraphMemoryService,
    InvalidMemoryError,
    MemoryService,
    ProjectScopingUnsupportedError,
    ServiceClosedError,
)
from graphmem import MemoryEntry as GraphmemEntry  # noqa: E402
from graphmem._models import MAX_TEXT_LENGTH  # noqa: E402
from graphmem.adk import REPLY_ID_SEPARATOR, GraphmemMemoryService, _owner_suffix, register_with_adk  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_ROOT / "examples" / "adk_agent"
APP, USER = "companion", "alice"
T0 = datetime(2026, 1, 9, 20, 0, tzinfo=UTC)


def text_event(author: str, text: str, at: float, *, role: str | None = None, **extra: Any) -> Event:
    role = role or ("user" if author == "user" else "model")
    return Event(
        author=author,
        content=types.Content(role=role, parts=[types.Part(text=text)]),
        timestamp=(T0 + timedelta(minutes=at)).timestamp(),
        **extra,
    )


def call_events(at: float) -> list[Event]:
    """A function call and its response: plumbing, no text to remember."""
    call = types.Part(function_call=types.FunctionCall(name="load_memory", args={"query": "sister"}))
    answer = types.Part(function_response=types.FunctionResponse(name="load_memory", response={"memories": []}))
    stamp = (T0 + timedelta(minutes=at)).timestamp()
    return [
        Event(author="companion", content=types.Content(role="model", parts=[call]), timestamp=stamp),
        Event(author="companion", content=types.Content(role="user", parts=[answer]), timestamp=stamp),
    ]


def entry_of(text: str) -> GraphmemEntry:
    return GraphmemEntry(content=Content(role="user").with_text(text), author="user", timestamp=T0)


def session_of(session_id: str, events: list[Event], user: str = USER) -> Session:
    return Session(id=session_id, app_name=APP, user_id=user, events=events)


async def stored(service: MemoryService, user: str = USER, project: str | None = None) -> list[tuple[str, str | None, int]]:
    return [
        (e.memory.text, e.session_id, e.position)
        for e in await service.list_entries(APP, user, project, all_projects=project is None)
    ]


# ---------------------------------------------------------------------------- the memory service


async def test_add_session_to_memory_replaces_the_session_and_keeps_only_text(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    events = [
        text_event("user", "My sister Maria moved to Lisbon.", 0),
        *call_events(1),
        text_event("companion", "Lisbon is lovely.", 2, partial=True),  # a stream chunk
        text_event("companion", "", 2),  # no text at all
        text_event("companion", "How does she like Lisbon?", 3),
    ]
    await memory.add_session_to_memory(session_of("s1", events))
    assert await stored(service) == [("My sister Maria moved to Lisbon.", "s1", 0), ("How does she like Lisbon?", "s1", 1)]

    # The same session, grown by a turn, added again: replaced, never duplicated.
    events.append(text_event("user", "She loves the trams.", 4))
    await memory.add_session_to_memory(session_of("s1", events))
    await memory.add_session_to_memory(session_of("s1", events))
    assert await stored(service) == [
        ("My sister Maria moved to Lisbon.", "s1", 0),
        ("How does she like Lisbon?", "s1", 1),
        ("She loves the trams.", "s1", 2),
    ]


async def test_thoughts_are_not_remembered(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    mixed = Event(
        author="companion",
        content=types.Content(
            role="model", parts=[types.Part(text="the user seems sad", thought=True), types.Part(text="Tea helps.")]
        ),
        timestamp=T0.timestamp(),
    )
    await memory.add_session_to_memory(session_of("s1", [mixed]))
    assert await stored(service) == [("Tea helps.", "s1", 0)]


def voice_event(author: str, text: str, at: float, *, heard: bool, finished: bool = True) -> Event:
    """A live (voice) session's transcription event: no content, what was said as text."""
    said = types.Transcription(text=text, finished=finished)
    return Event(
        author=author,
        input_transcription=said if heard else None,
        output_transcription=None if heard else said,
        timestamp=(T0 + timedelta(minutes=at)).timestamp(),
    )


async def test_what_was_said_by_voice_is_remembered(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    events = [
        text_event("user", "Remind me: my sister lives in Lisbon.", 0),
        # One utterance transcribed over two events (until one is finished) is one entry, as
        # ADK reads it to the model; pieces without a space at the boundary get one.
        voice_event("user", "My dentist is Dr. Okafor", 1, heard=True, finished=False),
        voice_event("user", "on Main Street.", 1.1, heard=True),
        voice_event("companion", "Got it, Dr. Okafor.", 2, heard=False),
        voice_event("user", "   ", 3, heard=True),  # nothing said
    ]
    await memory.add_session_to_memory(session_of("s1", events))
    assert await stored(service) == [
        ("Remind me: my sister lives in Lisbon.", "s1", 0),
        ("My dentist is Dr. Okafor on Main Street.", "s1", 1),
        ("Got it, Dr. Okafor.", "s1", 2),
    ]
    entries = await service.list_entries(APP, USER)
    assert [(e.memory.author, e.memory.content.role) for e in entries[1:]] == [("user", "user"), ("companion", "model")]
    assert entries[1].memory.timestamp == T0 + timedelta(minutes=1.1)  # when the utterance ended


async def test_each_finished_utterance_is_its_own_memory(service: MemoryService) -> None:
    """Two finished transcriptions of one speaker in a row are two utterances (ADK's finished
    event holds all of one): they were glued into "...LisbonMy dog...", and "Lisbon" was lost."""
    memory = GraphmemMemoryService(service)
    events = [
        voice_event("user", "My sister lives in Lisbon", 0, heard=True),
        voice_event("user", "My dog is called Rex", 1, heard=True),
        voice_event("user", "東京に", 2, heard=True, finished=False),  # no space between these letters
        voice_event("user", "住んでいます", 2.1, heard=True),
    ]
    await memory.add_session_to_memory(session_of("s1", events))
    assert await stored(service) == [
        ("My sister lives in Lisbon", "s1", 0), ("My dog is called Rex", "s1", 1), ("東京に住んでいます", "s1", 2)]
    best = (await memory.search_memory(app_name=APP, user_id=USER, query="Lisbon")).memories[0]
    assert best.content.parts is not None and best.content.parts[0].text == "My sister lives in Lisbon"
    assert best.custom_metadata["matched_tokens"] == ["lisbon"]


async def test_a_users_message_as_written_recalls_what_it_asks(service: MemoryService) -> None:
    """ADK's PreloadMemoryTool searches with the user's message as written, greeting and
    thanks included: the turn it asks about comes first, not the greetings."""
    memory = GraphmemMemoryService(service)
    chat = [text_event("user", "Hey! Thanks for yesterday, that reminds me of home.", 0),
            text_event("companion", "Hey! Glad it helped, thanks for telling me.", 0.5)]
    await memory.add_session_to_memory(session_of("s1", chat))
    await memory.add_session_to_memory(session_of("s2", [text_event("user", "My sister Maria has a bakery in Lisbon.", 5)]))
    for day in range(3):
        await memory.add_session_to_memory(session_of(f"n{day}", [text_event("user", f"Garden notes, week {day}.", 9 + day)]))
    message = "Hey! Can you remind me what my sister's bakery is called? Thanks!"
    best = (await memory.search_memory(app_name=APP, user_id=USER, query=message)).memories[0]
    assert best.content.parts is not None and best.content.parts[0].text == "My sister Maria has a bakery in Lisbon."


async def test_a_users_question_about_themselves_recalls_what_they_said(service: MemoryService) -> None:
    """ADK stores what its user types under the author "user": a question in the first person
    asks about that, not about the agent's reply that repeats the same words."""
    memory = GraphmemMemoryService(service)
    chat = [text_event("user", "We adopted a beagle, his name is Rex.", 0),
            text_event("companion", "Rex is a great name for a beagle you adopted!", 0.5)]
    await memory.add_session_to_memory(session_of("s1", chat))
    found = (await memory.search_memory(app_name=APP, user_id=USER, query="What name did I give the beagle I adopted?"))
    assert [m.author for m in found.memories] == ["user", "companion"]
    # Asked in the third person, the two match alike and the newer comes first.
    asked = (await memory.search_memory(app_name=APP, user_id=USER, query="What name was the adopted beagle given?"))
    assert [m.author for m in asked.memories] == ["companion", "user"]


async def test_turns_a_rewind_undid_are_not_remembered(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    kept = [text_event("user", "My favourite colour is green.", 0, invocation_id="i1"),
            text_event("companion", "Noted.", 0.5, invocation_id="i1")]
    undone = [text_event("user", "My bank password is hunter2, oops wrong window.", 1, invocation_id="i2"),
              text_event("companion", "Noted.", 1.5, invocation_id="i2")]
    rewind = Event(
        author="user",
        invocation_id="i3",
        actions=EventActions(rewind_before_invocation_id="i2"),
        timestamp=(T0 + timedelta(minutes=2)).timestamp(),
    )
    later = text_event("user", "I also like blue.", 3, invocation_id="i4")
    # A rewind to an invocation that is not earlier in the session undoes nothing else.
    stray = Event(author="user", actions=EventActions(rewind_before_invocation_id="i9"), timestamp=later.timestamp)
    await memory.add_session_to_memory(session_of("s1", [*kept, *undone, rewind, later, stray]))
    assert [text for text, _, _ in await stored(service)] == ["My favourite colour is green.", "Noted.", "I also like blue."]
    assert (await memory.search_memory(app_name=APP, user_id=USER, query="bank password")).memories == []


@pytest.mark.parametrize("stamp", [1e20, float("nan"), 1.7e12, -1e12])
async def test_an_event_time_out_of_range_is_a_clear_error_and_stores_nothing(service: MemoryService, stamp: float) -> None:
    memory = GraphmemMemoryService(service)
    bad = Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]), timestamp=stamp)
    with pytest.raises(InvalidMemoryError, match=r"is not seconds since the epoch .*nothing of these events was stored"):
        await memory.add_session_to_memory(session_of("s1", [text_event("user", "hello", 0), bad]))
    with pytest.raises(ValueError, match="milliseconds"):
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[text_event("user", "hello", 0), bad])
    assert await stored(service) == []


async def test_a_session_loaded_in_part_keeps_the_turns_before_it(service: MemoryService) -> None:
    """A runner that loads only the latest events (``GetSessionConfig(num_recent_events=N)``)
    passes a part of the session: the stored turns older than its first event stay, and
    from that event on the session is replaced as always (a rewind in it still undoes)."""
    for project in (None, "p1") if service.supports_project_scoping() else (None,):
        memory = GraphmemMemoryService(service, project_id=project)
        full = [
            text_event("user", "My sister Maria lives in Lisbon.", 0, invocation_id="i1"),
            text_event("companion", "Noted.", 1, invocation_id="i1"),
            text_event("user", "I like green tea.", 2, invocation_id="i2"),
            text_event("companion", "Green tea, noted.", 3, invocation_id="i2"),
        ]
        await memory.add_session_to_memory(session_of("s1", full))
        before = {e.memory.text: e for e in await service.session_entries(APP, USER, "s1", project_id=project)}

        # The last two events, one more turn, then that turn rewound and another said.
        window = [
            *full[2:],
            text_event("user", "My bank PIN is 1234.", 4, invocation_id="i3"),
            Event(author="user", invocation_id="i4", actions=EventActions(rewind_before_invocation_id="i3"),
                  timestamp=(T0 + timedelta(minutes=5)).timestamp()),
            text_event("user", "My dog is called Rex.", 6, invocation_id="i5"),
        ]
        await memory.add_session_to_memory(session_of("s1", window))
        after = await service.session_entries(APP, USER, "s1", project_id=project)
        assert [(e.memory.text, e.position) for e in after] == [
            ("My sister Maria lives in Lisbon.", 0), ("Noted.", 1), ("I like green tea.", 2),
            ("Green tea, noted.", 3), ("My dog is called Rex.", 4)]
        # The kept turns are the stored ones (same ids; their terms: the next test).
        for kept in after[:2]:
            assert kept.entry_id == before[kept.memory.text].entry_id
        found = (await memory.search_memory(app_name=APP, user_id=USER, query="Where does Maria live?")).memories
        assert found[0].content.parts is not None and found[0].content.parts[0].text == "My sister Maria lives in Lisbon."
        assert "Noted." in [m.content.parts[0].text for m in found]  # type: ignore[index]  # still its NEXT neighbour

        # The whole session again: replaced as it always was, the rewound turn gone.
        await memory.add_session_to_memory(session_of("s1", full + window[2:]))
        assert [(e.memory.text, e.position) for e in await service.session_entries(APP, USER, "s1", project_id=project)] == [
            (e, i) for i, e in enumerate(
                ["My sister Maria lives in Lisbon.", "Noted.", "I like green tea.", "Green tea, noted.", "My dog is called Rex."])]
        # A session of no events covers no time: nothing is replaced.
        await memory.add_session_to_memory(session_of("s1", []))
        assert len(await service.session_entries(APP, USER, "s1", project_id=project)) == 5


async def test_a_session_loaded_in_part_keeps_the_turns_said_at_its_first_moment_before_it(
    service: MemoryService,
) -> None:
    """Turns of one moment (two events in one microsecond, a fixed clock) cannot be told
    apart by time: a window starting at that moment keeps the stored turns of it that the
    window does not say again, and replaces those it does."""
    for project in (None, "p1") if service.supports_project_scoping() else (None,):
        memory = GraphmemMemoryService(service, project_id=project)
        full = [
            text_event("user", "My sister Maria lives in Lisbon.", 0),
            text_event("companion", "Noted, Maria in Lisbon.", 1),
            text_event("user", "I like green tea.", 1),  # the same moment as the reply before it
            text_event("companion", "Green tea noted.", 2),
        ]
        await memory.add_session_to_memory(session_of("s1", full))
        [_, reply, *_] = await service.session_entries(APP, USER, "s1", project_id=project)

        async def texts(project: str | None = project) -> list[str]:
            return [e.memory.text for e in await service.session_entries(APP, USER, "s1", project_id=project)]

        await memory.add_session_to_memory(session_of("s1", [*full[2:], text_event("user", "My dog is Rex.", 3)]))
        assert await texts() == [
            "My sister Maria lives in Lisbon.", "Noted, Maria in Lisbon.", "I like green tea.", "Green tea noted.",
            "My dog is Rex."]
        kept = (await service.session_entries(APP, USER, "s1", project_id=project))[1]
        assert kept.entry_id == reply.entry_id  # the stored turn itself, not a new one

        # A window that starts at that moment with a call (no text) says nothing of it: both
        # turns of the moment stay, and nothing is said twice.
        await memory.add_session_to_memory(session_of("s1", [*call_events(1), *full[2:]]))
        assert await texts() == [
            "My sister Maria lives in Lisbon.", "Noted, Maria in Lisbon.", "I like green tea.", "Green tea noted."]

        # Every event at one moment (a fixed clock): a window of the last two keeps the first two.
        fixed = [text_event("user", text, 0) for text in ("One.", "Two.", "Three.", "Four.")]
        await memory.add_session_to_memory(session_of("s2", fixed))
        await memory.add_session_to_memory(session_of("s2", [*fixed[2:], text_event("user", "Five.", 0)]))
        assert [e.memory.text for e in await service.session_entries(APP, USER, "s2", project_id=project)] == [
            "One.", "Two.", "Three.", "Four.", "Five."]


async def test_a_rewind_past_the_start_of_a_partly_loaded_session_is_logged(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    """A stored turn does not keep its invocation, so a window's rewind to an invocation that
    starts before it cannot find the turns it undid there: they stay, and a warning says
    so and what removes them (the whole session, which is then exact)."""
    memory = GraphmemMemoryService(service)
    full = [
        text_event("user", "Hi there", 0, invocation_id="i1"),
        text_event("user", "My bank PIN is 1234.", 1, invocation_id="i2"),
        text_event("user", "I like tea.", 2, invocation_id="i3"),
    ]
    await memory.add_session_to_memory(session_of("s1", full))
    rewind = Event(author="user", invocation_id="i4", actions=EventActions(rewind_before_invocation_id="i2"),
                   timestamp=(T0 + timedelta(minutes=3)).timestamp())
    later = [rewind, text_event("user", "My dog is Rex.", 4, invocation_id="i5")]
    with caplog.at_level("WARNING", logger="graphmem.adk"):
        await memory.add_session_to_memory(session_of("s1", later))
    [record] = [r for r in caplog.records if "rewinds invocation 'i2'" in r.getMessage()]
    assert "add the whole session" in record.getMessage()
    caplog.clear()
    with caplog.at_level("WARNING", logger="graphmem.adk"):
        await memory.add_session_to_memory(session_of("s1", full + later))
    assert not [r for r in caplog.records if "rewinds" in r.getMessage()]
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1")] == ["Hi there", "My dog is Rex."]


async def test_a_session_out_of_time_order_is_replaced_never_duplicated(service: MemoryService) -> None:
    """repro: a session whose first event is stamped after a later one (a clock set back,
    events imported or appended late) grew by a copy of that later turn with every
    add_session_to_memory: the stored turns older than its first event were kept as turns
    from before it. A stored turn is known by its event now, not by its time."""
    for project in (None, "p1") if service.supports_project_scoping() else (None,):
        memory = GraphmemMemoryService(service, project_id=project)
        events = [text_event("user", "Remind me about the vet.", 5), text_event("companion", "Vet is on Friday.", 4)]

        async def entries(project: str | None = project) -> list[Any]:
            return await service.session_entries(APP, USER, "s1", project_id=project)

        for _ in range(3):
            await memory.add_session_to_memory(session_of("s1", events))
            assert [(e.memory.text, e.position) for e in await entries()] == [
                ("Remind me about the vet.", 0), ("Vet is on Friday.", 1)]
        first_ids = [e.entry_id for e in await entries()]

        # The latest events only, starting at a turn stamped before the session's first: that
        # first turn came before them and is kept (it was deleted as "later than the window").
        events.append(text_event("user", "And the groomer?", 4.5))
        await memory.add_session_to_memory(session_of("s1", events[1:]))
        after = await entries()
        assert [(e.memory.text, e.position) for e in after] == [
            ("Remind me about the vet.", 0), ("Vet is on Friday.", 1), ("And the groomer?", 2)]
        assert [e.entry_id for e in after[:2]] == first_ids  # an event's turn keeps its id


async def test_turns_stored_without_event_ids_are_replaced_by_what_they_said(service: MemoryService) -> None:
    """A session an earlier graphmem stored (its entry ids name no event) is told by author,
    role, text and time: added again out of time order, it was stored with a copy of the
    turn stamped before its first event."""
    memory = GraphmemMemoryService(service)

    def as_stored_before(events: list[Event]) -> list[GraphmemEntry]:
        return [
            GraphmemEntry(content=Content(role=e.content.role or "user").with_text(e.content.parts[0].text or ""),  # type: ignore[union-attr,index]
                          author=e.author, timestamp=datetime.fromtimestamp(e.timestamp, UTC))
            for e in events
        ]

    events = [text_event("user", "Remind me about the vet.", 5), text_event("companion", "Vet is on Friday.", 4)]
    await service.add_session(APP, USER, "s1", as_stored_before(events))
    await memory.add_session_to_memory(session_of("s1", events))
    after = await service.session_entries(APP, USER, "s1")
    assert [e.memory.text for e in after] == ["Remind me about the vet.", "Vet is on Friday."]
    assert all(e.entry_id.startswith("adk-") for e in after)  # named after their events from now on

    # A part of such a session keeps the turns before it, also those of its first moment.
    fixed = [text_event("user", text, 0) for text in ("One.", "Two.", "Three.")]
    await service.add_session(APP, USER, "s2", as_stored_before(fixed))
    await memory.add_session_to_memory(session_of("s2", [fixed[2], text_event("user", "Four.", 0)]))
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s2")] == ["One.", "Two.", "Three.", "Four."]

    # Before the first stored turn of an event passed, such a turn came before them, whatever
    # its time (it was deleted as "later than the first event passed").
    ahead = text_event("user", "My sister lives in Lisbon.", 10)  # an earlier graphmem's turn, its clock ahead
    await service.add_session(APP, USER, "s3", as_stored_before([ahead]))
    noted, moved = text_event("companion", "Noted.", 5), text_event("user", "She moved there in May.", 6)
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s3", events=[noted])
    await memory.add_session_to_memory(session_of("s3", [noted, moved]))
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s3")] == [
        "My sister lives in Lisbon.", "Noted.", "She moved there in May."]


async def test_the_turns_before_a_partly_loaded_session_keep_their_terms(service: MemoryService) -> None:
    """A kept turn is stored again with the terms it had, not decomposed anew."""
    memory = GraphmemMemoryService(service)
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Maria visits Porto.", 0),
                                                         text_event("user", "She likes trams.", 1)]))
    [first, _] = await service.session_entries(APP, USER, "s1")
    own_terms = {first.entry_id: Decomposition(tokens=("own-term",), entities=(Entity("own name", "PERSON"),))}
    # Restored with terms of its own (what an export carries): a re-decomposition would lose them.
    await service.restore_session(APP, USER, "s1", [
        EntryRecord(memory=first.memory, entry_id=first.entry_id, position=0, terms=own_terms[first.entry_id])])
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "She likes trams.", 1)]))
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1")] == ["Maria visits Porto.", "She likes trams."]
    assert await service.entry_terms(APP, USER, [first.entry_id]) == own_terms


async def test_the_example_agent_with_a_window_of_recent_events_forgets_nothing(
    service: MemoryService, example_on_path: None
) -> None:
    """repro: the example agent stores its session after every turn; with
    ``GetSessionConfig(num_recent_events=4)`` the Runner hands it the last 4 events only,
    and the first turns were deleted from memory."""
    from google.adk.agents import LlmAgent
    from google.adk.agents.run_config import RunConfig
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.sessions.base_session_service import GetSessionConfig

    sys.path.insert(0, str(EXAMPLE))
    from memory_agent.agent import remember_session
    from memory_agent.scripted_model import RecallingModel

    memory = GraphmemMemoryService(service)
    agent = LlmAgent(name="companion", model=RecallingModel(), tools=[], after_agent_callback=remember_session)
    sessions = InMemorySessionService()
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)
    config = RunConfig(get_session_config=GetSessionConfig(num_recent_events=4))
    session = await sessions.create_session(app_name=APP, user_id=USER)
    said = ["My sister Maria lives in Lisbon.", "I like green tea.", "My dog is called Rex.", "I work as a nurse."]
    for text in said:
        message = types.Content(role="user", parts=[types.Part(text=text)])
        [e async for e in runner.run_async(user_id=USER, session_id=session.id, new_message=message, run_config=config)]
    entries = await service.session_entries(APP, USER, session.id)
    assert [e.memory.text for e in entries if e.memory.author == "user"] == said
    assert [e.position for e in entries] == list(range(8))  # a question and an answer per turn, none twice
    found = (await memory.search_memory(app_name=APP, user_id=USER, query="Where does Maria live?")).memories
    assert found[0].content.parts is not None and found[0].content.parts[0].text == said[0]
    await runner.close()


async def test_what_is_not_text_is_left_out_and_logged(service: MemoryService, caplog: pytest.LogCaptureFixture) -> None:
    """An image-only turn vanished without a word (an image, a file, code the model ran:
    graphmem stores text only). Now a debug line on the ``graphmem.adk`` logger names what
    was left out; function calls and responses, in every tool-using turn, are not logged."""
    memory = GraphmemMemoryService(service)

    def parts_event(author: str, parts: list[types.Part], at: float) -> Event:
        role = "user" if author == "user" else "model"
        return Event(author=author, content=types.Content(role=role, parts=parts), timestamp=(T0 + timedelta(minutes=at)).timestamp())

    image = parts_event("user", [types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))], 1)
    invoice = parts_event("user", [types.Part(text="Here is the vet's invoice."),
                                   types.Part(file_data=types.FileData(file_uri="gs://b/vet.pdf", mime_type="application/pdf"))], 2)
    code = parts_event("companion", [
        types.Part(executable_code=types.ExecutableCode(code="print(120 * 1.2)", language=types.Language.PYTHON)),
        types.Part(code_execution_result=types.CodeExecutionResult(outcome=types.Outcome.OUTCOME_OK, output="144.0"))], 3)
    events = [text_event("user", "Who is this?", 0), image, invoice, code, *call_events(4)]
    with caplog.at_level("DEBUG", logger="graphmem.adk"):
        await memory.add_session_to_memory(session_of("s1", events))
        await memory.add_memory(app_name=APP, user_id=USER, memories=[AdkMemoryEntry(content=image.content)])  # type: ignore[arg-type]
    assert [text for text, _, _ in await stored(service)] == ["Who is this?", "Here is the vet's invoice."]
    assert [r.getMessage() for r in caplog.records if r.name == "graphmem.adk"] == [
        f"event {image.id!r}: its inline_data not stored (graphmem stores text only)",
        f"event {invoice.id!r}: its file_data not stored (graphmem stores text only)",
        f"event {code.id!r}: its code_execution_result, executable_code not stored (graphmem stores text only)",
        "a memory: its inline_data not stored (graphmem stores text only)",
    ]


async def test_what_a_model_said_in_audio_is_remembered_by_its_transcription(service: MemoryService) -> None:
    """A model answering in audio gives its words as the audio part's transcription, and no
    text part: the turn was left out as audio, so what the agent said was never recalled."""
    memory = GraphmemMemoryService(service)
    spoken = types.Part(
        inline_data=types.Blob(mime_type="audio/pcm", data=b"\x00\x01"),
        audio_transcription=types.Transcription(text="Your dentist appointment is on Friday at nine."),
    )
    reply = Event(
        author="companion", content=types.Content(role="model", parts=[spoken]), timestamp=(T0 + timedelta(minutes=1)).timestamp()
    )
    silent = types.Part(inline_data=types.Blob(mime_type="audio/pcm", data=b"\x00"), audio_transcription=types.Transcription(text=" "))
    hum = Event(author="companion", content=types.Content(role="model", parts=[silent]), timestamp=(T0 + timedelta(minutes=2)).timestamp())
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "When is my appointment?", 0), reply, hum]))
    entries = await service.list_entries(APP, USER)
    assert sorted((e.position, e.memory.text, e.memory.content.role) for e in entries) == [
        (0, "When is my appointment?", "user"),
        (1, "Your dentist appointment is on Friday at nine.", "model"),
    ]
    found = await memory.search_memory(app_name=APP, user_id=USER, query="dentist")
    assert [m.content.parts[0].text for m in found.memories][:1] == ["Your dentist appointment is on Friday at nine."]


async def test_a_text_over_the_limit_is_stored_in_parts_and_never_blocks_the_session(
    service: MemoryService, caplog: pytest.LogCaptureFixture
) -> None:
    """One pasted log over graphmem's limit (or a lone surrogate) made every later
    add_session_to_memory of the session fail: nothing of it was stored from then on."""
    memory = GraphmemMemoryService(service)
    blob = ("q" * 599 + " ") * 1_800  # words too long to be terms: cheap to decompose
    assert len(blob) > MAX_TEXT_LENGTH
    events = [
        text_event("user", "Here is my build log:", 0),
        text_event("user", blob, 1),
        text_event("companion", "Broken \ud800 glyph.", 2),
        text_event("user", "My dog is called Rex.", 3),
    ]
    with caplog.at_level("WARNING", logger="graphmem.adk"):
        await memory.add_session_to_memory(session_of("s1", events))
    entries = await service.session_entries(APP, USER, "s1")
    assert [e.memory.text[:25] for e in entries] == [
        "Here is my build log:", "q" * 25, "q" * 25, "Broken \ufffd glyph.", "My dog is called Rex."]
    parts = entries[1:3]
    assert all(len(e.memory.text) <= MAX_TEXT_LENGTH for e in parts)
    assert " ".join(e.memory.text for e in parts) == blob.strip()  # cut at a space, nothing lost
    assert {(e.memory.author, e.memory.content.role, e.memory.timestamp) for e in parts} == {
        ("user", "user", T0 + timedelta(minutes=1))}
    warned = [r.getMessage() for r in caplog.records if r.name == "graphmem.adk"]
    assert len(warned) == 2 and "stored as 2 consecutive entries" in warned[0] and "U+FFFD" in warned[1]

    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text=blob)])),
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="odd \udfff one")]), author="us\ud800er"),
    ])
    loose = sorted((e.memory.text[:12], e.memory.author) for e in await service.list_entries(APP, USER) if e.session_id is None)
    assert loose == [("odd \ufffd one", "us\ufffder"), ("q" * 12, "user"), ("q" * 12, "user")]


async def test_a_batch_outside_sessions_is_stored_in_one_write(decomposer: Decomposer, tmp_path: Path) -> None:
    """add_memory and add_events_to_memory without a session stored one entry at a time: a
    failure part-way left the first ones stored, and a retry stored them twice. Now one
    write holds the batch (one journal record), so a failure stores none of it."""
    from graphmem import open_memory

    service = await open_memory(tmp_path / "m.journal", nlp=decomposer)
    memory = GraphmemMemoryService(service)

    def records() -> int:
        [segment] = (tmp_path / "m.journal.d").glob("*.journal")
        return len(segment.read_text(encoding="utf-8").splitlines()) - 1  # the segment's header aside

    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text=f"fact {i}")])) for i in range(3)])
    assert records() == 1
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[text_event("user", f"note {i}", i) for i in range(3)])
    assert records() == 2
    assert len(await service.list_entries(APP, USER)) == 6
    await service.close()


async def test_content_without_a_role_is_the_users_only_when_the_user_said_it(service: MemoryService) -> None:
    """An agent's event without a role came back as ``role="user"``: the agent's own words
    presented to the model as something the user said."""
    memory = GraphmemMemoryService(service)

    def unroled(author: str, text: str, at: float) -> Event:
        return Event(author=author, content=types.Content(parts=[types.Part(text=text)]), timestamp=(T0 + timedelta(minutes=at)).timestamp())

    await memory.add_session_to_memory(session_of("s1", [unroled("user", "Book me a flight to Oslo.", 0),
                                                         unroled("travel_agent", "I booked you a flight to Oslo.", 1),
                                                         unroled("", "Oslo flights are full in May.", 2)]))
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(parts=[types.Part(text="Oslo trip planned")]), author="planner"),
        AdkMemoryEntry(content=types.Content(parts=[types.Part(text="Oslo is cold")]), author="user")])
    roles = {e.memory.text: (e.memory.author, e.memory.content.role) for e in await service.list_entries(APP, USER, all_projects=True)}
    assert roles == {
        "Book me a flight to Oslo.": ("user", "user"),
        "I booked you a flight to Oslo.": ("travel_agent", "model"),
        "Oslo flights are full in May.": ("model", "model"),  # no author: the speaker its role names
        "Oslo trip planned": ("planner", "model"),
        "Oslo is cold": ("user", "user"),
    }
    recalled = {m.content.parts[0].text: m.content.role for m in (await memory.search_memory(app_name=APP, user_id=USER, query="Oslo flight")).memories}  # type: ignore[index]
    assert recalled["I booked you a flight to Oslo."] == "model"


@pytest.fixture
def in_tokyo() -> Iterator[None]:
    """The process's local time zone is Asia/Tokyo (+09:00, no daylight saving) meanwhile."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


async def test_a_memory_time_without_an_offset_is_local_time_as_adk_writes_it(service: MemoryService, in_tokyo: None) -> None:
    """ADK writes ``MemoryEntry.timestamp`` as ``datetime.fromtimestamp(ts).isoformat()``: local
    time, no offset. Read as UTC, it was 9 hours off in Tokyo."""
    memory = GraphmemMemoryService(service)
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="local note")]),
                       timestamp=datetime.fromtimestamp(T0.timestamp()).isoformat()),
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="aware note")]),
                       timestamp="2026-01-09T20:00:00-05:00")])
    times = {e.memory.text: e.memory.timestamp for e in await service.list_entries(APP, USER)}
    assert times == {"local note": T0, "aware note": T0 + timedelta(hours=5)}
    with pytest.raises(InvalidMemoryError, match="outside years 1 to 9999"):
        await memory.add_memory(app_name=APP, user_id=USER, memories=[
            AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="x")]), timestamp="0001-01-01T01:00:00")])


async def test_deliberate_refusals_are_graphmem_errors_and_value_errors(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    bad_time = Event(author="user", content=types.Content(role="user", parts=[types.Part(text="hi")]), timestamp=1.7e12)
    refusals = [
        memory.add_session_to_memory(session_of("s1", [bad_time])),
        memory.add_events_to_memory(app_name=APP, user_id=USER, events=[text_event("user", "x", 0)],
                                    custom_metadata={"project_id": "elsewhere"}),
        memory.add_memory(app_name=APP, user_id=USER, memories=[
            AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="x")]), timestamp="soon")]),
    ]
    for refusal in refusals:
        with pytest.raises(GraphmemError) as raised:
            await refusal
        assert isinstance(raised.value, InvalidMemoryError) and isinstance(raised.value, ValueError)
    assert await stored(service) == []


async def test_close_is_final(decomposer: Decomposer, tmp_path: Path) -> None:
    """A call after close() reopened the store: ``memory:`` came back empty, and a journal took
    its writer lock again, which nothing released."""
    from graphmem import open_memory

    store = tmp_path / "m.journal"
    memory = GraphmemMemoryService(uri=store.as_uri(), nlp=decomposer)
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="walnut allergy")]))])
    await memory.close()
    for call in (
        memory.search_memory(app_name=APP, user_id=USER, query="walnut"),
        memory.add_session_to_memory(session_of("s1", [text_event("user", "hi", 0)])),
        memory.delete_memory(app_name=APP, user_id=USER, memory_id="abc"),
        # Calls that would do nothing on an open service are refused all the same.
        memory.delete_memory(app_name=APP, user_id=USER, memory_id=None),
        memory.delete_memory(app_name=APP, user_id=USER, memory_id=""),
        memory.add_session_to_memory(session_of("s1", [])),
        memory.memory_service(),
    ):
        with pytest.raises(ServiceClosedError, match="was closed"):
            await call
    await memory.close()  # idempotent
    other = await open_memory(store, nlp=decomposer)  # the writer lock is free: nothing reopened it
    assert [e.memory.text for e in await other.list_entries(APP, USER)] == ["walnut allergy"]

    # A service given by its owner stays open for the owner; this ADK service is done.
    given = GraphmemMemoryService(other)
    await given.close()
    with pytest.raises(ServiceClosedError):
        await given.search_memory(app_name=APP, user_id=USER, query="walnut")
    assert len(await other.list_entries(APP, USER)) == 1
    await other.close()


@pytest.mark.parametrize("store_kind", ["journal", pytest.param("neo4j", marks=pytest.mark.neo4j)])
@pytest.mark.parametrize("closer", ["the ADK service", "the store's owner"])
@pytest.mark.parametrize("held_at", ["session_entries", "get_entries", "get_entry"])
async def test_a_call_running_when_the_store_closes_stores_nothing_and_does_not_reopen_it(
    decomposer: Decomposer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store_kind: str, closer: str, held_at: str
) -> None:
    """An ADK call makes several calls of the store: ``add_session_to_memory`` reads the
    session, then replaces it; ``add_events_to_memory`` reads which events are held, then
    appends; ``delete_memory`` reads the entry, then deletes it. A close between them (held
    here after the read) came before the later call began, so on a journal that call opened
    the store again: the write was stored after ``close()`` had returned, and the writer
    lock was held again, by nobody who would release it. It now raises
    ``BackendUnavailableError`` and stores nothing, on either backend."""
    from graphmem import BackendUnavailableError, open_memory

    if store_kind == "journal":
        uri = (tmp_path / "m.journal").as_uri()
    else:
        await (await make_neo4j_service(decomposer)).close()  # an empty database
        uri = neo4j_uri_or_skip()
    store = await open_memory(uri, nlp=decomposer) if closer == "the store's owner" else None
    memory = GraphmemMemoryService(store) if store is not None else GraphmemMemoryService(uri=uri, nlp=decomposer)
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(id="note", content=types.Content(role="user", parts=[types.Part(text="walnut allergy")]))])
    inner = await memory.memory_service()
    reached, go = asyncio.Event(), asyncio.Event()
    read = getattr(inner, held_at)

    async def read_then_wait(*args: Any, **kwargs: Any) -> Any:
        found = await read(*args, **kwargs)
        reached.set()
        await go.wait()
        return found

    monkeypatch.setattr(inner, held_at, read_then_wait)
    turn = [text_event("user", "My dog Rex likes the park.", 0, id="e1")]
    if held_at == "session_entries":
        call = memory.add_session_to_memory(session_of("s1", turn))
    elif held_at == "get_entries":
        call = memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=turn)
    else:
        call = memory.delete_memory(app_name=APP, user_id=USER, memory_id="note")
    running = asyncio.ensure_future(call)
    await reached.wait()
    await (memory.close() if store is None else inner.close())
    go.set()
    with pytest.raises(BackendUnavailableError, match="closed"):  # (Neo4j: "is closed; create a new one")
        await running
    monkeypatch.undo()
    other = await open_memory(uri, nlp=decomposer)  # a journal's writer lock is free: nothing reopened it
    assert [e.memory.text for e in await other.list_entries(APP, USER)] == ["walnut allergy"]  # as it was
    await other.close()
    if store is not None:
        await memory.close()


async def test_events_sent_again_are_not_stored_again(service: MemoryService) -> None:
    """repro: add_events_to_memory called again with the same events (a retried after-turn
    callback) stored them twice, and adding the whole session afterwards still left a copy
    (kept as a turn of the session's first moment). ADK's own memory services skip an event
    they hold, by its id: so does this one, here and outside any session."""
    for project in (None, "p1") if service.supports_project_scoping() else (None,):
        memory = GraphmemMemoryService(service, project_id=project)
        e1, e2, e3 = (text_event("user", "My dog is Rex.", 0), text_event("companion", "Rex is a lovely name.", 1),
                      text_event("user", "He loves long walks.", 2))

        async def texts(session_id: str | None, project: str | None = project) -> list[tuple[str, int]]:
            return [(e.memory.text, e.position) for e in await service.list_entries(APP, USER, project)
                    if e.session_id == session_id and e.project_id == project]

        for _ in range(2):  # the call, and its retry; e1 also twice in one call
            await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[e1, e2, e1])
        assert await texts("s1") == [("My dog is Rex.", 0), ("Rex is a lovely name.", 1)]
        await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[e2, e3])  # one new
        await memory.add_session_to_memory(session_of("s1", [e1, e2, e3]))
        assert await texts("s1") == [("My dog is Rex.", 0), ("Rex is a lovely name.", 1), ("He loves long walks.", 2)]

        # Without a session: the same event once.
        for _ in range(2):
            await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[e1, e1])
        assert await texts(None) == [("My dog is Rex.", 0)]

        # An utterance whose first piece was sent before, sent again with its end: only the
        # end is new (it was stored again, joined to the end).
        start = voice_event("user", "My vet is Dr. Okafor", 3, heard=True, finished=False)
        end = voice_event("user", "on Main Street.", 3.1, heard=True)
        await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s2", events=[start])
        await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s2", events=[start, end])
        assert await texts("s2") == [("My vet is Dr. Okafor", 0), ("on Main Street.", 1)]


async def test_deltas_then_the_whole_session_store_each_turn_once(service: MemoryService) -> None:
    """Deltas, then the whole session: each turn once, under the id the delta gave it (the
    whole session replaced every id with a new one: a memory id a search had returned
    deleted nothing afterwards)."""
    memory = GraphmemMemoryService(service)
    e1, e2, e3 = (text_event("user", "My dog is Rex.", 0), text_event("companion", "Nice dog.", 1),
                  text_event("user", "He loves long walks.", 2))
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[e1, e2])
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[e3])
    ids = [e.entry_id for e in await service.session_entries(APP, USER, "s1")]
    await memory.add_session_to_memory(session_of("s1", [e1, e2, e3]))
    after = await service.session_entries(APP, USER, "s1")
    assert [(e.memory.text, e.position) for e in after] == [
        ("My dog is Rex.", 0), ("Nice dog.", 1), ("He loves long walks.", 2)]
    assert [e.entry_id for e in after] == ids  # the same events, named alike by either call


async def test_add_events_to_memory_appends_a_delta_to_the_session(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Where does your sister live these days?", 0)]))
    await memory.add_events_to_memory(
        app_name=APP, user_id=USER, session_id="s1", events=[*call_events(1), text_event("companion", "Lisbon.", 2)]
    )
    await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[text_event("user", "Note: buy figs", 3)])
    assert sorted(await stored(service), key=str) == sorted(
        [("Where does your sister live these days?", "s1", 0), ("Lisbon.", "s1", 1), ("Note: buy figs", None, 0)],
        key=str,
    )
    # The delta continues the NEXT chain: the answer comes back as the question's context.
    found = {m.content.parts[0].text: m for m in (await memory.search_memory(app_name=APP, user_id=USER, query="does my sister live there")).memories}  # type: ignore[index]
    assert found["Lisbon."].custom_metadata["matched_tokens"] == []
    assert found["Lisbon."].custom_metadata["context_score"] > 0
    question = found["Where does your sister live these days?"]
    assert found["Lisbon."].custom_metadata["context_from"] == question.id  # the turn that lent it


class PausingAfterARead(GraphMemoryService):
    """A networkx store whose first session read (call A's) waits, once it has read, until
    the second call (B) has started and done what it can: B then either writes the session
    meanwhile (the race) or waits for A to finish. Only the timing is the test's: every
    read and write is the store's own.

    B's read, if it gets one before A writes, waits for A's write: then B's write comes
    last, which is the order that loses a turn."""

    def __init__(self, decomposer: Decomposer) -> None:
        super().__init__(decomposer)
        self.pausing = False
        self.a_paused = False
        self.b_started = asyncio.Event()  # set by the test just before it calls B
        self.b_in = asyncio.Event()  # B has begun reading or appending to the session
        self.b_out = asyncio.Event()  # ... and is done with it
        self.a_wrote = asyncio.Event()

    async def session_entries(self, *args: Any, **kwargs: Any) -> Any:
        if not self.pausing:
            return await super().session_entries(*args, **kwargs)
        if not self.a_paused:  # A
            self.a_paused = True
            found = await super().session_entries(*args, **kwargs)
            # B runs from its start until it first waits: for A (a lock), or in the store.
            await self.b_started.wait()
            if self.b_in.is_set():
                await self.b_out.wait()
            return found
        self.b_in.set()
        found = await super().session_entries(*args, **kwargs)
        self.b_out.set()
        await self.a_wrote.wait()
        return found

    async def append_to_session(self, *args: Any, **kwargs: Any) -> Any:
        self.b_in.set()
        ids = await super().append_to_session(*args, **kwargs)
        self.b_out.set()
        return ids

    async def restore_session(self, *args: Any, **kwargs: Any) -> Any:
        await super().restore_session(*args, **kwargs)
        self.a_wrote.set()  # the first write is A's: B's read (if any) waited for it


@pytest.mark.parametrize("second", ["a later window of the session", "a delta of the session"])
async def test_writes_of_one_session_at_once_lose_no_turn(decomposer: Decomposer, second: str) -> None:
    """``add_session_to_memory`` reads the stored session, then replaces it whole. Another
    write of the session in between (here forced: B runs while A is between its read and
    its write) was overwritten: a later window's turn, or a delta's turn, was lost. Each
    now waits for the other, so both serial outcomes hold every turn."""
    store = PausingAfterARead(decomposer)
    memory = GraphmemMemoryService(store)
    turns = [text_event("user", "My sister Maria lives in Lisbon.", 0), text_event("companion", "Noted.", 1),
             text_event("user", "I like green tea.", 2)]
    await memory.add_session_to_memory(session_of("s1", turns[:1]))
    store.pausing = True

    async def b() -> None:
        store.b_started.set()
        if second == "a later window of the session":
            await memory.add_session_to_memory(session_of("s1", turns[2:]))
        else:
            await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=turns[2:])

    # A: the window from turn 1 on (turn 0 is kept); B: from turn 2 on, or turn 2 appended.
    a = memory.add_session_to_memory(session_of("s1", turns[1:3] if second.startswith("a later") else turns[1:2]))
    await asyncio.gather(a, b())
    assert store.a_paused
    assert [e.memory.text for e in await store.session_entries(APP, USER, "s1")] == [
        "My sister Maria lives in Lisbon.", "Noted.", "I like green tea."]
    await store.close()


async def test_add_memory_stores_entries_outside_sessions(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    await memory.add_memory(
        app_name=APP,
        user_id=USER,
        memories=[
            AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="Allergic to walnuts")]),
                           author="Alice", timestamp="2026-01-02T10:00:00+01:00"),
            AdkMemoryEntry(content=types.Content(role="user", parts=[])),  # nothing to remember
        ],
    )
    [entry] = await service.list_entries(APP, USER)
    assert (entry.memory.text, entry.memory.author, entry.session_id) == ("Allergic to walnuts", "Alice", None)
    assert entry.memory.timestamp == datetime(2026, 1, 2, 9, 0, tzinfo=UTC)

    bad = AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="x")]), timestamp="yesterday")
    good = AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="figs")]))
    with pytest.raises(InvalidMemoryError, match="ISO 8601"):
        await memory.add_memory(app_name=APP, user_id=USER, memories=[good, bad])
    assert len(await service.list_entries(APP, USER)) == 1  # checked before anything is stored


async def test_search_memory_explains_every_memory(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service, limit=5)
    await memory.add_session_to_memory(
        session_of("s1", [text_event("user", "My sister Maria moved to Lisbon.", 0), text_event("companion", "Since when?", 1)])
    )
    response = await memory.search_memory(app_name=APP, user_id=USER, query="Where does Maria live?")
    assert response.memories
    best = response.memories[0]
    [entry] = [e for e in await service.list_entries(APP, USER) if e.memory.text == "My sister Maria moved to Lisbon."]
    assert best.id == entry.entry_id
    assert best.author == "user"
    assert datetime.fromisoformat(best.timestamp or "") == T0
    assert best.content.role == "user" and best.content.parts and best.content.parts[0].text == entry.memory.text
    meta = best.custom_metadata
    assert set(meta) == {
        "score", "matched_tokens", "matched_entities", "context_score", "context_from", "related_to", "read_as",
        "session_id", "project_id", "reply_ids",
    }
    assert meta["related_to"] == {} and meta["read_as"] == {} and meta["reply_ids"] == []
    assert 0 < meta["score"] <= 1 and "maria" in meta["matched_tokens"] and "maria" in [e.lower() for e in meta["matched_entities"]]
    assert meta["session_id"] == "s1" and meta["project_id"] is None
    json.dumps(response.model_dump(mode="json"))  # what load_memory hands the model is plain JSON
    assert (await memory.search_memory(app_name=APP, user_id="bob", query="Maria")).memories == []


async def test_delete_memory_deletes_exactly_that_entry_of_that_user(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Maria likes figs", 0), text_event("user", "Maria hates rain", 1)]))
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Bob's Maria", 0)], user="bob"))
    hits = (await memory.search_memory(app_name=APP, user_id=USER, query="figs")).memories
    target = hits[0].id
    assert target is not None
    bobs = (await memory.search_memory(app_name=APP, user_id="bob", query="Maria")).memories[0].id

    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=bobs)  # another user's id
    await memory.delete_memory(app_name=APP, user_id="bob", memory_id=target)  # the other way round
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=None)
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="unknown")
    for garbled in ("a\nb", "x" * 300, "\ud800"):  # no valid id: nothing to delete, no error
        await memory.delete_memory(app_name=APP, user_id=USER, memory_id=garbled)
    assert len(await stored(service)) == 2 and len(await stored(service, "bob")) == 1

    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=target)
    assert await stored(service) == [("Maria hates rain", "s1", 1)]
    assert await stored(service, "bob") == [("Bob's Maria", "s1", 0)]


async def test_a_project_scopes_every_call_or_is_refused(service: MemoryService) -> None:
    if not service.supports_project_scoping():
        with pytest.raises(ProjectScopingUnsupportedError, match=r"^GraphmemMemoryService\(project_id=\.\.\.\) needs"):
            GraphmemMemoryService(service, project_id="trip")
        return
    trip = GraphmemMemoryService(service, project_id="trip")
    work = GraphmemMemoryService(service, project_id="work")
    everywhere = GraphmemMemoryService(service)
    await everywhere.add_session_to_memory(session_of("g", [text_event("user", "global kiwi note", 0)]))
    await trip.add_session_to_memory(session_of("s1", [text_event("user", "trip kiwi plan", 1)]))
    await trip.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[text_event("user", "more kiwi", 2)],
                                    custom_metadata={"project_id": "trip"})
    await work.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="work kiwi memo")]))])
    assert await stored(service, project="trip") == [("trip kiwi plan", "s1", 0), ("more kiwi", "s1", 1)]

    def texts(response: Any) -> set[str]:
        return {m.content.parts[0].text for m in response.memories}

    assert texts(await trip.search_memory(app_name=APP, user_id=USER, query="kiwi")) == {"global kiwi note", "trip kiwi plan", "more kiwi"}
    assert texts(await everywhere.search_memory(app_name=APP, user_id=USER, query="kiwi")) == {"global kiwi note"}
    with pytest.raises(InvalidMemoryError, match="project"):
        await trip.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[text_event("user", "x", 3)],
                                        custom_metadata={"project_id": "work"})

    work_id = (await work.search_memory(app_name=APP, user_id=USER, query="memo")).memories[0].id
    await trip.delete_memory(app_name=APP, user_id=USER, memory_id=work_id)  # another project's: kept
    await everywhere.delete_memory(app_name=APP, user_id=USER, memory_id=work_id)  # global service: kept
    assert [t for t, *_ in await stored(service, project="work")] == ["work kiwi memo"]
    await work.delete_memory(app_name=APP, user_id=USER, memory_id=work_id)
    assert await stored(service, project="work") == []


async def test_a_project_on_a_store_without_projects_is_refused_before_any_call(
    decomposer: Decomposer, tmp_path: Path
) -> None:
    """From a uri the store is opened on the first call: a project on networkx is refused
    there, whatever the call. A delete by id asks no project, so it used to delete a
    global memory from a service meant for one project."""
    from graphmem import open_memory

    store = tmp_path / "m.journal"
    service = await open_memory(store.as_uri(), nlp=decomposer)
    entry_id = await service.add_entry(APP, USER, entry_of("global zebra note"))
    await service.close()
    memory = GraphmemMemoryService(uri=store.as_uri(), project_id="trip", nlp=decomposer)
    for call in (
        memory.delete_memory(app_name=APP, user_id=USER, memory_id=entry_id),
        memory.search_memory(app_name=APP, user_id=USER, query="zebra"),
    ):
        # (Named as the user built it, not as a method the delete never called.)
        with pytest.raises(ProjectScopingUnsupportedError, match=r"^GraphmemMemoryService\(project_id=\.\.\.\) needs"):
            await call
    await memory.close()
    service = await open_memory(store.as_uri(), nlp=decomposer)
    assert [e.entry_id for e in await service.list_entries(APP, USER)] == [entry_id]  # nothing deleted
    await service.close()


def test_constructor_refuses_bad_arguments(decomposer: Decomposer) -> None:
    from graphmem import GraphMemoryService, InvalidStoreUriError

    with pytest.raises(ValueError, match="either"):
        GraphmemMemoryService()
    with pytest.raises(ValueError, match="either"):
        GraphmemMemoryService(GraphMemoryService(nlp=decomposer), uri="graphmem+memory:")
    with pytest.raises(ValueError, match="limit"):
        GraphmemMemoryService(GraphMemoryService(nlp=decomposer), limit=0)
    for bad in (5, -0.1, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="min_score"):
            GraphmemMemoryService(uri="graphmem+memory:", min_score=bad)  # type: ignore[arg-type]
    assert GraphmemMemoryService(uri="graphmem+memory:", min_score=0).min_score == 0
    with pytest.raises(InvalidStoreUriError):
        GraphmemMemoryService(uri="graphmem+ftp://example.org/x")


# ---------------------------------------------------------------------------- ADK's service registry


@pytest.fixture
def example_on_path() -> Iterator[None]:
    """The example's agents folder importable, as ADK's loader makes it; forgotten afterwards."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if name == "services" or name.startswith("memory_agent"):
            del sys.modules[name]
    while str(EXAMPLE) in sys.path:
        sys.path.remove(str(EXAMPLE))


async def test_adk_registry_opens_a_journal_from_the_example_services_py(
    tmp_path: Path, example_on_path: None
) -> None:
    from google.adk.cli.service_registry import load_services_module
    from google.adk.cli.utils.service_factory import create_memory_service_from_options

    load_services_module(str(EXAMPLE))  # what `adk web` / `adk api_server EXAMPLE` do first
    uri = f"graphmem+file://{tmp_path / 'memory.journal'}"
    first = create_memory_service_from_options(base_dir=EXAMPLE, memory_service_uri=uri)
    assert isinstance(first, GraphmemMemoryService)
    await first.add_session_to_memory(session_of("s1", [text_event("user", "My sister Maria moved to Lisbon.", 0)]))
    await first.close()  # releases the journal's writer lock

    second = create_memory_service_from_options(base_dir=EXAMPLE, memory_service_uri=uri)
    found = (await second.search_memory(app_name=APP, user_id=USER, query="Maria")).memories
    assert [m.content.parts[0].text for m in found] == ["My sister Maria moved to Lisbon."]  # type: ignore[index]
    assert isinstance(second, GraphmemMemoryService)
    await second.close()


@pytest.mark.neo4j
async def test_adk_registry_opens_neo4j(decomposer: Decomposer) -> None:
    from google.adk.cli.service_registry import ServiceRegistry

    uri = neo4j_uri_or_skip()
    registry = ServiceRegistry()
    register_with_adk(registry, nlp=decomposer)
    memory = registry.create_memory_service("graphmem+" + uri, agents_dir=str(EXAMPLE))
    assert isinstance(memory, GraphmemMemoryService)
    user = f"registry-{os.getpid()}"
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "My sister Maria moved to Lisbon.", 0)], user=user))
    found = (await memory.search_memory(app_name=APP, user_id=user, query="Maria")).memories
    assert [m.content.parts[0].text for m in found] == ["My sister Maria moved to Lisbon."]  # type: ignore[index]
    await (await memory.memory_service()).delete_user(APP, user)
    await memory.close()


async def test_adk_registry_yaml_route(tmp_path: Path) -> None:
    from google.adk.cli.service_registry import ServiceRegistry, _register_services_from_yaml_config
    from google.adk.utils import yaml_utils

    (tmp_path / "services.yaml").write_text(
        "services:\n  - scheme: graphmem+memory\n    type: memory\n    class: graphmem.adk.GraphmemMemoryService\n"
    )
    registry = ServiceRegistry()
    _register_services_from_yaml_config(yaml_utils.load_yaml_file(str(tmp_path / "services.yaml")), registry)
    memory = registry.create_memory_service("graphmem+memory:", agents_dir=str(tmp_path))
    assert isinstance(memory, GraphmemMemoryService)
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        AdkMemoryEntry(content=types.Content(role="user", parts=[types.Part(text="walnut allergy")]))])
    assert len((await memory.search_memory(app_name=APP, user_id=USER, query="walnut")).memories) == 1
    await memory.close()


# ---------------------------------------------------------------------------- end to end, ADK's Runner


async def run_turn(runner: Any, session_id: str, text: str) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [event async for event in runner.run_async(user_id=USER, session_id=session_id, new_message=message)]


def final_text(events: list[Event]) -> str:
    return " ".join(p.text for e in events if e.content for p in e.content.parts or [] if p.text)


@pytest.mark.parametrize("tool", ["load_memory", "preload_memory"])
async def test_runner_recalls_an_earlier_session(service: MemoryService, tool: str, example_on_path: None) -> None:
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.adk.tools import preload_memory

    sys.path.insert(0, str(EXAMPLE))
    from memory_agent.agent import build_agent
    from memory_agent.scripted_model import RecallingModel

    model = RecallingModel()
    agent = build_agent(model)  # the example agent: load_memory, and the session saved after each turn
    if tool == "preload_memory":
        agent.tools = [preload_memory]
    sessions = InMemorySessionService()
    memory = GraphmemMemoryService(service)
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)

    first = await sessions.create_session(app_name=APP, user_id=USER)
    await run_turn(runner, first.id, "My sister Maria moved to Lisbon in 2021.")
    # The example's after-agent callback stored session 1 through add_session_to_memory;
    # its function call and response events were left out.
    assert "My sister Maria moved to Lisbon in 2021." in [e.memory.text for e in await service.list_entries(APP, USER)]
    assert all("load_memory" not in e.memory.text for e in await service.list_entries(APP, USER))

    second = await sessions.create_session(app_name=APP, user_id=USER)
    model.requests.clear()
    events = await run_turn(runner, second.id, "Where does Maria live now?")
    reached_model = json.dumps([r.model_dump(mode="json", exclude={"tools_dict"}) for r in model.requests])
    if tool == "load_memory":
        [answer] = [
            p.function_response.model_dump(mode="json")["response"]
            for r in model.requests
            for c in r.contents
            for p in c.parts or []
            if p.function_response is not None and c is r.contents[-1]
        ][:1]
        recalled = answer["result"]["memories"]
        assert recalled[0]["content"]["parts"][0]["text"] == "My sister Maria moved to Lisbon in 2021."
        assert "maria" in [e.lower() for e in recalled[0]["custom_metadata"]["matched_entities"]]
    else:
        assert "<PAST_CONVERSATIONS>" in reached_model
    assert "My sister Maria moved to Lisbon in 2021." in reached_model
    assert "Lisbon in 2021" in final_text(events)
    await runner.close()


# ---------------------------------------------------------------------------- README and packaging


def readme_adk_snippet() -> str:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Google ADK", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "the README's ADK section has a python snippet"
    return blocks[0]


def test_readme_adk_snippet_runs(tmp_path: Path) -> None:
    """The README's snippet, as a user would run it: a fresh interpreter, no network."""
    script = tmp_path / "snippet.py"
    script.write_text(readme_adk_snippet(), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(EXAMPLE)]), "GRAPHMEM_ADK_MODEL": "scripted"}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    assert done.returncode == 0, done.stderr
    assert "Lisbon" in done.stdout


def test_graphmem_imports_without_adk_and_names_the_extra() -> None:
    code = textwrap.dedent(
        """
        import json, sys
        import graphmem
        loaded = "google.adk" in sys.modules
        sys.modules["google.adk"] = None  # as if the extra were not installed
        try:
            import graphmem.adk
            error = ""
        except ImportError as exc:
            error = str(exc)
        print(json.dumps({"loaded": loaded, "error": error}))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO_ROOT.parent, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["loaded"] is False
    assert "pip install 'graphmem[adk]'" in result["error"]


@pytest.mark.slow
def test_adk_api_server_serves_the_example_with_graphmem_memory(tmp_path: Path) -> None:
    """`adk api_server examples/adk_agent --memory_service_uri graphmem+file:///...`, for real:
    a turn of session 1 is stored by the example's callback, session 2 recalls it."""
    import socket
    import threading
    import urllib.request

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    journal = tmp_path / "memory.journal"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "GRAPHMEM_ADK_MODEL": "scripted"}
    server = subprocess.Popen(
        [sys.executable, "-m", "google.adk.cli", "api_server", str(EXAMPLE), "--host", "127.0.0.1", "--port", str(port),
         "--session_service_uri", "memory://", "--memory_service_uri", f"graphmem+file://{journal}"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"

    def post(path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(base + path, json.dumps(body).encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())

    try:
        # Ready when uvicorn says so (stderr); a server that dies ends the stream instead.
        assert server.stderr is not None
        seen = []
        for line in server.stderr:
            seen.append(line)
            if "Uvicorn running on" in line:
                break
        else:
            raise AssertionError("adk api_server did not start:\n" + "".join(seen[-20:]))
        threading.Thread(target=server.stderr.read, daemon=True).start()  # keep the pipe drained
        texts = []
        for session_id, text in (("s1", "My sister Maria moved to Lisbon."), ("s2", "Where does Maria live?")):
            post(f"/apps/memory_agent/users/u1/sessions/{session_id}", {})
            events = post("/run", {"app_name": "memory_agent", "user_id": "u1", "session_id": session_id,
                                   "new_message": {"role": "user", "parts": [{"text": text}]}})
            texts.append(" ".join(p["text"] for e in events for p in e["content"]["parts"] if p.get("text")))
        assert "My sister Maria moved to Lisbon." in texts[1]
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert (tmp_path / "memory.journal.d").is_dir()  # the graphmem journal, not ADK's in-memory service
    assert not (EXAMPLE / "memory_agent" / ".adk").exists()


async def test_a_reply_in_several_messages_is_one_memory_with_a_part_per_message(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service, limit=5)
    events = [
        text_event("companion", "How was the weekend?", 0),
        text_event("user", "We drove to the coast.", 1),
        text_event("user", "The kids built a sandcastle.", 2),
        text_event("companion", "Lovely!", 3),
    ]
    await memory.add_session_to_memory(session_of("s1", events))
    response = await memory.search_memory(app_name=APP, user_id=USER, query="sandcastle on the coast")
    best = response.memories[0]
    assert best.content.parts is not None
    assert [p.text for p in best.content.parts] == ["We drove to the coast.", "The kids built a sandcastle."]
    by_text = {e.memory.text: e.entry_id for e in await service.list_entries(APP, USER)}
    assert best.custom_metadata["reply_ids"] == [by_text["We drove to the coast."], by_text["The kids built a sandcastle."]]
    assert all(m.id not in best.custom_metadata["reply_ids"] for m in response.memories[1:])
    # Its id names every message (best first), so that deleting the memory deletes the reply.
    assert best.id is not None and set(best.id.split(REPLY_ID_SEPARATOR)) == set(best.custom_metadata["reply_ids"])
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=best.id)
    assert [text for text, _, _ in await stored(service)] == ["How was the weekend?", "Lovely!"]


async def test_a_memory_id_of_several_messages_deletes_only_what_is_the_users(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Maria likes figs", 0)]))
    await memory.add_session_to_memory(session_of("s1", [text_event("user", "Bob likes figs", 0)], user="bob"))
    (mine,) = await stored(service)
    ids = {e.memory.text: e.entry_id for u in (USER, "bob") for e in await service.list_entries(APP, u)}
    # Bob's id, a garbled part and an unknown one beside it: only the user's entry goes.
    composite = REPLY_ID_SEPARATOR.join([ids["Bob likes figs"], "a\nb", "unknown", ids["Maria likes figs"]])
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=composite)
    assert await stored(service) == [] and len(await stored(service, "bob")) == 1
    # An entry id that holds the separator itself is that entry (restored with its own id).
    await service.restore_session(APP, USER, "s2", [EntryRecord(memory=entry_of("x"), entry_id="a+b")])
    await service.restore_session(APP, USER, "s3", [EntryRecord(memory=entry_of("y"), entry_id="a")])
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="a+b")
    assert [text for text, _, _ in await stored(service)] == ["y"]
    assert mine[0] == "Maria likes figs"


def test_a_service_built_before_any_loop_serves_one_loop_after_another(decomposer: Decomposer) -> None:
    """ADK builds the service before any event loop runs, and its synchronous
    ``Runner.run`` calls it from a new loop every turn. The lock the first calls wait on to
    open the store belonged to the first loop that waited: when that opening failed (the
    server down for a moment), every call of the next loop failed with "bound to a
    different event loop" instead of trying to open the store again."""

    from graphmem import BackendUnavailableError

    memory = GraphmemMemoryService(uri="graphmem+bolt://127.0.0.1:9", nlp=decomposer)  # nothing listens there

    async def three_first_calls() -> list[Any]:
        calls = [memory.search_memory(app_name=APP, user_id=USER, query="sister") for _ in range(3)]
        return await asyncio.gather(*calls, return_exceptions=True)

    for _ in range(2):  # a new loop each time
        outcomes = asyncio.run(three_first_calls())
        assert all(isinstance(o, BackendUnavailableError) for o in outcomes), outcomes
    asyncio.run(memory.close())


# ---------------------------------------------------------------------------- deleted memories stay deleted


async def test_a_deleted_turn_is_not_stored_again_by_later_adds(service: MemoryService) -> None:
    """repro: a turn deleted with delete_memory came back with the next turn's
    add_session_to_memory (the example agent adds its session after every turn), and an
    add_events_to_memory sending its event again stored it again too. ADK's own
    InMemoryMemoryService keeps the ids of deleted events: so does this service."""
    for project in (None, "p1") if service.supports_project_scoping() else (None,):
        memory = GraphmemMemoryService(service, project_id=project)

        async def texts(session_id: str | None, user: str = USER, project: str | None = project) -> list[str]:
            return [e.memory.text for e in await service.list_entries(APP, user, project)
                    if e.session_id == session_id and e.project_id == project]

        pin, noted = text_event("user", "My bank PIN is 4512.", 0), text_event("companion", "Noted.", 1)
        events = [pin, noted]
        await memory.add_session_to_memory(session_of("s1", events))
        await memory.add_session_to_memory(session_of("s1", events, user="bob"))  # the same events, Bob's
        hit = (await memory.search_memory(app_name=APP, user_id=USER, query="bank PIN")).memories[0]
        assert hit.content.parts is not None and hit.content.parts[0].text == "My bank PIN is 4512."
        await memory.delete_memory(app_name=APP, user_id=USER, memory_id=hit.id)
        assert await texts("s1") == ["Noted."]

        events.append(text_event("user", "What's the weather like?", 2))  # the next turn
        await memory.add_session_to_memory(session_of("s1", events))
        assert await texts("s1") == ["Noted.", "What's the weather like?"]
        # A delta sending it again (a retried after-turn callback), or the last events only.
        await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=events)
        await memory.add_session_to_memory(session_of("s1", events[:1]))
        assert await texts("s1") == ["Noted.", "What's the weather like?"]
        # Only what was deleted: Bob's turn (his own memory) is his.
        assert await texts("s1", "bob") == ["My bank PIN is 4512.", "Noted."]

        # Outside any session, the same.
        note = text_event("user", "My locker code is 9981.", 3)
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[note])
        [loose] = [m for m in (await memory.search_memory(app_name=APP, user_id=USER, query="locker code")).memories
                   if m.custom_metadata["session_id"] is None]
        await memory.delete_memory(app_name=APP, user_id=USER, memory_id=loose.id)
        await memory.add_events_to_memory(app_name=APP, user_id=USER, events=[note])
        assert await texts(None) == []


async def test_a_piece_of_a_long_event_deleted_deletes_and_forgets_the_whole_event(service: MemoryService) -> None:
    """An event over graphmem's limit is stored as several entries, each a memory a search
    may return: deleting one left the others, and the next add stored the deleted one again."""
    memory = GraphmemMemoryService(service)
    blob = ("q" * 599 + " ") * 1_800 + "secret"  # two pieces; words too long to be terms
    events = [text_event("user", "Here is my log:", 0), text_event("user", blob, 1), text_event("user", "Thanks.", 2)]
    await memory.add_session_to_memory(session_of("s1", events))
    entries = await service.session_entries(APP, USER, "s1")
    assert len(entries) == 4
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=entries[2].entry_id)  # the second piece
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1")] == ["Here is my log:", "Thanks."]
    await memory.add_session_to_memory(session_of("s1", events))
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=events)
    assert [e.memory.text for e in await service.session_entries(APP, USER, "s1")] == ["Here is my log:", "Thanks."]


async def test_a_deleted_utterance_is_not_stored_again_in_part(service: MemoryService) -> None:
    """An utterance transcribed over several events is stored as one entry, named after the
    event that ends it; deleted, none of its pieces may come back (its first events read
    alone are an utterance of their own)."""
    memory = GraphmemMemoryService(service)
    start = voice_event("user", "My vet is Dr. Okafor", 0, heard=True, finished=False)
    end = voice_event("user", "on Main Street.", 0.1, heard=True)
    reply = text_event("companion", "Got it.", 1)
    await memory.add_session_to_memory(session_of("s1", [start, end, reply]))
    hit = (await memory.search_memory(app_name=APP, user_id=USER, query="vet Okafor")).memories[0]
    assert hit.content.parts is not None and hit.content.parts[0].text == "My vet is Dr. Okafor on Main Street."
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=hit.id)
    await memory.add_session_to_memory(session_of("s1", [start, end, reply]))
    await memory.add_events_to_memory(app_name=APP, user_id=USER, session_id="s1", events=[start, end])
    assert await stored(service) == [("Got it.", "s1", 0)]


# ---------------------------------------------------------------------------- add_memory's ids


#: What Alice's add_memory ids are stored with (a hash of the app and user).
ALICES = _owner_suffix(APP, USER)


def fact(text: str, memory_id: str | None) -> AdkMemoryEntry:
    return AdkMemoryEntry(id=memory_id, author="user", content=types.Content(role="user", parts=[types.Part(text=text)]),
                          timestamp="2026-01-05T10:00:00+00:00")


async def test_add_memory_stores_a_memory_under_its_id(service: MemoryService) -> None:
    """repro: MemoryEntry.id was ignored: a retried add_memory stored a second copy under a
    new id, and delete_memory(memory_id=that id) deleted nothing."""
    memory = GraphmemMemoryService(service)
    peanuts = fact("Alice is allergic to peanuts.", "fact-1")
    for _ in range(2):  # the call, and its retry
        await memory.add_memory(app_name=APP, user_id=USER, memories=[peanuts])
    stored_as = "fact-1" + ALICES
    assert [(e.entry_id, e.memory.text, e.session_id) for e in await service.list_entries(APP, USER)] == [
        (stored_as, "Alice is allergic to peanuts.", None)]
    hit = (await memory.search_memory(app_name=APP, user_id=USER, query="peanuts")).memories[0]
    assert hit.id == "fact-1"
    # The same id again is that memory, replaced (in a later call, or later in one call).
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        fact("Alice is allergic to walnuts.", "fact-1"), fact("Alice is allergic to cashews.", "fact-1"),
        fact("Alice likes figs.", None)])
    assert sorted((e.entry_id == stored_as, e.memory.text) for e in await service.list_entries(APP, USER)) == [
        (False, "Alice likes figs."), (True, "Alice is allergic to cashews.")]
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="fact-1")
    assert [e.memory.text for e in await service.list_entries(APP, USER)] == ["Alice likes figs."]


async def test_a_memory_id_held_elsewhere_or_invalid_stores_nothing(service: MemoryService) -> None:
    from graphmem import EntryIdConflictError

    memory = GraphmemMemoryService(service)
    await service.restore_session(APP, USER, "s1", [EntryRecord(memory=entry_of("In a session."), entry_id="turn-1")])
    figs = fact("Alice likes figs.", None)
    with pytest.raises(EntryIdConflictError):  # Alice's own id, of a turn in a session
        await memory.add_memory(app_name=APP, user_id=USER, memories=[figs, fact("Alice likes tea.", "turn-1")])
    for bad in ("a\nb", "x" * 300, "x" * (256 - len(ALICES) + 1), "\ud800"):
        with pytest.raises(InvalidMemoryError, match="not a valid graphmem id"):
            await memory.add_memory(app_name=APP, user_id=USER, memories=[figs, fact("Alice likes tea.", bad)])
    assert await stored(service) == [("In a session.", "s1", 0)]
    if service.supports_project_scoping():  # a global memory's id, from a project's service
        await memory.add_memory(app_name=APP, user_id=USER, memories=[fact("Global fig note.", "fact-2")])
        with pytest.raises(EntryIdConflictError):
            await GraphmemMemoryService(service, project_id="p1").add_memory(
                app_name=APP, user_id=USER, memories=[fact("Project fig note.", "fact-2")])


async def test_an_id_another_user_holds_is_neither_refused_nor_told(service: MemoryService) -> None:
    """repro: ids are unique in the whole store, and add_memory refused an id another user
    held (EntryIdConflictError): with ids made from the text (a hash, to store a fact once),
    anybody could learn whether anybody else had said it."""
    memory = GraphmemMemoryService(service)
    said = hashlib.sha256(b"I was diagnosed with asthma.").hexdigest()
    await memory.add_memory(app_name=APP, user_id="bob", memories=[fact("I was diagnosed with asthma.", said)])
    await memory.add_memory(app_name="other-app", user_id=USER, memories=[fact("Other app.", "fact-1")])
    await memory.add_memory(app_name=APP, user_id=USER, memories=[
        fact("I was diagnosed with asthma.", said), fact("Alice likes tea.", "fact-1")])
    for app, user, memory_id in ((APP, "bob", said), (APP, USER, said), (APP, USER, "fact-1"), ("other-app", USER, "fact-1")):
        hits = (await memory.search_memory(app_name=app, user_id=user, query="asthma tea other app")).memories
        assert memory_id in [hit.id for hit in hits]
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id=said)  # Alice's, not Bob's
    assert [e.memory.text for e in await service.list_entries(APP, USER)] == ["Alice likes tea."]
    assert [e.memory.text for e in await service.list_entries(APP, "bob")] == ["I was diagnosed with asthma."]
    assert [e.memory.text for e in await service.list_entries("other-app", USER)] == ["Other app."]


async def test_a_memory_stored_under_its_bare_id_is_that_memory(service: MemoryService) -> None:
    # Stored before the suffix (or through the core API): the id names that entry still.
    memory = GraphmemMemoryService(service)
    await service.restore_session(APP, USER, None, [EntryRecord(memory=entry_of("Alice likes figs."), entry_id="legacy")])
    await memory.add_memory(app_name=APP, user_id=USER, memories=[fact("Alice likes dates.", "legacy")])
    assert [(e.entry_id, e.memory.text) for e in await service.list_entries(APP, USER)] == [("legacy", "Alice likes dates.")]
    assert [hit.id for hit in (await memory.search_memory(app_name=APP, user_id=USER, query="dates")).memories] == [
        "legacy"]
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="legacy")
    assert await service.list_entries(APP, USER) == []


async def test_a_long_memory_is_stored_under_ids_derived_from_its_own(service: MemoryService) -> None:
    memory = GraphmemMemoryService(service)
    blob = ("q" * 599 + " ") * 1_800  # two pieces; words too long to be terms
    for _ in range(2):
        await memory.add_memory(app_name=APP, user_id=USER, memories=[fact(blob, "log")])
    ids = [e.entry_id for e in await service.list_entries(APP, USER)]
    assert len(ids) == 2 and "log" + ALICES in ids
    [piece] = set(ids) - {"log" + ALICES}
    assert piece.startswith("adkm-") and piece.endswith("-1")
    # Ids a caller may give other memories are never taken for its pieces.
    await memory.add_memory(app_name=APP, user_id=USER, memories=[fact("A short note.", "log-1")])
    await memory.delete_memory(app_name=APP, user_id=USER, memory_id="log")  # the memory, whole
    assert [e.entry_id for e in await service.list_entries(APP, USER)] == ["log-1" + ALICES]

    # Stored again in fewer pieces (a retry with a shorter text): its stale pieces go.
    await memory.add_memory(app_name=APP, user_id=USER, memories=[fact(blob, "log")])
    await memory.add_memory(app_name=APP, user_id=USER, memories=[fact("Now short.", "log")])
    assert sorted((e.entry_id, e.memory.text) for e in await service.list_entries(APP, USER)) == [
        ("log-1" + ALICES, "A short note."), ("log" + ALICES, "Now short.")]


class PausingBeforeAWrite(GraphMemoryService):
    """A networkx store whose first session write (call A's ``restore_session``) waits, before
    it writes, until the second call (B, a delete) has started and done what it can: B then
    either deletes meanwhile (and A's write, read before, stores the turn again) or waits
    for A to finish. Only the timing is the test's."""

    def __init__(self, decomposer: Decomposer) -> None:
        super().__init__(decomposer)
        self.pausing = False
        self.b_started = asyncio.Event()
        self.b_in = asyncio.Event()
        self.b_out = asyncio.Event()

    async def restore_session(self, *args: Any, **kwargs: Any) -> Any:
        if self.pausing:
            self.pausing = False
            await self.b_started.wait()
            if self.b_in.is_set():
                await self.b_out.wait()
        return await super().restore_session(*args, **kwargs)

    async def delete_entries_by_id(self, *args: Any, **kwargs: Any) -> Any:
        self.b_in.set()
        deleted = await super().delete_entries_by_id(*args, **kwargs)
        self.b_out.set()
        return deleted


async def test_a_turn_deleted_while_its_session_is_added_stays_deleted(decomposer: Decomposer) -> None:
    """A delete between an add_session_to_memory's read of the session and its write was
    undone by the write. The delete now waits for the write of the session."""
    store = PausingBeforeAWrite(decomposer)
    memory = GraphmemMemoryService(store)
    events = [text_event("user", "My bank PIN is 4512.", 0), text_event("companion", "Noted.", 1)]
    await memory.add_session_to_memory(session_of("s1", events))
    [pin, _] = await store.session_entries(APP, USER, "s1")
    store.pausing = True

    async def b() -> None:
        store.b_started.set()
        await memory.delete_memory(app_name=APP, user_id=USER, memory_id=pin.entry_id)

    await asyncio.gather(memory.add_session_to_memory(session_of("s1", events)), b())
    assert [e.memory.text for e in await store.session_entries(APP, USER, "s1")] == ["Noted."]
    await store.close()
