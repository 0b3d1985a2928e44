"""Time-aware recall: dates in queries, relative times in entries, and the scorer's lift.

The parser is pure (``graphmem._time``); the lift is part of the pure scorer; ``since`` /
``until`` and the stored ``time_refs`` are checked through the public API on every backend
(the ``service`` fixture).
"""

from __future__ import annotations

import dataclasses
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from graphmem import Content, MemoryEntry, MemoryService, SearchRequest
from graphmem._scoring import (
    CandidateStats,
    CorpusStats,
    ScoringWeights,
    days_match,
    matching_days,
    score_query,
    score_time_alone,
)
from graphmem._time import DayRange, QueryTime, mentioned_ranges, parse_time_ref, query_time
from graphmem.cli._cypher_run import run_read_only

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
SAID = datetime(2023, 6, 3, 13, 56, tzinfo=UTC)  # a Saturday


def day(text: str) -> date:
    return date.fromisoformat(text)


def ranges_of(query: str, as_of: datetime | None = NOW) -> list[str]:
    when = query_time(query, as_of)
    return [r.iso() for r in when.ranges] if when else []


# ---------------------------------------------------------------------------- queries


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What film did Ana watch on 3 May, 2022?", "2022-05-03/2022-05-03"),
        ("what happened on 1 May 2022", "2022-05-01/2022-05-01"),
        ("Which sport did Sam take up in October 2023?", "2023-10-01/2023-10-31"),
        ("Where was I in 2022?", "2022-01-01/2022-12-31"),
        ("the party on 29 Dec 2023", "2023-12-29/2023-12-29"),
        ("the party on 29.12.2023", "2023-12-29/2023-12-29"),
        ("the party on 2023-12-29", "2023-12-29/2023-12-29"),
        ("the party on December 29th, 2023", "2023-12-29/2023-12-29"),
        ("the party on 12/29/2023", "2023-12-29/2023-12-29"),
        ("the party on 29/12/2023", "2023-12-29/2023-12-29"),
        ("what did we do in summer 2022", "2022-06-01/2022-08-31"),
        # Relative to as_of (30 Nov 2026, a Monday).
        ("what did I do last summer?", "2026-06-01/2026-08-31"),
        ("what did I eat yesterday", "2026-11-29/2026-11-29"),
        ("what did I do last week", "2026-11-23/2026-11-29"),
        ("what did I read last month", "2026-10-01/2026-10-31"),
        ("where did I go two years ago", "2024-01-01/2024-12-31"),
        # Anchored to a date in the query.
        ("What did Jon do the week before August 3, 2023?", "2023-07-27/2023-08-02"),
    ],
)
def test_a_date_in_a_query_becomes_a_day_range(query: str, expected: str) -> None:
    assert ranges_of(query) == [expected]


def test_a_month_or_day_without_a_year_matches_any_year() -> None:
    when = query_time("When did Melanie go camping in June?", NOW)
    assert when is not None and when.ranges == () and when.yearless == ((6, 1, 31),)
    assert when.matches_day(day("2019-06-15").toordinal())
    assert not when.matches_day(day("2019-07-15").toordinal())
    on_day = query_time("What did she bake on 3 May?", NOW)
    assert on_day is not None and on_day.yearless == ((5, 3, 3),)


@pytest.mark.parametrize(
    "query",
    ["What may I do?", "Who is Maria?", "I want to march in the parade", "the 2023 hits", "room 12/13", ""],
)
def test_queries_without_a_time_name_none(query: str) -> None:
    assert query_time(query, NOW) is None


@pytest.mark.parametrize(
    "text",
    [
        # People named June and April (the month was read, the name left the query).
        "What did June think of the concert?",
        "What did April say about the trip?",
        "June said the concert was great.",
        # A modal "may" beside a number, a year that counts what follows.
        "Which of the top 10 may help me sleep?",
        "may 10 people come?",
        "Did I win in 2000 games of chess?",
        "We won by 1800 votes.",
    ],
)
def test_names_and_words_that_look_like_months_or_years_name_no_time(text: str) -> None:
    assert query_time(text, NOW) is None
    assert mentioned_ranges(text, SAID) == ()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("in June", [(6, 1, 31)]),
        ("What did we do last June?", ["2026-06-01/2026-06-30"]),
        ("June 3", [(6, 3, 3)]),
        ("June 2023", ["2023-06-01/2023-06-30"]),
        ("early April", [(4, 1, 10)]),
        ("on 10 may", [(5, 10, 10)]),
        ("on may 10", [(5, 10, 10)]),
        ("by 3 may", [(5, 3, 3)]),
        ("8 May", [(5, 8, 8)]),
        ("In 2020 this happened", ["2020-01-01/2020-12-31"]),
        ("In 2020, things were hard", ["2020-01-01/2020-12-31"]),
        ("by 2016", ["2016-01-01/2016-12-31"]),
    ],
)
def test_months_and_years_with_what_introduces_them_still_name_a_time(text: str, expected: list[object]) -> None:
    when = query_time(text, NOW)
    assert when is not None and [*(r.iso() for r in when.ranges), *when.yearless] == expected


def test_relative_times_need_as_of() -> None:
    assert query_time("what did I eat yesterday", None) is None
    assert ranges_of("on 3 May 2022", None) == ["2022-05-03/2022-05-03"]


def test_spans_cover_the_time_words_only() -> None:
    query = "What film did Ana watch on 3 May, 2022?"
    when = query_time(query, NOW)
    assert when is not None
    assert [query[a:b] for a, b in when.spans] == ["3 May, 2022"]


def test_a_misspelt_time_word_in_a_question_is_read_as_the_word_and_spans_stay_as_written() -> None:
    cases = [
        ("What did Ana do in Setpember 2023?", "What did Ana do in September 2023?", ["Setpember 2023"]),
        ("Was it in Decmber?", "Was it in December?", ["in Decmber"]),  # one letter shorter
        ("on 3 Setpember, 2023 and yesterdy?", "on 3 September, 2023 and yesterday?", ["3 Setpember, 2023", "yesterdy"]),
        ("what did I do yesterdayyy?", "what did I do yesterday?", ["yesterdayyy"]),
    ]
    for typed, words, spans in cases:
        when, as_words = query_time(typed, NOW), query_time(words, NOW)
        assert when is not None and as_words is not None
        assert (when.ranges, when.yearless) == (as_words.ranges, as_words.yearless)
        assert [typed[a:b] for a, b in when.spans] == spans


def test_a_question_in_chat_spelling_names_the_time_of_the_words() -> None:
    cases = [
        ("what did we do last wknd?", "what did we do last weekend?", "last wknd"),
        ("plans for tmrw?", "plans for tomorrow?", "tmrw"),
    ]
    for chat, words, span in cases:
        when, as_words = query_time(chat, NOW), query_time(words, NOW)
        assert when is not None and as_words is not None and when.ranges == as_words.ranges
        assert [chat[a:b] for a, b in when.spans] == [span]


@pytest.mark.parametrize(
    ("query", "expected", "span"),
    [
        # A bare "before/after YEAR" names the years before or after it: no range of days,
        # and never that year (it lifted what was said in 2020).
        ("Where did I live before 2020?", [], None),
        ("What changed after 2020?", [], None),
        ("since 2020", [], None),
        ("until 2020", [], None),
        # The year's "before" is a shift's direction.
        ("What did I do the year before 2022?", ["2021-01-01/2021-12-31"], "the year before 2022"),
        ("the year after 2020", ["2021-01-01/2021-12-31"], "the year after 2020"),
        ("two years before 2022", ["2020-01-01/2020-12-31"], "two years before 2022"),
        # A day without a year shifts too (the shift was dropped, its words left as tokens).
        ("What did I buy the day before May 3?", [(5, 2, 2)], "the day before May 3"),
        ("the day after Dec 31", [(1, 1, 1)], "the day after Dec 31"),
        ("the week before May 3", [(4, 26, 30), (5, 1, 2)], "the week before May 3"),
        ("the day before March 1", [(2, 29, 29), (2, 28, 28)], "the day before March 1"),  # leap years or not
        ("the year before May 3", [], None),  # every year's 3 May: no particular days
    ],
)
def test_before_and_after_a_year_or_a_day_without_one(query: str, expected: list[object], span: str | None) -> None:
    when = query_time(query, NOW)
    assert ([*(r.iso() for r in when.ranges), *when.yearless] if when else []) == expected
    assert ([query[a:b] for a, b in when.spans] if when else []) == ([span] if span else [])


@pytest.mark.parametrize(
    "query",
    [
        # The time after "before", "after", "since" or "until" is the open span's end, not
        # its days: read as them it lifted the one period "before May 2023" leaves out.
        "What did I say about the garden before May 2023?",
        "What happened after 3 May 2023?",
        "What happened since May 3?",
        "What happened until 5/8/2023?",
        "What did we do after Christmas 2023?",
        "What did we do before Easter?",
        "What did we do since the summer of 2022?",
        "What happened until May?",
        "What happened since 25/12?",
        "What did we do prior to 3 May 2023?",
        # The other languages' words for them.
        "qu'est-ce que j'ai fait avant le 3 mai 2023 ?",
        "qu'est-ce que j'ai fait depuis mai ?",
        "was habe ich vor dem 3. Mai 2023 gemacht?",
        "was habe ich seit Mai gemacht?",
        "¿qué hice antes del 3 de mayo de 2023?",
        "¿qué hice después de Navidad?",
        "cosa ho fatto prima del 3 maggio 2023?",
        "o que fiz depois de 3 de maio de 2023?",
        "2023年5月以前我做了什么？",
        "मैंने मई 2023 के बाद क्या किया?",
    ],
)
def test_a_time_after_before_after_since_or_until_names_no_time(query: str) -> None:
    assert query_time(query, SAID_IN_MARCH) is None


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # A shift is a time ("the day after"), and so is a relative time after such a word.
        ("What did we do the day after 3 May 2023?", ["2023-05-04/2023-05-04"]),
        ("What happened since last week?", ["2024-03-04/2024-03-10"]),
        # Two times with such words between them are a closed span.
        ("What happened since 3 May 2023 until 10 May 2023?", ["2023-05-03/2023-05-10"]),
        ("¿qué hice desde mayo hasta julio?", [(5, 1, 31), (7, 1, 31)]),
        # "by" is a deadline: the time it names.
        ("What did Ana finish by May 2023?", ["2023-05-01/2023-05-31"]),
    ],
)
def test_what_still_names_a_time_beside_before_after_since_or_until(query: str, expected: list[object]) -> None:
    when = query_time(query, SAID_IN_MARCH)
    assert when is not None and [*(r.iso() for r in when.ranges), *when.yearless] == expected


def test_an_entry_still_refers_to_the_time_after_before_or_since() -> None:
    # What an entry says of a date ("before 3 May") ties it to that date: a question about
    # 3 May finds the deadline.
    assert [r.iso() for r in mentioned_ranges("We must move out before 3 May 2023.", SAID)] == ["2023-05-03/2023-05-03"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        # A date whose year is written is that year's, any of the calendar's written with
        # four digits: read without it, it was that day of every year.
        ("What happened on 4 July 1776?", "1776-07-04/1776-07-04"),
        ("What happened on 31 December 9999?", "9999-12-31/9999-12-31"),
        ("party on 31 December 2500", "2500-12-31/2500-12-31"),
        ("July 4, 1776", "1776-07-04/1776-07-04"),
        ("1776-07-04", "1776-07-04/1776-07-04"),
        ("4.7.1776", "1776-07-04/1776-07-04"),
        ("in July 1776", "1776-07-01/1776-07-31"),
        ("in the summer of 1776", "1776-06-01/1776-08-31"),
        ("Christmas 1776", "1776-12-24/1776-12-26"),
        ("from 3 to 5 May 1776", "1776-05-03/1776-05-05"),
        ("el 4 de julio de 1776", "1776-07-04/1776-07-04"),
        ("le 4 juillet 1776", "1776-07-04/1776-07-04"),
        ("1776年7月4日", "1776-07-04/1776-07-04"),
    ],
)
def test_a_date_with_its_year_written_is_that_years_whatever_the_year(query: str, expected: str) -> None:
    when = query_time(query, NOW)
    assert when is not None and [r.iso() for r in when.ranges] == [expected] and when.yearless == ()


def test_a_number_after_a_day_that_counts_a_plural_is_no_year() -> None:
    when = query_time("on 8 May 3000 runners marched", NOW)
    assert when is not None and when.yearless == ((5, 8, 8),) and when.ranges == ()
    assert query_time("What happened in 2500?", NOW) is None  # a year alone stays 1800-2199


