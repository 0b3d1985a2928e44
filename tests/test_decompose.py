"""Decomposition: text into the tokens and entities that become graph nodes.

Most tests use the shared ``decomposer`` fixture (the default statistical pipeline, loaded
once). The fallback tests build their own decomposers, with the list of default
pipelines pointed at names that do not exist.
"""

from __future__ import annotations

import logging
import threading
import unicodedata

import pytest
import spacy
from hypothesis import given
from hypothesis import strategies as st

import graphmem._decompose as decompose_module
from graphmem import Content, Decomposer, GraphMemoryService, MemoryEntry, SearchRequest
from graphmem._decompose import NAMING_ENTITY_LABELS, author_tokens, clean_text

# ---------------------------------------------------------------------------- tokens


def test_tokens_are_lowercase_lemmas(decomposer: Decomposer) -> None:
    tokens = decomposer.decompose("The cats were RUNNING quickly towards the mice").tokens
    assert {"cat", "run", "quickly", "mouse"} <= set(tokens)
    assert all(t == t.lower() for t in tokens)
    assert "cats" not in tokens and "running" not in tokens


def test_british_and_american_spellings_give_one_token(decomposer: Decomposer) -> None:
    # spaCy's spelling norms: an entry and a question spelled either way share the token.
    british = decomposer.decompose("My favourite colours; we organised it at the theatre.").tokens
    american = decomposer.decompose_query("my favorite colors, we organized it at the theater").tokens
    assert set(british) == set(american) >= {"favorite", "color", "organize", "theater"}
    # A norm that is not one word of letters leaves the form alone: "pm" is not "p.m.".
    assert "pm" in decomposer.decompose("see you at 5 pm").tokens
    # Names keep their spelling ("Colour" as a band's name is a name).
    assert "colour" in decomposer.decompose_query("did they see Colour live").tokens


def test_a_dash_or_quote_left_on_a_word_is_not_part_of_its_token(decomposer: Decomposer) -> None:
    # spaCy leaves a dash written as a pause on the word before it ("family- "): the word
    # would otherwise be a token of its own that no question holds.
    dashed = decomposer.decompose("Spent the day with my family- friends too, and some books-")
    assert {"family", "friend", "book"} <= set(dashed.tokens)
    assert not [t for t in dashed.tokens if t.endswith("-")]
    assert "family" in decomposer.decompose_query("time with family").tokens
    # A plus is part of a name, and a one-letter word keeps its marks.
    assert "lgbtq+" in decomposer.decompose("We went to the LGBTQ+ parade").tokens
    assert "c++" in decomposer.decompose("I am learning C++ now").tokens


def test_stop_words_punctuation_and_whitespace_are_dropped(decomposer: Decomposer) -> None:
    text = "Well... the thing is, they were not at home!!!   (Really?)\n\t— we had been there; it's fine."
    tokens = decomposer.decompose(text).tokens
    stop_words = decomposer.nlp.Defaults.stop_words
    assert tokens, "some content words survive"
    assert not [t for t in tokens if t in stop_words]
    assert all(any(ch.isalnum() for ch in t) for t in tokens)
    assert all(not any(ch.isspace() for ch in t) for t in tokens)


def test_names_are_not_lemmatized(decomposer: Decomposer) -> None:
    # The lookup table maps "maria" to "mare": a name must stay as written, whether NER
    # finds it (an entry) or only its capital inside a sentence shows it (a query).
    assert "maria" in decomposer.decompose("Maria went to the shelter.").tokens
    assert "maria" in decomposer.decompose_query("what did Maria do at the shelter").tokens
    assert "mare" not in decomposer.decompose("Maria went to the shelter.").tokens


def test_stop_words_written_as_names_are_kept(decomposer: Decomposer) -> None:
    assert {"us", "may"} <= set(decomposer.decompose("we flew to the US in May").tokens)
    assert {"us", "may"} <= set(decomposer.decompose_query("did they fly to the US in May?").tokens)
    # Capitals at the start of a sentence or in a shouted phrase name nothing.
    assert decomposer.decompose("May I come? I LOVE IT").tokens == ("come", "love")


