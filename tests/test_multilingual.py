"""Recall in the user's own language: detection, each language's pipeline, storage, search.

Real pipelines throughout (GiNZA for Japanese, jieba for Chinese, spaCy's Hindi and Spanish
with the lookup tables); a missing extra is simulated by making its import fail.
"""

from __future__ import annotations

import io
import logging
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import spacy

from graphmem import Content, Decomposer, GraphMemoryService, MemoryEntry, MemoryService, SearchRequest, open_memory
from graphmem._answer_types import asked_types
from graphmem._decompose import _chunks, author_tokens
from graphmem._fixtures import FixtureError, dump_fixtures, export_fixtures, load_fixtures
from graphmem._language import LanguageDetector, script_language
from graphmem._pipelines import normalise_indic
from graphmem._spelling import uncased_name_variants, uncased_word_variant
from graphmem.cli._cypher_run import run_read_only
from tests.conftest import make_neo4j_service, neo4j_uri_or_skip

APP = "polyglot"
USER = "mika"
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

#: One conversation per language: (author, text). The questions below each have one answer.
CONVERSATIONS = {
    "ja": [
        ("ミカ", "妹のマリアは去年リスボンに引っ越しました。"),
        ("ミカ", "週末は友達と京都でお寺を見に行きました。"),
        ("ミカ", "最近、毎朝ジョギングを始めました。"),
    ],
    "zh": [
        ("小林", "我妹妹玛丽亚去年搬到了里斯本。"),
        ("小林", "周末我和朋友去北京看了长城。"),
        ("小林", "最近我每天早上都去跑步。"),
    ],
    "hi": [
        ("मीका", "मेरी बहन मारिया पिछले साल लिस्बन चली गई।"),
        ("मीका", "सप्ताहांत में हम दोस्तों के साथ ताजमहल देखने गए।"),
        ("मीका", "आजकल मैं हर सुबह दौड़ने जाती हूँ।"),
    ],
    "es": [
        ("Mika", "Mi hermana María se mudó a Lisboa el año pasado."),
        ("Mika", "El fin de semana visité la catedral de Sevilla con mis amigos."),
        ("Mika", "Últimamente salgo a correr todas las mañanas."),
    ],
}
#: (language, question, the text of the entry that answers it)
QUESTIONS = [
    ("ja", "マリアはどこに住んでいますか？", CONVERSATIONS["ja"][0][1]),
    ("ja", "京都で何を見ましたか", CONVERSATIONS["ja"][1][1]),
    ("zh", "玛丽亚住在哪里？", CONVERSATIONS["zh"][0][1]),
    ("zh", "周末去长城了吗？", CONVERSATIONS["zh"][1][1]),
    ("hi", "मारिया कहाँ चली गई?", CONVERSATIONS["hi"][0][1]),
    ("hi", "ताजमहल कब देखा?", CONVERSATIONS["hi"][1][1]),
    ("es", "¿Dónde vive María ahora?", CONVERSATIONS["es"][0][1]),
    ("es", "¿Qué visitó en Sevilla?", CONVERSATIONS["es"][1][1]),
]


def turn(author: str, text: str, at: int = 0) -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=T0 + timedelta(minutes=at))


async def store_all(service: MemoryService) -> None:
    await service.add_sessions(
        APP,
        USER,
        {
            f"s-{language}": [turn(author, text, i) for i, (author, text) in enumerate(turns)]
            for language, turns in CONVERSATIONS.items()
        },
    )


async def ranked(service: MemoryService, query: str) -> list[tuple[str, float]]:
    response = await service.search(SearchRequest(query=query, app_name=APP, user_id=USER))
    return [(h.memory.text, round(h.score, 9)) for h in response.hits]


# ---------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Where does Maria live?", "en"),
        ("I’m so happy 😊 — really", "en"),  # curly quote, dash, emoji: no letters outside ASCII
        ("I had ラーメン in Tokyo yesterday", "en"),  # a few CJK characters in an English sentence
        ("妹はどこに住んでいますか", "ja"),
        ("LGBTQのサポートグループに行った", "ja"),
        ("東京に行きたい", "ja"),  # kana among Han: Japanese
        ("我妹妹住在北京", "zh"),  # Han without kana: Chinese
        ("वह कहाँ रहती है?", "hi"),
        ("¿Dónde vive?", "es"),  # inverted marks: Spanish, no detector needed
        ("서울에 살아요", "ko"),
        ("Где живёт Мария?", "xx"),
        ("12:30 👍", "en"),
    ],
)
def test_script_decides_without_the_detector(text: str, language: str) -> None:
    detector = LanguageDetector()
    assert script_language(text) == language
    assert detector.detect(text) == language
    assert not detector.ready, "the detector was built for a text its script decides"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Mi hermana María se mudó a Lisboa el año pasado.", "es"),
        ("Ma sœur habite à Lisbonne depuis l'année dernière.", "fr"),
        ("Meine Schwester wohnt seit letztem Jahr in München.", "de"),
        ("I loved the café and the crème brûlée near our hotel", "en"),
    ],
)
def test_latin_text_with_accents_goes_to_the_detector(text: str, language: str) -> None:
    assert script_language(text) is None
    assert LanguageDetector().detect(text) == language


@pytest.mark.parametrize(
    "text",
    [
        "Anh trai tôi làm việc ở đâu?",  # Vietnamese, read as Portuguese before
        "Anh trai tôi làm việc ở Hà Nội.",  # its statement, read as French before
        "Zjadłem pierogi z babcią",  # Polish
        "Jeg spiste smørrebrød",  # Danish
    ],
)
def test_a_latin_language_without_a_pipeline_is_unknown_not_a_guess(text: str) -> None:
    assert LanguageDetector().detect(text) == "xx"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        # A name's accents are no evidence of a language: its words decide.
        ("What did Zoë adopt?", "en"),
        ("What did Chloé buy?", "en"),
        ("Who is André?", "en"),
        ("How is Søren doing these days?", "en"),
        ("Où habite Zoë?", "fr"),  # a sentence's first word is no name by its capital
        ("¿Dónde vive Zoë?", "es"),
        ("Voy a la fiesta con Ramón mañana.", "es"),
    ],
)
def test_a_name_decides_no_language(text: str, language: str) -> None:
    assert LanguageDetector().detect(text) == language


