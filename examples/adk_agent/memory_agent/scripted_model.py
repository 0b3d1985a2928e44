"""A scripted ADK model: no network, no API key. It shows the memory round trip.

On a user turn it calls ``load_memory`` with the user's words (when the agent has that
tool); when the tool's answer comes back it replies with the recalled texts. With
``preload_memory`` instead, ADK puts the recalled turns into the request before the model
runs, and the model replies with the lines of that block. Every request it receives is
kept in ``requests`` (tests read what reached the model there).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field


class RecallingModel(BaseLlm):
    model: str = "scripted-recall"
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        last = llm_request.contents[-1] if llm_request.contents else None
        parts = (last.parts or []) if last is not None else []
        # As JSON, the way a real model receives a tool's answer.
        answers = [p.function_response.model_dump(mode="json")["response"] for p in parts if p.function_response]
        if answers:
            recalled = _recalled(answers)
            yield _say("I remember: " + " | ".join(recalled) if recalled else "I remember nothing.")
            return
        words = " ".join(p.text for p in parts if p.text)
        if "load_memory" in llm_request.tools_dict:
            call = types.FunctionCall(name="load_memory", args={"query": words})
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(function_call=call)]))
            return
        preloaded = [
            line
            for content in llm_request.contents
            for part in content.parts or []
            if part.text and "<PAST_CONVERSATIONS>" in part.text
            for line in part.text.splitlines()
            if ": " in line and not line.startswith("Time: ")
        ]
        yield _say("I remember: " + " | ".join(preloaded) if preloaded else "Noted.")


def _recalled(answers: list[Any]) -> list[str]:
    """The texts of the memories in ``load_memory``'s answers (ADK wraps a tool's answer in
    ``{"result": ...}``)."""
    return [
        part.get("text", "")
        for answer in answers
        for memory in (answer or {}).get("result", {}).get("memories", [])
        for part in memory.get("content", {}).get("parts", [])
        if part.get("text")
    ]


def _say(text: str) -> LlmResponse:
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=text)]))