def test_a_title_case_text_tells_no_name_by_its_capitals(decomposer: Decomposer) -> None:
    # Every word capitalised: "About" and "The" are stop words, "Decided" a form of "decide".
    assert decomposer.decompose_query("Forget About The Dog").tokens == ("forget", "dog")
    assert decomposer.decompose_query("What Has Kate Decided To Pursue?").tokens == ("kate", "decide", "pursue")
    # One capital inside a lowercase sentence still names (two words are no title).
    assert "may" in decomposer.decompose_query("did they fly in May").tokens


def test_a_new_line_starts_a_sentence(decomposer: Decomposer) -> None:
    # A capital after a line break is no name: "Towels" is a form of "towel", "The" a stop word.
    tokens = decomposer.decompose("Packing list\nTowels\nThe passport").tokens
    assert tokens == ("pack", "list", "towel", "passport")
    assert decomposer.decompose("Packing list\r\nTowels").tokens == ("pack", "list", "towel")


def test_a_contraction_or_chat_spelling_of_a_function_word_is_no_token(decomposer: Decomposer) -> None:
    # The lemma table reads "wo" (won't) as "will", "ca" (can't) as "can", "na" (gonna) as
    # "to", "ya" as "you", "'em" as "them": stop words, like the words they stand for.
    for text in ("I won't eat shellfish", "I can't eat shellfish", "I'm gonna eat shellfish", "see ya, love 'em"):
        tokens = set(decomposer.decompose(text).tokens) | set(decomposer.decompose_query(text).tokens)
        assert tokens.isdisjoint({"will", "can", "to", "you", "them", "wo", "ca", "na"}), text
    # A content verb the stop list holds is still a token: "went" is "go".
    assert "go" in decomposer.decompose("We went hiking").tokens
    # A chat spelling NER reads as a name ("ya know": PERSON) is still the function word.
    for text in ("ya know", "Ya know what?"):
        assert "ya" not in decomposer.decompose(text).tokens, text
    # A name that is also a function word is not one typed short.
    assert "will" in decomposer.decompose("We met Will at the port.").tokens


def test_id_and_wed_are_words_not_the_d_of_a_contraction(decomposer: Decomposer) -> None:
    # spaCy splits "id" and "wed" as "I'd" and "we'd" without the apostrophe: the "d" read
    # as `have` on every such entry, and "my ID" (not split) never met "my id".
    for text, word in (("my employee id is 4471", "id"), ("we wed in June", "wed"), ("What is my ID?", "id")):
        for tokens in (decomposer.decompose(text).tokens, decomposer.decompose_query(text).tokens):
            assert word in tokens and "have" not in tokens, (text, tokens)
    assert "have" not in decomposer.decompose("id love that, I'd go").tokens


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        # The clitic of a contraction typed without its apostrophe is no token ("s", `have`),
        # and the word as typed is kept only when it is an English word ("id", "wed").
        ("wheres my passport", ("passport",)),
        ("ive been busy", ("busy",)),
        ("hed go", ("go",)),
        ("theyd come", ("come",)),
        # An emoji's variation selector or skin tone glued the emoji onto the next word.
        ("I ❤️pizza", ("pizza",)),
        ("⚽️football tonight", ("football", "tonight")),
        # What is typed for an apostrophe inside a word.
        ("I`m happy", ("happy",)),
        ("can´t wait", ("wait",)),
        ("it‘s fine", ("fine",)),
        # Function words typed as their sound; a capital "R" may be the language.
        ("r u coming", ("come",)),
        ("what did u say about ur dog", ("say", "dog")),
        ("I code in R", ("code", "r")),
        # A word stretched for emphasis is the word; a stop word stretched is still one.
        ("that was amaaazing", ("amaze",)),
        ("we won the gameee sooo happy", ("win", "game", "happy")),
        ("I loooove youuu", ("love",)),
        ("SOOO COOOL", ("cool",)),
        # A sound is kept as typed.
        ("brrr cold", ("brrr", "cold")),
    ],
)
def test_chat_typing_gives_the_words_meant(decomposer: Decomposer, text: str, tokens: tuple[str, ...]) -> None:
    assert decomposer.decompose(text).tokens == tokens
    assert decomposer.decompose_query(text).tokens == tokens