async def test_an_english_question_naming_someone_with_an_accent_is_read_as_english(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s", [turn("Zoë", "Zoë adopted a kitten last week.")])
    (hit,) = (await service.search(SearchRequest(query="What did Zoë adopt?", app_name=APP, user_id=USER))).hits
    # English words, no English stop word ("what", "did") as a term no entry holds.
    assert hit.score == 1.0 and hit.matched_tokens == ["adopt", "zoë"]


@pytest.mark.parametrize(
    "text",
    [
        "When did she meet her fiancée?",  # French to lingua, on that one word
        "What did Mel say at the soirée?",
        "We had a lovely soirée at the café",
        "Where did they buy the jalapeños?",
    ],
)
def test_words_english_writes_with_accents_leave_the_text_english(decomposer: Decomposer, text: str) -> None:
    assert decomposer.language_of(text) == "en"
    # Without the English lists the detector judges the whole text: these are the texts
    # it reads as another language (if lingua ever reads them as English, the test no
    # longer tests anything and says so).
    assert LanguageDetector().detect(text) != "en", "lingua reads this as English on its own"


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Das ist für dich", "de"),  # "fur" is an English word; "Das ist dich" is German
        ("Ele foi até a praia", "pt"),  # "ate" too
        ("Qué comió Ana ayer", "es"),  # "que", "comio": no English words
        ("Eu já fui lá", "pt"),  # short words with accents are no English words
        ("Did Anna like the crème brûlée?", "fr"),  # "creme", "brulee": not in the lists
    ],
)
def test_other_languages_keep_theirs_when_an_accented_word_is_also_english(
    decomposer: Decomposer, text: str, language: str
) -> None:
    assert decomposer.language_of(text) == language


