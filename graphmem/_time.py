"""Time expressions: dates in queries, and relative times inside entries, as day ranges.

Two uses, one grammar (English):

- **At ingest** (:func:`mentioned_ranges`): "yesterday", "last week", "two years ago",
  "next month", "in May", "on 3 May 2022" ... inside an entry's text are resolved against
  the entry's own timestamp into day ranges, stored on the entry as ``time_refs``
  (ISO 8601 intervals such as ``"2023-05-01/2023-05-31"``), so a question about May also
  finds "I went there last week" said in early June.
- **In a query** (:func:`query_time`): a date or range ("on 1 May, 2022", "in October
  2023", "in 2022", "29 Dec 2023", "29.12.2023", "the week before 3 June 2023", "last
  summer" relative to ``as_of``) becomes a :class:`QueryTime`; the scorer favours entries
  whose own day or one of whose ``time_refs`` falls in it. A month or day named without a
  year ("in June", "on 3 May") matches that month or day of any year: a question rarely
  means "of the current year" and the memory knows which years it holds.

Everything here is pure and offline (regular expressions over the text, calendar
arithmetic); nothing is learnt. Seasons are those of the northern hemisphere
(spring = March to May, summer = June to August, autumn = September to November,
winter = December to February). Weeks start on Monday. Slash dates read month first
(``5/3/2023`` is 3 May) unless the first number cannot be a month; dotted dates read day
first (``29.12.2023``); ISO dates are ``2023-12-29``.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

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

    def describe(self) -> str:
        parts = [r.iso() for r in self.ranges]
        parts += [f"--{m:02d}-{a:02d}/--{m:02d}-{b:02d}" for m, a, b in self.yearless]
        return ", ".join(parts)

    def longest_days(self) -> int:
        """The length in days of the query's longest range (a month named without a year: 31)."""
        lengths = [r.last.toordinal() - r.first.toordinal() + 1 for r in self.ranges]
        lengths += [b - a + 1 for _, a, b in self.yearless]
        return max(lengths, default=1)

    def matches_day(self, ordinal: int, *, after: int = 0) -> bool:
        """Whether the day (a ``date.toordinal()``) is in the query's time, or at most
        ``after`` days past its end (an event is told about on the day or later)."""
        for r in self.ranges:
            lo, hi = r.ordinals
            if lo <= ordinal <= hi + after:
                return True
        if self.yearless:
            day = date.fromordinal(ordinal)
            for month, a, b in self.yearless:
                for back in range(after + 1):
                    d = day - timedelta(days=back) if back else day
                    if d.month == month and a <= d.day <= b:
                        return True
        return False

    def overlaps(self, lo: int, hi: int) -> bool:
        """Whether the day range ``lo..hi`` (ordinals) shares a day with the query's time."""
        for r in self.ranges:
            a, b = r.ordinals
            if lo <= b and a <= hi:
                return True
        if self.yearless:
            if hi - lo > 400:
                return True  # a range of more than a year holds every month
            for month, a, b in self.yearless:
                for year in range(date.fromordinal(lo).year, date.fromordinal(hi).year + 1):
                    last = calendar.monthrange(year, month)[1]
                    start = date(year, month, min(a, last)).toordinal()
                    end = date(year, month, min(b, last)).toordinal()
                    if lo <= end and start <= hi:
                        return True
        return False


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
    "few": 3, "a few": 3,
}