@pytest.mark.parametrize("run", ["!" * 5000, "😀" * 5000, "(" * 5000, "?!" * 2500, "…" * 5000])
def test_a_long_run_of_symbols_is_broken_for_the_tokenizer_and_gives_no_token(
    decomposer: Decomposer, run: str
) -> None:
    # spaCy's tokenizer splits such a run one character at a time, each split copying the
    # rest: 8,000 "!" took 10 s, a megabyte of them hours. No piece of it is a token.
    text = f"what a party{run}we danced"
    cleaned = clean_text(text)
    assert len(cleaned) == len(text)  # one character for one
    assert max(len(piece) for piece in cleaned.split()) < 64
    assert decomposer.decompose(text).tokens == decomposer.decompose("what a party!!! we danced").tokens


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("went camping with my fam", "went camping with my family"),
        ("happy bday sis!", "happy birthday sister!"),
        ("our vacay pics", "our vacation pictures"),
        ("a long convo with my bro", "a long conversation with my brother"),
        # Written as a name, or typed in capitals, a short form is still the word.
        ("I told Mom about it", "I told my mother about it"),
        ("we watched TV", "we watched television"),
        # The pet words of family are the family words.
        ("my mum and dad", "my mother and father"),
        ("grandma's kiddos", "grandmother's kids"),
    ],
)
def test_a_chat_short_form_is_its_full_word(decomposer: Decomposer, typed: str, meant: str) -> None:
    # People type the short form and ask in the full one: an entry and a question share
    # the full word, whichever of the two each is typed in.
    full = set(decomposer.decompose(meant).tokens)
    assert set(decomposer.decompose(typed).tokens) == full
    assert set(decomposer.decompose_query(typed).tokens) == set(decomposer.decompose_query(meant).tokens)


def test_a_short_form_is_not_read_as_a_typo() -> None:
    # "bdays" is in no English word list, so an entry also held the one frequent word it
    # was read as a typo of: `bay`.
    tokens = Decomposer().decompose("we had two bdays this week").tokens
    assert "birthday" in tokens and "bay" not in tokens and "bdays" not in tokens


def test_the_short_form_table_leaves_words_of_their_own_and_other_languages_alone(decomposer: Decomposer) -> None:
    from graphmem._short_forms import SHORT_FORMS

    stop_words = decomposer.nlp.Defaults.stop_words
    # A full word that is a stop word would make its short form vanish.
    assert not [full for full in SHORT_FORMS.values() if full in stop_words]
    assert all(short == short.lower() and " " not in full for short, full in SHORT_FORMS.items())
    # Forms that are words or names of their own are read as written.
    for text, kept in (("back in a mo", "mo"), ("my ex called", "ex"), ("the vet said", "vet"), ("Gran Canaria", "gran")):
        assert kept in decomposer.decompose(text).tokens, text
    # Not in another language's text: German "Uni" is the German word.
    german = Decomposer(language="de")
    assert "university" not in german.decompose("Ich gehe heute in die Uni.").tokens


def test_a_misspelt_word_of_an_entry_also_gives_the_word_it_misspells(decomposer: Decomposer) -> None:
    tokens = decomposer.decompose("What a couragous talk, I recieve so much support!").tokens
    assert {"couragous", "courageous", "recieve", "receive"} <= set(tokens)
    # At its place: after the word as written, before the next word's token.
    assert tokens.index("couragous") + 1 == tokens.index("courageous") < tokens.index("talk")
    # Not in a query (its misspelt words are read against the user's own tokens), not for a
    # stop word ("becuase" is "because"), not for a word written as a name, not for text
    # decomposed as another language.
    assert "courageous" not in decomposer.decompose_query("a couragous talk").tokens
    assert "because" not in decomposer.decompose("I stayed becuase of the rain").tokens
    assert "receive" not in decomposer.decompose("We met Recieve at the port.").tokens
    assert "courageous" not in Decomposer(decomposer.nlp, language="xx").decompose("a couragous talk").tokens
    # decompose_many groups texts by language; each keeps its own rule.
    both = Decomposer(decomposer.nlp, language="auto").decompose_many(["a couragous talk", "Ich höre Musik"])
    assert "courageous" in both[0].tokens


