"""The multilingual recall set: conversations in Japanese, Chinese, Hindi and Spanish.

Written for graphmem (original text, see ``benchmarks/data/multilingual/README.md``). The
conversations are stored as graphmem fixtures, one JSON Lines file per language
(``ja.jsonl``, ...: one line per session, app ``multilingual``, the conversation id as
user id, every entry with its id, so ``graphmem load`` loads them and a search hit names
its evidence), and the questions in ``questions.jsonl``.

Both are generated from the authoring files in ``src/`` (one per conversation, easier to
write and review than JSON)::

    python -m benchmarks._multilingual          # rewrites the fixtures and questions from src/

Authoring format::

    # id: ja-1
    # language: ja
    # speakers: 美咲, 健太
    @session 2023-05-08T19:30          one session: its start (UTC); turns 2 minutes apart
    美咲: 健太、久しぶり！               speaker: text
    健太: 先週からギターを… #guitar      a trailing #label marks a turn questions refer to
    @questions
    single-hop | 健太は…？ | guitar-where   category | question | evidence labels
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make ``benchmarks`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._locomo import Conversation, Question, Session, Turn
from graphmem import read_fixtures

__all__ = [
    "APP",
    "CATEGORIES",
    "DATA_DIR",
    "LANGUAGES",
    "MultilingualQuestion",
    "build",
    "load_set",
]

DATA_DIR = Path(__file__).resolve().parent / "data" / "multilingual"
APP = "multilingual"
LANGUAGES = ("ja", "zh", "hi", "es")
#: Question categories, numbered for ``benchmarks.recall.evaluate``.
CATEGORIES = {1: "single-hop", 2: "multi-hop", 3: "temporal", 4: "variant"}
_CATEGORY_IDS = {name: number for number, name in CATEGORIES.items()}
_TURN_GAP = timedelta(minutes=2)
_LABEL = re.compile(r"\s+#([\w-]+)\s*$")


@dataclass(frozen=True, slots=True)
class MultilingualQuestion:
    """A question of the set as stored in ``questions.jsonl``."""

    conversation: str
    language: str
    category: str
    question: str
    evidence: tuple[str, ...]


def _parse_source(path: Path) -> tuple[dict[str, object], list[MultilingualQuestion]]:
    """One authoring file: its fixture lines (dicts) and its questions."""
    meta: dict[str, str] = {}
    sessions: list[dict[str, object]] = []
    labels: dict[str, str] = {}
    raw_questions: list[tuple[str, str, list[str]]] = []
    in_questions = False
    start: datetime | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        if line.startswith("# "):
            key, _, value = line[2:].partition(":")
            meta[key.strip()] = value.strip()
        elif line.startswith("@session "):
            start = datetime.fromisoformat(line.split(None, 1)[1]).replace(tzinfo=UTC)
            sessions.append({"session_id": f"{meta['id']}-s{len(sessions) + 1}", "entries": []})
        elif line.strip() == "@questions":
            in_questions = True
        elif in_questions:
            category, question, evidence = (part.strip() for part in line.split("|"))
            if category not in _CATEGORY_IDS:
                raise ValueError(f"{where}: unknown category {category!r}")
            raw_questions.append((category, question, [e.strip() for e in evidence.split(",")]))
        else:
            if start is None or ": " not in line:
                raise ValueError(f"{where}: expected 'speaker: text' inside a session")
            speaker, text = line.split(": ", 1)
            if speaker not in meta["speakers"].split(", "):
                raise ValueError(f"{where}: {speaker!r} is not a speaker of {meta['id']}")
            entries = sessions[-1]["entries"]
            assert isinstance(entries, list)
            entry_id = f"{sessions[-1]['session_id']}-{len(entries) + 1:02d}"
            if label := _LABEL.search(text):
                if label.group(1) in labels:
                    raise ValueError(f"{where}: label #{label.group(1)} is used twice")
                labels[label.group(1)] = entry_id
                text = text[: label.start()]
            entries.append(
                {
                    "id": entry_id,
                    "author": speaker,
                    "role": "user",
                    "text": text,
                    "timestamp": (start + _TURN_GAP * len(entries)).isoformat(),
                }
            )
    questions = []
    for category, question, evidence in raw_questions:
        missing = [e for e in evidence if e not in labels]
        if missing:
            raise ValueError(f"{path}: question {question!r} names unknown labels {missing}")
        questions.append(
            MultilingualQuestion(meta["id"], meta["language"], category, question, tuple(labels[e] for e in evidence))
        )
    return {"meta": meta, "sessions": sessions}, questions


def build(data_dir: Path = DATA_DIR) -> dict[str, int]:
    """Rewrite ``<lang>.jsonl`` and ``questions.jsonl`` from ``src/``; returns turns per language."""
    by_language: dict[str, list[str]] = {lang: [] for lang in LANGUAGES}
    questions: list[MultilingualQuestion] = []
    turns: dict[str, int] = dict.fromkeys(LANGUAGES, 0)
    for path in sorted((data_dir / "src").glob("*.txt")):
        parsed, qs = _parse_source(path)
        meta = parsed["meta"]
        assert isinstance(meta, dict)
        lang, conv = meta["language"], meta["id"]
        sessions = parsed["sessions"]
        assert isinstance(sessions, list)
        for session in sessions:
            line = {"app_name": APP, "user_id": conv, "session_id": session["session_id"], "project_id": None,
                    "entries": session["entries"]}
            by_language[lang].append(json.dumps(line, ensure_ascii=False))
            turns[lang] += len(session["entries"])
        questions.extend(qs)
    for lang, lines in by_language.items():
        (data_dir / f"{lang}.jsonl").write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    (data_dir / "questions.jsonl").write_text(
        "".join(
            json.dumps(
                {"conversation": q.conversation, "language": q.language, "category": q.category,
                 "question": q.question, "evidence": list(q.evidence)},
                ensure_ascii=False,
            )
            + "\n"
            for q in questions
        ),
        encoding="utf-8",
    )
    return turns


def read_questions(data_dir: Path = DATA_DIR) -> list[MultilingualQuestion]:
    """The questions of ``questions.jsonl``."""
    out = []
    for line in (data_dir / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            out.append(
                MultilingualQuestion(q["conversation"], q["language"], q["category"], q["question"],
                                     tuple(q["evidence"]))
            )
    return out


def load_set(
    languages: tuple[str, ...] | list[str] = LANGUAGES, data_dir: Path = DATA_DIR
) -> dict[str, list[Conversation]]:
    """The conversations of each language, read (and validated) as graphmem fixtures, with
    their questions; a turn's key is its entry id."""
    questions = read_questions(data_dir)
    out: dict[str, list[Conversation]] = {}
    for lang in languages:
        convs: dict[str, list[Session]] = {}
        for fixture in read_fixtures([data_dir / f"{lang}.jsonl"]):
            s = fixture.session
            assert s.session_id is not None
            turns = tuple(
                Turn(key=e.id or "", speaker=e.author, text=e.text, timestamp=e.timestamp or datetime.now(UTC))
                for e in s.entries
            )
            convs.setdefault(s.user_id, []).append(Session(s.session_id, turns[0].timestamp, turns))
        out[lang] = [
            Conversation(
                sample_id=conv,
                speakers=tuple(dict.fromkeys(t.speaker for s in sessions for t in s.turns))[:2],  # type: ignore[arg-type]
                sessions=tuple(sessions),
                questions=tuple(
                    Question(conv, q.question, _CATEGORY_IDS[q.category], q.evidence)
                    for q in questions
                    if q.conversation == conv
                ),
            )
            for conv, sessions in convs.items()
        ]
    return out


if __name__ == "__main__":
    for language, count in build().items():
        print(f"{language}: {count} turns")
