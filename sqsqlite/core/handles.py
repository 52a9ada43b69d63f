"""Receipt handles and message ids.

A receipt handle is the message's row, its message id, the claim's random token and a MAC under
the database's secret, written in hex. Checking one proves the MAC (or finds the handle among
those this process issued); whether the handle is still the message's newest is the claim
token's business, decided in SQL.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import itertools
import operator
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from itertools import repeat
from typing import Any, NamedTuple

from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import MissingParameter, ReceiptHandleIsInvalid

HANDLE_LAYOUT = struct.Struct(">BQQ16s16s")  # version, queue id, row id, message uuid, receive token
_MAC_LEN = 16


# base64's urlsafe helpers, done with binascii and one translate each: they run for every
# handle issued and checked, and the module functions' argument handling costs more than the work.
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def b64(data: bytes) -> str:
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode()


class Handle(NamedTuple):
    queue_id: int
    row_id: int
    # None in a received Message's claim, whose handle text is not made yet (Handles.text).
    message_uuid: bytes | None
    # bytes, or the claim's bytearray: sqlite3 binds a bytearray as a BLOB directly, bytes
    # through its adapter look-up; both compare equal to the stored BLOB.
    token: bytes | bytearray
    message_id: str  # the message id as text, for the delete's statement (a miss there is decided by message_uuid)


def _keyed_blake2b(secret: bytes) -> Any:
    """A BLAKE2b state keyed with secret, or None where this Python refuses BLAKE2b as a MAC:
    builds patched for FIPS mode do (BLAKE2 is not FIPS-approved), or leave it out."""
    try:
        return hashlib.blake2b(key=secret, digest_size=_MAC_LEN)
    except (ValueError, TypeError, AttributeError):
        try:
            hashlib.blake2b(b"", digest_size=_MAC_LEN)
        except (ValueError, TypeError, AttributeError):
            return None  # BLAKE2b refused whatever the key
        raise  # BLAKE2b works: the key itself is wrong, which must not pass for FIPS mode


def _hmac_sha256(secret: bytes) -> Callable[[bytes], bytes]:
    """Version 3 handles' MAC, HMAC-SHA256 cut to _MAC_LEN bytes: FIPS-approved, for a process
    without BLAKE2; any process can check it."""

    def mac(body: bytes) -> bytes:
        return hmac.digest(secret, body, "sha256")[:_MAC_LEN]

    return mac


def _keyed_mac(keyed: Any) -> Callable[[bytes], bytes]:  # keyed: a keyed hashlib.blake2b
    """The handles' MAC from a keyed BLAKE2b state (a MAC by design: no HMAC construction, whose
    per-call OpenSSL set-up dominated receive and delete). Each call copies the state, which has
    already absorbed the key, a whole compressed block: 0.84 -> 0.63 us a handle."""

    def mac(body: bytes) -> bytes:
        state = keyed.copy()
        state.update(body)
        return state.digest()

    return mac


def uuid_bytes(message_id: str) -> bytes:
    """The 16 bytes of a canonical uuid string (what the engine stores), without building a UUID.

    A stored id that is not one (imports accepted any text before sqsqlite refused it) gets 16
    bytes of its digest instead, so its receipt handles still work: a handle's bytes only have to
    tell the message it was issued for from a later one in the same row."""
    b = _uuid_of_text(message_id)
    if b:
        return b
    data = message_id.encode("utf-8", "surrogatepass")
    try:  # a digest, not a MAC: a non-security use, which FIPS mode allows where it has BLAKE2
        return hashlib.blake2b(data, digest_size=16, person=b"sqsqlite-msgid", usedforsecurity=False).digest()
    except (ValueError, TypeError, AttributeError):
        return _sha256_id(data)  # a Python without BLAKE2 at all


def _sha256_id(data: bytes) -> bytes:
    return hashlib.sha256(b"sqsqlite-msgid\0" + data).digest()[:16]


def is_message_uuid(message_id: str, b: bytes) -> bool:
    """Whether b, a handle's 16 bytes, are message_id's. An id that is not a uuid has them from
    BLAKE2b, or from SHA-256 in a Python without BLAKE2 at all; a handle from a process of
    either kind is its message's, whichever this process derives. (A process without BLAKE2
    cannot derive the BLAKE2b bytes: it takes such a handle for a message already gone.)"""
    if uuid_bytes(message_id) == b:
        return True
    return not _uuid_of_text(message_id) and _sha256_id(message_id.encode("utf-8", "surrogatepass")) == b


def _uuid_of_text(message_id: str) -> bytes:
    """The 16 bytes of a canonical uuid string, b"" for any other text."""
    if len(message_id) != 36:
        return b""
    try:
        b = bytes.fromhex(message_id.replace("-", ""))
    except ValueError:
        return b""
    return b if len(b) == 16 else b""


def uuid_str(b: bytes) -> str:
    """The canonical text of 16 uuid bytes, as str(uuid.UUID(bytes=b)) gives, without the object."""
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


# Message ids: random bytes, one for each character of an id and of the "|" between ids,
# masked by position (a hex digit keeps its byte's low 7 bits, a fixed character none, the
# variant digit two), then translated by one table: below 0x80 a byte's low four bits name its
# hex digit; 0x80, 0x90 and 0xA0 are "-", the version digit "4" and "|"; from 0xB0 the
# variant digit 8, 9, a or b. Three integer operations and one translation for a whole batch.
_ID_DIGITS = bytes(
    b"0123456789abcdef"[b & 0x0F] if b < 0x80 else b"-4|"[(b >> 4) & 3] if b < 0xB0 else b"89ab"[b & 0x03] for b in range(256)
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


_ID_MASKS = [(0, 0)] + [_id_masks(n) for n in range(1, max(D.MAX_BATCH_ENTRIES, D.MESSAGE_ID_POOL) + 1)]


def new_message_ids(n: int) -> list[str]:
    """n random (version 4) uuid strings, as str(uuid.uuid4()) gives. 2,400 instructions an id
    in batches of 10 and 7,200 for one (callgrind), where five groups unpacked and joined per id
    took 4,000 and an f-string of five slices 9,000."""
    keep, force = _ID_MASKS[n]
    size = 37 * n - 1
    text = (int.from_bytes(os.urandom(size), "big") & keep | force).to_bytes(size, "big").translate(_ID_DIGITS).decode()
    return text.split("|") if n > 1 else [text]


# Message ids made ahead for single sends, taken one at a time (new_message_id). list.pop and
# list.extend each hold the GIL: two threads never take the same id. A forked child empties it
# (_ids_after_fork), or it would send the ids its parent sends.
_ID_POOL: list[str] = []


def new_message_id() -> str:
    """One message id, as new_message_ids(1) makes it, from ids made D.MESSAGE_ID_POOL at a
    time: one system call for random bytes is about half the cost of an id made alone."""
    while True:
        try:
            return _ID_POOL.pop()
        except IndexError:
            _ID_POOL.extend(new_message_ids(D.MESSAGE_ID_POOL))


def _request_ids() -> tuple[str, Iterator[int]]:
    """A random version-4 uuid's first 24 characters, and a count from a random 48-bit start
    for its last 12 digits."""
    return new_message_ids(1)[0][:24], itertools.count(int.from_bytes(os.urandom(6), "big"))


_REQUEST_PREFIX, _REQUEST_COUNT = _request_ids()


def _ids_after_fork() -> None:
    # A forked child (a program's own os.fork; serve's workers are new processes) must not
    # hand out the ids its parent does: neither request ids nor the message ids made ahead.
    global _REQUEST_PREFIX, _REQUEST_COUNT
    _ID_POOL.clear()
    _REQUEST_PREFIX, _REQUEST_COUNT = _request_ids()


if hasattr(os, "register_at_fork"):  # POSIX only
    os.register_at_fork(after_in_child=_ids_after_fork)


def new_request_id() -> str:
    """A request id as SQS's, a version-4 uuid: the process's random first 24 characters, then
    a count. Request ids name requests and guard nothing, so 74 random bits a process keep them
    apart; a whole uuid drawn for each cost 1,000 instructions more a call. (next() on a count
    is atomic: threads never share an id.)"""
    return f"{_REQUEST_PREFIX}{next(_REQUEST_COUNT) & 0xFFFFFFFFFFFF:012x}"


# A handle's text (Handles.text): its fields and MAC in hex (version 2, or 3 where BLAKE2b is
# refused and the MAC is HMAC-SHA256). Version 1 wrote
# them in urlsafe base64, a third shorter but three times the cost to write (4,900 instructions
# a handle against 1,800); version 1 handles (87 characters, never 130) are still accepted.
_HEX_HANDLE_LEN = 2 * (HANDLE_LAYOUT.size + _MAC_LEN)


def invalid_handle_text(handle: Any) -> str:
    return f'The input receipt handle "{handle}" is not a valid receipt handle.'


def decode_handle(macs: dict[int, tuple[Callable[[bytes], bytes] | None, ...]], handle: Any) -> Handle:
    """A receipt handle this database issued (for any queue), or ReceiptHandleIsInvalid. macs:
    the MACs that may have signed each handle version (Handles.macs), None for one this process
    cannot compute."""
    if handle is None or handle == "":
        raise MissingParameter("The request must contain the parameter ReceiptHandle.")
    if not isinstance(handle, str) or len(handle) > 200:
        raise ReceiptHandleIsInvalid(invalid_handle_text(handle), f"The receipt handle {V.shorten(handle, 40)} is not valid.")
    # Only the exact text we issued: fromhex would also take capitals and spaces, and lenient
    # base64 other spellings (spare low bits in the last character, characters outside the
    # alphabet); so the bytes are encoded again and compared.
    if len(handle) == _HEX_HANDLE_LEN:
        try:
            raw = bytes.fromhex(handle)
        except ValueError:
            raw = b""
        version = 3 if raw[:1] == b"\x03" else 2  # hex held version 2 (BLAKE2b) and 3 (HMAC-SHA256)
        exact = raw.hex() == handle
    else:
        version = 1
        try:
            raw = binascii.a2b_base64(handle.encode("ascii").translate(_FROM_URLSAFE) + b"=" * (-len(handle) % 4))
        except (binascii.Error, ValueError):  # UnicodeEncodeError is a ValueError
            raw = b""
        exact = b64(raw) == handle
    if len(raw) != HANDLE_LAYOUT.size + _MAC_LEN or raw[0] != version or not exact:
        raise ReceiptHandleIsInvalid(
            invalid_handle_text(handle), f"The receipt handle {V.shorten(handle, 40)} is not valid: it is not one sqsqlite issued."
        )
    body, signature = raw[: HANDLE_LAYOUT.size], raw[HANDLE_LAYOUT.size :]
    candidates = macs[version]
    for mac in candidates:  # a loop, not any() of a generator: this runs for every handle from elsewhere
        if mac is not None and hmac.compare_digest(signature, mac(body)):
            break
    else:
        if None in candidates:
            raise ReceiptHandleIsInvalid(
                invalid_handle_text(handle),
                f"The receipt handle {V.shorten(handle, 40)} cannot be checked here: if sqsqlite issued it, a process with "
                "BLAKE2b did, and this Python refuses BLAKE2b as a MAC (a build for FIPS mode). Delete with the handles this "
                "kind of process received.",
            )
        raise ReceiptHandleIsInvalid(
            invalid_handle_text(handle), f"The receipt handle {V.shorten(handle, 40)} is not valid: it was not issued by this database."
        )
    _, qid, row_id, message_uuid, token = HANDLE_LAYOUT.unpack(body)
    return Handle(qid, row_id, message_uuid, bytearray(token), uuid_str(message_uuid))


_new_tuple = tuple.__new__


def receipt_secret(store: Any) -> bytes:
    """The database's key that signs its receipt handles, made on first use."""
    # Read first: a database that already has its key opens without a write, so a read-only
    # file can still be inspected (and every write to it fails with DatabaseError).
    with store.read() as tx:
        value = tx.scalar(Q.get_meta, key="receipt_secret")
    if value is not None:
        return bytes(value)
    with store.write() as tx:
        tx.run(Q.put_meta, key="receipt_secret", value=os.urandom(32))
        value = tx.scalar(Q.get_meta, key="receipt_secret")
    return bytes(value)


