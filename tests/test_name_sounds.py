"""A speaker named in Latin letters, asked about in Han, katakana or Devanagari: sound keys,
which spans of a question are read as names, and the search on both backends.

Real parts: pypinyin for Mandarin readings, jieba's tagger for where a Han name starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphmem import Content, Decomposer, MemoryEntry, MemoryService, SearchRequest, open_memory
from graphmem._name_sounds import (
    MAX_QUESTION,
    _hepburn,
    cross_script_names,
    devanagari_sound_keys,
    han_sound_keys,
    kana_sound_keys,
    latin_sound_keys,
)
from graphmem._service import _respelled
from tests.conftest import make_neo4j_service

APP = "names"
USER = "u1"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


def cross_script_speakers(text: str, speakers: list[str]) -> dict[str, str]:
    """The names found, as ``{span: words}``."""
    return {name.span: name.words for name in cross_script_names(text, speakers)}


def sound_alike(a: frozenset[str], b: frozenset[str]) -> bool:
    return bool(a) and not a.isdisjoint(b)


@pytest.mark.parametrize(
    ("latin", "written"),
    [
        ("Caroline", ["卡罗琳", "キャロライン", "कैरोलिन"]),
        ("Melanie", ["梅兰妮", "メラニー", "मेलानी"]),
        ("Jennifer", ["詹妮弗", "ジェニファー"]),  # the final r dropped
        ("Katherine", ["凯瑟琳", "キャサリン"]),  # th as s
        ("Oliver", ["奥利弗", "オリバー"]),  # v as f, as b
        ("Gina", ["吉娜", "ジーナ"]),  # a soft g
        ("Priya", ["प्रिया"]),
        ("Rahul", ["राहुल"]),
        ("Vikas", ["विकास"]),
    ],
)
def test_a_name_sounds_alike_in_every_script_it_is_transliterated_into(latin: str, written: list[str]) -> None:
    keys = latin_sound_keys(latin.lower())
    for name in written:
        other = {"han": han_sound_keys, "kana": kana_sound_keys, "deva": devanagari_sound_keys}
        script = "han" if "\u4e00" <= name[0] <= "\u9fff" else "kana" if "\u30a0" <= name[0] <= "\u30ff" else "deva"
        assert sound_alike(keys, other[script](name)), (latin, name)


def test_names_that_sound_otherwise_do_not_match() -> None:
    assert not sound_alike(latin_sound_keys("caroline"), han_sound_keys("梅兰妮"))
    assert not sound_alike(latin_sound_keys("melanie"), kana_sound_keys("キャロライン"))
    assert not sound_alike(latin_sound_keys("priya"), devanagari_sound_keys("राहुल"))
    assert not sound_alike(latin_sound_keys("john"), han_sound_keys("约翰"))  # a traditional rendering: left


def test_a_name_of_too_few_sounds_has_no_key() -> None:
    # One consonant class tells nothing: "Li", "Ana", "Hannah" (h is dropped), "Al".
    for word in ("li", "ana", "hannah", "al"):
        assert latin_sound_keys(word) == frozenset(), word
    assert kana_sound_keys("コーヒー") == frozenset()  # ko-o-hi-i: one class
    assert han_sound_keys("娜") == frozenset()


def test_what_no_script_reads_has_no_key() -> None:
    assert kana_sound_keys("キャロlin") == frozenset()  # not wholly katakana
    assert devanagari_sound_keys("प्रियाx") == frozenset()


@pytest.mark.parametrize(
    ("question", "speakers", "found"),
    [
        ("卡罗琳研究了什么？", ["caroline", "melanie"], {"卡罗琳": "caroline"}),  # not 卡罗琳研
        ("梅兰妮的孩子们喜欢什么？", ["caroline", "melanie"], {"梅兰妮": "melanie"}),  # jieba cut 梅兰 + 妮的
        ("乔恩和吉娜有什么共同点？", ["jon", "gina"], {"乔恩": "jon", "吉娜": "gina"}),  # one key, told by letters
        ("キャロラインは何を研究しましたか", ["caroline", "melanie"], {"キャロライン": "caroline"}),
        ("प्रिया ने क्या खरीदा?", ["priya", "rahul"], {"प्रिया": "priya"}),
        # A Chinese name kept in pinyin, a Japanese one in Hepburn: spelled exactly.
        ("王强和李娜去了哪里？", ["li", "na", "wang", "qiang"], {"王强": "wang qiang", "李娜": "li na"}),
        ("2023年5月20日に健太は何をしましたか", ["kenta", "misaki"], {"健太": "kenta"}),
        ("陽子の庭で何が咲きましたか", ["yoko", "takuya"], {"陽子": "yoko"}),  # ヨウコ: a long vowel once
        ("田中健太はどこ？", ["kenta", "tanaka"], {"田中": "tanaka", "健太": "kenta"}),
        # What never links:
        ("她最美丽的回忆是什么？", ["maria", "jon"], {}),  # 美丽 mei li sounds like Maria, but is no name
        ("约翰做过哪些武术？", ["john", "maria"], {}),  # 约翰 yue han: not how John sounds
        ("卡罗琳研究了什么？", ["卡罗琳", "梅兰妮"], {}),  # no speaker named in Latin letters
        ("कौन आया?", ["kian", "rahul"], {}),  # a Hindi stop word (कौन, "who") is no name
        ("他们那里的天气怎么样？", ["li", "na"], {}),  # 那里 *na li* ("there") is tagged no name
        ("李明最近在忙什么？", ["li", "na"], {}),  # *li ming*: ming is no speaker's word
        ("健二はどこ？", ["kenta"], {}),  # ケンジ *kenji* is another name
        # Common words that sound like a short name (the review's): no tagger calls them names.
        ("パンを食べたのは誰？", ["ben", "sam"], {}),  # bread
        ("ラインで送った", ["helen", "ryan"], {}),
        ("メロンを買った", ["caroline", "melanie"], {}),
        ("李总说了什么？", ["lisa"], {}),  # "Manager Li": 总 is in no transliteration
        ("张三去了哪里？", ["jason"], {}),
        # Hindi has no tagger: a word must also be spelled close to the name.
        ("परिवार के साथ क्या किया?", ["priya", "rahul"], {}),  # family
        ("प्यार", ["priya"], {}),  # love
        ("पिछले साल क्या हुआ?", ["user", "model"], {}),  # साल, "year", sounds like "user"
        ("पिछले साल क्या हुआ?", ["sally", "tim"], {}),  # and is one letter from Sally: a short name, no edit
        # The second review's: a shorter span of one name sounding like another speaker's.
        ("卡罗琳研究了什么？", ["caroline", "chloé"], {"卡罗琳": "caroline"}),  # not 卡罗 for Chloé
        ("迈克尔在学什么？", ["michael", "mark"], {"迈克尔": "michael"}),  # not 迈克 for Mark
        ("ルーシーはどこ？", ["lucy", "hiroshi"], {"ルーシー": "lucy"}),  # told apart by vowels too
        ("凯瑟琳和詹妮弗去了哪里？", ["katherine", "jennifer"], {"凯瑟琳": "katherine", "詹妮弗": "jennifer"}),
        ("约翰上周去了哪里？", ["john"], {}),  # 约翰上 would take 上周's first character
        ("丹尼尔去了哪里？", ["daniel"], {"丹尼尔": "daniel"}),
        # A name with an accent is in Latin letters too.
        ("クロエはどこ？", ["chloé"], {"クロエ": "chloé"}),
        # ・ and ー are Chinese punctuation too: no kana letter, so Chinese.
        ("卡罗琳・洛佩斯去了哪里？", ["caroline", "lopez"], {"卡罗琳": "caroline", "洛佩斯": "lopez"}),
    ],
)
def test_the_spans_a_question_writes_a_speakers_name_in(
    question: str, speakers: list[str], found: dict[str, str]
) -> None:
    assert cross_script_speakers(question, speakers) == found


@pytest.mark.parametrize(
    ("reading", "hepburn"),
    [
        ("ヨウコ", "yoko"),
        ("キャロライン", "kyarorain"),
        ("シュンスケ", "shunsuke"),
        ("ハットリ", "hattori"),
        ("チヒロ", "chihiro"),
    ],
)
def test_a_japanese_reading_in_hepburn_as_names_are_written(reading: str, hepburn: str) -> None:
    assert _hepburn(reading) == hepburn


def test_a_long_text_is_not_read_for_names() -> None:
    # A question is short; Sudachi refuses ~49 kB, and the taggers' cost grows with the text.
    assert cross_script_speakers("健太は" * 6000, ["kenta"]) == {}
    assert cross_script_speakers("卡罗琳" + "很" * MAX_QUESTION, ["caroline"]) == {}


def test_the_name_is_written_beside_the_span_where_it_was_found() -> None:
    # Not inside a longer name (健太郎) or word (प्रिया holds प्रिय) elsewhere in the text.
    text = "健太と健太郎は兄弟"
    assert _respelled(text, {}, cross_script_names(text, ["kenta"])).split() == ["健太", "kenta", "と健太郎は兄弟"]
    text = "राहुल और प्रियांशु"
    assert _respelled(text, {}, cross_script_names(text, ["rahul"])).split() == ["राहुल", "rahul", "और", "प्रियांशु"]


def test_a_span_sounding_equally_like_two_speakers_links_to_neither() -> None:
    # Both sound KLLN, and 卡罗琳 *kaluolin* is two edits from either's letters.
    assert cross_script_speakers("卡罗琳研究了什么？", ["karolin", "kalorin"]) == {}
    # Told apart by letters when one is closer: *kaluolin* is one edit from "kaluolen".
    assert cross_script_speakers("卡罗琳研究了什么？", ["karolin", "kaluolen"]) == {"卡罗琳": "kaluolen"}


#: Entries by speakers whose names an app keeps in Latin letters, in Chinese.
LATIN_AUTHORS = (
    ("Caroline", "我最近在研究领养机构，想成为一个单亲妈妈。"),
    ("Melanie", "太好了！卡罗琳，我上周带孩子们去博物馆了。"),
    ("Caroline", "我们一起去看了电影。"),
    ("Melanie", "卡罗琳，我们也一起去看了电影，很好看。"),
    ("Melanie", "我报名了陶艺课，很放松。"),
)


def entries(said: Sequence[tuple[str, str]] = LATIN_AUTHORS) -> list[MemoryEntry]:
    """(author, text) pairs as one session's entries, a minute apart."""
    return [
        MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=T0 + timedelta(minutes=i))
        for i, (author, text) in enumerate(said)
    ]


