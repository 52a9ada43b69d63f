"""``--output table`` drawn as the aws CLI draws it (awscli/formatter.py and awscli/table.py).

The response becomes a list of sections, each a title, an indent level, optional column
headers and rows: a dict's scalar members are one row under sorted headers (a single scalar is a
``name | value`` row), its other members nested sections one level in; a list of dicts is one
header row and a row per element; a list of scalars is a row per element. All sections share one
width: the widest section's natural width, or, where that is wider than the terminal, each
one-row section is first turned on its side (``header | value`` rows). Columns are then scaled to
fill the width exactly, as the aws CLI scales them (rounding, then one character at a time).
"""

from __future__ import annotations

import os
import sys
import unicodedata
from typing import Any

# The aws CLI colours a table on a terminal (colorama's codes): row values bright blue, the
# indentation bars dim yellow.
_VALUE_ON, _BAR_ON, _OFF = "\x1b[1m\x1b[34m", "\x1b[2m\x1b[33m", "\x1b[0m"


def text_width(text: str) -> int:
    """Columns ``text`` takes: East Asian wide, full-width and ambiguous characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WFA" else 1 for c in text)


def terminal_width() -> int:
    """The terminal's width if standard output is one, else 80 (the aws CLI asks the same way)."""
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns
    except (OSError, ValueError, AttributeError):
        return 80


class Section:
    def __init__(self, title: str = "", indent: int = 0):
        self.title = title
        self.indent = indent
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self.widths: list[int] = []  # each column's widest cell, headers included

    def _widen(self, cells: list[str]) -> None:
        if not self.widths:
            self.widths = [text_width(c) for c in cells]
        else:
            self.widths = [max(w, text_width(c)) for w, c in zip(self.widths, cells)] + self.widths[len(cells) :]

    def set_headers(self, headers: list[str]) -> None:
        self._widen(headers)
        self.headers = headers

    def add_row(self, row: list[Any]) -> None:
        cells = [str(c) for c in row]
        self.rows.append(cells)
        self._widen(cells)

    def natural_width(self) -> int:
        columns = sum(w + 4 for w in self.widths) + 2 + 2 * self.indent
        return max(text_width(self.title) + 2 + 2 * self.indent, columns)

    def scaled(self, width: int) -> list[int]:
        """Column widths (4 of padding each) scaled to sum to ``width`` exactly."""
        natural = [w + 4 for w in self.widths]
        if not natural:
            return natural
        factor = width / float(sum(natural))
        out = [int(round(factor * w)) for w in natural]
        excess = sum(out) - width
        while excess:
            order = range(len(out)) if excess > 0 else reversed(range(len(out)))
            for i in order:
                step = 1 if excess > 0 else -1
                out[i] -= step
                excess -= step
                if not excess:
                    break
        return out


class _Builder:
    """Turns a response into sections, in the aws CLI's order."""

    def __init__(self) -> None:
        self.sections: list[Section] = []

    def _new(self, title: str, indent: int) -> None:
        self.sections.append(Section(title=title, indent=indent))

    @property
    def current(self) -> Section:
        if not self.sections:
            self._new("", 0)
        return self.sections[-1]

    def build(self, title: str | None, value: Any, indent: int = 0) -> bool:
        if not value:
            return False
        if title is not None:
            self._new(title, indent)
        if isinstance(value, list):
            if isinstance(value[0], dict):
                self._from_list(value, indent, title)
            else:
                for item in value:
                    if _scalar(item):
                        self.current.add_row([item])
                    elif all(_scalar(e) for e in item):
                        self.current.add_row(list(item))
                    else:
                        self.build(None, item)
        if isinstance(value, dict):
            self._from_dict(value, indent)
        return True

    def _from_dict(self, value: dict, indent: int) -> None:
        headers = sorted(k for k, v in value.items() if _scalar(v))
        nested = sorted(k for k, v in value.items() if not _scalar(v))
        if len(headers) == 1:
            self.current.add_row([headers[0], value[headers[0]]])
        elif headers:
            self.current.set_headers(headers)
            self.current.add_row([value[k] for k in headers])
        for key in nested:
            self.build(key, value[key], indent + 1)

    def _from_list(self, value: list, indent: int, title: str | None) -> None:
        dicts = [e for e in value if isinstance(e, dict)]
        headers = sorted({k for e in dicts for k, v in e.items() if _scalar(v)})
        nested = sorted({k for e in dicts for k, v in e.items() if not _scalar(v)})
        self.current.set_headers(headers)
        # Every element, as the aws CLI goes through them: one that is not a dict (an empty list
        # or string; any other it can't draw) gives an empty row, and a new section if nested.
        for n, element in enumerate(value):
            if n and nested:
                self._new(title or "", indent)
                self.current.set_headers(headers)
            self.current.add_row([element.get(h, "") for h in headers] if isinstance(element, dict) else [])
            for key in nested:
                if isinstance(element, dict) and key in element:
                    self.build(key, element[key], indent + 1)


def _scalar(value: Any) -> bool:
    return not isinstance(value, (list, dict))


def _centred(text: str, width: int, left: str = "|", right: str = "|") -> str:
    length = text_width(text)
    start = width // 2 - length // 2 - 1
    used = text_width(left) + start + length
    return left + " " * start + text + " " * (width - text_width(right) - used) + right


def _left(text: str, width: int, left: str, right: str, length: int) -> str:
    pad = 2 if width - (length + 2 + len(left) + len(right)) >= 0 else 0
    return left + " " * pad + text + " " * (width - len(left) - pad - length - len(right)) + right


def _rule(widths: list[int]) -> str:
    return "".join(("+" + "-" * (w - 2) + "+") if i == 0 else ("-" * (w - 1) + "+") for i, w in enumerate(widths))


def render(data: Any, title: str, width: int | None = None, color: bool = False) -> str:
    """The table the aws CLI prints for ``data`` under ``title`` (the operation's name), or ""."""
    builder = _Builder()
    if not builder.build(title, data):
        return ""
    sections = builder.sections
    width = terminal_width() if width is None else width
    total = max(s.natural_width() for s in sections)
    if total > width:
        for i, s in enumerate(sections):
            if len(s.rows) == 1 and s.headers:
                turned = Section(title=s.title, indent=s.indent)
                for header, cell in zip(s.headers, s.rows[0]):
                    turned.add_row([header, cell])
                sections[i] = turned
        total = max(s.natural_width() for s in sections)
    value = (lambda t: _VALUE_ON + t + _OFF) if color else (lambda t: t)
    bar = (_BAR_ON + "|" + _OFF) if color else "|"
    lines = ["-" * total]
    for s in sections:
        inner = total - 2 * s.indent
        body: list[str] = []
        if s.title:
            body.append(_centred(s.title, inner))
            if not s.headers and not s.rows:
                body.append("+" + "-" * (inner - 2) + "+")
        if s.headers:
            widths = s.scaled(inner)
            body.append(_rule(widths))
            body.append("".join(_centred(h, w, "|" if i == 0 else "", "|") for i, (h, w) in enumerate(zip(s.headers, widths))))
        if s.rows:
            widths = s.scaled(inner)
            if widths:
                body.append(_rule(widths))
                body.extend(
                    "".join(_left(value(c), w, "|" if i == 0 else "", "|", text_width(c)) for i, (w, c) in enumerate(zip(widths, row)))
                    for row in s.rows
                )
                body.append(_rule(widths))
        lines.extend(bar * s.indent + line + bar * s.indent for line in body)
    return "\n".join(lines) + "\n"