def test_an_entry_saying_before_a_year_refers_to_no_time() -> None:
    assert mentioned_ranges("We lived in Lyon before 2020.", SAID) == ()
    assert [r.iso() for r in mentioned_ranges("The year before 2020 we lived in Lyon.", SAID)] == ["2019-01-01/2019-12-31"]


def test_the_day_before_yesterday_is_two_days_back_and_all_its_words_are_the_time() -> None:
    """Only "yesterday" was read: a day off, and "day" and "before" stayed query words."""
    query = "What did I fix the day before yesterday?"
    when = query_time(query, NOW)
    assert when is not None and [r.iso() for r in when.ranges] == ["2026-11-28/2026-11-28"]
    assert [query[a:b] for a, b in when.spans] == ["the day before yesterday"]


def test_impossible_dates_are_ignored() -> None:
    assert ranges_of("on 31 February 2023") == []
    assert query_time("on 2023-13-01", NOW) is None


# ---------------------------------------------------------------------------- entries


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I went there yesterday.", ["2023-06-02/2023-06-02"]),
        ("We had so much fun last night!", ["2023-06-02/2023-06-02"]),
        ("It happened last week.", ["2023-05-22/2023-05-28"]),
        ("Last weekend we hiked.", ["2023-05-27/2023-05-28"]),
        ("Two years ago I started painting.", ["2021-01-01/2021-12-31"]),
        ("I started 3 days ago", ["2023-05-31/2023-05-31"]),
        ("Next month we move.", ["2023-07-01/2023-07-31"]),
        ("In May I ran a marathon.", ["2023-05-01/2023-05-31"]),
        ("We went camping last summer.", ["2022-06-01/2022-08-31"]),
        ("Last Friday was fun.", ["2023-06-02/2023-06-02"]),
        ("See you tomorrow", ["2023-06-04/2023-06-04"]),
        # Two days, not the inner "yesterday" / "tomorrow".
        ("The day before yesterday I fixed the bike.", ["2023-06-01/2023-06-01"]),
        ("the day after tomorrow I fly to Oslo", ["2023-06-05/2023-06-05"]),
        ("Day before yesterday was hot.", ["2023-06-01/2023-06-01"]),
        ("I got married on 8 May, 2020.", ["2020-05-08/2020-05-08"]),
        ("since last week and yesterday", ["2023-05-22/2023-05-28", "2023-06-02/2023-06-02"]),
    ],
)
def test_time_expressions_in_an_entry_resolve_against_its_timestamp(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID)] == expected


@pytest.mark.parametrize(
    ("text", "written_in_full"),
    [
        ("I went there yday.", "I went there yesterday."),
        ("we had fun last nite!", "we had fun last night!"),
        ("see you tmrw", "See you tomorrow"),
        ("going 2morrow", "going tomorrow"),
        ("tonite we eat out", "tonight we eat out"),
        ("It happened last wk.", "It happened last week."),
        ("last wknd we hiked", "Last weekend we hiked."),
        ("two wks ago I started", "two weeks ago I started"),
        ("3 yrs ago I started painting", "3 years ago I started painting"),
        ("a few mnths ago we moved", "a few months ago we moved"),
        ("last fri was fun", "Last Friday was fun."),
        ("see you next tues", "see you next Tuesday"),
        ("the day b4 yday I fixed the bike", "The day before yesterday I fixed the bike."),
        ("two wks before 8 May 2023", "two weeks before 8 May 2023"),
        # Misspelt time words are read as the words (as an entry's tokens are).
        ("I went there yesterdy.", "I went there yesterday."),
        ("Yesterdy I went there.", "I went there yesterday."),
        ("see you tomorow", "See you tomorrow"),
        ("last weeekend we hiked", "Last weekend we hiked."),
        ("In Decmber we skied", "In December we skied"),
        # Stretched for emphasis ("sooo" is no time word: nothing is read of it).
        ("see you tomorrowww", "See you tomorrow"),
        ("Yesterdayyy was sooo fun", "Yesterday was fun"),
        ("this weekenddd we hike", "this weekend we hike"),
    ],
)
def test_chat_spellings_and_typos_of_time_words_read_as_the_words(text: str, written_in_full: str) -> None:
    assert mentioned_ranges(text, SAID) == mentioned_ranges(written_in_full, SAID) != ()


#: A Wednesday: the weekend and the weekdays lie on both sides of it.
MIDWEEK = datetime(2023, 6, 7, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "back" for "ago", "a couple" without "of", a fortnight.
        ("a few weeks back we moved", ["2023-05-10/2023-05-30"]),  # two to four weeks back
        ("2 days back", ["2023-06-05/2023-06-05"]),
        ("a couple weeks ago I started", ["2023-05-24/2023-05-30"]),
        ("couple of days back", ["2023-06-05/2023-06-05"]),
        ("a fortnight ago", ["2023-05-24/2023-05-30"]),
        ("a fortnight before 3 June 2023", ["2023-05-20/2023-05-26"]),  # as "two weeks before" is
        # The days up to the anchor.
        ("I've been sick the past few days", ["2023-06-04/2023-06-07"]),
        ("for the last two weeks", ["2023-05-24/2023-06-07"]),
        ("the week before last", ["2023-05-22/2023-05-28"]),
        ("the weekend before last", ["2023-05-27/2023-05-28"]),
        ("earlier in the week", ["2023-06-05/2023-06-07"]),
        ("last evening", ["2023-06-06/2023-06-06"]),
        ("this coming weekend", ["2023-06-10/2023-06-11"]),
        ("this coming Friday", ["2023-06-09/2023-06-09"]),
        # A weekday or the weekend without last / next: the sentence's tense decides...
        ("On Saturday we went to the beach.", ["2023-06-03/2023-06-03"]),
        ("I'll call her on Monday.", ["2023-06-12/2023-06-12"]),
        ("We had a blast over the weekend!", ["2023-06-03/2023-06-04"]),
        ("can't wait for the party at the weekend", ["2023-06-10/2023-06-11"]),
        # ... and without one, both are meant as far as the text says.
        ("Friday night was fun", ["2023-06-02/2023-06-02"]),
        ("Friday night at Sam's", ["2023-06-02/2023-06-02", "2023-06-09/2023-06-09"]),
        ("camping over the wknd", ["2023-06-03/2023-06-04", "2023-06-10/2023-06-11"]),
        ("on fri at the lake", ["2023-06-02/2023-06-02", "2023-06-09/2023-06-09"]),
        # A regular verb in the past after its subject is the past too ("I need" is no past).
        ("on fri we hiked", ["2023-06-02/2023-06-02"]),
        ("on fri I need to hike", ["2023-06-02/2023-06-02", "2023-06-09/2023-06-09"]),
        ("it rained on Saturday", ["2023-06-03/2023-06-03"]),
        ("Mom said she's coming on Saturday", ["2023-06-03/2023-06-03", "2023-06-10/2023-06-10"]),
        # A weekday before its date is that date alone.
        ("on Friday, 2 June 2023 we hiked", ["2023-06-02/2023-06-02"]),
    ],
)
def test_times_said_as_in_chat_resolve_against_the_timestamp(text: str, expected: list[str]) -> None:
    assert sorted(r.iso() for r in mentioned_ranges(text, MIDWEEK)) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What did Ana do on Saturday?", ["2023-06-03/2023-06-03"]),
        ("What will we do over the weekend?", ["2023-06-10/2023-06-11"]),
        ("Where did I go a couple weeks back?", ["2023-05-24/2023-05-30"]),
        # Any past form after the question word or subject is the past ("what happened",
        # "who called", "said"), and the future stays the future.
        ("What happened on Monday?", ["2023-06-05/2023-06-05"]),
        ("Who called on Monday?", ["2023-06-05/2023-06-05"]),
        ("What else happened on Saturday?", ["2023-06-03/2023-06-03"]),
        ("Who will call on Monday?", ["2023-06-12/2023-06-12"]),
        ("What is happening on Monday?", []),
        # A question whose tense names no side asks about a habit: no time.
        ("What does Ana do on the weekend?", []),
        ("What do I eat on Fridays?", []),
        ("What happens on Mondays?", []),
    ],
)
def test_a_question_names_a_weekday_without_last_or_next_only_with_its_tense(query: str, expected: list[str]) -> None:
    assert ranges_of(query, MIDWEEK) == expected


def test_the_weekend_said_on_a_weekend_is_that_one() -> None:
    assert [r.iso() for r in mentioned_ranges("we hiked over the weekend", SAID)] == ["2023-06-03/2023-06-04"]


@pytest.mark.parametrize(
    "text",
    [
        "I may come along.",
        "We march on.",
        "Hello there!",
        "That was the best.",
        "I have 3 cats",
        # A weekday's chat spelling names a day only after last / this / next / past.
        "I sat down and the sun came out, we wed at noon",
        "this sun is brutal",  # not Sunday
        "back in a mo",
        "yesteryear's fashion",  # a word, not a typo of "yesterday"
        # Habits and plurals name no day; nor does "back" without a count.
        "I swim on Fridays",
        "we came back home",
        "weekends are for hiking",
    ],
)
def test_text_without_a_time_refers_to_none(text: str) -> None:
    assert mentioned_ranges(text, SAID) == ()


def test_a_month_without_a_year_in_an_entry_is_the_nearest_one() -> None:
    # Said in early June: "in May" is this May, "in December" last December.
    assert [r.iso() for r in mentioned_ranges("In December we skied", SAID)] == ["2022-12-01/2022-12-31"]
    assert [r.iso() for r in mentioned_ranges("in July we fly", SAID)] == ["2023-07-01/2023-07-31"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Unicode folds "ſ" to "s", "ı" and "İ" to "i", the Kelvin sign to "k": such a word is
        # no English time word (a lookup of "laſt" raised KeyError, and the entry was lost).
        ("where did we go hiking thıs week?", []),
        ("hiking laſt summer", []),
        ("The Auguſt 1823 harveſt was poor.", []),
        ("ſummer 2022", []),
        ("3 ſept 2023", []),
        ("thİs week", []),
        ("laſt Frıday", []),
        ("two wee\u212as ago", []),
        ("en ſeptiembre", []),
        ("el próximo meſ", []),
        ("hoy la ſemana pasada", ["2023-06-03/2023-06-03"]),  # "hoy" is today; the rest no time
        # Spaces and digits of other scripts still read as ASCII ones.
        ("on 3\u00a0May 2023", ["2023-05-03/2023-05-03"]),
        ("\uff13 days ago", ["2023-05-31/2023-05-31"]),
    ],
)
def test_letters_that_unicode_folds_to_ascii_are_not_read_as_ascii_time_words(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID)] == expected
    when = query_time(text, SAID)
    assert ([r.iso() for r in when.ranges] if when else []) == expected


_FOLDING_TWINS = {"s": "ſ", "S": "ſ", "i": "ıİ", "I": "ıİ", "k": "\u212a", "K": "\u212a"}


