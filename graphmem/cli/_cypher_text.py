"""Cypher as text: a tokenizer, the read-only check, and the networkx dialect.

No query is parsed here, only tokenized: string literals, backtick names and comments are
recognised as Neo4j's lexer recognises them, so that a word inside them is never mistaken
for a clause, and a clause is never hidden inside what only looks like a comment. That is
enough to

- accept only what a debugging read needs (:func:`check_read_only`): read clauses, ``CALL``
  of a few read-only procedures or of a subquery; everything else is refused with a
  one-line reason before it reaches a backend. On Neo4j the query also runs in a READ
  transaction with a timeout, and the embedded server (scripts/neo4j) has neither file
  access for ``LOAD CSV`` nor any procedure outside its allowlist.
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
from dataclasses import dataclass, field
from typing import Any

from graphmem.backends._graph_model import ENTITY, ENTRY, PROPERTY_KINDS, RELATIONSHIP_ENDS, TOKEN

__all__ = [
    "MAX_NESTING",
    "READ_CLAUSES",
    "READ_PROCEDURES",
    "CypherTextError",
    "Refusal",
    "Token",
    "check_read_only",
    "grand_cypher_literal",
    "order_by_keys",
    "parameter_names",
    "return_columns",
    "to_grand_cypher",
    "tokenize",
    "without_final_paging",
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
_LINE_END = re.compile(r"[\r\n]")
_ESCAPES = {"t": "\t", "b": "\b", "n": "\n", "r": "\r", "f": "\f", "'": "'", '"': '"', "\\": "\\"}


def _position(query: str, offset: int) -> str:
    line = query.count("\n", 0, offset) + 1
    column = offset - (query.rfind("\n", 0, offset) + 1) + 1
    return f"line {line}, column {column}"


def _read_string(query: str, start: int) -> tuple[int, str]:
    """The end of the string literal at ``start`` and its value, as Neo4j reads them.

    A backslash always takes the next character with it (so ``\\'`` never ends the
    string); ``\\t \\b \\n \\r \\f \\' \\" \\\\`` and ``\\uXXXX`` are escapes, any other
    pair stays as written (``'\\q'`` is backslash, q), as in Neo4j 5.
    """
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
            if code == "u":
                digits = query[i + 2 : i + 6]
                if len(digits) < 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                    raise CypherTextError(f"\\u needs four hexadecimal digits at {_position(query, i)}")
                chars.append(chr(int(digits, 16)))
                i += 6
                continue
            chars.append(ch + code)
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
            # Neo4j's lexer ends a line comment at \n or \r, nothing else (checked against
            # the server: U+2028, U+0085, ... do not end it; check_read_only refuses them).
            match = _LINE_END.search(query, i)
            end = match.start() if match else len(query)
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

#: Clauses a debugging read may use, by their first word.
READ_CLAUSES = frozenset(
    {"MATCH", "OPTIONAL", "WHERE", "WITH", "RETURN", "UNWIND", "ORDER", "SKIP", "LIMIT", "UNION", "CALL", "YIELD"}
)
#: The procedures ``CALL`` may name: Neo4j's documented read-only schema procedures. The
#: embedded server (scripts/neo4j) registers no procedure outside these and its own needs.
READ_PROCEDURES = frozenset(
    {
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.visualization",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.info",
        "dbms.components",
    }
)
#: Namespaces of built-in functions; any other namespaced function (a plugin's, such as
#: ``apoc.cypher.run*``, which runs a query of its own) is refused.
_FUNCTION_NAMESPACES = frozenset({"point", "date", "datetime", "localdatetime", "localtime", "time", "duration"})
_WRITES = "it writes; change memory with graphmem load or graphmem delete-*"
#: Words refused wherever they are not a name (a property, label, alias or map key): the
#: sentence that says so.
_REFUSED = {
    **{w: f"{w} is refused: {_WRITES}" for w in ("CREATE", "MERGE", "SET", "DELETE", "REMOVE", "FOREACH", "INSERT")},
    "DETACH": f"DETACH DELETE is refused: {_WRITES}",
    **{w: "LOAD CSV is refused: it reads files and URLs" for w in ("LOAD", "CSV", "HEADERS", "FIELDTERMINATOR")},
    "TRANSACTIONS": "CALL { ... } IN TRANSACTIONS is refused: it commits in batches",
    "PERIODIC": "USING PERIODIC COMMIT is refused: it commits in batches",
    "USING": "USING is refused: hints are not needed to read",
    "USE": "USE is refused: it switches to another database",
    "SHOW": "SHOW commands are refused: CALL db.labels() and the other schema procedures read the schema",
    "TERMINATE": "TERMINATE is refused: it stops other transactions",
    **{
        w: f"{w} is refused: it is an administration command"
        for w in ("DROP", "ALTER", "GRANT", "DENY", "REVOKE", "RENAME", "START", "STOP", "ENABLE")
        + ("DEALLOCATE", "REALLOCATE", "DRYRUN")
    },
    **{w: f"{w} is refused: query options are not needed" for w in ("CYPHER", "EXPLAIN", "PROFILE")},
    "FINISH": "FINISH is refused: it returns nothing to read",
}
#: Words that may follow an operand without starting a clause.
_CONTINUATIONS = frozenset(
    {"AND", "OR", "XOR", "IN", "IS", "STARTS", "ENDS", "CONTAINS", "AS", "WHEN", "THEN", "ELSE", "END"}
    | {"ASC", "ASCENDING", "DESC", "DESCENDING"}
)
#: Keywords after which an expression continues: a word following one is not a clause.
_NOT_OPERANDS = READ_CLAUSES | (_CONTINUATIONS - {"END", "ASC", "ASCENDING", "DESC", "DESCENDING"}) | {
    "BY",
    "ALL",
    "NOT",
    "DISTINCT",
    "CASE",
}
#: After these, a word opens a subquery's clauses (``EXISTS { MATCH ... }``).
_SUBQUERY_OPENERS = frozenset({"CALL", "EXISTS", "COUNT", "COLLECT"})
#: Characters some Cypher lexers end a ``//`` comment at; Neo4j 5.26 ends it only at
#: ``\n`` and ``\r`` (tests/test_adversarial_cypher.py checks), so these are ambiguous.
_ODD_LINE_BREAKS = frozenset("\x0b\x0c\x1c\x1d\x1e\x1f\x85\u2028\u2029")
_PLAIN = frozenset(chr(c) for c in range(0x20, 0x7F)) | {"\t", "\n", "\r"}
#: Deeper bracket nesting than a debugging query needs; refused before any engine parses it.
MAX_NESTING = 64


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a query may not run, and where: one line for the user."""

    reason: str
    where: str

    def __str__(self) -> str:
        return f"{self.reason} (at {self.where})"


