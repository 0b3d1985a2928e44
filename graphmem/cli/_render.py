"""Rich tables and JSON for the command outputs.

Text that came from users (entries, authors, ids, Cypher results) is always shown as text:
never parsed as rich markup (``[/b]`` in a message would crash the table), and with control
characters made visible, so an ANSI escape or a bidi override in stored text cannot restyle
or reorder the terminal.
"""

from __future__ import annotations

import codecs
import json
import sys
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from graphmem._fixtures import LoadReport
from graphmem._models import MemoryEntry, SearchHit
from graphmem._service import MemoryStats

__all__ = [
    "can_write",
    "cypher_table",
    "decorated",
    "hits_table",
    "load_summary",
    "plain",
    "print_json",
    "recent_table",
    "stats_table",
    "visible",
]

ENTRY_STYLE = "bold #4C78A8"
TOKEN_STYLE = "#2E8B57"
ENTITY_STYLE = "bold #E8710A"


# Bidi embeddings, overrides, isolates and marks: they reorder the text around them.
_BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Line and paragraph separators: a terminal may break the line or not; either way they hide.
_INVISIBLE = _BIDI_CONTROLS | {"\u2028", "\u2029"}


def visible(text: str) -> str:
    """``text`` with every control character written out as an escape (``\\x1b``, ``\\u202e``),
    and each character standard output's encoding lacks too (:func:`writable`).

    Newlines and tabs are kept (messages have lines); everything else in Unicode category
    Cc (ANSI escapes, carriage returns, C1 controls) and the bidi controls become visible.
    Other characters, including emoji joiners and non-Latin scripts, are left alone where
    the output can write them.
    """
    return writable(_controls_visible(text))


def _controls_visible(text: str) -> str:
    if text.isprintable():  # the common case, one C-level scan
        return text
    out = []
    for ch in text:
        if ch in "\n\t" or (unicodedata.category(ch) != "Cc" and ch not in _INVISIBLE):
            out.append(ch)
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(f"\\u{ord(ch):04x}")
    return "".join(out)


def plain(text: str, style: str = "") -> Text:
    """User text for a rich cell or line: shown as it is (no markup), :func:`visible`."""
    return Text(visible(text), style)


def writable(text: str) -> str:
    """``text`` with each character standard output's encoding cannot write as its
    backslash escape, as the command line's streams would write it (``errors=
    "backslashreplace"``), but before a table measures it: escaped by the stream, a cell
    grew after its column's width was set."""
    encoding = sys.stdout.encoding or "utf-8"
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        pass
    return text


def print_json(data: Any) -> None:
    """Write ``data`` as JSON to stdout (never wrapped or coloured: it is for machines).

    On a stdout that is not UTF-8 (an ASCII or C locale, a cp1252 pipe) every character
    beyond ASCII is written as a JSON escape (``\\u00e9``), which every JSON reader reads
    back: the output a program depends on never fails on a character.
    """
    try:
        utf = codecs.lookup(sys.stdout.encoding or "utf-8").name.startswith("utf")
    except LookupError:
        utf = False
    sys.stdout.write(json.dumps(data, ensure_ascii=not utf, indent=2, default=str) + "\n")
    sys.stdout.flush()


#: The command line's own decoration, and what stands for it where the output's encoding
#: has no room for it (ASCII, Latin-1): decoration is never escaped, nor an error.
_DECORATION_IN_ASCII = {"·": "-", "“": '"', "”": '"', "…": "..."}


