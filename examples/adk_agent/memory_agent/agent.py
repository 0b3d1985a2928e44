"""An ADK agent with long-term memory in graphmem.

It recalls with ADK's ``load_memory`` tool and, after every turn, stores the whole session
in memory (graphmem replaces the session each time, so nothing is duplicated).

With a real model (``GRAPHMEM_ADK_MODEL=gemini-2.5-flash`` and ``GOOGLE_API_KEY`` set) it
talks; with ``GRAPHMEM_ADK_MODEL=scripted`` (the default) a small scripted model runs
without any network: it calls ``load_memory`` with the user's words and answers with what
came back.
"""

from __future__ import annotations

import os

from google.adk.agents import LlmAgent
from google.adk.agents.callback_context import CallbackContext
from google.adk.models.base_llm import BaseLlm
from google.adk.tools import load_memory

from .scripted_model import RecallingModel


async def remember_session(callback_context: CallbackContext) -> None:
    """After each turn: the session so far into memory (it replaces the earlier copy)."""
    await callback_context.add_session_to_memory()


def build_agent(model: str | BaseLlm | None = None) -> LlmAgent:
    """The agent; ``model`` defaults to ``GRAPHMEM_ADK_MODEL`` (``scripted``: no network)."""
    name = os.environ.get("GRAPHMEM_ADK_MODEL", "scripted")
    chosen: str | BaseLlm = model if model is not None else RecallingModel() if name == "scripted" else name
    return LlmAgent(
        name="memory_agent",
        model=chosen,
        instruction="You are a helpful companion. Use load_memory to recall what the user told you before.",
        tools=[load_memory],
        after_agent_callback=remember_session,
    )


root_agent = build_agent()
