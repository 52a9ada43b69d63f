"""Acks of messages a channel received more than once.

sqsqlite lets only a message's newest receipt handle act on it. A task that waits or runs in a
worker past its lease is received again, and its ack then holds a superseded handle: refused,
the message would come back once a lease, for ever (or to the dead-letter queue). When the
worker that acks is the one that received it again, the message is deleted with the newer
handle, so the task runs twice, as on SQS. Celery acks from another thread than the one that
receives, so the two may cross: an ack that finds no newer handle yet is noted, and the receive
that brings the message back to this channel deletes it then.
"""

from __future__ import annotations

import threading

from kombu.log import get_logger

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import errors

logger = get_logger(__name__)


class Redeliveries:
    """One channel's record: each message's newest delivery tag here, and the messages whose
    ack was refused as superseded before a newer delivery arrived. Both bounded."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.newest: dict[str, str] = {}
        self.acked_before: set[str] = set()

    def received(self, message_id: str, tag: str) -> bool:
        """Note a delivery; True if an ack of the message was refused here before it came back
        (the caller deletes it with ``tag``)."""
        with self.lock:
            if len(self.newest) >= D.ISSUED_HANDLES_KEPT:
                self.newest.clear()  # deliveries released in bulk are never taken out one by one
            self.newest[message_id] = tag
            if message_id in self.acked_before:
                self.acked_before.discard(message_id)
                return True
            return False

    def newer(self, message_id: str, tag: str) -> str | None:
        """After an ack with ``tag`` was refused as superseded: the tag this channel received the
        message with since, or None, and then its next delivery here is deleted (received)."""
        with self.lock:
            newer = self.newest.get(message_id)
            if newer is not None and newer != tag:
                return newer
            if len(self.acked_before) >= D.ISSUED_HANDLES_KEPT:
                self.acked_before.clear()
            self.acked_before.add(message_id)
            return None

    def acked(self, message_id: str, tag: str) -> None:
        with self.lock:
            if self.newest.get(message_id) == tag:
                del self.newest[message_id]


def ack(redeliveries: Redeliveries, message_id: str | None, q: sqsqlite.Queue, handle: str) -> None:
    """Delete the message of a delivery, with the newer handle this channel holds if a later
    receive superseded this one; ReceiptHandleIsInvalid if there is none (yet)."""
    try:
        q.delete_message(handle)
    except errors.ReceiptHandleIsInvalid:
        newer = None if message_id is None else redeliveries.newer(message_id, handle)
        if newer is None:
            raise
        q.delete_message(newer)
        logger.info("acked a message of %s with the newer receipt handle this worker received it with", q.name)
    else:
        if message_id is not None:
            redeliveries.acked(message_id, handle)
