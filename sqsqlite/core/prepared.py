"""Prepared: a message to send, checked against every rule that does not depend on its queue.
Made by sending (and by transfer for an imported message), read by rules' message row."""

from __future__ import annotations

from typing import Any

from .. import validation as V


class Prepared:
    """A message checked against everything that does not depend on the queue. A plain slotted
    class: one is built per message sent, and a dataclass's __init__ and __post_init__ cost
    twice as much."""

    __slots__ = ("body", "body_bytes", "attributes", "delay", "group_id", "dedup_id", "entry_id", "size", "trace_header")

    def __init__(
        self,
        body: str,
        body_bytes: bytes,
        attributes: dict[str, V.MessageAttribute],
        delay: int | None,
        group_id: str | None,
        dedup_id: str | None,
        entry_id: str | None = None,
        trace_header: str | None = None,
    ):
        self.body = body
        self.body_bytes = body_bytes
        self.attributes = attributes
        self.delay = delay
        self.group_id = group_id
        self.dedup_id = dedup_id
        self.entry_id: Any = entry_id  # a batch entry's Id (always set in a batch), None for a single send
        # Read by the batch total and again by the queue's MaximumMessageSize check.
        self.size = V.message_size(body_bytes, attributes) if attributes else len(body_bytes)
        self.trace_header = trace_header  # the AWSTraceHeader system attribute
