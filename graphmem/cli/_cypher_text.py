"""Cypher as text: a tokenizer, the read-only check, and the networkx dialect.

No query is parsed here, only tokenized: string literals, backtick names and comments are
recognised so that a word inside them is never mistaken for a clause. That is enough to

- refuse writes before they reach a backend (:func:`find_write`): a keyword such as
  ``CREATE`` outside strings and comments, used as a clause rather than as a property,
  label or map key. On Neo4j the query also runs in a READ transaction, a second guard.
- rewrite a query for grand-cypher (:func:`to_grand_cypher`), which reads a subset of
  Cypher: parameters become literals, comments go, strings become double-quoted,
  ``count(...)`` becomes ``COUNT(...)`` and ``x.p IS NOT NULL`` becomes
  ``NOT x.p IS NULL``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "CypherTextError",
    "Token",
    "WriteClause",
    "find_write",
    "grand_cypher_literal",
    "parameter_names",
    "return_columns",
    "to_grand_cypher",
    "tokenize",
]


class CypherTextError(ValueError):
    """The query text cannot be tokenized, or cannot be rewritten for grand-cypher."""


@dataclass(frozen=True, slots=True)
class Token:
    """A piece of query text.

    ``kind`` is one of ``space``, ``comment``, ``string``, ``name`` (a backtick-quoted
    name), ``param``, ``word``, ``number`` or ``punct``. ``value`` is the decoded text of a
    string or backtick name, or the name of a parameter.
    """

    kind: str
    text: str
    start: int
    value: str = ""


_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"[^\W\d]\w*")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_PARAM = re.compile(r"\$(?:[^\W\d]\w*|\d+)")
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", "'": "'", '"': '"', "\\": "\\"}


def _position(query: str, offset: int) -> str:
    line = query.count("\n", 0, offset) + 1
    column = offset - (query.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _read_string(query: str, start: int) -> tuple[int, str]:
    quote = query[start]
    chars: list[str] = []
    i = start + 1
    while i < len(query):
        ch = query[i]
        if ch == quote:
            return i + 1, "".join(chars)
        if ch == "\\" and i + 1 < len(query):
            code = query[i + 1]
            if code in _ESCAPES:
                chars.append(_ESCAPES[code])
                i += 2
                continue
            width = 4 if code == "u" else 8 if code == "U" else 0
            digits = query[i + 2 : i + 2 + width]
            if width and len(digits) == width and all(c in "0123456789abcdefABCDEF" for c in digits):
                chars.append(chr(int(digits, 16)))
                i += 2 + width
                continue
            chars.append(code)
            i += 2
            continue
        chars.append(ch)
        i += 1
    raise CypherTextError(f"unterminated string starting at {_position(query, start)}")


def _read_backtick(query: str, start: int) -> tuple[int, str]:
    chars: list[str] = []
    i = start + 1
    while i < len(query):
        if query[i] == "`":
            if query.startswith("``", i):  # a doubled backtick is a literal backtick
                chars.append("`")
                i += 2
                continue
            return i + 1, "".join(chars)
        chars.append(query[i])
        i += 1
    raise CypherTextError(f"unterminated `name` starting at {_position(query, start)}")


def tokenize(query: str) -> list[Token]:
    """Split Cypher text into tokens; their texts joined give the query back unchanged.

    Raises:
        CypherTextError: an unterminated string, backtick name or block comment.
    """
    tokens: list[Token] = []
    i = 0
    while i < len(query):
        ch = query[i]
        if match := _SPACE.match(query, i):
            tokens.append(Token("space", match.group(), i))
            i = match.end()
        elif query.startswith("//", i):
            end = query.find("\n", i)
            end = len(query) if end < 0 else end
            tokens.append(Token("comment", query[i:end], i))
            i = end
        elif query.startswith("/*", i):
            end = query.find("*/", i + 2)
            if end < 0:
                raise CypherTextError(f"unterminated /* comment starting at {_position(query, i)}")
            tokens.append(Token("comment", query[i : end + 2], i))
            i = end + 2
        elif ch in "'\"":
            end, value = _read_string(query, i)
            tokens.append(Token("string", query[i:end], i, value))
            i = end
        elif ch == "`":
            end, value = _read_backtick(query, i)
            tokens.append(Token("name", query[i:end], i, value))
            i = end
        elif ch == "$" and query.startswith("$`", i):
            end, value = _read_backtick(query, i + 1)
            tokens.append(Token("param", query[i:end], i, value))
            i = end
        elif match := _PARAM.match(query, i):
            tokens.append(Token("param", match.group(), i, match.group()[1:]))
            i = match.end()
        elif match := _WORD.match(query, i):
            tokens.append(Token("word", match.group(), i))
            i = match.end()
        elif match := _NUMBER.match(query, i):
            tokens.append(Token("number", match.group(), i))
            i = match.end()
        else:
            tokens.append(Token("punct", ch, i))
            i += 1
    return tokens


def _significant(tokens: list[Token]) -> list[Token]:
    return [t for t in tokens if t.kind not in ("space", "comment")]


# ---------------------------------------------------------------------------- read-only check

#: Clause keywords that change data, schema or users. ``DETACH`` starts ``DETACH DELETE``.
_WRITE_KEYWORDS = frozenset(
    {
        "CREATE",
        "MERGE",
        "SET",
        "DELETE",
        "DETACH",
        "REMOVE",
        "DROP",
        "FOREACH",
        "INSERT",
        "ALTER",
        "GRANT",
        "DENY",
        "REVOKE",
        "RENAME",
    }
)
#: Two-word phrases that change something (or run outside a read transaction).
_WRITE_PHRASES = {
    ("LOAD", "CSV"): "LOAD CSV",
    ("IN", "TRANSACTIONS"): "CALL { ... } IN TRANSACTIONS",
    ("PERIODIC", "COMMIT"): "USING PERIODIC COMMIT",
    ("START", "DATABASE"): "START DATABASE",
    ("STOP", "DATABASE"): "STOP DATABASE",
    ("TERMINATE", "TRANSACTION"): "TERMINATE TRANSACTION",
    ("TERMINATE", "TRANSACTIONS"): "TERMINATE TRANSACTIONS",
}
#: After these a word is a property, label, type or alias, never a clause.
_NAME_CONTEXT = frozenset({".", ":", "|", "&", "!", "(", "AS"})


@dataclass(frozen=True, slots=True)
class WriteClause:
    """A write found in a query: the clause and where it starts."""

    clause: str
    where: str


def find_write(query: str) -> WriteClause | None:
    """The first clause of ``query`` that would write, or ``None`` for a read-only query.

    Words in strings, comments and backtick names are ignored, and so are words used as a
    property (``n.set``), label or type (``:Delete``), map key (``{create: 1}``) or alias
    (``AS merge``).
    """
    sig = _significant(tokenize(query))
    for index, token in enumerate(sig):
        if token.kind != "word":
            continue
        word = token.text.upper()
        before = sig[index - 1].text.upper() if index else ""
        after = sig[index + 1] if index + 1 < len(sig) else None
        if before in _NAME_CONTEXT or (after is not None and after.text == ":" and before in ("{", ",")):
            continue
        if after is not None and after.kind == "word" and (word, after.text.upper()) in _WRITE_PHRASES:
            return WriteClause(_WRITE_PHRASES[(word, after.text.upper())], _position(query, token.start))
        if word in _WRITE_KEYWORDS:
            clause = "DETACH DELETE" if word == "DETACH" else word
            return WriteClause(clause, _position(query, token.start))
    return None


def parameter_names(query: str) -> set[str]:
    """The ``$parameters`` a query uses."""
    return {t.value for t in tokenize(query) if t.kind == "param"}


def return_columns(query: str) -> list[str]:
    """The column names of the query's final RETURN, as Neo4j names them.

    A column is its alias, or else the expression as written. Used to give grand-cypher's
    columns (which come back in another order when there is an ORDER BY) Neo4j's order
    and names.
    """
    tokens = _significant(tokenize(query))
    depth = 0
    start = None
    for index, token in enumerate(tokens):
        if token.text in "([{":
            depth += 1
        elif token.text in ")]}":
            depth -= 1
        elif depth == 0 and token.kind == "word" and token.text.upper() == "RETURN":
            start = index + 1
    if start is None:
        return []
    if start < len(tokens) and tokens[start].kind == "word" and tokens[start].text.upper() == "DISTINCT":
        start += 1
    items: list[list[Token]] = [[]]
    depth = 0
    for index in range(start, len(tokens)):
        token = tokens[index]
        word = token.text.upper() if token.kind == "word" else ""
        following = tokens[index + 1].text.upper() if index + 1 < len(tokens) else ""
        if depth == 0 and (word in ("SKIP", "LIMIT") or (word == "ORDER" and following == "BY") or token.text == ";"):
            break
        if token.text in "([{":
            depth += 1
        elif token.text in ")]}":
            depth -= 1
        if depth == 0 and token.text == ",":
            items.append([])
            continue
        items[-1].append(token)
    columns = []
    for item in items:
        if not item:
            continue
        if len(item) >= 3 and item[-2].kind == "word" and item[-2].text.upper() == "AS":
            last = item[-1]
            columns.append(last.value if last.kind == "name" else last.text)
        else:
            end = item[-1].start + len(item[-1].text)
            columns.append(query[item[0].start : end])
    return columns


# ---------------------------------------------------------------------------- grand-cypher dialect

#: grand-cypher knows these aggregations in upper case only.
_AGGREGATIONS = frozenset({"COUNT", "SUM", "AVG", "MAX", "MIN", "COLLECT"})


def grand_cypher_literal(value: Any) -> str:
    """``value`` as a grand-cypher literal.

    grand-cypher reads a string literal by evaluating it as a Python string literal, so a
    string is written double-quoted with JSON escapes (all of which Python reads the same
    way); newlines and other control characters are always escaped.

    Raises:
        CypherTextError: the value has no literal form grand-cypher can read (a map, NaN).
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise CypherTextError(f"{value!r} has no Cypher literal")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(grand_cypher_literal(v) for v in value) + "]"
    raise CypherTextError(
        f"a {type(value).__name__} parameter cannot be used on the networkx backend "
        "(strings, numbers, booleans, null and lists of them can)"
    )