@pytest.mark.parametrize(
    "form",
    [
        "last week", "this Friday", "next summer", "in August", "3 Sept 2023", "August 3", "summer of 2022",
        "two weeks ago", "a couple of days ago", "earlier this month", "the other day", "since 2021",
        "the week before 3 June 2023", "la semana pasada", "el viernes pasado", "hace dos semanas",
        "en septiembre", "el 3 de septiembre de 2022", "este invierno", "el fin de semana pasado",
        "a principios de marzo", "hace unos días",
    ],
)
def test_no_letter_unicode_folds_to_ascii_makes_a_time_word_raise_or_read_as_another(form: str) -> None:
    """Every lookup by matched text: with a twin of one of its letters, a form reads as it
    does with a letter no grammar knows there ("ж"): the word is no time word (it raised
    KeyError, or "el viernes paſado" was next Friday)."""

    def reading(text: str) -> tuple[object, ...]:
        when = query_time(text, SAID)
        return mentioned_ranges(text, SAID), (when.ranges, when.yearless, when.spans) if when else None

    for at, letter in enumerate(form):
        for twin in _FOLDING_TWINS.get(letter, ""):
            assert reading(form[:at] + twin + form[at + 1 :]) == reading(form[:at] + "ж" + form[at + 1 :]), (form, at)


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # "last May" said during May was this May: the last one that has ended is a year back.
        ("Last May we went to Rome.", datetime(2023, 5, 20, tzinfo=UTC), "2022-05-01/2022-05-31"),
        ("last December", datetime(2023, 12, 28, tzinfo=UTC), "2022-12-01/2022-12-31"),
        ("last May", datetime(2023, 5, 31, tzinfo=UTC), "2022-05-01/2022-05-31"),
        ("last May", datetime(2023, 6, 1, tzinfo=UTC), "2023-05-01/2023-05-31"),
        ("last January", datetime(2023, 12, 28, tzinfo=UTC), "2023-01-01/2023-01-31"),
        ("next May", datetime(2023, 5, 20, tzinfo=UTC), "2024-05-01/2024-05-31"),
        ("next May", datetime(2023, 4, 30, tzinfo=UTC), "2023-05-01/2023-05-31"),
    ],
)
def test_last_and_next_month_are_the_last_ended_and_the_next_begun(text: str, said: datetime, expected: str) -> None:
    assert [r.iso() for r in mentioned_ranges(text, said)] == [expected]
    assert ranges_of(text, said) == [expected]


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # "this Friday" was always the Friday before the anchor, as "last Friday" is.
        ("Dentist appointment this Friday at 3pm.", datetime(2023, 6, 5, 9, tzinfo=UTC), "2023-06-09"),  # a Monday
        ("This Friday is my birthday!", datetime(2023, 6, 9, 9, tzinfo=UTC), "2023-06-09"),  # that Friday
        ("this Monday I started", datetime(2023, 6, 9, 9, tzinfo=UTC), "2023-06-05"),
        ("this Sunday we hike", datetime(2023, 6, 5, 9, tzinfo=UTC), "2023-06-11"),
        ("last Friday", datetime(2023, 6, 9, 9, tzinfo=UTC), "2023-06-02"),
        ("next Friday", datetime(2023, 6, 8, 9, tzinfo=UTC), "2023-06-09"),
        ("este viernes", datetime(2023, 6, 5, 9, tzinfo=UTC), "2023-06-09"),
    ],
)
def test_this_weekday_is_the_one_of_the_anchors_week(text: str, said: datetime, expected: str) -> None:
    assert [r.iso() for r in mentioned_ranges(text, said)] == [f"{expected}/{expected}"]


@pytest.mark.parametrize(
    ("year", "expected"),
    [(2020, "2020-02-29"), (2021, "2020-02-29"), (2022, "2024-02-29"), (2023, "2024-02-29"), (2024, "2024-02-29")],
)
def test_29_february_without_a_year_is_the_nearest_one(year: int, expected: str) -> None:
    """Said in 2022 no year either side has the day: the reference was dropped."""
    said = datetime(year, 6, 15, tzinfo=UTC)
    assert [r.iso() for r in mentioned_ranges("Our anniversary is Feb 29.", said)] == [f"{expected}/{expected}"]
    assert [r.iso() for r in mentioned_ranges("我们2月29日结婚", said)] == [f"{expected}/{expected}"]


def test_time_refs_round_trip() -> None:
    r = DayRange(day("2023-05-01"), day("2023-05-31"))
    assert parse_time_ref(r.iso()) == r


# ---------------------------------------------------------------------------- holidays

#: A Wednesday, nine days after Christmas.
AFTER_CHRISTMAS = datetime(2024, 1, 3, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We spent Christmas at my parents' place.", ["2023-12-24/2023-12-26"]),
        ("Merry Xmas!!", ["2023-12-24/2023-12-26"]),
        ("On Christmas Eve we sang.", ["2023-12-24/2023-12-24"]),
        ("christmas day was quiet", ["2023-12-25/2023-12-25"]),
        ("Boxing Day sales were wild", ["2023-12-26/2023-12-26"]),
        ("happy new year!!", ["2023-12-31/2024-01-01"]),
        ("New Year's Eve was loud", ["2023-12-31/2023-12-31"]),
        # The tense of the sentence says which: the last one, or the next.
        ("Valentine's was lovely.", ["2023-02-14/2023-02-14"]),
        ("We'll do valentines day at home.", ["2024-02-14/2024-02-14"]),
        ("Last Halloween I was a ghost.", ["2023-10-31/2023-10-31"]),
        ("next Halloween I'll be a witch", ["2024-10-31/2024-10-31"]),
        ("Thanksgiving with the family was loud.", ["2023-11-23/2023-11-26"]),
        ("Easter 2023 was cold.", ["2023-04-07/2023-04-10"]),
        ("Can't wait for Easter!", ["2024-03-29/2024-04-01"]),
        ("Good Friday service was long", ["2023-04-07/2023-04-07"]),
        ("st paddys was wild", ["2023-03-17/2023-03-17"]),
        ("the day after Christmas I slept all day", ["2023-12-27/2023-12-27"]),
        ("Christmas of 2021 was the best", ["2021-12-24/2021-12-26"]),
    ],
)
def test_a_holiday_in_an_entry_resolves_against_its_timestamp(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, AFTER_CHRISTMAS)] == expected


@pytest.mark.parametrize(
    "text",
    [
        "A new year of school starts soon.",
        "Chinese New Year was fun.",
        "Lunar New Year dumplings!",
        "my valentine is the best",
        "Have a good friday!",
        "St. Patrick's Cathedral is huge",
        "Mother's Day brunch",  # kept on different days in different countries
        "Independence Day is a great film",
    ],
)
def test_words_that_name_no_holiday_or_one_kept_on_different_days_name_no_time(text: str) -> None:
    assert mentioned_ranges(text, AFTER_CHRISTMAS) == ()


@pytest.mark.parametrize(
    ("year", "sunday"),
    # Known Easter Sundays, among them the earliest (22 March) and the latest (25 April) possible.
    [(2019, "2019-04-21"), (2024, "2024-03-31"), (2025, "2025-04-20"), (1943, "1943-04-25"), (1818, "1818-03-22")],
)
def test_easter_is_the_gregorian_computus_sunday(year: int, sunday: str) -> None:
    assert [r.iso() for r in query_time(f"Easter Sunday {year}").ranges] == [f"{sunday}/{sunday}"]


@given(st.integers(min_value=1800, max_value=2199))  # the years a question's grammar reads
@settings(max_examples=300, deadline=None)
def test_every_easter_is_a_sunday_in_its_window_and_every_thanksgiving_the_fourth_thursday(year: int) -> None:
    (easter,) = query_time(f"Easter Sunday {year}").ranges
    assert easter.first.weekday() == 6 and date(year, 3, 22) <= easter.first <= date(year, 4, 25)
    (thanksgiving,) = query_time(f"Thanksgiving Day {year}").ranges
    assert thanksgiving.first.weekday() == 3 and 22 <= thanksgiving.first.day <= 28
    assert thanksgiving.first.month == 11 and thanksgiving.first == thanksgiving.last
    # Without a year, a question's holiday is on days every year's can fall on.
    yearless = query_time("What did we do at Easter?")
    assert any(m == easter.first.month and a <= easter.first.day <= b for m, a, b in yearless.yearless)


def test_a_holiday_in_a_question_is_a_time_and_its_words_are_not_tokens() -> None:
    when = query_time("What did Ana do at Christmas 2023?", NOW)
    assert [r.iso() for r in when.ranges] == ["2023-12-24/2023-12-26"]
    assert ["What did Ana do at Christmas 2023?"[a:b] for a, b in when.spans] == ["Christmas 2023"]
    # Without a year, every year's; with last / next, relative to as_of.
    assert query_time("What did Jo cook for Thanksgiving?").yearless == ((11, 22, 30), (12, 1, 1))
    assert query_time("Where was Ana on New Year's Eve?").yearless == ((12, 31, 31),)
    assert ranges_of("What did Jo do last Christmas?") == ["2025-12-24/2025-12-26"]
    assert ranges_of("What did Jo do last Christmas?", as_of=None) == []
    assert ranges_of("What does Jo plan for next Easter?") == ["2027-03-26/2027-03-29"]
    assert ranges_of("What did Jo do the week before Thanksgiving 2023?") == ["2023-11-16/2023-11-22"]
    assert query_time("What did Jo do the day after Christmas?").yearless == ((12, 27, 27),)
    # Easter's days without a year: from its offset from the earliest Easter Sunday (22 March)
    # to its offset from the latest (25 April).
    assert query_time("What did Jo do at Easter?").yearless == ((3, 20, 31), (4, 1, 26))
    assert query_time("What did Jo do on Easter Sunday?").yearless == ((3, 22, 31), (4, 1, 25))
    assert query_time("What did Jo do during Holy Week?").yearless == ((3, 15, 31), (4, 1, 25))
    assert ranges_of("What did Jo do during Holy Week 2023?") == ["2023-04-02/2023-04-09"]  # Palm Sunday on


# ---------------------------------------------------------------------------- dates written short, parts, seasons


@pytest.mark.parametrize(
    ("query", "expected", "span"),
    [
        ("What did Ana do in Jan '23?", ["2023-01-01/2023-01-31"], "Jan '23"),
        ("What did Ana do on 7 May ’23?", ["2023-05-07/2023-05-07"], "7 May ’23"),
        ("What did Ana do on May 7th, '23?", ["2023-05-07/2023-05-07"], "May 7th, '23"),
        ("What did Ana do in summer '99?", ["1999-06-01/1999-08-31"], "summer '99"),  # 69-99: the 1900s
        # A misspelt month before it is read as the month, and so the year after it.
        ("What did Ana do in Setpember '23?", ["2023-09-01/2023-09-30"], "Setpember '23"),
        ("What did Ana eat on 5/7/23?", ["2023-05-07/2023-05-07"], "5/7/23"),
        ("What did Ana eat on 2023/05/07?", ["2023-05-07/2023-05-07"], "2023/05/07"),
        ("What did Ana eat on 2023/5/7?", ["2023-05-07/2023-05-07"], "2023/5/7"),
        ("What did Ana do the week of May 15, 2023?", ["2023-05-15/2023-05-21"], "the week of May 15, 2023"),
        ("What did Ana do on the weekend of 6 May 2023?", ["2023-05-06/2023-05-07"], "the weekend of 6 May 2023"),
        # "the last week of ..." is the month's, not the week before as_of.
        ("What did Ana do the last week of April 2023?", ["2023-04-24/2023-04-30"], "the last week of April 2023"),
        ("Where was Ana in the first week of May 2023?", ["2023-05-01/2023-05-07"], "the first week of May 2023"),
        ("What did Ana do the second weekend of June 2023?", ["2023-06-10/2023-06-11"], "the second weekend of June 2023"),
        ("the last weekend of September 2023", ["2023-09-30/2023-10-01"], "the last weekend of September 2023"),
    ],
)
def test_dates_written_short_and_parts_of_a_week_or_month(query: str, expected: list[str], span: str) -> None:
    when = query_time(query, NOW)
    assert when is not None and [r.iso() for r in when.ranges] == expected
    assert [query[a:b] for a, b in when.spans] == [span]


def test_spans_stay_as_written_when_misspelt_words_and_short_dates_are_read_together() -> None:
    # Each kind moves the text its own way (a longer word, a year in full, an ISO date):
    # every span is still the words the question was typed with.
    query = "What about May '23, yesterdy, 2023/5/7, 5/8/23 and in Setpember 2023?"
    when = query_time(query, NOW)
    assert when is not None
    assert [query[a:b] for a, b in when.spans] == ["May '23", "yesterdy", "2023/5/7", "5/8/23", "Setpember 2023"]
    assert [r.iso() for r in when.ranges] == [
        "2023-05-01/2023-05-31", "2026-11-29/2026-11-29", "2023-05-07/2023-05-07", "2023-05-08/2023-05-08",
        "2023-09-01/2023-09-30",
    ]


@pytest.mark.parametrize(
    "text",
    ["the '90s were fun", "Rock 'n' roll", "it's 5/7 of the cake", "In '23 we moved", "the 1/2/3 rule"],
)
def test_an_apostrophe_or_slashes_without_a_date_name_no_time(text: str) -> None:
    assert query_time(text, NOW) is None