def _character_refusal(query: str, tokens: list[Token]) -> Refusal | None:
    for token in tokens:
        if token.kind in ("string", "name"):
            continue  # data and quoted names: any character, the boundaries are unambiguous
        if token.kind == "comment":
            odd = next((c for c in token.text if c in _ODD_LINE_BREAKS), None) if token.text.startswith("//") else None
            if odd is not None:
                return Refusal(
                    f"a // comment holds U+{ord(odd):04X}, which some Cypher versions end a line at; "
                    "end comment lines with a plain newline",
                    _position(query, token.start),
                )
            continue
        odd = next((c for c in token.text if c not in _PLAIN), None)
        if odd is not None:
            offset = token.start + token.text.index(odd)
            return Refusal(
                f"character U+{ord(odd):04X} outside a string, comment or `quoted name`; "
                "only plain ASCII is read there",
                _position(query, offset),
            )
    return None


def _dotted_name(sig: list[Token], index: int) -> tuple[str, int]:
    """The name ``a.b.c`` starting at ``sig[index]`` and the index after it."""
    parts = []
    while index < len(sig) and sig[index].kind in ("word", "name"):
        parts.append(sig[index].value if sig[index].kind == "name" else sig[index].text)
        if index + 2 < len(sig) and sig[index + 1].text == "." and sig[index + 2].kind in ("word", "name"):
            index += 2
            continue
        index += 1
        break
    return ".".join(parts), index


def check_read_only(query: str) -> Refusal | None:
    """Why ``query`` may not run in ``graphmem cypher``, or ``None`` when it may.

    An allowlist, not a search for writes: the query must consist of read clauses
    (:data:`READ_CLAUSES`), ``CALL`` only of :data:`READ_PROCEDURES` or of a subquery, and
    the characters outside strings, comments and quoted names must be plain ASCII. Words
    that start a write, ``LOAD CSV``, ``USE``, ``SHOW`` or an administration command are
    refused wherever they stand, unless they are a name (property, label, alias, map key).
    Comments and strings are read as Neo4j reads them (a ``//`` comment ends at ``\n`` or
    ``\r``); text that another Cypher lexer could read differently is refused.

    Raises:
        CypherTextError: an unterminated string, backtick name or block comment.
    """
    tokens = tokenize(query)
    refusal = _character_refusal(query, tokens)
    if refusal is not None:
        return refusal
    sig = _significant(tokens)

    def refuse(reason: str, index: int) -> Refusal:
        return Refusal(reason, _position(query, sig[index].start) if index < len(sig) else "the end")

    if not sig:
        return Refusal("the query is empty", "the end")
    clause_start = True  # the next word must start a read clause
    pattern_ok = False  # ... or, first in EXISTS { } / COUNT { }, a pattern
    operand = False  # the previous token ended an operand (so a word after it is a clause)
    label_mode = False  # in a label expression (:A|B&!C), where words are names
    subquery_next = False  # the next { opens a subquery (CALL, EXISTS, COUNT, COLLECT)
    depth = 0
    index = 0
    while index < len(sig):
        token = sig[index]
        prev = sig[index - 1] if index else None
        after = sig[index + 1] if index + 1 < len(sig) else None
        if token.kind == "punct":
            text = token.text
            if clause_start and not (pattern_ok and text == "("):
                return refuse(f"a query or subquery starts with a read clause ({_clause_list()}), not {text!r}", index)
            clause_start = pattern_ok = False
            if text in "([{":
                depth += 1
                if depth > MAX_NESTING:
                    return refuse(f"brackets nested more than {MAX_NESTING} deep", index)
                if text == "{" and subquery_next:
                    clause_start = True
                    pattern_ok = prev is not None and prev.text.upper() in ("EXISTS", "COUNT")
                subquery_next = operand = False
            elif text in ")]}":
                depth -= 1
                operand = True
            elif text == ";":
                if after is not None:
                    return refuse("one query at a time (a ';' ends the query)", index)
            elif text == "*":
                operand = prev is not None and prev.text.upper() in ("RETURN", "WITH", "DISTINCT", "YIELD", "(")
            else:
                operand = False
            if text not in ":|&!":
                label_mode = False
            index += 1
            continue
        if token.kind == "name" and after is not None and after.text in (".", "("):
            if after.text == "(" or _is_function_call(sig, index):
                return refuse("a `quoted` function name is not allowed: only built-in functions are", index)
        if token.kind != "word":
            if clause_start:
                return refuse(f"a query or subquery starts with a read clause ({_clause_list()})", index)
            operand = True  # a string, number, parameter or `name`
            label_mode = False
            index += 1
            continue

        word = token.text.upper()
        before = prev.text if prev is not None else ""
        is_name = (
            before == "."
            or (before == ":" and not _is_map_key(sig, index - 2))
            or (before in ("|", "&", "!") and label_mode)
            or (prev is not None and prev.kind == "word" and prev.text.upper() == "AS")
            or (after is not None and after.text == ":" and before in ("{", ","))
        )
        if is_name:
            label_mode = before in (":", "|", "&", "!")
            operand = True
            index += 1
            continue
        label_mode = False
        if word in _REFUSED:
            return refuse(_REFUSED[word], index)
        if clause_start or operand:
            if word not in READ_CLAUSES and not (operand and not clause_start and word in _CONTINUATIONS):
                return refuse(
                    f"{word} is not a read clause graphmem cypher allows ({_clause_list()})", index
                )
        clause_start = pattern_ok = False
        if after is not None and after.text == "." and _is_function_call(sig, index):
            name, _ = _dotted_name(sig, index)
            if name.split(".")[0].lower() not in _FUNCTION_NAMESPACES and name != "db.nameFromElementId":
                return refuse(f"function {name} is not allowed: only built-in functions are", index)
        if word == "CALL":
            if after is None:
                return refuse("CALL needs a procedure or a { subquery }", index)
            if after.text == "{":
                subquery_next = True
            elif after.text == "(":  # CALL (x, y) { ... }: a subquery importing variables
                close = _matching(sig, index + 1)
                if close is None or close + 1 >= len(sig) or sig[close + 1].text != "{":
                    return refuse("CALL ( ... ) must be followed by a { subquery }", index)
                if any(t.kind not in ("word", "name") and t.text not in ",*" for t in sig[index + 2 : close]):
                    return refuse("CALL ( ... ) lists the variables a subquery imports, nothing else", index)
                index = close + 1
                subquery_next = True
                operand = False
                continue
            elif after.kind in ("word", "name"):
                name, end = _dotted_name(sig, index + 1)
                if name not in READ_PROCEDURES:
                    allowed = ", ".join(sorted(READ_PROCEDURES))
                    return refuse(f"procedure {name} is not one graphmem cypher runs (it runs {allowed})", index + 1)
                index = end
                operand = True
                continue
            else:
                return refuse("CALL needs a procedure or a { subquery }", index)
        elif word == "OPTIONAL":
            if after is None or after.text.upper() not in ("MATCH", "CALL"):
                return refuse("OPTIONAL must be followed by MATCH or CALL", index)
        elif word == "UNION":
            if after is not None and after.text.upper() in ("ALL", "DISTINCT"):
                index += 1
            index += 1
            clause_start = True
            operand = False
            continue
        elif word in _SUBQUERY_OPENERS and after is not None and after.text == "{":
            subquery_next = True
        operand = word not in _NOT_OPERANDS
        index += 1
    if clause_start:
        return refuse("the query ends where a clause should start", len(sig))
    if depth != 0:
        return refuse("unbalanced brackets", len(sig))
    return None


