"""The aws CLI's shorthand syntax (``VisibilityTimeout=60,DelaySeconds=5``), parsed the same way.

The grammar is the aws CLI's (awscli/shorthand.py): ``key=value`` pairs joined by commas, a value
may be a comma list (``a=b,c`` is ``{"a": ["b", "c"]}``), an explicit list ``[x,y]``, a hash
``{k=v,...}`` or a quoted string; ``\\,`` escapes a comma. It is re-implemented here because the
base install must not need awscli; the tests check it against awscli's parser where installed.
"""

from __future__ import annotations

import re
import string

_KEY_CHARS = set(string.ascii_letters + string.digits + "-_.#/:")
_START = r"\!\#-&\(-\+\--\<\>-Z\\\\-z\u007c-\uffff"
_FIRST_FOLLOW = r"\s\!\#-&\(-\+\--\\\\\^-\|~-\uffff"
_SECOND_FOLLOW = r"\s\!\#-&\(-\+\--\<\>-\uffff"
# Patterns, compiled on first use (re keeps them): the two values' character classes reach
# U+FFFF, and building those tables took ~9 ms of every command's start, shorthand or not.
_FIRST_VALUE = rf"((\\,)|[{_START}])((\\,)|[{_FIRST_FOLLOW}])*"
_SECOND_VALUE = rf"((\\,)|[{_START}])((\\,)|[{_SECOND_FOLLOW}])*"
_SINGLE = re.compile(r"'(?:\\'|[^'])*'")
_DOUBLE = re.compile(r'"(?:\\"|[^"])*"')


class ShorthandError(ValueError):
    def __init__(self, text: str, index: int, expected: str):
        shown = text[:index] + "<here>" + text[index:]
        super().__init__(f"expected {expected} at position {index}: {shown}")


def parse(text: str) -> dict:
    """``A=b,C=d`` -> ``{"A": "b", "C": "d"}`` (raises ShorthandError)."""
    return _Parser(text).parameter()


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.i = 0

    # ------------------------------------------------------------ grammar

    def parameter(self) -> dict:
        out = {}
        key, value = self.keyval()
        out[key] = value
        while not self.eof():
            self.expect(",", ws=True)
            key, value = self.keyval()
            if key in out:
                raise ShorthandError(self.text, self.i, f"no second {key!r} (use a space, not a comma, between list items)")
            out[key] = value
        return out

    def keyval(self) -> tuple[str, object]:
        key = self.key()
        self.expect("=", ws=True)
        return key, self.values()

    def key(self) -> str:
        start = self.i
        while not self.eof() and self.text[self.i] in _KEY_CHARS:
            self.i += 1
        return self.text[start : self.i]

    def values(self):
        if self.eof():
            return ""
        if self.cur() == "[":
            return self.explicit_list()
        if self.cur() == "{":
            return self.hash_literal()
        return self.csv_value()

    def csv_value(self):
        first = self.first_value()
        self.ws()
        if self.eof() or self.cur() != ",":
            return first
        self.expect(",", ws=True)
        items = [first]
        while True:
            try:
                current = self.second_value()
                self.ws()
                if self.eof():
                    items.append(current)
                    break
                self.expect(",", ws=True)
                items.append(current)
            except ShorthandError:
                if self.eof():
                    raise
                # "a=b,c=d": the comma began the next key; back up to it.
                while self.i >= 0 and self.text[self.i] != ",":
                    self.i -= 1
                break
        return first if len(items) == 1 else items

    def explicit_list(self) -> list:
        self.expect("[", ws=True)
        items = []
        while self.cur() != "]":
            items.append(self.explicit_value())
            self.ws()
            if self.cur() != "]":
                self.expect(",")
                self.ws()
        self.expect("]")
        return items

    def explicit_value(self):
        if self.cur() == "[":
            return self.explicit_list()
        if self.cur() == "{":
            return self.hash_literal()
        return self.first_value()

    def hash_literal(self) -> dict:
        self.expect("{", ws=True)
        out = {}
        while self.cur() != "}":
            key = self.key()
            self.expect("=", ws=True)
            value = self.explicit_value()
            self.ws()
            if self.cur() != "}":
                self.expect(",")
                self.ws()
            out[key] = value
        self.expect("}")
        return out

    def first_value(self) -> str:
        if self.cur() in ("'", '"'):
            return self.quoted()
        m = re.compile(_FIRST_VALUE).match(self.text, self.i)
        if m is None:
            return ""
        self.i = m.end()
        return m.group(0).replace("\\,", ",").rstrip()

    def second_value(self) -> str:
        if self.cur() in ("'", '"'):
            return self.quoted()
        m = re.compile(_SECOND_VALUE).match(self.text, self.i)
        if m is None:
            raise ShorthandError(self.text, self.i, "a value")
        self.i = m.end()
        return m.group(0).replace("\\,", ",").rstrip()

    def quoted(self) -> str:
        quote = self.cur()
        m = (_SINGLE if quote == "'" else _DOUBLE).match(self.text, self.i)
        if m is None:
            raise ShorthandError(self.text, self.i, f"a closing {quote}")
        self.i = m.end()
        return m.group(0)[1:-1].replace("\\" + quote, quote).replace("\\\\", "\\")

    # ------------------------------------------------------------ scanning

    def cur(self):
        return self.text[self.i] if self.i < len(self.text) else None

    def eof(self) -> bool:
        return self.i >= len(self.text)

    def ws(self) -> None:
        while not self.eof() and self.text[self.i] in string.whitespace:
            self.i += 1

    def expect(self, char: str, ws: bool = False) -> None:
        if ws:
            self.ws()
        if self.eof() or self.text[self.i] != char:
            raise ShorthandError(self.text, self.i, repr(char))
        self.i += 1
        if ws:
            self.ws()