def test_parts_without_a_year_and_seasons_named_alone_in_a_question() -> None:
    assert query_time("What did Ana do the last week of April?").yearless == ((4, 24, 30),)
    assert query_time("What did Ana do in the first week of May?").yearless == ((5, 1, 7),)
    summer = query_time("When did Ana go to a parade during the summer?")
    assert summer.yearless == ((6, 1, 30), (7, 1, 31), (8, 1, 31)) and summer.ranges == ()
    assert query_time("What did Ana do in the fall?").yearless == ((9, 1, 30), (10, 1, 31), (11, 1, 30))
    assert query_time("What did Ana do over winter?").yearless == ((12, 1, 31), (1, 1, 31), (2, 1, 29))
    # A season as a topic, "fall" as a verb, and a season with its year as before.
    assert query_time("What does Ana like about summer?") is None
    assert query_time("Did Ana fall in the park?") is None
    assert ranges_of("What did Ana do in the summer of 2022?") == ["2022-06-01/2022-08-31"]


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        ("In the summer we went camping.", datetime(2023, 10, 5, tzinfo=UTC), "2023-06-01/2023-08-31"),
        ("We'll go to Spain in the summer!", datetime(2023, 3, 5, tzinfo=UTC), "2023-06-01/2023-08-31"),
        ("During the winter I knit a lot", datetime(2023, 2, 5, tzinfo=UTC), "2022-12-01/2023-02-28"),
        ("We hiked a lot in the spring", datetime(2023, 9, 1, tzinfo=UTC), "2023-03-01/2023-05-31"),
        ("The last week of April was rough.", datetime(2023, 5, 20, tzinfo=UTC), "2023-04-24/2023-04-30"),
        ("We hiked the weekend of May 6.", datetime(2023, 5, 20, tzinfo=UTC), "2023-05-06/2023-05-07"),
    ],
)
def test_seasons_alone_and_parts_in_an_entry_resolve_against_its_timestamp(
    text: str, said: datetime, expected: str
) -> None:
    assert [r.iso() for r in mentioned_ranges(text, said)] == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Ahead of the timestamp (a Wednesday), as "ago" counts back: a day, or a unit's range.
        ("We'll leave in two weeks", ["2023-06-22/2023-06-28"]),
        ("I'll know in 3 days", ["2023-06-17/2023-06-17"]),
        ("See you in a few days!", ["2023-06-17/2023-06-17"]),
        ("a week from today", ["2023-06-15/2023-06-21"]),
        ("two days from now", ["2023-06-16/2023-06-16"]),
        ("a month from tomorrow", ["2023-07-01/2023-07-31"]),
        ("the week after next we fly", ["2023-06-26/2023-07-02"]),
        # A day of the month alone: this month's, the last or the next, as the tense says.
        ("My interview is on the 20th.", ["2023-06-20/2023-06-20"]),
        ("on the 3rd we went out", ["2023-06-03/2023-06-03"]),
        ("I'll see you on the 2nd", ["2023-07-02/2023-07-02"]),
        ("on the 31st", ["2023-05-31/2023-05-31"]),  # June has none: the nearest 31st
        ("on the 3rd floor", []),
        ("on the 2nd try", []),
        ("the other week I saw her", ["2023-05-24/2023-06-07"]),
        ("the previous weekend was fun", ["2023-06-10/2023-06-11"]),
        # A duration, or a sentence that does not say it is ahead, names no time.
        ("I lost 5 kg in two weeks", []),
        ("I read it twice in a week", []),
    ],
)
def test_times_ahead_and_days_of_the_month_resolve_against_an_entrys_timestamp(text: str, expected: list[str]) -> None:
    said = datetime(2023, 6, 14, 15, tzinfo=UTC)
    assert [r.iso() for r in mentioned_ranges(text, said)] == expected


def test_a_day_of_the_month_alone_in_a_question() -> None:
    as_of = datetime(2023, 6, 14, 9, tzinfo=UTC)
    # With as_of, as in an entry: the last one when asked in the past, the next in the future.
    assert ranges_of("What did we do on the 15th?", as_of) == ["2023-05-15/2023-05-15"]
    assert ranges_of("What will we do on the 20th?", as_of) == ["2023-06-20/2023-06-20"]
    assert ranges_of("What happens on the 3rd?", as_of) == ["2023-06-03/2023-06-03"]  # the nearest
    # Without it, that day of any month that has one.
    when = query_time("What did we do on the 30th?")
    assert when is not None and when.ranges == ()
    assert when.yearless == tuple((m, 30, 30) for m in (1, *range(3, 13)))
    assert query_time("Who lives on the 3rd floor?", as_of) is None


# ---------------------------------------------------------------------------- early, mid, late: thirds


@pytest.mark.parametrize(
    ("query", "expected", "span"),
    [
        # A month's thirds are days 1-10, 11-20 and 21 to its end.
        ("What did Ana do in early May 2023?", ["2023-05-01/2023-05-10"], "early May 2023"),
        ("What did Ana do in mid-May 2023?", ["2023-05-11/2023-05-20"], "mid-May 2023"),
        ("Where was Ana in late February 2024?", ["2024-02-21/2024-02-29"], "late February 2024"),
        ("What did Ana do at the end of May 2023?", ["2023-05-21/2023-05-31"], "the end of May 2023"),
        # A year's are four months each, a season's a month each.
        ("What happened in early 2023?", ["2023-01-01/2023-04-30"], "early 2023"),
        ("What happened mid-2023?", ["2023-05-01/2023-08-31"], "mid-2023"),
        ("What happened at the beginning of 2022?", ["2022-01-01/2022-04-30"], "the beginning of 2022"),
        ("What did Ana do in late summer 2022?", ["2022-08-01/2022-08-31"], "late summer 2022"),
        # Relative to as_of (30 November 2026).
        ("What did Ana plan for early next year?", ["2027-01-01/2027-04-30"], "early next year"),
        ("What happened at the end of last month?", ["2026-10-21/2026-10-31"], "the end of last month"),
    ],
)
def test_early_mid_and_late_name_a_third_of_the_month_season_or_year(query: str, expected: list[str], span: str) -> None:
    when = query_time(query, NOW)
    assert when is not None and [r.iso() for r in when.ranges] == expected
    assert [query[a:b] for a, b in when.spans] == [span]


def test_thirds_without_a_year_and_what_stays_whole() -> None:
    assert query_time("What did Ana do in mid-May?").yearless == ((5, 11, 20),)
    assert query_time("What did Ana do in late August?").yearless == ((8, 21, 31),)
    assert query_time("What did June say in early June?").yearless == ((6, 1, 10),)  # the month, not the name
    assert query_time("What did Ana do in late summer?").yearless == ((8, 1, 31),)
    assert query_time("What did Ana do by the end of the summer?").yearless == ((8, 1, 31),)
    assert query_time("What did Ana do in early fall?").yearless == ((9, 1, 30),)
    # A week has no thirds: "the end of the week" names what "the week" does (nothing here),
    # and "the end of this week" this week.
    assert query_time("What happens at the end of the week?", NOW) is None
    assert [r.iso() for r in query_time("the end of this week", NOW).ranges] == ["2026-11-30/2026-12-06"]
    # A year that counts the plural after it is still no year.
    assert query_time("early 2000 games") is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm moving in mid-May.", ["2023-05-11/2023-05-20"]),
        ("We went camping in late summer.", ["2022-08-01/2022-08-31"]),
        ("See you at the end of next month!", ["2023-07-21/2023-07-31"]),
        ("We met in early 2021.", ["2021-01-01/2021-04-30"]),
        ("It was the end of May 2023.", ["2023-05-21/2023-05-31"]),
        ("We had a late start in May.", ["2023-05-01/2023-05-31"]),  # "late" not before the month
    ],
)
def test_thirds_in_an_entry_resolve_against_its_timestamp(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, datetime(2023, 6, 14, tzinfo=UTC))] == expected


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # A third of the month or year around the timestamp, as the tense says.
        ("I'll pay it at the end of the month.", datetime(2023, 6, 14, tzinfo=UTC), ["2023-06-21/2023-06-30"]),
        ("At the end of the month we went to Paris.", datetime(2023, 6, 3, tzinfo=UTC), ["2023-05-21/2023-05-31"]),
        ("We plan to move at the beginning of the year.", datetime(2023, 6, 14, tzinfo=UTC), ["2024-01-01/2024-04-30"]),
        ("by the end of the year", datetime(2023, 11, 20, tzinfo=UTC), ["2023-09-01/2023-12-31"]),  # the nearest
        # The days after the timestamp to the end of its week, month or year.
        ("See you later this week!", datetime(2023, 6, 14, tzinfo=UTC), ["2023-06-15/2023-06-18"]),
        ("a fundraiser later this month", datetime(2023, 5, 8, tzinfo=UTC), ["2023-05-09/2023-05-31"]),
        ("the end of the movie", datetime(2023, 6, 14, tzinfo=UTC), []),
        ("the end of the year 2021 was hard", datetime(2023, 6, 14, tzinfo=UTC), []),  # a year named: not this one
    ],
)
def test_a_part_of_the_month_or_year_around_an_entrys_timestamp(text: str, said: datetime, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, said)] == expected


def test_hours_and_minutes_ago_name_the_day_of_that_moment() -> None:
    noon = datetime(2023, 6, 14, 12, tzinfo=UTC)
    just_after_midnight = datetime(2023, 6, 14, 0, 30, tzinfo=UTC)
    assert ranges_of("What did I tell you an hour ago?", noon) == ["2023-06-14/2023-06-14"]
    assert ranges_of("What did I tell you an hour ago?", just_after_midnight) == ["2023-06-13/2023-06-13"]
    assert ranges_of("What did I say half an hour ago?", just_after_midnight) == ["2023-06-14/2023-06-14"]
    assert ranges_of("What did we discuss 30 hours ago?", noon) == ["2023-06-13/2023-06-13"]
    assert ranges_of("What did I say a few minutes ago?", noon) == ["2023-06-14/2023-06-14"]
    assert query_time("What did I say an hour ago?") is None  # relative: needs as_of
    assert [r.iso() for r in mentioned_ranges("I got home an hour ago.", just_after_midnight)] == [
        "2023-06-13/2023-06-13"
    ]
    # A duration is no moment.
    assert mentioned_ranges("We spent two hours there.", noon) == ()


def test_a_part_of_the_month_in_a_question_needs_as_of() -> None:
    assert ranges_of("What did we do at the end of the month?", datetime(2023, 6, 14, tzinfo=UTC)) == [
        "2023-05-21/2023-05-31"
    ]
    assert query_time("What did we do at the end of the month?") is None


# ---------------------------------------------------------------------------- the scorer


def cand(entry_id: str, tokens: set[str], said: str, refs: tuple[str, ...] = ()) -> CandidateStats:
    return CandidateStats(
        entry_id=entry_id,
        matched_tokens=frozenset(tokens),
        matched_entities=frozenset(),
        day=day(said).toordinal(),
        time_refs=tuple(parse_time_ref(r).ordinals for r in refs),
    )


def test_an_entry_in_the_querys_time_is_lifted_and_says_why() -> None:
    when = query_time("film on 3 May 2022", NOW)
    corpus = CorpusStats(100, {"film": 5}, {})
    scores = score_query(
        ["film"],
        (),
        corpus,
        [
            cand("other-day", {"film"}, "2022-09-01"),
            cand("that-day", {"film"}, "2022-05-03"),
            cand("told-later", {"film"}, "2022-05-20", refs=("2022-05-03/2022-05-03",)),
        ],
        when=when,
    )
    assert scores.final["other-day"] == pytest.approx(1 / 1.5)  # the words match, the time does not
    assert scores.final["that-day"] == pytest.approx(1.0)
    assert scores.final["told-later"] == pytest.approx(1.0)
    assert scores.time_matches.keys() == {"that-day", "told-later"}
    assert scores.scored("that-day").time_match == "said 2022-05-03"
    assert scores.scored("told-later").time_match == "refers to 2022-05-03/2022-05-03"


def test_an_entry_outside_the_querys_time_counts_less() -> None:
    when = query_time("film cinema on 3 May 2022", NOW)
    corpus = CorpusStats(100, {"film": 5, "cinema": 5}, {})
    weights = ScoringWeights(time_share=0.5)
    scores = score_query(
        ["film", "cinema"], (), corpus,
        [cand("in", {"film"}, "2022-05-04"), cand("out", {"film"}, "2022-06-30")], weights, when=when,
    )
    assert scores.final["out"] == pytest.approx(0.5 / 1.5)
    assert scores.final["in"] == pytest.approx(0.5)
    hit, miss = scores.scored("in"), scores.scored("out")
    assert hit.time_score == pytest.approx(0.5 - 0.5 / 1.5) and miss.time_score == 0.0
    assert hit.direct + hit.context == pytest.approx(hit.score) and miss.direct == pytest.approx(miss.score)


def test_an_entry_said_long_after_or_before_is_not_lifted() -> None:
    when = query_time("film on 3 May 2022", NOW)
    corpus = CorpusStats(100, {"film": 5, "cinema": 5}, {})
    scores = score_query(
        ["film", "cinema"], (), corpus,
        [cand("before", {"film"}, "2022-05-01"), cand("weeks-later", {"film"}, "2022-05-25")], when=when,
    )
    assert scores.time_matches == {}


