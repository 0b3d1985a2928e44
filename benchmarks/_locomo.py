"""Reading the LoCoMo development conversations into turns, sessions and questions.

The data stays outside the repository (``../shared/data/locomo-dev/`` next to the
repository root, CC BY-NC 4.0, benchmarking only); it is read, never copied.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "CATEGORY_NAMES",
    "DEFAULT_DATA",
    "Conversation",
    "Question",
    "Session",
    "Turn",
    "load_conversations",
    "parse_session_date",
]

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "locomo-dev" / "conversations.json"

#: LoCoMo QA categories used for recall (5, adversarial, has no evidence to recall).
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}

_SESSION_KEY = re.compile(r"session_(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn: ``key`` is its LoCoMo ``dia_id`` (unique in its conversation)."""

    key: str
    speaker: str
    text: str
    timestamp: datetime
    #: The message role graphmem stores the turn in (LoCoMo's people both speak as "user").
    role: str = "user"


@dataclass(frozen=True, slots=True)
class Session:
    session_id: str
    timestamp: datetime
    turns: tuple[Turn, ...]


@dataclass(frozen=True, slots=True)
class Question:
    conversation: str
    question: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    sessions: tuple[Session, ...]
    questions: tuple[Question, ...]
    #: questions of categories 1-4 left out because none of their evidence is a turn
    skipped_questions: int = 0

    @property
    def turns(self) -> list[Turn]:
        return [t for s in self.sessions for t in s.turns]


def parse_session_date(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` -> an aware UTC datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict[str, object]) -> str:
    """The remembered text of a turn: its text plus the image caption when present."""
    text = str(turn.get("text") or "")
    caption = turn.get("blip_caption")
    return f"{text} {caption}" if caption else text


def load_conversations(
    path: str | Path | None = None, only: list[str] | None = None
) -> list[Conversation]:
    """Read LoCoMo conversations (categories 1-4 of their QA only).

    Args:
        path: ``conversations.json`` or the folder holding it; default
            ``../shared/data/locomo-dev/`` next to the repo.
        only: sample ids to keep (``["conv-26"]``); ``None`` keeps all.

    Raises:
        FileNotFoundError: the data is not there (with where it was looked for).
        ValueError: an unknown sample id in ``only``.
    """
    data_path = Path(path) if path is not None else DEFAULT_DATA
    if data_path.is_dir():  # the data set's folder, as the scripts' help names it
        data_path = data_path / DEFAULT_DATA.name
    if not data_path.is_file():
        raise FileNotFoundError(
            f"LoCoMo data not found at {data_path}; it is read from ../shared/data/locomo-dev/ "
            "next to the repository root (or pass --data PATH)"
        )
    raw = json.loads(data_path.read_text(encoding="utf-8"))
    conversations = [_conversation(item) for item in raw]
    if only:
        known = {c.sample_id for c in conversations}
        unknown = [s for s in only if s not in known]
        if unknown:
            raise ValueError(f"unknown conversation(s) {unknown}; known: {sorted(known)}")
        conversations = [c for c in conversations if c.sample_id in only]
    return conversations


def _conversation(item: dict[str, object]) -> Conversation:
    conv = item["conversation"]
    assert isinstance(conv, dict)
    sample_id = str(item["sample_id"])
    numbers = sorted(int(m.group(1)) for k in conv if (m := _SESSION_KEY.fullmatch(k)))
    sessions = []
    for n in numbers:
        when = parse_session_date(conv[f"session_{n}_date_time"])
        turns = tuple(
            Turn(key=t["dia_id"], speaker=t["speaker"], text=turn_text(t), timestamp=when)
            for t in conv[f"session_{n}"]
        )
        sessions.append(Session(session_id=f"session_{n}", timestamp=when, turns=turns))
    keys = {t.key for s in sessions for t in s.turns}
    questions = []
    skipped = 0
    for qa in item["qa"]:  # type: ignore[union-attr]
        category = int(qa["category"])
        if category not in CATEGORY_NAMES:
            continue
        # Evidence is a list of dia_ids; one item in the data joins two ("D8:6; D9:17").
        evidence = tuple(
            dict.fromkeys(
                e for field in qa.get("evidence", []) for e in _EVIDENCE_SPLIT.split(field) if e in keys
            )
        )
        if not evidence:
            skipped += 1
            continue
        questions.append(Question(sample_id, str(qa["question"]), category, evidence))
    return Conversation(
        sample_id=sample_id,
        speakers=(str(conv["speaker_a"]), str(conv["speaker_b"])),
        sessions=tuple(sessions),
        questions=tuple(questions),
        skipped_questions=skipped,
    )