_MONTH = (
    r"(?P<{name}>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?P<{name}>[12]\d|3[01]|0?[1-9])(?:st|nd|rd|th)?"
_YEAR = r"(?P<{name}>1[89]\d\d|2[01]\d\d)"
_NUM = (
    r"(?P<n>\d{1,2}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten"
    r"|eleven|twelve)"
)
_UNIT = r"(?P<unit>day|week|weekend|month|year)s?"


def _m(name: str) -> str:
    return _MONTH.format(name=name)


def _d(name: str) -> str:
    return _DAY.format(name=name)


def _y(name: str) -> str:
    return _YEAR.format(name=name)


# A full date, a month of a year, a day of a month, as one alternation with named groups.
_ABSOLUTE = re.compile(
    r"\b(?:"
    rf"{_d('d1')}\s+(?:of\s+)?{_m('m1')},?\s+{_y('y1')}"  # 8 May, 2023 / 8th of May 2023
    rf"|{_m('m2')}\s+{_d('d2')},?\s+{_y('y2')}"  # May 8, 2023
    rf"|{_y('y3')}-(?P<m3>0[1-9]|1[0-2])-(?P<d3>0[1-9]|[12]\d|3[01])"  # 2023-05-08
    rf"|(?P<d4>0?[1-9]|[12]\d|3[01])\.(?P<m4>0?[1-9]|1[0-2])\.{_y('y4')}"  # 8.5.2023
    rf"|(?P<a5>\d{{1,2}})/(?P<b5>\d{{1,2}})/{_y('y5')}"  # 5/8/2023
    rf"|{_m('m6')},?\s+(?:of\s+)?{_y('y6')}"  # May 2023
    rf"|(?P<season7>spring|summer|autumn|fall|winter)\s+(?:of\s+)?{_y('y7')}"  # summer 2022
    rf"|{_d('d8')}\s+(?:of\s+)?{_m('m8')}"  # 8 May (no year)
    rf"|{_m('m9')}\s+{_d('d9')}(?![\d:])"  # May 8 (no year)
    rf"|(?:in|during|since|until|throughout|of|by|from|before|after|early|mid|late)\s+{_y('y10')}"  # in 2022
    r")\b(?!-)",
    re.IGNORECASE,
)
# A month alone. "May", "March" and "August" are also words: a month must be capitalised,
# and those three must follow a word that introduces a time.
_MONTH_ALONE = re.compile(
    r"\b(?P<lead>(?i:in|during|since|until|by|of|early|mid|late|this|last|next|past)\s+(?i:early\s+|mid\s+|late\s+)?)?"
    r"(?P<month>January|February|March|April|May|June|July|August|September|October|November|December)\b"
)
_RELATIVE = re.compile(
    r"\b(?:"
    r"(?P<today>today|tonight|this (?:morning|afternoon|evening))"
    r"|(?P<yesterday>yesterday|last night)"
    r"|(?P<tomorrow>tomorrow)"
    rf"|{_NUM}\s+{_UNIT}\s+ago"
    r"|(?P<rel>last|this|next|past)\s+(?P<what>week|weekend|month|year|spring|summer|autumn|fall|winter|"
    r"monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?P<earlier>earlier) this (?P<period>week|month|year)"
    r"|(?P<otherday>the other day)"
    r")\b",
    re.IGNORECASE,
)
# "the week before 3 June 2023", "two weeks before August 11, 2023", "the day after ...":
# a shift of the absolute date that follows.
_SHIFT = re.compile(
    rf"\b(?:the\s+|last\s+)?(?:{_NUM}\s+)?{_UNIT}\s+(?P<dir>before|after)\s+$",
    re.IGNORECASE,
)


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
    """The year in which (month, day) lies closest to ``anchor``, the past winning ties."""
    best: tuple[int, int] | None = None
    for year in (anchor.year - 1, anchor.year, anchor.year + 1):
        target = _safe_date(year, month, day or 15)
        if target is None:
            continue
        distance = abs((target - anchor).days) + (0 if target <= anchor else 1)
        if best is None or distance < best[0]:
            best = (distance, year)
    return best[1] if best else anchor.year


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


class _Found:
    """Matches collected over one text, keeping the first match of overlapping spans."""

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int, DayRange | tuple[int, int, int]]] = []

    def free(self, start: int, end: int) -> bool:
        return all(end <= s or e <= start for s, e, _ in self.ranges)

    def add(self, start: int, end: int, value: DayRange | tuple[int, int, int]) -> None:
        if self.free(start, end):
            self.ranges.append((start, end, value))


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
        day = _safe_date(_nearest_year(anchor, month, dom), month, dom)
        return DayRange(day, day) if day else None
    if g["y10"]:
        y = int(g["y10"])
        return DayRange(date(y, 1, 1), date(y, 12, 31))
    return None


def _relative(match: re.Match[str], anchor: date) -> DayRange | None:
    g = match.groupdict()
    if g["today"]:
        return DayRange(anchor, anchor)
    if g["yesterday"]:
        d = anchor - timedelta(days=1)
        return DayRange(d, d)
    if g["tomorrow"]:
        d = anchor + timedelta(days=1)
        return DayRange(d, d)
    if g["unit"]:  # N units ago
        n = _number(g["n"])
        return _shifted(DayRange(anchor, anchor), g["unit"], n, "before") if g["unit"].lower() != "day" else (
            DayRange(anchor - timedelta(days=n), anchor - timedelta(days=n))
        )
    if g["otherday"]:
        return DayRange(anchor - timedelta(days=7), anchor - timedelta(days=1))
    if g["earlier"]:
        period = g["period"].lower()
        if period == "week":
            return DayRange(_week_of(anchor).first, anchor)
        if period == "month":
            return DayRange(anchor.replace(day=1), anchor)
        return DayRange(date(anchor.year, 1, 1), anchor)
    rel, what = g["rel"].lower(), g["what"].lower()
    step = {"last": -1, "past": -1, "this": 0, "next": 1}[rel]
    if what == "week":
        if rel == "past":
            return DayRange(anchor - timedelta(days=7), anchor)
        week = _week_of(anchor + timedelta(days=7 * step))
        return week
    if what == "weekend":
        week = _week_of(anchor + timedelta(days=7 * step))
        return DayRange(week.first + timedelta(days=5), week.last)
    if what == "month":
        if rel == "past":
            return DayRange(anchor - timedelta(days=30), anchor)
        y, m = _add_months(anchor.year, anchor.month, step)
        return _month_range(y, m)
    if what == "year":
        if rel == "past":
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
    if step <= 0:  # last/past/this Friday: the most recent one before the anchor
        back = (anchor.weekday() - weekday) % 7 or 7
        d = anchor - timedelta(days=back)
    else:
        ahead = (weekday - anchor.weekday()) % 7 or 7
        d = anchor + timedelta(days=ahead)
    return DayRange(d, d)