def test_a_reference_much_longer_than_the_query_does_not_pin_a_day() -> None:
    when = query_time("film on 3 May 2022", NOW)
    corpus = CorpusStats(100, {"film": 5, "cinema": 5}, {})
    scores = score_query(
        ["film", "cinema"], (), corpus, [cand("vague", {"film"}, "2023-01-05", refs=("2022-01-01/2022-12-31",))],
        when=when,
    )
    assert scores.time_matches == {}


def test_context_only_entries_are_not_lifted() -> None:
    # The lift needs a direct match: whether an entry is a candidate must not matter.
    when = query_time("film on 3 May 2022", NOW)
    corpus = CorpusStats(100, {"film": 5, "cinema": 5}, {})
    holder = CandidateStats("q", frozenset({"film"}), frozenset(), ("a",), (), day=day("2022-09-01").toordinal())
    answer = CandidateStats("a", frozenset(), frozenset(), ("q",), (), day=day("2022-05-03").toordinal())
    scores = score_query(["film", "cinema"], (), corpus, [holder, answer], when=when)
    assert "a" in scores.final and "a" not in scores.time_matches


# ---------------------------------------------------------------------------- both backends


def turn(text: str, at: datetime, author: str = "Ana") -> MemoryEntry:
    return MemoryEntry(content=Content(role="user").with_text(text), author=author, timestamp=at)


async def test_a_question_before_a_month_does_not_lift_that_month(service: MemoryService) -> None:
    said = [datetime(2023, 4, 10, 12, tzinfo=UTC), datetime(2023, 5, 3, 12, tzinfo=UTC), datetime(2023, 6, 20, 12, tzinfo=UTC)]
    texts = ["I planted tomatoes in the garden.", "The garden fence broke.", "We had a garden party."]
    await service.add_session("app", "u", "s", [turn(t, at) for t, at in zip(texts, said, strict=True)])
    response = await service.search(
        SearchRequest(query="What did I say about the garden before May 2023?", app_name="app", user_id="u", as_of=NOW)
    )
    assert all(h.matched_time is None for h in response.hits)
    assert len({h.score for h in response.hits}) == 1  # the garden alone: no time lifts the excluded month


async def test_a_dated_question_finds_what_was_said_that_week(service: MemoryService) -> None:
    may = datetime(2022, 5, 4, 20, 0, tzinfo=UTC)
    await service.add_session("app", "u", "s-may", [turn("We watched a film about whales last night.", may)])
    await service.add_session(
        "app", "u", "s-sep", [turn("We watched a film about trains.", may + timedelta(days=120))]
    )
    response = await service.search(
        SearchRequest(query="What film did Ana watch on 3 May, 2022?", app_name="app", user_id="u", as_of=NOW)
    )
    assert [h.memory.text for h in response.hits][0] == "We watched a film about whales last night."
    assert response.hits[0].matched_time == "said 2022-05-04"
    assert response.hits[0].time_score > 0 and response.hits[1].matched_time is None
    assert "may" not in response.hits[0].matched_tokens  # the date's words are not tokens


async def test_time_refs_are_stored_on_the_entry_for_cypher(service: MemoryService) -> None:
    said = datetime(2023, 6, 15, 10, 0, tzinfo=UTC)
    await service.add_session("app", "u", "s", [turn("I went hiking three weeks ago.", said)])
    response = await service.search(
        SearchRequest(query="Where did Ana go hiking in May 2023?", app_name="app", user_id="u", as_of=NOW)
    )
    assert response.hits[0].matched_time == "refers to 2023-05-25/2023-05-31"
    rows = await run_read_only(
        service,
        "MATCH (e:Entry {app_name: $app, user_id: $user}) RETURN e.time_refs AS refs",
        {"app": "app", "user": "u"},
    )
    assert [list(r["refs"]) for r in rows.records()] == [["2023-05-25/2023-05-31"]]


async def test_a_question_about_a_holiday_finds_what_was_said_then_and_what_refers_to_it(
    service: MemoryService,
) -> None:
    christmas = datetime(2023, 12, 25, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s-aug", [turn("I got a new bike helmet at the store.", christmas - timedelta(days=137))])
    await service.add_session("app", "u", "s-dec", [turn("My parents got me a new bike!", christmas)])
    await service.add_session("app", "u", "s-jan", [turn("At Christmas we got a bike rack too.", christmas + timedelta(days=10))])
    hits = (
        await service.search(
            SearchRequest(query="What bike did Ana get at Christmas 2023?", app_name="app", user_id="u", as_of=NOW)
        )
    ).hits
    found = {h.memory.text: h.matched_time for h in hits}
    assert found == {
        "My parents got me a new bike!": "said 2023-12-25",
        "At Christmas we got a bike rack too.": "refers to 2023-12-24/2023-12-26",
        "I got a new bike helmet at the store.": None,
    }
    assert hits[-1].memory.text == "I got a new bike helmet at the store."
    rows = await run_read_only(
        service,
        "MATCH (e:Entry {app_name: $app, user_id: $user}) WHERE e.session_id = 's-jan' RETURN e.time_refs AS refs",
        {"app": "app", "user": "u"},
    )
    assert [list(r["refs"]) for r in rows.records()] == [["2023-12-24/2023-12-26"]]
    # A holiday asked alone, with or without a year, is a time asked alone.
    await service.add_session("app", "v", "s-dec", [turn("We opened presents by the fire.", christmas)])
    await service.add_session("app", "v", "s-feb", [turn("We went to the gym.", christmas + timedelta(days=40))])
    for query in ("What did we do on Christmas Day 2023?", "What happened at Christmas?"):
        hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="v", as_of=NOW))).hits
        assert [(h.memory.text, h.matched_time) for h in hits] == [
            ("We opened presents by the fire.", "said 2023-12-25")
        ], query


async def test_a_third_of_a_month_finds_what_was_said_in_it_and_what_refers_to_it(service: MemoryService) -> None:
    may = datetime(2023, 5, 1, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s-early", [turn("We baked bread with the kids.", may + timedelta(days=3))])
    await service.add_session("app", "u", "s-late", [turn("We baked cookies for the party.", may + timedelta(days=28))])
    await service.add_session("app", "u", "s-jun", [turn("Mid-May we baked a cake.", may + timedelta(days=40))])
    for query, matched in (
        ("What did we bake in early May 2023?", {"We baked bread with the kids.": "said 2023-05-04"}),
        ("What did we bake in mid-May?", {"Mid-May we baked a cake.": "refers to 2023-05-11/2023-05-20"}),
        ("What did we bake at the end of May 2023?", {"We baked cookies for the party.": "said 2023-05-29"}),
    ):
        hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="u", as_of=NOW))).hits
        assert len(hits) == 3, query
        assert {h.memory.text: h.matched_time for h in hits[:1]} == matched, query
        assert [h.matched_time for h in hits[1:]] == [None, None], query


async def test_a_month_said_in_the_past_tense_is_found_in_the_year_it_was(service: MemoryService) -> None:
    """Said in March 2024, "in August" in the past tense is August 2023 (it was read as the
    coming August, which no question about 2023 found); in the future, August 2024."""
    march = datetime(2024, 3, 13, 18, tzinfo=UTC)
    lisbon, porto = "We travelled to Lisbon in August and loved it.", "We'll travel to Porto in August."
    await service.add_session("app", "u", "s-1", [turn(lisbon, march)])
    await service.add_session("app", "u", "s-2", [turn(porto, march + timedelta(days=1))])
    for query, expected in (
        ("Where did we travel in August 2023?", (lisbon, "refers to 2023-08-01/2023-08-31")),
        ("Where will we travel in August 2024?", (porto, "refers to 2024-08-01/2024-08-31")),
        ("Where did we travel in August last year?", (lisbon, "refers to 2023-08-01/2023-08-31")),
    ):
        request = SearchRequest(query=query, app_name="app", user_id="u", as_of=march + timedelta(days=2))
        hits = (await service.search(request)).hits
        assert [(h.memory.text, h.matched_time) for h in hits if h.matched_time] == [expected], query


async def test_what_was_said_an_hour_ago_is_what_was_said_that_day(service: MemoryService) -> None:
    """A chat with a time on every turn: "What did I tell you an hour ago?" is a time asked
    alone, the day of that moment."""
    noon = datetime(2023, 6, 14, 12, tzinfo=UTC)
    await service.add_session("app", "u", "s-1", [turn("My sister moves to Porto in May.", noon - timedelta(days=3))])
    await service.add_session("app", "u", "s-2", [turn("I booked the dentist for Friday.", noon - timedelta(hours=1))])
    hits = (
        await service.search(
            SearchRequest(query="What did I tell you an hour ago?", app_name="app", user_id="u", as_of=noon)
        )
    ).hits
    assert [(h.memory.text, h.matched_time) for h in hits] == [("I booked the dentist for Friday.", "said 2023-06-14")]


async def test_a_speaker_named_june_is_a_speaker_not_a_month(service: MemoryService) -> None:
    """"June" was read as the month and left the query: June's own turn ranked last."""
    march = datetime(2023, 3, 10, 20, tzinfo=UTC)
    await service.add_session("app", "u", "s", [
        turn("The concert was amazing, best night ever.", march, author="June"),
        turn("The concert was too loud for me.", march + timedelta(days=1), author="Ana"),
        turn("I think the concert started late.", march + timedelta(days=2), author="Ben"),
    ])
    query = "What did June think of the concert?"
    hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="u", as_of=NOW))).hits
    assert hits[0].memory.author == "June" and hits[0].by_named_speaker is True and hits[0].matched_time is None


async def test_an_entry_with_a_long_s_or_a_dotless_i_in_a_time_word_is_stored_and_found(service: MemoryService) -> None:
    """"Auguſt" matched "August" case-insensitively and its lookup raised KeyError: the
    session was not stored, and a search for "laſt summer" raised."""
    texts = ["The Auguſt 1823 harveſt was poor.", "We went hiking thıs week."]
    await service.add_session("app", "u", "s", [turn(text, SAID) for text in texts])
    stored = await service.list_entries("app", "u")
    assert sorted(e.memory.text for e in stored) == sorted(texts) and not any(e.refers_to_time for e in stored)
    for query in ("harveſt laſt summer", "hiking thİs week"):
        hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="u", as_of=NOW))).hits
        assert hits and all(h.matched_time is None for h in hits)


async def test_since_and_until_filter_by_entry_time(service: MemoryService) -> None:
    base = datetime(2024, 1, 1, tzinfo=UTC)
    await service.add_session(
        "app", "u", "s", [turn(f"pancakes recipe number {i}", base + timedelta(days=i)) for i in range(30)]
    )

    async def days(**window: datetime) -> list[int]:
        response = await service.search(
            SearchRequest(query="pancakes recipe", app_name="app", user_id="u", limit=5, **window)
        )
        return sorted((h.memory.timestamp - base).days for h in response.hits)

    assert await days(since=base + timedelta(days=10), until=base + timedelta(days=12)) == [10, 11, 12]
    assert await days(until=base + timedelta(days=2)) == [0, 1, 2]
    assert await days(since=base + timedelta(days=27)) == [27, 28, 29]
    naive = (base + timedelta(days=27)).replace(tzinfo=None)  # naive is UTC
    assert await days(since=naive) == [27, 28, 29]
    assert len(await days()) == 5


@pytest.mark.parametrize("day", ["2023-05-03", date(2023, 5, 3), "20230503", "2023-W18-3", " 2023-05-03 "])
async def test_a_day_alone_as_until_keeps_that_day(service: MemoryService, day: object) -> None:
    """A date given as ``until`` was its first moment: 3 May's entries were left out
    (the CLI and MCP kept the day for "2023-05-03" only, not for "20230503")."""
    from graphmem._models import parse_time_bound

    await service.add_session(
        "app", "u", "s", [turn(f"pancakes on day {d}", datetime(2023, 5, d, 9, tzinfo=UTC)) for d in (2, 3, 4)]
    )
    request = SearchRequest(query="pancakes", app_name="app", user_id="u", since=day, until=day)  # type: ignore[arg-type]
    assert (request.since, request.until) == (datetime(2023, 5, 3, tzinfo=UTC), datetime(2023, 5, 3, 23, 59, 59, 999999, tzinfo=UTC))
    assert [h.memory.text for h in (await service.search(request)).hits] == ["pancakes on day 3"]
    if isinstance(day, str):  # the CLI's and MCP's reading
        assert parse_time_bound(day, end_of_day=True) == datetime(2023, 5, 3, 23, 59, 59, 999999)
    # A time of day is that minute, even midnight (not the day).
    at_midnight = SearchRequest(query="pancakes", app_name="app", user_id="u", until="2023-05-03T00:00")  # type: ignore[arg-type]
    assert at_midnight.until == datetime(2023, 5, 3, 0, 0, 59, 999999, tzinfo=UTC)


