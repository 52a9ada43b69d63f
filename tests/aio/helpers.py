"""What the aio tests share."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any


def threads_of_each_call(sqs, monkeypatch) -> Callable[[Awaitable[Any]], Awaitable[set[str]]]:
    """A function awaiting one call and saying where its engine work ran: {"loop"}, {"pool"} or both."""
    store = sqs.db.store
    opened, loop_thread, seen = store.connection, threading.get_ident(), set()
    monkeypatch.setattr(
        store, "connection", lambda *a, **k: seen.add("loop" if threading.get_ident() == loop_thread else "pool") or opened(*a, **k)
    )

    async def where(call: Awaitable[Any]) -> set[str]:
        seen.clear()
        await call
        return set(seen)

    return where
