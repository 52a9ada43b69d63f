"""SQL text from SQLAlchemy Core statements: the compiled form (:class:`Sql`) and how
:mod:`sqsqlite.statements` compiles each statement into it, its parameters ``:named``.

:mod:`sqsqlite.queries` makes the same :class:`Sql` from ``queries.sql`` at every start-up, so
this module imports SQLAlchemy only when it compiles (``python -m sqsqlite.sqlgen`` and the
tests do; a running process never does)."""

from __future__ import annotations

import functools
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


def compile_sql(stmt: ClauseElement) -> Sql:
    compiled = cast("SQLCompiler", stmt.compile(dialect=_dialect("named")))
    sql = Sql(str(compiled))
    sql.defaults = {name: b.effective_value for b, name in compiled.bind_names.items() if not b.required}
    return sql