@pytest.mark.parametrize(
    ("until", "kept"),
    [
        # As until, a time keeps the whole of the last unit it is written to, as a date keeps
        # its day: a time shown to the second keeps what was stored within that second.
        ("2023-05-03T10:00:00Z", [3]),
        ("2023-05-03T10:00", [3]),
        ("2023-05-03T10", [3]),
        ("2023-05-03T10:00:00.2", [3]),
        ("2023-05-03T10:00:00.1", []),
        ("2023-05-03T09:59:59.999999", []),
        # A week without its day (ISO 8601's 2023-W18: Monday 1 to Sunday 7 May) keeps the week.
        ("2023-W18", [3, 7]),
        ("2023-W17", []),
    ],
)
async def test_until_keeps_the_whole_last_unit_it_is_written_to(service: MemoryService, until: str, kept: list[int]) -> None:
    await service.add_session(
        "app",
        "u",
        "s",
        [turn("pancakes at ten", datetime(2023, 5, 3, 10, 0, 0, 250000, tzinfo=UTC)),
         turn("pancakes on Sunday", datetime(2023, 5, 7, 23, 59, tzinfo=UTC)),
         turn("pancakes next week", datetime(2023, 5, 8, 0, 0, tzinfo=UTC))],
    )
    response = await service.search(SearchRequest(query="pancakes", app_name="app", user_id="u", until=until))  # type: ignore[arg-type]
    assert sorted(h.memory.timestamp.day for h in response.hits) == kept


def test_since_after_until_is_a_validation_error() -> None:
    with pytest.raises(ValidationError, match="since"):
        SearchRequest(query="x", app_name="a", user_id="u", since=NOW, until=NOW - timedelta(days=1))
    with pytest.raises(ValidationError):
        SearchRequest(query="x", app_name="a", user_id="u", since="not a date")  # type: ignore[arg-type]


async def test_a_query_that_is_only_a_time_matches_its_words(service: MemoryService) -> None:
    await service.add_session("app", "u", "s", [turn("See you tomorrow then.", SAID), turn("Fine by me.", SAID)])
    response = await service.search(SearchRequest(query="tomorrow", app_name="app", user_id="u", as_of=NOW))
    assert [h.memory.text for h in response.hits][0] == "See you tomorrow then."
    assert response.hits[0].matched_time is None and "tomorrow" in response.hits[0].matched_tokens


def test_a_time_alone_scores_what_was_said_then_and_what_refers_to_it() -> None:
    when = query_time("on 19 May 2023")
    assert when is not None
    weights = ScoringWeights()
    may = {d: date(2023, 5, d).toordinal() for d in (17, 18, 19, 20, 21, 30)}
    days = [
        ("said-that-day", may[19], ()),
        ("said-the-day-before", may[18], ()),  # time zones: the day before counts, below the day
        ("said-after-about-it", may[20], ((may[19], may[19]),)),  # "yesterday"
        ("said-after", may[21], ()),  # told within time_told_within_days: weaker
        ("said-long-after", may[30], ()),
        ("said-before", may[17], ()),
        ("said-after-about-another-day", may[20], ((may[17], may[17]),)),
        ("said-in-june-about-may", date(2023, 6, 15).toordinal(), ((date(2023, 5, 1).toordinal(), may[30] + 1),)),
    ]
    scores = score_time_alone(days, when, weights)
    later = 1 / (1 + weights.time_share)
    assert dict(scores.final) == {
        "said-that-day": 1.0,
        "said-the-day-before": later,
        "said-after-about-it": 1.0,
        "said-after": later,
        "said-after-about-another-day": later,
        "said-in-june-about-may": later,  # "in May" pins no day
    }
    assert scores.decides(1) and scores.decides(1000)  # everything was read
    hit = scores.scored("said-after-about-it")
    assert (hit.score, hit.direct, hit.context, hit.time_score) == (1.0, 1.0, 0.0, 1.0)
    assert hit.time_match == "refers to 2023-05-19/2023-05-19" and hit.matched_tokens == ()
    assert scores.scored("said-after").time_match == "said 2023-05-21"


async def test_a_question_asking_for_a_time_alone_finds_what_was_said_then(service: MemoryService) -> None:
    """"What did we talk about on 19 May?" held no word to match but "talk": it found the
    entries saying "talk" on any day, or (as "20 May 2023" did) nothing."""
    may = datetime(2023, 5, 19, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s-1", [turn("We adopted a puppy today.", may), turn("So cute!", may, "Ben")])
    await service.add_session("app", "u", "s-2", [turn("The hike yesterday was long.", may + timedelta(days=1))])
    await service.add_session("app", "u", "s-3", [turn("Let's talk about the trip.", may + timedelta(days=30))])
    await service.add_session("app", "other", "s-1", [turn("Another user's day.", may)])
    for query in ("What did we talk about on 19 May 2023?", "19 May 2023", "What happened on May 19, 2023?"):
        hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="u", as_of=NOW))).hits
        found = {h.memory.text: h.matched_time for h in hits}
        assert found == {
            "We adopted a puppy today.": "said 2023-05-19",
            "So cute!": "said 2023-05-19",
            "The hike yesterday was long.": "refers to 2023-05-19/2023-05-19",
        }, query
        assert all(h.score == 1.0 and h.time_score == 1.0 and not h.matched_tokens for h in hits)
    # A window still applies; a word that asks for something is matched as a word.
    window = SearchRequest(query="19 May 2023", app_name="app", user_id="u", as_of=NOW, since=may + timedelta(hours=12))
    assert [h.memory.text for h in (await service.search(window)).hits] == ["The hike yesterday was long."]
    hits = (await service.search(SearchRequest(query="What puppy on 19 May 2023?", app_name="app", user_id="u"))).hits
    assert hits[0].memory.text == "We adopted a puppy today." and hits[0].matched_tokens == ["puppy"]


#: Times a question may name alone: days, a week, a month, a day without a year, days at
#: a month's and a year's turn, a day the entries only refer to.
_TIMES_ALONE = [
    "on 19 May 2023", "on 18 May 2023", "on 31 May 2023", "on 1 June 2023", "in May 2023", "on 19 May",
    "on 31 December 2022", "on 1 January 2023", "in the week of 15 May 2023", "on 2 May 2023", "on 30 April 2023",
    "on 31 December", "on 1 January", "on 30 December",  # a year's turn without a year
]


async def test_what_a_backend_reads_for_a_time_alone_holds_every_entry_that_matches_it(
    service: MemoryService,
) -> None:
    """The backends read only the entries near the time (networkx its index of days, Neo4j
    a filter on the server): scored, that is what every entry scored gives."""
    start = datetime(2022, 12, 25, 21, tzinfo=UTC)
    texts = ["I went hiking yesterday.", "See you next week!", "Last month was busy.", "Nothing to report.",
             "The party is on 19 May.", "Two days ago I moved.", "Tomorrow is the big day."]
    sessions = {
        f"s{n}": [turn(texts[(n + i) % len(texts)], start + timedelta(days=4 * n, hours=3 * i)) for i in range(3)]
        for n in range(45)
    }
    await service.add_sessions("app", "u", sessions)
    owner = service._owner("app", "u")
    for text in _TIMES_ALONE:
        when = query_time(text, NOW)
        assert when is not None, text
        read = score_time_alone(await service._entry_days(owner, None, when), when, service.weights)
        every = score_time_alone(await MemoryService._entry_days(service, owner, None, when), when, service.weights)
        assert dict(read.final) == dict(every.final) and dict(read.time_matches) == dict(every.time_matches), text
        assert every.final, f"{text}: no entry matches, so the test tests nothing"


async def test_what_a_backend_reads_for_random_times_holds_every_entry_that_matches_them(
    service: MemoryService,
) -> None:
    """The backends' reads for a time alone against every entry, over 300 times drawn as
    :func:`query_times` draws them (ranges of a day to over a year, times without a year,
    both), on entries said over two years that refer to days around them."""
    import random

    rng = random.Random(29)
    start = datetime.combine(date.fromordinal(_FIRST), datetime.min.time(), UTC)
    refs = ["yesterday", "last week", "two days ago", "last month", "tomorrow", "next week", "on 29 February",
            "on 31 December", "in May", "nothing at all", "this weekend"]
    sessions = {
        f"s{n}": [
            turn(f"Note {n}-{i}: {rng.choice(refs)}.", start + timedelta(days=rng.randrange(560), hours=rng.randrange(24)))
            for i in range(2)
        ]
        for n in range(120)
    }
    await service.add_sessions("app", "u", sessions)
    owner = service._owner("app", "u")
    every_day = await MemoryService._entry_days(service, owner, None, query_time("on 1 May 2024", NOW) or _never())
    for _ in range(300):
        ranges = []
        for _ in range(rng.randint(0, 2)):
            first = date.fromordinal(_FIRST + rng.randrange(560))
            ranges.append(DayRange(first, first + timedelta(days=rng.choice([0, 1, 6, 30, 200, 400]))))
        yearless = []
        for _ in range(rng.randint(0 if ranges else 1, 2)):
            month = rng.randint(1, 12)
            a = rng.choice([1, 3, 28, 29]) if month == 2 else rng.randint(1, 30)
            yearless.append((month, a, rng.choice([a, min(a + 4, 31), 31])))
        when = QueryTime(tuple(ranges), tuple(yearless), ())
        read = score_time_alone(await service._entry_days(owner, None, when), when, service.weights)
        every = score_time_alone(every_day, when, service.weights)
        assert dict(read.final) == dict(every.final), when.describe()


def _never() -> QueryTime:
    raise AssertionError("the test's date names no time")