def _is_map_key(sig: list[Token], index: int) -> bool:
    """Whether ``sig[index]`` is a map key (``{key: ...}``), followed by its colon."""
    return (
        index >= 1
        and sig[index].kind in ("word", "name")
        and sig[index - 1].text in ("{", ",")
        and index + 1 < len(sig)
        and sig[index + 1].text == ":"
    )


def _is_function_call(sig: list[Token], index: int) -> bool:
    """Whether the dotted name starting at ``sig[index]`` is called: ``a.b.c(``."""
    _, end = _dotted_name(sig, index)
    return end < len(sig) and sig[end].text == "("


def _matching(sig: list[Token], index: int) -> int | None:
    """The index of the bracket closing ``sig[index]``."""
    depth = 0
    for i in range(index, len(sig)):
        if sig[i].kind != "punct":
            continue
        if sig[i].text in "([{":
            depth += 1
        elif sig[i].text in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _clause_list() -> str:
    return "MATCH, OPTIONAL MATCH, WHERE, WITH, RETURN, UNWIND, ORDER BY, SKIP, LIMIT, UNION, CALL"


def parameter_names(query: str) -> set[str]:
    """The ``$parameters`` a query uses."""
    return {t.value for t in tokenize(query) if t.kind == "param"}


def return_columns(query: str) -> list[str]:
    """The column names of the query's final RETURN, as Neo4j names them.

    A column is its alias, or else the expression as written. Used to give grand-cypher's
    columns (which come back in another order when there is an ORDER BY) Neo4j's order
    and names.
    """
    _, items, _ = _final_return(_significant(tokenize(query)))
    columns = []
    for item in items:
        expr, alias = _expression_and_alias(item)
        columns.append(alias if alias is not None else query[expr[0].start : _end(expr[-1])])
    return columns


def order_by_keys(query: str) -> list[tuple[str, str]]:
    """The keys of the final ORDER BY, without ASC or DESC: each as written, and as the
    expression it orders by (the RETURN item's, for an alias)."""
    sig = _significant(tokenize(query))
    _, items, index = _final_return(sig)
    if index + 1 >= len(sig) or sig[index].text.upper() != "ORDER" or sig[index + 1].text.upper() != "BY":
        return []
    expressions = {}
    for item in items:
        expr, alias = _expression_and_alias(item)
        if alias is not None:
            expressions[alias] = query[expr[0].start : _end(expr[-1])]
    keys, _ = _top_level_items(sig, index + 2)
    result = []
    for key in keys:
        if len(key) > 1 and key[-1].kind == "word" and key[-2].text != ".":
            if key[-1].text.upper() in ("ASC", "ASCENDING", "DESC", "DESCENDING"):
                key = key[:-1]
        text = query[key[0].start : _end(key[-1])]
        name = key[0].value if len(key) == 1 and key[0].kind == "name" else text
        result.append((text, expressions.get(name, text)))
    return result


# ---------------------------------------------------------------------------- grand-cypher dialect

#: grand-cypher knows these aggregations in upper case only.
_AGGREGATIONS = frozenset({"COUNT", "SUM", "AVG", "MAX", "MIN", "COLLECT"})


def grand_cypher_literal(value: Any, _depth: int = 0) -> str:
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
        if _depth >= MAX_NESTING:
            raise CypherTextError(f"a parameter holds lists nested more than {MAX_NESTING} deep")
        return "[" + ", ".join(grand_cypher_literal(v, _depth + 1) for v in value) + "]"
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
        sig = _significant(tokens)
        counts = {  # SKIP and LIMIT take a number, which --param name=... would give as a string
            t.value
            for i, t in enumerate(sig)
            if t.kind == "param" and i and sig[i - 1].kind == "word" and sig[i - 1].text.upper() in ("SKIP", "LIMIT")
        }
        flags = " ".join(f"--param {name}:=..." if name in counts else f"--param {name}=..." for name in missing)
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


