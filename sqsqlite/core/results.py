"""What the engine hands back: send and batch results, received messages, queue figures and
move tasks. Plain values; the Message's delete and change_visibility call back into its queue."""

from __future__ import annotations

import operator
from collections import abc
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from itertools import repeat
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import validation as V
from ..errors import ReceiptHandleIsInvalid

if TYPE_CHECKING:
    from .handles import Handle


class SendResult(tuple):
    """What SendMessage returns for one message: its id, its digests, its sequence number (FIFO)
    and, in batch results, the entry's Id.

    A tuple underneath, (message_id, body, attributes, sequence_number, id), so that a batch's
    results are made in C (a class with an __init__ cost 2,900 instructions a result, this 1,800).

    The MD5 digests are computed when read: most programs never read them, and for a 64 KiB body
    the digest cost a third of the send. The endpoint and the CLI read each once. The result
    holds the body string it was sent with (the caller's own object, no copy) and its attributes."""

    __slots__ = ()

    message_id: str = property(operator.itemgetter(0))  # type: ignore[assignment]
    sequence_number: str | None = property(operator.itemgetter(3))  # type: ignore[assignment]
    id: str | None = property(operator.itemgetter(4))  # type: ignore[assignment]  # the batch entry Id

    @property
    def md5_of_message_body(self) -> str:
        return V.md5_hex(self[1].encode("utf-8"))

    @property
    def md5_of_message_attributes(self) -> str | None:
        attributes = self[2]
        return V.md5_of_attributes(attributes) if attributes else None

    def _key(self) -> tuple:
        return (self.message_id, self.md5_of_message_body, self.md5_of_message_attributes, self.sequence_number, self.id)

    def __eq__(self, other: object) -> bool:
        return self._key() == other._key() if isinstance(other, SendResult) else NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (
            f"SendResult(message_id={self.message_id!r}, md5_of_message_body={self.md5_of_message_body!r}, "
            f"md5_of_message_attributes={self.md5_of_message_attributes!r}, sequence_number={self.sequence_number!r}, id={self.id!r})"
        )


class SentMessages(abc.Sequence):
    """A batch send's SendResults, in entry order, each made when it is read.

    Most programs look only at what failed, and ten SendResults made up front cost about a
    twentieth of a batch send of small messages (callgrind: 1,500 instructions a message). It
    reads as a list does: len, indexing, slicing (a list), iteration, ``in``, and equality with
    a list or another SentMessages of equal results. ``list(result.successful)`` makes a list."""

    __slots__ = ("_ids", "_bodies", "_entry_ids")

    def __init__(self, message_ids: list[str], bodies: list[str], entry_ids: list[str]):
        self._ids, self._bodies, self._entry_ids = message_ids, bodies, entry_ids

    def columns(self) -> tuple[list[str], list[str], list[str]]:
        """The message ids, bodies and entry Ids, in entry order: what the action layer writes
        its response from without making a SendResult a message."""
        return self._ids, self._bodies, self._entry_ids

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        return SendResult((self._ids[index], self._bodies[index], None, None, self._entry_ids[index]))

    def __iter__(self) -> Iterator[SendResult]:
        return map(SendResult, zip(self._ids, self._bodies, repeat(None), repeat(None), self._entry_ids))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (list, SentMessages)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list, so unhashable like one

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass(frozen=True)
class BatchResultErrorEntry:
    id: str
    code: str
    message: str
    sender_fault: bool = True
    hint: str | None = None  # sqsqlite's fuller explanation, beside SQS's own message


class BatchResult(NamedTuple):
    """A batch action's outcome: the entries that succeeded and those that failed. A named
    tuple, immutable like the frozen dataclass it was, at a quarter of its cost to build.
    ``successful`` is a list, or for a batch send of bodies alone a SentMessages."""

    successful: Sequence
    failed: list[BatchResultErrorEntry]


# What acting on a message that was never received (peeked, or made by hand) is refused with.
NOT_RECEIVED = "This message was not received, so it has no receipt handle."


