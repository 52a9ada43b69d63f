"""SQL text from SQLAlchemy Core statements: the compiled form (:class:`Sql`), how
:mod:`sqsqlite.statements` compiles each statement into it, its parameters ``:named``, and how
``queries.sql`` is read back into it (:func:`load`, :func:`expand`).

:mod:`sqsqlite.queries` loads ``queries.sql`` at every start-up and :mod:`sqsqlite.sqlgen`
checks it, so this module imports SQLAlchemy only when it compiles (``python -m sqsqlite.sqlgen``
and the tests do; a running process never does)."""

from __future__ import annotations

import functools
import json
import operator
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from sqlalchemy.sql import ClauseElement
    from sqlalchemy.sql.compiler import SQLCompiler
    from sqlalchemy.sql.elements import BindParameter


class Sql(str):
    """Compiled SQL text, its parameters ``:named``, plus the values of the literals SQLAlchemy
    turned into parameters (``defaults``). What runs is ``runs`` given ``order(params)``: for
    several names, the text with each ``:name`` numbered (``?n``, n its order of first appearance,
    as SQLite numbers names) and the dict's values in that order, taken in one C call; else the
    text and the dict. sqlite3's binding by name makes a string of each name and releases the GIL
    for each (docs/explanation/decisions.md)."""

    defaults: dict
    runs: str
    order: Callable[[dict], Any]

    def bind(self, params: dict) -> dict:
        return {**self.defaults, **params} if self.defaults else params


# A parameter outside quotes: the quoted texts are matched first and kept as they are.
_QUOTED_OR_PARAMETER = re.compile(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")|:([A-Za-z_]\w*)")


def numbered(text: str) -> tuple[str, tuple[str, ...]]:
    """``text`` with each ``:name`` written ``?n``, and the names in the order of their n."""
    order: dict[str, int] = {}

    def number(match: re.Match) -> str:
        name = match.group(2)
        return match.group(1) if name is None else f"?{order.setdefault(name, len(order) + 1)}"

    return _QUOTED_OR_PARAMETER.sub(number, text), tuple(order)


def _sql(text: str, defaults: dict[str, Any]) -> Sql:
    sql = Sql(text)
    sql.defaults = defaults
    runs, names = numbered(text)
    if len(names) < 2:  # itemgetter of one name gives the value, not a tuple
        sql.runs, sql.order = text, sql.bind if defaults else dict  # dict: a copy, made in C
    else:
        get = operator.itemgetter(*names)
        sql.runs, sql.order = runs, (lambda params: get({**defaults, **params})) if defaults else get
    return sql


# Index 0 of the per-batch-size statement tuples: no batch has no rows.
NO_ROWS = _sql("", {})


@functools.cache
def _dialect(paramstyle: str) -> Any:
    from sqlalchemy.dialects import sqlite

    return sqlite.dialect(paramstyle=paramstyle)


def P(name: str) -> BindParameter:
    from sqlalchemy import bindparam

    return bindparam(name)


def compile_sql(stmt: ClauseElement) -> Sql:
    compiled = cast("SQLCompiler", stmt.compile(dialect=_dialect("named")))
    return _sql(str(compiled), {name: b.effective_value for b, name in compiled.bind_names.items() if not b.required})


# ------------------------------------------------------------------ queries.sql, read back

# A statement of n rows is written once for row i, its row group followed by ", ...": the
# group (a :parameter, or parentheses holding none) is repeated for rows 0 to n-1, a bare i and
# a name's _i suffix in it becoming the row's number. sqlgen writes that form only where it
# expands to exactly the compiled statement, and its check compares every expansion again.
REPEAT = ", ..."
_PARAMETER = re.compile(r":\w+")
_ROW_NUMBER = re.compile(r"(?<![^\W_])i\b")  # i alone, or after an underscore


def _group_start(template: str, end: int) -> int:
    """Where the row group that ends at ``end``, just before ", ...", starts."""
    if template[end - 1] == ")":
        start = template.rfind("(", 0, end)
        if start >= 0 and ")" not in template[start : end - 1]:
            return start
    else:
        start = template.rfind(":", 0, end)
        if start >= 0 and _PARAMETER.fullmatch(template, start, end):
            return start
    raise ValueError(f"no row group before {REPEAT!r} in: {template[:80]}")


def expansions(template: str, counts: range) -> list[str]:
    """``template``'s statement for each row count of ``counts``: every ``GROUP, ...`` made GROUP
    for row 0, row 1 ... up to row n-1, joined by ", " (``IN (:id_i, ...)`` for 3 rows:
    ``IN (:id_0, :id_1, :id_2)``). Parsed once, each row's group formatted once."""
    parts, done = [], 0
    while (end := template.find(REPEAT, done)) >= 0:
        start = _group_start(template, end)
        row = _ROW_NUMBER.sub("{0}", template[start:end].replace("{", "{{").replace("}", "}}"))
        parts.append((template[done:start], list(map(row.format, range(max(counts, default=0))))))
        done = end + len(REPEAT)
    tail = template[done:]
    return ["".join([before + ", ".join(rows[:n]) for before, rows in parts]) + tail for n in counts]


def expand(template: str, n: int) -> str:
    """``template``'s statement for ``n`` rows (:func:`expansions`)."""
    return expansions(template, range(n, n + 1))[0]


def load(path: Path) -> tuple[dict[str, Sql], dict[str, tuple[Sql, ...]], dict[str, Any]]:
    """The statements, the per-batch-size tuples and the constants of a queries.sql file.

    A block is ``-- name: NAME``, NAME[n] (entry n of a per-batch-size tuple) or NAME[a..b]
    (entries a to b, one statement written for row i), then optional ``-- rows: n`` (a single
    statement written for row i, of n rows) and ``-- defaults: {...}`` lines, then the SQL. Entry
    0 of a tuple is :data:`NO_ROWS`, in no block."""
    header, *blocks = path.read_text(encoding="utf-8").split("\n-- name: ")
    constants: dict[str, Any] = {}
    for line in header.splitlines():
        if line.startswith("-- constant: "):
            name, _, value = line[len("-- constant: ") :].partition(" = ")
            loaded = json.loads(value)
            constants[name] = tuple(loaded) if isinstance(loaded, list) else loaded
    statements: dict[str, Sql] = {}
    per_size: dict[str, list[Sql]] = {}
    for block in blocks:
        name, _, rest = block.partition("\n")
        rows = None
        if rest.startswith("-- rows: "):
            line, _, rest = rest.partition("\n")
            rows = int(line[len("-- rows: ") :])
        defaults: dict[str, Any] = {}
        if rest.startswith("-- defaults: "):
            line, _, rest = rest.partition("\n")
            defaults = json.loads(line[len("-- defaults: ") :])
        text = rest.strip()
        text = text[:-1] if text.endswith(";") else text
        if not name.endswith("]"):
            statements[name] = _sql(text if rows is None else expand(text, rows), defaults)
            continue
        base, _, sizes = name[:-1].partition("[")
        first, _, last = sizes.partition("..")
        entries = per_size.setdefault(base, [NO_ROWS])
        if int(first) != len(entries):
            raise ValueError(f"{path}: {name} is out of order")
        if not last:
            entries.append(_sql(text, defaults))
            continue
        entries += [_sql(sql, defaults) for sql in expansions(text, range(int(first), int(last) + 1))]
    return statements, {name: tuple(entries) for name, entries in per_size.items()}, constants
