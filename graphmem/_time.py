"""Time expressions: dates in queries, and relative times inside entries, as day ranges.

Two uses, one grammar per language (English; Chinese and Japanese; Spanish; Hindi; one
reader over the words of each of French, German, Italian and Portuguese):

- **At ingest** (:func:`mentioned_ranges`): "yesterday", "last week", "two years ago",
  "next month", "in May", "on 3 May 2022", "at Christmas", "last Easter" ... inside an entry's text are resolved against
  the entry's own timestamp into day ranges, stored on the entry as ``time_refs``
  (ISO 8601 intervals such as ``"2023-05-01/2023-05-31"``), so a question about May also
  finds "I went there last week" said in early June.
- **In a query** (:func:`query_time`): a date or range ("on 1 May, 2022", "in October
  2023", "in 2022", "29 Dec 2023", "29.12.2023", "May '23", "5/8/23", "the week before 3
  June 2023", "the last week of April 2023", "in early May 2023", "mid-2023", "during the
  summer", "last summer" or "on the 15th" relative to ``as_of``) becomes a
  :class:`QueryTime`; the scorer favours entries
  whose own day or one of whose ``time_refs`` falls in it. A month or day named without a
  year ("in June", "on 3 May") matches that month or day of any year: a question rarely
  means "of the current year" and the memory knows which years it holds.

The same in other languages ("2023年5月8日", "去年5月", "上周", "先週", "三年前", "el 3 de
mayo de 2023", "la semana pasada", "hace dos años", "3 मई 2023", "पिछले हफ्ते", "दो साल
पहले", "le 3 mai 2023", "vor zwei Wochen", "la settimana scorsa", "há duas semanas"; the
section "other languages" lists every form). Full-width and Devanagari digits
read as digits. Hindi "कल" is both yesterday and tomorrow (and "परसों" both the day before
yesterday and the day after tomorrow): the verb of its clause decides (a past form such as
था / गया / किया: yesterday; a future one in गा / गी / गे: tomorrow); with neither, it is the
three days around the anchor. Chinese "上周六" is Saturday of last calendar week.

Everything here is pure and offline (regular expressions over the text, calendar
arithmetic); nothing is learnt. Seasons are those of the northern hemisphere
(spring = March to May, summer = June to August, autumn = September to November,
winter = December to February). Weeks start on Monday. Slash dates read month first
(``5/3/2023`` is 3 May) unless the first number cannot be a month; dotted dates read day
first (``29.12.2023``); ISO dates are ``2023-12-29``.
"""

from __future__ import annotations

import bisect
import calendar
import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta
from typing import overload

__all__ = ["DayRange", "QueryTime", "mentioned_ranges", "parse_time_ref", "query_time"]


@dataclass(frozen=True, slots=True, order=True)
class DayRange:
    """Consecutive days, ``first`` to ``last`` inclusive."""

    first: date
    last: date

    def iso(self) -> str:
        """``"2023-05-01/2023-05-31"`` (an ISO 8601 interval of dates)."""
        return f"{self.first.isoformat()}/{self.last.isoformat()}"

    @property
    def ordinals(self) -> tuple[int, int]:
        return self.first.toordinal(), self.last.toordinal()


def parse_time_ref(text: str) -> DayRange:
    """The inverse of :meth:`DayRange.iso`."""
    first, _, last = text.partition("/")
    return DayRange(date.fromisoformat(first), date.fromisoformat(last or first))


#: The last calendar day (9999-12-31) as an ordinal.
_LAST_DAY = date.max.toordinal()


@dataclass(frozen=True, slots=True)
class QueryTime:
    """When a query asks about.

    ``ranges`` are absolute day ranges; ``yearless`` are (month, first day, last day)
    triples for a month or day named without a year, matching it in any year. ``spans``
    are the (start, end) character offsets of the time expressions in the query, so that
    their words are not also matched as tokens.
    """

    ranges: tuple[DayRange, ...]
    yearless: tuple[tuple[int, int, int], ...]
    spans: tuple[tuple[int, int], ...]
    #: ``ranges`` as ordinals, and :meth:`longest_days`: derived once, for they are asked per
    #: entry a search matches against the time.
    _ordinals: tuple[tuple[int, int], ...] = field(init=False, repr=False, compare=False)
    _longest: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        ordinals = tuple(r.ordinals for r in self.ranges)
        lengths = [hi - lo + 1 for lo, hi in ordinals] + [b - a + 1 for _, a, b in self.yearless]
        object.__setattr__(self, "_ordinals", ordinals)
        object.__setattr__(self, "_longest", max(lengths, default=1))

    def describe(self) -> str:
        parts = [r.iso() for r in self.ranges]
        parts += [f"--{m:02d}-{a:02d}/--{m:02d}-{b:02d}" for m, a, b in self.yearless]
        return ", ".join(parts)

    def longest_days(self) -> int:
        """The length in days of the query's longest range (a month named without a year: 31)."""
        return self._longest

    def matches_day(self, ordinal: int, *, after: int = 0) -> bool:
        """Whether the day (a ``date.toordinal()``) is in the query's time, or at most
        ``after`` days past its end (an event is told about on the day or later)."""
        for lo, hi in self._ordinals:
            if lo <= ordinal <= hi + after:
                return True
        if self.yearless:
            # The days back from it that are calendar days: a search asks of the day after
            # one said (9999-12-31 has none) and of days before 0001-01-01 none exist.
            for back in range(max(0, ordinal - _LAST_DAY), min(after, ordinal - 1) + 1):
                d = date.fromordinal(ordinal - back)
                for month, a, b in self.yearless:
                    if d.month == month and a <= d.day <= b:
                        return True
        return False

    def day_ranges(self, first: int, last: int, *, after: int = 0) -> list[tuple[int, int]]:
        """The days from ``first`` to ``last`` (ordinals) that :meth:`matches_day` accepts
        with ``after``, as inclusive ranges (they may overlap): what an index of days reads
        instead of asking day by day."""
        found = [(max(lo, first), min(hi + after, last)) for lo, hi in self._ordinals]
        if self.yearless:
            # A day matches when one of the ``after`` days before it (or itself) falls on
            # the month's days: per year, from the first such day to ``after`` past the last.
            years = range(
                date.fromordinal(min(max(first - after, 1), _LAST_DAY)).year,
                date.fromordinal(min(max(last, 1), _LAST_DAY)).year + 1,
            )
            for month, a, b in self.yearless:
                for year in years:
                    days_in_month = calendar.monthrange(year, month)[1]
                    if a > days_in_month:
                        continue
                    start = date(year, month, a).toordinal()
                    end = date(year, month, min(b, days_in_month)).toordinal() + after
                    found.append((max(start, first), min(end, last)))
        return [(lo, hi) for lo, hi in found if lo <= hi]

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether the day range ``lo..hi`` (ordinals) shares a day with the query's time
        (a day :meth:`matches_day` accepts)."""
        for a, b in self._ordinals:  # (the usual case, without building ranges)
            if lo <= b and a <= hi:
                return True
        return bool(self.yearless) and bool(self.day_ranges(lo, hi))


# ---------------------------------------------------------------------------- grammar

_MONTH_NAMES = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
    "september": 9, "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
    "december": 12, "dec": 12,
}
_WEEKDAYS = {"monday": 0, "tuesday": 1, "wednesday": 2, "thursday": 3, "friday": 4, "saturday": 5, "sunday": 6}
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}  # first month
_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "couple of": 2, "a couple of": 2,
    "couple": 2, "a couple": 2, "few": 3, "a few": 3, "several": 4,
}

_MONTH = (
    r"(?P<{name}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<{name}>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<{name}>1[89]\d\d|2[01]\d\d)"
# "in 2000 games", "by 1800 votes": a number that counts the word after it is no year. Any
# plural word counts, but these, which end in "s" and are no nouns ("In 2020 this ...").
_COUNTED_SOURCE = (
    r"\s+(?!(?:as|is|was|has|does|his|its|this|us|thus|plus|always|perhaps|yes|less|unless|whereas|vs|versus"
    r"|besides|sometimes|afterwards|towards|across|ours|yours|hers|theirs)\b)[a-z]+s\b"
)
#: The year of a date written with its day or month ("4 July 1776", "May 2500", "summer
#: 1969", "Christmas 1914"): any of the calendar's years written with four digits (a year
#: alone, "in 2022", is one of 1800-2199: "in 3000 steps"); outside 1800-2199 not before a
#: plural it counts ("on 8 May 3000 people marched" is 8 May).
_WRITTEN_YEAR = rf"(?P<{{name}}>1[89]\d\d|2[01]\d\d|(?!0000)\d{{{{4}}}}(?!\d|{_COUNTED_SOURCE}))"
_COUNT = (
    r"\d{1,2}|a couple of|couple of|a couple|couple|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine"
    r"|ten|eleven|twelve"
)
_NUM = rf"(?P<n>{_COUNT})"
_UNIT_WORDS = r"day|weekend|wkend|wknd|week|wk|fortnight|month|mnth|mth|year|yr"
_UNIT = rf"(?P<unit>{_UNIT_WORDS})s?"
#: The first letters of every month's name, as ``_MONTH`` reads them.
_MONTH_START = r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
#: A weekday as written after "on" or before a part of the day: its name or a chat spelling
#: of it ("on fri", "sat night"); not "sun" ("on sun cream").
_WEEKDAY_WORDS = (
    r"monday|mon|tuesday|tues|tue|wednesday|wed|thursday|thurs|thur|thu|friday|fri|saturday|sat|sunday"
)
#: Chat spellings of the grammar's words, read as the word ("yday", "tmrw", "last wknd", "two
#: wks ago", "next fri"); those of a single day are in ``_RELATIVE`` itself. Not "mo" (a
#: moment: "back in a mo"), not "2day" (a two-day trip), not "sun" ("this sun is brutal").
_CHAT_SPELLINGS = {
    "wk": "week", "wkend": "weekend", "wknd": "weekend", "mnth": "month", "mth": "month", "yr": "year",
    "mon": "monday", "tue": "tuesday", "tues": "tuesday", "wed": "wednesday", "thu": "thursday",
    "thur": "thursday", "thurs": "thursday", "fri": "friday", "sat": "saturday",
}


def _as_written_in_full(word: str) -> str:
    """A unit, period or weekday of the grammar, lowercase, its chat spelling read as the word."""
    word = word.lower()
    return _CHAT_SPELLINGS.get(word, word)


def _m(name: str) -> str:
    return _MONTH.format(name=name)


def _d(name: str) -> str:
    return _DAY.format(name=name)


def _y(name: str) -> str:
    return _YEAR.format(name=name)


def _yw(name: str) -> str:
    return _WRITTEN_YEAR.format(name=name)


#: The English grammar's words are ASCII, and so is its case folding: in Unicode mode
#: IGNORECASE also folds "ſ" to "s", "ı" and "İ" to "i" and the Kelvin sign to "k", so "laſt"
#: matched "last" and, lowercased, was no key of the tables its words are looked up in. Its
#: spaces and digits are ASCII too: :func:`_scan` reads a text through ``_READABLE``.
_ENGLISH = re.IGNORECASE | re.ASCII

# A full date, a month of a year, a day of a month, as one alternation with named groups.
_ABSOLUTE = re.compile(
    r"\b(?:"
    rf"{_d('d1')}\s+(?:of\s+)?{_m('m1')},?\s+{_yw('y1')}"  # 8 May, 2023 / 8th of May 2023
    rf"|{_m('m2')}\s+{_d('d2')},?\s+{_yw('y2')}"  # May 8, 2023
    rf"|{_yw('y3')}-(?P<m3>0[1-9]|1[0-2])-(?P<d3>0[1-9]|[12]\d|3[01])"  # 2023-05-08
    rf"|(?P<d4>0?[1-9]|[12]\d|3[01])\.(?P<m4>0?[1-9]|1[0-2])\.{_yw('y4')}"  # 8.5.2023
    rf"|(?P<a5>\d{{1,2}})/(?P<b5>\d{{1,2}})/{_yw('y5')}"  # 5/8/2023
    rf"|{_m('m6')},?\s+(?:of\s+)?{_yw('y6')}"  # May 2023
    rf"|(?P<season7>spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_yw('y7')}"  # summer 2022
    rf"|{_d('d8')}\s+(?:of\s+)?{_m('m8')}"  # 8 May (no year)
    rf"|{_m('m9')}\s+{_d('d9')}(?![\d:])"  # May 8 (no year)
    # in 2022 / early 2022 / mid-2022 (a third of it: _third_of)
    rf"|(?:(?P<lead10>in|during|since|until|throughout|of|by|from|before|after)\s+|(?P<third10>early|mid|late)[\s-]+)"
    rf"{_y('y10')}"
    r")\b(?!-)",
    _ENGLISH,
)
# A month alone. "May", "March" and "August" are also words, and "April" and "June" names:
# a month must be capitalised, and those five must follow a word that introduces a time
# ("What did June say?" names no month; "in June", "last June", "June 3" do).
_MONTH_ALONE = re.compile(
    r"\b(?P<lead>(?i:(?:in|during|since|until|by|of|this|last|next|past)\s+)?(?i:(?:early|mid|late)[\s-]+)?)?"
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December)\b",
    re.ASCII,
)
# A month as people type it, in any case or shortened ("in october", "last Dec", "in Sept."),
# read only after a word that introduces a time (never "this": "this may help").
_MONTH_ALONE_TYPED = re.compile(
    r"\b(?P<lead>(?:in|during|since|until|last|next)\s+(?:(?:early|mid|late)[\s-]+)?)"
    r"(?P<month>january|february|march|april|may|june|july|august|september|october|november|december"
    r"|jan|feb|apr|jun|jul|aug|sept?|oct|nov|dec)\.?(?![\w'’-])",
    _ENGLISH,
)
_MONTH_WORDS = frozenset({"May", "March", "August", "April", "June"})
# "may" and "mar" in lowercase are mostly words ("the top 10 may help", "may 10 people
# come"): without a year, a day of one is a date only after a word that introduces one.
_LOWERCASE_MONTH_WORDS = frozenset({"may", "mar"})
_DATE_LEAD = re.compile(r"\b(?:on|by|since|until|till|from|before|after)\s+$", _ENGLISH)
_COUNTED = re.compile(_COUNTED_SOURCE, re.ASCII)
_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<today>today|tonight|tonite|2nite|2night|this (?:morning|afternoon|evening))"
    r"|(?P<before_yesterday>(?:the\s+)?day\s+(?:before|b4)\s+(?:yesterday|yday))"
    r"|(?P<after_tomorrow>(?:the\s+)?day\s+after\s+(?:tomorrow|tmrw))"
    r"|(?P<yesterday>yesterday|yday|yest|last (?:night|nite|evening))"
    r"|(?P<tomorrow>tomorrow|tmrw|tmrow|tmr|2morrow|2moro|2mrw|tomoz)"
    # "two weeks ago" / "back"; "a week from today", "two days from now": counted from the
    # anchor (or the day after).
    rf"|{_NUM}\s+{_UNIT}\s+(?:ago|back|from\s+(?P<from_day>today|now|tomorrow|tmrw))"
    # "an hour ago", "20 minutes ago", "half an hour ago": the day that moment fell on (a chat
    # with a time on every turn is asked "what did I say an hour ago?").
    rf"|(?P<clock_n>{_COUNT}|half\s+an)\s+(?P<clock_unit>hours?|hrs?|minutes?|mins?)\s+(?:ago|back)"
    # "the past two weeks", "the last few days": the days up to the anchor.
    rf"|(?:the\s+)?(?:past|last)\s+(?P<rolling_n>{_COUNT})\s+(?P<rolling_unit>{_UNIT_WORDS})s\b"
    r"|(?:the\s+)?(?P<before_last>weekend|wkend|wknd|week|wk|month|mnth|mth|year|yr)\s+before\s+last"
    r"|(?:the\s+)?(?P<after_next>weekend|wkend|wknd|week|wk|month|mnth|mth|year|yr)\s+after\s+next"
    # "in two weeks", "in a few days": ahead of the anchor, when the sentence is in the future
    # ("I lost 5 kg in two weeks" is a duration).
    rf"|in\s+(?P<in_n>{_COUNT})\s+(?P<in_unit>{_UNIT_WORDS})s?"
    r"|(?P<rel>last|this|next|past|previous|this\s+coming)\s+(?P<what>weekend|wkend|wknd|week|wk|month|mnth|mth|year|yr"
    rf"|spring|summer|autumn|fall|winter|{_WEEKDAY_WORDS})"
    r"|(?P<earlier>earlier) (?:this|in the) (?P<period>week|month|year)"
    r"|(?P<otherday>the other day)"
    r"|(?P<otherweek>the other week)"
    # Without last / next: the one before the anchor or the one after, unless the sentence
    # says which (:func:`_either_side`).
    r"|(?:over|on|at|during)\s+the\s+(?P<either_weekend>weekend|wkend|wknd)"
    # (Not before a date: "on Friday, 5 May" is that day, read by _ABSOLUTE.)
    rf"|on\s+(?P<either_day>{_WEEKDAY_WORDS})\b(?!,?\s+(?:the\s+)?(?:\d|{_MONTH_START}))"
    rf"|(?P<either_day_part>{_WEEKDAY_WORDS})\s+(?:morning|afternoon|evening|night|nite)"
    # A weekday written whole without "on" ("what did I do Tuesday?", "see you Friday"):
    # only when its sentence's tense says which (not "Mondays", "Friday's", "Friday is").
    rf"|(?<!black\s)(?<!cyber\s)(?<!good\s)"  # names of days that are no weekday of this week
    rf"(?P<bare_day>monday|tuesday|wednesday|thursday|friday|saturday|sunday)(?!s\b|['’]s\b)"
    rf"(?!,?\s+(?:the\s+)?(?:\d|{_MONTH_START}))"
    r")\b",
    _ENGLISH,
)
# "the week before 3 June 2023", "two weeks before August 11, 2023", "the day after ...":
# a shift of the absolute date that follows.
_SHIFT = re.compile(
    rf"\b(?:the\s+|last\s+)?(?:{_NUM}\s+)?{_UNIT}\s+(?P<dir>before|after)\s+$",
    _ENGLISH,
)


# Holidays kept on the same day wherever they are kept ("Christmas", "on Christmas Eve",
# "last Halloween", "Easter 2023", "the week before Thanksgiving"), Easter by the Gregorian
# computus, Thanksgiving as the United States keep it (the fourth Thursday of November).
# Holidays whose day differs from country to country (Mother's Day, Labor Day, Independence
# Day) or follows another calendar (Chinese New Year, Diwali, Eid, Hanukkah) name no time.
_HOLIDAY = re.compile(
    r"\b(?:(?P<hlead>last|this|next|past)\s+)?"
    r"(?P<holiday>(?:christmas|x-?mas)(?:\s+(?:eve|day))?|boxing\s+day"
    r"|new\s+year(?:['’]?s)?(?:\s+(?:eve|day))?|valentine['’]?s(?:\s+day)?"
    r"|hallowe['’]?en|(?:st\.?|saint)\s+(?:patrick['’]?s\s+day|paddy['’]?s(?:\s+day)?)"
    r"|(?-i:Good\s+Friday)|(?-i:Holy\s+Week)|easter(?:\s+(?:sunday|monday|weekend))?|thanksgiving(?:\s+day)?"
    r"|(?:the\s+)?fourth\s+of\s+july)"
    rf"(?:,?\s+(?:of\s+)?{_yw('hy')})?\b",
    _ENGLISH,
)
#: The words a ``_HOLIDAY`` match holds (most texts hold none: one search tells).
_HOLIDAY_WORDS = re.compile(
    r"christmas|x-?mas|boxing|new\s+year|valentine|hallowe|patrick|paddy|good\s+friday|holy\s+week|easter|thanksgiving"
    r"|fourth\s+of",
    _ENGLISH,
)
#: Words before "new year" that make it a year, not the holiday ("a new year of school").
_NOT_THE_NEW_YEAR = re.compile(r"\b(?:a|another|each|every|chinese|lunar|jewish|persian|islamic|hindu)\s+$", _ENGLISH)
#: Each holiday's days: fixed ones as (month, first day, last day); the year given is the
#: year of the holiday's main day (New Year: of 1 January).
_FIXED_HOLIDAYS: dict[str, tuple[tuple[int, int, int], ...]] = {
    "christmas eve": ((12, 24, 24),),
    "christmas day": ((12, 25, 25),),
    "christmas": ((12, 24, 26),),
    "boxing day": ((12, 26, 26),),
    "new year's eve": ((12, 31, 31),),
    "new year's day": ((1, 1, 1),),
    "new year": ((12, 31, 31), (1, 1, 1)),
    "valentine's day": ((2, 14, 14),),
    "halloween": ((10, 31, 31),),
    "st patrick's day": ((3, 17, 17),),
    "fourth of july": ((7, 4, 4),),
}
#: Movable holidays as days from Easter Sunday, or from the fourth Thursday of November,
#: and the yearless days they can fall on (a question naming one without a year).
_EASTER_HOLIDAYS = {
    "good friday": (-2, -2), "easter sunday": (0, 0), "easter monday": (1, 1), "easter": (-2, 1),
    "holy week": (-7, 0),  # Palm Sunday to Easter Sunday
}
#: Easter Sunday falls from 22 March to 25 April: a movable holiday without a year falls on
#: the days from its offset from the earliest to its offset from the latest.
_EARLIEST_EASTER, _LATEST_EASTER = date(2000, 3, 22), date(2000, 4, 25)
_THANKSGIVING_HOLIDAYS = {"thanksgiving day": (0, 0), "thanksgiving": (0, 3)}
_THANKSGIVING_DAYS = {"thanksgiving day": ((11, 22, 28),), "thanksgiving": ((11, 22, 30), (12, 1, 1))}


def _holiday_name(written: str) -> str:
    """A ``_HOLIDAY`` match's holiday as a key of the tables above."""
    name = written.lower().replace("’", "'").replace("x-mas", "christmas").replace("xmas", "christmas")
    name = " ".join(name.split())
    name = name.removeprefix("the ")
    if name.startswith("new year"):
        rest = re.sub(r"^'?s", "", name.removeprefix("new year")).strip()  # "new year's eve": "eve"
        return f"new year's {rest}" if rest else "new year"
    if name.startswith("valentine"):
        return "valentine's day"
    if name.startswith(("st", "saint")):
        return "st patrick's day"
    if name.startswith("hallowe"):
        return "halloween"
    if name == "easter weekend":
        return "easter"
    return name