@dataclass(slots=True)
class Message:
    """A received (or peeked) message. ``attributes`` holds the requested system attributes as
    SQS strings; the typed fields are always filled.

    A received message's ``claim`` is what the engine needs to act on it: its queue's id, its
    row, the receive's token (sqsqlite's own, not SQS's shape; None for a peeked message). Its
    receipt handle's text, a MAC over the claim, is made when ``receipt_handle`` is first read:
    on a standard queue ``delete()`` deletes by the claim and needs none, which spared a
    buffered consumer a tenth of its CPU a message. Made by the engine: its constructor is not
    part of the API (its third field is the handle's text, ``_receipt_handle``)."""

    # slots: a claim makes one a message and the consumer drops it soon after; without an
    # instance dict each is smaller, and a receive + delete in batches of 10 took 2-3% less CPU.

    message_id: str
    body: str
    # The handle's text once made (or given); read through receipt_handle. Left out of == and
    # repr: two copies of one receive are equal whether or not either's text was read.
    _receipt_handle: str | None = field(repr=False, compare=False)
    receive_count: int
    sent_timestamp: int
    first_receive_timestamp: int | None
    message_attributes: dict[str, V.MessageAttribute] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    message_group_id: str | None = None
    message_deduplication_id: str | None = None
    sequence_number: str | None = None
    dead_letter_queue_source_arn: str | None = None
    sender_id: str | None = None
    visible_at: int | None = None
    queue: Any = field(default=None, repr=False, compare=False)  # the Queue (or BufferedQueue) that received it
    claim: Handle | None = field(default=None, repr=False)  # its message_uuid None: made with the text
    _md5_body: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def receipt_handle(self) -> str | None:
        """The receipt handle, for DeleteMessage and ChangeMessageVisibility; None for a peeked
        message."""
        text = self._receipt_handle
        if text is None and self.claim is not None and self.queue is not None:
            text = self._receipt_handle = self.queue.db.handles.text(self.claim)
        return text

    @receipt_handle.setter
    def receipt_handle(self, text: str | None) -> None:
        # A handle given replaces the claim: delete() and change_visibility() present it as given.
        self._receipt_handle = text
        self.claim = None

    # The digests follow from the body and the attributes, computed when read (see SendResult).
    # A plain property, not functools.cached_property: before Python 3.12 that holds one lock
    # for every instance of the class, so the endpoint's threads would digest one at a time.
    @property
    def md5_of_body(self) -> str:
        if self._md5_body is None:
            self._md5_body = V.md5_hex(self.body.encode("utf-8"))
        return self._md5_body

    @property
    def md5_of_message_attributes(self) -> str | None:
        """Over the attributes returned, as SQS computes it and as the AWS SDKs check it (the
        Java SDK's MD5 interceptor digests the MessageAttributes of the response)."""
        return V.md5_of_attributes(self.message_attributes)

    def delete(self) -> None:
        """DeleteMessage with this message's receipt handle (by its claim, without making the
        handle's text, when that was never read)."""
        if self.queue is None or (self._receipt_handle is None and self.claim is None):
            raise ReceiptHandleIsInvalid(NOT_RECEIVED)
        self.queue.delete_message(self if self._receipt_handle is None else self._receipt_handle)

    def change_visibility(self, visibility_timeout: int) -> None:
        """ChangeMessageVisibility with this message's receipt handle."""
        handle = None if self.queue is None else self.receipt_handle
        if handle is None:
            raise ReceiptHandleIsInvalid(NOT_RECEIVED)
        self.queue.change_message_visibility(handle, visibility_timeout)


def received_message(
    message_id: str,
    body: str,
    receive_count: int,
    sent_timestamp: int,
    first_receive_timestamp: int | None,
    message_attributes: dict[str, V.MessageAttribute],
    message_group_id: str | None,
    dead_letter_queue_source_arn: str | None,
    sender_id: str | None,
    visible_at: int,
    queue: Any,
    claim: Handle | None,
    message_deduplication_id: str | None = None,
    sequence_number: str | None = None,
) -> Message:
    """A received (or peeked: claim None) message, as Message(...) makes it (no system
    attributes yet, its handle's text not made yet): the one place the engine builds one. Its
    fields are set here rather than by the dataclass's __init__: called through the class, that
    cost about 900 instructions a message more (callgrind, CPython 3.11), and a buffered
    consumer's claim makes a hundred at a time."""
    m = _new_object(Message)
    m.message_id = message_id
    m.body = body
    m._receipt_handle = None
    m.receive_count = receive_count
    m.sent_timestamp = sent_timestamp
    m.first_receive_timestamp = first_receive_timestamp
    m.message_attributes = message_attributes
    m.attributes = {}
    m.message_group_id = message_group_id
    m.message_deduplication_id = message_deduplication_id
    m.sequence_number = sequence_number
    m.dead_letter_queue_source_arn = dead_letter_queue_source_arn
    m.sender_id = sender_id
    m.visible_at = visible_at
    m.queue = queue
    m.claim = claim
    m._md5_body = None
    return m


_new_object = object.__new__
# received_message sets every field: one added to Message must be set there too (a slot never
# set fails when read, so a message it makes lacks it).
_made = received_message("", "", 0, 0, None, {}, None, None, None, 0, None, None)
assert all(hasattr(_made, f.name) for f in fields(Message)), "Message's fields changed: update received_message"
del _made


@dataclass(frozen=True)
class QueueStats:
    name: str
    url: str
    fifo: bool
    visible: int
    in_flight: int
    delayed: int
    oldest_age_seconds: float | None
    dead_letter_queue: str | None
    dead_letter_depth: int | None
    # Fair queues (docs/explanation/fair-queues.md), as Amazon SQS's CloudWatch metrics of the same names:
    # the noisy message groups, and the counts above over quiet groups' messages (and those of
    # no group). A FIFO queue has no noisy groups.
    noisy_groups: int = 0
    visible_in_quiet_groups: int = 0
    in_flight_in_quiet_groups: int = 0
    delayed_in_quiet_groups: int = 0
    oldest_age_in_quiet_groups_seconds: float | None = None


@dataclass(frozen=True)
class MoveTask:
    task_handle: str | None  # while the task runs; a finished task has none
    status: str
    source_arn: str
    destination_arn: str | None
    max_number_of_messages_per_second: int | None
    approximate_number_of_messages_moved: int
    approximate_number_of_messages_to_move: int
    failure_reason: str | None  # SQS's words where SQS's are known (an error code, as SQS gives it)
    started_timestamp: int
    failure_hint: str | None = None  # sqsqlite's explanation of the failure, where it says more
