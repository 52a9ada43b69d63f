"""SQL text from SQLAlchemy Core statements: the compiled form (:class:`Sql`) and how
:mod:`sqsqlite.statements` compiles each statement into it (named parameters, ``?`` positions
for the hottest executemany, or ``?1 ?2 ...`` numbers bound once each).

:mod:`sqsqlite.queries` makes the same :class:`Sql` from ``queries.sql`` at every start-up, so
this module imports SQLAlchemy only when it compiles (``python -m sqsqlite.sqlgen`` and the
tests do; a running process never does)."""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from sqlalchemy.sql import ClauseElement
    from sqlalchemy.sql.compiler import SQLCompiler
    from sqlalchemy.sql.elements import BindParameter


class Sql(str):
    """Compiled SQL text plus the values of the literals SQLAlchemy turned into parameters."""

    defaults: dict

    def bind(self, params: dict) -> dict:
        return {**self.defaults, **params} if self.defaults else params


# Index 0 of the per-batch-size statement tuples: no batch has no rows.
NO_ROWS = Sql("")
NO_ROWS.defaults = {}


@functools.cache
def _dialect(paramstyle: str) -> Any:
    from sqlalchemy.dialects import sqlite

    return sqlite.dialect(paramstyle=paramstyle)


def P(name: str) -> BindParameter:
    from sqlalchemy import bindparam

    return bindparam(name)


def compile_positional(stmt: ClauseElement) -> tuple[Sql, tuple[str, ...]]:
    """SQL with ? placeholders and the parameter names in their order, for the hottest
    executemany, where binding by position is measurably cheaper than by name."""
    compiled = cast("SQLCompiler", stmt.compile(dialect=_dialect("qmark")))
    assert not [b for b in compiled.binds.values() if not b.required], "literal values would need defaults"
    sql = Sql(str(compiled))
    sql.defaults = {}
    return sql, tuple(compiled.positiontup or ())


def compile_sql(stmt: ClauseElement) -> Sql:
    compiled = cast("SQLCompiler", stmt.compile(dialect=_dialect("named")))
    sql = Sql(str(compiled))
    sql.defaults = {name: b.effective_value for b, name in compiled.bind_names.items() if not b.required}
    return sql


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
