"""The compiled form of a statement, shared by the compiler and the cache that serves it."""

from __future__ import annotations


class Sql(str):
    """Compiled SQL text plus the values of the literals SQLAlchemy turned into parameters."""

    defaults: dict

    def bind(self, params: dict) -> dict:
        return {**self.defaults, **params} if self.defaults else params