def test_only_stop_words_give_nothing(decomposer: Decomposer) -> None:
    parts = decomposer.decompose("and the of it was to be or not to be")
    assert parts.tokens == () and parts.is_empty


def test_numbers_are_kept(decomposer: Decomposer) -> None:
    tokens = decomposer.decompose("Room 404 costs 3.5 euros in 2024, code 0042").tokens
    assert {"404", "3.5", "2024", "0042"} <= set(tokens)


def test_tokens_are_unique_and_in_first_seen_order(decomposer: Decomposer) -> None:
    tokens = decomposer.decompose("apple banana apple cherry banana apple").tokens
    assert tokens == ("apple", "banana", "cherry")


def test_cjk_without_a_pipeline_yields_unigrams_and_bigrams(decomposer: Decomposer) -> None:
    # Japanese and Chinese have pipelines of their own (tests/test_multilingual.py); a
    # pipeline used for every text, and Korean, which has none, give character n-grams.
    english_only = Decomposer(decomposer.nlp)
    tower = set(english_only.decompose("東京タワーに行きました").tokens)
    assert {"東", "京", "東京", "タワ", "ワー"} <= tower
    # Every term of the shorter query is a term of the longer text: 東京 finds 東京タワー.
    assert set(english_only.decompose("東京").tokens) <= tower
    assert {"서울", "에서"} <= set(decomposer.decompose("서울에서 만나요").tokens)


async def test_a_cjk_query_finds_a_longer_cjk_entry(decomposer: Decomposer) -> None:
    service = GraphMemoryService(nlp=decomposer)
    await service.add_session("app", "user", "s", [MemoryEntry(content=Content().with_text("東京タワーの夜景"))])
    await service.add_session("app", "user", "t", [MemoryEntry(content=Content().with_text("大阪城の桜"))])
    response = await service.search(SearchRequest(query="東京", app_name="app", user_id="user"))
    assert [m.text for m in response.memories] == ["東京タワーの夜景"]
    assert {"東京"} <= set(response.hits[0].matched_tokens)


def test_long_texts_are_decomposed_whole(decomposer: Decomposer) -> None:
    # Longer than spaCy's max_length: decomposed in chunks, merged into one result.
    text = "aardvark " + "pneumonoultramicroscopicsilicovolcanoconiosis " * 5_000 + " zucchini"
    assert len(text) > 200_000
    tokens = decomposer.decompose(text).tokens
    assert tokens[0] == "aardvark" and "zucchini" in tokens


def test_decompose_many_keeps_order_and_matches_decompose(decomposer: Decomposer) -> None:
    texts = ["Alice flew to Paris", "", "東京", "apples and pears", "2024 budget"]
    assert decomposer.decompose_many(texts) == [decomposer.decompose(t) for t in texts]
    assert decomposer.decompose_many([]) == []


# ---------------------------------------------------------------------------- entities


def test_named_entities_carry_labels(decomposer: Decomposer) -> None:
    entities = set(decomposer.decompose("Barack Obama visited Paris and met people from Google").entities)
    names = {e.name: e.label for e in entities}
    assert names.get("barack obama") == "PERSON"
    assert names.get("paris") == "GPE"
    assert names.get("google") == "ORG"


def test_entity_names_are_normalised(decomposer: Decomposer) -> None:
    names = {e.name for e in decomposer.decompose("The United Nations met. Google's office opened.").entities}
    assert "united nations" in names
    assert "google" in names
    assert all(n == n.lower() and n == n.strip() and not n.startswith("the ") for n in names)


def test_counting_labels_are_left_out(decomposer: Decomposer) -> None:
    parts = decomposer.decompose("I paid 20 dollars last week for two tickets, 30% off, at 5 pm on Monday")
    assert all(e.label in NAMING_ENTITY_LABELS for e in parts.entities)
    assert not {"CARDINAL", "DATE", "MONEY", "PERCENT", "TIME"} & {e.label for e in parts.entities}