def networkx_misreading(query: str, parameters: Mapping[str, Any] | None = None) -> str | None:
    """What grand-cypher would read differently from Neo4j in ``query``, without an error of
    its own (found by a review), or ``None``: a relationship without a direction, which
    matches nothing there; a SKIP or LIMIT of a negative or fractional number (written, or
    a parameter's value in ``parameters``), which it uses as a Python slice (``SKIP -1``
    keeps the last row) where Neo4j refuses it; AND and OR side by side without brackets,
    which it binds alike, left to right (``A OR B AND C`` is ``(A OR B) AND C``); two nodes
    of one connected pattern that Neo4j may bind to one node (:func:`_same_node_refusal`); a
    variable on a variable-length relationship; comparisons Python decides otherwise
    (:func:`_type_refusal`); and DISTINCT or grouping by whole nodes or lists, which fail
    there with a Python error. Asked before a networkx query runs, so that it says so
    instead of answering wrong."""
    sig = _significant(tokenize(query))
    for i, token in enumerate(sig):
        if token.kind == "punct" and token.text == ")" and _undirected_from(sig, i):
            return (
                f"a relationship without a direction at {_position(query, token.start)} matches nothing on the "
                "networkx backend: write -[...]-> or <-[...]- (one pattern per direction), or run it on Neo4j"
            )
        if token.kind == "word" and token.text.upper() in ("SKIP", "LIMIT"):
            count = _not_a_count(sig, i, parameters or {})
            if count is not None:
                return (
                    f"{token.text.upper()} {count} at {_position(query, token.start)}: SKIP and LIMIT take a "
                    "whole number of 0 or more (Neo4j refuses anything else, and the networkx backend would "
                    "cut the rows wrong)"
                )
    # The connectives seen at each bracket depth of the current clause.
    levels: list[set[str]] = [set()]
    for token in sig:
        word = token.text.upper() if token.kind == "word" else None
        if token.kind == "punct" and token.text in "([{":
            levels.append(set())
        elif token.kind == "punct" and token.text in ")]}" and len(levels) > 1:
            levels.pop()
        elif word in READ_CLAUSES:
            levels[-1] = set()
        elif word in ("AND", "OR"):
            levels[-1].add(word)
            if len(levels[-1]) == 2:
                return (
                    f"AND and OR side by side at {_position(query, token.start)}: the networkx backend binds "
                    "them alike, left to right, where Cypher binds AND first; put brackets around the AND"
                )
    scopes = _match_scopes(sig)
    for scope in scopes:
        reason = _variable_length_binding(query, scope) or _same_node_refusal(query, scope)
        if reason is not None:
            return reason
    variables = {key for key in scopes[0].labels if not key.startswith("#")}
    variables |= {rel.variable for rel in scopes[0].rels if rel.variable is not None}
    return (
        _type_refusal(query, sig, parameters or {})
        or _return_refusal(query, sig, variables)
        or _repeated_column_refusal(query, sig)
        or _returned_value_refusal(query, sig)
    )


_INTEGER = re.compile(r"\d+|0[xX][0-9a-fA-F]+")


def _not_a_count(sig: list[Token], keyword: int, parameters: Mapping[str, Any]) -> str | None:
    """The value after the SKIP or LIMIT at ``sig[keyword]``, as written, when it is a number
    or a given parameter that is no whole number of 0 or more; else ``None`` (a property or
    an alias named skip or limit, or an expression grand-cypher will refuse itself)."""
    if keyword > 0 and (sig[keyword - 1].text == "." or sig[keyword - 1].text.upper() == "AS"):
        return None
    following = sig[keyword + 1 : keyword + 3]
    negative = bool(following) and following[0].kind == "punct" and following[0].text == "-"
    if negative:
        following = following[1:]
    if not following:
        return None
    value = following[0]
    if value.kind == "number":
        if negative:
            return f"-{value.text}"
        return None if _INTEGER.fullmatch(value.text) else value.text
    if value.kind == "param" and not negative and value.value in parameters:
        given = parameters[value.value]
        if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
            return None
        return f"{value.text} (= {json.dumps(given, default=str)})"
    return None


def _undirected_from(sig: list[Token], close: int) -> bool:
    """Whether a relationship without a direction starts at the ``)`` ``sig[close]``:
    ``)-[...]-(`` or ``)--(`` (not ``)<-...-(`` nor ``)-...->(``)."""

    def punct(i: int, text: str) -> bool:
        return i < len(sig) and sig[i].kind == "punct" and sig[i].text == text

    i = close + 1
    leftward = punct(i, "<")
    i += leftward
    if not punct(i, "-"):
        return False
    i += 1
    if punct(i, "["):
        end = _matching(sig, i)
        if end is None:
            return False
        i = end + 1
    if not punct(i, "-"):
        return False
    i += 1
    rightward = punct(i, ">")
    i += rightward
    return punct(i, "(") and not leftward and not rightward


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


# ---------------------------------------------------------------------------- networkx: pattern shapes

#: Any label: a node written without one (it may also be a node outside the shared model,
#: such as Neo4j's ``GraphmemUser``).
_ANY: frozenset[str] | None = None


@dataclass(frozen=True, slots=True)
class _Rel:
    """One relationship of a MATCH pattern, between two node keys (a variable, or ``#offset``
    for an unnamed node), with its direction (``source`` -> ``target``) when it has one."""

    source: str
    target: str
    directed: bool
    types: frozenset[str] | None
    variable: str | None
    hops: tuple[int, int | None] | None  # None: exactly one hop
    clause: int
    start: int


@dataclass(slots=True)
class _Scope:
    """The MATCH patterns of the query, or of one subquery: the nodes grand-cypher matches
    together (its motif), by key, with the labels written for them, and the relationships."""

    labels: dict[str, frozenset[str] | None] = field(default_factory=dict)
    starts: dict[str, int] = field(default_factory=dict)
    rels: list[_Rel] = field(default_factory=list)
    clauses: int = 0


def _label_expression(inner: list[Token], i: int) -> tuple[frozenset[str] | None, int]:
    """The labels (any of them) written from ``inner[i]`` (a ``:``), and the index after them;
    ``None`` for a label expression this does not read (``&``, ``!``, ``%``)."""
    groups: list[set[str]] = []
    simple = True
    while i < len(inner) and inner[i].text == ":":
        group: set[str] = set()
        i += 1
        while i < len(inner) and inner[i].kind in ("word", "name"):
            group.add(inner[i].value if inner[i].kind == "name" else inner[i].text)
            i += 1
            if i < len(inner) and inner[i].text == "|":
                i += 1 + (i + 1 < len(inner) and inner[i + 1].text == ":")
                continue
            break
        while i < len(inner) and inner[i].text in ("&", "!", "%", "(", ")"):
            simple = False
            i += 1
            while i < len(inner) and inner[i].kind in ("word", "name"):
                i += 1
        groups.append(group)
    if not groups:
        return _ANY, i
    if not simple:
        return _ANY, i
    labels = set(groups[0])
    for group in groups[1:]:
        labels &= group  # :A:B is a node with both
    return frozenset(labels), i


def _hops(inner: list[Token], star: int) -> tuple[int, int | None]:
    """The hop range written after the ``*`` at ``inner[star]`` (``*``, ``*2``, ``*1..3``, ``*..3``)."""
    text = ""
    for token in inner[star + 1 :]:
        if token.text == "{":
            break
        text += token.text
    match = re.fullmatch(r"(\d*)(?:\.\.(\d*))?", text)
    if match is None:
        return 0, None
    low, high = match.group(1), match.group(2)
    if match.group(0).find("..") < 0:  # *n is exactly n hops; * alone is 1 or more
        return (int(low), int(low)) if low else (1, None)
    return int(low) if low else 1, int(high) if high else None