def can_write(console: Console, text: str) -> bool:
    """Whether ``console``'s encoding can write ``text``."""
    try:
        text.encode(console.encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def decorated(console: Console, text: str) -> str:
    """``text``, with the command line's decoration characters (``·``, curly quotes, ``…``)
    that ``console`` cannot write replaced by ASCII ones."""
    return "".join(
        _DECORATION_IN_ASCII[ch] if ch in _DECORATION_IN_ASCII and not can_write(console, ch) else ch for ch in text
    )


def when(timestamp: datetime) -> str:
    # isoformat, not strftime: strftime writes year 1 as "1", not "0001".
    return timestamp.isoformat(sep=" ", timespec="minutes")[:16]


def day(timestamp: datetime) -> str:
    return timestamp.date().isoformat()


def matched(hit: SearchHit, rows: Mapping[str, int] | None = None, *, show_ids: bool = True) -> Text:
    """Matched entities and tokens, how much of the score came from context (and from which
    turn: ``#n`` when it is shown in row ``n`` of ``rows``, "this reply" when in the hit's
    own row, else its short id when ids are shown), how the entry matched a time in the
    query, and whether a speaker the query names said it. A token read for a query word
    says so ("(for persue)", "(related to pet)")."""
    text = Text()
    for name in hit.matched_entities:
        text.append(visible(name), ENTITY_STYLE).append(" ")
    read_from = {token: word for word, token in hit.read_as.items()}
    for token in hit.matched_tokens:
        if token not in hit.matched_entities:
            text.append(visible(token), TOKEN_STYLE).append(" ")
            if token in read_from:
                text.append(f"(for {visible(read_from[token])}) ", "italic dim")
            elif token in hit.related_to:
                text.append(f"(related to {visible(hit.related_to[token])}) ", "italic dim")
    if hit.context_score > 0:
        share = hit.context_score / hit.score if hit.score else 0.0
        # All of it context: the entry matched nothing asked (or only the speaker asked about,
        # "user" for "I"), whatever it holds.
        note = "context" if hit.score - hit.context_score <= 1e-12 else f"+ context {share:.0%}"
        if hit.context_from is not None and rows and hit.context_from in rows:
            row = rows[hit.context_from]
            note += " of this reply" if row == rows.get(hit.entry_id) else f" of #{row}"
        elif hit.context_from is not None and show_ids:
            note += f" of {visible(hit.context_from[:8])}"  # as the id column shows ids
        text.append(f"({note})", "italic dim")
    if hit.matched_time is not None:
        # Alone (a date asked alone matches no word) without the space that parts it from words.
        text.append(f"{' ' if text.plain else ''}({hit.matched_time})", "italic dim")
    if hit.by_named_speaker is False:
        text.append(" (not the speaker asked about)", "italic dim")
    return text


def hits_table(
    hits: Sequence[SearchHit],
    *,
    width: int = 120,
    show_ids: bool = True,
    show_time: bool = True,
    expand: bool = False,
) -> Table:
    """Score, (id,) author, (time,) text and what matched, best first.

    Below 110 columns the id is left out and the time shortened to the date, so that the
    text keeps room.
    """
    compact = width < 110
    table = Table(pad_edge=False, expand=expand)
    table.add_column("#", justify="right", style="dim", no_wrap=True)  # "context of #2" names a row
    table.add_column("score", justify="right", style="bold", no_wrap=True)
    if show_ids and not compact:
        table.add_column("id", style="dim", no_wrap=True)
    table.add_column("author", no_wrap=True, max_width=14, overflow="ellipsis")
    if show_time:
        table.add_column("date" if compact else "time", style="dim", no_wrap=True)
    table.add_column("text", ratio=3, overflow="fold")
    table.add_column("matched", ratio=1, min_width=12, max_width=28)
    # A message folded into a hit is shown in that hit's row, which "context of #n" then names
    # (its id is in no column).
    rows = {message.entry_id: number for number, hit in enumerate(hits, start=1) for message in hit.reply}
    for hit in hits:
        cells: list[Any] = [str(rows[hit.entry_id]), f"{hit.score:.3f}"]
        if show_ids and not compact:
            cells.append(plain(hit.entry_id[:8]))
        cells.append(plain(hit.memory.author))
        if show_time:
            stamp = Text(day(hit.memory.timestamp) if compact else when(hit.memory.timestamp))
            if hit.project_id:
                stamp.append("\n").append(visible(hit.project_id), "dim")
            cells.append(stamp)
        text = Text()
        for message in hit.reply:  # the reply's other recalled messages, dim (rule 7)
            if text:
                text.append("\n")
            text.append(visible(message.memory.text), "" if message is hit else "dim")
        cells += [text, matched(hit, rows, show_ids=show_ids and not compact)]
        table.add_row(*cells)
    return table


def recent_table(entries: Sequence[MemoryEntry]) -> Table:
    table = Table(pad_edge=False)
    table.add_column("time", style="dim", no_wrap=True)
    table.add_column("author", no_wrap=True)
    table.add_column("role", style="dim")
    table.add_column("text", overflow="fold")
    for entry in entries:
        table.add_row(when(entry.timestamp), plain(entry.author), plain(entry.content.role), plain(entry.text))
    return table


def stats_table(stats: MemoryStats) -> Table:
    table = Table(pad_edge=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for name in ("users", "entries", "tokens", "entities", "sessions", "projects"):
        table.add_row(name, str(getattr(stats, name)))
    return table


def cell(value: Any) -> Text:
    if value is None:
        return Text("null", "dim italic")
    if isinstance(value, (dict, list)):
        return plain(json.dumps(value, ensure_ascii=False, default=str))
    return plain(str(value))


def cypher_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    table = Table(pad_edge=False)
    for column in columns:
        table.add_column(plain(column), overflow="fold")
    for row in rows:
        table.add_row(*(cell(v) for v in row))
    return table


def load_summary(report: LoadReport, where: str) -> str:
    skipped = (
        f"; left out {report.skipped_project_sessions} project session"
        f"{'s' if report.skipped_project_sessions != 1 else ''} (--skip-projects)"
        if report.skipped_project_sessions
        else ""
    )
    return (
        f"loaded {report.sessions} session{'s' if report.sessions != 1 else ''}, "
        f"{report.entries} {'entry' if report.entries == 1 else 'entries'}, "
        f"{report.users} user{'s' if report.users != 1 else ''} "
        f"into {where} in {report.seconds:.1f} s{skipped}"
    )