async def test_a_time_alone_keeps_to_the_search_scope(service: MemoryService) -> None:
    if not service.supports_project_scoping():
        pytest.skip(f"{type(service).__name__} has no project scoping")
    may = datetime(2023, 5, 19, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s-global", [turn("A global day.", may)])
    await service.add_session_to_project("app", "u", "s-p1", "p1", [turn("A day of p1.", may)])
    await service.add_session_to_project("app", "u", "s-p2", "p2", [turn("A day of p2.", may)])

    async def found(project_id: str | None) -> set[str]:
        request = SearchRequest(query="19 May 2023", app_name="app", user_id="u", project_id=project_id)
        return {h.memory.text for h in (await service.search(request)).hits}

    assert await found(None) == {"A global day."}
    assert await found("p1") == {"A global day.", "A day of p1."}


async def test_a_word_that_names_a_topic_beside_a_time_is_matched_as_a_word(service: MemoryService) -> None:
    may = datetime(2023, 5, 19, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s", [turn("I wrote a poem today.", may), turn("What a lovely idea!", may, "Ben")])
    await service.add_session("app", "u", "t", [turn("Then we had tea.", may + timedelta(minutes=5))])
    hits = (await service.search(SearchRequest(query="What did I write on 19 May 2023?", app_name="app", user_id="u"))).hits
    assert hits[0].memory.text == "I wrote a poem today." and hits[0].matched_tokens == ["write"]
    assert hits[0].score > max(h.score for h in hits[1:])


async def test_where_and_who_beside_a_time_ask_for_a_kind_of_answer(service: MemoryService) -> None:
    may = datetime(2023, 5, 19, 18, tzinfo=UTC)
    said = ["We drove to Paris for the day.", "Nice weather.", "So tired now.", "Good night!"]
    await service.add_session("app", "u", "s", [turn(text, may + timedelta(minutes=i)) for i, text in enumerate(said)])
    # "where" asks for a place: the entry naming one first, not the day's newest.
    hits = (await service.search(SearchRequest(query="Where did we go on 19 May 2023?", app_name="app", user_id="u"))).hits
    assert hits[0].memory.text == "We drove to Paris for the day."


async def test_a_delete_by_a_time_and_words_asking_for_it_removes_nothing(service: MemoryService) -> None:
    may = datetime(2023, 5, 19, 18, tzinfo=UTC)
    await service.add_session("app", "u", "s1", [turn("We adopted a puppy.", may)])
    await service.add_session("app", "u", "s2", [turn("Let's talk about Rome.", may + timedelta(days=30))])
    # A search returns the day; a delete by the same words removes nothing (it removed
    # every entry saying "talk", on any day).
    removed = await service.delete_entries("app", "u", "What did we talk about on 19 May 2023?")
    assert removed == 0 and len(await service.list_entries("app", "u")) == 2


async def test_a_time_alone_at_the_calendars_end(service: MemoryService) -> None:
    end = datetime(9999, 12, 31, 12, tzinfo=UTC)
    await service.add_session("app", "u", "s", [turn("The last day.", end), turn("The day before.", end - timedelta(days=1))])
    owner = service._owner("app", "u")
    for text in ("on 31 December 9999", "on 30 December 9999", "in December 9999"):
        when = query_time(text, NOW)
        assert when is not None, text
        read = score_time_alone(await service._entry_days(owner, None, when), when, service.weights)
        every = score_time_alone(await MemoryService._entry_days(service, owner, None, when), when, service.weights)
        assert dict(read.final) == dict(every.final) and read.final, text


async def test_a_long_time_alone_or_one_nothing_matches_is_read_as_words(service: MemoryService) -> None:
    await service.add_session("app", "u", "s", [turn("I loved 2023, what a year.", SAID), turn("Same here.", SAID)])
    # A year is longer than MAX_TIME_ALONE_DAYS: its words are matched, as before.
    hits = (await service.search(SearchRequest(query="2023", app_name="app", user_id="u", as_of=NOW))).hits
    assert hits[0].memory.text == "I loved 2023, what a year." and hits[0].matched_time is None
    # A month without a year is every May: its words are matched ("talk": no entry).
    in_may = SearchRequest(query="What did we talk about in May?", app_name="app", user_id="u", as_of=NOW)
    assert (await service.search(in_may)).hits == []
    # Nothing said on that day: no hit (its words "1", "may" match nothing either).
    none = SearchRequest(query="What did we talk about on 1 May 2020?", app_name="app", user_id="u", as_of=NOW)
    assert (await service.search(none)).hits == []


# ---------------------------------------------------------------------------- days as ranges

#: Around a leap day and a year's end, so that yearless times and "told after" cross both.
_FIRST = date(2023, 11, 1).toordinal()
_DAYS = st.integers(_FIRST, _FIRST + 560)


@st.composite
def query_times(draw: st.DrawFn) -> QueryTime:
    ranges = []
    for _ in range(draw(st.integers(0, 2))):
        first = date.fromordinal(draw(_DAYS))
        ranges.append(DayRange(first, first + timedelta(days=draw(st.sampled_from([0, 1, 6, 30, 200, 400])))))
    yearless = []
    for _ in range(draw(st.integers(0 if ranges else 1, 2))):
        month = draw(st.integers(1, 12))
        a = draw(st.sampled_from([1, 3, 28, 29]) if month == 2 else st.integers(1, 30))
        yearless.append((month, a, draw(st.sampled_from([a, min(a + 4, 31), 31]))))
    return QueryTime(tuple(ranges), tuple(yearless), ())


@settings(max_examples=300, deadline=None)
@given(query_times(), st.integers(0, 9), st.lists(_DAYS, min_size=1, max_size=12))
def test_a_querys_days_as_ranges_are_the_days_it_matches(when: QueryTime, after: int, days: list[int]) -> None:
    """``day_ranges`` (what an index of days reads) holds a day exactly when
    ``matches_day`` accepts it, yearless months and 29 February included."""
    first, last = min(days) - 40, max(days) + 40
    ranges = when.day_ranges(first, last, after=after)
    assert all(first <= lo <= hi <= last for lo, hi in ranges)
    for day in [*days, first, last]:
        assert any(lo <= day <= hi for lo, hi in ranges) == when.matches_day(day, after=after)


@settings(max_examples=300, deadline=None)
@given(
    query_times(),
    _DAYS,
    st.lists(st.tuples(st.integers(-400, 200), st.sampled_from([0, 2, 6, 30, 61, 89, 364, 500])), max_size=3),
)
def test_matching_days_is_days_match_as_ranges(when: QueryTime, day: int, refs: list[tuple[int, int]]) -> None:
    """What the scorer's rule says of an entry's day and references (``days_match``), said
    as ranges of days for an index (``matching_days``): the same entries match."""
    weights = ScoringWeights()
    time_refs = tuple((day + start, day + start + length) for start, length in refs)
    first = min([day, *(lo for lo, _ in time_refs)])
    last = max([day, *(hi for _, hi in time_refs)])
    days = matching_days(when, weights, first, last)
    said = any(lo <= day <= hi for lo, hi in days.said)
    referred = any(
        hi - lo + 1 <= days.longest_reference and any(lo <= b and a <= hi for a, b in days.referred)
        for lo, hi in time_refs
    )
    assert (said or referred) == (days_match(day, time_refs, when, weights) is not None)


def test_29_february_without_a_year_is_no_day_of_a_year_without_one() -> None:
    # Said or referred to, 28 February 2025 is not "29 February"; 29 February 2024 is.
    when = QueryTime((), ((2, 29, 29),), ())
    weights = dataclasses.replace(ScoringWeights(), time_told_within_days=0)
    feb28 = date(2025, 2, 28).toordinal()
    assert days_match(feb28 - 400, ((feb28, feb28),), when, weights) is None
    leap_day = date(2024, 2, 29).toordinal()
    assert days_match(feb28 - 400, ((leap_day, leap_day),), when, weights) is not None
    days = matching_days(when, weights, leap_day - 1, feb28 + 1)
    assert [r for r in days.referred] == [(leap_day, leap_day)]


async def test_entries_said_on_the_calendars_first_and_last_days_store_and_match(service: MemoryService) -> None:
    # "Yesterday" said on 0001-01-01 and "next week" on 9999-12-31 resolve past the
    # calendar's ends: such an expression names no time (it raised OverflowError on store),
    # the other one still does, and a month without a year asks of the day after the last
    # one said (it raised ValueError).
    said = [datetime(1, 1, 1, 9, tzinfo=UTC), datetime(9999, 12, 31, 9, tzinfo=UTC)]
    entries = [
        MemoryEntry(content=Content(role="user").with_text("We hiked yesterday and will again next week."), author="Ana", timestamp=t)
        for t in said
    ]
    await service.add_session("app", "edges", "s", entries)
    stored = await service.list_entries("app", "edges")
    assert len(stored) == 2
    rows = await run_read_only(
        service, "MATCH (e:Entry {app_name: $app, user_id: $user}) RETURN e.time_refs AS refs", {"app": "app", "user": "edges"}
    )
    assert sorted(list(r["refs"]) for r in rows.records()) == [["0001-01-08/0001-01-14"], ["9999-12-30/9999-12-30"]]
    as_of = datetime(9999, 12, 31, tzinfo=UTC)
    for query, day in (("hiked in December", said[1]), ("hiked in January", said[0]), ("hiked last week", said[1])):
        hits = (await service.search(SearchRequest(query=query, app_name="app", user_id="edges", as_of=as_of))).hits
        assert hits[0].matched_time == f"said {day.date().isoformat()}", query


def test_an_expression_past_the_calendars_end_names_no_time_and_the_others_stay() -> None:
    """One expression resolving past 9999-12-31 erased every time of the text: the entry
    stored no time_refs, and the query read "3 May 2023" as words."""
    in_9999 = datetime(9999, 6, 1, tzinfo=UTC)
    text = "On 3 May 2023 we met; next year we marry."
    assert [r.iso() for r in mentioned_ranges(text, in_9999)] == ["2023-05-03/2023-05-03"]
    when = query_time("What did we do on 3 May 2023, and next year?", in_9999)
    assert when is not None and [r.iso() for r in when.ranges] == ["2023-05-03/2023-05-03"]
    assert ranges_of("昨天 and 3 May 2023", datetime(1, 1, 1, tzinfo=UTC)) == ["2023-05-03/2023-05-03"]


@pytest.mark.parametrize("after", [0, 8])
def test_a_querys_days_at_the_calendars_ends(after: int) -> None:
    last = date.max.toordinal()
    for when in (QueryTime((), ((1, 1, 3),), ()), QueryTime((), ((12, 30, 31),), ())):
        ranges = when.day_ranges(1, last + 1, after=after)
        for day in (1, 2, 3, 4, 10, last - 1, last, last + 1):
            assert any(lo <= day <= hi for lo, hi in ranges) == when.matches_day(day, after=after)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 8)), max_size=40))
def test_matches_kept_are_the_first_of_overlapping_spans(spans: list[tuple[int, int]]) -> None:
    """The scan keeps a match only where no earlier kept match overlaps it. The check is a
    search in the kept spans' order (a text of a million characters took 12 s when it
    compared each match with every earlier one); it must keep what that comparison kept."""
    from graphmem._time import _Found

    found = _Found()
    kept: list[tuple[int, int]] = []
    for start, length in spans:
        end = start + length
        expected = all(end <= s or e <= start for s, e in kept)
        assert found.free(start, end) == expected, (start, end, kept)
        found.add(start, end, (start, end, 0))
        if expected:
            kept.append((start, end))
    assert [(s, e) for s, e, _ in found.ranges] == kept