async def test_an_english_question_with_a_loanword_finds_english_lemmas(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s", [turn("Mel", "My fiancée and I went hiking in the hills.")])
    (hit,) = (await service.search(SearchRequest(query="When was Mel hiking with her fiancée?", app_name=APP, user_id=USER))).hits
    # Read as French, "hiking" stayed "hiking" and "was" a term; read as English, its lemma.
    assert {"hike", "fiancée"} <= set(hit.matched_tokens)


async def test_a_name_in_a_language_without_an_entity_recogniser_is_read_from_the_tokens(
    service: MemoryService,
) -> None:
    """Spanish has no entity recogniser here: "Jennifer" is only a token, and "Yénifer" in a
    question found nothing. A capitalised word is now read against the user's tokens as a
    name is (no short forms: "Encan" is no "encantar")."""
    said = [
        ("Marta", "Lo propuso mi amiga Jennifer, que está encantada."),
        ("Andrés", "¡Qué bien! ¿Y qué más leyó?"),
        ("Marta", "En marzo empezamos otro libro."),
    ]
    await service.add_session(APP, USER, "s", [turn(a, t, i) for i, (a, t) in enumerate(said)])
    (hit, *_) = (await service.search(SearchRequest(query="¿De dónde es Yénifer?", app_name=APP, user_id=USER))).hits
    assert hit.read_as == {"yénifer": "jennifer"} and hit.matched_tokens == ["jennifer"]
    for question in ("¿Qué tal Encan?", "¿Dónde está Rodolfo?"):
        hits = (await service.search(SearchRequest(query=question, app_name=APP, user_id=USER))).hits
        assert all(not h.read_as for h in hits), question


def test_language_setting_is_validated() -> None:
    with pytest.raises(ValueError, match="language must be"):
        Decomposer(language="klingon")
    with pytest.raises(ValueError, match="char_grams"):
        Decomposer(char_grams=(0,))
    with pytest.raises(ValueError, match="char_gram_scope must be one of text, content, words, long"):
        Decomposer(char_gram_scope="sentence")


def test_korean_and_unknown_are_codes_an_app_may_set(decomposer: Decomposer) -> None:
    # The Languages table lists them; the default pipeline decomposes both.
    korean = Decomposer(decomposer.nlp, language="ko").decompose("서울에 살아요")
    assert korean.language == "ko" and {"서울", "서", "울"} <= set(korean.tokens)
    assert Decomposer(decomposer.nlp, language="xx").decompose_query("Где живёт Мария?").language == "xx"


def test_fixed_language_skips_detection(decomposer: Decomposer) -> None:
    fixed = Decomposer(language="es")
    assert fixed.language_of("Where does she live") == "es"
    assert fixed.decompose("Vivía en Lisboa").language == "es"
    # A pipeline of the caller's, without a language: everything is that pipeline's, as before.
    assert Decomposer(decomposer.nlp).language is None


# ---------------------------------------------------------------------------- pipelines


def test_japanese_words_lemmas_and_no_particles(decomposer: Decomposer) -> None:
    words_only = Decomposer(language="ja", char_grams=())
    parts = words_only.decompose("妹はどこに住んでいますか")
    assert parts.language == "ja"
    # は, に, で, い(る), ます, か are grammar; どこ a pronoun; 住んで is the verb 住む.
    assert parts.tokens == ("妹", "住む")
    moved = words_only.decompose("妹のマリアは去年リスボンに引っ越しました。")
    assert "引っ越す" in moved.tokens and "まし" not in moved.tokens and "の" not in moved.tokens
    assert {(e.name, e.label) for e in moved.entities} >= {("マリア", "PERSON"), ("リスボン", "GPE")}
    # By default the words come with the characters of the text (its unigrams), but a
    # hiragana character alone is a sound (は, に, ん: particles and endings), no token.
    default = decomposer.decompose("妹はどこに住んでいますか")
    assert default.tokens[:2] == ("妹", "住む") and "住" in default.tokens
    assert not {"妹は", "は", "に", "ん", "ど"} & set(default.tokens)
    # Katakana and words written in hiragana keep their characters and words.
    assert {"マ", "リ", "ア", "たくさん"} <= set(decomposer.decompose("マリアはたくさん食べた").tokens)


def test_entities_false_skips_the_recogniser_and_keeps_the_tokens(decomposer: Decomposer) -> None:
    text = "妹のマリアは去年リスボンに引っ越しました。"
    fast = Decomposer(language="ja", entities=False)
    assert fast.decompose(text).entities == ()
    assert fast.decompose(text).tokens == decomposer.decompose(text).tokens  # tokens need no NER
    assert decomposer.decompose(text).entities  # the default still recognises them
    assert Decomposer(entities=False).decompose("My sister Maria moved to Lisbon.").entities == ()
    with pytest.raises(ValueError, match="entities must be True or False"):
        Decomposer(entities="no")  # type: ignore[arg-type]


def test_chinese_words_stop_words_and_char_grams(decomposer: Decomposer) -> None:
    text = "我妹妹玛丽亚去年搬到了里斯本。"
    parts = decomposer.decompose(text)
    assert parts.language == "zh"
    assert {"妹妹", "玛丽亚", "去年", "里斯本"} <= set(parts.tokens)
    words_only = Decomposer(language="zh", char_grams=()).decompose(text)
    assert words_only.tokens == ("妹妹", "玛丽亚", "去年", "搬到", "里斯本")  # 我, 了: stop words
    # A transliterated name spelled one character differently still shares its other
    # characters (bigrams alone would share none of 玛丽/丽亚 and 玛利/利亚).
    variant = decomposer.decompose("玛利亚搬到了里斯本。")
    assert {"玛", "亚"} <= set(parts.tokens) & set(variant.tokens)
    assert "玛丽亚" not in variant.tokens


def test_full_width_forms_are_ascii_and_numbers_are_kept(decomposer: Decomposer) -> None:
    # Chinese and Japanese input methods type full-width letters and digits by default.
    assert {"ibm", "305"} <= set(decomposer.decompose("我在ＩＢＭ工作，房间号是３０５。").tokens)
    assert {"ibm", "305"} <= set(decomposer.decompose_query("我在IBM工作，房间号是305吗？").tokens)
    assert "ibm" in decomposer.decompose("I work at ＩＢＭ now.").tokens
    assert "3" in decomposer.decompose("我有3只猫").tokens  # a digit is on Chinese's stop list
    assert "3" in decomposer.decompose_query("我有３只猫吗").tokens


def test_chinese_text_keeps_a_word_of_another_script_whole() -> None:
    """jieba keeps ASCII words together but cut every other letter apart: "José" in a
    Chinese sentence was ``jos`` + ``é``, "мир" three letters, so neither could be found."""
    zh = Decomposer(language="zh", char_grams=())
    assert zh.decompose("我和José在北京吃饭").tokens == ("josé", "北京", "吃饭")
    assert zh.decompose("Zoë去了Café").tokens == ("zoë", "café")
    assert set(zh.decompose("Hello 世界 мир नमस्ते").tokens) == {"hello", "世界", "мир", "नमस्ते"}
    # Words with a space between them stay two; ASCII words and Han words are as before.
    assert zh.decompose("José María 和 iPhone").tokens == ("josé", "maría", "iphone")


@pytest.mark.parametrize(
    ("scope", "present", "absent"),
    [
        ("text", {"妹は", "住ん"}, {"は", "ん"}),  # bigrams of the text; no hiragana unigram
        # Runs of content words (and stop words), never across or of a particle.
        ("content", {"妹", "住む", "住"}, {"妹は", "は", "に"}),
        ("words", {"妹", "住"}, {"妹は", "は", "む"}),
        ("long", set(), {"住", "妹は", "は"}),  # no word of three characters
    ],
)
def test_char_gram_scopes(scope: str, present: set[str], absent: set[str]) -> None:
    tokens = set(Decomposer(language="ja", char_grams=(1, 2), char_gram_scope=scope).decompose("妹はどこに住んでいますか").tokens)
    assert {"妹", "住む"} <= tokens  # the words, always
    assert present <= tokens and not absent & tokens


def test_hindi_stop_words_stems_and_normalisation(decomposer: Decomposer) -> None:
    parts = decomposer.decompose("वह कहाँ रहती है?")
    assert parts.language == "hi"
    assert "है" not in parts.tokens and "वह" not in parts.tokens  # stop words
    # Question words are grammar, as "what" and "where" are in English (spaCy's list lacks them).
    asked = decomposer.decompose_query("मायकल पुणे में क्या करता है? वह कहाँ और कब गया?")
    assert not {"क्य", "क्या", "कह", "कहां", "कब"} & set(asked.tokens)
    assert spacy.blank("hi").vocab["क्या"].is_stop is False  # spaCy's own list is untouched
    # The stemmer never leaves a single letter: माँ ("mother") is not म.
    assert "मां" in decomposer.decompose("माँ का बगीचा").tokens
    assert "रह" in parts.tokens  # रहती, रहता, रहते: one stem
    # Nukta, zero-width joiners and chandrabindu are spelling, not words.
    assert normalise_indic("क़िला") == normalise_indic("किला")
    assert normalise_indic("क\u200dष") == "कष"
    assert decomposer.decompose("क़िला देखा").tokens == decomposer.decompose("किला देखा").tokens


def test_a_hindi_authors_name_is_whole_words_and_their_stems() -> None:
    # Not cut at the vowel signs (re's \w does not match them); the stem is what the Hindi
    # pipeline makes of the name in a question.
    assert author_tokens("प्रिया शर्मा") == ["प्रिया", "प्रिय", "शर्मा", "शर्म"]
    assert author_tokens("राहुल।") == ["राहुल"]


def test_a_name_in_han_or_kana_gives_the_tokens_a_text_saying_it_gives(decomposer: Decomposer) -> None:
    # A question naming the speaker takes the name's characters besides its word: so does
    # the speaker's own entry (Decomposer.name_tokens, added to author_tokens' words).
    for name, question in [("健太", "健太は何をしましたか"), ("王小明", "王小明去哪儿了？")]:
        tokens = decomposer.name_tokens(name)
        assert set(name) <= set(tokens)
        assert set(tokens) <= set(decomposer.decompose_query(question).tokens)
    assert "け" not in decomposer.name_tokens("けんた")  # a hiragana character alone is no token
    # Other names give nothing more (Latin at once; Devanagari has its own stems).
    assert decomposer.name_tokens("Maria") == () and decomposer.name_tokens("प्रिया") == ()
    assert decomposer.name_tokens("María") == ()
    # Words alone (char_grams=()) give the name as a word, as author_tokens does.
    assert Decomposer(language="ja", char_grams=()).name_tokens("健太") == ("健太",)


async def test_a_question_naming_a_cjk_speaker_and_a_day_finds_what_they_said_that_day(
    service: MemoryService,
) -> None:
    day = timedelta(days=1)
    sessions = {
        "s1": [turn("美咲", "健太、元気？最近どう？", 0), turn("健太", "元気だよ。仕事が忙しいけど。", 1)],
        "s2": [
            MemoryEntry(content=Content(role="user").with_text("健太、週末はどうだった？"), author="美咲", timestamp=T0 + 7 * day),
            MemoryEntry(content=Content(role="user").with_text("昨日、友達と高尾山に登った。"), author="健太", timestamp=T0 + 7 * day),
        ],
        "s3": [
            MemoryEntry(content=Content(role="user").with_text("健太、来週は暇？"), author="美咲", timestamp=T0 + 14 * day),
            MemoryEntry(content=Content(role="user").with_text("うん、水曜なら大丈夫。"), author="健太", timestamp=T0 + 14 * day),
        ],
    }
    await service.add_sessions(APP, USER, sessions)
    # 2026-03-07 is the day before the second session: 健太's "昨日" of that session.
    response = await service.search(SearchRequest(query="2026年3月7日に健太は何をしましたか？", app_name=APP, user_id=USER))
    top = response.hits[0]
    assert top.memory.text == "昨日、友達と高尾山に登った。"
    # The speaker's turn holds the name's characters as the turns naming him do.
    assert {"健太", "健", "太"} <= set(top.matched_tokens) and top.by_named_speaker is True
    # A character of a speaker's name is no name of the speaker: a question about 由美
    # (who shares 美 with 美咲) names no speaker.
    await service.add_session(APP, USER, "s4", [turn("健太", "由美は福岡に引っ越した。", 20)])
    asked = await service.search(SearchRequest(query="由美はどこに引っ越しましたか", app_name=APP, user_id=USER))
    assert asked.hits[0].memory.text == "由美は福岡に引っ越した。" and asked.hits[0].by_named_speaker is None


async def test_a_question_naming_a_hindi_speaker_finds_their_turns(service: MemoryService) -> None:
    await service.add_session(
        APP,
        USER,
        "s-hi-speakers",
        [
            turn("राहुल", "प्रिया, तुम्हारा नया फ्लैट कैसा है?", 0),
            turn("प्रिया", "बहुत अच्छा है, बालकनी से पहाड़ दिखते हैं।", 1),
            turn("राहुल", "मैंने कल नई साइकिल खरीदी।", 2),
            turn("अनीता", "राहुल ने मुझे भी बताया।", 3),
        ],
    )
    hits = await ranked(service, "प्रिया ने क्या कहा?")
    assert hits[0][0] == "बहुत अच्छा है, बालकनी से पहाड़ दिखते हैं।"  # said by प्रिया, who names nobody


def test_spanish_lemmas_and_stop_words(decomposer: Decomposer) -> None:
    parts = decomposer.decompose("Mi hermana vivía en Lisboa y ahora vive en Oporto.")
    assert parts.language == "es"
    assert "vivir" in parts.tokens and "vivía" not in parts.tokens and "vive" not in parts.tokens
    assert "en" not in parts.tokens and "mi" not in parts.tokens
    assert "lisboa" in parts.tokens


def test_french_lemmas_and_stop_words(decomposer: Decomposer) -> None:
    # spaCy's French lemma table gives each form a list of lemmas (of one): tokens are
    # still strings, the lemma (this text once failed to store: "unhashable type: 'list'").
    parts = decomposer.decompose("Ma sœur habitait à Lisbonne ; je suis allé au café avec elle.")
    assert parts.language == "fr"
    assert all(isinstance(t, str) for t in parts.tokens)
    assert {"habiter", "aller", "café", "lisbonne", "sœur"} <= set(parts.tokens)
    assert "habitait" not in parts.tokens and "allé" not in parts.tokens
    assert "ma" not in parts.tokens and "je" not in parts.tokens
    assert decomposer.decompose_query("Où habite ma sœur ?").tokens == ("habiter", "sœur")


@pytest.mark.parametrize(
    ("language", "text", "stop_words"),
    [
        ("fr", "J'ai acheté l'appartement en mai.", {"je", "j'", "le", "l'"}),  # elisions, no acronyms
        ("fr", "C'était l'anniversaire de ma mère.", {"ce", "c'"}),
        ("fr", "Qu'est-ce que j'ai dit sur l'ordinateur ?", {"ce", "je"}),  # "-ce" -> "ce"
        ("it", "I miei amici sono arrivati.", {"il", "i"}),  # "I" -> "il"
        ("it", "Dov'è il gatto?", {"dov", "dove"}),
        ("hi", "मैंने मेरी बहन को फोन किया", {"मैंने", "मेरी", "मेर"}),  # ergative and possessive pronouns
        ("hi", "हमें तुम्हारे घर जाना है", {"हमें", "तुम्हारे", "तुम्हार"}),
    ],
)
def test_no_stop_word_leaks_as_a_token(decomposer: Decomposer, language: str, text: str, stop_words: set[str]) -> None:
    fixed = Decomposer(decomposer.nlp, language=language)
    for tokens in (fixed.decompose(text).tokens, fixed.decompose_query(text).tokens):
        assert tokens and not stop_words & set(tokens), tokens


async def test_thai_lao_khmer_and_myanmar_are_found_by_their_characters(service: MemoryService) -> None:
    # Written without spaces and without a pipeline: character unigrams and bigrams, as Han.
    said = [
        "ฉันรับเลี้ยงแมวเมื่อฤดูใบไม้ผลิที่แล้ว",  # I adopted a cat last spring
        "พี่สาวของฉันย้ายไปลิสบอนในปี 2021",  # my sister moved to Lisbon in 2021
        "ຂ້ອຍມີໝາໂຕໜຶ່ງ",  # Lao: I have a dog
        "ខ្ញុំចូលចិត្តកាហ្វេ",  # Khmer: I like coffee
        "ကျွန်တော်ထမင်းစားတယ်",  # Myanmar: I eat rice
    ]
    await service.add_session(APP, USER, "th-1", [turn("Som", text, i) for i, text in enumerate(said)])
    assert (await ranked(service, "แมว"))[0][0] == said[0]  # "cat"
    assert (await ranked(service, "ลิสบอน"))[0][0] == said[1]  # "Lisbon"
    assert (await ranked(service, "ໝາ"))[0][0] == said[2]  # "dog"
    assert (await ranked(service, "កាហ្វេ"))[0][0] == said[3]  # "coffee"
    assert (await ranked(service, "ထမင်း"))[0][0] == said[4]  # "rice"


def test_a_han_character_beyond_the_basic_plane_is_kept(decomposer: Decomposer) -> None:
    assert "𠮷" in decomposer.decompose("𠮷野家で牛丼を食べました。").tokens  # CJK extension B
    assert "𠮷" in decomposer.decompose_query("我在𠮷野家吃饭").tokens


@pytest.mark.parametrize(
    ("language", "singular", "plural"),
    [("es", "libro", "libros"), ("es", "viaje", "viajes"), ("pt", "gato", "gatos"), ("it", "sogno", "sogni")],
)
def test_a_noun_and_its_plural_share_a_token(
    decomposer: Decomposer, language: str, singular: str, plural: str
) -> None:
    # The lookup tables have no part of speech: they read "libro" as a form of "librar".
    fixed = Decomposer(decomposer.nlp, language=language)
    assert fixed.decompose_query(singular).tokens[0] == fixed.decompose(plural).tokens[0] == singular


async def test_a_spanish_question_in_the_singular_finds_the_entry_in_the_plural(decomposer: Decomposer) -> None:
    service = await open_memory("memory:", nlp=decomposer.nlp, language="es")
    said = ["Este verano leí dos libros de historia.", "Este verano leí el periódico todos los días."]
    await service.add_session(APP, USER, "es-1", [turn("Ana", text, i) for i, text in enumerate(said)])
    hits = await ranked(service, "¿Qué libro leí este verano?")
    assert hits[0][0] == said[0] and hits[0][1] > hits[1][1]


async def test_a_german_noun_finds_its_plural_and_case_forms(decomposer: Decomposer) -> None:
    # spaCy's German table keys nouns capitalised ("Hunde"), and German capitalises every
    # noun inside a sentence, where a capital otherwise marks a name.
    service = await open_memory("memory:", nlp=decomposer.nlp, language="de")
    said = ["Mein Bruder hat einen Hund.", "Ich war mit den Kindern im Urlaub.", "Wir haben drei Katzen und zwei Hunde."]
    await service.add_sessions(APP, USER, {f"de-{i}": [turn("Jonas", text, i)] for i, text in enumerate(said)})
    assert {text for text, _ in await ranked(service, "Wer hat einen Hund?")} == {said[0], said[2]}
    assert {text for text, _ in await ranked(service, "hunde")} == {said[0], said[2]}
    assert [text for text, _ in await ranked(service, "Wo waren die Kinder?")] == [said[1]]
    assert [text for text, _ in await ranked(service, "Katze")] == [said[2]]
    assert "maria" in service.decomposer.decompose_query("Wo wohnt Maria jetzt?").tokens  # a name stays


def test_a_german_capital_is_read_as_the_noun_and_the_polite_sie_is_a_stop_word(decomposer: Decomposer) -> None:
    german = Decomposer(decomposer.nlp, language="de")
    # "garten" lowercase is a form of "garen" in the table; the capitalised noun is the garden.
    assert german.decompose("Wir haben im Garten gegrillt.").tokens[:1] == ("garten",)
    assert "garten" in german.decompose_query("Wo sind die Gärten?").tokens
    # "Sie" inside a sentence was kept as a name, and read as `ich`: every formal question
    # shared it with every formal entry. A noun among the stop words is still kept.
    assert german.decompose("Können Sie mir beim Umzug helfen?").tokens == ("umzug", "helfen")
    assert "jahr" in german.decompose("Ich lerne seit einem Jahr Spanisch.").tokens
    # Three letters in a row are German spelling, not English chat stretching a word.
    assert "schifffahrt" in german.decompose("Die Schifffahrt auf dem Rhein").tokens


def test_a_name_is_not_read_as_a_verb_too() -> None:
    italian = Decomposer(language="it")
    # "Marco" was also `marcare` (a form of it in the table): "who marked ...?" found it.
    assert italian.decompose("Ho visto Marco al mare.").tokens == ("marco", "mare")
    assert "librare" in italian.decompose("Ho comprato un libro").tokens  # a word keeps both readings


def test_digits_of_every_script_are_one_token() -> None:
    hindi = Decomposer(language="hi")
    assert "45" in hindi.decompose("मेरे पास ४५ रुपये हैं।").tokens
    assert "45" in hindi.decompose_query("मेरे पास 45 रुपये हैं।").tokens


async def test_french_is_stored_and_found(service: MemoryService) -> None:
    said = ["Ma sœur habite à Lisbonne depuis l'année dernière.", "Je suis allé au café avec elle."]
    await service.add_session(
        APP, USER, "fr-1", [MemoryEntry(content=Content(role="user").with_text(t), author="Claire") for t in said]
    )
    response = await service.search(SearchRequest(query="Où habitait sa sœur ?", app_name=APP, user_id=USER))
    assert response.hits[0].memory.text == said[0]
    assert {"habiter", "sœur"} <= set(response.hits[0].matched_tokens)


@pytest.mark.parametrize("text", [text for turns in CONVERSATIONS.values() for _, text in turns])
def test_query_and_entry_are_decomposed_alike(decomposer: Decomposer, text: str) -> None:
    entry, query = decomposer.decompose(text), decomposer.decompose_query(text)
    assert query.language == entry.language
    assert query.tokens == entry.tokens


def test_english_is_decomposed_as_before(decomposer: Decomposer) -> None:
    texts = ["My sister Maria moved to Lisbon.", "I’m painting again — the café is lovely!", "Thanks, Will, see you in May"]
    english = Decomposer(decomposer.nlp)  # one pipeline for everything: the old behaviour
    for text in texts:
        auto = decomposer.decompose(text)
        assert auto.language == "en"
        assert (auto.tokens, auto.entities) == (english.decompose(text).tokens, english.decompose(text).entities)
        assert decomposer.decompose_query(text).tokens == english.decompose_query(text).tokens


def test_workers_decompose_every_language_as_this_process_does(decomposer: Decomposer) -> None:
    texts = [text for turns in CONVERSATIONS.values() for _, text in turns] + ["My sister Maria moved to Lisbon."]
    with Decomposer(n_process=2, batch_size=2) as pooled:
        assert pooled.decompose_many(texts) == decomposer.decompose_many(texts)


# ---------------------------------------------------------------------------- a missing extra


@pytest.mark.parametrize(("language", "module", "text"), [("zh", "jieba", "我妹妹住在北京"), ("ja", "sudachipy", "妹は京都に住んでいます")])
def test_missing_extra_falls_back_to_character_grams_with_a_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, decomposer: Decomposer, language: str, module: str, text: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # `import jieba` now raises ImportError
    fresh = Decomposer(decomposer.nlp, language="auto")
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        parts = fresh.decompose(text)
        query = fresh.decompose_query(text)
    warnings = [r.getMessage() for r in caplog.records if r.name == "graphmem" and r.levelno == logging.WARNING]
    assert len(warnings) == 1 and f"graphmem[{language}]" in warnings[0]
    assert parts.language == language
    # What the default pipeline made of such text before languages existed: character
    # unigrams and bigrams.
    old = Decomposer(decomposer.nlp).decompose(text)
    assert parts.tokens == old.tokens and query.tokens == old.tokens
    assert text[0] in parts.tokens and text[:2] in parts.tokens


# ---------------------------------------------------------------------------- storage and search, both backends


@pytest.mark.parametrize(("language", "question", "answer"), QUESTIONS)
async def test_search_finds_the_answer_in_its_language(
    service: MemoryService, language: str, question: str, answer: str
) -> None:
    await store_all(service)
    hits = await ranked(service, question)
    assert hits and hits[0][0] == answer, f"{language}: {question} -> {hits}"


async def test_japanese_query_links_entities_by_its_own_segmentation(service: MemoryService) -> None:
    await store_all(service)
    response = await service.search(SearchRequest(query="マリアについて教えて", app_name=APP, user_id=USER))
    assert response.hits[0].memory.text == CONVERSATIONS["ja"][0][1]
    assert "マリア" in response.hits[0].matched_entities


async def test_a_long_japanese_entry_is_stored_and_found(service: MemoryService) -> None:
    # 20,000 characters, 60,000 UTF-8 bytes: over the 49,149 bytes SudachiPy takes at once,
    # far under MAX_TEXT_LENGTH. Stored in one batch with a short entry, which must survive.
    long_text = "友達と一緒に東京の美術館へ行き、印象派の絵画をたくさん見ました。" * 625 + "最後に浅草で天ぷらを食べました。"
    assert len(long_text) > 20_000
    await service.add_sessions(APP, USER, {"s-long": [turn("ミカ", long_text)], "s-short": [turn("ミカ", "猫を飼い始めました。")]})
    assert (await ranked(service, "浅草で何を食べましたか"))[0][0] == long_text
    assert (await ranked(service, "猫を飼いましたか"))[0][0] == "猫を飼い始めました。"
    assert (await ranked(service, long_text))[0][0] == long_text


def test_a_long_text_is_cut_at_sentence_ends_within_the_pipelines_byte_limit() -> None:
    text = "東京の美術館へ行きました。" * 4000  # 13 characters, 39 bytes a sentence
    pieces = _chunks(text, 45_000)
    assert "".join(pieces) == text
    assert all(len(p.encode()) <= 45_000 and p.endswith("。") for p in pieces)
    english = "I went to the museum. " * 5000
    assert all(p.endswith(" ") for p in _chunks(english, 45_000)[:-1])


async def test_language_is_stored_and_visible_to_cypher(service: MemoryService) -> None:
    await store_all(service)
    await service.add_entry(APP, USER, turn("Mika", "My sister Maria moved to Lisbon.", at=60))
    rows = (
        await run_read_only(
            service,
            "MATCH (e:Entry) WHERE e.app_name = $app AND e.user_id = $user RETURN e.text AS text, e.language AS language",
            {"app": APP, "user": USER},
        )
    ).records()
    by_text = {r["text"]: r["language"] for r in rows}
    for language, turns in CONVERSATIONS.items():
        for _, text in turns:
            assert by_text[text] == language
    assert by_text["My sister Maria moved to Lisbon."] == "en"
    entries = await service.list_entries(APP, USER, all_projects=True)
    assert {e.memory.text: e.language for e in entries} == by_text
    recent = await service.recent_entries(APP, USER, 1)
    assert recent[0].language == "en"


@pytest.mark.parametrize("backend", ["networkx", "neo4j"])
async def test_a_service_set_to_one_language_reads_every_text_in_it(decomposer: Decomposer, backend: str) -> None:
    # Spanish without accents is ASCII: detection reads it as English; an app that says
    # its language gets Spanish lemmas (vive, vivía -> vivir) on entries and queries alike.
    if backend == "networkx":
        service = await open_memory("memory:", nlp=decomposer.nlp, language="es")
    else:
        service = await open_memory(neo4j_uri_or_skip(), nlp=decomposer.nlp, language="es")
        await service.delete_user(APP, USER)
    try:
        assert service.decomposer.language == "es"
        await service.add_entry(APP, USER, turn("Ana", "Mi hermana vive en Lisboa desde mayo."))
        await service.add_entry(APP, USER, turn("Ana", "Mi hermano trabaja en Oporto."))
        entries = await service.list_entries(APP, USER, all_projects=True)
        assert {e.language for e in entries} == {"es"}
        hits = await ranked(service, "donde vivia mi hermana")
        assert hits[0][0] == "Mi hermana vive en Lisboa desde mayo." and hits[0][1] > 0
    finally:
        await service.delete_user(APP, USER)
        await service.close()


@pytest.mark.parametrize(
    ("language", "entry", "question"),
    [
        ("fr", "J'ai perdu mon manteau dans le train.", "Où est le marteau ?"),  # hammer, not coat
        ("pt", "O meu gato é preto.", "Onde está o prato?"),  # plate, not black
        ("es", "Compré leche en el supermercado.", "¿Dónde está el lecho?"),  # bed, not milk
    ],
)
async def test_a_real_word_of_another_language_is_not_read_as_a_typo(
    decomposer: Decomposer, language: str, entry: str, question: str
) -> None:
    service = await open_memory("memory:", nlp=decomposer.nlp, language=language)
    await service.add_entry(APP, USER, turn("Ana", entry))
    assert await ranked(service, question) == []


async def test_a_word_typed_without_its_accent_is_still_read_as_a_typo(decomposer: Decomposer) -> None:
    # The Spanish lemma table knows "vivía", not "vivia": one letter from the token "vivir".
    service = await open_memory("memory:", nlp=decomposer.nlp, language="es")
    await service.add_entry(APP, USER, turn("Ana", "Mi hermana vive en Lisboa desde mayo."))
    response = await service.search(SearchRequest(query="¿Dónde vivia?", app_name=APP, user_id=USER))
    assert [h.memory.text for h in response.hits] == ["Mi hermana vive en Lisboa desde mayo."]
    assert response.hits[0].read_as == {"vivia": "vivir"}


def test_a_language_and_a_decomposer_are_not_given_together(decomposer: Decomposer) -> None:
    with pytest.raises(ValueError, match=r"set it on the decomposer instead \(Decomposer\(language=...\)\)"):
        GraphMemoryService(nlp=decomposer, language="ja")
    with pytest.raises(ValueError, match="language must be"):
        GraphMemoryService(nlp=decomposer.nlp, language="klingon")


async def test_backends_rank_every_language_identically(decomposer: Decomposer) -> None:
    networkx = await open_memory("memory:", nlp=decomposer)
    neo4j = await make_neo4j_service(decomposer)
    try:
        for svc in (networkx, neo4j):
            await store_all(svc)
        for _, question, _ in QUESTIONS:
            assert await ranked(networkx, question) == await ranked(neo4j, question), question
    finally:
        await networkx.close()
        await neo4j.close()


async def test_language_round_trips_through_export_and_journal(service: MemoryService, tmp_path: Path) -> None:
    await store_all(service)
    sessions = await export_fixtures(service, APP, USER)
    exported = {e.text: e.language for s in sessions for e in s.entries}
    assert exported[CONVERSATIONS["hi"][0][1]] == "hi"
    journal = GraphMemoryService(service.decomposer, path=tmp_path / "memory.journal")
    await load_fixtures(journal, [io.BytesIO("".join(dump_fixtures(sessions)).encode("utf-8"))])
    await journal.close()
    reopened = GraphMemoryService(service.decomposer, path=tmp_path / "memory.journal")
    try:
        entries = await reopened.list_entries(APP, USER)
        assert {e.memory.text: e.language for e in entries} == exported
    finally:
        await reopened.close()


async def test_fixture_without_language_gets_it_detected_and_a_bad_one_is_refused(service: MemoryService) -> None:
    line = (
        '{"app_name": "polyglot", "user_id": "mika", "session_id": "s", "entries": [{"author": "ミカ", '
        '"role": "user", "text": "京都に行きました", "tokens": ["京都", "行く"], "entities": []}]}\n'
    )
    await load_fixtures(service, [io.BytesIO(line.encode("utf-8"))])
    [stored] = await service.list_entries(APP, USER)
    assert stored.language == "ja"
    bad = line.replace('"entities": []', '"entities": [], "language": "klingon"')
    with pytest.raises(FixtureError, match="language must be one of"):
        await load_fixtures(service, [io.BytesIO(bad.encode("utf-8"))])


# ---------------------------------------------------------------------------- names in scripts without capitals


@pytest.mark.parametrize(
    ("query", "names", "expected"),
    [
        # Chinese: a transliteration one character off, in the middle of a Han run.
        ("玛利亚送给她什么礼物？", ["玛丽亚"], {"玛利亚": "玛丽亚"}),
        # Japanese: the long-vowel mark present or absent, or one kana off (a whole katakana run).
        ("ジョーナサンは何を買った？", ["ジョナサン"], {"ジョーナサン": "ジョナサン"}),
        ("ジョナサンは何を買った？", ["ジョーナサン"], {"ジョナサン": "ジョーナサン"}),
        ("ジョニサンは何を買った？", ["ジョナサン"], {"ジョニサン": "ジョナサン"}),
        # Hindi: another vowel sign (a whole word), nukta as spelling.
        ("मायकल पुणे में क्या करता है?", ["माइकल"], {"मायकल": "माइकल"}),
        ("प्रीया ने क्या कहा?", ["प्रिया"], {"प्रीया": "प्रिया"}),
    ],
)
def test_a_name_spelled_another_way_in_a_script_without_capitals_links(
    query: str, names: list[str], expected: dict[str, str]
) -> None:
    assert uncased_name_variants(query, names) == expected


@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("玛丽亚送给她什么礼物？", ["玛丽亚"]),  # written as the name: nothing to link
        ("健二は何をしましたか？", ["健太"]),  # two Han characters: another name, never another spelling
        ("王弻说了什么？", ["王强"]),
        ("रम कहाँ है?", ["राम"]),  # three code points in Devanagari: too short
        ("玛丽说了什么？", ["玛丽亚"]),  # 玛丽 or 玛丽说? one place read two ways links to none
        ("玛利亚说了什么？", ["玛丽亚", "玛莉亚"]),  # could be two names: neither
        ("ジョニサンは何を買った？", ["ボナサン"]),  # the first character differs
        ("さくは、げんき？", ["さくら"]),  # hiragana names are not tried: their runs carry particles
        ("Where does Katharine live?", ["katherine"]),  # Latin: the capitalised-word rule's, not this one
    ],
)
def test_what_never_links_in_a_script_without_capitals(query: str, names: list[str]) -> None:
    assert uncased_name_variants(query, names) == {}


