"""What the aio tests share."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from typing import Any

# The sync client's methods the tests ask about.
CALLS = (
    "create_queue",
    "send_message",
    "send_message_batch",
    "receive_message",
    "change_message_visibility",
    "delete_message",
    "delete_message_batch",
    "get_queue_attributes",
    "list_queues",
)


def threads_of_each_call(sqs, monkeypatch) -> Callable[[Awaitable[Any]], Awaitable[set[str]]]:
    """A function awaiting one call and saying where the sync client's methods ran for it: {"loop"},
    {"pool"} or both (a call tried on the loop, then run again on the pool)."""
    sync, loop_thread, seen = sqs.sync, threading.get_ident(), set()

    def noting(method: Callable[..., Any]) -> Callable[..., Any]:
        def noted(*args: Any, **kwargs: Any) -> Any:
            seen.add("loop" if threading.get_ident() == loop_thread else "pool")
            return method(*args, **kwargs)

        return noted

    for name in CALLS:
        monkeypatch.setattr(sync, name, noting(getattr(sync, name)))
    # A long poll's rounds (the system clock's) call the action layer's round, not the method.
    actions = sync._actions
    monkeypatch.setattr(actions, "receive_round", noting(actions.receive_round))

    async def where(call: Awaitable[Any]) -> set[str]:
        seen.clear()
        await call
        return set(seen)

    return where