def test_an_entity_in_a_query_matches_the_entry(decomposer: Decomposer) -> None:
    entry = decomposer.decompose("My cousin moved to Lisbon last spring")
    query = decomposer.decompose("Who lives in Lisbon?")
    assert {e.name for e in entry.entities} & {e.name for e in query.entities} == {"lisbon"}


# ---------------------------------------------------------------------------- authors


def test_author_tokens_are_the_lowercase_words_of_the_name() -> None:
    assert author_tokens("Dr. Jane-Doe") == ["dr", "jane", "doe"]
    assert author_tokens("model") == ["model"]
    assert author_tokens("  ") == []


async def test_the_author_is_recallable(decomposer: Decomposer) -> None:
    service = GraphMemoryService(nlp=decomposer)
    await service.add_session(
        "app",
        "user",
        "s",
        [
            MemoryEntry(content=Content().with_text("the soup needs more salt"), author="Grandma Rosalind"),
            MemoryEntry(content=Content().with_text("the soup is ready"), author="Uncle Bert"),
        ],
    )
    response = await service.search(SearchRequest(query="what did Rosalind say", app_name="app", user_id="user"))
    assert response.hits[0].memory.author == "Grandma Rosalind"
    assert "rosalind" in response.hits[0].matched_tokens


# ---------------------------------------------------------------------------- pipelines


def test_default_pipeline_runs_only_the_components_it_uses(decomposer: Decomposer) -> None:
    # The tagger path to lemmas (and its shared embedding layer) is replaced by the lookup
    # table; NER has its own embedding layer.
    assert decomposer.nlp.pipe_names == ["ner"]
    assert decomposer.decompose("She was painting houses").tokens == ("paint", "house")