def _match_scopes(sig: list[Token]) -> list[_Scope]:
    """The MATCH patterns of the query and of each of its subqueries, read from the tokens."""
    scopes = [_Scope()]
    stack: list[int] = []  # the scope of each open bracket
    current = 0
    index = 0
    while index < len(sig):
        token = sig[index]
        prev = sig[index - 1] if index else None
        if token.kind == "punct" and token.text in "([{":
            opens_subquery = token.text == "{" and prev is not None and prev.text.upper() in _SUBQUERY_OPENERS
            if token.text == "{" and prev is not None and prev.text == ")" and index >= 2:
                opener = _opening(sig, index - 1)
                opens_subquery = opener is not None and opener > 0 and sig[opener - 1].text.upper() == "CALL"
            stack.append(current)
            if opens_subquery:
                scopes.append(_Scope())
                current = len(scopes) - 1
        elif token.kind == "punct" and token.text in ")]}" and stack:
            current = stack.pop()
        elif (
            token.kind == "word"
            and token.text.upper() == "MATCH"
            and (prev is None or prev.text != ".")
            and index + 1 < len(sig)
            and sig[index + 1].text != ":"
        ):
            index = _read_match(sig, index + 1, scopes[current])
            continue
        index += 1
    return scopes


def _opening(sig: list[Token], close: int) -> int | None:
    """The index of the bracket that ``sig[close]`` closes."""
    depth = 0
    for i in range(close, -1, -1):
        if sig[i].kind != "punct":
            continue
        if sig[i].text in ")]}":
            depth += 1
        elif sig[i].text in "([{":
            depth -= 1
            if depth == 0:
                return i
    return None


def _read_match(sig: list[Token], index: int, scope: _Scope) -> int:
    """Read the patterns of one MATCH clause from ``sig[index]`` into ``scope``; the index after them."""
    clause = scope.clauses
    scope.clauses += 1
    while index < len(sig):
        if sig[index].kind in ("word", "name") and index + 1 < len(sig) and sig[index + 1].text == "=":
            index += 2  # p = (...): a path variable
        if index >= len(sig) or sig[index].text != "(":
            break
        left, index = _read_node(sig, index, scope)
        if left is None:
            break
        while True:
            rel = _read_rel(sig, index)
            if rel is None:
                break
            leftward, rightward, variable, types, hops, after = rel
            right, end = _read_node(sig, after, scope)
            if right is None:
                break
            source, target = (right, left) if leftward and not rightward else (left, right)
            directed = leftward != rightward
            scope.rels.append(_Rel(source, target, directed, types, variable, hops, clause, sig[index].start))
            left, index = right, end
        if index < len(sig) and sig[index].text == ",":
            index += 1
            continue
        break
    return index


def _read_node(sig: list[Token], index: int, scope: _Scope) -> tuple[str | None, int]:
    """The key of the node pattern ``( ... )`` at ``sig[index]`` and the index after it."""
    if index >= len(sig) or sig[index].text != "(":
        return None, index
    close = _matching(sig, index)
    if close is None:
        return None, len(sig)
    inner = sig[index + 1 : close]
    i = 0
    key = f"#{sig[index].start}"
    if inner and inner[0].kind in ("word", "name"):
        key = inner[0].value if inner[0].kind == "name" else inner[0].text
        i = 1
    labels, _ = _label_expression(inner, i)
    if key in scope.labels:
        known = scope.labels[key]
        scope.labels[key] = labels if known is None else known if labels is None else known & labels
    else:
        scope.labels[key] = labels
        scope.starts[key] = sig[index].start
    return key, close + 1


def _read_rel(
    sig: list[Token], index: int
) -> tuple[bool, bool, str | None, frozenset[str] | None, tuple[int, int | None] | None, int] | None:
    """The relationship pattern at ``sig[index]`` (``-[...]->``, ``<--``, ...): its arrows,
    variable, types and hop range, and the index of the node after it; ``None`` if there is none."""

    def punct(i: int, text: str) -> bool:
        return i < len(sig) and sig[i].kind == "punct" and sig[i].text == text

    i = index
    leftward = punct(i, "<")
    i += leftward
    if not punct(i, "-"):
        return None
    i += 1
    variable: str | None = None
    types: frozenset[str] | None = None
    hops: tuple[int, int | None] | None = None
    if punct(i, "["):
        close = _matching(sig, i)
        if close is None:
            return None
        inner = sig[i + 1 : close]
        j = 0
        if inner and inner[0].kind in ("word", "name"):
            variable = inner[0].value if inner[0].kind == "name" else inner[0].text
            j = 1
        types, j = _label_expression(inner, j)
        star = next((k for k in range(j, len(inner)) if inner[k].text == "*"), None)
        if star is not None:
            hops = _hops(inner, star)
        i = close + 1
    if not punct(i, "-"):
        return None
    i += 1
    rightward = punct(i, ">")
    i += rightward
    if not punct(i, "("):
        return None
    return leftward, rightward, variable, types, hops, i


#: Every label of the shared model, for the ends of a relationship written without a type.
_MODEL_LABELS = frozenset({ENTRY, TOKEN, ENTITY})


def _ends(types: frozenset[str] | None) -> tuple[frozenset[str], frozenset[str]]:
    """The labels a relationship of one of ``types`` (any type: ``None``) may start and end at.
    A type outside the model matches nothing, on either backend."""
    if types is None:
        return frozenset({ENTRY}), _MODEL_LABELS
    known = [RELATIONSHIP_ENDS[t] for t in types if t in RELATIONSHIP_ENDS]
    return frozenset(s for s, _ in known), frozenset(t for _, t in known)


def _describe_node(query: str, key: str, scope: _Scope) -> str:
    if key.endswith("*"):
        return f"a node inside the variable-length relationship at {_position(query, int(key[1:-1]))}"
    if key.startswith("#"):
        return f"the unnamed node at {_position(query, int(key[1:]))}"
    return f"{key} (at {_position(query, scope.starts[key])})"