async def test_a_question_naming_a_latin_speaker_in_han_finds_what_they_said(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s1", entries())
    response = await service.search(SearchRequest(query="卡罗琳和谁一起看了电影？", app_name=APP, user_id=USER))
    top = response.hits[0]
    # Her own turn first (before it, Melanie's turn naming her and the film ranked first).
    assert (top.memory.author, top.memory.text) == LATIN_AUTHORS[2]
    assert top.read_as == {"卡罗琳": "caroline"}
    assert "caroline" in top.matched_tokens and top.by_named_speaker is True
    melanies = [h for h in response.hits if h.memory.author == "Melanie"]
    assert melanies and all(h.by_named_speaker is False for h in melanies)


async def test_a_japanese_question_finds_a_speaker_kept_in_latin_letters(service: MemoryService) -> None:
    said = [
        ("Misaki", "健太、週末は何をしていたの？"),
        ("Kenta", "駅前の教室でギターを習い始めたよ。"),
        ("Misaki", "私は健太の家の近くでパン屋を見つけた。"),
    ]
    await service.add_session(APP, USER, "s-ja", entries(said))
    response = await service.search(SearchRequest(query="健太は何を習い始めましたか", app_name=APP, user_id=USER))
    assert response.hits[0].memory.text == said[1][1]
    assert response.hits[0].read_as == {"健太": "kenta"}
    assert response.hits[0].by_named_speaker is True
    assert all(h.by_named_speaker is False for h in response.hits if h.memory.author == "Misaki")


async def test_a_speakers_reading_wins_over_a_longer_name_an_entry_mentions(service: MemoryService) -> None:
    # 健太 is one character from 健太郎 (a name an entry holds), and it is how "Kenta" reads.
    said = [("Misaki", "健太郎さんは駅前の教室でピアノを教えている。"), ("Kenta", "最近ギターを習い始めたよ。")]
    await service.add_session(APP, USER, "s-ja", entries(said))
    response = await service.search(SearchRequest(query="健太は何を習った？", app_name=APP, user_id=USER))
    assert response.hits[0].memory.author == "Kenta" and response.hits[0].read_as == {"健太": "kenta"}


async def test_a_chinese_name_kept_in_pinyin_is_read_as_its_words(service: MemoryService) -> None:
    said = [("Li Na", "我上个月换了工作，现在在银行做数据分析。"), ("Wang Qiang", "李娜，恭喜！银行的工作怎么样？")]
    await service.add_session(APP, USER, "s-zh", entries(said))
    response = await service.search(SearchRequest(query="李娜在银行做什么工作？", app_name=APP, user_id=USER))
    top = response.hits[0]
    assert top.memory.author == "Li Na" and top.by_named_speaker is True
    assert top.read_as == {"李娜": "li na"}
    assert [h.by_named_speaker for h in response.hits if h.memory.author == "Wang Qiang"] == [False]


async def test_backends_read_a_cross_script_name_identically(decomposer: Decomposer) -> None:
    networkx = await open_memory("memory:", nlp=decomposer)
    neo4j = await make_neo4j_service(decomposer)
    try:
        answers = []
        for svc in (networkx, neo4j):
            await svc.add_session(APP, USER, "s1", entries())
            response = await svc.search(SearchRequest(query="卡罗琳研究了什么？", app_name=APP, user_id=USER))
            answers.append([(h.memory.text, round(h.score, 9), h.read_as) for h in response.hits])
        assert answers[0] == answers[1]
        assert answers[0][0][0] == LATIN_AUTHORS[0][1]
    finally:
        await networkx.close()
        await neo4j.close()


# ---------------------------------------------------------------------------- properties

_PIECES = [
    "卡罗琳", "梅兰妮", "李娜", "研究", "了", "什么", "？", "健太", "は", "キャロライン", "ー", "・", "प्रिया", "ने",
    "क्या", "साल", "Caroline", " ", "2023年5月8日", "😀", "ｷｬﾛﾗｲﾝ", "\u0301", "克洛伊", "迈克尔", "在", "约翰", "上周",
]  # fmt: skip
_SPEAKERS = ["caroline", "melanie", "li", "na", "kenta", "priya", "chloé", "o'brien", "user", "卡罗琳", "x"]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=4)), max_size=12),
    st.lists(st.sampled_from(_SPEAKERS), max_size=4),
)
def test_names_found_are_spans_of_the_text_in_order_never_overlapping(pieces: list[str], speakers: list[str]) -> None:
    text = "".join(pieces)
    names = cross_script_names(text, speakers)
    ends = -1
    for name in names:
        assert text[name.start : name.end] == name.span
        assert name.start >= ends
        ends = name.end
        assert all(word in speakers or word in {w for s in speakers for w in s.split()} for word in name.words.split())
    respelled = _respelled(text, {}, names)
    assert all(f" {name.words} " in respelled for name in names)