def _scan(text: str, anchor: date | None, *, yearless: bool = False) -> _Found:
    """Every time expression of ``text``; relative ones only with an ``anchor``. With
    ``yearless``, a month or day named without a year is kept as such (a query's reading)
    instead of being placed in the year nearest the anchor (an entry's reading)."""
    found = _Found()
    for match in _ABSOLUTE.finditer(text):
        value = _absolute(match, anchor, yearless=yearless)
        if value is None:
            continue
        start = match.start()
        shift = _SHIFT.search(text, max(0, start - 40), start)
        if shift and isinstance(value, DayRange):
            value = _shifted(value, shift.group("unit"), _number(shift.group("n")), shift.group("dir").lower())
            start = shift.start()
        found.add(start, match.end(), value)
    for match in _MONTH_ALONE.finditer(text):
        if not found.free(match.start("month"), match.end("month")):
            continue
        name = match.group("month")
        if name in ("May", "March", "August") and not match.group("lead"):
            continue
        month = _MONTH_NAMES[name.lower()]
        lead = (match.group("lead") or "").split()
        step = {"last": -1, "past": -1, "next": 1}.get(lead[0].lower(), 0) if lead else 0
        if (yearless or anchor is None) and not step:
            found.add(match.start(), match.end(), (month, 1, 31))
            continue
        if anchor is None:
            continue
        year = _nearest_year(anchor, month, None)
        if step < 0 and date(year, month, 1) > anchor:
            year -= 1
        elif step > 0 and date(year, month, 1) <= anchor:
            year += 1
        found.add(match.start(), match.end(), _month_range(year, month))
    if anchor is not None:
        for match in _RELATIVE.finditer(text):
            value = _relative(match, anchor)
            if value is not None:
                found.add(match.start(), match.end(), value)
    return found


#: Words after which a text may hold a time expression; texts without one skip the scan.
_TRIGGER = re.compile(
    r"\d|ago|yesterday|today|tonight|tomorrow|last|this|next|past|other day|earlier|"
    r"January|February|March|April|May|June|July|August|September|October|November|December|"
    r"spring|summer|autumn|fall|winter",
    re.IGNORECASE,
)


def mentioned_ranges(text: str, said_at: datetime) -> tuple[DayRange, ...]:
    """The day ranges that the time expressions in ``text`` refer to, resolved against the
    day the text was said (``said_at``, UTC), in order of appearance, without repeats."""
    if not _TRIGGER.search(text):
        return ()
    anchor = said_at.date()
    found = _scan(text, anchor)
    ranges = [v for _, _, v in sorted(found.ranges, key=lambda r: r[0]) if isinstance(v, DayRange)]
    return tuple(dict.fromkeys(ranges))


def query_time(query: str, as_of: datetime | None = None) -> QueryTime | None:
    """The time a query asks about, or ``None`` when it names none.

    Dates with a year and ranges anchored to one are absolute; a month or day without a
    year matches it in any year; relative expressions ("last summer", "yesterday") need
    ``as_of`` (the moment the question is asked) and are ignored without it.
    """
    if not _TRIGGER.search(query):
        return None
    found = _scan(query, as_of.date() if as_of is not None else None, yearless=True)
    if not found.ranges:
        return None
    ordered = sorted(found.ranges, key=lambda r: r[0])
    return QueryTime(
        ranges=tuple(dict.fromkeys(v for _, _, v in ordered if isinstance(v, DayRange))),
        yearless=tuple(dict.fromkeys(v for _, _, v in ordered if not isinstance(v, DayRange))),
        spans=tuple((s, e) for s, e, _ in ordered),
    )
