"""Bookmarks: small named values a tool keeps in the database beside the queues, such as how far
a copy to another SQS endpoint has come. They live in the ``meta`` table under a prefix of their
own, so they never meet the engine's own settings there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import queries as Q
from .. import validation as V
from ..errors import InvalidParameterValue

if TYPE_CHECKING:
    from .context import Context

_PREFIX = "bookmark:"


def checked_bookmarks(values: Any) -> dict[str, bytes | None]:
    """Bookmarks to set, checked before any is written: keys are text, values bytes (a
    bytearray or memoryview is kept as bytes) or None. A value of another type, once
    committed, would fail every later read of it."""
    if not isinstance(values, Mapping):
        raise InvalidParameterValue(f"Invalid bookmarks {V.shorten(values)}: expected a map of keys to bytes (or None to remove one).")
    out: dict[str, bytes | None] = {}
    for key, value in values.items():
        V.text("bookmark key", key)
        if value is not None and not isinstance(value, (bytes, bytearray, memoryview)):
            raise InvalidParameterValue(f"Invalid value {V.shorten(value)} for bookmark {key!r}: expected bytes, or None to remove it.")
        out[key] = None if value is None else bytes(value)
    return out


def write_bookmark(tx: Any, key: str, value: bytes | None) -> None:
    """Set ``key`` to ``value`` (None removes it), inside the caller's write transaction; both
    checked already (checked_bookmarks)."""
    if value is None:
        tx.run(Q.delete_meta, key=_PREFIX + key)
    else:
        tx.run(Q.set_meta, key=_PREFIX + key, value=value)


def bookmark(db: Context, key: str) -> bytes | None:
    """The value of ``key``, or None."""
    V.text("bookmark key", key)
    with db.store.read() as tx:
        value = tx.scalar(Q.get_meta, key=_PREFIX + key)
    return None if value is None else bytes(value)


def is_bookmarked(tx: Any, key: str) -> bool:
    """Whether ``key`` is set, inside the caller's transaction."""
    return tx.scalar(Q.get_meta, key=_PREFIX + key) is not None


def set_bookmark(db: Context, key: str, value: bytes | None) -> None:
    set_bookmarks(db, {key: value})


def set_bookmarks(db: Context, values: Mapping[str, bytes | None]) -> None:
    checked = checked_bookmarks(values)
    with db.store.write() as tx:
        for key, value in checked.items():
            write_bookmark(tx, key, value)


def bookmarks(db: Context, prefix: str) -> dict[str, bytes]:
    start = _PREFIX + V.text("bookmark prefix", prefix)
    with db.store.read() as tx:
        rows = tx.all(Q.meta_range, low=start, high=start + "\U0010ffff")
    return {row["key"][len(_PREFIX) :]: bytes(row["value"]) for row in rows}