def _same_node_refusal(query: str, scope: _Scope) -> str | None:
    """Two nodes of one connected pattern that Neo4j may bind to one node, which grand-cypher
    never does (it matches every pattern node to a different node), or ``None``.

    Two nodes are surely different on Neo4j, too, when their labels differ (written, or
    implied by a relationship's type: every relationship starts at an Entry), when a path of
    relationships in one direction leads from one to the other (the graph has no cycle), or
    when one MATCH joins both to one node by relationships in the same direction (one
    relationship at most leads from a node to another: each type joins its own pair of
    labels and is written once per pair; and one MATCH never uses a relationship twice).
    Nodes of patterns that share no node are not compared:
    grand-cypher joins those as Neo4j does, any node with any node.
    """
    labels = dict(scope.labels)
    edges: dict[str, set[str]] = {key: set() for key in labels}
    linked: dict[str, str] = {key: key for key in labels}

    def root(key: str) -> str:
        while linked[key] != key:
            key = linked[key]
        return key

    def narrow(key: str, allowed: frozenset[str]) -> None:
        known = labels[key]
        labels[key] = allowed if known is None else known & allowed

    for rel in scope.rels:
        linked[root(rel.source)] = root(rel.target)
        low, high = rel.hops if rel.hops is not None else (1, 1)
        if not rel.directed or low < 1:
            continue  # the two ends may be one node (zero hops), or there is no direction to follow
        starts, ends = _ends(rel.types)
        narrow(rel.source, starts)
        narrow(rel.target, ends)
        if high is None or high >= 2:  # the nodes between, matched by grand-cypher as pattern nodes
            inside = f"#{rel.start}*"
            labels[inside] = starts & ends
            linked[inside] = root(rel.source)
            edges[inside] = {rel.target}
            edges[rel.source].add(inside)
        else:
            edges[rel.source].add(rel.target)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = {start}, [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    apart: set[frozenset[str]] = set()
    single = [r for r in scope.rels if r.directed and r.hops is None]
    for i, one in enumerate(single):
        for other in single[i + 1 :]:
            if one.clause != other.clause:
                continue
            if one.target == other.target:
                apart.add(frozenset((one.source, other.source)))
            if one.source == other.source:
                apart.add(frozenset((one.target, other.target)))

    keys = list(labels)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if root(a) != root(b):
                continue
            la, lb = labels[a], labels[b]
            if la is not None and lb is not None and not la & lb:
                continue
            if (la is not None and not la) or (lb is not None and not lb):
                continue  # a node no node matches: no rows on either backend
            if frozenset((a, b)) in apart or reaches(a, b) or reaches(b, a):
                continue
            return (
                f"{_describe_node(query, a, scope)} and {_describe_node(query, b, scope)} may be one node on "
                "Neo4j, but the networkx backend always matches them to different nodes and would miss the rows "
                "where they are one: name them with one variable if they are the same node, join both to one "
                "node in one MATCH pattern, in the same direction, if they must differ "
                "((a)-[:R]->(n)<-[:R]-(b)), or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
    return None


def _variable_length_binding(query: str, scope: _Scope) -> str | None:
    for rel in scope.rels:
        if rel.variable is not None and rel.hops is not None:
            return (
                f"{rel.variable} names a variable-length relationship at {_position(query, rel.start)}: on the "
                "networkx backend its hops and length come out wrong; leave the variable out "
                "(-[:NEXT*1..2]->) or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
    return None


# ---------------------------------------------------------------------------- networkx: value types


@dataclass(frozen=True, slots=True)
class _Operand:
    """One side of a comparison: its kind (``number``, ``string``, ``boolean``, ``list``,
    ``null``; ``None`` when unknown), as written, and whether it is a property."""

    kind: str | None
    text: str
    is_property: bool = False
    elements: frozenset[str] = frozenset()  # the kinds in a list


def _value_kind(value: Any) -> str | None:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "list"
    return None


def _operand_after(sig: list[Token], i: int, parameters: Mapping[str, Any]) -> _Operand | None:
    """The operand starting at ``sig[i]``, when it is a literal, a parameter or ``var.prop``."""
    if i >= len(sig):
        return None
    token = sig[i]
    if token.kind == "punct" and token.text == "-" and i + 1 < len(sig) and sig[i + 1].kind == "number":
        return _Operand("number", "-" + sig[i + 1].text)
    if token.kind == "punct" and token.text == "[":
        close = _matching(sig, i)
        inside = sig[i + 1 : close] if close is not None else []
        elements = {_literal_kind(t) for t in inside} - {None}
        return _Operand("list", "[...]", elements=frozenset(k for k in elements if k is not None))
    if token.kind in ("word", "name") and i + 2 < len(sig) and sig[i + 1].text == ".":
        if i + 3 < len(sig) and sig[i + 3].text == "(":
            return None
        prop = sig[i + 2].value if sig[i + 2].kind == "name" else sig[i + 2].text
        return _Operand(PROPERTY_KINDS.get(prop), f"{token.text}.{sig[i + 2].text}", is_property=True)
    return _single_operand(token, parameters)


def _operand_before(sig: list[Token], i: int, parameters: Mapping[str, Any]) -> _Operand | None:
    """The operand ending at ``sig[i]``, when it is a literal, a parameter or ``var.prop``."""
    if i < 0:
        return None
    token = sig[i]
    if token.kind in ("word", "name") and i >= 2 and sig[i - 1].text == "." and sig[i - 2].kind in ("word", "name"):
        prop = token.value if token.kind == "name" else token.text
        return _Operand(PROPERTY_KINDS.get(prop), f"{sig[i - 2].text}.{token.text}", is_property=True)
    return _single_operand(token, parameters)


def _literal_kind(token: Token) -> str | None:
    if token.kind == "number":
        return "number"
    if token.kind == "string":
        return "string"
    if token.kind == "word" and token.text.upper() in ("TRUE", "FALSE"):
        return "boolean"
    if token.kind == "word" and token.text.upper() == "NULL":
        return "null"
    return None


def _single_operand(token: Token, parameters: Mapping[str, Any]) -> _Operand | None:
    if token.kind == "param":
        if token.value not in parameters:
            return None
        value = parameters[token.value]
        listed = value if isinstance(value, (list, tuple)) else []
        elements = frozenset(k for k in map(_value_kind, listed) if k is not None)
        shown = json.dumps(value, default=str)[:40]
        return _Operand(_value_kind(value), f"{token.text} (= {shown})", elements=elements)
    kind = _literal_kind(token)
    return _Operand(kind, token.text) if kind is not None else None


#: Comparison operators, as tokens.
_ORDERING = frozenset({"<", "<=", ">", ">="})


def _comparisons(sig: list[Token]) -> list[tuple[str, int, int]]:
    """Each comparison operator outside patterns: (operator, index of its left operand's last
    token, index of its right operand's first token)."""
    found = []
    for k, token in enumerate(sig):
        if token.kind != "punct":
            continue
        nxt = sig[k + 1].text if k + 1 < len(sig) and sig[k + 1].kind == "punct" else ""
        prev = sig[k - 1].text if k and sig[k - 1].kind == "punct" else ""
        if token.text == "<" and nxt == "-":
            continue  # <- an arrow
        if token.text == ">" and prev == "-":
            continue  # -> an arrow
        if token.text == "<" and nxt in ("=", ">"):
            found.append(("<" + nxt, k - 1, k + 2))
        elif token.text == ">" and nxt == "=":
            found.append((">=", k - 1, k + 2))
        elif token.text in ("<", ">") and prev != "<":
            found.append((token.text, k - 1, k + 1))
        elif token.text == "=" and prev not in ("<", ">", "=", "!") and nxt != "=":
            found.append(("=", k - 1, k + 1))
    return found


def _type_refusal(query: str, sig: list[Token], parameters: Mapping[str, Any]) -> str | None:
    """A comparison that Python (grand-cypher) decides otherwise than Cypher, or cannot make,
    judged by the graph model's property types (:data:`PROPERTY_KINDS`), or ``None``:
    true = 1 (Python's bool is a number), CONTAINS on a list (list membership), ordering a
    number against a string, and ordering two properties (grand-cypher compares a property
    only with a value)."""
    for op, left_at, right_at in _comparisons(sig):
        left = _operand_before(sig, left_at, parameters)
        right = _operand_after(sig, right_at, parameters)
        if left is None or right is None:
            continue
        where = _position(query, sig[left_at].start)
        kinds = {left.kind, right.kind}
        if kinds == {"boolean", "number"} and (left.is_property or right.is_property):
            return _bool_number(left, right, where)
        if op in _ORDERING and left.is_property and right.is_property:
            return (
                f"{left.text} {op} {right.text} at {where}: the networkx backend compares a property with "
                "<, <=, > or >= only against a value, not another property; "
                "run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
        if op in _ORDERING and None not in kinds and "null" not in kinds and len(kinds) == 2:
            wanted = left.kind if left.is_property else right.kind
            return (
                f"{left.text} {op} {right.text} at {where} orders a {left.kind} against a {right.kind}: Neo4j "
                f"finds no row, the networkx backend fails; compare with a {wanted}"
            )
    for k, token in enumerate(sig):
        word = token.text.upper() if token.kind == "word" else ""
        if word == "IN" and k and sig[k - 1].text != ".":
            left = _operand_before(sig, k - 1, parameters)
            right = _operand_after(sig, k + 1, parameters)
            if left is not None and right is not None and left.is_property and {left.kind} | right.elements >= {
                "boolean",
                "number",
            }:
                return _bool_number(left, right, _position(query, sig[k - 1].start))
        elif word in ("CONTAINS", "STARTS", "ENDS") and k and sig[k - 1].text != ".":
            left = _operand_before(sig, k - 1, parameters)
            if left is not None and left.is_property and left.kind in ("list", "number", "boolean"):
                operator = word if word == "CONTAINS" else f"{word} WITH"
                return (
                    f"{left.text} {operator} at {_position(query, token.start)}: {left.text} is a {left.kind}, "
                    f"and {operator} reads strings (Neo4j finds no row; the networkx backend would test "
                    "list membership); for a list use any(r IN x.time_refs WHERE r CONTAINS ...) "
                    "with --backend neo4j"
                )
        elif token.kind in ("word", "name") and _is_map_key(sig, k) and _in_pattern(sig, k):
            prop = token.value if token.kind == "name" else token.text
            value = _operand_after(sig, k + 2, parameters)
            kind = PROPERTY_KINDS.get(prop)
            if value is not None and {kind, value.kind} == {"boolean", "number"}:
                return _bool_number(_Operand(kind, prop, is_property=True), value, _position(query, token.start))
    return None


def _in_pattern(sig: list[Token], key: int) -> bool:
    """Whether the map key ``sig[key]`` is in a node or relationship pattern's property map:
    ``(x:Label {key: ...})``, ``[r:TYPE {key: ...}]``."""
    opening: int | None = None
    depth = 0
    for i in range(key - 1, -1, -1):
        if sig[i].kind != "punct":
            continue
        if sig[i].text in ")]}":
            depth += 1
        elif sig[i].text in "([{":
            if depth:
                depth -= 1
                continue
            opening = i
            break
    if opening is None or sig[opening].text != "{":
        return False
    i = opening - 1
    while i >= 0 and (sig[i].kind in ("word", "name") or sig[i].text in (":", "|")):
        i -= 1
    return i >= 0 and sig[i].text in ("(", "[")


def _bool_number(left: _Operand, right: _Operand, where: str) -> str:
    prop = left if left.is_property else right
    return (
        f"{left.text} compared with {right.text} at {where}: {prop.text} is a {prop.kind}, and the networkx "
        "backend (Python) takes true for 1 and false for 0, where Neo4j never matches a boolean with a "
        f"number; compare it with a {prop.kind}"
    )


# ---------------------------------------------------------------------------- networkx: RETURN, SKIP, LIMIT


def _final_return(sig: list[Token]) -> tuple[bool, list[list[Token]], int]:
    """Whether the query's final RETURN is DISTINCT, its items (as tokens), and the index
    after them (where ORDER BY, SKIP or LIMIT would start); no items if there is no RETURN."""
    depth = 0
    start = None
    for index, token in enumerate(sig):
        if token.text in "([{" and token.kind == "punct":
            depth += 1
        elif token.text in ")]}" and token.kind == "punct":
            depth -= 1
        elif depth == 0 and token.kind == "word" and token.text.upper() == "RETURN":
            start = index + 1
    if start is None:
        return False, [], len(sig)
    distinct = start < len(sig) and sig[start].kind == "word" and sig[start].text.upper() == "DISTINCT"
    items, index = _top_level_items(sig, start + distinct)
    return distinct, items, index


def _top_level_items(sig: list[Token], start: int) -> tuple[list[list[Token]], int]:
    """The comma-separated items from ``sig[start]`` up to ORDER BY, SKIP, LIMIT or ``;``
    outside brackets, and the index where they stop."""
    items: list[list[Token]] = [[]]
    depth = 0
    index = start
    while index < len(sig):
        token = sig[index]
        word = token.text.upper() if token.kind == "word" else ""
        following = sig[index + 1].text.upper() if index + 1 < len(sig) else ""
        if depth == 0 and not _keyword_as_name(sig, index) and (
            word in ("SKIP", "LIMIT") or (word == "ORDER" and following == "BY") or token.text == ";"
        ):
            break
        if token.kind == "punct" and token.text in "([{":
            depth += 1
        elif token.kind == "punct" and token.text in ")]}":
            depth -= 1
        if depth == 0 and token.text == ",":
            items.append([])
        else:
            items[-1].append(token)
        index += 1
    return [item for item in items if item], index


def _keyword_as_name(sig: list[Token], index: int) -> bool:
    """Whether the word at ``index`` is a name although it reads as a keyword: an alias or
    a property named like one (``AS limit``, ``x.skip``, ``ORDER BY limit``)."""
    return index > 0 and sig[index - 1].text.upper() in (".", "AS", "BY", ",")


def _expression_and_alias(item: list[Token]) -> tuple[list[Token], str | None]:
    """A RETURN item's expression and its alias (``None`` when it has no ``AS``)."""
    if len(item) >= 3 and item[-2].kind == "word" and item[-2].text.upper() == "AS":
        alias = item[-1]
        return item[:-2], alias.value if alias.kind == "name" else alias.text
    return item, None


def _end(token: Token) -> int:
    """The offset just after ``token`` in the query."""
    return token.start + len(token.text)


def _return_refusal(query: str, sig: list[Token], variables: set[str]) -> str | None:
    """A whole node, relationship or list that DISTINCT or an aggregation's grouping would
    compare: grand-cypher keeps them as Python dicts and lists, which it cannot group."""
    distinct, items, _ = _final_return(sig)
    aggregated = any(
        item[0].kind == "word" and item[0].text.upper() in _AGGREGATIONS and len(item) > 1 and item[1].text == "("
        for item in items
    )
    if not (distinct or aggregated):
        return None
    what = "RETURN DISTINCT" if distinct else "grouping for an aggregation"
    for item in items:
        expr, alias = _expression_and_alias(item)
        if distinct and alias is not None and not (len(item) == 3 and item[0].kind in ("word", "name")):
            # (grand-cypher looks a DISTINCT column up by its expression, not its alias: a
            # KeyError. A variable under another name is no expression.)
            return (
                f"RETURN DISTINCT with an alias at {_position(query, item[-2].start)} fails on the networkx "
                "backend: drop the AS (the column is then named as written, x.p) "
                "or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
        name = expr[0].value if expr[0].kind == "name" else expr[0].text
        if len(expr) == 1 and expr[0].kind in ("word", "name") and name in variables:
            return (
                f"{what} by the whole node or relationship {name} at {_position(query, expr[0].start)} is not "
                f"possible on the networkx backend: return its properties ({name}.name, ...) or run it with "
                "--backend neo4j"
            )
        if len(expr) == 3 and expr[1].text == "." and PROPERTY_KINDS.get(expr[2].text) == "list":
            return (
                f"{what} by the list {name}.{expr[2].text} at {_position(query, expr[0].start)} is not possible "
                "on the networkx backend: run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
    return None


def _repeated_column_refusal(query: str, sig: list[Token]) -> str | None:
    """The same expression returned twice (``RETURN x.id, x.id AS copy``): grand-cypher keys
    its columns by expression and silently keeps only one of them."""
    _, items, _ = _final_return(sig)
    seen: dict[tuple[str, ...], list[Token]] = {}
    for item in items:
        expr, _ = _expression_and_alias(item)
        # (to_grand_cypher writes count as COUNT; a quoted name is its name)
        key = tuple(
            t.value if t.kind == "name" else t.text.upper() if t.text.upper() in _AGGREGATIONS else t.text
            for t in expr
        )
        if key in seen:
            first = seen[key]
            shown = query[first[0].start : _end(first[-1])]
            return (
                f"{shown} is returned twice (at {_position(query, first[0].start)} and "
                f"{_position(query, expr[0].start)}): the networkx backend keeps one column per expression "
                "and would drop the other; return it once, or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
            )
        seen[key] = expr
    return None


def _returned_value_refusal(query: str, sig: list[Token]) -> str | None:
    """A parameter or literal returned as a column (``RETURN $k AS k``), which grand-cypher
    cannot read there (a parameter becomes a literal before grand-cypher reads the query,
    and its parser failed on it, naming a quote the user never wrote)."""
    _, items, _ = _final_return(sig)
    for item in items:
        expr, _ = _expression_and_alias(item)
        value = expr[1:] if len(expr) == 2 and expr[0].text == "-" and expr[1].kind == "number" else expr
        if len(value) != 1 or not (value[0].kind in ("param", "string", "number") or _literal_kind(value[0])):
            continue
        what = "the parameter" if value[0].kind == "param" else "the value"
        shown = query[expr[0].start : _end(value[0])]
        return (
            f"{what} {shown} at {_position(query, expr[0].start)} is returned as a column: the networkx "
            "backend returns only variables, properties and functions of them, not a parameter or a literal; "
            "leave it out of RETURN (its value is known) or run it on Neo4j (--uri bolt://..., or --backend neo4j)"
        )
    return None


def without_final_paging(query: str, parameters: Mapping[str, Any]) -> tuple[str, int, int | None]:
    """``query`` without the SKIP and LIMIT of its final RETURN, and their values (0 and
    ``None`` when it has none).

    grand-cypher cuts the matches of each separate pattern to SKIP + LIMIT before WHERE,
    and the matches (not the groups) before an aggregation when there is no ORDER BY: the
    networkx backend runs the query without them and cuts the rows itself, as Neo4j does.
    A SKIP or LIMIT it cannot read (an expression, a missing parameter) is left in place
    (:func:`networkx_misreading` and :func:`to_grand_cypher` say what is wrong with it).
    """
    tokens = tokenize(query)
    significant = [i for i, t in enumerate(tokens) if t.kind not in ("space", "comment")]
    sig = [tokens[i] for i in significant]
    _, items, index = _final_return(sig)
    if not items:
        return query, 0, None
    values: dict[str, int] = {}
    cut: list[int] = []  # indexes into sig
    while index < len(sig):
        word = sig[index].text.upper() if sig[index].kind == "word" else ""
        if word not in ("SKIP", "LIMIT") or _keyword_as_name(sig, index):
            index += 1
            continue
        value = _count_value(sig[index + 1], parameters) if index + 1 < len(sig) else None
        if value is None or word in values:
            return query, 0, None
        values[word] = value
        cut += [index, index + 1]
        index += 2
    if not cut:
        return query, 0, None
    for i in cut:
        tokens[significant[i]] = Token("space", " ", tokens[significant[i]].start)
    return "".join(t.text for t in tokens), values.get("SKIP", 0), values.get("LIMIT")


def _count_value(token: Token, parameters: Mapping[str, Any]) -> int | None:
    if token.kind == "number" and _INTEGER.fullmatch(token.text):
        return int(token.text, 16) if token.text[:2].lower() == "0x" else int(token.text)
    if token.kind == "param" and token.value in parameters:
        given = parameters[token.value]
        if isinstance(given, int) and not isinstance(given, bool) and given >= 0:
            return given
    return None