class Handles:
    """Issues receipt handles and checks the ones presented.

    A handle is its fields and a MAC under the database's secret. Checking one costs a base64
    round trip and the MAC again; but most handles come back to the process that issued them
    (receive, then delete), so the handles issued recently are kept, text to fields, until a
    delete takes them, and a presented one found there is proven by the lookup: only this object
    put it there. Others (another process's, older ones, one used before, forgeries) are checked
    in full."""

    def __init__(self, secret: bytes):
        # One keyed state: text() copies it directly, the checks through a closure. Where
        # BLAKE2b is refused (FIPS mode) it is None, and handles are version 3.
        self._keyed = _keyed_blake2b(secret)
        self._hmac_sha256 = _hmac_sha256(secret)
        blake2b = None if self._keyed is None else _keyed_mac(self._keyed)
        # The MACs that may have signed each handle version. 1: base64 text, signed with
        # HMAC-SHA256 by the first sqsqlite and with BLAKE2b since (the version byte stayed 1, so
        # both are tried: a handle received before an upgrade must still delete its message);
        # 2: hex, BLAKE2b; 3: hex, HMAC-SHA256.
        self.macs: dict[int, tuple[Callable[[bytes], bytes] | None, ...]] = {
            1: (blake2b, self._hmac_sha256),
            2: (blake2b,),
            3: (self._hmac_sha256,),
        }
        self._issued: dict[str, Handle] = {}
        # The id of the queue each name had when this process last claimed from it, once the
        # claim committed: a delete by handles this process issued (take) goes straight to
        # their rows (deleting.py). Written by claimed_from.
        self.queue_ids: dict[str, int] = {}

    def text(self, claim: Handle) -> str:
        """The receipt handle of a received message's claim, made when first read (a
        ``Message.delete()`` needs none: it deletes by the claim itself), and remembered with
        its fields until a delete takes it."""
        # Written out, uuid_bytes' common case and the MAC: a call costs about 1,000
        # instructions in CPython 3.11, and this runs for every handle read.
        queue_id, row_id, _, token, message_id = claim
        try:
            message_uuid = bytes.fromhex(message_id.replace("-", "")) if len(message_id) == 36 else b""
        except ValueError:
            message_uuid = b""
        if len(message_uuid) != 16:
            message_uuid = uuid_bytes(message_id)  # an id imported before ids had to be uuids
        keyed = self._keyed
        if keyed is not None:
            body = HANDLE_LAYOUT.pack(2, queue_id, row_id, message_uuid, token)
            state = keyed.copy()
            state.update(body)
            text = (body + state.digest()).hex()
        else:  # BLAKE2b refused (a build for FIPS mode): version 3, HMAC-SHA256
            body = HANDLE_LAYOUT.pack(3, queue_id, row_id, message_uuid, token)
            text = (body + self._hmac_sha256(body)).hex()
        issued = self._issued
        if len(issued) >= D.ISSUED_HANDLES_KEPT:
            issued.clear()  # bounded; a handle no longer kept is checked in full
        # tuple.__new__: the NamedTuple's own constructor costs three times as much. The id is
        # the stored text itself, which the delete's statement compares with.
        issued[text] = _new_tuple(Handle, (queue_id, row_id, message_uuid, token, message_id))
        return text

    def find(self, handle: Any) -> Handle | None:
        """The fields of a handle this object issued and remembers, else None; unlike take() it
        stays remembered."""
        return self._issued.get(handle) if type(handle) is str else None

    def claimed_from(self, name: str, queue_id: int) -> None:
        """A claim from the queue ``name``, whose id is ``queue_id``, has committed."""
        ids = self.queue_ids
        if len(ids) >= D.QUEUE_URLS_KEPT and name not in ids:
            ids.clear()  # bounded, as the handles are: a name forgotten takes the exact path
        ids[name] = queue_id

    def take(self, handles: Iterable) -> list[Handle | None]:
        """For a delete: each handle's fields if this object issued it and remembers it, else
        None in its place; [] when one cannot be a key. Found by lookup alone, each is as proven
        as check() would find it; the caller still has to match each handle's queue.

        The handles found are forgotten: a delete uses a handle once, and one presented again
        (deleting twice, a retry) is checked in full. So, while consumers of standard queues
        keep up, the memory holds only handles not yet deleted, a few hundred kilobytes instead
        of filling to ISSUED_HANDLES_KEPT and starting again, and a receive's inserts and a
        delete's look-ups stay in the CPU's caches (a buffered consumer's CPU a message fell
        7%). FIFO deletes take the exact path (check), which leaves the memory as it is."""
        try:
            return list(map(self._issued.pop, handles, repeat(None)))
        except TypeError:  # e.g. a list given as a handle
            return []

    def check(self, handle: Any, queue_id: int) -> Handle:
        """The handle's fields if this database issued it for this queue, else ReceiptHandleIsInvalid."""
        h = self._issued.get(handle) if type(handle) is str else None
        if h is None:
            h = decode_handle(self.macs, handle)
        if h.queue_id != queue_id:
            raise ReceiptHandleIsInvalid(
                invalid_handle_text(handle),
                f"The receipt handle {V.shorten(handle, 40)} is not valid for this queue: it was issued by another queue.",
            )
        return h


# A handle's queue, row id and token, by name, read by position in C: map() over them calls no
# Python, and an item getter skips the attribute look-up, which CPython 3.11 does not specialize
# for a NamedTuple's fields.
handle_queue = operator.itemgetter(Handle._fields.index("queue_id"))
handle_row_id = operator.itemgetter(Handle._fields.index("row_id"))
handle_token = operator.itemgetter(Handle._fields.index("token"))


def handle_delete_params(h: Handle) -> dict:
    """The handle's fields as Q.delete_standard_by_handle's parameters, once its queue is known
    to be the one deleting (Handles.check, or the batch fast path's set of queues)."""
    queue_id, row_id, _, token, message_id = h
    return {"id": row_id, "queue_id": queue_id, "message_id": message_id, "token": token}