def test_a_word_in_a_script_without_capitals_reads_as_the_one_token_it_spells() -> None:
    assert uncased_word_variant("玛举亚", ["玛丽亚", "玛", "婚礼"]) == "玛丽亚"
    assert uncased_word_variant("ジョーナサン", ["ジョナサン"]) == "ジョナサン"
    assert uncased_word_variant("मायकल", ["माइकल", "पुण"]) == "माइकल"
    assert uncased_word_variant("图书室", ["图书馆", "图书角"]) is None  # two tokens: neither
    assert uncased_word_variant("健二", ["健太"]) is None  # too short
    assert uncased_word_variant("たべる", ["たべた"]) is None  # hiragana: grammar and common words
    assert uncased_word_variant("玛举亚", ["ジョナサン"]) is None  # another script


#: (author, text) of a conversation whose names the questions below spell another way.
NAMED = [
    ("刘洋", "我的好朋友玛丽亚下个月要从西班牙来北京玩。"),
    ("陈静", "她喜欢什么？"),
    ("刘洋", "她最喜欢吃烤鸭。"),
    ("ジョナサン", "浅草で風鈴を買ったよ。"),
    ("美咲", "健太は駅前の教室でギターを習っている。"),
    ("राहुल", "मेरा दोस्त माइकल पुणे में कैफ़े चलाता है।"),
]