def test_blank_fallback_logs_a_warning_and_still_tokenises(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(decompose_module, "DEFAULT_PIPELINES", ("graphmem_no_such_pipeline_a", "graphmem_no_such_pipeline_b"))
    fallback = Decomposer()
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        parts = fallback.decompose("The cats were running to Lisbon in 2024!")
    warnings = [r.getMessage() for r in caplog.records if r.name == "graphmem" and r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "graphmem_no_such_pipeline_a" in warnings[0] and "pip install" in warnings[0]
    # Lemmas from the lookup table still, stop words dropped, numbers kept, no entities.
    assert {"cat", "run", "lisbon", "2024"} <= set(parts.tokens)
    assert not {"the", "were", "to", "in"} & set(parts.tokens)
    assert parts.entities == ()
    assert set(fallback.decompose("서울에서 만나요").tokens) >= {"서울", "에서"}


async def test_a_service_works_on_the_blank_fallback(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(decompose_module, "DEFAULT_PIPELINES", ("graphmem_no_such_pipeline",))
    service = GraphMemoryService()
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        await service.add_entry("app", "user", MemoryEntry(content=Content().with_text("remember the blue umbrella")))
        response = await service.search(SearchRequest(query="umbrella", app_name="app", user_id="user"))
    assert [m.text for m in response.memories] == ["remember the blue umbrella"]
    assert any("graphmem_no_such_pipeline" in r.getMessage() for r in caplog.records)


def test_a_pipeline_can_be_chosen_by_name(decomposer: Decomposer) -> None:
    name = decomposer.nlp.meta["lang"] + "_" + decomposer.nlp.meta["name"]
    by_name = Decomposer(name)
    assert by_name.pipeline_name == decomposer.pipeline_name
    text = "Alice moved to Lisbon to work for Google"
    assert by_name.decompose(text) == decomposer.decompose(text)


def test_a_loaded_pipeline_is_used_as_given() -> None:
    blank = spacy.blank("en")
    given = Decomposer(blank)
    assert given.nlp is blank
    assert blank.pipe_names == []  # nothing added to it
    assert given.decompose("Running cats").tokens == ("run", "cat")  # lemmas from the lookup table


def test_without_a_lemma_table_tokens_are_lowercase_words(caplog: pytest.LogCaptureFixture) -> None:
    # spacy-lookups-data has no lemma table for the multi-language pipeline.
    given = Decomposer(spacy.blank("xx"))
    with caplog.at_level(logging.WARNING, logger="graphmem"):
        assert given.decompose("Running cats").tokens == ("running", "cats")
    assert any("lemma lookup table" in r.getMessage() for r in caplog.records)


def test_a_missing_named_pipeline_is_an_error_not_a_fallback() -> None:
    with pytest.raises(OSError):
        Decomposer("graphmem_no_such_pipeline").decompose("hello")


async def test_spacy_never_blocks_the_event_loop(decomposer: Decomposer, monkeypatch: pytest.MonkeyPatch) -> None:
    service = GraphMemoryService(nlp=decomposer)
    threads: dict[str, threading.Thread] = {}

    def recording(name, original):  # type: ignore[no-untyped-def]
        def call(*args):  # type: ignore[no-untyped-def]
            threads[name] = threading.current_thread()
            return original(*args)

        return call

    for name in ("decompose_many", "decompose_query"):
        monkeypatch.setattr(decomposer, name, recording(name, getattr(decomposer, name)))
    await service.add_entry("app", "user", MemoryEntry(content=Content().with_text("off the loop")))
    long_query = "loop " * (decompose_module.QUICK_QUERY_CHARS // 5 + 1)
    await service.search(SearchRequest(query=long_query, app_name="app", user_id="user"))
    # Entries and long queries go to a worker thread.
    assert threads["decompose_many"] is not threading.current_thread()
    assert threads["decompose_query"] is not threading.current_thread()
    # A short query on the loaded, idle pipeline is decomposed right here, and correctly.
    threads.clear()
    response = await service.search(SearchRequest(query="loop", app_name="app", user_id="user"))
    assert [m.text for m in response.memories] == ["off the loop"]
    assert "decompose_query" not in threads


def test_a_short_query_waits_in_a_worker_thread_while_a_batch_runs(decomposer: Decomposer) -> None:
    query = "which loop did the batch hold up"
    assert decomposer.decompose_query_now(query + " first") is not None  # idle: ready now
    holding, done = threading.Event(), threading.Event()

    def batch() -> None:  # holds the pipeline the way decompose_many does
        with decomposer._pipe_lock:
            holding.set()
            done.wait()

    worker = threading.Thread(target=batch)
    worker.start()
    holding.wait()
    try:
        assert decomposer.decompose_query_now(query) is None  # would have to wait: refused
    finally:
        done.set()
        worker.join()
    assert decomposer.decompose_query_now(query) == decomposer.decompose_query(query)


def test_a_short_query_never_waits_for_another_languages_pipeline_to_load(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    decomposer = Decomposer(spacy.blank("en"), language="auto")
    english = "What is my cat called?"
    decomposer.decompose_query("warm the English pipeline up")
    loading, loaded = threading.Event(), threading.Event()

    def slow_load(*args: object, **kwargs: object) -> None:  # a load that takes seconds
        loading.set()
        loaded.wait()

    monkeypatch.setattr(decompose_module, "load_language_pipeline", slow_load)
    loader = threading.Thread(target=decomposer.decompose_query, args=("私の猫の名前は何ですか",))
    loader.start()
    loading.wait()
    answers: dict[str, object] = {}
    # On a thread of its own, so that a decompose_query_now that waited would fail the test
    # instead of hanging it.
    asker = threading.Thread(
        target=lambda: answers.update(
            english=decomposer.decompose_query_now(english), japanese=decomposer.decompose_query_now("猫はどこ")
        )
    )
    asker.start()
    asker.join(timeout=30)
    try:
        assert not asker.is_alive(), "decompose_query_now waited for a pipeline to load"
        assert answers["english"] == Decomposer(spacy.blank("en"), language="auto").decompose_query(english)
        assert answers["japanese"] is None  # its pipeline is loading: the caller goes to a thread
    finally:
        loaded.set()
        loader.join()
        asker.join()


# ---------------------------------------------------------------------------- unicode hygiene


@pytest.mark.parametrize("text", ["bell\x07 ring", "nul\x00 byte", "zero\u200b width", "\u202ebidi override"])
def test_control_and_format_characters_do_not_stick_to_words(decomposer: Decomposer, text: str) -> None:
    word = text.split()[0]
    clean = "".join(ch for ch in word if unicodedata.category(ch) not in {"Cc", "Cf"})
    assert clean in decomposer.decompose(text).tokens


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("my pass\u00adword is on the fridge", "password"),  # soft hyphen, from a web page
        ("my pass\u2060word is on the fridge", "password"),  # word joiner
        ("my pass\ufeffword is on the fridge", "password"),  # a BOM pasted mid-text
        ("my pass\u200dword is on the fridge", "password"),  # zero-width joiner
        ("من می\u200cخواهم به تهران بروم", "میخواهم"),  # ZWNJ: part of Persian spelling
    ],
)
def test_a_format_character_inside_a_word_leaves_it_whole(decomposer: Decomposer, text: str, word: str) -> None:
    assert word in decomposer.decompose(text).tokens
    assert word in decomposer.decompose_query(text).tokens


def test_nfc_and_nfd_spellings_give_the_same_tokens(decomposer: Decomposer) -> None:
    nfc = unicodedata.normalize("NFC", "café crème")
    nfd = unicodedata.normalize("NFD", "café crème")
    assert nfc != nfd
    assert decomposer.decompose(nfc).tokens == decomposer.decompose(nfd).tokens


# ---------------------------------------------------------------------------- speaker names


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("katharine", "katherine"),  # one substitution
        ("catherine", "katherine"),  # c / k: names take either (NAME_STARTS_ALIKE)
        ("yohn", None),  # j / y only from six letters ("Ian" is no "Jan")
        ("marolyn", None),  # another first letter outside those groups: never
        ("rohn", None),
        ("caroline", None),  # a speaker's own name is no variant (of "katherine", say)
        ("carolyn", "caroline"),  # two edits in a long name
        ("melany", "melanie"),
        ("mel", "melanie"),  # a short form the name begins with
        ("jhon", "john"),  # two neighbours swapped
        ("jo", None),  # under three letters: never
        ("kate", "katherine"),  # not a short form of it and too far from it, but its nickname
        ("karen", None),  # neither
        ("robert", None),  # nobody's name
    ],
)
def test_a_speakers_name_spelled_another_way(word: str, expected: str | None) -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant(word, {"katherine", "caroline", "melanie", "john"}) == expected


@pytest.mark.parametrize(
    ("word", "speakers", "expected"),
    [
        ("yénifer", {"jennifer"}, "jennifer"),  # accents are no edits: "yenifer", two edits
        ("iolanda", {"yolanda"}, "yolanda"),
        ("joaquin", {"joaquín"}, "joaquín"),
        ("cal", {"kal"}, "kal"),
        ("carl", {"karl", "carla"}, None),  # two names
        ("cat", {"kat"}, "kat"),
        ("ian", {"jan"}, None),  # I, J, Y: short names of their own
        ("yay", {"jay"}, None),
        ("jira", {"ira"}, None),  # a first letter dropped is no edit of the first letter
        ("matherine", {"katherine"}, None),  # another first letter
    ],
)
def test_names_spelled_across_languages(word: str, speakers: set[str], expected: str | None) -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant(word, speakers) == expected


def test_words_are_read_as_names_without_short_forms() -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant("encan", {"encantar"}) == "encantar"  # a short form, of a name
    assert speaker_variant("encan", {"encantar"}, short_forms=False) is None  # of a word: none
    assert speaker_variant("yénifer", {"jennifer"}, short_forms=False) == "jennifer"


def test_a_word_that_could_be_two_speakers_links_to_none() -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant("joh", {"john", "jon"}) is None
    assert speaker_variant("jon", {"john", "jon"}) is None  # a speaker's own name is no variant


@pytest.mark.parametrize(
    ("token", "words"),
    [
        ("mel_smith", ["mel", "smith"]),
        ("melanie92", ["melanie"]),
        ("_jo__99_", ["jo"]),
        ("melanie", []),  # a name's word is no handle
        ("o'brien", []),
    ],
)
def test_a_chat_handle_is_cut_at_underscores_and_digits(token: str, words: list[str]) -> None:
    from graphmem._decompose import handle_words

    assert handle_words(token) == words


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("Melanie", "mel_smith"),  # "mel" is a short form of it
        ("Mel", "mel_smith"),
        ("Smith", "mel_smith"),  # any word of the handle
        ("Caroline", "caroline88"),  # began the handle already (a short form of the token)
        ("Carolyn", "caroline88"),  # a spelling variant of a word of the handle
        ("Agent", None),  # an agent's handle is not read by its words
        ("Gina", None),
    ],
)
def test_a_speaker_stored_under_a_handle_is_named_by_the_words_of_it(word: str, expected: str | None) -> None:
    from graphmem._decompose import speaker_variant

    speakers = {"mel_smith", "caroline88", "booking_agent"}
    assert speaker_variant(word, speakers, handles={"mel_smith", "caroline88"}) == expected
    if expected == "mel_smith" and word != "Mel":
        assert speaker_variant(word, speakers) is None  # without reading handles


