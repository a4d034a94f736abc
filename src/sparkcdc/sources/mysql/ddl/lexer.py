"""Splitting DDL text into tokens: words, backquoted names, strings, numbers and punctuation.

Comments (``-- ``, ``#``, ``/* */``) disappear; the body of a versioned comment
(``/*!50100 ... */``, MariaDB's ``/*M!100100 ... */``) is kept, as the server executes it.
"""

from __future__ import annotations

from dataclasses import dataclass

Name = tuple[str, str]


class DDLSyntaxError(ValueError):
    """The statement is not DDL this parser understands."""


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # "word", "name" (backquoted), "string", "number", "punct"
    text: str

    @property
    def upper(self) -> str:
        """The keyword this token spells (only bare words are keywords)."""
        return self.text.upper() if self.kind == "word" else ""


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "b": "\b", "Z": "\x1a"}


def tokenize(sql: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(sql)
    open_versioned = 0
    while i < n:
        ch = sql[i]
        if ch.isspace():
            i += 1
        elif sql.startswith("/*", i):
            bang = 2 + (sql[i + 2 : i + 4] == "M!")
            if sql[i + bang : i + bang + 1] == "!":
                i += bang + 1
                while i < n and sql[i].isdigit():
                    i += 1
                open_versioned += 1
            else:
                end = sql.find("*/", i + 2)
                i = n if end < 0 else end + 2
        elif sql.startswith("*/", i) and open_versioned:
            open_versioned -= 1
            i += 2
        elif ch == "#" or (sql.startswith("--", i) and (i + 2 >= n or sql[i + 2].isspace())):
            end = sql.find("\n", i)
            i = n if end < 0 else end + 1
        elif ch == "`":
            text, i = _quoted(sql, i, "`", escapes=False)
            tokens.append(Token("name", text))
        elif ch in "'\"":
            text, i = _quoted(sql, i, ch, escapes=True)
            tokens.append(Token("string", text))
        elif ch.isdigit() or (ch == "." and i + 1 < n and sql[i + 1].isdigit()):
            j = i
            while j < n and (sql[j].isalnum() or sql[j] == "."):
                j += 1
            word = sql[i:j]
            # 1e10, 0x1f and identifiers that start with digits (e.g. 1st_col)
            kind = "number" if word.replace(".", "", 1).isdigit() else "word"
            tokens.append(Token(kind, word))
            i = j
        elif ch.isalnum() or ch in "_$@" or ord(ch) > 127:
            j = i
            while j < n and (sql[j].isalnum() or sql[j] in "_$@" or ord(sql[j]) > 127):
                j += 1
            tokens.append(Token("word", sql[i:j]))
            i = j
        else:
            tokens.append(Token("punct", ch))
            i += 1
    return tokens


def _quoted(sql: str, i: int, quote: str, escapes: bool) -> tuple[str, int]:
    """The text of the quoted token starting at ``i`` and the index after it."""
    buf: list[str] = []
    i += 1
    n = len(sql)
    while i < n:
        ch = sql[i]
        if escapes and ch == "\\" and i + 1 < n:
            buf.append(_ESCAPES.get(sql[i + 1], sql[i + 1]))
            i += 2
        elif ch == quote and sql[i + 1 : i + 2] == quote:
            buf.append(quote)
            i += 2
        elif ch == quote:
            return "".join(buf), i + 1
        else:
            buf.append(ch)
            i += 1
    raise DDLSyntaxError(f"unterminated {quote} quote")


class TokenStream:
    """A cursor over the tokens of one statement, with the helpers a recursive-descent
    parser needs (keywords, names, balanced parentheses, charset options)."""

    def __init__(self, sql: str, default_db: str | None) -> None:
        self.toks = tokenize(sql)
        while self.toks and self.toks[-1].text == ";":
            self.toks.pop()
        self.i = 0
        self.default_db = default_db

    # -- token helpers
    def peek(self, ahead: int = 0) -> Token | None:
        j = self.i + ahead
        return self.toks[j] if j < len(self.toks) else None

    def text(self, ahead: int = 0) -> str:
        """The next token's text ("" at the end)."""
        tok = self.peek(ahead)
        return tok.text if tok else ""

    def kw(self, ahead: int = 0) -> str:
        tok = self.peek(ahead)
        return tok.upper if tok else ""

    def at_end(self) -> bool:
        return self.i >= len(self.toks)

    def take(self) -> Token:
        tok = self.peek()
        if tok is None:
            raise DDLSyntaxError("the statement ends too early")
        self.i += 1
        return tok

    def accept(self, *words: str) -> bool:
        """Consume the keywords ``words`` (in sequence) if they come next."""
        if all(self.kw(k) == w for k, w in enumerate(words)):
            self.i += len(words)
            return True
        return False

    def accept_punct(self, ch: str) -> bool:
        tok = self.peek()
        if tok and tok.kind == "punct" and tok.text == ch:
            self.i += 1
            return True
        return False

    def expect_punct(self, ch: str) -> None:
        if not self.accept_punct(ch):
            raise DDLSyntaxError(f"expected {ch!r} near {self.context()}")

    def context(self) -> str:
        return " ".join(t.text for t in self.toks[self.i : self.i + 5]) or "the end"

    def ident(self) -> str:
        tok = self.take()
        if tok.kind not in ("word", "name", "string"):
            raise DDLSyntaxError(f"expected a name near {tok.text!r}")
        return tok.text

    def table_name(self) -> Name:
        first = self.ident()
        if self.accept_punct("."):
            return (first, self.ident())
        if not self.default_db:
            raise DDLSyntaxError(f"table {first} has no database and none is selected")
        return (self.default_db, first)

    def skip_parens(self) -> None:
        """Skip a balanced ``( … )`` group starting at the current token."""
        self.expect_punct("(")
        depth = 1
        while depth:
            tok = self.take()
            if tok.kind == "punct":
                depth += {"(": 1, ")": -1}.get(tok.text, 0)

    def name_list(self) -> list[str]:
        """``(a, b(10) DESC, …)`` as the column names."""
        self.expect_punct("(")
        names: list[str] = []
        while True:
            names.append(self.ident())
            if self.text() == "(":
                self.skip_parens()
            self.accept("ASC") or self.accept("DESC")
            if self.accept_punct(")"):
                return names
            self.expect_punct(",")

    def option_value(self) -> str:
        self.accept_punct("=")
        return self.ident()

    def charset_option(self) -> tuple[str | None, str | None] | None:
        """``[DEFAULT] CHARACTER SET|CHARSET [=] x`` or ``[DEFAULT] COLLATE [=] y``."""
        start = self.i
        self.accept("DEFAULT")
        if self.accept("CHARACTER", "SET") or self.accept("CHARSET") or self.accept("CHAR", "SET"):
            return (self.option_value(), None)
        if self.accept("COLLATE"):
            return (None, self.option_value())
        self.i = start
        return None