@pytest.mark.parametrize(
    ("question", "read_as", "answer"),
    [
        ("玛利亚要来北京做什么？", {"玛利亚": "玛丽亚"}, NAMED[0][1]),  # a Chinese transliteration
        ("ジョーナサンは何を買いましたか？", {"ジョーナサン": "ジョナサン"}, NAMED[3][1]),  # a speaker, ー added
        ("मायकल पुणे में क्या चलाता है?", {"मायकल": "माइकल"}, NAMED[5][1]),  # another vowel sign
    ],
)
async def test_a_question_spelling_a_name_another_way_finds_its_entries(
    service: MemoryService, question: str, read_as: dict[str, str], answer: str
) -> None:
    await service.add_session(APP, USER, "s-names", [turn(a, t, i) for i, (a, t) in enumerate(NAMED)])
    response = await service.search(SearchRequest(query=question, app_name=APP, user_id=USER))
    assert response.hits[0].memory.text == answer
    assert response.hits[0].read_as == read_as


async def test_a_two_character_name_one_character_off_is_not_linked(service: MemoryService) -> None:
    await service.add_session(APP, USER, "s-names", [turn(a, t, i) for i, (a, t) in enumerate(NAMED)])
    response = await service.search(SearchRequest(query="健二はどこでギターを習っていますか", app_name=APP, user_id=USER))
    assert all(not h.read_as for h in response.hits)


async def test_backends_link_names_identically(decomposer: Decomposer) -> None:
    networkx = await open_memory("memory:", nlp=decomposer)
    neo4j = await make_neo4j_service(decomposer)
    try:
        for svc in (networkx, neo4j):
            await svc.add_session(APP, USER, "s-names", [turn(a, t, i) for i, (a, t) in enumerate(NAMED)])
        for question in ("玛利亚要来北京做什么？", "ジョーナサンは何を買いましたか？", "मायकल पुणे में क्या चलाता है?", "玛举亚喜欢吃什么？"):
            assert await ranked(networkx, question) == await ranked(neo4j, question), question
    finally:
        await networkx.close()
        await neo4j.close()


def test_japanese_and_chinese_where_and_who_ask_for_a_kind() -> None:
    assert asked_types("健太はどこでギターを習っていますか？") == ("@place",)
    assert asked_types("玛丽亚住在哪里？") == ("@place",)
    assert asked_types("誰と京都に行きましたか") == ("@person",)
    assert asked_types("谁送的礼物？") == ("@person",)
    assert asked_types("何を買いましたか") == ()
    assert asked_types("Where does Maria live?") == ("@place",)  # English as before