def test_a_word_two_handles_share_links_to_neither() -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant("Smith", {"mel_smith", "jo_smith"}, handles={"mel_smith", "jo_smith"}) is None


@pytest.mark.parametrize(
    ("word", "speakers", "expected"),
    [
        ("bob", {"robert", "maria"}, "robert"),  # a nickname, whatever its letters
        ("robert", {"bob", "maria"}, "bob"),  # and the other way
        ("peggy", {"margaret"}, "margaret"),
        ("bob", {"rob_88"}, None),  # a handle's words are read only when asked (handles=...)
        ("cassie", {"caroline", "katherine"}, None),  # a nickname of both
        ("bob", {"maria"}, None),
        ("zork", {"robert"}, None),  # no name the table holds
    ],
)
def test_a_nickname_names_the_speaker_whose_given_name_it_is(word: str, speakers: set[str], expected: str | None) -> None:
    from graphmem._decompose import speaker_variant

    assert speaker_variant(word, speakers) == expected
    assert speaker_variant(word, speakers, short_forms=False) is None  # words, not names: no nicknames


def test_a_nickname_names_a_speaker_under_a_handle() -> None:
    from graphmem._decompose import nicknames_of, speaker_variant

    assert "bob" in nicknames_of("robert") and "robert" in nicknames_of("bob")
    assert speaker_variant("Robert", {"bob_88", "maria"}, handles={"bob_88"}) == "bob_88"


