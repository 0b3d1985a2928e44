"""The multilingual recall set (``benchmarks/data/multilingual/``): valid fixtures, sound
questions, and recall on every backend.

The recall tests assert what the decomposer on this checkout achieves (the default
pipeline on every language: character n-grams for Chinese and Japanese, no stop words
or lemmas for Hindi and Spanish). Per-language pipelines (issue 14) should only raise it:
tighten ``RECALL_AT_10_FLOOR`` and ``FOUND`` when they land.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO, make_neo4j_service
from graphmem import Decomposer, MemoryService, SearchRequest, load_fixtures, open_memory, read_fixtures
from graphmem._time import query_time

DATA = REPO / "benchmarks" / "data" / "multilingual"
LANGUAGES = ("ja", "zh", "hi", "es")
CATEGORIES = {"single-hop", "multi-hop", "temporal", "variant"}
APP = "multilingual"


def questions() -> list[dict[str, Any]]:
    lines = (DATA / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def fixture_files(*languages: str) -> list[Path]:
    return [DATA / f"{lang}.jsonl" for lang in languages or LANGUAGES]


# ---------------------------------------------------------------------------- the set itself


@pytest.mark.parametrize("language", LANGUAGES)
def test_each_language_has_two_long_dated_conversations_of_two_speakers(language: str) -> None:
    lines = read_fixtures(fixture_files(language))  # validates every line
    conversations: dict[str, list[Any]] = {}
    for line in lines:
        assert line.session.app_name == APP and line.session.project_id is None
        conversations.setdefault(line.session.user_id, []).append(line.session)
    assert len(conversations) >= 2
    for sessions in conversations.values():
        entries = [e for s in sessions for e in s.entries]
        assert len(entries) >= 40
        assert len({e.author for e in entries}) == 2
        assert all(e.id and e.timestamp for e in entries)
        days = [s.entries[0].timestamp.date() for s in sessions if s.entries[0].timestamp]
        assert len(set(days)) == len(sessions) >= 5 and days == sorted(days)


@pytest.mark.parametrize("language", LANGUAGES)
def test_questions_are_in_every_category_and_name_evidence_of_their_conversation(language: str) -> None:
    sessions_of = {
        e.id: line.session.session_id
        for line in read_fixtures(fixture_files(language))
        for e in line.session.entries
    }
    owner_of = {entry_id: entry_id.rsplit("-s", 1)[0] for entry_id in sessions_of}
    asked = [q for q in questions() if q["language"] == language]
    per_conversation = Counter(q["conversation"] for q in asked)
    assert len(per_conversation) >= 2 and all(10 <= n <= 20 for n in per_conversation.values())
    assert {q["category"] for q in asked} == CATEGORIES
    for q in asked:
        assert q["evidence"] and all(owner_of.get(e) == q["conversation"] for e in q["evidence"]), q
        if q["category"] == "multi-hop":  # evidence in different sessions
            assert len({sessions_of[e] for e in q["evidence"]}) >= 2, q


def test_no_question_names_a_time_relative_to_when_it_is_asked() -> None:
    # Benchmarks ask long after the conversations: "去年" would name another year.
    for q in questions():
        asked_then = query_time(q["question"], datetime(2023, 6, 1, tzinfo=UTC))
        assert asked_then == query_time(q["question"], datetime(2026, 6, 1, tzinfo=UTC)), q["question"]


def test_the_fixtures_are_built_from_the_sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    from benchmarks._multilingual import build

    (tmp_path / "src").mkdir()
    for source in (DATA / "src").glob("*.txt"):
        (tmp_path / "src" / source.name).write_bytes(source.read_bytes())
    build(tmp_path)
    for name in [f"{lang}.jsonl" for lang in LANGUAGES] + ["questions.jsonl"]:
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), f"{name}: run python -m benchmarks._multilingual"


# ---------------------------------------------------------------------------- recall

#: A few questions per language whose evidence the current decomposer finds in the top 10
#: (including a temporal question and a name written another way where it finds them).
FOUND = {
    # The last two were lost to the hiragana characters of the question (particles and
    # endings) while those were unigrams.
    "ja": [
        "ミサキの妹の将来の夢は何ですか？",
        "2023年6月に美咲はどこへ旅行しましたか？",
        "健太はどこでギターを習っていますか？",
        "陽子の庭でたくさん採れた野菜は何ですか？",
    ],
    # A typo (请贴 for 请帖): found by the character unigrams of the text (words alone lost
    # it). (玛利亚送给陈静什么礼物？ is read as 玛丽亚 and ranks as the question written that
    # way does: its answer, 13th, is context two turns after the name.)
    "zh": ["王强现在在哪里工作？", "2023年7月8日王强从哪里回来？", "珍妮弗是从哪里来的？", "陈静的请贴是什么颜色的？"],
    "hi": [
        "राहुल तबला किससे सीख रहा है?",
        "प्रीया का नया फ्लैट कहाँ है?",
        # Lost to ties with the speaker's other turns while क्या was a token (a strict xfail
        # until the Hindi question words became stop words).
        "19 मई 2023 को प्रिया ने माइकल के साथ क्या किया?",
    ],
    "es": [
        "¿Qué instrumento empezó a tocar Sofía?",
        "¿Qué hizo Andrés el 19 de marzo de 2023?",
        "¿Qué número de dorsal tiene Joaquin?",
    ],
}

#: Recall@10 per language with the language pipelines, their words with the character
#: unigrams of Chinese and Japanese text, the Hindi fixes of branch cjk (ja 0.944, zh 0.958,
#: hi 0.944, es 0.875;
#: benchmarks/README.md, "Multilingual recall"), a little below: it must not fall.
RECALL_AT_10_FLOOR = {"ja": 0.93, "zh": 0.93, "hi": 0.93, "es": 0.85}


async def ranked(service: MemoryService, question: dict[str, Any]) -> list[tuple[str, float]]:
    response = await service.search(
        SearchRequest(query=question["question"], app_name=APP, user_id=question["conversation"], limit=10)
    )
    return [(h.entry_id, round(h.score, 9)) for h in response.hits]


@pytest.mark.parametrize("language", LANGUAGES)
async def test_graphmem_finds_the_evidence(service: MemoryService, language: str) -> None:
    report = await load_fixtures(service, fixture_files(language))
    assert report.sessions == 12 and report.entries >= 120
    for text in FOUND[language]:
        question = next(q for q in questions() if q["question"] == text)
        found = [entry_id for entry_id, _ in await ranked(service, question)]
        assert set(question["evidence"]) <= set(found), text


@pytest.mark.neo4j
async def test_both_backends_rank_every_question_of_the_set_identically(decomposer: Decomposer) -> None:
    networkx = await open_memory("memory:", nlp=decomposer)
    neo4j = await make_neo4j_service(decomposer)
    try:
        for service in (networkx, neo4j):
            await load_fixtures(service, fixture_files())
        recalled: dict[str, list[float]] = {lang: [] for lang in LANGUAGES}
        for question in questions():
            in_networkx = await ranked(networkx, question)
            assert in_networkx == await ranked(neo4j, question), question["question"]
            found = {entry_id for entry_id, _ in in_networkx}
            recalled[question["language"]].append(len(found & set(question["evidence"])) / len(question["evidence"]))
        for lang, shares in recalled.items():
            assert sum(shares) / len(shares) >= RECALL_AT_10_FLOOR[lang], lang
    finally:
        await networkx.close()
        await neo4j.close()


async def test_a_question_asked_as_a_chat_message_ranks_as_asked(
    decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every question of the set after a greeting, before thanks or after a request to
    recall, in its language ("你好！...", "... ありがとう！", "¿Te acuerdas? ..."): the
    search reads it without them (graphmem._chat_phrases), so it ranks as the question does."""
    monkeypatch.syspath_prepend(str(REPO))
    from benchmarks.multilingual import CHAT_FRAMES

    service = await open_memory("memory:", nlp=decomposer)
    try:
        await load_fixtures(service, fixture_files())
        for i, question in enumerate(questions()):
            frames = CHAT_FRAMES[question["language"]]
            message = {**question, "question": frames[i % len(frames)].format(q=question["question"])}
            assert await ranked(service, message) == await ranked(service, question), message["question"]
    finally:
        await service.close()


def test_the_name_perturbation_changes_one_character_of_each_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    from benchmarks._multilingual import load_set
    from benchmarks.multilingual import mix_options, perturb_names

    data = load_set(["zh", "ja", "es"])
    before = {q.question: q for convs in data.values() for c in convs for q in c.questions}
    changed = perturb_names(data)
    after = [q.question for convs in data.values() for c in convs for q in c.questions]
    assert 0 < changed < len(after)
    assert "玛举亚说要在婚礼上送什么礼物，婚礼上表演得怎么样？" in after  # 丽 -> 举
    assert "王弻现在在哪里工作？" in after and "ジョニサンは浅草で何を買いましたか？" in after
    assert all(q in before for q in after if q.startswith("¿"))  # Spanish is left as written
    assert mix_options("text-12+noner") == {"char_grams": (1, 2), "char_gram_scope": "text", "entities": False}