def to_grand_cypher(query: str, parameters: Mapping[str, Any]) -> str:
    """Rewrite ``query`` in the dialect grand-cypher reads, with parameters as literals.

    Raises:
        CypherTextError: a parameter is missing or has no literal form.
    """
    tokens = tokenize(query)
    missing = sorted({t.value for t in tokens if t.kind == "param"} - set(parameters))
    if missing:
        flags = " ".join(f"--param {name}=..." for name in missing)
        raise CypherTextError(f"the query uses {', '.join('$' + m for m in missing)}: give {flags}")
    out: list[str] = []
    sig_positions: list[int] = []  # indexes into ``out`` of significant tokens
    for index, token in enumerate(tokens):
        if token.kind == "comment":
            out.append(" ")  # grand-cypher has no /* */ comments
            continue
        if token.kind == "string":
            text = grand_cypher_literal(token.value)  # grand-cypher has no single quotes
        elif token.kind == "param":
            text = grand_cypher_literal(parameters[token.value])
        elif token.kind == "word" and token.text.upper() in _AGGREGATIONS | {"EXISTS"}:
            following = next((t for t in tokens[index + 1 :] if t.kind not in ("space", "comment")), None)
            opener = "{" if token.text.upper() == "EXISTS" else "("
            text = token.text.upper() if following is not None and following.text == opener else token.text
        else:
            text = token.text
        if token.kind != "space":
            sig_positions.append(len(out))
        out.append(text)
    _rewrite_is_not_null(out, sig_positions)
    text = "".join(out).strip()
    return text[:-1].rstrip() if text.endswith(";") else text


def _rewrite_is_not_null(out: list[str], sig: list[int]) -> None:
    """``a.b IS NOT NULL`` -> ``NOT a.b IS NULL`` (grand-cypher has only the latter)."""
    words = [out[i].upper() for i in sig]
    for k in range(len(sig) - 2):
        if words[k : k + 3] != ["IS", "NOT", "NULL"] or k == 0:
            continue
        start = k - 1
        if start >= 2 and out[sig[start - 1]] == "." and _WORD.fullmatch(out[sig[start - 2]]):
            start -= 2
        if not _WORD.fullmatch(out[sig[start]]):
            continue  # not a simple operand: leave it, grand-cypher will say what it cannot read
        out[sig[start]] = "NOT " + out[sig[start]]
        out[sig[k + 1]] = ""
