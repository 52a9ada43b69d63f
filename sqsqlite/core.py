"""The SQS message lifecycle over one SQLite file: databases, queues, messages.

Domain code only: every statement lives in :mod:`sqsqlite.queries` and runs through
:mod:`sqsqlite.store`. A message's state is never stored as a flag; it follows from
``visible_at``, ``receive_count``, ``sent_at`` and the injected clock (see :mod:`sqsqlite.schema`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import operator
import os
import struct
import threading
import uuid
from collections import abc
from itertools import repeat
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from . import defaults as D
from . import queries as Q
from . import validation as V
from .clock import SYSTEM_CLOCK, Clock
from .errors import (
    InvalidExportRecord,
    InvalidParameterValue,
    MessageNotInflight,
    MissingParameter,
    OverLimit,
    PurgeQueueInProgress,
    QueueAlreadyExists,
    QueueDeletedRecently,
    QueueDoesNotExist,
    ReceiptHandleIsInvalid,
    ResourceNotFoundException,
    SQSError,
    UnsupportedOperation,
)
from .store import Store, Tx

if TYPE_CHECKING:
    from .buffered import BufferedQueue

# ---------------------------------------------------------------------- results


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


class BatchResult(NamedTuple):
    """A batch action's outcome: the entries that succeeded and those that failed. A named
    tuple, immutable like the frozen dataclass it was, at a quarter of its cost to build.
    ``successful`` is a list, or for a batch send of bodies alone a SentMessages."""

    successful: Sequence
    failed: list[BatchResultErrorEntry]


@dataclass
class Message:
    """A received (or peeked) message. ``attributes`` holds the requested system attributes as
    SQS strings; the typed fields are always filled."""

    message_id: str
    body: str
    receipt_handle: str | None
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
    queue: "Queue | None" = field(default=None, repr=False, compare=False)
    _md5_body: str | None = field(default=None, init=False, repr=False, compare=False)

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
        """DeleteMessage with this message's receipt handle."""
        self._queue().delete_message(self.receipt_handle)

    def change_visibility(self, visibility_timeout: int) -> None:
        """ChangeMessageVisibility with this message's receipt handle."""
        self._queue().change_message_visibility(self.receipt_handle, visibility_timeout)

    def _queue(self) -> "Queue":
        if self.queue is None or self.receipt_handle is None:
            raise ReceiptHandleIsInvalid("This message was not received, so it has no receipt handle.")
        return self.queue


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


@dataclass(frozen=True)
class MoveTask:
    task_handle: str
    status: str
    source_arn: str
    destination_arn: str | None
    max_number_of_messages_per_second: int | None
    approximate_number_of_messages_moved: int
    approximate_number_of_messages_to_move: int
    failure_reason: str | None
    started_timestamp: int


# ---------------------------------------------------------------------- receipt handles

_HANDLE = struct.Struct(">BQQ16s16s")  # version, queue id, row id, message uuid, receive token
_MAC_LEN = 16


# base64's urlsafe helpers, done with binascii and one translate each: they run for every
# handle issued and checked, and the module functions' argument handling costs more than the work.
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode()


class _Handle(NamedTuple):
    queue_id: int
    row_id: int
    message_uuid: bytes
    # bytes, or the claim's bytearray: sqlite3 binds a bytearray as a BLOB directly, bytes
    # through its adapter look-up; both compare equal to the stored BLOB.
    token: bytes | bytearray
    message_id: str  # the message id as text, for the delete's statement (a miss there is decided by message_uuid)


def _keyed_mac(keyed: "hashlib._Hash") -> Callable[[bytes], bytes]:
    """The handles' MAC from a keyed BLAKE2b state (a MAC by design: no HMAC construction, whose
    per-call OpenSSL set-up dominated receive and delete). Each call copies the state, which has
    already absorbed the key, a whole compressed block: 0.84 -> 0.63 us a handle."""

    def mac(body: bytes) -> bytes:
        state = keyed.copy()
        state.update(body)
        return state.digest()

    return mac


def _uuid_bytes(message_id: str) -> bytes:
    """The 16 bytes of a canonical uuid string (what the engine stores), without building a UUID.

    A stored id that is not one (imports accepted any text before sqsqlite refused it) gets 16
    bytes of its digest instead, so its receipt handles still work: a handle's bytes only have to
    tell the message it was issued for from a later one in the same row."""
    if len(message_id) == 36:
        try:
            b = bytes.fromhex(message_id.replace("-", ""))
        except ValueError:
            b = b""
        if len(b) == 16:
            return b
    return hashlib.blake2b(message_id.encode("utf-8", "surrogatepass"), digest_size=16, person=b"sqsqlite-msgid").digest()


def _uuid_str(b: bytes) -> str:
    """The canonical text of 16 uuid bytes, as str(uuid.UUID(bytes=b)) gives, without the object."""
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# Message ids: random bytes, one for each character of an id and of the "|" between ids,
# masked by position (a hex digit keeps its byte's low 7 bits, a fixed character none, the
# variant digit two), then translated by one table: below 0x80 a byte's low four bits name its
# hex digit; 0x80, 0x90 and 0xA0 are "-", the version digit "4" and "|"; from 0xB0 the
# variant digit 8, 9, a or b. Three integer operations and one translation for a whole batch.
_ID_DIGITS = bytes(
    b"0123456789abcdef"[b & 0x0F] if b < 0x80 else b"-4|"[(b >> 4) & 3] if b < 0xB0 else b"89ab"[b & 0x03]
    for b in range(256)
)


def _id_masks(n: int) -> tuple[int, int]:
    keep, force = bytearray(b"\x7f" * 37), bytearray(37)
    for at in (8, 13, 18, 23):
        keep[at], force[at] = 0, 0x80
    keep[14], force[14] = 0, 0x90  # the version
    keep[19], force[19] = 0x03, 0xB0  # the variant
    keep[36], force[36] = 0, 0xA0  # between ids
    # n ids and the n - 1 bars between them: the last position dropped.
    return int.from_bytes(keep * n, "big") >> 8, int.from_bytes(force * n, "big") >> 8


_ID_MASKS = [(0, 0)] + [_id_masks(n) for n in range(1, D.MAX_BATCH_ENTRIES + 1)]


def _new_message_ids(n: int) -> list[str]:
    """n random (version 4) uuid strings, as str(uuid.uuid4()) gives. 2,400 instructions an id
    in batches of 10 and 7,200 for one (callgrind), where five groups unpacked and joined per id
    took 4,000 and an f-string of five slices 9,000."""
    keep, force = _ID_MASKS[n]
    size = 37 * n - 1
    text = (int.from_bytes(os.urandom(size), "big") & keep | force).to_bytes(size, "big").translate(_ID_DIGITS).decode()
    return text.split("|") if n > 1 else [text]


# A handle's text (_Handles.issue): its fields and MAC in hex (version 2). Version 1 wrote
# them in urlsafe base64, a third shorter but three times the cost to write (4,900 instructions
# a handle against 1,800); version 1 handles (87 characters, never 130) are still accepted.
_HEX_HANDLE_LEN = 2 * (_HANDLE.size + _MAC_LEN)


def _decode_handle(mac: Callable[[bytes], bytes], handle: Any) -> _Handle:
    """A receipt handle this database issued (for any queue), or ReceiptHandleIsInvalid."""
    if handle is None or handle == "":
        raise MissingParameter("The request must contain the parameter ReceiptHandle.")
    if not isinstance(handle, str) or len(handle) > 200:
        raise ReceiptHandleIsInvalid(f"The receipt handle {V._shorten(handle, 40)} is not valid.")
    # Only the exact text we issued: fromhex would also take capitals and spaces, and lenient
    # base64 other spellings (spare low bits in the last character, characters outside the
    # alphabet); so the bytes are encoded again and compared.
    if len(handle) == _HEX_HANDLE_LEN:
        version = 2
        try:
            raw = bytes.fromhex(handle)
        except ValueError:
            raw = b""
        exact = raw.hex() == handle
    else:
        version = 1
        try:
            raw = binascii.a2b_base64(handle.encode("ascii").translate(_FROM_URLSAFE) + b"=" * (-len(handle) % 4))
        except (binascii.Error, ValueError):  # UnicodeEncodeError is a ValueError
            raw = b""
        exact = _b64(raw) == handle
    if len(raw) != _HANDLE.size + _MAC_LEN or raw[0] != version or not exact:
        raise ReceiptHandleIsInvalid(f"The receipt handle {V._shorten(handle, 40)} is not valid: it is not one sqsqlite issued.")
    body, signature = raw[: _HANDLE.size], raw[_HANDLE.size :]
    if not hmac.compare_digest(signature, mac(body)):
        raise ReceiptHandleIsInvalid(f"The receipt handle {V._shorten(handle, 40)} is not valid: it was not issued by this database.")
    _, qid, row_id, message_uuid, token = _HANDLE.unpack(body)
    return _Handle(qid, row_id, message_uuid, bytearray(token), _uuid_str(message_uuid))


_new_tuple = tuple.__new__


class _Handles:
    """Issues receipt handles and checks the ones presented.

    A handle is its fields and a MAC under the database's secret. Checking one costs a base64
    round trip and the MAC again; but most handles come back to the process that issued them
    (receive, then delete), so the handles issued recently are kept, text to fields, and a
    presented one found there is proven by the lookup: only this object put it there. Others
    (another process's, older ones, forgeries) are checked in full."""

    def __init__(self, secret: bytes):
        # One keyed state: issue() copies it directly, _mac (for checking) through a closure.
        self._keyed = hashlib.blake2b(key=secret, digest_size=_MAC_LEN)
        self._mac = _keyed_mac(self._keyed)
        self._issued: dict[str, _Handle] = {}

    def issue(self, queue_id: int, row_id: int, message_id: str, token: bytes) -> str:
        # Written out, _uuid_bytes' common case and the MAC: a call costs about 1,000
        # instructions in CPython 3.11, and this runs for every message received.
        try:
            message_uuid = bytes.fromhex(message_id.replace("-", "")) if len(message_id) == 36 else b""
        except ValueError:
            message_uuid = b""
        if len(message_uuid) != 16:
            message_uuid = _uuid_bytes(message_id)  # an id imported before ids had to be uuids
        body = _HANDLE.pack(2, queue_id, row_id, message_uuid, token)
        state = self._keyed.copy()
        state.update(body)
        text = (body + state.digest()).hex()
        issued = self._issued
        if len(issued) >= D.ISSUED_HANDLES_KEPT:
            issued.clear()  # bounded; a handle no longer kept is checked in full
        # tuple.__new__: the NamedTuple's own constructor costs three times as much. The id is
        # the stored text itself, which the delete's statement compares with.
        issued[text] = _new_tuple(_Handle, (queue_id, row_id, message_uuid, token, message_id))
        return text

    def known(self, handles: Iterable) -> list[_Handle | None]:
        """Each handle's fields if this object issued it and remembers it, else None in its
        place; [] when one cannot be a key. Found by lookup alone, each is as proven as check()
        would find it; the caller still has to match each handle's queue."""
        try:
            return list(map(self._issued.get, handles))
        except TypeError:  # e.g. a list given as a handle
            return []

    def check(self, handle: Any, queue_id: int) -> _Handle:
        """The handle's fields if this database issued it for this queue, else ReceiptHandleIsInvalid."""
        h = self._issued.get(handle) if type(handle) is str else None
        if h is None:
            h = _decode_handle(self._mac, handle)
        if h.queue_id != queue_id:
            raise ReceiptHandleIsInvalid(
                f"The receipt handle {V._shorten(handle, 40)} is not valid for this queue: it was issued by another queue."
            )
        return h