def _normalised_by_the_regular_expressions(text: str) -> str:
    """``normalise_entity_name`` as it was written with three substitutions (before it read
    every span of a query with string methods): what the names of stored entities are."""
    import re

    name = re.sub(r"\s+", " ", text.strip().lower())
    name = re.sub(r"^(the|a|an)\s+", "", name)
    return re.sub(r"(['’]s|['’])$", "", name).strip()


_NAME_PIECES = ["the", "The", "a", "An", "an", "s", "'s", "’s", "'", "’", "x", "Beatles", "İstanbul", "ß"]
_NAME_SPACES = [" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\x1c", "\x85", "\u200b", ""]


@given(st.lists(st.sampled_from(_NAME_PIECES) | st.sampled_from(_NAME_SPACES) | st.text(max_size=3), max_size=8))
def test_entity_names_are_normalised_as_the_stored_ones_were(pieces: list[str]) -> None:
    from graphmem._decompose import normalise_entity_name

    text = "".join(pieces)
    assert normalise_entity_name(text) == _normalised_by_the_regular_expressions(text)


def test_entity_names_lose_an_article_spaces_and_a_possessive() -> None:
    from graphmem._decompose import normalise_entity_name

    assert normalise_entity_name("  The \n Beatles’s ") == "beatles"
    assert normalise_entity_name("an  Aurora'") == "aurora"
    assert normalise_entity_name("the") == "the"  # no name after it: the word is the name