def test_a_long_text_is_scanned_whole() -> None:
    """Every time named in a text of a million characters is found (the scan is linear)."""
    sentence = "We met in Paris last week and talked about the trip on 3 May 2023. "
    text = sentence * (1_000_000 // len(sentence))
    said = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    assert mentioned_ranges(text, said) == mentioned_ranges(sentence, said)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab .!?\n", max_size=300), st.data())
def test_a_sentence_starts_after_the_last_sentence_end_before_it(text: str, data: st.DataObject) -> None:
    """Read backwards from the time in growing windows, it is where reading the text from
    its start found it."""
    from graphmem import _time

    at = data.draw(st.integers(0, len(text)))
    expected = max((m.end() for m in _time._SENTENCE_END.finditer(text, 0, at)), default=0)
    assert _time._sentence_start(text, at) == expected


def test_the_sentence_of_each_time_in_a_long_text_is_read_around_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The tense of each time is read in its sentence, which was found by reading every
    sentence end from the text's start: quadratic in the times of a long text (2 s of the 14
    a 600,000-character query spent in its times). Counted: the sentence ends looked at."""
    from graphmem import _time

    looked_at = [0]
    ends = _time._SENTENCE_END

    class Counted:
        def finditer(self, *args: Any) -> Any:
            for match in ends.finditer(*args):
                looked_at[0] += 1
                yield match

        def search(self, *args: Any) -> Any:
            looked_at[0] += 1
            return ends.search(*args)

    monkeypatch.setattr(_time, "_SENTENCE_END", Counted())
    sentence = "We went to Rome in August. "
    times = 2_000
    said = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
    assert mentioned_ranges(sentence * times, said) == mentioned_ranges(sentence, said)  # the past August
    assert looked_at[0] <= 4 * times  # a few per time, where from the start it was about times**2 / 2


SAID_IN_MARCH = datetime(2024, 3, 13, 12, 0, tzinfo=UTC)  # a Wednesday


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A month or a day without a year: the sentence's tense decides the year, as it does
        # for a season or a holiday; without one, the nearest.
        ("I went to Paris in August.", ["2023-08-01/2023-08-31"]),
        ("I'll go to Paris in September.", ["2024-09-01/2024-09-30"]),
        ("On 3 May we flew to Rome", ["2023-05-03/2023-05-03"]),
        ("I'll fly to Rome on 20 Dec.", ["2024-12-20/2024-12-20"]),
        ("My wedding was on 1 Sept.", ["2023-09-01/2023-09-01"]),
        ("We met on 13 March.", ["2024-03-13/2024-03-13"]),  # the day said is begun
        ("I love Paris in August.", ["2024-08-01/2024-08-31"]),  # no tense: the nearest
        # A regular verb in the simple past after its subject is the past too.
        ("We finally visited Rome in July.", ["2023-07-01/2023-07-31"]),
        ("I need a break in July.", ["2024-07-01/2024-07-31"]),
        ("I'm so excited about Rome in July.", ["2024-07-01/2024-07-31"]),  # an adjective
        # A month as people type it, after a word that introduces a time.
        ("we watched a movie in december", ["2023-12-01/2023-12-31"]),
        ("back in Sept. we moved", ["2023-09-01/2023-09-30"]),
        ("in OCTOBER", ["2023-10-01/2023-10-31"]),
        ("this may help", []),
        ("May I ask you something?", []),
        # A year of this or the last century before a plural is still a year; a round
        # number counts ("in 2000 games").
        ("In 2019 prices went up.", ["2019-01-01/2019-12-31"]),
        ("He scored in 2000 games.", []),
    ],
)
def test_a_month_or_day_without_a_year_is_placed_by_the_tense(text: str, expected: list[str]) -> None:
    assert sorted(r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)) == expected


@pytest.mark.parametrize(
    ("query", "as_of", "expected"),
    [
        # The last 31st before the 15th of May is in March (April has none); it named no day.
        ("What did I do on the 31st?", datetime(2024, 5, 15, tzinfo=UTC), ["2024-03-31/2024-03-31"]),
        ("What did I do on the 30th?", SAID_IN_MARCH, ["2024-01-30/2024-01-30"]),
        ("What did I do on the 31st?", datetime(2024, 7, 10, tzinfo=UTC), ["2024-05-31/2024-05-31"]),
        ("What will I do on the 20th?", SAID_IN_MARCH, ["2024-03-20/2024-03-20"]),
    ],
)
def test_a_day_of_the_month_skips_months_without_it(query: str, as_of: datetime, expected: list[str]) -> None:
    assert ranges_of(query, as_of) == expected


def test_a_month_typed_in_lowercase_is_named_by_a_question() -> None:
    when = query_time("what did I do in october?", SAID_IN_MARCH)
    assert when is not None and when.yearless == ((10, 1, 31),)
    assert query_time("what did I do in Dec?", SAID_IN_MARCH) is not None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A month, season, third or day beside a whole year is that part of that year, not
        # every January (or the nearest one) and all of the year.
        ("What did I do in January last year?", ["2023-01-01/2023-01-31"]),
        ("in October of last year", ["2023-10-01/2023-10-31"]),
        ("last year in January", ["2023-01-01/2023-01-31"]),
        ("in the summer of last year", ["2023-06-01/2023-06-30", "2023-07-01/2023-07-31", "2023-08-01/2023-08-31"]),
        ("on 3 May last year", ["2023-05-03/2023-05-03"]),
        ("in early March next year", ["2025-03-01/2025-03-10"]),
        ("Christmas last year", ["2023-12-24/2023-12-26"]),
        # Not across a sentence's end.
        ("I moved in January. Last year was hard.", ["2023-01-01/2023-12-31"]),
    ],
)
def test_a_part_of_a_year_beside_the_year_is_that_part_of_it(text: str, expected: list[str]) -> None:
    assert ranges_of(text, SAID_IN_MARCH) == expected


def test_an_entry_reads_a_month_of_last_year_as_one_month() -> None:
    assert [r.iso() for r in mentioned_ranges("In January last year I went to Spain", SAID_IN_MARCH)] == [
        "2023-01-01/2023-01-31"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A bare number after a month that counts the plural after it is no day of it.
        ("I asked Jan 3 times", []),
        ("June 3 tickets were sold out", []),
        ("I ran a 10k in June 2 years ago.", ["2022-06-01/2022-06-30"]),
        ("on June 2 the kids went to the zoo", ["2023-06-02/2023-06-02"]),
    ],
)
def test_a_number_after_a_month_that_counts_something_is_no_day(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A weekday without "on": the one before or after, only as the sentence's tense says.
        ("what did I do Tuesday?", ["2024-03-12/2024-03-12"]),
        ("I had a dentist appointment Tuesday.", ["2024-03-12/2024-03-12"]),
        ("See you Friday!", ["2024-03-15/2024-03-15"]),
        ("Friday is my favourite day", []),  # no tense: no day
        ("I love Fridays", []),
        ("Friday's party was the best", []),
        ("Black Friday deals were great", []),
        ("Saturday, 5 May 2023 we hiked", ["2023-05-05/2023-05-05"]),  # a weekday before its date
    ],
)
def test_a_weekday_without_on_is_read_only_with_a_tense(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == expected


@pytest.mark.parametrize(
    ("text", "said", "expected"),
    [
        # "this weekend" in the past tense, said before the week's own: the one just gone.
        ("This weekend was amazing, we went hiking.", datetime(2024, 3, 11, 12, tzinfo=UTC), "2024-03-09/2024-03-10"),
        ("This weekend was amazing, we went hiking.", datetime(2024, 3, 16, 12, tzinfo=UTC), "2024-03-16/2024-03-17"),
        ("this weekend we'll hike", datetime(2024, 3, 11, 12, tzinfo=UTC), "2024-03-16/2024-03-17"),
        ("this weekend I'm free", datetime(2024, 3, 11, 12, tzinfo=UTC), "2024-03-16/2024-03-17"),
    ],
)
def test_this_weekend_in_the_past_tense_is_the_one_just_gone(text: str, said: datetime, expected: str) -> None:
    assert [r.iso() for r in mentioned_ranges(text, said)] == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "a few" and "several" before "ago" name no one count: the span of units they may mean.
        ("a few months ago I started running", "2023-11-01/2024-01-31"),
        ("several weeks ago we moved", "2024-01-31/2024-03-05"),
        ("a few days ago", "2024-03-09/2024-03-11"),
        ("a couple of weeks ago", "2024-02-28/2024-03-05"),  # a couple is two
    ],
)
def test_a_vague_count_ago_is_a_span(text: str, expected: str) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # From one month or year to another: the days between, not the last one alone.
        ("What did I do between May and July 2023?", ["2023-05-01/2023-07-31"]),
        ("Jan-Mar 2023", ["2023-01-01/2023-03-31"]),
        ("from 2019 to 2021", ["2019-01-01/2021-12-31"]),
        ("between 2019 and 2021", ["2019-01-01/2021-12-31"]),
        ("2022-2023", ["2022-01-01/2023-12-31"]),
        ("between May and July last year", ["2023-05-01/2023-05-31", "2023-06-01/2023-06-30", "2023-07-01/2023-07-31"]),
        ("between 2021 and 2019", []),  # backwards: no range
        ("May-June is busy", []),  # a dash between months only before a year
    ],
)
def test_a_range_of_months_or_years_is_every_day_of_it(text: str, expected: list[str]) -> None:
    assert ranges_of(text, SAID_IN_MARCH) == expected


def test_a_range_of_months_in_an_entry_follows_the_tense() -> None:
    assert [r.iso() for r in mentioned_ranges("We travelled from November to February", SAID_IN_MARCH)] == [
        "2023-11-01/2024-02-29"
    ]
    when = query_time("What did I do from March to June?", SAID_IN_MARCH)
    assert when is not None and when.yearless == ((3, 1, 31), (4, 1, 31), (5, 1, 31), (6, 1, 31))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # From one day to another: every day between, not the last (or the first) alone.
        ("What did she do between 3 and 5 May 2023?", ["2023-05-03/2023-05-05"]),
        ("from 3 to 5 May 2023", ["2023-05-03/2023-05-05"]),
        ("the 3rd-5th of May 2023", ["2023-05-03/2023-05-05"]),
        ("May 3 - 10, 2023", ["2023-05-03/2023-05-10"]),
        ("between May 3 and May 10, 2023", ["2023-05-03/2023-05-10"]),
        ("from 3 May 2023 to 10 May 2023", ["2023-05-03/2023-05-10"]),
        ("2023-05-03 to 2023-05-10", ["2023-05-03/2023-05-10"]),
        ("Dec 28 to Jan 3, 2024", ["2023-12-28/2024-01-03"]),  # the year is the last day's
        ("from May 30 to June 2, 2023", ["2023-05-30/2023-06-02"]),
        # Not a span: out of order, a day the month has not, "and" without "between".
        ("from 5 to 3 May 2023", ["2023-05-03/2023-05-03"]),  # the day read before
        ("Feb 28-30, 2023", []),
        ("on 3 May 2023 and 5 May 2023", ["2023-05-03/2023-05-03", "2023-05-05/2023-05-05"]),
        ("from 3 May 2021 to 10 May 2023", ["2021-05-03/2021-05-03", "2023-05-10/2023-05-10"]),  # too far
    ],
)
def test_a_span_of_days_in_a_query_is_every_day_of_it(text: str, expected: list[str]) -> None:
    assert ranges_of(text, SAID_IN_MARCH) == expected


@pytest.mark.parametrize(
    ("text", "yearless"),
    [
        ("What did I do May 3-5?", ((5, 3, 5),)),
        ("May 3rd to 5th", ((5, 3, 5),)),
        ("from May 30 to June 2", ((5, 30, 31), (6, 1, 2))),
        ("between the 3rd and the 5th of May", ((5, 3, 5),)),
        ("on May 3 and 5", ((5, 3, 3),)),  # two days, not a span (the 5th alone names no month)
    ],
)
def test_a_span_of_days_without_a_year_in_a_query_is_those_days_every_year(
    text: str, yearless: tuple[tuple[int, int, int], ...]
) -> None:
    when = query_time(text, SAID_IN_MARCH)
    assert when is not None and when.ranges == () and when.yearless == yearless


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("We stayed in Lisbon May 3-5.", ["2023-05-03/2023-05-05"]),  # past: last May
        ("We'll be in Lisbon May 3-5.", ["2024-05-03/2024-05-05"]),  # future: this May
        ("We went there from Dec 30 to Jan 2", ["2023-12-30/2024-01-02"]),
        # Numbers that count, and a lowercase "may", are no days.
        ("May 3-5 guests came", []),
        ("you may 3-5 times a week", []),
    ],
)
def test_a_span_of_days_in_an_entry_follows_the_tense(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # "in two weeks" in the present progressive is ahead ("we're leaving", "is coming").
        ("We're leaving for Peru in two weeks!", ["2024-03-21/2024-03-27"]),
        ("My sister is coming in 3 days", ["2024-03-16/2024-03-16"]),
        ("I am starting a new job in a month", ["2024-04-01/2024-04-30"]),
        # Not a progressive: an adjective in -ing, a duration in the past.
        ("It's amazing how much I learnt in two weeks", []),
        ("I'm proud, I lost 5 kg in two weeks", []),
    ],
)
def test_in_a_count_of_units_in_the_present_progressive_is_ahead(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # A weekday with a day of the month names the month: the nearest whose day it is,
        # as the tense says (13 March 2024 is a Wednesday).
        ("What did I say on Monday the 5th?", ["2024-02-05/2024-02-05"]),
        ("We met on Friday, the 13th.", ["2023-10-13/2023-10-13"]),
        ("I'll see you on Sat the 1st.", ["2024-06-01/2024-06-01"]),
        ("on Thursday the 31st", ["2023-08-31/2023-08-31"]),  # no tense: the nearest (next: Oct)
        ("on Monday the 30th", ["2023-10-30/2023-10-30"]),
    ],
)
def test_a_weekday_and_a_day_of_the_month_name_the_month(text: str, expected: list[str]) -> None:
    assert [r.iso() for r in mentioned_ranges(text, SAID_IN_MARCH)] == expected
    when = query_time(text, SAID_IN_MARCH)
    assert when is not None and [r.iso() for r in when.ranges] == expected
    assert query_time(text) is None  # without the day it is asked, no month is named


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Two numbers after "on": either way round when both can be a day.
        ("what did I eat on 05/05?", ((5, 5, 5),)),
        ("we met on 5/8", ((5, 8, 8), (8, 5, 5))),
        ("on 25/12", ((12, 25, 25),)),
        # No day: a fraction, a number after another word, no month 13.
        ("add 1/2 cup", None),
        ("open 24/7", None),
        ("on 13/13", None),
    ],
)
def test_a_day_typed_as_two_numbers_after_on(text: str, expected: tuple[tuple[int, int, int], ...] | None) -> None:
    when = query_time(text, SAID_IN_MARCH)
    assert (when.yearless if when else None) == expected


def test_a_day_typed_as_two_numbers_in_an_entry_follows_the_tense() -> None:
    assert [r.iso() for r in mentioned_ranges("We got married on 25/12", SAID_IN_MARCH)] == ["2023-12-25/2023-12-25"]
    assert [r.iso() for r in mentioned_ranges("We'll fly on 4/5", SAID_IN_MARCH)] == [
        "2024-04-05/2024-04-05", "2024-05-04/2024-05-04"
    ]


@pytest.mark.parametrize(
    ("text", "expected", "yearless"),
    [
        ("in the first half of 2023", ["2023-01-01/2023-06-30"], ()),
        ("the second half of May 2023", ["2023-05-16/2023-05-31"], ()),
        ("the last half of 2022", ["2022-07-01/2022-12-31"], ()),
        ("what did I do in the second half of May?", [], ((5, 16, 31),)),
        ("in the first half of May", [], ((5, 1, 15),)),
    ],
)
def test_a_half_of_a_year_or_month(text: str, expected: list[str], yearless: tuple[tuple[int, int, int], ...]) -> None:
    when = query_time(text, SAID_IN_MARCH)
    assert when is not None and [r.iso() for r in when.ranges] == expected and when.yearless == yearless