def _easter_sunday(year: int) -> date:
    """Easter Sunday of ``year`` in the Gregorian calendar (the anonymous computus:
    Meeus, Jones and Butcher)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (b - (b + 8) // 25 + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    weekday_shift = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * weekday_shift) // 451
    month, day_of_month = divmod(h + weekday_shift - 7 * m + 114, 31)
    return date(year, month, day_of_month + 1)


def _holiday_range(name: str, year: int) -> DayRange:
    """The days of holiday ``name`` (a key of the tables above) whose main day is in ``year``."""
    if name in _EASTER_HOLIDAYS:
        sunday, (first, last) = _easter_sunday(year), _EASTER_HOLIDAYS[name]
        return DayRange(sunday + timedelta(days=first), sunday + timedelta(days=last))
    if name in _THANKSGIVING_HOLIDAYS:
        first_of_november = date(year, 11, 1)
        thursday = first_of_november + timedelta(days=(3 - first_of_november.weekday()) % 7 + 21)
        first, last = _THANKSGIVING_HOLIDAYS[name]
        return DayRange(thursday + timedelta(days=first), thursday + timedelta(days=last))
    days = _FIXED_HOLIDAYS[name]
    (m1, d1, _), (m2, _, d2) = days[0], days[-1]
    return DayRange(date(year - (m1 > m2), m1, d1), date(year, m2, d2))


def _holiday_yearless(name: str) -> tuple[tuple[int, int, int], ...]:
    """The days a holiday named without a year can fall on, in any year."""
    if name in _EASTER_HOLIDAYS:
        first, last = _EASTER_HOLIDAYS[name]
        a, b = _EARLIEST_EASTER + timedelta(days=first), _LATEST_EASTER + timedelta(days=last)
        if a.month == b.month:
            return ((a.month, a.day, b.day),)
        return (a.month, a.day, calendar.monthrange(2000, a.month)[1]), (b.month, 1, b.day)
    if name in _THANKSGIVING_DAYS:
        return _THANKSGIVING_DAYS[name]
    return _FIXED_HOLIDAYS[name]


def _holiday(
    match: re.Match[str], anchor: date | None, *, yearless: bool
) -> DayRange | tuple[tuple[int, int, int], ...] | None:
    """The days a ``_HOLIDAY`` match names: that year's with a year; with last / next, the
    last one ended before the anchor or the next begun after it; else, in an entry, the one
    its sentence's tense names (:func:`_by_tense`), and in a question every year's."""
    year = match.group("hy")
    lead = (match.group("hlead") or "").lower()
    return _holiday_named(_holiday_name(match.group("holiday")), match, int(year) if year else None, lead, anchor,
                          yearless=yearless)


def _holiday_named(
    name: str, match: re.Match[str], year: int | None, lead: str, anchor: date | None, *, yearless: bool
) -> DayRange | tuple[tuple[int, int, int], ...] | None:
    """:func:`_holiday`'s reading of holiday ``name`` (a key of the tables above), written
    with ``year`` or ``lead`` (last, past, next, or ``""``) in any language."""
    if year is not None:
        return _holiday_range(name, year)
    if lead in ("last", "past", "next") or (anchor is not None and not yearless):
        if anchor is None:
            return None
        around = [_holiday_range(name, year) for year in range(anchor.year - 1, anchor.year + 3)]
        if lead in ("last", "past"):
            return max((r for r in around if r.last < anchor), default=None)
        if lead == "next":
            return min((r for r in around if r.first > anchor), default=None)
        # "Valentine's was lovely" said in January: the last one.
        return _by_tense(match, anchor, around)
    return _holiday_yearless(name)


def _month_range(year: int, month: int) -> DayRange:
    return DayRange(date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1]))


def _add_months(year: int, month: int, delta: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + delta
    return index // 12, index % 12 + 1


def _season_range(year: int, first_month: int) -> DayRange:
    start = date(year, first_month, 1)
    end_year, end_month = _add_months(year, first_month, 2)
    return DayRange(start, _month_range(end_year, end_month).last)


def _week_of(day: date) -> DayRange:
    monday = day - timedelta(days=day.weekday())
    return DayRange(monday, monday + timedelta(days=6))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _nearest_year(anchor: date, month: int, day: int | None) -> int:
    """The year in which (month, day) lies closest to ``anchor``, the past winning ties.
    Four years either side: 29 February said two years after a leap year has none nearer."""
    best: tuple[int, int] | None = None
    for year in range(anchor.year - 4, anchor.year + 5):
        target = _safe_date(year, month, day or 15)
        if target is None:
            continue
        distance = abs((target - anchor).days) + (0 if target <= anchor else 1)
        if best is None or distance < best[0]:
            best = (distance, year)
    return best[1] if best else anchor.year


def _year_by_tense(match: re.Match[str], anchor: date, month: int, day: int | None) -> int:
    """The year of ``month`` (and ``day``) an English ``match`` names, said at ``anchor``:
    as :func:`_by_tense` chooses among those years' ("I went to Paris in August", said in
    March: last August; "I'll fly to Rome on 20 Dec": this December); without a tense, the
    nearest (:func:`_nearest_year`)."""
    past, future = _tense(match)
    if past == future:
        return _nearest_year(anchor, month, day)
    around = [
        r
        for year in range(anchor.year - 4, anchor.year + 5)  # 29 February: one in four
        if isinstance(r := _day_or_month(year, month, day, anchor, yearless=False), DayRange)
    ]
    return _by_tense(match, anchor, around).first.year


def _number(text: str | None) -> int:
    if text is None:
        return 1
    text = text.lower()
    return int(text) if text.isdigit() else _NUMBERS.get(text, 1)


def _shifted(base: DayRange, unit: str, count: int, direction: str) -> DayRange:
    """``count`` ``unit``s before or after ``base``: the range of that unit."""
    sign = -1 if direction == "before" else 1
    unit = unit.lower()
    pivot = base.first if sign < 0 else base.last
    if unit == "day":
        d = pivot + timedelta(days=sign * count)
        return DayRange(d, d)
    if unit in ("week", "weekend"):
        # "the week before X": the seven days before it, not a calendar week.
        if sign < 0:
            return DayRange(pivot - timedelta(days=7 * count), pivot - timedelta(days=7 * (count - 1) + 1))
        return DayRange(pivot + timedelta(days=7 * (count - 1) + 1), pivot + timedelta(days=7 * count))
    if unit == "month":
        y, m = _add_months(pivot.year, pivot.month, sign * count)
        return _month_range(y, m)
    return DayRange(date(pivot.year + sign * count, 1, 1), date(pivot.year + sign * count, 12, 31))


def _shifted_yearless(
    value: tuple[int, int, int], unit: str, count: int, direction: str
) -> list[tuple[int, int, int]]:
    """:func:`_shifted` of days named without a year, (month, first, last): the same days in
    any year, as (month, first, last) for each month they touch. Worked out in a leap year
    and a common one ("the day before 1 March" is 29 or 28 February). A year's shift of
    them names no particular days (every year's): none."""
    if unit == "year":
        return []
    month, first, last = value
    days: list[tuple[int, int, int]] = []
    for year in (2000, 2001):
        days_in_month = calendar.monthrange(year, month)[1]
        if first > days_in_month:  # 29 February of a common year
            continue
        base = DayRange(date(year, month, first), date(year, month, min(last, days_in_month)))
        shifted = _shifted(base, unit, count, direction)
        day = shifted.first
        while day <= shifted.last:
            end = min(_month_range(day.year, day.month).last, shifted.last)
            days.append((day.month, day.day, end.day))
            day = end + timedelta(days=1)
    return list(dict.fromkeys(days))


class _Found:
    """Matches collected over one text, keeping the first match of overlapping spans.

    The spans kept never overlap, so ordered by (start, end) their ends ascend too: the
    kept span that ends last among those starting before a new span's end is the one
    beside it, and whether the new span is free is one search and one comparison, not one
    per match (a text of a million characters holds tens of thousands: 12 s quadratic)."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int, DayRange | tuple[int, int, int]]] = []
        self._spans: list[tuple[int, int]] = []  # the kept (start, end), ordered

    def free(self, start: int, end: int) -> bool:
        before = bisect.bisect_left(self._spans, end, key=lambda span: span[0])  # spans starting before end
        return before == 0 or self._spans[before - 1][1] <= start

    def add(self, start: int, end: int, value: DayRange | tuple[int, int, int]) -> None:
        self.add_all(start, end, [value])

    def replace(self, ranges: list[tuple[int, int, DayRange | tuple[int, int, int]]]) -> None:
        """Keep these readings instead (non-overlapping spans: readings joined after the scan)."""
        self.ranges = ranges
        self._spans = sorted({(start, end) for start, end, _ in ranges})

    def by_span(self) -> dict[tuple[int, int], list[DayRange | tuple[int, int, int]]]:
        """The readings kept, by their (start, end) (a span may hold several)."""
        readings: dict[tuple[int, int], list[DayRange | tuple[int, int, int]]] = {}
        for start, end, value in self.ranges:
            readings.setdefault((start, end), []).append(value)
        return readings

    def add_all(self, start: int, end: int, values: Sequence[DayRange | tuple[int, int, int]]) -> None:
        """Several values of one span (days without a year on both sides of a month's end)."""
        if values and self.free(start, end):
            self.ranges.extend((start, end, value) for value in values)
            bisect.insort(self._spans, (start, end))


def _absolute(
    match: re.Match[str], anchor: date | None, *, yearless: bool
) -> DayRange | tuple[int, int, int] | None:
    g = match.groupdict()
    if g["y1"] or g["y2"]:
        y = int(g["y1"] or g["y2"])
        m = _MONTH_NAMES[(g["m1"] or g["m2"]).lower().rstrip(".")]
        day = _safe_date(y, m, int(g["d1"] or g["d2"]))
        return DayRange(day, day) if day else None
    if g["y3"]:
        day = _safe_date(int(g["y3"]), int(g["m3"]), int(g["d3"]))
        return DayRange(day, day) if day else None
    if g["y4"]:
        day = _safe_date(int(g["y4"]), int(g["m4"]), int(g["d4"]))
        return DayRange(day, day) if day else None
    if g["y5"]:
        a, b = int(g["a5"]), int(g["b5"])
        month, dom = (b, a) if a > 12 else (a, b)
        day = _safe_date(int(g["y5"]), month, dom) if month <= 12 else None
        return DayRange(day, day) if day else None
    if g["y6"]:
        return _month_range(int(g["y6"]), _MONTH_NAMES[g["m6"].lower().rstrip(".")])
    if g["y7"]:
        return _season_range(int(g["y7"]), _SEASONS[g["season7"].lower()])
    if g["m8"] or g["m9"]:
        month = _MONTH_NAMES[(g["m8"] or g["m9"]).lower().rstrip(".")]
        dom = int(g["d8"] or g["d9"])
        if _safe_date(2000, month, dom) is None:  # 2000 is a leap year: 29 Feb is a day
            return None
        if yearless or anchor is None:
            return (month, dom, dom)
        day = _safe_date(_year_by_tense(match, anchor, month, dom), month, dom)
        return DayRange(day, day) if day else None
    if g["y10"]:
        y = int(g["y10"])
        return DayRange(date(y, 1, 1), date(y, 12, 31))
    return None


#: The groups of a relative pattern that name a day by its distance from the anchor.
_NAMED_DAYS = (("today", 0), ("yesterday", -1), ("before_yesterday", -2), ("tomorrow", 1), ("after_tomorrow", 2))


def _named_day(groups: Mapping[str, str | None], anchor: date) -> DayRange | None:
    """The days a relative match's today / yesterday / ... group names, or its "the other
    day" group (the week before the anchor) or "the other week" group, or ``None``."""
    for name, shift in _NAMED_DAYS:
        if groups.get(name):
            d = anchor + timedelta(days=shift)
            return DayRange(d, d)
    if groups.get("otherday"):
        return DayRange(anchor - timedelta(days=7), anchor - timedelta(days=1))
    if groups.get("otherweek"):  # one to three weeks back
        return DayRange(anchor - timedelta(days=21), anchor - timedelta(days=7))
    return None


#: Counts no one number says: the units they span ("a few weeks ago": two to four weeks back).
_VAGUE_COUNTS = {"few": (2, 4), "a few": (2, 4), "several": (2, 6)}


def _relative(match: re.Match[str], now: datetime, *, in_query: bool = False) -> DayRange | tuple[DayRange, ...] | None:
    """The days a ``_RELATIVE`` match names, resolved against ``anchor``. ``in_query``: a
    weekday or the weekend without last / next names a time only in a sentence whose tense
    says which ("what did we do on Saturday?"; "what does Ana do on the weekend?" asks
    about a habit, and a time would weigh down every other entry)."""
    anchor = now.date()
    g = match.groupdict()
    if (day := _named_day(g, anchor)) is not None:
        return day
    if g["clock_unit"]:  # the day of the moment that long before ``now``
        written = g["clock_n"].lower()
        minutes = (30 if written.startswith("half") else _number(written)) * (
            60 if g["clock_unit"].lower().startswith("h") and not written.startswith("half") else 1
        )
        moment = (now - timedelta(minutes=minutes)).date()
        return DayRange(moment, moment)
    if g["unit"] and not g["from_day"]:  # N units ago
        written = " ".join(g["n"].lower().split())
        if written in _VAGUE_COUNTS:
            # "a few weeks ago", "several months back": no one count, the units of a span.
            unit, _ = _in_weeks(_as_written_in_full(g["unit"]), 1)
            low, high = _VAGUE_COUNTS[written]
            nearest, farthest = (_ago(anchor, unit, n) for n in (low, high))
            return DayRange(farthest.first, nearest.last)
        unit, n = _in_weeks(_as_written_in_full(g["unit"]), _number(g["n"]))
        return _ago(anchor, unit, n)
    if g["rolling_unit"]:
        unit, n = _in_weeks(_as_written_in_full(g["rolling_unit"]), _number(g["rolling_n"]))
        return DayRange(anchor - timedelta(days=n * _DAYS_IN[unit]), anchor)
    if g["before_last"]:
        return _period(anchor, _as_written_in_full(g["before_last"]), -2)
    if g["after_next"]:
        return _period(anchor, _as_written_in_full(g["after_next"]), 2)
    if g["from_day"] or g["in_unit"]:
        if g["in_unit"]:
            past, future = _tense(match)
            if past or not (future or _progressive(match)):
                return None
        count, written_unit = (g["n"], g["unit"]) if g["from_day"] else (g["in_n"], g["in_unit"])
        unit, n = _in_weeks(_as_written_in_full(written_unit), _number(count))
        start = anchor + timedelta(days=1) if (g["from_day"] or "").lower() in ("tomorrow", "tmrw") else anchor
        if unit == "day":
            return DayRange(start + timedelta(days=n), start + timedelta(days=n))
        return _shifted(DayRange(start, start), unit, n, "after")
    for group, what in (
        ("either_weekend", "weekend"),
        ("either_day", g["either_day"]),
        ("either_day_part", g["either_day_part"]),
        ("bare_day", g["bare_day"]),
    ):
        if g[group]:
            return _either_side(match, anchor, _as_written_in_full(what), need_tense=in_query or group == "bare_day")
    if g["earlier"]:
        period = g["period"].lower()
        if period == "week":
            return DayRange(_week_of(anchor).first, anchor)
        if period == "month":
            return DayRange(anchor.replace(day=1), anchor)
        return DayRange(date(anchor.year, 1, 1), anchor)
    rel, what = " ".join(g["rel"].lower().split()), _as_written_in_full(g["what"])
    step = {"last": -1, "past": -1, "previous": -1, "this": 0, "next": 1}.get(rel, 1)
    if rel == "this coming" and what == "weekend" and anchor.weekday() < 5:
        step = 0  # the coming weekend is this week's
    if rel == "this" and what == "weekend" and anchor.weekday() < 5 and _tense(match) == (True, False):
        step = -1  # "This weekend was amazing" said on a Monday: the one just gone
    return _period(anchor, what, step, rolling=rel == "past")


#: Days in each unit of a rolling span ("the past two weeks"): about a month, about a year.
_DAYS_IN = {"day": 1, "week": 7, "weekend": 7, "month": 30, "year": 365}


def _in_weeks(unit: str, count: int) -> tuple[str, int]:
    """A fortnight as two weeks; any other unit as it is."""
    return ("week", 2 * count) if unit == "fortnight" else (unit, count)


#: Words that put a sentence in the future ("we'll go on Friday", "can't wait for the
#: weekend") or, unmistakably, in the past (irregular past forms: a regular "-ed" is often
#: an adjective, "I'm so excited for Saturday").
_FUTURE = re.compile(
    r"(?:['’]ll|\b(?:will|won['’]?t|shall|gonna|going\s+to|plan|plans|planning|can['’]?t\s+wait|looking\s+forward"
    r"|hope\s+to|hoping\s+to|next|tomorrow|tmrw|see\s+(?:you|ya)|cya))\b",
    _ENGLISH,
)
_PAST = re.compile(
    r"\b(?:was|were|went|had|did|got|saw|came|took|made|met|spent|ate|drove|flew|ran|won|lost|bought|felt"
    r"|found|left|told|gave|brought|caught|sent|began|ago|yesterday|yday"
    # A regular verb in the simple past after its subject ("I started", "we finally visited"),
    # a question's too ("what happened", "who called"); not "-eed" ("I need"), not after "am"
    # / "was" ("I'm excited": an adjective). Not the verbs that report speech ("said",
    # "heard", "thought"): "Mom said she's coming on Saturday" is no past Saturday.
    r"|(?:i|we|you|he|she|it|they|who|what|someone|somebody|anyone|anybody|everyone|everybody|nobody)"
    r"\s+(?:[a-z]+ly\s+|just\s+|also\s+|then\s+|else\s+)?[a-z]+[a-df-z]ed)\b",
    _ENGLISH,
)
_SENTENCE_END = re.compile(r"[.!?\n]")
#: The present progressive ("we're leaving", "my sister is coming", "I am starting"): the
#: future beside "in two weeks", but mostly the present beside a month or weekday ("I'm
#: reading the book I got in May"), so read only there (:func:`_relative`).
_PROGRESSIVE = re.compile(
    r"(?:['’](?:m|re|s)|\b(?:am|are|is))\s+(?:[a-z]+ly\s+|also\s+|just\s+)?[a-z]{2,}ing\b", _ENGLISH
)
#: Words in -ing after "is" that are adjectives ("it's amazing how much I learnt in two weeks").
_ING_ADJECTIVES = re.compile(
    r"\b(?:amazing|interesting|exciting|boring|relaxing|exhausting|surprising|annoying|confusing|tiring"
    r"|inspiring|thrilling|stunning|charming|refreshing|rewarding|challenging|overwhelming|frustrating"
    r"|encouraging|touching|loving|caring|willing|nothing|something|everything|anything)\b",
    _ENGLISH,
)


def _sentence(match: re.Match[str]) -> str:
    """The sentence of its text that holds ``match``."""
    text = match.string
    end_match = _SENTENCE_END.search(text, match.end())
    return text[_sentence_start(text, match.start()) : end_match.start() if end_match else len(text)]


def _sentence_start(text: str, before: int) -> int:
    """Where the sentence holding ``text[before]`` starts: after the last ``_SENTENCE_END``
    before it, else 0. Read backwards from ``before`` in windows that double: as long as the
    sentence, not the text before it (every time of a long text read from the text's start
    was quadratic: 2 s of a 600,000-character query's 14)."""
    width, low = 64, before
    while low > 0:
        low = max(0, low - width)
        last = max(text.rfind(end, low, before) for end in ".!?\n")
        if last >= 0:
            return last + 1
        width *= 2
    return 0


def _tense(match: re.Match[str]) -> tuple[bool, bool]:
    """Whether the sentence holding ``match`` reads as past, and whether as future
    (``_PAST``, ``_FUTURE``)."""
    sentence = _sentence(match)
    return _PAST.search(sentence) is not None, _FUTURE.search(sentence) is not None


def _progressive(match: re.Match[str]) -> bool:
    """Whether the sentence holding ``match`` is in the present progressive (``_PROGRESSIVE``,
    its verb no adjective)."""
    return any(
        not _ING_ADJECTIVES.search(found.group()) for found in _PROGRESSIVE.finditer(_sentence(match))
    )


def _by_tense(match: re.Match[str], anchor: date, around: Sequence[DayRange]) -> DayRange:
    """Which of ``around`` (the same holiday or season in consecutive years, in order, the
    anchor's among them) an entry's ``match`` names: the last one begun by the anchor when
    its sentence is in the past, the first not ended when it is in the future, else the one
    holding the anchor or nearest it (the past winning ties)."""
    past, future = _tense(match)
    begun = [r for r in around if r.first <= anchor]
    if past and not future and begun:
        return max(begun)
    not_ended = [r for r in around if r.last >= anchor]
    if future and not past and not_ended:
        return min(not_ended)

    def distance(r: DayRange) -> tuple[int, bool]:
        if r.first <= anchor <= r.last:
            return 0, False
        return (anchor - r.last).days if r.last < anchor else (r.first - anchor).days, r.first > anchor

    return min(around, key=distance)


def _either_side(
    match: re.Match[str], anchor: date, what: str, *, need_tense: bool = False
) -> DayRange | tuple[DayRange, ...] | None:
    """A weekday or the weekend named without last / next ("on Friday", "over the weekend",
    "Saturday night"): the one before the anchor when its sentence is in the past, the one
    after when it is in the future, else both (a wrong guess would lose the day meant; a
    second day only adds one). The weekend said on a weekend is that one. ``need_tense``:
    ``None`` unless the sentence's tense says which."""
    past, future = _tense(match)
    if need_tense and past == future:
        return None
    if what == "weekend" and anchor.weekday() >= 5:
        return _period(anchor, "weekend", 0)
    # (The coming weekend is this week's: "next weekend" is the one after it.)
    before, after = _period(anchor, what, -1), _period(anchor, what, 0 if what == "weekend" else 1)
    if past and not future:
        return before
    if future and not past:
        return after
    return before, after


def _period(anchor: date, what: str, step: int, *, rolling: bool = False) -> DayRange:
    """The week, weekend, month, year, season (``_SEASONS``' keys) or weekday
    (``_WEEKDAYS``' keys) ``step`` periods from the anchor's (-1 last, 0 this, 1 next).
    ``rolling`` ("the past week"): the days up to the anchor instead of a calendar period."""
    if what == "week":
        if rolling:
            return DayRange(anchor - timedelta(days=7), anchor)
        week = _week_of(anchor + timedelta(days=7 * step))
        return week
    if what == "weekend":
        week = _week_of(anchor + timedelta(days=7 * step))
        return DayRange(week.first + timedelta(days=5), week.last)
    if what == "month":
        if rolling:
            return DayRange(anchor - timedelta(days=30), anchor)
        y, m = _add_months(anchor.year, anchor.month, step)
        return _month_range(y, m)
    if what == "year":
        if rolling:
            return DayRange(anchor - timedelta(days=365), anchor)
        y = anchor.year + step
        return DayRange(date(y, 1, 1), date(y, 12, 31))
    if what in _SEASONS:
        first_month = _SEASONS[what]
        # The season of the anchor's year; a winter starts in December of the year before.
        this = _season_range(anchor.year - (1 if first_month == 12 and anchor.month < 12 else 0), first_month)
        if step == 0:
            return this
        if step < 0:  # the last one that has ended before the anchor
            return this if this.last < anchor else _season_range(this.first.year - 1, first_month)
        return this if this.first > anchor else _season_range(this.first.year + 1, first_month)
    weekday = _WEEKDAYS[what]
    if step < 0:  # last/past Friday: the most recent one before the anchor
        back = (anchor.weekday() - weekday) % 7 or 7
        d = anchor - timedelta(days=back)
    elif step == 0:  # this Friday: the one of the anchor's calendar week, as "this week" is
        d = _week_of(anchor).first + timedelta(days=weekday)
    else:
        ahead = (weekday - anchor.weekday()) % 7 or 7
        d = anchor + timedelta(days=ahead)
    return DayRange(d, d)


def _a_word_not_a_date(match: re.Match[str], text: str) -> bool:
    """Whether an ``_ABSOLUTE`` match is more likely words than a date: a lowercase "may" or
    "mar" beside a number without a year or a lead ("the top 10 may help"), a month before a
    bare number that counts the plural after it ("June 2 years ago"), or a year alone that
    counts the plural after it ("in 2000 games")."""
    month = match.group("m8") or match.group("m9")
    if month and month in _LOWERCASE_MONTH_WORDS:
        return not _DATE_LEAD.search(text, max(0, match.start() - 8), match.start())
    if match.group("d9") and match.group("d9").isdigit() and _COUNTED.match(text, match.end()) is not None:
        # "in June 2 years ago", "May 5 people come", "I asked Jan 3 times": the number counts.
        return True
    year = match.group("y10")
    if not year or _COUNTED.match(text, match.end()) is None:
        return False
    # A round number counts ("in 2000 games", "by 1800 votes"); a year of the last and this
    # century that is not round is a year whatever follows ("In 2019 prices went up").
    return not (len(year) == 4 and year[:2] in ("19", "20") and not year.endswith("00"))


# "the week of 15 May 2023", "the weekend of 6 May", "the first week of May 2023", "the last
# weekend of June", "the first half of 2023", "the second half of May": a part of the day's
# week or of the month or year that follows.
_PART_OF = re.compile(
    r"\b(?:the\s+)?(?:(?P<nth>first|1st|second|2nd|third|3rd|fourth|4th|last|final)\s+)?"
    r"(?P<part>week|wk|weekend|wkend|wknd|half)\s+of\s+$",
    _ENGLISH,
)
_NTH = {
    "first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4, "last": -1, "final": -1,
}


def _part_of(
    text: str, at: int, value: DayRange | tuple[int, int, int]
) -> tuple[int, DayRange | tuple[int, int, int]] | None:
    """Where a ``_PART_OF`` just before ``at`` starts, and the part of ``value`` it names:
    the calendar week (Monday to Sunday) or its weekend of a day; the nth week of a month
    (its days 1-7, 8-14, 15-21, 22-28; the last: its last seven) or its nth weekend (the nth
    Saturday and the Sunday after; without a year, its nth week). ``None`` when there is
    none, or it names no part of ``value`` (a year, a season, a day without a year)."""
    part = _PART_OF.search(text, max(0, at - 30), at)
    if part is None:
        return None
    if part.group("part").lower() == "half":
        half = _half_of(value, _NTH.get((part.group("nth") or "").lower()))
        return (part.start(), half) if half is not None else None
    weekend = _as_written_in_full(part.group("part")) == "weekend"
    nth = _NTH.get((part.group("nth") or "").lower())
    if isinstance(value, DayRange):
        if value.first == value.last and nth is None:
            week = _week_of(value.first)
            return part.start(), DayRange(week.first + timedelta(days=5), week.last) if weekend else week
        whole_month = value.first.day == 1 and value == _month_range(value.first.year, value.first.month)
        if not whole_month or nth is None:
            return None
        first, last = value.first, value.last
        if weekend:
            first_saturday = first + timedelta(days=(5 - first.weekday()) % 7)
            last_saturday = last - timedelta(days=(last.weekday() - 5) % 7)
            saturday = first_saturday + timedelta(days=7 * (nth - 1)) if nth > 0 else last_saturday
            return part.start(), DayRange(saturday, saturday + timedelta(days=1))
        if nth < 0:
            return part.start(), DayRange(last - timedelta(days=6), last)
        return part.start(), DayRange(first + timedelta(days=7 * (nth - 1)), first + timedelta(days=7 * nth - 1))
    month, a, b = value
    if (a, b) != (1, 31) or nth is None:
        return None
    days_in_month = calendar.monthrange(2000, month)[1]  # (a leap year: 29 February is a day)
    if nth < 0:
        return part.start(), (month, days_in_month - 6, days_in_month)
    return part.start(), (month, 7 * (nth - 1) + 1, 7 * nth)


def _half_of(value: DayRange | tuple[int, int, int], nth: int | None) -> DayRange | tuple[int, int, int] | None:
    """The first (``nth`` 1) or second (2 or -1, the last) half of a year (six months each)
    or of a month (days 1-15, 16 to its end), with or without a year; ``None`` for any other
    range or ``nth``."""
    if nth not in (1, 2, -1):
        return None
    second = nth != 1
    if not isinstance(value, DayRange):
        month, a, b = value
        return (month, 16 if second else 1, b if second else 15) if (a, b) == (1, 31) else None
    first, last = value.first, value.last
    if value == _month_range(first.year, first.month):
        return DayRange(first.replace(day=16), last) if second else DayRange(first, first.replace(day=15))
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return DayRange(date(first.year, 7, 1), last) if second else DayRange(first, date(first.year, 6, 30))
    return None


# "early May", "mid-May", "late 2023", "the end of May", "the beginning of next year", "in
# late summer": a third of the month, season or year that follows (:func:`_third_of`).
_THIRD_OF = re.compile(
    r"\b(?:(?P<third>early|mid|late)[\s-]+|(?:the\s+)?(?P<edge>beginning|start|middle|end)\s+of\s+(?:the\s+)?)$",
    _ENGLISH,
)
_THIRDS = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1, "late": 2, "end": 2}


def _third_before(text: str, at: int) -> tuple[int, int] | None:
    """Where a ``_THIRD_OF`` just before ``at`` starts, and which third it names (0, 1, 2)."""
    lead = _THIRD_OF.search(text, max(0, at - 24), at)
    if lead is None:
        return None
    return lead.start(), _THIRDS[(lead.group("third") or lead.group("edge")).lower()]


@overload
def _third_of(value: DayRange, nth: int) -> DayRange | None: ...


@overload
def _third_of(value: tuple[int, int, int], nth: int) -> tuple[int, int, int] | None: ...


def _third_of(value: DayRange | tuple[int, int, int], nth: int) -> DayRange | tuple[int, int, int] | None:
    """The ``nth`` third (0, 1, 2) of a month (days 1-10, 11-20, 21 to its end), a season
    (a month each) or a year (four months each), with or without a year; ``None`` for any
    other range (a day, a week: "the end of the week" is read as the week)."""
    if not isinstance(value, DayRange):
        month, a, b = value
        return (month, 10 * nth + 1, 10 * nth + 10 if nth < 2 else b) if (a, b) == (1, 31) else None
    first, last = value.first, value.last
    if first.day != 1 or (last + timedelta(days=1)).day != 1:
        return None  # (not whole months)
    months = (last.year - first.year) * 12 + last.month - first.month + 1
    if months == 1:
        end = last if nth == 2 else first.replace(day=10 * nth + 10)
        return DayRange(first.replace(day=10 * nth + 1), end)
    if months in (3, 12):
        step = months // 3
        y, m = _add_months(first.year, first.month, step * nth)
        y_end, m_end = _add_months(y, m, step - 1)
        return DayRange(date(y, m, 1), _month_range(y_end, m_end).last)
    return None


def _add_third(
    found: _Found, match: re.Match[str], at: int, value: DayRange | tuple[int, int, int]
) -> bool:
    """Add ``match``'s ``value`` narrowed to the third that a ``_THIRD_OF`` just before
    ``at`` (where the month, season or year is written) names, its span widened to hold
    those words; whether there was one."""
    third = _third_before(match.string, at)
    if third is None or (narrowed := _third_of(value, third[1])) is None:
        return False
    found.add(min(third[0], match.start()), match.end(), narrowed)
    return True


def _add_absolute(found: _Found, match: re.Match[str], text: str, anchor: date | None, *, yearless: bool) -> None:
    """Add an ``_ABSOLUTE`` match's reading, shifted by a ``_SHIFT`` just before it."""
    if _a_word_not_a_date(match, text):
        return
    value = _absolute(match, anchor, yearless=yearless)
    if value is None:
        return
    start = match.start()
    lead = match.group("lead10")
    # ("the first half of 2023": a year's "of" is inside its match, as its lead.)
    part_at = match.start("y10") if lead and lead.lower() == "of" else start
    if (part := _part_of(text, part_at, value)) is not None:
        found.add(min(part[0], start), match.end(), part[1])
        return
    # "early May 2023", "the end of 2022", "mid-2023": the words before the month or year
    # (for a year alone they are inside the match: its "of" or "early" read as its lead).
    within = match.group("third10") or (lead and lead.lower() == "of")
    if _add_third(found, match, match.start("y10") if within else start, value):
        return
    # "the year before 2022": the year's own "before" is the shift's direction.
    shift_at = match.start("y10") if lead and lead.lower() in ("before", "after") else start
    shift = _SHIFT.search(text, max(0, shift_at - 40), shift_at)
    if shift is None:
        if shift_at == start:  # (else "before 2020" alone: the years before it, no range of days)
            found.add(start, match.end(), value)
        return
    found.add_all(shift.start(), match.end(), _shifted_by(shift, [value]))


def _shifted_by(
    shift: re.Match[str], values: Sequence[DayRange | tuple[int, int, int]]
) -> list[DayRange | tuple[int, int, int]]:
    """``values`` (day ranges, or days without a year) moved as a ``_SHIFT`` match says ("the
    week before ..."), without repeats."""
    unit, count = _in_weeks(_as_written_in_full(shift.group("unit")), _number(shift.group("n")))
    direction = shift.group("dir").lower()
    moved: list[DayRange | tuple[int, int, int]] = []
    for value in values:
        if isinstance(value, DayRange):
            moved.append(_shifted(value, unit, count, direction))
        else:
            moved.extend(_shifted_yearless(value, unit, count, direction))
    return list(dict.fromkeys(moved))


def _add_holiday(found: _Found, match: re.Match[str], text: str, anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_HOLIDAY`` match's reading, shifted by a ``_SHIFT`` just before it ("the day
    after Christmas")."""
    start = match.start()
    if match.group("holiday").lower().startswith("new") and _NOT_THE_NEW_YEAR.search(text, max(0, start - 12), start):
        return
    value = _holiday(match, anchor, yearless=yearless)
    if value is None:
        return
    values: Sequence[DayRange | tuple[int, int, int]] = [value] if isinstance(value, DayRange) else value
    shift = None if match.group("hlead") else _SHIFT.search(text, max(0, start - 40), start)
    if shift is None:
        found.add_all(start, match.end(), values)
    else:
        found.add_all(shift.start(), match.end(), _shifted_by(shift, values))


def _add_month_alone(found: _Found, match: re.Match[str], anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_MONTH_ALONE`` match's reading, unless a word or another match holds it."""
    if not found.free(match.start("month"), match.end("month")):
        return
    name = match.group("month")
    if name in _MONTH_WORDS and not match.group("lead"):
        return
    month = _MONTH_NAMES[name.lower().rstrip(".")]
    lead = (match.group("lead") or "").split()
    step = {"last": -1, "past": -1, "next": 1}.get(lead[0].lower(), 0) if lead else 0
    value: DayRange | tuple[int, int, int]
    if (yearless or anchor is None) and not step:
        value = (month, 1, 31)
    elif anchor is None:
        return
    else:
        year = _year_by_tense(match, anchor, month, None) if not step else _nearest_year(anchor, month, None)
        # "last May": the last one that has ended ("last May" said in May is a year back, as
        # "last summer" said in July is); "next May": the next one to begin.
        while step < 0 and _month_range(year, month).last >= anchor:
            year -= 1
        while step > 0 and date(year, month, 1) <= anchor:
            year += 1
        value = _month_range(year, month)
    # "the last week of April": the part ends with the lead "of".
    if lead == ["of"] and (part := _part_of(match.string, match.start("month"), value)) is not None:
        found.add(part[0], match.end(), part[1])
        return
    # "in early May", "mid-May", "the end of May": a third of it.
    if _add_third(found, match, match.start("month"), value):
        return
    found.add(match.start(), match.end(), value)


# A season named alone after what introduces a time ("in the summer", "during winter", "over
# the summer", "in the fall"; "fall" only after "the": "in fall" is rarely the season said
# so, "I fall" never). With a year, "last" or "this" it is read by _ABSOLUTE or _RELATIVE.
# "in late summer", "the end of the summer", "in early fall": a third of it (a month).
_SEASON_ALONE = re.compile(
    r"\b(?:(?:in|during|over|through|throughout|all)\s+|(?:beginning|start|middle|end)\s+of\s+)"
    r"(?:(?:the\s+)?(?:(?:early|mid|late)[\s-]+)?(?P<season>spring|summer|autumn|winter)"
    r"|the\s+(?:(?:early|mid|late)[\s-]+)?(?P<fall>fall)|(?:early|mid|late)[\s-]+(?P<third_fall>fall))"
    r"\b(?!\s*(?:,\s*)?(?:of\s+)?\d{4}\b)",
    _ENGLISH,
)

_SEASON_WORDS = re.compile(r"spring|summer|autumn|fall|winter", _ENGLISH)


def _add_season_alone(found: _Found, match: re.Match[str], anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_SEASON_ALONE`` match's reading: in a question its months of any year; in an
    entry the one its sentence's tense names (:func:`_by_tense`)."""
    season = next(g for g in ("season", "fall", "third_fall") if match.group(g))
    first_month = _SEASONS[match.group(season).lower()]
    third = _third_before(match.string, match.start(season))
    start = match.start() if third is None else min(match.start(), third[0])
    if yearless or anchor is None:
        months = [(first_month + i - 1) % 12 + 1 for i in range(3)]
        if third is not None:
            months = months[third[1] : third[1] + 1]
        found.add_all(start, match.end(), [(m, 1, calendar.monthrange(2000, m)[1]) for m in months])
        return
    around = [_season_range(year, first_month) for year in range(anchor.year - 2, anchor.year + 2)]
    if third is not None:  # ("in late summer" said in June, in the past: last year's August)
        around = [_third_of(season, third[1]) or season for season in around]
    found.add(start, match.end(), _by_tense(match, anchor, around))


# "on the 15th" said without a month, before a pause or a word that starts the rest of the
# sentence ("on the 15th we went out"), not before a noun ("on the 3rd floor", "on the 2nd
# try") nor a month ("on the 15th of June" is a date, read by _ABSOLUTE).
_DAY_OF_MONTH = re.compile(
    rf"\bon\s+(?:(?P<weekday>{_WEEKDAY_WORDS})\s*,?\s+)?the\s+(?P<dom>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)\b"
    r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:and|but|so|we|i|he|she|they|you|it|at|in|for|when|then|too|again"
    r"|morning|afternoon|evening|night)\b)",
    _ENGLISH,
)


def _add_day_of_month(found: _Found, match: re.Match[str], anchor: date | None) -> None:
    """Add a ``_DAY_OF_MONTH``: that day of the anchor's month, the month before or the one
    after, as its sentence's tense says (:func:`_by_tense`: "What did we do on the 15th?" the
    last one); without an anchor (a question asked without ``as_of``), that day of any month."""
    dom = int(match.group("dom"))
    weekday = _WEEKDAYS[_as_written_in_full(match.group("weekday"))] if match.group("weekday") else None
    if anchor is None:
        if weekday is not None:
            return  # (which months' that weekday is depends on the year)
        months = [month for month in range(1, 13) if _safe_date(2000, month, dom) is not None]  # (2000: 29 Feb)
        found.add_all(match.start(), match.end(), [(month, dom, dom) for month in months])
        return
    # Two months either side: the 31st asked in May was in March (April has none), and said
    # in March in the past tense, the 30th was in January. With a weekday ("on Monday the
    # 5th"), the months within a year either side whose day it is: one to three a year.
    deltas = range(-2, 3) if weekday is None else range(-12, 13)
    days = [
        DayRange(day, day)
        for delta in deltas
        if (day := _safe_date(*_add_months(anchor.year, anchor.month, delta), dom)) is not None
        and (weekday is None or day.weekday() == weekday)
    ]
    if days:
        found.add(match.start(), match.end(), _by_tense(match, anchor, days))


# A day typed as two numbers without a year after "on", "by", "since", ...: "on 5/8", "since
# 12/3". Day and month may be either way round (5/8 is 8 May in most of the world, 5 August in
# the US): both when both can be (a wrong guess would lose the day meant; a second day only
# adds one). Not after other words: "1/2 cup", "3/4 of us", "24/7".
_DAY_SLASH_MONTH = re.compile(
    r"\b(?:on|by|since|until|till|from|before|after)\s+(?P<a>[12]\d|3[01]|0?[1-9])/(?P<b>[12]\d|3[01]|0?[1-9])\b(?![/\d])",
    _ENGLISH,
)


def _add_day_slash_month(found: _Found, match: re.Match[str], anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_DAY_SLASH_MONTH``: each reading of it that is a day (:func:`_day_or_month`),
    placed in a year by the sentence's tense in an entry (:func:`_year_by_tense`)."""
    a, b = int(match.group("a")), int(match.group("b"))
    days: list[DayRange | tuple[int, int, int]] = []
    for month, dom in dict.fromkeys(((a, b), (b, a))):
        if month > 12 or _safe_date(2000, month, dom) is None:  # (2000: 29 February is a day)
            continue
        year = None if yearless or anchor is None else _year_by_tense(match, anchor, month, dom)
        if (value := _day_or_month(year, month, dom, anchor, yearless=yearless)) is not None:
            days.append(value)
    found.add_all(match.start(), match.end(), days)


# "at the end of the month", "the beginning of the year" (no "this", "last" or "next"): a
# third of the month or year around the timestamp, as its sentence's tense says; "later this
# week / month / year": the days after it to the period's end.
_PART_OF_THE_PERIOD = re.compile(
    r"\b(?:the\s+)?(?P<edge>beginning|start|middle|end)\s+of\s+the\s+(?P<what>month|year)\b(?!\s*,?\s*\d)"
    r"|\blater\s+this\s+(?P<later>week|month|year)\b",
    _ENGLISH,
)


def _add_part_of_the_period(found: _Found, match: re.Match[str], anchor: date) -> None:
    """Add a ``_PART_OF_THE_PERIOD`` said at ``anchor``: the third of the month or year the
    sentence's tense names (:func:`_by_tense`), or the days from the one after the anchor to
    the end of its week, month or year."""
    if later := match.group("later"):
        period = _period(anchor, later.lower(), 0)
        if period.last > anchor:
            found.add(match.start(), match.end(), DayRange(anchor + timedelta(days=1), period.last))
        return
    nth = _THIRDS[match.group("edge").lower()]
    if match.group("what").lower() == "month":
        around = [_month_range(*_add_months(anchor.year, anchor.month, delta)) for delta in (-2, -1, 0, 1, 2)]
    else:
        around = [DayRange(date(year, 1, 1), date(year, 12, 31)) for year in range(anchor.year - 1, anchor.year + 2)]
    thirds = [third for period in around if (third := _third_of(period, nth)) is not None]
    found.add(match.start(), match.end(), _by_tense(match, anchor, thirds))


#: Around the reading of each expression: one that resolves past the calendar's ends
#: ("yesterday" said on 0001-01-01, "next year" in 9999, "the week before 1 January 1")
#: raises, and names no time; the text's other expressions still do.
_PAST_THE_CALENDAR = suppress(OverflowError, ValueError)


def _scan(text: str, now: datetime | None, *, yearless: bool = False, others: _Languages | None = None) -> _Found:
    """Every time expression of ``text``; relative ones only with ``now`` (the moment it was
    said or asked), whose day is the anchor. With ``yearless``, a month or day named without
    a year is kept as such (a query's reading) instead of being placed in the year nearest
    the anchor (an entry's reading)."""
    anchor = now.date() if now is not None else None
    if not text.isascii():
        text = text.translate(_READABLE)
    found = _Found()
    others = _other_languages(text) if others is None else others
    if others.grammars or others.dated:
        # A French, German, Italian or Portuguese text (it holds its markers) first: "am 3.
        # August 2023" is German's day, not English's "August 2023".
        _scan_word_grammars(found, text, anchor, yearless=yearless, grammars=others.grammars, dated=others.dated)
    for match in _DAY_SPAN.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_day_span(found, match, text, anchor, yearless=yearless)
    for match in _RANGE.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_range(found, match, anchor, yearless=yearless)
    if _HOLIDAY_WORDS.search(text):
        for match in _HOLIDAY.finditer(text):
            with _PAST_THE_CALENDAR:
                _add_holiday(found, match, text, anchor, yearless=yearless)
    for match in _ABSOLUTE.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_absolute(found, match, text, anchor, yearless=yearless)
    for match in _MONTH_ALONE.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_month_alone(found, match, anchor, yearless=yearless)
    for match in _MONTH_ALONE_TYPED.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_month_alone(found, match, anchor, yearless=yearless)  # (one read above is kept)
    if _SEASON_WORDS.search(text):
        for match in _SEASON_ALONE.finditer(text):
            with _PAST_THE_CALENDAR:
                _add_season_alone(found, match, anchor, yearless=yearless)
    for match in _DAY_OF_MONTH.finditer(text):
        with _PAST_THE_CALENDAR:
            _add_day_of_month(found, match, anchor)
    if "/" in text:
        for match in _DAY_SLASH_MONTH.finditer(text):
            with _PAST_THE_CALENDAR:
                _add_day_slash_month(found, match, anchor, yearless=yearless)
    if now is not None and anchor is not None:  # (one test: the anchor is now's day; both for mypy)
        for match in _PART_OF_THE_PERIOD.finditer(text):
            with _PAST_THE_CALENDAR:
                _add_part_of_the_period(found, match, anchor)
        for match in _RELATIVE.finditer(text):
            with _PAST_THE_CALENDAR:
                value = _relative(match, now, in_query=yearless)
                # "early next year", "the end of last month", "late last summer"
                if (
                    isinstance(value, DayRange)
                    and match.group("rel")
                    and _add_third(found, match, match.start(), value)
                ):
                    continue
                if isinstance(value, tuple):
                    found.add_all(match.start(), match.end(), value)
                elif value is not None:
                    found.add(match.start(), match.end(), value)
    if others.cjk or others.spanish or others.hindi:
        _scan_other(found, text, anchor, yearless=yearless, languages=others)
    if yearless and found.ranges:
        _drop_open_bounds(found, text, others)
    if len(found.ranges) > 1:
        _join_day_to_day(found, text)
        _join_parts_to_their_year(found, text)
    return found


#: What makes a time one end of an open span in a question ("before May 2023", "after 3
#: May", "since Christmas 2023", "until 5/8", "avant le 3 mai", "seit Mai", "desde mayo",
#: "prima di maggio", "depois de maio", "2023年5月以前", "मई 2023 के बाद"; not "by", a
#: deadline: "by the end of May"): the words before it (an article may follow them), a lead
#: inside its own match, or the words after it.
_OPEN_LEAD_WORDS = (
    r"before|after|since|until|till|prior\s+to"  # English
    r"|avant|apr[èe]s|depuis|jusqu['’](?:à|a|au|en)?"  # French
    r"|vor|nach|seit|bis(?:\s+(?:zum|zur))?"  # German ("vor zwei Wochen" is relative: kept)
    r"|prima\s+d(?:i|el|ella|ello|ell['’])|dopo|da|dal|dalla|dall['’]|fino\s+a(?:l|lla|ll['’])?"  # Italian
    r"|antes\s+d(?:e|el|o|a)|despu[ée]s\s+del?|depois\s+d(?:e|o|a)|desde|hasta|até(?:\s+(?:ao|à|a))?"  # es, pt
)
_OPEN_LEAD_BEFORE = re.compile(
    rf"(?<!\w)(?:{_OPEN_LEAD_WORDS})\s*(?:(?:the|le|la|l['’]|dem|den|der|el|il|lo|o|a)\s+)?$", re.IGNORECASE
)
_OPEN_LEAD_WITHIN = re.compile(rf"(?:{_OPEN_LEAD_WORDS})(?=\s)", re.IGNORECASE)
_OPEN_LEAD_AFTER = re.compile(
    r"\s*(?:之前|以前|之后|之後|以后|以後|以来|以來|以降|より前|より後|(?:से|के)\s+(?:पहले|पूर्व)|के\s+बाद)"
)
#: A relative time stays read after such a word ("since last week", "vor zwei Wochen").
_RELATIVE_START = re.compile(r"(?:last|this|next|past|previous)\s", _ENGLISH)


def _relative_at(text: str, start: int, others: _Languages) -> bool:
    """Whether a relative expression (one read against the anchor) starts at ``start``."""
    if _RELATIVE_START.match(text, start) or _RELATIVE.match(text, start):
        return True
    patterns = [g.relative for g in others.grammars]
    patterns += [p for wanted, p in ((others.cjk, _CJK_RELATIVE), (others.spanish, _ES_RELATIVE),
                                     (others.hindi, _HI_RELATIVE)) if wanted]
    return any(p.match(text, start) for p in patterns)


def _drop_open_bounds(found: _Found, text: str, others: _Languages) -> None:
    """A question's time after "before", "after", "since" or "until" (or their words in
    the other languages) names no time: the days before or after it are no range of days to
    favour, and the time itself is the one period the question leaves out. Not a relative
    time ("since last week": it is most of the days since), nor two times with such words
    between them ("since 3 May until 10 May", "desde mayo hasta julio": a closed span)."""
    by_span = found.by_span()
    spans = sorted(by_span)
    open_ = [
        span
        for span in spans
        if not _relative_at(text, span[0], others)
        and (
            _OPEN_LEAD_BEFORE.search(text, max(0, span[0] - 24), span[0])
            or _OPEN_LEAD_WITHIN.match(text, span[0])
            or _OPEN_LEAD_AFTER.match(text, span[1])
        )
    ]
    if not open_:
        return
    closed: set[tuple[int, int]] = set()
    for left, right in zip(open_, open_[1:], strict=False):
        gap = text[left[1] : right[0]]
        if not gap.strip(" ,") or _OPEN_LEAD_BEFORE.fullmatch(gap.strip(" ,") + " "):
            closed.update((left, right))
    dropped = set(open_) - closed
    if dropped:
        found.replace([(s, e, v) for (s, e), values in by_span.items() if (s, e) not in dropped for v in values])


# From one day to another of the same month, the month written once: "3-5 May 2023", "from
# the 3rd to the 5th of May", "May 3-5", "between May 3 and 10". ("and" only after
# "between": "on May 3 and 5" is two days.)
_DAY_TO = r"(?:\s*[-–]\s*|\s+(?P<{name}>to|till|until|through|thru|and)\s+)(?:the\s+)?"
_DAY_SPAN = re.compile(
    r"\b(?P<lead>(?:from|between)\s+(?:the\s+)?)?"
    rf"(?:{_d('a1')}{_DAY_TO.format(name='ato')}{_d('a2')}\s+(?:of\s+)?{_m('am')}"
    rf"|{_m('bm')}\s+(?:the\s+)?{_d('b1')}{_DAY_TO.format(name='bto')}{_d('b2')}(?![\d:]))"
    rf"(?:,?\s+(?:of\s+)?{_yw('y')})?\b(?!-)",
    _ENGLISH,
)


def _add_day_span(found: _Found, match: re.Match[str], text: str, anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_DAY_SPAN`` match: the days from the first to the last (the first before
    the last, both in the month). Without a year, in a question that month's days in any
    year; in an entry in the year the tense gives (:func:`_year_by_tense`)."""
    g = match.groupdict()
    if (g["ato"] or g["bto"] or "").lower() == "and" and not (g["lead"] or "").lower().startswith("between"):
        return
    written_month = g["am"] or g["bm"]
    if not g["lead"] and not g["y"] and written_month in _LOWERCASE_MONTH_WORDS:
        return  # "you may 3-5 ..." is no date
    if g["bm"] and not g["y"] and _COUNTED.match(text, match.end()) is not None:
        return  # "May 3-5 people": the numbers count
    month = _MONTH_NAMES[written_month.lower().rstrip(".")]
    first, last = int(g["a1"] or g["b1"]), int(g["a2"] or g["b2"])
    if first >= last or _safe_date(2000, month, last) is None:  # 2000 is a leap year
        return
    if g["y"]:
        year = int(g["y"])
    elif yearless or anchor is None:
        found.add(match.start(), match.end(), (month, first, last))
        return
    else:
        year = _year_by_tense(match, anchor, month, first)
    days = _safe_date(year, month, first), _safe_date(year, month, last)
    if days[0] is not None and days[1] is not None:
        found.add(match.start(), match.end(), DayRange(days[0], days[1]))


# What joins two days into the days from one to the other: "May 30 - June 2", "from 3 May
# 2023 to 10 May 2023", "2023-05-03 to 2023-05-10"; "and" only after "between".
_DAY_TO_DAY = re.compile(r"\s*(?:[-–]|to|till|until|through|thru)\s+(?:the\s+)?|\s*[-–]\s*", _ENGLISH)
_BETWEEN_AND = re.compile(r"\s+and\s+(?:the\s+)?", _ENGLISH)
_BETWEEN_BEFORE = re.compile(r"\bbetween\s+(?:the\s+)?$", _ENGLISH)
_A_YEAR_IN = re.compile(r"(?<!\d)\d{4}(?!\d)")
#: The longest span two days are joined across: a reading further apart is two days.
_LONGEST_DAY_TO_DAY = 366


def _one_day(value: DayRange | tuple[int, int, int], written_year: bool) -> tuple[int, int, int | None] | None:
    """(month, day, year or ``None``) of a reading that is one day; ``None`` if it is more.
    A day an entry placed in a year by the tense keeps no year unless one was written."""
    if isinstance(value, tuple):
        return (value[0], value[1], None) if value[1] == value[2] else None
    if value.first != value.last:
        return None
    return value.first.month, value.first.day, value.first.year if written_year else None


def _days_between(
    left: tuple[int, int, int | None], right: tuple[int, int, int | None], placed: DayRange | None
) -> list[DayRange | tuple[int, int, int]]:
    """The days from ``left`` to ``right`` (each (month, day, year or ``None``)): with a
    year on either side, one range (the side without it in the year that puts it before or
    after the other); without, as (month, first, last) of each month (a question's), or in
    the year an entry placed the first in (``placed``). Empty when they are out of order or
    too far apart."""
    (m1, d1, y1), (m2, d2, y2) = left, right
    if y1 is None and y2 is None and placed is not None:
        y1 = placed.first.year
    if y1 is None and y2 is None:
        if (m1, d1) >= (m2, d2) and m1 == m2:
            return []
        months = [(m1 + i - 1) % 12 + 1 for i in range((m2 - m1) % 12 + 1)]
        if len(months) == 1:
            return [(m1, d1, d2)]
        return [(m, d1 if i == 0 else 1, d2 if i == len(months) - 1 else 31) for i, m in enumerate(months)]
    if y1 is None:
        assert y2 is not None
        y1 = y2 if (m1, d1) <= (m2, d2) else y2 - 1
    if y2 is None:
        y2 = y1 if (m2, d2) >= (m1, d1) else y1 + 1
    first, last = _safe_date(y1, m1, d1), _safe_date(y2, m2, d2)
    if first is None or last is None or not 0 < (last - first).days <= _LONGEST_DAY_TO_DAY:
        return []
    return [DayRange(first, last)]


def _join_day_to_day(found: _Found, text: str) -> None:
    """Two days read apart but written as one span of days ("from May 30 to June 2",
    "between 3 May 2023 and 10 May 2023") are every day between: read apart they were the
    first and the last alone."""
    by_span = found.by_span()
    spans = sorted(by_span)
    joined: dict[tuple[int, int], list[DayRange | tuple[int, int, int]]] = {}
    used: set[tuple[int, int]] = set()
    for left, right in zip(spans, spans[1:], strict=False):
        if left in used or len(by_span[left]) != 1 or len(by_span[right]) != 1:
            continue
        if not (
            _DAY_TO_DAY.fullmatch(text, left[1], right[0])
            or (_BETWEEN_AND.fullmatch(text, left[1], right[0]) and _BETWEEN_BEFORE.search(text, 0, left[0]))
        ):
            continue
        (first_value,), (last_value,) = by_span[left], by_span[right]
        first = _one_day(first_value, _A_YEAR_IN.search(text, left[0], left[1]) is not None)
        last = _one_day(last_value, _A_YEAR_IN.search(text, right[0], right[1]) is not None)
        if first is None or last is None:
            continue
        placed = first_value if isinstance(first_value, DayRange) else None
        days = _days_between(first, last, placed)
        if days:
            joined[(left[0], right[1])] = days
            used.update((left, right))
    if not joined:
        return
    ranges = [(start, end, value) for (start, end), values in joined.items() for value in values]
    ranges += [(span[0], span[1], value) for span in spans if span not in used for value in by_span[span]]
    found.replace(sorted(ranges, key=lambda r: (r[0], r[1])))


# From one month or year to another: "between May and July 2023", "from March to June",
# "Jan-Mar 2023" (a dash between months only before a year), "from 2019 to 2021",
# "between 2019 and 2021", "2022-2023".
_RANGE_MONTH = _MONTH.replace("(?P<{name}>", "(?:")
_RANGE_TO = r"\s*(?:[-–]|to|and|till|until|through|thru)\s*"
_RANGE = re.compile(
    rf"\b(?:(?:from|between)\s+(?P<m1>{_RANGE_MONTH}){_RANGE_TO}(?P<m2>{_RANGE_MONTH})"
    rf"|(?P<m3>{_RANGE_MONTH})\s*[-–]\s*(?P<m4>{_RANGE_MONTH})(?=,?\s+(?:of\s+)?(?:1[89]|2[01])\d\d\b))"
    rf"(?:,?\s+(?:of\s+)?{_yw('y')})?\b"
    rf"|\b(?:from|between)\s+{_y('y1')}{_RANGE_TO}{_y('y2')}\b"
    rf"|\b{_y('y3')}\s*[-–]\s*{_y('y4')}\b",
    _ENGLISH,
)


def _add_range(found: _Found, match: re.Match[str], anchor: date | None, *, yearless: bool) -> None:
    """Add a ``_RANGE`` match: the days from the first month or year to the last. Months
    without a year: in a question every year's; in an entry the year the first month's
    tense gives (:func:`_year_by_tense`), the last month in the next year when it comes
    before the first ("from November to February")."""
    g = match.groupdict()
    first_year, last_year = g["y1"] or g["y3"], g["y2"] or g["y4"]
    if first_year:
        if int(first_year) <= int(last_year):
            found.add(match.start(), match.end(), DayRange(date(int(first_year), 1, 1), date(int(last_year), 12, 31)))
        return
    first, last = (_MONTH_NAMES[(g[k] or "").lower().rstrip(".")] for k in (("m1", "m2") if g["m1"] else ("m3", "m4")))
    months = [(first + i - 1) % 12 + 1 for i in range((last - first) % 12 + 1)]
    if g["y"]:
        year = int(g["y"])
    elif yearless or anchor is None:
        found.add_all(match.start(), match.end(), [(month, 1, 31) for month in months])
        return
    else:
        year = _year_by_tense(match, anchor, first, None)
    end_year = year if last >= first else year + 1
    found.add(match.start(), match.end(), DayRange(date(year, first, 1), _month_range(end_year, last).last))


# What may stand between a month, season or day and the year it is of: "January last year",
# "October of last year", "spring, last year", "last year in March".
_PART_YEAR_GAP = re.compile(r"\s*,?\s*(?:of\s+|in\s+)?", _ENGLISH)


def _whole_year(values: Sequence[DayRange | tuple[int, int, int]]) -> int | None:
    """The year ``values`` are when they are one whole calendar year ("last year", "in 2023")."""
    if len(values) != 1 or not isinstance(value := values[0], DayRange):
        return None
    first, last = value.first, value.last
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return first.year
    return None


def _in_year(value: DayRange | tuple[int, int, int], year: int) -> DayRange | None:
    """A month, season, third or day (``value``: placed in some year, or yearless) in ``year``;
    ``None`` for anything longer than a season, or a day ``year`` has not (29 February)."""
    if isinstance(value, tuple):
        month, first_day, last_day = value
        start = _safe_date(year, month, first_day)
        # (A yearless month is days 1-31: its last day is the month's.)
        end = date(year, month, min(last_day, _month_range(year, month).last.day))
        return DayRange(start, end) if start is not None else None
    if (value.last - value.first).days > 92:
        return None
    first = _safe_date(year, value.first.month, value.first.day)
    last = _safe_date(year + value.last.year - value.first.year, value.last.month, value.last.day)
    return DayRange(first, last) if first is not None and last is not None else None


def _join_parts_to_their_year(found: _Found, text: str) -> None:
    """A month, season or day written beside a whole year ("in January last year", "the
    summer of last year", "last year in March") is that part of that year: read apart they
    were every January (or the nearest) and all of the year."""
    by_span = found.by_span()
    spans = sorted(by_span)
    joined: dict[tuple[int, int], tuple[tuple[int, int], list[DayRange]]] = {}
    used: set[tuple[int, int]] = set()
    for left, right in zip(spans, spans[1:], strict=False):
        if left in used or right in used or not _PART_YEAR_GAP.fullmatch(text, left[1], right[0]):
            continue
        for part, year_span in ((left, right), (right, left)):
            year = _whole_year(by_span[year_span])
            if year is None or _whole_year(by_span[part]) is not None:
                continue
            maybe = [_in_year(value, year) for value in by_span[part]]
            placed = [p for p in maybe if p is not None]
            if placed and len(placed) == len(maybe):
                joined[part] = (year_span, placed)
                used.update((part, year_span))
                break
    if not joined:
        return
    ranges: list[tuple[int, int, DayRange | tuple[int, int, int]]] = []
    for span in spans:
        if span in joined:
            year_span, of_the_year = joined[span]
            start, end = min(span[0], year_span[0]), max(span[1], year_span[1])
            ranges.extend((start, end, value) for value in of_the_year)
        elif span not in used:
            ranges.extend((span[0], span[1], value) for value in by_span[span])
    found.replace(ranges)


# ---------------------------------------------------------------------------- other languages
#
# Chinese and Japanese (one grammar: they share the characters for dates), Spanish and
# Hindi. Each is scanned only when the text holds something that can start one of its
# expressions (_other_languages), after the English grammar, whose matches win where they
# overlap; on English text nothing here matches, so English readings are unchanged.
# French, German, Italian and Portuguese (a _WordGrammar each) are scanned only when the
# text also holds a word only that language writes (a marker), and *before* English: such
# a text is theirs ("am 3. August 2023" is German's day, not English's "August 2023").
#
# Digits are read in any script: full-width (２０２３年５月８日) and Devanagari (३ मई २०२३)
# digits are mapped to ASCII first, and so are spaces (a no-break space between "3" and
# "May"), for the English grammar's are ASCII: one character for one, so match offsets
# stay offsets into the original text (:func:`_scan`).

_READABLE = str.maketrans(
    {
        **{0xFF10 + i: str(i) for i in range(10)},
        **{0x0966 + i: str(i) for i in range(10)},
        **{code: " " for code in range(0x80, 0x3001) if chr(code).isspace()},
    }
)

_CJK_DIGIT = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5,
              "六": 6, "七": 7, "八": 8, "九": 9}


def _cjk_number(text: str) -> int | None:
    """``"3"``, ``"三"``, ``"十二"``, ``"二十一"``, ``"两"``; a few (几, 幾, 数, 數) is 3;
    ``"二〇二三"`` (digit by digit) is 2023."""
    if text.isdigit():
        return int(text)
    if text in ("几", "幾", "数", "數"):
        return 3
    if "十" not in text:
        value = 0
        for ch in text:
            if ch not in _CJK_DIGIT:
                return None
            value = value * 10 + _CJK_DIGIT[ch]
        return value
    tens, _, ones = text.partition("十")
    t = _CJK_DIGIT.get(tens, -1) if tens else 1
    o = _CJK_DIGIT.get(ones, -1) if ones else 0
    return None if t < 0 or o < 0 else t * 10 + o


_CJK_SMALL = r"(?:\d{1,2}|[一二三四五六七八九十]{1,3})"  # 1..31 in digits or numerals
_CJK_YEAR = r"(?:\d{4}|[〇零一二三四五六七八九]{4})"
_CJK_MONTH = r"(?:1[0-2]|0?[1-9]|十[一二]?|[一二三四五六七八九])"
# A relative year before a month: 去年5月, 今年の3月.
_CJK_REL_YEAR = {"去年": -1, "昨年": -1, "今年": 0, "明年": 1, "来年": 1, "來年": 1, "前年": -2, "一昨年": -2}
_CJK_ABSOLUTE = re.compile(
    rf"(?<![\d〇零一二三四五六七八九十])(?:"
    rf"(?P<y>{_CJK_YEAR})\s*年\s*(?:(?P<ym>{_CJK_MONTH})\s*月\s*(?:(?P<yd>{_CJK_SMALL})\s*[日号號])?)?"
    rf"|(?P<ry>一昨年|去年|昨年|今年|明年|来年|來年|前年)\s*の?\s*(?P<rm>{_CJK_MONTH})\s*月\s*(?:(?P<rd>{_CJK_SMALL})\s*[日号號])?"
    rf"|(?P<m>{_CJK_MONTH})\s*月\s*(?:(?P<d>{_CJK_SMALL})\s*[日号號])?"
    r")(?![個个かカヶケ间間])"
)
# Relative days and periods. Chinese and Japanese have no spaces, so a few lookbehinds keep
# common words that contain one of these out (以前天气 "the weather before", 聪明天才).
_CJK_DAYS = {
    "today": "今天|今日|今晚|今夜|今早|今朝|今儿",
    "yesterday": "昨天|昨日|昨晚|昨夜|昨儿",
    "before_yesterday": "(?<!以)前天|一昨日|おととい",
    "tomorrow": "(?<!聪)(?<!聰)明天|明日(?!香)|あした|あす",
    "after_tomorrow": "(?<!最)后天|明後日|あさって",
}
_CJK_PERIODS = {
    # (step, period): expressions
    (-1, "weekend"): "上个?周末|上個?週末|上个?星期的?周末|先週末",
    (0, "weekend"): "这个?周末|這個?週末|本周末|今週末",
    (1, "weekend"): "下个?周末|下個?週末|来週末|來週末",
    (-1, "week"): "上个?(?:周|星期|礼拜|禮拜)|上個?(?:週|星期|禮拜)|先週",
    (0, "week"): "这个?(?:周|星期|礼拜)|這個?(?:週|星期|禮拜)|本周|本週|今週",
    (1, "week"): "下个?(?:周|星期|礼拜)|下個?(?:週|星期|禮拜)|来週|來週",
    (-1, "month"): "上个月|上個月|先月",
    (0, "month"): "这个月|這個月|本月|今月",
    (1, "month"): "下个月|下個月|来月|來月",
    (-2, "year"): "(?<!以)(?<!之)前年|一昨年|おととし",
    (-1, "year"): "去年|昨年",
    (0, "year"): "今年",
    (1, "year"): "明年|来年|來年",
}
_CJK_UNITS = {"天": "day", "日": "day", "周": "week", "週": "week", "星期": "week", "礼拜": "week",
              "禮拜": "week", "週間": "week", "月": "month", "年": "year"}
# A weekday of last, this or next calendar week: 上周六, 下个星期一, 先週の土曜日, 今週の金曜.
_CJK_WEEKDAY = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6,
                "月": 0, "火": 1, "水": 2, "木": 3, "金": 4, "土": 5}
_CJK_WEEK_STEP = {"上": -1, "先": -1, "这": 0, "這": 0, "本": 0, "今": 0, "下": 1, "来": 1, "來": 1}
_CJK_RELATIVE = re.compile(
    r"(?:"
    r"(?P<wrel>上|这|這|本|下|先|今|来|來)[个個]?\s*(?:周|週|星期|礼拜|禮拜)\s*の?\s*"
    r"(?:(?P<wdz>[一二三四五六日天])|(?P<wdj>[月火水木金土日])曜日?)"
    + "|"
    + "|".join(f"(?P<{name}>{alts})" for name, alts in _CJK_DAYS.items())
    + "|"
    + "|".join(f"(?P<p{i}>{alts})" for i, alts in enumerate(_CJK_PERIODS.values()))
    # 三年前, 3年前, 两周前, 2週間前, 3ヶ月前, 几天前 (not 2023年前: no digit before).
    + r"|(?<![\d〇零一二三四五六七八九十])(?P<n>\d{1,2}|[一二两兩三四五六七八九十]{1,3}|几|幾|数|數)\s*"
    r"(?:个|個|か|ヶ|ケ|カ)?\s*(?P<unit>天|日|週間|周|週|星期|礼拜|禮拜|月|年)\s*(?:以前|之前|前)"
    r"|(?P<otherday>前几天|前些天|前幾天|前些日子|先日|この前)"
    r")"
)
_CJK_PERIOD_KEYS = list(_CJK_PERIODS)

_ES_MONTHS = {
    "enero": 1, "febrero": 2, "marzo": 3, "abril": 4, "mayo": 5, "junio": 6, "julio": 7, "agosto": 8,
    "septiembre": 9, "setiembre": 9, "octubre": 10, "noviembre": 11, "diciembre": 12,
}
_ES_WEEKDAYS = {"lunes": "monday", "martes": "tuesday", "miércoles": "wednesday", "miercoles": "wednesday",
                "jueves": "thursday", "viernes": "friday", "sábado": "saturday", "sabado": "saturday",
                "domingo": "sunday"}
_ES_SEASONS = {"primavera": "spring", "verano": "summer", "otoño": "autumn", "otono": "autumn", "invierno": "winter"}
_ES_PERIODS = {"semana": "week", "fin de semana": "weekend", "mes": "month", "año": "year", "ano": "year"}
_ES_NUMBERS = {"un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6,
               "siete": 7, "ocho": 8, "nueve": 9, "diez": 10, "once": 11, "doce": 12, "un par de": 2,
               "unos": 3, "unas": 3, "algunos": 3, "algunas": 3, "varios": 3, "varias": 3}
_ES_MONTH = r"(?P<{name}>enero|febrero|marzo|abril|mayo|junio|julio|agosto|sept?iembre|octubre|noviembre|diciembre)"
_ES_ABSOLUTE = re.compile(
    r"\b(?:"
    rf"(?P<d1>[12]\d|3[01]|0?[1-9])\s+de\s+{_ES_MONTH.format(name='m1')}(?:\s+del?|,)\s+{_yw('y1')}"  # 3 de mayo, 2023
    rf"|{_ES_MONTH.format(name='m2')}\s+del?\s+{_yw('y2')}"  # mayo de 2023
    rf"|(?P<d3>[12]\d|3[01]|0?[1-9])\s+de\s+{_ES_MONTH.format(name='m3')}"  # 3 de mayo
    rf"|(?:en|durante|desde|hasta|para|(?:a\s+)?(?:principios|comienzos|inicios|finales|fines|fin|mediados)\s+de)"
    r"\s+(?:el\s+mes\s+de\s+)?"
    rf"{_ES_MONTH.format(name='m4')}(?!\s+del?\s+\d)"  # en mayo
    rf"|(?:en|durante|desde|hasta|(?:a\s+)?(?:principios|comienzos|inicios|finales|fines|fin|mediados)\s+de)"
    rf"\s+(?:el\s+año\s+)?{_y('y5')}"
    r")\b",
    re.IGNORECASE,
)
_ES_NUM = (
    r"(?P<n>\d{1,2}|un par de|una?|uno|dos|tres|cuatro|cinco|seis|siete|ocho|nueve|diez|once|doce|unos|unas"
    r"|algun[oa]s|vari[oa]s)"
)
_ES_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<today>hoy|esta\s+(?:mañana|tarde|noche))"
    r"|(?P<before_yesterday>anteayer|antier|antes\s+de\s+ayer)"
    r"|(?P<yesterday>ayer|anoche)"
    r"|(?P<after_tomorrow>pasado\s+mañana)"
    # "mañana" is also "the morning": not after la / esta / cada / por / de / una.
    r"|(?<!\bla\s)(?<!\besta\s)(?<!\bcada\s)(?<!\bpor\s)(?<!\bde\s)(?<!\buna\s)(?P<tomorrow>mañana)"
    rf"|hace\s+{_ES_NUM}\s+(?P<unit>días?|dias?|semanas?|mes(?:es)?|años?|anos?)"
    r"|(?P<otherday>el\s+otro\s+día|el\s+otro\s+dia|hace\s+poco)"
    r"|(?:el|la|este|esta|el\s+próximo|el\s+proximo|la\s+próxima|la\s+proxima)\s+"
    r"(?P<what>fin\s+de\s+semana|semana|mes|año|primavera|verano|otoño|invierno|"
    r"lunes|martes|miércoles|miercoles|jueves|viernes|sábado|sabado|domingo)"
    r"(?:\s+(?P<dir>pasad[oa]|que\s+viene|próxim[oa]|proxim[oa]|siguiente))?"
    r")\b",
    re.IGNORECASE,
)

# Hindi. Vowel signs are not word characters for ``re``, so word edges are written out.
_HI_START = r"(?<![\w\u0900-\u0963\u0971-\u097f])"
_HI_END = r"(?![\w\u0900-\u0963\u0971-\u097f])"
_HI_MONTHS = {
    "जनवरी": 1, "फरवरी": 2, "\u095eरवरी": 2, "\u092b\u093cरवरी": 2, "मार्च": 3, "अप्रैल": 4, "अप्रेल": 4, "मई": 5, "जून": 6,
    "जुलाई": 7, "अगस्त": 8, "सितंबर": 9, "सितम्बर": 9, "अक्टूबर": 10, "अक्तूबर": 10, "नवंबर": 11,
    "नवम्बर": 11, "दिसंबर": 12, "दिसम्बर": 12,
}
_HI_MONTH = "(?P<{name}>" + "|".join(sorted(_HI_MONTHS, key=len, reverse=True)) + ")"
_HI_NUMBERS = {"एक": 1, "दो": 2, "तीन": 3, "चार": 4, "पाँच": 5, "पांच": 5, "छह": 6, "छः": 6, "सात": 7,
               "आठ": 8, "नौ": 9, "दस": 10, "कुछ": 3}
_HI_WEEK = "ह(?:\u095e|फ\u093c?)\u094dत[ेाों]+|सप्ताह"  # हफ्ते, हफ़्ते, हफ्ता, सप्ताह
_HI_MONTH_WORD = "महीन[ेाों]+|मास"
_HI_YEAR_WORD = "साल|वर्ष|बरस"
_HI_ABSOLUTE = re.compile(
    _HI_START + r"(?:"
    rf"(?P<d1>[12]\d|3[01]|0?[1-9])\s+{_HI_MONTH.format(name='m1')},?\s+{_yw('y1')}"  # 3 मई 2023
    rf"|{_HI_MONTH.format(name='m2')},?\s+{_yw('y2')}"  # मई 2023
    rf"|(?P<d3>[12]\d|3[01]|0?[1-9])\s+{_HI_MONTH.format(name='m3')}"  # 3 मई
    rf"|{_HI_MONTH.format(name='m4')}(?=\s*(?:में|से|तक|के|की|को|महीने)" + _HI_END + ")"  # मई में
    rf"|(?:साल\s+)?{_y('y5')}(?=\s*(?:में|से|तक)" + _HI_END + ")"  # 2023 में
    r")" + _HI_END
)
_HI_NUM = "(?P<n>\\d{1,2}|" + "|".join(_HI_NUMBERS) + ")"
_HI_RELATIVE = re.compile(
    _HI_START + r"(?:"
    r"(?P<today>आज)"
    r"|(?P<kal>कल)"
    r"|(?P<parson>परसों)"
    rf"|{_HI_NUM}\s+(?P<unit>दिन|{_HI_WEEK}|{_HI_MONTH_WORD}|{_HI_YEAR_WORD})\s+(?:पहले|पूर्व)"
    rf"|(?P<rel>पिछले|पिछला|पिछली|गत|इस|अगले|अगला|अगली|आने\s+वाले)\s+"
    rf"(?P<what>{_HI_WEEK}|{_HI_MONTH_WORD}|{_HI_YEAR_WORD}|वीकेंड|सप्ताहांत)"
    r"|(?P<otherday>उस\s+दिन|कुछ\s+दिन\s+पहले)"
    r")" + _HI_END
)
# "कल" is yesterday and tomorrow, "परसों" the day before yesterday and after tomorrow: the
# verb's tense decides (था / थी / गया / किया ... past; गा / गी / गे future); without either,
# the days on both sides (and today between them).
_HI_PAST = re.compile(r"(?:था|थी|थे|थीं|गया|गई|गयी|गए|गये|लिया|किया|दिया|हुआ|हुई|हुए|आया|आई|आए|देखा|देखी)" + _HI_END)
_HI_FUTURE = re.compile(r"[ंँ]?(?:गा|गी|गे)" + _HI_END + "|(?:वाला|वाली|वाले)\\s+(?:है|हैं|हूँ|हूं)")
_HI_CLAUSE_END = re.compile(r"[।?!.\n|]")
#: How far past "कल" its clause's verb is looked for, in characters, when no clause end comes
#: first: some forty words, longer than a spoken sentence.
_HI_CLAUSE_WINDOW = 200
#: Letters that Unicode case folding matches to ASCII ones: "ſ" to "s", "ı" and "İ" to "i",
#: the Kelvin sign to "k". The Spanish grammar folds case in Unicode (for "Ñ", "É"), so
#: "paſado" matched "pasado": a Spanish match holding one is no time (it would be read as
#: another word, or looked up as none).
_FOLDED_TO_ASCII = re.compile("[\u017f\u0131\u0130\u212a]")

# French, German, Italian and Portuguese: one reader over each language's words (a
# _WordGrammar), the forms people write a date, a month, a year, a day named by its
# relation to today ("hier", "gestern", "ieri", "ontem"), "N weeks ago" and "last / this /
# next week, month, year, season or weekday".

_DAY_NUMBER = r"[12]\d|3[01]|0?[1-9]"


def _alternatives(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words`` (longest first; spaces as any space)."""
    return "|".join(re.escape(w).replace(r"\ ", r"\s+") for w in sorted(words, key=len, reverse=True))


@dataclass(frozen=True, eq=False)  # compared by identity: its tables are dicts
class _WordGrammar:
    """One language's time words and patterns (see :func:`_word_grammar`)."""

    code: str
    #: words without which none of its expressions can match (the cheap check of a text)
    triggers: frozenset[str]
    #: words only this language writes (its function words, its unambiguous time words),
    #: one of which a text must hold too: German "hier" is "here", no French "yesterday"
    markers: frozenset[str]
    months: Mapping[str, int]
    #: its patterns' sources, compiled on first use (:attr:`absolute`, :attr:`relative`):
    #: four languages' alternations cost ~10 ms to compile, every import would pay them
    absolute_source: str
    relative_source: str
    numbers: Mapping[str, int]
    #: a unit word -> day, week, month or year
    units: Mapping[str, str]
    #: a period word -> _period's key (week, weekend, month, year, a season, a weekday)
    periods: Mapping[str, str]
    #: a word saying which one (last, this, next) -> its step
    steps: Mapping[str, int]
    #: its month names that no other language here writes ("juillet", not "mai")
    own_months: frozenset[str] = frozenset()

    @functools.cached_property
    def absolute(self) -> re.Pattern[str]:
        """Days, months and years as the language writes them (see :func:`_word_grammar`)."""
        return re.compile(self.absolute_source, re.IGNORECASE)

    @functools.cached_property
    def relative(self) -> re.Pattern[str]:
        """Its words for days and periods relative to the anchor (see :func:`_word_grammar`)."""
        return re.compile(self.relative_source, re.IGNORECASE)


def _word_grammar(
    code: str,
    *,
    months: Mapping[str, int],
    day: str,
    of: str,
    month_year: str,
    lead_month: str,
    lead_year: str,
    today: str,
    yesterday: str,
    before_yesterday: str,
    tomorrow: str,
    after_tomorrow: str,
    ago: str,
    otherday: str,
    numbers: Mapping[str, int],
    units: Mapping[str, str],
    periods: Mapping[str, str],
    before: Mapping[str, int],
    after: Mapping[str, int],
    extra_triggers: str,
    markers: str,
) -> _WordGrammar:
    """A language's grammar from its words. ``day`` is how a day number is written before
    the month (``(?P<d>...)``), ``of`` what joins day and month, ``month_year`` what joins
    month and year, ``lead_month`` / ``lead_year`` the words before a month or a year named
    alone ("en mai", "im Jahr 2022"); ``ago`` holds ``{n}`` and ``{unit}`` where the count
    and the unit go; ``before`` / ``after`` the words saying which period, before or after
    its word ("cette semaine", "la semaine dernière"). ``ago`` may hold several forms
    separated by ``||`` (Portuguese "há duas semanas" and "duas semanas atrás")."""
    month = "(?:" + _alternatives(months) + ")"

    def m(name: str) -> str:
        return f"(?P<{name}>{month})"

    def d(name: str) -> str:
        return day.replace("(?P<d>", f"(?P<{name}>")
    absolute = (
        r"\b(?:"
        rf"{d('d1')}{of}{m('m1')}{month_year}{_yw('y1')}"
        rf"|{m('m2')}{month_year}{_yw('y2')}"
        rf"|{d('d3')}{of}{m('m3')}"
        rf"|(?:{lead_month})(?:\s+|-){m('m4')}(?!{month_year}\d)"
        rf"|(?:{lead_year})\s+{_y('y5')}"
        r")\b"
    )
    number = "(?P<{n}>\\d{{1,2}}|" + _alternatives(numbers) + ")"
    unit = "(?P<{u}>" + _alternatives(units) + ")"
    what = "(?:" + _alternatives(periods) + ")"
    relative = (
        r"(?<!\w)(?:"
        rf"(?P<today>{today})"
        rf"|(?P<before_yesterday>{before_yesterday})"
        rf"|(?P<yesterday>{yesterday})"
        rf"|(?P<after_tomorrow>{after_tomorrow})"
        rf"|(?P<tomorrow>{tomorrow})"
        + "".join(
            "|" + form.format(n=number.format(n=f"n{i}"), unit=unit.format(u=f"unit{i}"))
            for i, form in enumerate(ago.split("||"))
        )
        + rf"|(?P<otherday>{otherday})"
        + (rf"|(?P<pre>{_alternatives(before)})(?:\s+|(?<=['’]))(?P<what1>{what})" if before else "")
        + (rf"|(?P<what2>{what})\s+(?P<post>{_alternatives(after)})" if after else "")
        + r")(?!\w)"
    )
    triggers = frozenset(
        w.lower()
        for words in (months, units, periods, before, after)
        for phrase in words
        for w in re.findall(r"\w+", phrase)
    ) | frozenset(extra_triggers.split())
    return _WordGrammar(
        code,
        triggers - _NO_TRIGGERS,
        frozenset(markers.split()),
        {k.lower(): v for k, v in months.items()},
        absolute,
        relative,
        {" ".join(k.lower().split()): v for k, v in numbers.items()},
        {k.lower(): v for k, v in units.items()},
        {" ".join(k.lower().split()): v for k, v in periods.items()},
        {" ".join(k.lower().split()): v for k, v in {**before, **after}.items()},
    )


#: Words of these grammars too common in every text to be worth a look up ("a", "de"):
#: the other words of an expression are its triggers (a text must hold a marker too).
_NO_TRIGGERS = frozenset("a am in im da de do del no na o la le the this".split())

_WEEKDAYS_EN = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")

_FR = _word_grammar(
    "fr",
    months={"janvier": 1, "février": 2, "fevrier": 2, "mars": 3, "avril": 4, "mai": 5, "juin": 6, "juillet": 7,
            "août": 8, "aout": 8, "septembre": 9, "octobre": 10, "novembre": 11, "décembre": 12, "decembre": 12},
    day=rf"(?:le\s+)?(?P<d>{_DAY_NUMBER})(?:er)?",
    of=r"\s+",
    month_year=r"\s+",
    lead_month=r"en|depuis|jusqu['’]en|(?:au\s+)?(?:début|debut|fin)(?:\s+d['’]|\s+de)?|mi|courant",
    lead_year=r"en|depuis|en\s+l['’]an|(?:au\s+)?(?:début|debut|fin)(?:\s+de)?",
    today=r"aujourd['’]hui|ce\s+matin|cet\s+après-midi|ce\s+soir",
    yesterday=r"hier(?:\s+soir|\s+matin)?",
    before_yesterday=r"avant-hier|avant\s+hier",
    tomorrow=r"demain(?:\s+matin|\s+soir)?",
    after_tomorrow=r"apr[èe]s-demain|apr[èe]s\s+demain",
    ago=r"il\s+y\s+a\s+{n}\s+{unit}",
    otherday=r"l['’]autre\s+jour",
    numbers={"un": 1, "une": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "six": 6, "sept": 7, "huit": 8,
             "neuf": 9, "dix": 10, "onze": 11, "douze": 12, "quelques": 3},
    units={"jours": "day", "jour": "day", "semaines": "week", "semaine": "week", "mois": "month",
           "années": "year", "année": "year", "ans": "year", "an": "year"},
    periods={"semaine": "week", "week-end": "weekend", "weekend": "weekend", "mois": "month", "année": "year",
             "an": "year", "printemps": "spring", "été": "summer", "ete": "summer", "automne": "autumn",
             "hiver": "winter",
             **dict(zip(("lundi", "mardi", "mercredi", "jeudi", "vendredi", "samedi", "dimanche"), _WEEKDAYS_EN,
                        strict=True))},
    before={"ce": 0, "cet": 0, "cette": 0, "la prochaine": 1, "le prochain": 1, "le dernier": -1,
            "la dernière": -1},
    after={"dernier": -1, "dernière": -1, "derniere": -1, "passé": -1, "passée": -1, "prochain": 1,
           "prochaine": 1},
    extra_triggers="aujourd hier demain autre jour en depuis jusqu début debut mi courant fin",
    markers="je j tu nous vous suis sommes êtes sont avons avez ont ai était étais étions c qu avec très cette "
    "ces aux une leur leurs où moi toi lui elle ils elles ça chez pour dans est quoi quand comment pourquoi "
    "aujourd demain avant après apres dernier dernière prochain prochaine semaine semaines mois année années "
    "jours",
)
_DE = _word_grammar(
    "de",
    months={"januar": 1, "jänner": 1, "februar": 2, "märz": 3, "maerz": 3, "april": 4, "mai": 5, "juni": 6,
            "juli": 7, "august": 8, "september": 9, "oktober": 10, "november": 11, "dezember": 12},
    day=rf"(?:am\s+)?(?P<d>{_DAY_NUMBER})\.",
    of=r"\s*",
    month_year=r"\s+",
    lead_month=r"im|seit|bis|anfang|ende|mitte",
    lead_year=r"im\s+jahre?|seit|anfang|ende|mitte",
    today=r"heute(?:\s+(?:morgen|früh|vormittag|nachmittag|abend|nacht))?",
    yesterday=r"gestern(?:\s+(?:morgen|früh|abend|nacht))?",
    before_yesterday=r"vorgestern(?:\s+(?:morgen|früh|abend|nacht))?",
    # "morgen" is tomorrow, "Morgen" a morning ("am nächsten Morgen", "Montag Morgen"):
    # capitalised, only where a sentence starts ("Morgen fahre ich los"); lowercase, not
    # after "am", "jeden" or an article ("heute Morgen" is today's, read above).
    tomorrow=r"(?:(?<!am\s)(?<!jeden\s)(?<!guten\s)(?<!den\s)(?<!der\s)(?<!dem\s)(?<!einen\s)(?<!einem\s)"
    r"(?<!diesen\s)(?-i:morgen)|(?:\A|(?<=[.!?\n]\s)|(?<=\n))(?-i:Morgen))(?:\s+(?:früh|abend))?",
    after_tomorrow=r"übermorgen|uebermorgen",
    ago=r"vor\s+{n}\s+{unit}",
    otherday=r"neulich|vor\s+kurzem|kürzlich",
    numbers={"ein": 1, "einem": 1, "einer": 1, "eine": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "fuenf": 5,
             "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10, "elf": 11, "zwölf": 12, "ein paar": 3,
             "einigen": 3, "wenigen": 3},
    units={"tagen": "day", "tag": "day", "wochen": "week", "woche": "week", "monaten": "month", "monat": "month",
           "jahren": "year", "jahr": "year"},
    periods={"woche": "week", "wochenende": "weekend", "monat": "month", "jahr": "year", "frühling": "spring",
             "frühjahr": "spring", "sommer": "summer", "herbst": "autumn", "winter": "winter",
             **dict(zip(("montag", "dienstag", "mittwoch", "donnerstag", "freitag", "samstag", "sonntag"),
                        _WEEKDAYS_EN, strict=True)), "sonnabend": "saturday"},
    before={**{f"letzte{e}": -1 for e in ("", "n", "m", "r", "s")},
            **{f"vergangene{e}": -1 for e in ("", "n", "m", "r", "s")},
            **{f"diese{e}": 0 for e in ("", "n", "m", "r", "s")},
            **{f"nächste{e}": 1 for e in ("", "n", "m", "r", "s")},
            **{f"naechste{e}": 1 for e in ("", "n", "m", "r", "s")},
            **{f"kommende{e}": 1 for e in ("", "n", "m", "r", "s")}},
    after={},
    extra_triggers="heute gestern vorgestern morgen übermorgen neulich kürzlich vor seit bis anfang mitte ende jahre",
    markers="ich du er wir ihr sie und ist bin bist sind war waren habe hast hat haben hatte nicht mit dem den "
    "einen einem einer auch mein meine meinen sehr noch schon auf für bei vom zum zur wurde wer wo wann wie "
    "warum worüber wen wem heute gestern vorgestern übermorgen uebermorgen letzte letzten letztes letzter "
    "nächste nächsten nächstes vergangene vergangenen woche wochen monat monaten jahr jahren tagen",
)
_IT = _word_grammar(
    "it",
    months={"gennaio": 1, "febbraio": 2, "marzo": 3, "aprile": 4, "maggio": 5, "giugno": 6, "luglio": 7,
            "agosto": 8, "settembre": 9, "ottobre": 10, "novembre": 11, "dicembre": 12},
    day=rf"(?:il\s+|l['’])?(?P<d>{_DAY_NUMBER})°?",
    of=r"\s+",
    month_year=r"\s+(?:del\s+)?",
    lead_month=r"a|in|nel\s+mese\s+di|da|fino\s+a|(?:all['’])?inizio(?:\s+di)?|(?:a\s+|alla\s+)?fine(?:\s+di)?"
    r"|(?:a\s+)?metà(?:\s+di)?",
    lead_year=r"nel|dal|nell['’]anno|(?:all['’])?inizio(?:\s+del)?|(?:a\s+|alla\s+)?fine(?:\s+del)?",
    today=r"oggi|stamattina|stamani|stasera|stanotte|questa\s+mattina|questa\s+sera",
    yesterday=r"ieri(?:\s+sera|\s+mattina)?",
    before_yesterday=r"(?:l['’])?altro\s*ieri|altroieri|avantieri",
    tomorrow=r"domani(?:\s+mattina|\s+sera)?",
    after_tomorrow=r"dopodomani|dopo\s+domani",
    ago=r"{n}\s+{unit}\s+fa",
    otherday=r"l['’]altro\s+giorno",
    numbers={"un": 1, "uno": 1, "una": 1, "due": 2, "tre": 3, "quattro": 4, "cinque": 5, "sei": 6, "sette": 7,
             "otto": 8, "nove": 9, "dieci": 10, "undici": 11, "dodici": 12, "qualche": 3, "alcuni": 3, "alcune": 3,
             "un paio di": 2},
    units={"giorni": "day", "giorno": "day", "settimane": "week", "settimana": "week", "mesi": "month",
           "mese": "month", "anni": "year", "anno": "year"},
    periods={"settimana": "week", "fine settimana": "weekend", "weekend": "weekend", "mese": "month",
             "anno": "year", "primavera": "spring", "estate": "summer", "autunno": "autumn",
             "inverno": "winter",
             **dict(zip(("lunedì", "martedì", "mercoledì", "giovedì", "venerdì", "sabato", "domenica"), _WEEKDAYS_EN,
                        strict=True)),
             **dict(zip(("lunedi", "martedi", "mercoledi", "giovedi", "venerdi"), _WEEKDAYS_EN, strict=False))},
    before={"questo": 0, "questa": 0, "quest'": 0, "quest’": 0, "il prossimo": 1, "la prossima": 1,
            "prossimo": 1, "prossima": 1},
    after={"scorso": -1, "scorsa": -1, "passato": -1, "passata": -1, "prossimo": 1, "prossima": 1},
    extra_triggers="oggi ieri domani dopodomani altroieri avantieri stamattina stamani stasera stanotte fa altro "
    "nel dal nell inizio fine metà mese",
    markers="io sono sei siamo siete ho hai abbiamo avete hanno gli della delle degli dello che è molto anche "
    "questo questa quest nel nella nei alla alle sul sulla cosa dove chi perché fatto ieri domani dopodomani "
    "altroieri stamattina stasera settimana settimane scorso scorsa prossimo prossima mese mesi anno anni "
    "giorni",
)
_PT = _word_grammar(
    "pt",
    months={"janeiro": 1, "fevereiro": 2, "março": 3, "abril": 4, "maio": 5, "junho": 6, "julho": 7,
            "agosto": 8, "setembro": 9, "outubro": 10, "novembro": 11, "dezembro": 12},
    day=rf"(?:(?:no\s+)?dia\s+)?(?P<d>{_DAY_NUMBER})[ºo°]?",
    of=r"\s+de\s+",
    month_year=r"\s+de\s+",
    lead_month=r"em|desde|até|(?:no\s+|ao\s+)?(?:início|inicio|começo|comeco|fim|final)\s+de|(?:em\s+)?meados\s+de",
    lead_year=r"em|desde|no\s+ano\s+de|(?:no\s+|ao\s+)?(?:início|inicio|começo|comeco|fim|final)\s+de"
    r"|(?:em\s+)?meados\s+de",
    today=r"hoje(?:\s+de\s+manhã|\s+à\s+noite)?|esta\s+manhã|esta\s+noite",
    yesterday=r"ontem(?:\s+à\s+noite|\s+de\s+manhã)?",
    before_yesterday=r"anteontem|antes\s+de\s+ontem",
    tomorrow=r"amanhã|amanha",
    after_tomorrow=r"depois\s+de\s+amanhã|depois\s+de\s+amanha",
    ago=r"(?:há|ha|faz)\s+{n}\s+{unit}||{n}\s+{unit}\s+atrás",
    otherday=r"(?:no\s+)?outro\s+dia|há\s+pouco",
    numbers={"um": 1, "uma": 1, "dois": 2, "duas": 2, "três": 3, "tres": 3, "quatro": 4, "cinco": 5, "seis": 6,
             "sete": 7, "oito": 8, "nove": 9, "dez": 10, "onze": 11, "doze": 12, "alguns": 3, "algumas": 3,
             "uns": 3, "umas": 3, "um par de": 2},
    units={"dias": "day", "dia": "day", "semanas": "week", "semana": "week", "meses": "month", "mês": "month",
           "mes": "month", "anos": "year", "ano": "year"},
    periods={"semana": "week", "fim de semana": "weekend", "mês": "month", "mes": "month", "ano": "year",
             "primavera": "spring", "verão": "summer", "verao": "summer", "outono": "autumn", "inverno": "winter",
             **{f"{d}-feira": en for d, en in zip(("segunda", "terça", "quarta", "quinta", "sexta"),
                                                   _WEEKDAYS_EN, strict=False)},
             **{d: en for d, en in zip(("segunda", "terça", "quarta", "quinta", "sexta", "sábado", "domingo"),
                                        _WEEKDAYS_EN, strict=True)}},
    before={"este": 0, "esta": 0, "neste": 0, "nesta": 0, "próximo": 1, "próxima": 1, "proximo": 1, "proxima": 1,
            "no próximo": 1, "na próxima": 1},
    after={"passado": -1, "passada": -1, "que vem": 1, "próximo": 1, "próxima": 1},
    extra_triggers="hoje ontem anteontem amanhã amanha há faz atrás outro em desde até início inicio final "
    "meados começo comeco fim",
    markers="eu você voce nós vocês não nao é foi fui sou estou está estava estavam tenho temos tem minha meu "
    "meus minhas muito também isso isto ao às numa num uma em onde quem aconteceu fez fizemos esteve estive fomos "
    "foram ontem anteontem amanhã hoje há atrás passado passada mês ano anos verão",
)


def _with_own_months(grammars: Sequence[_WordGrammar]) -> tuple[_WordGrammar, ...]:
    english = {name.lower() for name in _MONTH_NAMES} | {"mars"}  # the planet, the chocolate bar
    out = []
    for grammar in grammars:
        others = english | set(_ES_MONTHS) | {m for g in grammars if g is not grammar for m in g.months}
        out.append(replace(grammar, own_months=frozenset(set(grammar.months) - others)))
    return tuple(out)


#: French, German, Italian, Portuguese.
_WORD_GRAMMARS = _with_own_months((_FR, _DE, _IT, _PT))


# Holidays in the other languages read, as the English ones are (:func:`_holiday_named`):
# with a year that year's, else in an entry by the tense (English's words only: in another
# language the one nearest the day said), in a question every year's. Only holidays kept on
# the same days wherever the language is spoken (Brazil's Dia dos Namorados is 12 June,
# Portugal's 14 February: neither is read); lunar ones (春节, 七夕) never.
_OTHER_HOLIDAYS: dict[str, dict[str, str]] = {
    "fr": {"noël": "christmas", "noel": "christmas", "veille de noël": "christmas eve",
           "veille de noel": "christmas eve", "jour de noël": "christmas day", "nouvel an": "new year",
           "jour de l'an": "new year's day", "jour de l’an": "new year's day", "saint-sylvestre": "new year's eve",
           "saint-valentin": "valentine's day", "pâques": "easter", "paques": "easter",
           "vendredi saint": "good friday", "lundi de pâques": "easter monday", "semaine sainte": "holy week"},
    "de": {"weihnachten": "christmas", "heiligabend": "christmas eve", "heiligen abend": "christmas eve",
           "silvester": "new year's eve", "neujahr": "new year's day", "neujahrstag": "new year's day",
           "valentinstag": "valentine's day", "ostern": "easter", "karfreitag": "good friday",
           "ostermontag": "easter monday", "ostersonntag": "easter sunday", "karwoche": "holy week"},
    "it": {"natale": "christmas", "vigilia di natale": "christmas eve", "santo stefano": "boxing day",
           "capodanno": "new year", "san silvestro": "new year's eve", "san valentino": "valentine's day",
           "pasqua": "easter", "pasquetta": "easter monday", "venerdì santo": "good friday",
           "venerdi santo": "good friday", "settimana santa": "holy week"},
    "pt": {"natal": "christmas", "véspera de natal": "christmas eve", "ano novo": "new year",
           "páscoa": "easter", "pascoa": "easter", "sexta-feira santa": "good friday", "semana santa": "holy week"},
    "es": {"navidad": "christmas", "navidades": "christmas", "nochebuena": "christmas eve",
           "nochevieja": "new year's eve", "año nuevo": "new year", "san valentín": "valentine's day",
           "san valentin": "valentine's day", "pascua": "easter", "viernes santo": "good friday",
           "semana santa": "holy week"},
    "cjk": {"圣诞节": "christmas", "聖誕節": "christmas", "圣诞": "christmas", "聖誕": "christmas",
            "平安夜": "christmas eve", "クリスマスイブ": "christmas eve", "クリスマス・イブ": "christmas eve",
            "クリスマス": "christmas", "元旦": "new year's day", "元日": "new year's day", "大晦日": "new year's eve",
            "跨年": "new year", "情人节": "valentine's day", "情人節": "valentine's day",
            "バレンタインデー": "valentine's day", "バレンタイン": "valentine's day", "复活节": "easter",
            "復活節": "easter", "イースター": "easter", "万圣节": "halloween", "萬聖節": "halloween",
            "ハロウィン": "halloween"},
}
#: Holiday names that are also names of people or places, or words: Portuguese "Natal" (a
#: city: "em Natal"; "cidade natal", one's home town), Italian "Natale" and French "Noël"
#: (first names). Such a name is the holiday when capitalised and after one of its words
#: here ("no Natal", "a Natale", "à Noël", "joyeux Noël") or before a year.
_HOLIDAY_LEADS = {
    "natal": re.compile(r"\b(?:no|o|do|de|este|neste|próximo|proximo|último|ultimo|feliz|bom|até|depois\s+do)\s+$",
                        re.IGNORECASE),
    "natale": re.compile(r"\b(?:a|per|di|il|lo|questo|prossimo|scorso|buon|dopo|fino\s+a)\s+$", re.IGNORECASE),
    "noël": re.compile(r"(?:\b(?:à|a|de|d['’]|pour|le|ce|joyeux|avant|après|apres|depuis|jusqu['’]à)\s*)$",
                       re.IGNORECASE),
}
_HOLIDAY_LEADS["noel"] = _HOLIDAY_LEADS["noël"]


#: Spanish words without which no Spanish expression here can match (a text is scanned
#: for Spanish only when it holds one: a set lookup of its words costs far less than a
#: regular expression of alternatives run at every position).
_ES_WORDS = frozenset(
    "hoy ayer anoche anteayer antier mañana hace otro semana mes año primavera verano otoño invierno lunes martes "
    "miércoles miercoles jueves viernes sábado sabado domingo en desde hasta durante principios comienzos inicios "
    "finales fines mediados".split()
) | frozenset(_ES_MONTHS)
_WORDS = re.compile(r"\w+")
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_DEVANAGARI_CHAR = re.compile(r"[\u0900-\u097f]")


@dataclass(frozen=True, slots=True)
class _Languages:
    """Which other languages' expressions a text may hold (cheap checks): any Chinese,
    Japanese, Spanish or Hindi one; a French, German, Italian or Portuguese one only when
    the text holds a marker of the language too (else only its full dates)."""

    cjk: bool
    spanish: bool
    hindi: bool
    #: the French, German, Italian and Portuguese grammars whose words and markers it holds
    grammars: tuple[_WordGrammar, ...] = ()
    #: those whose month names it holds without a marker: only a full date is read ("3 de
    #: maio de 2023", "le 7 juillet" are dates whatever else the text says)
    dated: tuple[_WordGrammar, ...] = ()

    def __bool__(self) -> bool:
        return self.cjk or self.spanish or self.hindi or bool(self.grammars) or bool(self.dated)


def _holiday_words(code: str) -> frozenset[str]:
    """The words of language ``code``'s holiday names that tell it (its time words too:
    "Noël", "Ostern"): not the short ones ("l", "an") nor those English writes too ("Santa
    Monica", "Saint Louis"), which every name holds another word beside."""
    return frozenset(
        w for name in _OTHER_HOLIDAYS[code] for w in re.findall(r"\w+", name) if len(w) >= 4 and w not in _SHARED_WORDS
    )


_SHARED_WORDS = frozenset({"saint", "sainte", "santa", "santo", "nuevo", "novo"})


def _word_roles() -> dict[str, tuple[frozenset[str], frozenset[str], frozenset[str]]]:
    """Each word that matters to telling a text's languages -> the codes of the languages
    it is a time word of (``"es"`` for Spanish), a marker of, and a month of."""
    roles: dict[str, tuple[set[str], set[str], set[str]]] = {}
    groups = (
        (0, (("es", _ES_WORDS | _holiday_words("es")),
             *((g.code, g.triggers | _holiday_words(g.code)) for g in _WORD_GRAMMARS))),
        (1, tuple((g.code, g.markers) for g in _WORD_GRAMMARS)),
        (2, tuple((g.code, g.months) for g in _WORD_GRAMMARS)),
    )
    for role, owners in groups:
        for code, words in owners:
            for word in words:
                roles.setdefault(word, (set(), set(), set()))[role].add(code)
    return {word: (frozenset(a), frozenset(b), frozenset(c)) for word, (a, b, c) in roles.items()}


#: One lookup per word of a text finds every language to read it in.
_WORD_ROLES = _word_roles()


def _other_languages(text: str) -> _Languages:
    ascii_only = text.isascii()
    codes: set[str] = set()
    marked: set[str] = set()
    months: set[str] = set()
    for word in _WORDS.findall(text.lower()):
        if (roles := _WORD_ROLES.get(word)) is not None:
            codes |= roles[0]
            marked |= roles[1]
            months |= roles[2]
    return _Languages(
        cjk=not ascii_only and _CJK_CHAR.search(text) is not None,
        spanish="es" in codes,
        hindi=not ascii_only and _DEVANAGARI_CHAR.search(text) is not None,
        grammars=tuple(g for g in _WORD_GRAMMARS if g.code in codes and g.code in marked) if marked else (),
        # A full date needs its month word.
        dated=tuple(g for g in _WORD_GRAMMARS if g.code in months and g.code not in marked) if months else (),
    )


#: What an absolute expression reads as: days, or (month, first day, last day) in any year.
_Reading = DayRange | tuple[int, int, int] | None


def _ago(anchor: date, unit: str, count: int) -> DayRange:
    """``count`` days (that day), weeks (those seven days), months or years (that calendar
    month or year) before the anchor."""
    if unit == "day":
        d = anchor - timedelta(days=count)
        return DayRange(d, d)
    return _shifted(DayRange(anchor, anchor), unit, count, "before")


def _day_or_month(
    year: int | None, month: int, dom: int | None, anchor: date | None, *, yearless: bool
) -> DayRange | tuple[int, int, int] | None:
    """A day or month given by its numbers; without a year, the one nearest the anchor
    (an entry) or any year's (a query, ``yearless``)."""
    if not 1 <= month <= 12:
        return None
    if dom is not None and _safe_date(2000, month, dom) is None:  # 2000: 29 Feb is a day
        return None
    if year is None:
        if yearless or anchor is None:
            return (month, dom, dom) if dom is not None else (month, 1, 31)
        year = _nearest_year(anchor, month, dom)
    if dom is None:
        return _month_range(year, month)
    day = _safe_date(year, month, dom)
    return DayRange(day, day) if day else None


def _cjk_absolute(match: re.Match[str], anchor: date | None, *, yearless: bool) -> _Reading:
    g = match.groupdict()
    if g["y"]:
        year = _cjk_number(g["y"])
        # (A year alone is one of 1800-2199, as in English; with its month any of the calendar's.)
        if year is None or year < 1 or (not g["ym"] and not 1800 <= year <= 2199):
            return None
        if not g["ym"]:
            return DayRange(date(year, 1, 1), date(year, 12, 31))
        return _day_or_month(year, _cjk_number(g["ym"]) or 0, _cjk_number(g["yd"]) if g["yd"] else None, anchor,
                             yearless=yearless)
    if g["ry"]:
        if anchor is None:
            return None
        year = anchor.year + _CJK_REL_YEAR[g["ry"]]
        return _day_or_month(year, _cjk_number(g["rm"]) or 0, _cjk_number(g["rd"]) if g["rd"] else None, anchor,
                             yearless=yearless)
    return _day_or_month(None, _cjk_number(g["m"]) or 0, _cjk_number(g["d"]) if g["d"] else None, anchor,
                         yearless=yearless)


def _cjk_relative(match: re.Match[str], anchor: date) -> DayRange | None:
    g = match.groupdict()
    if g["wrel"]:
        # The weekday of that calendar week (上周六 is last week's Saturday, whatever today is).
        week = _week_of(anchor + timedelta(days=7 * _CJK_WEEK_STEP[g["wrel"]]))
        d = week.first + timedelta(days=_CJK_WEEKDAY[g["wdz"] or g["wdj"]])
        return DayRange(d, d)
    if (day := _named_day(g, anchor)) is not None:
        return day
    for i, (step, what) in enumerate(_CJK_PERIOD_KEYS):
        if g[f"p{i}"]:
            if what == "year":
                return DayRange(date(anchor.year + step, 1, 1), date(anchor.year + step, 12, 31))
            return _period(anchor, what, step)
    if g["unit"]:
        count = _cjk_number(g["n"])
        return _ago(anchor, _CJK_UNITS[g["unit"]], count) if count else None
    return None


def _es_absolute(match: re.Match[str], anchor: date | None, *, yearless: bool) -> _Reading:
    if _FOLDED_TO_ASCII.search(match.group(0)):
        return None
    return _month_word_absolute(match, anchor, _ES_MONTHS, yearless=yearless)


def _month_word_absolute(
    match: re.Match[str], anchor: date | None, months: Mapping[str, int], *, yearless: bool
) -> _Reading:
    """A day or a month named by a word of ``months`` (looked up lowercase), or a year
    alone: the Spanish and Hindi patterns' groups ``m1``-``m4``, ``y1``/``y2``, ``d1``/``d3``
    and ``y5``."""
    g = match.groupdict()
    month_name = g["m1"] or g["m2"] or g["m3"] or g["m4"]
    if month_name:
        month = months.get(month_name.lower())
        if month is None:
            return None
        year = g["y1"] or g["y2"]
        dom = g["d1"] or g["d3"]
        return _day_or_month(int(year) if year else None, month, int(dom) if dom else None, anchor,
                             yearless=yearless)
    y = int(g["y5"])
    return DayRange(date(y, 1, 1), date(y, 12, 31))


def _es_relative(match: re.Match[str], anchor: date) -> DayRange | None:
    if _FOLDED_TO_ASCII.search(match.group(0)):
        return None
    g = match.groupdict()
    if (day := _named_day(g, anchor)) is not None:
        return day
    if g["unit"]:
        count = _ES_NUMBERS.get(g["n"].lower(), 0) if not g["n"].isdigit() else int(g["n"])
        unit = g["unit"].lower()
        unit = "day" if unit.startswith("d") else "week" if unit.startswith("s") else (
            "month" if unit.startswith("m") else "year")
        return _ago(anchor, unit, count) if count else None
    what = " ".join(g["what"].lower().split())
    lead = match.group(0).lower()
    direction = (g["dir"] or "").lower()
    if direction.startswith("pasad"):
        step = -1
    elif direction or "próxim" in lead or "proxim" in lead:
        step = 1
    elif lead.startswith(("este", "esta")):
        step = 0
    else:
        return None  # "el mes", "la semana" alone name no time
    period = _ES_WEEKDAYS.get(what) or _ES_SEASONS.get(what) or _ES_PERIODS.get(
        "fin de semana" if what.startswith("fin") else what
    )
    return None if period is None else _period(anchor, period, step)


def _word_relative(grammar: _WordGrammar, match: re.Match[str], anchor: date) -> DayRange | None:
    """A French, German, Italian or Portuguese relative expression (``grammar``'s)."""
    if _FOLDED_TO_ASCII.search(match.group(0)):
        return None
    g = match.groupdict()
    if (day := _named_day(g, anchor)) is not None:
        return day
    i = 0
    while f"unit{i}" in g:  # one pair of groups per form of "N units ago" (see _word_grammar)
        if g[f"unit{i}"]:
            n = " ".join(g[f"n{i}"].lower().split())
            count = int(n) if n.isdigit() else grammar.numbers.get(n, 0)
            return _ago(anchor, grammar.units[g[f"unit{i}"].lower()], count) if count else None
        i += 1
    what, which = (g.get("what1") or g.get("what2") or ""), (g.get("pre") or g.get("post") or "")
    period = grammar.periods.get(" ".join(what.lower().split()))
    step = grammar.steps.get(" ".join(which.lower().split()))
    return None if period is None or step is None else _period(anchor, period, step)


def _hi_absolute(match: re.Match[str], anchor: date | None, *, yearless: bool) -> _Reading:
    # (Devanagari has no case: lowercasing a Hindi month name leaves it as it is.)
    return _month_word_absolute(match, anchor, _HI_MONTHS, yearless=yearless)


def _hi_unit(word: str) -> str:
    """The unit a Hindi word names: दिन, हफ्ते / सप्ताह, सप्ताहांत / वीकेंड, महीने / मास, साल / वर्ष / बरस."""
    if word.startswith("दिन"):
        return "day"
    if word in ("वीकेंड", "सप्ताहांत"):
        return "weekend"
    if word.startswith(("ह", "सप्ताह")):
        return "week"
    if word.startswith(("महीन", "मास")):
        return "month"
    return "year"


def _hi_relative(match: re.Match[str], text: str, anchor: date) -> DayRange | None:
    g = match.groupdict()
    if g["today"]:
        return DayRange(anchor, anchor)
    if g["kal"] or g["parson"]:
        days = 1 if g["kal"] else 2
        # Its clause: up to the next clause end, and never past _HI_CLAUSE_WINDOW characters
        # (cut at a space): a transcript without punctuation has no clause end, and reading
        # to the text's end for every कल was quadratic (250,000 characters: 25 s).
        start = match.end()
        window = min(len(text), start + _HI_CLAUSE_WINDOW)
        if window < len(text):
            window = max(text.rfind(" ", start, window), start)
        clause_end = _HI_CLAUSE_END.search(text, start, window)
        end = clause_end.start() if clause_end else window
        future, past = _HI_FUTURE.search(text, start, end), _HI_PAST.search(text, start, end)
        if past and not future:
            d = anchor - timedelta(days=days)
            return DayRange(d, d)
        if future and not past:
            d = anchor + timedelta(days=days)
            return DayRange(d, d)
        return DayRange(anchor - timedelta(days=days), anchor + timedelta(days=days))
    if g["unit"]:
        count = int(g["n"]) if g["n"].isdigit() else _HI_NUMBERS.get(g["n"], 0)
        return _ago(anchor, _hi_unit(g["unit"]), count) if count else None
    rel = g["rel"]
    step = -1 if rel.startswith(("पिछल", "गत")) else 0 if rel == "इस" else 1
    return _period(anchor, _hi_unit(g["what"]), step)


def _a_full_date(match: re.Match[str], grammar: _WordGrammar) -> bool:
    """Whether an absolute match is a day of a month and a year, or a day of a month only
    ``grammar``'s language names ("7 juillet"): a date whatever else the text says."""
    return bool(match.group("d1")) or (bool(match.group("d3")) and match.group("m3").lower() in grammar.own_months)


# "début mai", "Anfang Mai 2023", "a finales de mayo", "all'inizio di maggio", "em meados de
# maio", "fin 2023": a third of the month or year that follows, as English "early May"
# (:func:`_third_of`). One table for French, German, Italian, Portuguese and Spanish: where
# two write the same word ("fin", "final") it means the same.
_OTHER_THIRD_WORDS = {
    "début": 0, "debut": 0, "mi": 1, "fin": 2,
    "anfang": 0, "mitte": 1, "ende": 2,
    "inizio": 0, "metà": 1, "fine": 2,
    "início": 0, "inicio": 0, "começo": 0, "comeco": 0, "meados": 1, "final": 2, "fim": 2,
    "principios": 0, "comienzos": 0, "inicios": 0, "mediados": 1, "finales": 2, "fines": 2,
}
_OTHER_THIRD = re.compile(
    rf"(?<!\w)(?P<w>{_alternatives(_OTHER_THIRD_WORDS)})(?:\s*-\s*|\s+)(?:(?:de|di|del|des|do|da)\s+|d['’]\s*)?"
    r"(?:el\s+(?:mes|año)\s+(?:de\s+)?)?$",
    re.IGNORECASE,
)
#: Chinese and Japanese write the third after the month or the year: 5月上旬 / 中旬 / 下旬,
#: 5月初 / 5月初め, 5月底 / 5月末, 2023年初 / 2023年底 / 2023年末 (not 初一, a lunar day).
_CJK_THIRD = re.compile(
    r"\s*の?\s*(?:(?P<early>上旬|初旬|初め|初(?![一二三四五六七八九十]))|(?P<mid>中旬)|(?P<late>下旬|末|底))"
)


def _other_third(
    match: re.Match[str], value: DayRange | tuple[int, int, int]
) -> tuple[int, int, DayRange | tuple[int, int, int]] | None:
    """A month's or a year's reading of another language's ``match`` narrowed to the third
    that words before its month or year (or, in Chinese and Japanese, after it) name, with
    the span that holds them; ``None`` when none does."""
    text, groups = match.string, match.groupdict()
    if "y" in groups:  # Chinese or Japanese
        if groups["yd"] or groups["d"] or groups.get("rd"):
            return None
        third = _CJK_THIRD.match(text, match.end())
        if third is None or (third.group("mid") and not (groups["ym"] or groups["m"] or groups["rm"])):
            return None
        nth = 0 if third.group("early") else 1 if third.group("mid") else 2
        narrowed = _third_of(value, nth)
        return None if narrowed is None else (match.start(), third.end(), narrowed)
    head = next((match.start(g) for g in ("m2", "m4", "y5") if groups.get(g)), None)
    if head is None:
        return None
    third = _OTHER_THIRD.search(text, max(0, head - 30), head)
    if third is None or (narrowed := _third_of(value, _OTHER_THIRD_WORDS[third.group("w").lower()])) is None:
        return None
    return min(match.start(), third.start()), match.end(), narrowed


def _the_holiday_named(match: re.Match[str]) -> bool:
    """Whether a holiday name of ``_HOLIDAY_LEADS`` is the holiday."""
    written, start = match.group("holiday"), match.start()
    lead = _HOLIDAY_LEADS[written.lower()].search(match.string, max(0, start - 12), start)
    return written[0].isupper() and (match.group("hy") is not None or lead is not None)


@functools.cache
def _other_holiday_pattern(code: str) -> re.Pattern[str]:
    names = _alternatives(_OTHER_HOLIDAYS[code])
    if code == "cjk":  # 2023年圣诞节, 2023年のクリスマス; 七夕情人节 is the lunar one
        return re.compile(rf"(?:(?P<hy>\d{{4}})\s*年\s*の?\s*)?(?<!七夕)(?<!中国)(?P<holiday>{names})")
    return re.compile(
        rf"(?<!\w)(?P<holiday>{names})(?!\w)(?:,?\s+(?:(?:de|del|di|du)\s+)?(?P<hy>1[89]\d\d|2[01]\d\d)\b)?",
        re.IGNORECASE,
    )


def _other_holidays(
    text: str, code: str, anchor: date | None, *, yearless: bool
) -> list[tuple[int, int, Sequence[DayRange | tuple[int, int, int]]]]:
    """The holidays of language ``code`` (a key of ``_OTHER_HOLIDAYS``) in ``text``, as
    ``(start, end, days)``: a movable one without a year falls on days of two months."""
    names = _OTHER_HOLIDAYS[code]
    found: list[tuple[int, int, Sequence[DayRange | tuple[int, int, int]]]] = []
    for match in _other_holiday_pattern(code).finditer(text):
        written, year = match.group("holiday"), match.group("hy")
        if written.lower() in _HOLIDAY_LEADS and not _the_holiday_named(match):
            continue
        with _PAST_THE_CALENDAR:
            name = names[" ".join(written.lower().replace("’", "'").split())] if code != "cjk" else names[written]
            value = _holiday_named(name, match, int(year) if year else None, "", anchor, yearless=yearless)
            if value is not None:
                found.append((match.start(), match.end(), [value] if isinstance(value, DayRange) else value))
    return found


def _scan_word_grammars(
    found: _Found,
    text: str,
    anchor: date | None,
    *,
    yearless: bool,
    grammars: Sequence[_WordGrammar],
    dated: Sequence[_WordGrammar] = (),
) -> None:
    """Add the time expressions of ``grammars`` (French, German, Italian, Portuguese) in
    ``text`` to ``found``, and the full dates (day, month, year) of ``dated``."""
    # A text may hold the words of several of these (French and German both write "Mai"):
    # where their readings overlap, the one starting first, of those the longest ("am 8.
    # Mai 2020", not French "Mai 2020").
    readings: list[tuple[int, int, Sequence[DayRange | tuple[int, int, int]]]] = []
    for grammar in (*grammars, *dated):
        full_dates_only = grammar in dated
        for match in grammar.absolute.finditer(text):
            if _FOLDED_TO_ASCII.search(match.group(0)) or (full_dates_only and not _a_full_date(match, grammar)):
                continue
            with _PAST_THE_CALENDAR:
                value = _month_word_absolute(match, anchor, grammar.months, yearless=yearless)
                if value is not None:
                    start, end, value = _other_third(match, value) or (match.start(), match.end(), value)
                    readings.append((start, end, [value]))
        if not full_dates_only:
            readings.extend(_other_holidays(text, grammar.code, anchor, yearless=yearless))
        if anchor is not None and not full_dates_only:
            for match in grammar.relative.finditer(text):
                with _PAST_THE_CALENDAR:
                    if (relative := _word_relative(grammar, match, anchor)) is not None:
                        readings.append((match.start(), match.end(), [relative]))
    for start, end, values in sorted(readings, key=lambda r: (r[0], -r[1])):
        found.add_all(start, end, values)


def _scan_other(found: _Found, text: str, anchor: date | None, *, yearless: bool, languages: _Languages) -> None:
    """Add the Chinese, Japanese, Spanish and Hindi time expressions of ``text`` (read
    through ``_READABLE``) to ``found`` (only of the ``languages`` the text may hold)."""
    # Holidays first: "2022年圣诞节" is the holiday of that year, not the year.
    for code, wanted in (("cjk", languages.cjk), ("es", languages.spanish)):
        if wanted:
            for start, end, days in _other_holidays(text, code, anchor, yearless=yearless):
                found.add_all(start, end, days)
    absolute = (
        (languages.cjk, _CJK_ABSOLUTE, _cjk_absolute),
        (languages.spanish, _ES_ABSOLUTE, _es_absolute),
        (languages.hindi, _HI_ABSOLUTE, _hi_absolute),
    )
    for wanted, pattern, read in absolute:
        if wanted:
            for match in pattern.finditer(text):
                with _PAST_THE_CALENDAR:
                    value = read(match, anchor, yearless=yearless)
                    if value is None:
                        continue
                    third = None if pattern is _HI_ABSOLUTE else _other_third(match, value)
                    found.add(*((match.start(), match.end(), value) if third is None else third))
    if anchor is None:
        return
    if languages.cjk:
        for match in _CJK_RELATIVE.finditer(text):
            with _PAST_THE_CALENDAR:
                if (value := _cjk_relative(match, anchor)) is not None:
                    found.add(match.start(), match.end(), value)
    if languages.spanish:
        for match in _ES_RELATIVE.finditer(text):
            with _PAST_THE_CALENDAR:
                if (value := _es_relative(match, anchor)) is not None:
                    found.add(match.start(), match.end(), value)
    if languages.hindi:
        for match in _HI_RELATIVE.finditer(text):
            with _PAST_THE_CALENDAR:
                if (value := _hi_relative(match, text, anchor)) is not None:
                    found.add(match.start(), match.end(), value)


#: Words after which a text may hold a time expression; texts without one skip the scan.
#: What an English time expression holds: one of these words or parts of words (any case),
#: or a match of ``_TRIGGER_PATTERNS``. A gate before the grammar, which most texts need
#: not pass: substring tests are several times faster than one alternation of them all.
_TRIGGER_WORDS = (
    "ago", "back", "yesterday", "today", "tonight", "tomorrow", "last", "this", "next", "past", "other day",
    "earlier", "weekend", "wkend", "wknd", "day", "yday", "yest", "tmrw", "tmrow", "tmr", "2morrow", "2moro",
    "2mrw", "tomoz", "tonite", "2nite", "2night", "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december", "spring", "summer", "autumn", "fall", "winter",
    "week", "wk", "month", "mnth", "mth", "previous", "christmas", "xmas", "x-mas", "year", "valentine",
    "hallowe", "patrick", "paddy", "good friday", "holy week", "easter", "thanksgiving", "fourth of july",
)
_TRIGGER_PATTERNS = re.compile(
    r"\d|\bon\s+(?:mon|tue|wed|thu|fri|sat)|(?:mon|tue|wed|thu|fri|sat)\w*\s+(?:morning|afternoon|evening|night|nite)"
    r"|\b(?:in|during|since|until)\s+(?:(?:early|mid|late)[\s-]+)?(?:jan|feb|apr|jun|jul|aug|sep|oct|nov|dec)",
    _ENGLISH,
)


def _may_name_a_time(text: str) -> bool:
    """Whether ``text`` holds something the English grammar reads (or may: a superset)."""
    lowered = text.lower()
    return any(word in lowered for word in _TRIGGER_WORDS) or _TRIGGER_PATTERNS.search(text) is not None


#: The grammar's words a misspelling may stand for (:func:`_time_words_respelt`).
_TIME_WORDS = frozenset(
    {"yesterday", "tomorrow", "tonight", "today", "week", "weekend", "month", "year", "morning", "afternoon",
     "evening", "night", "ago", "spring", "summer", "autumn", "winter", *_WEEKDAYS, *_MONTH_NAMES}
)


@functools.lru_cache(maxsize=1)
def _time_word_misspellings() -> frozenset[str]:
    """Every lowercase string one edit from one of ``_TIME_WORDS``, its first letter kept,
    long enough to be read as a typo (what :func:`graphmem._spelling.typo_correction` may
    read as one)."""
    from graphmem._spelling import MIN_TYPO_LETTERS, one_edit  # (it builds on the decomposer)

    return frozenset(s for word in _TIME_WORDS for s in one_edit(word) if len(s) >= MIN_TYPO_LETTERS)


#: The words of a text that may be such a string (``MIN_TYPO_LETTERS`` letters or more).
_LOWERCASE_WORD = re.compile(r"\b[a-z]{5,}\b")


def _time_words_respelt(text: str) -> tuple[str, list[tuple[int, int, int, int]]]:
    """``text`` with each misspelt word that stands for one of the grammar's words written
    as that word ("yesterdy", "tomorow", "Setpember"), as an entry's tokens are read
    (:func:`graphmem._spelling.typo_correction`), so that its time is read as its words are,
    and each date written short in full (:func:`_dates_in_full`: "May '23", "5/8/23",
    "2023/05/08"); and where each such word is, ``(start, end)`` in the new text and in
    ``text``. Most texts hold no such word: a set intersection tells, before any word is read."""
    meant: dict[str, str] = {}
    if text.isascii():
        lowered = text.lower()
        found = _time_word_misspellings().intersection(_LOWERCASE_WORD.findall(lowered))
        # Another language's time word is no misspelling: Spanish and Portuguese "abril" and
        # French "avril" are April in their own grammars, which read them ("en abril").
        meant = {
            word: time_word
            for word in found
            if not _another_languages_time_word(word) and (time_word := _time_word_for(word)) is not None
        }
        meant.update(_stretched_time_words(lowered))
    replacements = _dates_in_full(text, meant)
    if meant:
        for match in re.finditer(rf"\b(?:{'|'.join(meant)})\b", text, flags=re.IGNORECASE):
            written = match.group(0)
            word = meant[written.lower()]
            replacements.append((match.start(), match.end(), word.capitalize() if written[0].isupper() else word))
    if not replacements:
        return text, []
    pieces: list[str] = []
    moved: list[tuple[int, int, int, int]] = []
    at = length = 0
    # (The two kinds never overlap: misspelt words are letters, the dates' parts digits.)
    for start, end, word in sorted(replacements):
        pieces.append(text[at:start])
        length += start - at
        moved.append((length, length + len(word), start, end))
        pieces.append(word)
        length += len(word)
        at = end
    pieces.append(text[at:])
    return "".join(pieces), moved


#: A year written with two digits after an apostrophe ("May '23", "summer ’22"), where what
#: comes before makes it a date's: a month (and a day), a season or a holiday.
_SHORT_YEAR = re.compile(r"['’](?P<yy>\d\d)\b(?!['’]?s\b)")
_BEFORE_SHORT_YEAR = re.compile(
    rf"(?:\b{_MONTH.format(name='m')}(?:\s+{_DAY.format(name='d')})?|\b(?:spring|summer|autumn|fall|winter|christmas"
    r"|x-?mas|easter|thanksgiving|halloween))\s*,?\s*$",
    _ENGLISH,
)
#: Numeric dates with a two-digit year ("5/8/23": slash dates read month first, as with four
#: digits) or year first with slashes ("2023/05/08", "2023/5/8": read as ISO dates).
_SHORT_NUMERIC_DATE = re.compile(r"\b(?P<a>\d{1,2})/(?P<b>\d{1,2})/(?P<yy>\d\d)\b(?![/\d])")
_YEAR_FIRST_DATE = re.compile(
    r"(?<![\d/])(?P<y>1[89]\d\d|2[01]\d\d)/(?P<m>0?[1-9]|1[0-2])/(?P<d>[12]\d|3[01]|0?[1-9])\b(?!/)"
)


def _full_year(two_digits: str) -> str:
    """A two-digit year in full: 00-68 in the 2000s, 69-99 in the 1900s (POSIX's rule, as
    ``strptime``'s ``%y``)."""
    return ("20" if int(two_digits) <= 68 else "19") + two_digits


def _dates_in_full(text: str, misspelt: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """Where ``text`` writes a date short, and how the grammar reads it written in full:
    "May '23" as "May 2023", "5/8/23" as "5/8/2023", "2023/5/8" as "2023-05-08"; each as
    ``(start, end, written in full)``. ``misspelt``: the text's misspelt time words (lowercase)
    and the words they stand for, so that "Setpember '23" is September's."""
    found: list[tuple[int, int, str]] = []
    if "'" in text or "’" in text:
        respell = re.compile(rf"\b(?:{'|'.join(misspelt)})\b", re.IGNORECASE) if misspelt else None
        for match in _SHORT_YEAR.finditer(text):
            before = text[max(0, match.start() - 24) : match.start()]
            if respell is not None:
                before = respell.sub(lambda word: misspelt[word.group(0).lower()], before)
            if _BEFORE_SHORT_YEAR.search(before):
                found.append((match.start(), match.end(), _full_year(match.group("yy"))))
    if "/" in text:
        for match in _SHORT_NUMERIC_DATE.finditer(text):
            found.append((match.start("yy"), match.end("yy"), _full_year(match.group("yy"))))
        for match in _YEAR_FIRST_DATE.finditer(text):
            iso = f"{match.group('y')}-{int(match.group('m')):02d}-{int(match.group('d')):02d}"
            found.append((match.start(), match.end(), iso))
    return found


def _as_written(position: int, moved: Sequence[tuple[int, int, int, int]]) -> int:
    """A word boundary of a respelt text (:func:`_time_words_respelt`) in the text as
    written."""
    shift = 0
    for _, end, _, written_end in moved:
        if position < end:
            break
        shift = written_end - end
    return position + shift


def _another_languages_time_word(word: str) -> bool:
    roles = _WORD_ROLES.get(word)
    return roles is not None and bool(roles[0] or roles[2])


def _stretched_time_words(lowered: str) -> dict[str, str]:
    """The time words ``lowered`` stretches as chat does ("tomorrowww", "yesterdayyy":
    :func:`graphmem._spelling.unstretched`), each with the word it stretches."""
    if not _STRETCHED_WORD.search(lowered):
        return {}
    from graphmem._spelling import unstretched

    return {
        match.group(0): reading
        for match in _STRETCHED_WORD.finditer(lowered)
        if (reading := unstretched(match.group(0))) in _TIME_WORDS
    }


#: A word with a letter typed three times or more in a row.
_STRETCHED_WORD = re.compile(r"\b[a-z]*([a-z])\1\1[a-z]*\b")


def _time_word_for(word: str) -> str | None:
    from graphmem._spelling import typo_correction

    meant = typo_correction(word)
    return meant if meant in _TIME_WORDS else None


def mentioned_ranges(text: str, said_at: datetime) -> tuple[DayRange, ...]:
    """The day ranges that the time expressions in ``text`` refer to, resolved against the
    day the text was said (``said_at``, UTC), in order of appearance, without repeats. A
    misspelt time word is read as the word (:func:`_time_words_respelt`)."""
    text, _ = _time_words_respelt(text)
    others = _other_languages(text)
    if not others and not _may_name_a_time(text):
        return ()
    found = _scan(text, said_at, others=others)
    ranges = [v for _, _, v in sorted(found.ranges, key=lambda r: r[0]) if isinstance(v, DayRange)]
    return tuple(dict.fromkeys(ranges))


def query_time(query: str, as_of: datetime | None = None) -> QueryTime | None:
    """The time a query asks about, or ``None`` when it names none.

    Dates with a year and ranges anchored to one are absolute; a month or day without a
    year matches it in any year; relative expressions ("last summer", "yesterday") need
    ``as_of`` (the moment the question is asked) and are ignored without it. A misspelt
    time word is read as the word ("in Setpember 2023"); ``spans`` are offsets into the
    query as written.
    """
    query, moved = _time_words_respelt(query)
    others = _other_languages(query)
    if not others and not _may_name_a_time(query):
        return None
    found = _scan(query, as_of, yearless=True, others=others)
    if not found.ranges:
        return None
    ordered = sorted(found.ranges, key=lambda r: r[0])
    return QueryTime(
        ranges=tuple(dict.fromkeys(v for _, _, v in ordered if isinstance(v, DayRange))),
        yearless=tuple(dict.fromkeys(v for _, _, v in ordered if not isinstance(v, DayRange))),
        spans=tuple(dict.fromkeys((_as_written(s, moved), _as_written(e, moved)) for s, e, _ in ordered)),
    )