# ---------------------------------------------------------------------- helpers


def _ms(seconds: int | float) -> int:
    return int(seconds * 1000)


def _system_attributes(m: "Message", wanted: set[str]) -> dict[str, str]:
    """The system attributes asked for, as SQS strings, from the message's typed fields."""
    values = {
        "ApproximateReceiveCount": str(m.receive_count),
        "ApproximateFirstReceiveTimestamp": None if m.first_receive_timestamp is None else str(m.first_receive_timestamp),
        "SentTimestamp": str(m.sent_timestamp),
        "SenderId": m.sender_id,
        "MessageGroupId": m.message_group_id,
        "MessageDeduplicationId": m.message_deduplication_id,
        "SequenceNumber": m.sequence_number,
        "DeadLetterQueueSourceArn": m.dead_letter_queue_source_arn,
    }
    return {k: v for k, v in values.items() if k in wanted and v is not None}


def _decode_attributes(text: str | None) -> dict[str, V.MessageAttribute]:
    if not text:
        return {}
    return {name: V.MessageAttribute.from_json(data) for name, data in json.loads(text).items()}


def _none(name: str) -> bool:
    return False


def _every(name: str) -> bool:
    return True


def _wanted_message_attributes(names: Iterable[str] | None) -> Callable[[str], bool]:
    if not names:
        return _none
    names = V.name_list(names, "message attribute names")
    if "All" in names or ".*" in names:
        return _every
    exact = {n for n in names if not n.endswith(".*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith(".*"))
    return lambda name: name in exact or name.startswith(prefixes)


class _Prepared:
    """A message checked against everything that does not depend on the queue. A plain slotted
    class: one is built per message sent, and a dataclass's __init__ and __post_init__ cost
    twice as much."""

    __slots__ = ("body", "body_bytes", "attributes", "delay", "group_id", "dedup_id", "entry_id", "size")

    def __init__(
        self,
        body: str,
        body_bytes: bytes,
        attributes: dict[str, V.MessageAttribute],
        delay: int | None,
        group_id: str | None,
        dedup_id: str | None,
        entry_id: str | None = None,
    ):
        self.body = body
        self.body_bytes = body_bytes
        self.attributes = attributes
        self.delay = delay
        self.group_id = group_id
        self.dedup_id = dedup_id
        self.entry_id = entry_id
        # Read by the batch total and again by the queue's MaximumMessageSize check.
        self.size = V.message_size(body_bytes, attributes)


# ---------------------------------------------------------------------- the database


class Database:
    """A sqsqlite database: one SQLite file holding any number of queues.

    Safe to share between threads; every process opens its own.
    """

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        *,
        clock: Clock | None = None,
        region: str = D.DEFAULT_REGION,
        account_id: str = D.DEFAULT_ACCOUNT_ID,
        endpoint: str = D.DEFAULT_ENDPOINT,
        sender_id: str | None = None,
        synchronous: str = "NORMAL",
    ):
        if path is None:
            path = os.environ.get(D.DB_PATH_ENV) or D.DEFAULT_DB_PATH
        self.path = os.fspath(path)
        self.clock = clock or SYSTEM_CLOCK
        # Checked before the file is opened: a bad one would make URLs and ARNs that no later
        # call accepts (a dead-letter queue's ARN among them).
        self.region = V.region(region)
        self.account_id = V.account_id(account_id)
        self.endpoint = endpoint.rstrip("/")
        self.sender_id = sender_id or account_id
        self.store = Store(self.path, synchronous=synchronous)
        self.handles = _Handles(self.store.secret)
        self._changed = threading.Condition()
        self._waiters = 0
        self._tasks: list[threading.Thread] = []

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Wait for running move tasks, stop the checkpoint thread and close every connection."""
        for task in self._tasks:
            task.join(timeout=5)
        self.store.close()

    def now(self) -> int:
        return self.clock.now_ms()

    # ------------------------------------------------------------ names

    def queue_url(self, name: str) -> str:
        return f"{self.endpoint}/{self.account_id}/{name}"

    def queue_arn(self, name: str) -> str:
        return f"arn:aws:sqs:{self.region}:{self.account_id}:{name}"

    def _name_from_arn(self, arn: str, what: str) -> str:
        region, account, name = V.parse_arn(arn, what)
        if account != self.account_id or region != self.region:
            raise QueueDoesNotExist(
                f"{what} {arn!r} names account {account} in {region}; this database holds account "
                f"{self.account_id} in {self.region}."
            )
        return name

    # ------------------------------------------------------------ queues

    def queue(self, name_or_url: str) -> "Queue":
        """A handle on an existing queue, by name or URL (QueueDoesNotExist otherwise)."""
        name = V.queue_name_from_url(name_or_url)
        with self.store.read() as tx:
            self._queue_row(tx, name)
        return Queue(self, name)

    def _queue_row(self, tx: Tx, name: str):
        row = tx.queue(name)
        if row is None:
            raise _no_queue(name)
        return row

    def create_queue(
        self,
        queue_name: str,
        attributes: Mapping[str, Any] | None = None,
        tags: Mapping[str, str] | None = None,
        **attribute_kwargs: Any,
    ) -> "Queue":
        """CreateQueue. Attributes by SQS name, or as snake_case keywords
        (``visibility_timeout=60``). Idempotent for equal attributes."""
        name = V.queue_name(queue_name)
        given = dict(V.mapping("Attributes", attributes))
        for key, value in attribute_kwargs.items():
            given[_attribute_name(key)] = value
        attrs = V.queue_attributes(given, creating=True)
        tag_values = V.tags(tags)
        is_fifo = attrs.get("FifoQueue") == "true"
        if name.endswith(".fifo") and not is_fifo:
            raise InvalidParameterValue(
                f"Queue name {name!r} ends in .fifo, which only FIFO queues may use; pass FifoQueue=true to create a FIFO queue."
            )
        if is_fifo and not name.endswith(".fifo"):
            raise InvalidParameterValue(f"A FIFO queue's name must end in .fifo; got {name!r}.")
        V.check_fifo_attributes(name, is_fifo, attrs)
        now = self.now()
        with self.store.write() as tx:
            existing = tx.one(Q.queue_by_name, name=name)
            if existing is not None:
                current = _queue_attribute_strings(existing)
                differs = {k: v for k, v in attrs.items() if current.get(k, _default_string(k)) != v}
                if differs:
                    raise QueueAlreadyExists(
                        f"A queue named {name!r} already exists with different attributes: "
                        + ", ".join(f"{k} is {current.get(k, _default_string(k))!r}, not {v!r}" for k, v in differs.items())
                        + "."
                    )
                return Queue(self, name)
            deleted_at = tx.scalar(Q.tombstone, name=name)
            if deleted_at is not None and now - deleted_at < _ms(D.QUEUE_NAME_REUSE_SECONDS):
                wait = (deleted_at + _ms(D.QUEUE_NAME_REUSE_SECONDS) - now) / 1000
                raise QueueDeletedRecently(
                    f"The queue {name!r} was deleted less than {D.QUEUE_NAME_REUSE_SECONDS} seconds ago; "
                    f"its name can be reused in {wait:.1f} seconds."
                )
            columns = self._attribute_columns(tx, name, is_fifo, {}, attrs)
            tx.run(Q.insert_queue, name=name, fifo=int(is_fifo), now=now, tags=json.dumps(tag_values), **columns)
            tx.forget_queues()
        return Queue(self, name)

    def _attribute_columns(self, tx: Tx, name: str, is_fifo: bool, current: dict[str, str], changes: dict[str, str]) -> dict:
        """Column values for a queue whose attribute strings are current updated by changes."""
        merged = {**current, **changes}
        if changes.get("RedrivePolicy"):
            self._check_dead_letter_target(tx, name, is_fifo, json.loads(changes["RedrivePolicy"]))
        redrive = json.loads(merged["RedrivePolicy"]) if merged.get("RedrivePolicy") else None
        ints = {r.name: int(merged.get(r.name, r.default)) for r in D.INT_ATTRIBUTES.values()}
        extra = {
            k: v
            for k, v in merged.items()
            if k not in D.INT_ATTRIBUTES and k not in ("FifoQueue", "ContentBasedDeduplication", "DeduplicationScope") and v != ""
        }
        return {
            "visibility_timeout": ints["VisibilityTimeout"],
            "delay_seconds": ints["DelaySeconds"],
            "retention_period": ints["MessageRetentionPeriod"],
            "max_message_size": ints["MaximumMessageSize"],
            "receive_wait_time": ints["ReceiveMessageWaitTimeSeconds"],
            "dead_letter_target": V.parse_arn(redrive["deadLetterTargetArn"])[2] if redrive else None,
            "max_receive_count": redrive["maxReceiveCount"] if redrive else None,
            "content_based_dedup": int(merged.get("ContentBasedDeduplication") == "true"),
            "dedup_scope": merged.get("DeduplicationScope", D.FIFO_DEFAULTS["DeduplicationScope"]),
            "attributes": json.dumps(extra, sort_keys=True),
        }

    def _check_dead_letter_target(self, tx: Tx, name: str, is_fifo: bool, policy: dict) -> None:
        arn = policy["deadLetterTargetArn"]
        try:
            target = self._name_from_arn(arn, "deadLetterTargetArn")
        except QueueDoesNotExist as exc:
            raise InvalidParameterValue(f"Invalid RedrivePolicy: {exc.message}") from None
        if target == name:
            raise InvalidParameterValue(f"Invalid RedrivePolicy: queue {name!r} can't be its own dead-letter queue.")
        row = tx.one(Q.queue_by_name, name=target)
        if row is None:
            raise InvalidParameterValue(f"Invalid RedrivePolicy: the dead-letter queue {arn!r} does not exist.")
        if bool(row["fifo"]) != is_fifo:
            kind = "FIFO" if is_fifo else "standard"
            raise InvalidParameterValue(
                f"Invalid RedrivePolicy: the dead-letter queue of a {kind} queue must also be a {kind} queue; {target!r} is not."
            )
        allow = json.loads(row["attributes"]).get("RedriveAllowPolicy")
        if allow:
            allow = json.loads(allow)
            source = self.queue_arn(name)
            if allow["redrivePermission"] == "denyAll" or (
                allow["redrivePermission"] == "byQueue" and source not in allow.get("sourceQueueArns", [])
            ):
                raise InvalidParameterValue(
                    f"Invalid RedrivePolicy: the RedriveAllowPolicy of {target!r} does not allow {source} as a source queue."
                )

    def get_queue_url(self, queue_name: str) -> str:
        return self.queue(V.queue_name(queue_name)).url

    def list_queues(
        self, queue_name_prefix: str = "", max_results: int | None = None, next_token: str | None = None
    ) -> tuple[list[str], str | None]:
        """ListQueues: (queue URLs, next token). Without max_results, up to 1000 and no token."""
        if not isinstance(queue_name_prefix, str) or len(queue_name_prefix) > D.MAX_QUEUE_NAME_LENGTH or not V.is_text(queue_name_prefix):
            raise InvalidParameterValue(f"Invalid QueueNamePrefix {V._shorten(queue_name_prefix)}: a string of up to 80 characters.")
        if max_results is not None:
            max_results = V.int_value("MaxResults", max_results, 1, D.MAX_LIST_QUEUES_RESULTS)
        after = ""
        if next_token is not None and not isinstance(next_token, str):
            raise InvalidParameterValue(f"Invalid NextToken {V._shorten(next_token)}: pass a token ListQueues returned.")
        if next_token:
            try:
                after = base64.urlsafe_b64decode(next_token.encode()).decode()
            except (binascii.Error, ValueError, UnicodeDecodeError):
                raise InvalidParameterValue(f"Invalid NextToken {V._shorten(next_token)}: pass a token ListQueues returned.") from None
        limit = max_results or D.LIST_QUEUES_UNPAGED_LIMIT
        with self.store.read() as tx:
            rows = tx.all(Q.list_queues, prefix=queue_name_prefix, after=after, limit=limit + 1)
        names = [r["name"] for r in rows]
        token = None
        if max_results is not None and len(names) > limit:
            names = names[:limit]
            token = base64.urlsafe_b64encode(names[-1].encode()).decode()
        return [self.queue_url(n) for n in names[:limit]], token

    def delete_queue(self, queue_url: str) -> None:
        name = V.queue_name_from_url(queue_url)
        now = self.now()
        with self.store.write() as tx:
            row = self._queue_row(tx, name)
            tx.run(Q.delete_queue_messages, queue_id=row["id"])
            tx.run(Q.delete_queue_dedup, queue_id=row["id"])
            tx.run(Q.delete_queue_attempts, queue_id=row["id"])
            tx.run(Q.delete_queue, id=row["id"])
            tx.forget_queues()
            tx.run(Q.put_tombstone, name=name, now=now)
            tx.run(Q.clear_tombstones, before=now - _ms(D.QUEUE_NAME_REUSE_SECONDS))

    # ------------------------------------------------------------ administration

    def stats(self) -> list[QueueStats]:
        """Every queue's exact counts, read from one consistent snapshot."""
        now = self.now()
        out = []
        with self.store.read() as tx:
            rows = tx.all(Q.all_queues)
            by_name = {r["name"]: r for r in rows}
            for row in rows:
                visible, in_flight, delayed = _counts(tx, row, now)
                oldest = tx.scalar(Q.oldest_sent, queue_id=row["id"], cutoff=_cutoff(row, now))
                dlq = row["dead_letter_target"]
                depth = None
                if dlq and dlq in by_name:
                    depth = sum(_counts(tx, by_name[dlq], now))
                out.append(
                    QueueStats(
                        name=row["name"],
                        url=self.queue_url(row["name"]),
                        fifo=bool(row["fifo"]),
                        visible=visible,
                        in_flight=in_flight,
                        delayed=delayed,
                        oldest_age_seconds=None if oldest is None else (now - oldest) / 1000,
                        dead_letter_queue=dlq,
                        dead_letter_depth=depth,
                    )
                )
        return out

    def prune(self) -> int:
        """Remove expired messages (and stale bookkeeping) now; returns how many messages.
        Reads never need this: an expired message is never returned or counted."""
        removed = 0
        now = self.now()
        with self.store.read() as tx:
            rows = tx.all(Q.all_queues)
        for row in rows:
            while True:
                with self.store.write() as tx:
                    fresh = tx.one(Q.queue_by_id, id=row["id"])
                    if fresh is None:
                        break
                    removed_rows = tx.all(Q.prune_all_expired, queue_id=row["id"], cutoff=_cutoff(fresh, now), n=10_000)
                    _heads_left(tx, row["id"], removed_rows)
                    n = len(removed_rows)
                    tx.run(Q.prune_dedup, queue_id=row["id"], window_start=now - _ms(D.FIFO_DEDUP_WINDOW_SECONDS))
                    tx.run(Q.prune_attempts, queue_id=row["id"], window_start=now - _ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
                removed += n
                if n < 10_000:
                    break
        with self.store.write() as tx:
            tx.run(Q.clear_tombstones, before=now - _ms(D.QUEUE_NAME_REUSE_SECONDS))
        return removed

    # ------------------------------------------------------------ message move tasks

    def start_message_move_task(
        self,
        source_arn: str,
        destination_arn: str | None = None,
        max_number_of_messages_per_second: int | None = None,
        *,
        background: bool = True,
    ) -> str:
        """StartMessageMoveTask: move a dead-letter queue's messages back to their source queues
        (or to destination_arn). Runs in a background thread unless ``background=False``, in
        which case call :meth:`run_message_move_task` (the CLI does, with a progress bar)."""
        source = self._name_from_arn(source_arn, "SourceArn")
        rate = None
        if max_number_of_messages_per_second is not None:
            rate = V.int_value("MaxNumberOfMessagesPerSecond", max_number_of_messages_per_second, 1, D.MAX_MOVE_TASK_RATE, "messages per second")
        now = self.now()
        with self.store.write() as tx:
            row = tx.one(Q.queue_by_name, name=source)
            if row is None:
                raise ResourceNotFoundException(f"The source queue {source_arn!r} does not exist.")
            if not tx.all(Q.dead_letter_sources, name=source):
                raise InvalidParameterValue(
                    f"The queue {source_arn!r} is not a dead-letter queue: no queue's RedrivePolicy targets it."
                )
            if destination_arn is not None:
                dest = self._name_from_arn(destination_arn, "DestinationArn")
                dest_row = tx.one(Q.queue_by_name, name=dest)
                if dest_row is None:
                    raise ResourceNotFoundException(f"The destination queue {destination_arn!r} does not exist.")
                if bool(dest_row["fifo"]) != bool(row["fifo"]):
                    raise InvalidParameterValue("The destination queue must be of the same type (standard or FIFO) as the source.")
            if tx.one(Q.running_move_task, source_queue_id=row["id"]) is not None:
                raise UnsupportedOperation(
                    f"A message move task is already running on {source_arn!r}; cancel it or wait for it (one task per queue)."
                )
            handle = _b64(json.dumps({"q": row["id"], "t": uuid.uuid4().hex}).encode())
            tx.run(
                Q.insert_move_task,
                task_handle=handle,
                source_queue_id=row["id"],
                source_arn=source_arn,
                destination_arn=destination_arn,
                max_per_second=rate,
                now=now,
                to_move=tx.scalar(Q.count_alive, queue_id=row["id"], cutoff=_cutoff(row, now)),
                max_id=tx.scalar(Q.max_message_row, queue_id=row["id"]) or 0,
            )
        if background:
            thread = threading.Thread(target=self.run_message_move_task, args=(handle,), daemon=True, name="sqsqlite-move")
            thread.start()
            self._tasks.append(thread)
        return handle

    def run_message_move_task(self, task_handle: str, progress: Callable[[MoveTask], None] | None = None) -> MoveTask:
        """Run (or resume) a move task to the end; safe to call again after an interruption."""
        while True:
            task, batch = self._move_step(task_handle)
            if progress:
                progress(task)
            if task.status != "RUNNING":
                return task
            if task.max_number_of_messages_per_second:
                self.clock.sleep(batch / task.max_number_of_messages_per_second)

    def _move_step(self, task_handle: str) -> tuple[MoveTask, int]:
        V.text("TaskHandle", task_handle)
        now = self.now()
        with self.store.write() as tx:
            task = tx.one(Q.move_task, task_handle=task_handle)
            if task is None:
                raise ResourceNotFoundException(f"No message move task has the handle {V._shorten(task_handle)}.")
            if task["status"] != "RUNNING":
                return _move_task(task, handle=False), 0
            source = tx.one(Q.queue_by_id, id=task["source_queue_id"])
            if source is None:
                tx.run(Q.update_move_task, task_handle=task_handle, status="FAILED", moved=task["moved"], last_id=task["last_id"], now=now, failure_reason="The source queue was deleted.")
                return _move_task(tx.one(Q.move_task, task_handle=task_handle), handle=False), 0
            batch = task["max_per_second"] or 500
            rows = tx.all(
                Q.messages_page, queue_id=source["id"], cutoff=_cutoff(source, now), after=task["last_id"], upto=task["max_id"], limit=batch
            )
            moved, last_id = task["moved"], task["last_id"]
            failure = task["failure_reason"]  # an earlier step's stays said
            for row in rows:
                target_arn = task["destination_arn"] or row["dead_letter_source_arn"]
                last_id = row["id"]
                if not target_arn:
                    continue  # sent to the dead-letter queue directly: no source to return to
                if row["visible_at"] > now:
                    # In flight: a consumer holds it, and SQS's redrive, which receives from the
                    # dead-letter queue, could not take it either. It stays, and the consumer's
                    # delete or change of visibility still works.
                    continue
                try:
                    target = tx.one(Q.queue_by_name, name=self._name_from_arn(target_arn, "destination"))
                except SQSError:
                    target = None
                if target is None:
                    failure = f"The destination queue {target_arn} does not exist."
                    continue
                if bool(target["fifo"]) != bool(source["fifo"]):
                    # Nothing sends a message across kinds (a FIFO one needs its group and
                    # sequence, a standard one must not be stuck in a FIFO queue without a group).
                    kind = "a FIFO" if target["fifo"] else "a standard"
                    failure = f"The destination queue {target_arn} is {kind} queue, unlike the source queue."
                    continue
                _move_row(tx, row, source, target, now)
                moved += 1
            status = "RUNNING" if len(rows) == batch else "COMPLETED"
            tx.run(Q.update_move_task, task_handle=task_handle, status=status, moved=moved, last_id=last_id, now=now, failure_reason=failure)
            task = tx.one(Q.move_task, task_handle=task_handle)
        self._notify()
        return _move_task(task, handle=status == "RUNNING"), len(rows)

    def list_message_move_tasks(self, source_arn: str, max_results: int = 1) -> list[MoveTask]:
        source = self._name_from_arn(source_arn, "SourceArn")
        max_results = V.int_value("MaxResults", max_results, 1, 10)
        with self.store.read() as tx:
            row = tx.one(Q.queue_by_name, name=source)
            if row is None:
                raise ResourceNotFoundException(f"The source queue {source_arn!r} does not exist.")
            return [_move_task(t, handle=t["status"] == "RUNNING") for t in tx.all(Q.move_tasks_for, source_queue_id=row["id"], limit=max_results)]

    def cancel_message_move_task(self, task_handle: str) -> int:
        """CancelMessageMoveTask; returns the approximate number of messages already moved."""
        V.text("TaskHandle", task_handle)
        now = self.now()
        with self.store.write() as tx:
            task = tx.one(Q.move_task, task_handle=task_handle)
            if task is None:
                raise ResourceNotFoundException(f"No message move task has the handle {V._shorten(task_handle)}.")
            if task["status"] != "RUNNING":
                raise UnsupportedOperation(f"The message move task is {task['status']}, not RUNNING; only a running task can be cancelled.")
            tx.run(Q.update_move_task, task_handle=task_handle, status="CANCELLED", moved=task["moved"], last_id=task["last_id"], now=now, failure_reason=None)
            return task["moved"]

    # ------------------------------------------------------------ long-poll wake-ups

    def _notify(self) -> None:
        if self._waiters:
            with self._changed:
                self._changed.notify_all()

    def _wait_for_change(self, queue_id: int, deadline: int) -> None:
        """Sleep until something may have made a message receivable: a commit by any
        connection (another thread or process), the next delay or visibility timeout ending, or
        the deadline. Polls PRAGMA data_version, which costs microseconds and no disk I/O."""
        store, clock = self.store, self.clock
        now = clock.now_ms()
        with store.read() as tx:
            due = tx.scalar(Q.next_visible_at, queue_id=queue_id, now=now)
        until = deadline if due is None else min(deadline, due)
        version = store.seen_version()  # as of the empty claim, so nothing since is missed
        if version is None:
            version = store.data_version()
        interval = D.LONG_POLL_INTERVAL
        with self._changed:
            self._waiters += 1
        try:
            while True:
                now = clock.now_ms()
                if now >= until:
                    return
                step = min(interval, (until - now) / 1000)
                interval = min(interval * 1.5, D.LONG_POLL_MAX_INTERVAL)
                with self._changed:
                    notified = _clock_wait(clock, self._changed, step)
                if notified or store.data_version() != version:
                    return
        finally:
            with self._changed:
                self._waiters -= 1


def _clock_wait(clock: Clock, cond: threading.Condition, seconds: float) -> bool:
    if clock is SYSTEM_CLOCK:
        return cond.wait(seconds)
    cond.wait(0)  # a manual clock jumps instead of waiting
    clock.sleep(seconds)
    return False


def _attribute_name(key: str) -> str:
    """visibility_timeout -> VisibilityTimeout; SQS names pass through."""
    special = {"receive_message_wait_time_seconds": "ReceiveMessageWaitTimeSeconds", "fifo_queue": "FifoQueue"}
    if key in special:
        return special[key]
    if "_" not in key and key[:1].isupper():
        return key
    return "".join(part[:1].upper() + part[1:] for part in key.split("_"))


def _default_string(name: str) -> str | None:
    if name in D.INT_ATTRIBUTES:
        return str(D.INT_ATTRIBUTES[name].default)
    if name == "FifoQueue":
        return "false"
    if name in D.FIFO_DEFAULTS:
        return D.FIFO_DEFAULTS[name]
    return ""


def _queue_attribute_strings(row) -> dict[str, str]:
    """The settable attributes of a queue row, as SQS strings."""
    out = {
        "VisibilityTimeout": str(row["visibility_timeout"]),
        "DelaySeconds": str(row["delay_seconds"]),
        "MessageRetentionPeriod": str(row["retention_period"]),
        "MaximumMessageSize": str(row["max_message_size"]),
        "ReceiveMessageWaitTimeSeconds": str(row["receive_wait_time"]),
    }
    out.update(json.loads(row["attributes"]))
    if row["fifo"]:
        out["FifoQueue"] = "true"
        out["ContentBasedDeduplication"] = "true" if row["content_based_dedup"] else "false"
        out["DeduplicationScope"] = row["dedup_scope"]
        out.setdefault("FifoThroughputLimit", D.FIFO_DEFAULTS["FifoThroughputLimit"])
    return out


def _cutoff(row, now: int) -> int:
    """Messages sent at or before this instant have outlived the queue's retention period."""
    return now - _ms(row["retention_period"])


def _counts(tx: Tx, row, now: int) -> tuple[int, int, int]:
    params = {"queue_id": row["id"], "now": now, "cutoff": _cutoff(row, now)}
    return (
        tx.scalar(Q.count_visible, **params),
        tx.scalar(Q.count_in_flight, **params),
        tx.scalar(Q.count_delayed, **params),
    )


def _heads_left(tx: Tx, queue_id: int, gone) -> None:
    """Rows (group_id, is_head) just removed from a queue: where a FIFO group's head left,
    its first remaining message becomes the head."""
    for r in gone:
        if r is not None and r["is_head"]:
            tx.run(Q.fix_group_head, queue_id=queue_id, group_id=r["group_id"])


def _prune(tx: Tx, row, now: int, window: int) -> int:
    """Remove the expired rows among the first ``window`` entries of the claim's walk."""
    removed = tx.all(Q.prune_expired, queue_id=row["id"], now=now, cutoff=_cutoff(row, now), window=window)
    _heads_left(tx, row["id"], removed)
    return len(removed)


def _move_row(tx: Tx, row, source, target, now: int) -> None:
    """Move one message into another queue as a visible, never-received message; its sent_at
    (and so its retention) is kept."""
    sequence = None
    if target["fifo"]:
        sequence = tx.scalar(Q.next_sequence, id=target["id"], n=1)
    tx.run(Q.move_message, id=row["id"], queue_id=target["id"], now=now, sequence_number=sequence)
    if row["group_id"] is not None and target["fifo"]:  # _move_step moves within a kind; a fair queue's groups have no heads
        tx.run(Q.fix_group_head, queue_id=source["id"], group_id=row["group_id"])
        tx.run(Q.fix_group_head, queue_id=target["id"], group_id=row["group_id"])


def _move_task(row, handle: bool) -> MoveTask:
    return MoveTask(
        task_handle=row["task_handle"] if handle else None,
        status=row["status"],
        source_arn=row["source_arn"],
        destination_arn=row["destination_arn"],
        max_number_of_messages_per_second=row["max_per_second"],
        approximate_number_of_messages_moved=row["moved"],
        approximate_number_of_messages_to_move=row["to_move"],
        failure_reason=row["failure_reason"],
        started_timestamp=row["started_at"],
    )


# ---------------------------------------------------------------------- queues


class Queue:
    """One queue of a :class:`Database`. Cheap to make; it holds only the name."""

    def __init__(self, db: Database, name: str):
        self.db = db
        self.name = name

    def __repr__(self) -> str:
        return f"Queue({self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Queue) and other.db is self.db and other.name == self.name

    def __hash__(self) -> int:
        return hash((id(self.db), self.name))

    @property
    def url(self) -> str:
        return self.db.queue_url(self.name)

    @property
    def arn(self) -> str:
        return self.db.queue_arn(self.name)

    @property
    def fifo(self) -> bool:
        return self.name.endswith(".fifo")

    def _row(self, tx: Tx):
        # Database._queue_row written out: every operation runs this.
        row = tx.queue(self.name)
        if row is None:
            raise _no_queue(self.name)
        return row

    # ------------------------------------------------------------ attributes

    def get_queue_attributes(self, attribute_names: Sequence[str] = ("All",)) -> dict[str, str]:
        wanted = V.attribute_names(attribute_names, D.ALL_ATTRIBUTES, "queue attribute")
        now = self.db.now()
        with self.db.store.read() as tx:
            row = self._row(tx)
            out = _queue_attribute_strings(row)
            if wanted & {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"}:
                visible, in_flight, delayed = _counts(tx, row, now)
                out["ApproximateNumberOfMessages"] = str(visible)
                out["ApproximateNumberOfMessagesNotVisible"] = str(in_flight)
                out["ApproximateNumberOfMessagesDelayed"] = str(delayed)
        out["CreatedTimestamp"] = str(row["created_at"] // 1000)
        out["LastModifiedTimestamp"] = str(row["modified_at"] // 1000)
        out["QueueArn"] = self.arn
        return {k: v for k, v in out.items() if k in wanted}

    def set_queue_attributes(self, attributes: Mapping[str, Any]) -> None:
        if not attributes:
            raise MissingParameter("The request must contain the parameter Attributes (one or more queue attributes).")
        changes = V.queue_attributes(attributes, creating=False)
        with self.db.store.write() as tx:
            row = self._row(tx)
            V.check_fifo_attributes(self.name, bool(row["fifo"]), {**_queue_attribute_strings(row), **changes} if row["fifo"] else changes)
            columns = self.db._attribute_columns(tx, self.name, bool(row["fifo"]), _queue_attribute_strings(row), changes)
            tx.run(Q.update_queue_attributes, id=row["id"], now=self.db.now(), **columns)
            tx.forget_queues()

    def tag_queue(self, tags: Mapping[str, str]) -> None:
        if not tags:
            raise MissingParameter("The request must contain the parameter Tags (one or more key/value pairs).")
        with self.db.store.write() as tx:
            row = self._row(tx)
            merged = V.tags({**json.loads(row["tags"]), **V.tags(tags)})
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(merged))
            tx.forget_queues()

    def untag_queue(self, tag_keys: Iterable[str]) -> None:
        keys = V.name_list(tag_keys or (), "TagKeys")
        if not keys:
            raise MissingParameter("The request must contain the parameter TagKeys (one or more keys).")
        with self.db.store.write() as tx:
            row = self._row(tx)
            current = json.loads(row["tags"])
            for key in keys:
                current.pop(key, None)
            tx.run(Q.update_queue_tags, id=row["id"], tags=json.dumps(current))
            tx.forget_queues()

    def list_queue_tags(self) -> dict[str, str]:
        with self.db.store.read() as tx:
            return json.loads(self._row(tx)["tags"])

    def list_dead_letter_source_queues(self) -> list[str]:
        with self.db.store.read() as tx:
            self._row(tx)
            return [self.db.queue_url(r["name"]) for r in tx.all(Q.dead_letter_sources, name=self.name)]

    def purge_queue(self) -> None:
        """PurgeQueue: delete every message sent before the call; once per 60 seconds."""
        now = self.db.now()
        with self.db.store.write() as tx:
            row = self._row(tx)
            if row["purged_at"] is not None and now - row["purged_at"] < _ms(D.PURGE_INTERVAL_SECONDS):
                raise PurgeQueueInProgress(
                    f"The queue {self.name!r} was purged less than {D.PURGE_INTERVAL_SECONDS} seconds ago; "
                    f"purge it again in {(row['purged_at'] + _ms(D.PURGE_INTERVAL_SECONDS) - now) / 1000:.1f} seconds."
                )
            tx.run(Q.purge_queue, queue_id=row["id"], now=now)
            tx.run(Q.mark_purged, id=row["id"], now=now)
            tx.forget_queues()

    # ------------------------------------------------------------ sending

    def _prepare(self, body, delay_seconds, message_attributes, group_id, dedup_id, entry_id=None) -> _Prepared:
        body_bytes = V.message_body(body)
        attributes = V.message_attributes(message_attributes)
        delay = None if delay_seconds is None else V.delay_seconds(delay_seconds)
        if group_id is not None:
            group_id = V.dedup_id("MessageGroupId", group_id)
        if dedup_id is not None:
            dedup_id = V.dedup_id("MessageDeduplicationId", dedup_id)
        return _Prepared(body, body_bytes, attributes, delay, group_id, dedup_id, entry_id)

    def send_message(
        self,
        message_body: str,
        *,
        delay_seconds: int | None = None,
        message_attributes: Mapping[str, Any] | None = None,
        message_group_id: str | None = None,
        message_deduplication_id: str | None = None,
    ) -> SendResult:
        prepared = plain = None
        if delay_seconds is None and not message_attributes and message_group_id is None and message_deduplication_id is None:
            data = V.message_body(message_body)
            plain = _new_tuple(_Plain, ([None], [message_body], len(data)))
        else:
            prepared = [self._prepare(message_body, delay_seconds, message_attributes, message_group_id, message_deduplication_id)]
        with self.db.store.write(sending=True) as tx:
            row = self._row(tx)
            ids = None if plain is None else self._insert_plain(tx, row, plain)
            if ids is None:
                results = self._insert(tx, row, prepared or _prepared_plain(plain))
        self.db._notify()
        if ids is not None:
            return SendResult((ids[0], message_body, None, None, None))
        result = results[0]
        if isinstance(result, SQSError):
            raise result
        return result

    def send_message_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """SendMessageBatch. Entries use SQS member names (Id, MessageBody, DelaySeconds,
        MessageAttributes, MessageGroupId, MessageDeduplicationId)."""
        entries, entry_ids, dicts = V.batch_entry_ids(entries)
        failed: list[BatchResultErrorEntry] = []
        prepared: list[_Prepared] | None = None
        plain = _plain_entries(entries, entry_ids) if dicts else None
        if plain is not None:
            V.check_batch_size(plain.total)
        else:
            prepared = []
            for entry in entries:
                try:
                    prepared.append(
                        self._prepare(
                            entry.get("MessageBody"),
                            entry.get("DelaySeconds"),
                            entry.get("MessageAttributes"),
                            entry.get("MessageGroupId"),
                            entry.get("MessageDeduplicationId"),
                            entry_id=entry["Id"],
                        )
                    )
                except SQSError as exc:
                    failed.append(BatchResultErrorEntry(entry["Id"], exc.code, exc.message, exc.sender_fault))
            V.check_batch_size(sum(p.size for p in prepared))
            if not prepared:
                return BatchResult([], failed)
        with self.db.store.write(sending=True) as tx:
            row = self._row(tx)
            ids = None if plain is None else self._insert_plain(tx, row, plain)
            if ids is None:
                prepared = prepared or _prepared_plain(plain)
                results = self._insert(tx, row, prepared)
        self.db._notify()
        if ids is not None:  # _insert_plain sent every message
            return BatchResult(SentMessages(ids, plain.bodies, plain.entry_ids), failed)
        successful = []
        for p, result in zip(prepared, results):
            if isinstance(result, SQSError):
                failed.append(BatchResultErrorEntry(p.entry_id, result.code, result.message, result.sender_fault))
            else:
                successful.append(result)
        if failed:
            order = {e["Id"]: i for i, e in enumerate(entries)}
            failed.sort(key=lambda f: order[f.id])
        return BatchResult(successful, failed)

    def _insert_plain(self, tx: Tx, row, plain: _Plain) -> list[str] | None:
        """The common send, messages with only a body (plain: their entry Ids, bodies and the
        bodies' size in bytes), to a standard queue, every body within its MaximumMessageSize: one
        INSERT binding the queue, sender, send time and visible_at once; the messages' ids. None
        for anything else (a FIFO queue, a body over the size), which _insert decides message by
        message.

        Its own path because a send's Python costs more than its statement: per message, an
        entry's checks and a _Prepared, then a seven-value row sliced back into the shared form
        cost about as many instructions as SQLite's insert (callgrind, batches of 10)."""
        _, bodies, total = plain
        max_size = row["max_message_size"]
        if row["fifo"] or (total > max_size and max(map(len, map(str.encode, bodies))) > max_size):
            return None
        now = self.db.now()
        ids = _new_message_ids(len(bodies))
        values = [row["id"], self.db.sender_id, now, now + row["delay_seconds"] * 1000]  # Q.INSERT_SHARED_PARAMS order
        values += ids
        values += bodies
        tx.run_positional(Q.INSERT_SHARED_ROWS[len(bodies)], values)
        return ids

    def _insert(self, tx: Tx, row, prepared: list[_Prepared]) -> list:
        """Insert checked messages; an entry that breaks a queue rule becomes its error."""
        now = self.db.now()
        is_fifo = bool(row["fifo"])
        results: list = []
        values: list = []  # the rows' values, row after row
        groups: list = []  # and their group ids
        sender = self.db.sender_id
        queue_id, max_size, queue_delay = row["id"], row["max_message_size"], row["delay_seconds"]
        ids = iter(() if is_fifo else _new_message_ids(len(prepared)))  # FIFO sends make their own
        for p in prepared:
            try:
                if p.size > max_size:
                    raise InvalidParameterValue(
                        f"The message is {p.size} bytes (body plus message attributes); queue {self.name!r} "
                        f"allows 1 to {max_size} bytes (MaximumMessageSize)."
                    )
                if is_fifo:
                    results.append(self._insert_fifo(tx, row, p, now))
                    continue
                if p.dedup_id is not None:
                    raise InvalidParameterValue(f"MessageDeduplicationId is for FIFO queues only; {self.name!r} is a standard queue.")
            except SQSError as exc:
                results.append(exc)
                continue
            delay = queue_delay if p.delay is None else p.delay
            message_id = next(ids)
            # In Q.INSERT_STANDARD_COLUMNS order. A standard queue takes a MessageGroupId as SQS's
            # fair queues do (a tenant's label, returned on receive, ordering nothing).
            values += (queue_id, message_id, p.body, _attributes_json(p.attributes), sender, now, now + delay * 1000)
            groups.append(p.group_id)
            results.append(SendResult((message_id, p.body, p.attributes, None, p.entry_id)))
        if values:
            width = len(Q.INSERT_STANDARD_COLUMNS)
            n = len(values) // width
            if groups.count(None) != n:
                for i in range(n, 0, -1):  # each row's group after its other values
                    values.insert(i * width, groups[i - 1])
                tx.run_positional(Q.INSERT_GROUPED_ROWS[n], values)
            elif any(values[Q.ATTRIBUTES_AT :: width]):
                tx.run_positional(Q.INSERT_STANDARD_ROWS[n], values)
            else:
                del values[Q.ATTRIBUTES_AT :: width]  # every row's None
                tx.run_positional(Q.INSERT_PLAIN_ROWS[n], values)
        return results

    def _insert_fifo(self, tx: Tx, row, p: _Prepared, now: int) -> SendResult:
        if p.group_id is None:
            raise MissingParameter(f"The request must contain the parameter MessageGroupId: {self.name!r} is a FIFO queue.")
        if p.delay is not None:
            raise InvalidParameterValue(
                f"DelaySeconds {p.delay} is not allowed on a message sent to FIFO queue {self.name!r}; set the queue's DelaySeconds instead."
            )
        dedup = p.dedup_id
        if dedup is None:
            if not row["content_based_dedup"]:
                raise InvalidParameterValue(
                    f"The queue {self.name!r} should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly."
                )
            dedup = hashlib.sha256(p.body_bytes).hexdigest()
        scope = p.group_id if row["dedup_scope"] == "messageGroup" else ""
        window_start = now - _ms(D.FIFO_DEDUP_WINDOW_SECONDS)
        seen = tx.one(Q.find_dedup, queue_id=row["id"], scope=scope, dedup_id=dedup, window_start=window_start)
        if seen is not None:
            return SendResult((seen["message_id"], p.body, p.attributes, f"{seen['sequence_number']:020d}", p.entry_id))
        sequence = tx.scalar(Q.next_sequence, id=row["id"], n=1)
        [message_id] = _new_message_ids(1)
        is_head = tx.one(Q.group_has_messages, queue_id=row["id"], group_id=p.group_id) is None
        values = _message_row(row["id"], message_id, p, self.db.sender_id, now, now + _ms(row["delay_seconds"]))
        values.update(dedup_id=dedup, sequence_number=sequence, is_head=int(is_head))
        tx.run(Q.insert_message, **values)
        tx.run(Q.put_dedup, queue_id=row["id"], scope=scope, dedup_id=dedup, message_id=message_id, sequence_number=sequence, now=now)
        return SendResult((message_id, p.body, p.attributes, f"{sequence:020d}", p.entry_id))

    # ------------------------------------------------------------ receiving

    def buffered(self, **options: Any) -> "BufferedQueue":
        """This queue behind a BufferedQueue (sqsqlite/buffered.py): receives of one message
        served from claims of up to ``prefetch``, deletes committed together. Options: prefetch,
        max_batch_open_ms, visibility_timeout, message_system_attribute_names,
        message_attribute_names."""
        from .buffered import BufferedQueue

        return BufferedQueue(self, **options)

    def receive_message(
        self,
        *,
        max_number_of_messages: int = 1,
        visibility_timeout: int | None = None,
        wait_time_seconds: int | None = None,
        message_system_attribute_names: Sequence[str] | None = None,
        message_attribute_names: Sequence[str] | None = None,
        receive_request_attempt_id: str | None = None,
    ) -> list[Message]:
        """ReceiveMessage: up to 10 messages, each with a fresh receipt handle, in flight until
        now + visibility timeout. Long-polls up to wait_time_seconds (default: the queue's
        ReceiveMessageWaitTimeSeconds), returning as soon as one message can be returned."""
        r = D.MAX_MESSAGES
        n = V.int_value(r.name, max_number_of_messages, r.low, r.high)
        vt = None if visibility_timeout is None else V.visibility_timeout(visibility_timeout)
        wait = None
        if wait_time_seconds is not None:
            r = D.WAIT_TIME
            wait = V.int_value(r.name, wait_time_seconds, r.low, r.high, r.unit)
        system = V.attribute_names(message_system_attribute_names, D.MESSAGE_SYSTEM_ATTRIBUTES, "message system attribute")
        wanted = _wanted_message_attributes(message_attribute_names)
        if receive_request_attempt_id is not None:
            receive_request_attempt_id = V.dedup_id("ReceiveRequestAttemptId", receive_request_attempt_id)
        return self._receive(n, vt, wait, system, wanted, receive_request_attempt_id)

    def _receive(self, n: int, vt: int | None, wait: int | None, system: set[str], wanted: Callable[[str], bool], attempt_id: str | None = None) -> list[Message]:
        """receive_message once its arguments are checked. BufferedQueue calls it with n up to
        D.BUFFER_PREFETCH.high: the claim takes any n, and one claim of 100 costs what ten
        receives of 10 do in one transaction instead of ten."""
        start = self.db.now()
        deadline = None
        while True:
            queue_id, rows, queue_wait, lease, cleared = self._claim(n, vt, attempt_id)
            if deadline is None:
                deadline = start + _ms(queue_wait if wait is None else wait)
            if rows or (not cleared and self.db.now() >= deadline):
                if lease is not None:
                    return self._claimed_messages(rows, queue_id, system, wanted, lease)
                return [self._message(row, queue_id, system, wanted) for row in rows]
            # A claim that only cleared poison or expired messages out of the way tries again
            # at once, even a short poll: what they hid may be receivable now, and its own
            # writes wake no waiting (data_version counts other connections' commits only).
            if not cleared:
                self.db._wait_for_change(queue_id, deadline)

    def _message(self, row, queue_id: int, system: set[str], wanted: Callable[[str], bool], issue_handle: bool = True) -> Message:
        # One unpack of the row (Q.RECEIVED_COLUMNS; the column orders are asserted at the end
        # of this module): sqlite3.Row finds a column by name with a case-insensitive scan.
        (
            row_id,
            message_id,
            body,
            attributes,
            sender_id,
            sent_at,
            visible_at,
            receive_count,
            first_received_at,
            token,
            group_id,
            dedup_id,
            sequence_number,
            dead_letter_source_arn,
        ) = row
        attrs = _decode_attributes(attributes)
        # By position, in the order of Message's fields (asserted at the end of this module):
        # a dataclass matches 15 keywords one by one, 1.1 us a message against 0.4.
        message = Message(
            message_id,
            body,
            None if token is None or not issue_handle else self.db.handles.issue(queue_id, row_id, message_id, token),
            receive_count,
            sent_at,
            first_received_at,
            {k: v for k, v in attrs.items() if wanted(k)} if attrs else {},
            {},
            group_id,
            dedup_id,
            None if sequence_number is None else f"{sequence_number:020d}",
            dead_letter_source_arn,
            sender_id,
            visible_at,
            self,
        )
        if system:
            message.attributes = _system_attributes(message, system)
        return message

    def _claimed_messages(self, rows: list, queue_id: int, system: set[str], wanted: Callable[[str], bool], lease: tuple) -> list[Message]:
        """_message for a standard claim's rows (Q.CLAIMED_COLUMNS), in one frame: the token and
        the lease end are the claim's own, and the rows have no FIFO fields but a fair queue's
        group id (_claim read any other in full). A call per message cost about 1,500 instructions more."""
        issue = self.db.handles.issue
        token, visible_at = lease
        out = []
        for row_id, message_id, body, attributes, sender_id, sent_at, receive_count, first_received_at, dead_letter_source_arn, group in rows:
            message = Message(
                message_id,
                body,
                issue(queue_id, row_id, message_id, token),
                receive_count,
                sent_at,
                first_received_at,
                {k: v for k, v in _decode_attributes(attributes).items() if wanted(k)} if attributes else {},
                {},
                group if group is None else group[1:],  # GROUP_MARK + a fair queue's group id
                None,
                None,
                dead_letter_source_arn,
                sender_id,
                visible_at,
                self,
            )
            if system:
                message.attributes = _system_attributes(message, system)
            out.append(message)
        return out

    def _claim(self, n: int, vt: int | None, attempt_id: str | None):
        """One receive attempt in one write transaction: prune, cap check, claim, dead-letter.
        Returns the queue id, the rows, the queue's ReceiveMessageWaitTimeSeconds, the lease:
        (token, lease end) when the rows are Q.CLAIMED_COLUMNS rows, else None, and how many
        messages it moved to the dead-letter queue or deleted as expired FIFO heads."""
        db = self.db
        with db.store.write() as tx:
            # Read under the writers' lock: the visibility timeout starts when the receive
            # returns the message, not before it waited for the lock.
            now = db.now()
            row = self._row(tx)
            queue_id, is_fifo = row["id"], bool(row["fifo"])
            if attempt_id is not None and is_fifo:
                repeated = self._repeat_attempt(tx, row, attempt_id, now, vt)
                if repeated is not None:
                    return queue_id, repeated, row["receive_wait_time"], None, 0
            # Standard queues prune on a connection's first receive and every PRUNE_EVERY-th
            # after (meanwhile the claim skips expired rows inside its index). FIFO claims
            # first delete the expired group heads, in flight or not (_claim_fifo).
            receives = tx.state["receives"] = tx.state.get("receives", 0) + 1
            if not is_fifo and receives % D.PRUNE_EVERY == 1:
                _prune(tx, row, now, D.PRUNE_WINDOW)
            n = self._under_cap(tx, row, n, now)
            if n == 0:
                return queue_id, [], row["receive_wait_time"], None, 0
            lease_end = now + _ms(row["visibility_timeout"] if vt is None else vt)
            cutoff = _cutoff(row, now)
            dlq = None
            if row["max_receive_count"] is not None:
                dlq = tx.queue(row["dead_letter_target"])
            claimed: list = []
            # Each round moves at least one poison message or ends the loop; cleared counts the
            # messages moved or deleted as expired, at most D.CLAIM_CLEANUP_BUDGET (beyond it,
            # _receive comes back in a new transaction, and other writers go between).
            rounds = cleared = 0
            while True:
                rounds += 1
                want = n - len(claimed)
                # A zero lease would leave this round's rows visible, and the next round (after
                # a dead-letter move) would claim them again: hold them 1 ms, release below.
                # bytearray: sqlite3 binds it as a BLOB directly, bytes through its adapter look-up.
                held_until, token = max(lease_end, now + 1), bytearray(os.urandom(16))
                if is_fifo:
                    params = dict(queue_id=queue_id, now=now, cutoff=cutoff, lease_end=held_until, token=token)
                    rows, removed = self._claim_fifo(tx, params, want, D.CLAIM_CLEANUP_BUDGET - cleared)
                    cleared += removed
                else:
                    # In Q.CLAIM_STANDARD_PARAMS order.
                    rows = tx.all_positional(Q.claim_standard, (held_until, now, now, token, queue_id, now, cutoff, want, 0))
                # Rows read by position from here on: a FIFO claim's are sqlite3.Rows of
                # Q.RECEIVED_COLUMNS, a standard one's plain tuples of Q.CLAIMED_COLUMNS; both
                # start with the id.
                count_at = _RECEIVED_COUNT_AT if is_fifo else _CLAIMED_COUNT_AT
                poison = [] if dlq is None else [r for r in rows if r[count_at] > row["max_receive_count"]]
                if not poison:
                    claimed.extend(rows)
                    break
                for r in poison:
                    self._dead_letter(tx, r[0], row, dlq, now)
                moved = {r[0] for r in poison}
                claimed.extend(r for r in rows if r[0] not in moved)
                cleared += len(moved)
                if len(claimed) >= n or cleared >= D.CLAIM_CLEANUP_BUDGET:
                    break
            # A FIFO claim returns whole rows (Q.RECEIVED_COLUMNS); a standard one leaves out
            # what the claim itself knows (Q.CLAIMED_COLUMNS): its rows can be used as they are
            # when one round claimed them all (one token) and none has a deduplication id or
            # sequence number (an older sqsqlite's import).
            usable = is_fifo or (rounds == 1 and _plain_or_grouped(claimed))
            if claimed and lease_end <= now:
                for r in claimed:
                    tx.run(Q.change_visibility, id=r[0], visible_at=lease_end)
                usable = False  # released: read them back as they are now
            if claimed and not usable:
                claimed = [tx.one(Q.received_by_id, id=r[0]) for r in claimed]
            lease = (token, held_until) if usable and not is_fifo else None
            held = tx.state.get(("inflight", queue_id))
            if held is not None:
                held[1] += n - len(claimed)  # give back what this receive reserved and didn't take
            # Only an attempt that returned messages is remembered: an empty one has nothing to
            # repeat, and remembering it would make the next try (or the next round of this
            # long poll) return nothing for 5 minutes.
            if attempt_id is not None and is_fifo and claimed:
                result = json.dumps([[r["id"], r["receipt_token"].hex()] for r in claimed])
                tx.run(Q.put_attempt, queue_id=queue_id, attempt_id=attempt_id, now=now, result=result)
                tx.run(Q.prune_attempts, queue_id=queue_id, window_start=now - _ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
        if dlq is not None:
            db._notify()
        return queue_id, claimed, row["receive_wait_time"], lease, cleared

    def _under_cap(self, tx: Tx, row, n: int, now: int) -> int:
        """How many messages this receive may take without passing the in-flight cap.

        ``inflight_bound`` is never below the true number in flight: a connection reserves a
        block of it (one write per INFLIGHT_BLOCK messages, not per receive) before claiming
        from the block, and nothing but an exact recount lowers it. So while reserving stays
        under the cap nothing is counted. Near the cap, one exact count (an index range over the
        messages in flight) resets the bound and bumps ``inflight_epoch``, which voids every
        connection's unused block, since the recount didn't include them."""
        cap = D.MAX_IN_FLIGHT_FIFO if row["fifo"] else D.MAX_IN_FLIGHT_STANDARD
        key = ("inflight", row["id"])
        held = tx.state.get(key)
        if held is not None and held[0] == row["inflight_epoch"] and held[1] >= n:
            held[1] -= n
            return n
        block = max(n, D.INFLIGHT_BLOCK)
        if row["inflight_bound"] + block <= cap:
            tx.run(Q.add_inflight, id=row["id"], n=block)
            tx.forget_queues()
            tx.state[key] = [row["inflight_epoch"], block - n]
            return n
        exact = tx.scalar(Q.count_in_flight, queue_id=row["id"], now=now, cutoff=_cutoff(row, now))
        take = max(0, min(n, cap - exact))
        tx.run(Q.set_inflight, id=row["id"], n=exact + take)
        tx.forget_queues()
        tx.state[key] = [row["inflight_epoch"] + 1, 0]
        if take == 0:
            if row["fifo"]:
                return 0  # SQS returns no messages and no error for FIFO queues
            raise OverLimit(
                f"The queue {self.name!r} has {exact} messages in flight, the most a standard queue allows "
                f"({cap}); delete or release messages before receiving more."
            )
        return take

    def _claim_fifo(self, tx: Tx, params: dict, want: int, budget: int) -> tuple[list, int]:
        """Visible group heads, each followed by its group's visible run, in send order; and
        how many expired heads it deleted first (at most ``budget``)."""
        # An expired head is gone, visible or in flight, so its group moves on at once: there
        # is no sweeper to do it. Each deletion makes the group's next message its head, which
        # may be expired too: the loop goes on until none is, or the budget is spent (then the
        # heads left are passed over, and the receive comes back for them).
        removed = 0
        while removed < budget:
            gone = tx.all(Q.delete_expired_heads, queue_id=params["queue_id"], cutoff=params["cutoff"], n=budget - removed)
            if not gone:
                break
            _heads_left(tx, params["queue_id"], gone)
            removed += len(gone)
        ids: list[int] = []
        for head in tx.all(Q.fifo_heads, n=want, **params):
            if len(ids) >= want:
                break
            for r in tx.all(Q.fifo_group_run, queue_id=params["queue_id"], group_id=head["group_id"], cutoff=params["cutoff"], n=want - len(ids)):
                if r["visible_at"] > params["now"]:
                    break  # a later message never jumps one that is in flight or delayed
                ids.append(r["id"])
        if not ids:
            return [], removed
        rows = tx.all(Q.claim_ids, ids=json.dumps(ids), **params)
        order = {i: k for k, i in enumerate(ids)}
        return sorted(rows, key=lambda r: order[r["id"]]), removed

    def _dead_letter(self, tx: Tx, row_id: int, row, dlq, now: int) -> None:
        """Undo this receive's claim on a message past maxReceiveCount and move it to the
        dead-letter queue, visible there at once, its receive count and sent_at kept."""
        sequence = tx.scalar(Q.next_sequence, id=dlq["id"], n=1) if dlq["fifo"] else None
        group_id = tx.scalar(Q.unclaim_to_dead_letter, id=row_id, dlq_id=dlq["id"], now=now, source_arn=self.arn, sequence_number=sequence)
        if group_id is not None and row["fifo"]:  # a FIFO queue's dead-letter queue is FIFO
            tx.run(Q.fix_group_head, queue_id=row["id"], group_id=group_id)
            tx.run(Q.fix_group_head, queue_id=dlq["id"], group_id=group_id)

    def _repeat_attempt(self, tx: Tx, row, attempt_id: str, now: int, vt: int | None):
        """The messages an earlier receive with this attempt id returned, or None to receive afresh."""
        stored = tx.scalar(Q.find_attempt, queue_id=row["id"], attempt_id=attempt_id, window_start=now - _ms(D.RECEIVE_ATTEMPT_WINDOW_SECONDS))
        if stored is None:
            return None
        out = []
        lease = _ms(row["visibility_timeout"] if vt is None else vt)
        for row_id, token in json.loads(stored):
            r = tx.one(Q.message_by_id, id=row_id)
            # The same messages with the same handles, while those handles still hold them.
            if r is not None and r["queue_id"] == row["id"] and r["receipt_token"] == bytes.fromhex(token) and r["visible_at"] > now:
                # SQS: a retry within the window resets the visibility timeout (never past the
                # 12 hours one receive may hold a message).
                end = min(now + lease, r["received_at"] + _ms(D.MAX_VISIBILITY_TIMEOUT))
                tx.run(Q.change_visibility, id=r["id"], visible_at=end)
                out.append(tx.one(Q.received_by_id, id=r["id"]))
        # Nothing still held (deleted, released or timed out): the attempt is over; receive anew.
        return out or None

    # ------------------------------------------------------------ deleting and visibility

    def _locate(self, tx: Tx, row, handle: str, now: int):
        """The message a handle holds, None if it is gone (deleted, purged or expired, wherever
        it is now), or ReceiptHandleIsInvalid."""
        h = self.db.handles.check(handle, row["id"])
        msg = tx.one(Q.message_by_id, id=h.row_id)
        if msg is None or _uuid_bytes(msg["message_id"]) != h.message_uuid:
            return None
        home = row if msg["queue_id"] == row["id"] else tx.one(Q.queue_by_id, id=msg["queue_id"])
        if home is None or msg["sent_at"] <= _cutoff(home, now):
            return None  # expired is gone for good, even before a clean-up removes the row
        if msg["queue_id"] != row["id"]:
            raise ReceiptHandleIsInvalid(
                "The receipt handle is no longer valid: its message was moved to another queue (to the dead-letter queue, or out of it by a move task)."
            )
        if msg["receipt_token"] != h.token:
            raise ReceiptHandleIsInvalid(
                "The receipt handle is no longer valid: the message was received again, and only the newest receipt handle can act on it."
            )
        return msg

    def delete_message(self, receipt_handle: str) -> None:
        with self.db.store.write() as tx:
            self._delete(tx, self._row(tx), receipt_handle, self.db.now())

    def _delete(self, tx: Tx, row, handle: str, now: int) -> None:
        # The common case in one statement: the handle is the message's newest and still
        # valid. Anything else deletes nothing here and is sorted out by _locate below.
        h = self.db.handles.check(handle, row["id"])
        if not row["fifo"]:
            # No group head to mend: the plain positional DELETE, without RETURNING (which makes
            # SQLite collect its rows in a temporary table before the first one comes back).
            if tx.run_positional(Q.delete_standard_by_handle, _handle_delete_key(h)):
                return
        else:
            gone = tx.one(
                Q.delete_by_handle,
                id=h.row_id,
                queue_id=row["id"],
                message_id=h.message_id,
                token=h.token,
                fifo=row["fifo"],
                now=now,
            )
            if gone is not None:
                _heads_left(tx, row["id"], [gone])
                return
        msg = self._locate(tx, row, handle, now)
        if msg is None:
            return  # already deleted with its last handle: deleting again is fine
        if row["fifo"] and msg["visible_at"] <= now:
            raise InvalidParameterValue(
                f"The receipt handle has expired: on FIFO queue {self.name!r} a handle is valid only while its message is in flight."
            )
        gone = tx.one(Q.delete_message, id=msg["id"])
        _heads_left(tx, row["id"], [gone])

    def _delete_handles(self, handles: list[str]) -> list[tuple[str, SQSError]]:
        """Delete any number of messages by handle in one write transaction, for BufferedQueue;
        returns the handles refused, with why. Each handle acts as delete_message's would."""
        failures = []
        with self.db.store.write() as tx:
            row = self._row(tx)
            if not row["fifo"] and _delete_issued(tx, row["id"], self.db.handles.known(handles)) == len(handles):
                return failures
            now = self.db.now()
            for handle in handles:
                try:
                    self._delete(tx, row, handle, now)
                except SQSError as exc:
                    failures.append((handle, exc))
        return failures

    def change_message_visibility(self, receipt_handle: str, visibility_timeout: int) -> None:
        vt = V.visibility_timeout(visibility_timeout)
        with self.db.store.write() as tx:
            self._change(tx, self._row(tx), receipt_handle, vt, self.db.now())
        if vt == 0:
            self.db._notify()

    def _change(self, tx: Tx, row, handle: str, vt: int, now: int) -> None:
        msg = self._locate(tx, row, handle, now)
        if msg is None or msg["sent_at"] <= _cutoff(row, now):
            raise InvalidParameterValue(
                "Value for parameter ReceiptHandle is invalid: the message does not exist any more (deleted, purged or expired)."
            )
        if msg["visible_at"] <= now:
            raise MessageNotInflight(
                "The message is not in flight: its visibility timeout has ended, so there is nothing to change; receive it again."
            )
        new_end = now + _ms(vt)
        limit = msg["received_at"] + _ms(D.MAX_VISIBILITY_TIMEOUT)
        if new_end > limit:
            left = max(0, (limit - now) // 1000)
            raise InvalidParameterValue(
                f"Value {vt} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message "
                f"is beyond the limit [{D.MAX_VISIBILITY_TIMEOUT} seconds]; at most {left} seconds are left for this receive."
            )
        tx.run(Q.change_visibility, id=msg["id"], visible_at=new_end)

    def delete_message_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """DeleteMessageBatch: entries of {Id, ReceiptHandle}; each succeeds or fails alone."""
        entries, entry_ids, _ = V.batch_entry_ids(entries)
        check = self.db.handles.check
        successful, failed = [], []
        tried = False  # the fast path below ran, and fell short
        with self.db.store.write() as tx:
            row = self._row(tx)
            if not row["fifo"]:
                # The common case first: handles this process issued for this queue (_delete_issued).
                # A shortfall (a handle superseded or repeated) leaves each entry to the exact
                # path below, where a message this deleted reads as already deleted.
                try:
                    remembered = self.db.handles.known(map(_get_receipt_handle, entries))
                except KeyError:  # an entry without a ReceiptHandle: the exact path names it
                    remembered = []
                deleted = _delete_issued(tx, row["id"], remembered)
                if deleted == len(entries):
                    return BatchResult([{"Id": i} for i in entry_ids], failed)
                tried = deleted is not None
            now = self.db.now()
            handles: dict[str, _Handle] = {}
            queue_id = row["id"]
            for e in entries:
                try:
                    handles[e["Id"]] = check(e.get("ReceiptHandle"), queue_id)
                except SQSError:
                    pass  # _delete below reports it, entry by entry
            deleted: set[int] = set()
            if handles and not row["fifo"] and not tried:
                # Every handle its message's newest, as one executemany whose total rowcount
                # says whether all of them went; if not, the loop below decides each entry
                # exactly (a message this deleted reads as already deleted there). Skipped
                # after the fast path above fell short: it would delete nothing more.
                keys = list(map(_handle_delete_key, handles.values()))
                if tx.run_many_positional(Q.delete_standard_by_handle, keys) == len(keys):
                    deleted.update(k[0] for k in keys)
            elif handles and row["fifo"]:
                # FIFO: the same in one statement that also returns what each deletion did to
                # its group's head.
                spec = json.dumps([[h.row_id, h.token.hex().upper(), h.message_id] for h in handles.values()])
                gone = tx.all(Q.delete_by_handles, handles=spec, queue_id=row["id"], fifo=row["fifo"], now=now)
                deleted.update(r["id"] for r in gone)
                _heads_left(tx, row["id"], gone)
            if len(deleted) == len(entries):  # each entry deleted its own message above
                return BatchResult([{"Id": e["Id"]} for e in entries], failed)
            for e in entries:
                h = handles.get(e["Id"])
                try:
                    if h is None or h.row_id not in deleted:
                        self._delete(tx, row, e.get("ReceiptHandle"), now)  # decides the rest exactly
                    successful.append({"Id": e["Id"]})
                except SQSError as exc:
                    failed.append(BatchResultErrorEntry(e["Id"], exc.code, exc.message, exc.sender_fault))
        return BatchResult(successful, failed)

    def change_message_visibility_batch(self, entries: Sequence[Mapping[str, Any]]) -> BatchResult:
        """ChangeMessageVisibilityBatch: entries of {Id, ReceiptHandle, VisibilityTimeout}."""
        entries = V.batch_entries(entries)

        def one(tx, row, e, now):
            self._change(tx, row, e.get("ReceiptHandle"), V.visibility_timeout(e.get("VisibilityTimeout")), now)

        result = self._batch(entries, one)
        self.db._notify()
        return result

    def _batch(self, entries, action) -> BatchResult:
        successful, failed = [], []
        with self.db.store.write() as tx:
            row = self._row(tx)
            now = self.db.now()
            for e in entries:
                try:
                    action(tx, row, e, now)  # raises before it writes, so a failure changes nothing
                    successful.append({"Id": e["Id"]})
                except SQSError as exc:
                    failed.append(BatchResultErrorEntry(e["Id"], exc.code, exc.message, exc.sender_fault))
        return BatchResult(successful, failed)

    # ------------------------------------------------------------ looking without touching

    def peek(self, state: str = "all", limit: int = 10) -> list[Message]:
        """Messages in a state (visible, in-flight, delayed, all) without receiving them:
        no receipt handles, no receive counts, nothing changes."""
        if state not in ("visible", "in-flight", "delayed", "all"):
            raise InvalidParameterValue(f"Invalid state {state!r}: use visible, in-flight, delayed or all.")
        limit = V.int_value("limit", limit, 1, 1_000_000)
        now = self.db.now()
        with self.db.store.read() as tx:
            row = self._row(tx)
            rows = tx.all(Q.peek_messages, queue_id=row["id"], now=now, cutoff=_cutoff(row, now), state=state, limit=limit)
        out = []
        system = set(D.MESSAGE_SYSTEM_ATTRIBUTES)
        for r in rows:
            # No handle: peeking receives nothing (and fills no memory of issued handles).
            m = self._message(r, row["id"], system, _every, issue_handle=False)
            m.queue = None
            out.append(m)
        return out

    def export_messages(self, page: int = 1000) -> Iterator[dict]:
        """Every live message with its attributes and timestamps, as JSON-ready dicts."""
        after = 0
        while True:
            now = self.db.now()
            with self.db.store.read() as tx:
                row = self._row(tx)
                rows = tx.all(Q.messages_page, queue_id=row["id"], cutoff=_cutoff(row, now), after=after, upto=2**62, limit=page)
            fifo = row["fifo"]
            for r in rows:
                attrs = _decode_attributes(r["attributes"])  # parsed once, for the output and its digest
                yield {
                    "MessageId": r["message_id"],
                    "Body": r["body"],
                    "MD5OfBody": V.md5_hex(r["body"].encode("utf-8")),
                    "MessageAttributes": {k: v.to_json() for k, v in attrs.items()},
                    "MD5OfMessageAttributes": V.md5_of_attributes(attrs),
                    "SenderId": r["sender_id"],
                    "SentTimestamp": r["sent_at"],
                    "VisibleAt": r["visible_at"],
                    "ApproximateReceiveCount": r["receive_count"],
                    "ApproximateFirstReceiveTimestamp": r["first_received_at"],
                    "MessageGroupId": r["group_id"],
                    # A standard queue's rows can hold these from an older sqsqlite's import; its
                    # messages never show them, and an import into a standard queue refuses them.
                    "MessageDeduplicationId": r["dedup_id"] if fifo else None,
                    "SequenceNumber": r["sequence_number"] if fifo else None,
                    "DeadLetterQueueSourceArn": r["dead_letter_source_arn"],
                }
            if len(rows) < page:
                return
            after = rows[-1]["id"]

    def import_messages(self, records: Iterable[Mapping[str, Any]]) -> int:
        """Insert exported messages as they were (ids, timestamps, receive counts); a message
        that was in flight comes back visible, since its receipt handle did not travel.

        Every record is checked (validation.exported_message) before the first write, and the
        messages go in as one transaction: a record it refuses, named by its place ("record 3
        has ..."), or a failed write, leaves the queue as it was. Returns the count imported."""
        fifo = self.name.endswith(".fifo")  # create_queue allows the suffix on FIFO queues only
        checked = []
        for number, rec in enumerate(records, 1):
            try:
                checked.append(V.exported_message(rec, self.name, fifo))
            except InvalidExportRecord as err:
                err.message = f"record {number} {err.message}"
                raise
            except SQSError as err:
                err.message = f"record {number}: {err.message}"
                raise
        with self.db.store.write() as tx:
            row = self._row(tx)
            now = self.db.now()
            for rec in checked:
                attrs = rec["MessageAttributes"]
                p = _Prepared(rec["Body"], V.message_body(rec["Body"]), attrs, None, rec.get("MessageGroupId"), rec.get("MessageDeduplicationId"))
                received = rec.get("ApproximateReceiveCount") or 0
                visible_at = rec.get("VisibleAt") or now
                if received:
                    visible_at = min(visible_at, now)  # was in flight: its handle did not travel
                values = _message_row(row["id"], rec["MessageId"], p, rec.get("SenderId") or self.db.sender_id, rec["SentTimestamp"], visible_at)
                values.update(
                    receive_count=received,
                    first_received_at=rec.get("ApproximateFirstReceiveTimestamp"),
                    dead_letter_source_arn=rec.get("DeadLetterQueueSourceArn"),
                )
                if row["fifo"]:
                    values.update(
                        sequence_number=tx.scalar(Q.next_sequence, id=row["id"], n=1),
                        is_head=int(tx.one(Q.group_has_messages, queue_id=row["id"], group_id=p.group_id) is None),
                    )
                tx.run(Q.insert_message, **values)
        if checked:
            self.db._notify()
        return len(checked)


# Queue._message builds a Message by position, in this order.
assert tuple(f.name for f in fields(Message) if f.init) == (
    "message_id",
    "body",
    "receipt_handle",
    "receive_count",
    "sent_timestamp",
    "first_receive_timestamp",
    "message_attributes",
    "attributes",
    "message_group_id",
    "message_deduplication_id",
    "sequence_number",
    "dead_letter_queue_source_arn",
    "sender_id",
    "visible_at",
    "queue",
), "Message's fields changed: update Queue._message and Queue._claimed_messages"

# Queue._message unpacks received rows by position, in this order.
assert tuple(c.name for c in Q.RECEIVED_COLUMNS) == (
    "id",
    "message_id",
    "body",
    "attributes",
    "sender_id",
    "sent_at",
    "visible_at",
    "receive_count",
    "first_received_at",
    "receipt_token",
    "group_id",
    "dedup_id",
    "sequence_number",
    "dead_letter_source_arn",
), "Q.RECEIVED_COLUMNS changed: update Queue._message"
# And a standard claim's rows in this order.
assert tuple(c.name for c in Q.CLAIMED_COLUMNS) == (
    "id",
    "message_id",
    "body",
    "attributes",
    "sender_id",
    "sent_at",
    "receive_count",
    "first_received_at",
    "dead_letter_source_arn",
    "fifo_fields",
), "Q.CLAIMED_COLUMNS changed: update Queue._claimed_messages"
# Where a claim's rows hold the receive count (Queue._claim reads them by position), and the
# id first in both.
_RECEIVED_COUNT_AT = [c.name for c in Q.RECEIVED_COLUMNS].index("receive_count")
_CLAIMED_COUNT_AT = [c.name for c in Q.CLAIMED_COLUMNS].index("receive_count")
assert Q.RECEIVED_COLUMNS[0].name == Q.CLAIMED_COLUMNS[0].name == "id"
# _handle_queue, _handle_row_id, _handle_token and _handle_delete_key pick a handle's fields by position.
assert _Handle._fields == ("queue_id", "row_id", "message_uuid", "token", "message_id")
assert Q.DELETE_STANDARD_COLUMNS == ("id", "queue_id", "message_id", "token")


def _attributes_json(attributes: Mapping[str, V.MessageAttribute]) -> str | None:
    """The messages.attributes column: JSON, or None for a message without attributes."""
    return json.dumps({k: v.to_json() for k, v in attributes.items()}) if attributes else None


def _plain_entries(entries: list, entry_ids: list) -> _Plain | None:
    """The batch's entries when every one is just an Id and a valid MessageBody
    (Queue._insert_plain's kind), else None: the general path then checks each entry and reports
    each one's error. The entries are plain dicts, and they and their Ids passed
    V.batch_entry_ids (a dict subclass, a defaultdict say, could answer a missing MessageBody)."""
    # map and itemgetter, not comprehensions: no Python frame per entry. Each entry has an Id
    # and, if plain, a MessageBody: lengths adding up to two per entry mean just those two.
    if sum(map(len, entries)) != 2 * len(entries):
        return None
    try:
        bodies = list(map(_get_body, entries))
    except KeyError:
        return None
    total = V.message_bodies(bodies)
    if total is None:
        return None
    return _new_tuple(_Plain, (entry_ids, bodies, total))


_get_body = operator.itemgetter("MessageBody")
_get_receipt_handle = operator.itemgetter("ReceiptHandle")
_fifo_fields = operator.itemgetter(Q.FIFO_FIELDS_AT)  # a standard claim's row: see Q.CLAIMED_COLUMNS


def _plain_or_grouped(rows: list) -> bool:
    """Whether a standard claim's rows are whole as they are: none has FIFO fields but a
    group id (Q.CLAIMED_COLUMNS)."""
    fields = list(map(_fifo_fields, rows))
    if fields.count(None) == len(fields):  # the common case, counted in C
        return True
    return all(f is None or (type(f) is str and f[:1] == Q.GROUP_MARK) for f in fields)


class _Plain(NamedTuple):
    """Messages of a body alone: their batch entry Ids (None for a single send), bodies, and
    the bodies' total size in UTF-8 bytes."""

    entry_ids: list
    bodies: list
    total: int


def _prepared_plain(plain: _Plain) -> list[_Prepared]:
    """_plain_entries' messages as _insert takes them (they passed every check _prepare makes)."""
    return [_Prepared(body, body.encode(), {}, None, None, None, entry_id) for entry_id, body in zip(plain.entry_ids, plain.bodies)]


# A handle's queue; and its fields as Q.delete_standard_by_handle's parameters (in
# Q.DELETE_STANDARD_COLUMNS order: row id, queue id, message id, token) once its queue is known
# to be the one deleting (_Handles.check, or the batch fast path's set of queues).
_handle_queue = operator.itemgetter(0)
_handle_row_id = operator.itemgetter(1)
_handle_token = operator.itemgetter(3)
_handle_delete_key = operator.itemgetter(1, 0, 4, 3)


def _delete_issued(tx: Tx, queue_id: int, remembered: list) -> int | None:
    """Rows deleted for handles this process issued and remembers (_Handles.known), or None
    when any is unknown or another queue's. Each receive's run of handles shares its token
    object, and is deleted by one statement of up to ten row ids (Q.DELETE_CLAIMED_ROWS): the
    token is fresh per claim and only claims set it, so token and row ids name exactly those
    messages. A handle superseded, repeated or already deleted deletes nothing, so a count
    short of len(remembered) sends the caller to its exact path."""
    if not remembered or not all(remembered) or set(map(_handle_queue, remembered)) != {queue_id}:
        return None
    n = len(remembered)
    tokens = list(map(_handle_token, remembered))
    if n <= D.MAX_BATCH_ENTRIES and tokens.count(tokens[0]) == n:  # one receive's: count() by identity
        return tx.run_positional(Q.DELETE_CLAIMED_ROWS[n], [tokens[0], queue_id, *map(_handle_row_id, remembered)])
    deleted = start = 0
    while start < n:
        end = start + 1
        while end < n and end - start < D.MAX_BATCH_ENTRIES and tokens[end] is tokens[start]:
            end += 1
        deleted += tx.run_positional(Q.DELETE_CLAIMED_ROWS[end - start], [tokens[start], queue_id, *map(_handle_row_id, remembered[start:end])])
        start = end
    return deleted


def _no_queue(name: str) -> QueueDoesNotExist:
    return QueueDoesNotExist(f"The queue {name!r} does not exist.")


def _message_row(queue_id, message_id, p: _Prepared, sender_id, sent_at, visible_at) -> dict:
    return {
        "queue_id": queue_id,
        "message_id": message_id,
        "body": p.body,
        "attributes": _attributes_json(p.attributes),
        "sender_id": sender_id,
        "sent_at": sent_at,
        "visible_at": visible_at,
        "receive_count": 0,
        "first_received_at": None,
        "group_id": p.group_id,
        "dedup_id": p.dedup_id,
        "sequence_number": None,
        "dead_letter_source_arn": None,
        "is_head": 0,
    }


def connect(path: str | os.PathLike | None = None, **options: Any) -> Database:
    """Open (creating and migrating if needed) a sqsqlite database file.

    ``path`` defaults to ``$SQSQLITE_DB`` or ``./sqsqlite.db``. Options: ``clock``, ``region``,
    ``account_id``, ``endpoint``, ``sender_id``, ``synchronous`` ("NORMAL" or "FULL")."""
    return Database(path, **options)
