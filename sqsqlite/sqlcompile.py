"""Compiling SQLAlchemy Core statements to the SQL text sqsqlite runs: named parameters, ``?``
positions for the hottest executemany, or ``?1 ?2 ...`` numbers bound once each.
:mod:`sqsqlite.statements` builds every statement with these."""

from __future__ import annotations

import re
from typing import cast

from sqlalchemy import bindparam
from sqlalchemy.dialects import sqlite
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from .sqltext import Sql

_DIALECT = sqlite.dialect(paramstyle="named")


_POSITIONAL = sqlite.dialect()  # qmark: binding by position skips a name lookup per value


def compile_positional(stmt: ClauseElement) -> tuple[Sql, tuple[str, ...]]:
    """SQL with ? placeholders and the parameter names in their order, for the hottest
    executemany, where binding by position is measurably cheaper than by name."""
    compiled = cast(SQLCompiler, stmt.compile(dialect=_POSITIONAL))
    assert not [b for b in compiled.binds.values() if not b.required], "literal values would need defaults"
    sql = Sql(str(compiled))
    sql.defaults = {}
    return sql, tuple(compiled.positiontup or ())


def compile_sql(stmt: ClauseElement) -> Sql:
    compiled = cast(SQLCompiler, stmt.compile(dialect=_DIALECT))
    sql = Sql(str(compiled))
    sql.defaults = {name: b.effective_value for b, name in compiled.bind_names.items() if not b.required}
    return sql


# Index 0 of the per-batch-size statement tuples: no batch has no rows.
NO_ROWS = Sql("")
NO_ROWS.defaults = {}


def P(name: str):
    return bindparam(name)


def compile_numbered(stmt: ClauseElement, order: tuple[str, ...]) -> Sql:
    """SQL whose named parameters become ?1, ?2 ... in ``order``; SQLite binds a number used
    several times once."""
    sql = compile_sql(stmt)
    assert not sql.defaults, "literal values would need defaults"
    number = {name: i for i, name in enumerate(order, 1)}
    assert set(re.findall(r":(\w+)", sql)) == set(number), (sql, order)
    numbered = Sql(re.sub(r":(\w+)", lambda found: f"?{number[found.group(1)]}", sql))
    numbered.defaults = {}
    return numbered
