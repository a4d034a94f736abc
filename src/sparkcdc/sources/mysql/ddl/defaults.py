"""A column's DEFAULT clause as the DDL declares it: a literal kept with its value, anything else
kept as an expression (:class:`~sparkcdc.sources.mysql.ddl.statements.Default`).

The literals are MySQL's and MariaDB's: strings (with a charset introducer, adjacent strings
joined, ``DATE``/``TIME``/``TIMESTAMP`` typed), signed numbers (``1.5e3``), hexadecimal and bit
values (``x'ff'``, ``0x1F``, ``b'101'``, ``0b101``), ``TRUE``/``FALSE`` and ``NULL``; MySQL 8's
``DEFAULT (literal)`` is the literal. A literal followed by an operator (MariaDB's ``DEFAULT 1 +
1``) is an expression, as is every function (``CURRENT_TIMESTAMP``, ``uuid()``, ``NEXT VALUE FOR
s``).
"""

from __future__ import annotations

import re

from sparkcdc.sources.mysql.ddl.lexer import Token, TokenStream
from sparkcdc.sources.mysql.ddl.statements import Default

_OPERATORS = set("+-*/%&|^<>=!~")
_NUMBER = re.compile(r"(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_EXPONENT_CUT = re.compile(r"(\d+\.?\d*|\.\d+)[eE]")  # 1.5e-3 lexes as 1.5e, -, 3
_HEX, _BIN = re.compile(r"0x([0-9a-fA-F]+)"), re.compile(r"0b([01]+)")
_TYPED = {"DATE", "TIME", "TIMESTAMP"}
# words that end a DEFAULT expression: the next attribute of the column definition
_ATTRIBUTE_WORDS = (
    "NOT NULL PRIMARY KEY UNIQUE COMMENT COLLATE CHARACTER CHARSET ON AUTO_INCREMENT INVISIBLE "
    "VISIBLE CHECK REFERENCES AFTER FIRST GENERATED AS STORED VIRTUAL PERSISTENT COLUMN_FORMAT "
    "STORAGE DEFAULT SERIAL ENGINE_ATTRIBUTE SECONDARY_ENGINE_ATTRIBUTE WITH WITHOUT COMPRESSED"
)
_ATTRIBUTES = set(_ATTRIBUTE_WORDS.split())


def default_value(p: TokenStream) -> Default:
    """The DEFAULT value at the cursor (consumed up to the column's next attribute)."""
    if p.text() == "(":
        start = p.i
        p.skip_parens()
        inner = p.toks[start + 1 : p.i - 1]
        value, end = scan(inner, 0)
        if end != len(inner) or value.kind == "expression":
            value = Default("expression", "(" + _sql(inner) + ")")
    else:
        value, p.i = scan(p.toks, p.i)
    if p.text() in _OPERATORS:  # 1 + 1: an expression after all
        start = p.i
        _skip_expression(p)
        value = Default("expression", f"{value.text} {_sql(p.toks[start : p.i])}")
    return value


def scan(toks: list[Token], i: int) -> tuple[Default, int]:
    """The literal (or expression) starting at ``toks[i]`` and the index after it."""
    if i >= len(toks):
        return Default("expression"), i
    tok = toks[i]
    if tok.kind == "punct" and tok.text in "+-" and i + 1 < len(toks):
        found, end = _number(toks, i + 1)
        if found is None:
            return _expression(toks, i)
        return Default("number", found if tok.text == "+" else f"-{found}"), end
    found, end = _number(toks, i)
    if found is not None:
        return Default("number", found), end
    if tok.kind == "string":
        return _strings(toks, i)
    if tok.kind != "word":
        return _expression(toks, i)
    word, nxt = tok.upper, toks[i + 1] if i + 1 < len(toks) else None
    if word.startswith("_") and nxt is not None and nxt.upper in ("X", "B"):
        literal, end = scan(toks, i + 1)  # _latin1 x'41': bytes in that charset
        if literal.kind != "bits":
            return _expression(toks, i)
        return Default("bits", tok.text[1:], literal.bits), end
    if nxt is not None and nxt.kind == "string":
        if word in ("X", "B"):
            value = _bits(nxt.text, 16 if word == "X" else 2)
            if value is None:
                return _expression(toks, i)
            return Default("bits", bits=value), i + 2
        if word.startswith("_") or word == "N" or word in _TYPED:
            return _strings(toks, i + 1)
    if word == "NULL":
        return Default("null"), i + 1
    if word in ("TRUE", "FALSE"):
        return Default("boolean", "1" if word == "TRUE" else "0"), i + 1
    prefixed = _HEX.fullmatch(tok.text) or _BIN.fullmatch(tok.text)
    if prefixed:
        digits = _bits(prefixed.group(1), 16 if tok.text[1] in "xX" else 2)
        return Default("bits", bits=digits or b""), i + 1  # 0xF is 0x0F
    return _expression(toks, i)


def _number(toks: list[Token], i: int) -> tuple[str | None, int]:
    """A number literal at ``toks[i]`` (its text, the index after it), else (None, i)."""
    tok = toks[i] if i < len(toks) else None
    if tok is None or tok.kind not in ("number", "word"):
        return None, i
    if _NUMBER.fullmatch(tok.text):
        return tok.text, i + 1
    tail = toks[i + 1 : i + 3]
    if (
        _EXPONENT_CUT.fullmatch(tok.text)
        and len(tail) == 2
        and tail[0].text in "+-"
        and tail[1].kind == "number"
        and tail[1].text.isdigit()
    ):
        return tok.text + tail[0].text + tail[1].text, i + 3
    return None, i


def _strings(toks: list[Token], i: int) -> tuple[Default, int]:
    """Adjacent string literals from ``toks[i]`` on, joined (as the server joins them)."""
    parts = []
    while i < len(toks) and toks[i].kind == "string":
        parts.append(toks[i].text)
        i += 1
    return Default("string", "".join(parts)), i


def _bits(digits: str, base: int) -> bytes | None:
    """The bytes of a hexadecimal (an even number of digits) or binary literal."""
    if base == 16:
        try:
            return bytes.fromhex(digits if len(digits) % 2 == 0 else "0" + digits)
        except ValueError:
            return None
    if digits and set(digits) - {"0", "1"}:
        return None
    value = int(digits or "0", 2)
    return value.to_bytes(max(1, (len(digits) + 7) // 8), "big") if digits else b""


def _expression(toks: list[Token], i: int) -> tuple[Default, int]:
    """A function or other expression from ``toks[i]``: a word and its arguments, if any."""
    end = i + 1
    if end < len(toks) and toks[end].text == "(":
        depth = 0
        while end < len(toks):
            text = toks[end].text if toks[end].kind == "punct" else ""
            depth += {"(": 1, ")": -1}.get(text, 0)
            end += 1
            if depth == 0:
                break
    return Default("expression", _sql(toks[i:end])), end


def _skip_expression(p: TokenStream) -> None:
    """Consume the rest of an expression: to the clause's end or the column's next attribute."""
    depth = 0
    while not p.at_end():
        tok = p.peek()
        assert tok is not None
        if depth == 0 and (tok.text in (",", ")") or tok.upper in _ATTRIBUTES):
            return
        if tok.kind == "punct":
            depth += {"(": 1, ")": -1}.get(tok.text, 0)
        p.take()


def _sql(toks: list[Token]) -> str:
    """Tokens back to SQL text (for the sentence that names an expression)."""
    out = []
    for tok in toks:
        if tok.kind == "string":
            out.append("'" + tok.text.replace("'", "''") + "'")
        elif tok.kind == "name":
            out.append("`" + tok.text.replace("`", "``") + "`")
        else:
            out.append(tok.text)
    return re.sub(r"\s*([(),.])\s*", r"\1", " ".join(out)).replace(",", ", ")
