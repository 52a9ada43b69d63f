"""Deleting and changing visibility, one message or a batch, by receipt handle.

A handle acts only while it is its message's newest (the claim token it carries is the row's)
and its message is in its queue: a superseded, moved, forged or foreign handle is
ReceiptHandleIsInvalid and touches nothing. The common case, a handle this process issued and
still the newest, deletes in one statement without reading the row first.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import batches as B
from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidParameterValue, MessageNotInflight, MissingParameter, ReceiptHandleIsInvalid, SQSError
from ..store import Tx
from . import archive, history
from .handles import Handle, handle_delete_params, handle_queue, handle_row_id, handle_token, invalid_handle_text, is_message_uuid
from .results import NOT_RECEIVED, BatchResult, BatchResultErrorEntry, Message
from .rules import heads_left, keep_high_water, ms, queue_row, retention_cutoff

if TYPE_CHECKING:
    from .context import QueueContext

_get_receipt_handle = operator.itemgetter("ReceiptHandle")
_IDS = Q.PER_ROW["id"]  # a statement of several row ids: :id_0, :id_1 ...


def _locate(queue: QueueContext, tx: Tx, row, handle: str, now: int):
    """The message a handle holds, None if it is gone (deleted, purged or expired, wherever
    it is now), or ReceiptHandleIsInvalid."""
    h = queue.handles.check(handle, row["id"])
    msg = tx.one(Q.message_by_id, id=h.row_id)
    assert h.message_uuid is not None  # a checked handle's fields hold it (only a claim's lack it)
    if msg is None:  # deleted, or moved to another queue, where it took a new id
        msg = tx.one(Q.message_moved_from, id=h.row_id)
        hop = h.row_id
        # Moved on since: each id it left after this one, until the one its row keeps (or none:
        # it went, or its moves were pruned with its retention). Ids are left once: no loop.
        while msg is None and (hop := tx.scalar(Q.message_move_from, id=hop)) is not None:
            msg = tx.one(Q.message_moved_from, id=hop)
    if msg is None or not is_message_uuid(msg["message_id"], h.message_uuid):
        return None
    home = row if msg["queue_id"] == row["id"] else tx.one(Q.queue_by_id, id=msg["queue_id"])
    if home is None or msg["sent_at"] <= retention_cutoff(home, now):
        return None  # expired is gone for good, even before a clean-up removes the row
    if msg["queue_id"] != row["id"] or msg["id"] != h.row_id:  # in another queue, or back from one
        raise ReceiptHandleIsInvalid(
            invalid_handle_text(handle),
            "The receipt handle is no longer valid: its message was moved to another queue (to the dead-letter queue, or out of it by a move task).",
        )
    if msg["receipt_token"] != h.token:
        raise ReceiptHandleIsInvalid(
            invalid_handle_text(handle),
            "The receipt handle is no longer valid: the message was received again (or the database was restored to a state "
            "before this receive), and only the newest receipt handle can act on it.",
        )
    return msg


def delete_message(queue: QueueContext, receipt_handle: str | Message) -> None:
    handles = queue.handles
    fifo = queue.name.endswith(".fifo")  # only FIFO queues' names end so
    message = receipt_handle if isinstance(receipt_handle, Message) else None
    # Neither a claim to delete by nor a handle (peeked, or detached from its queue): the text
    # is read only then, so a received message's is not made here.
    if message is not None and (message.claim is None or message.queue is None) and message.receipt_handle is None:
        raise ReceiptHandleIsInvalid(NOT_RECEIVED)
    h: Handle | None = None
    if fifo:
        pass  # FIFO deletes take the exact path, which mends the group's head
    elif message is not None:
        h = message.claim
    else:
        found = handles.take([receipt_handle])  # [] for a handle that can't be a key
        h = found[0] if found else None
    with queue.store.write() as tx:
        # A handle this process issued (or a message's claim) for the queue it last claimed from
        # by this name, deleted without reading the queue's row: the row gone proves the queue
        # and the message were there. Anything else (deleted already, superseded, another
        # queue's) goes the exact way.
        if h is not None and h.queue_id == handles.queue_ids.get(queue.key):
            now = queue.now()
            params = handle_delete_params(h)
            kept = archive.retention(tx, h.queue_id, now)
            if kept is not None:  # the row the DELETE below takes, if it takes one
                tx.run_bound(Q.ARCHIVE_BY_HANDLE, archive.params(queue.name, now, kept, "delete", fifo=0, **params))
            if tx.run_bound(Q.delete_standard_by_handle, params):
                keep_high_water(tx, (h.row_id,))
                history.count(tx, Q.COUNT_DELETED, h.queue_id, now, deleted=1)
                return
        # The exact way reads a message's handle as text (made now if it never was).
        handle = receipt_handle if message is None else message.receipt_handle
        row, now = queue_row(tx, queue), queue.now()
        if _delete(queue, tx, row, handle, now, "delete"):  # type: ignore[arg-type]  # None: MissingParameter there
            history.count(tx, Q.COUNT_DELETED, row["id"], now, deleted=1)
    if fifo:  # the group's next message may be receivable now
        queue.wakeups.notify(queue.key, 1)


def _delete(queue: QueueContext, tx: Tx, row, handle: str, now: int, how: str) -> bool:
    """Delete the message of ``handle`` (or find it deleted already, or refuse the handle);
    whether this deleted it. The caller counts it. ``how``: the archive's name for the call."""
    # The common case in one statement: the handle is the message's newest and still
    # valid. Anything else deletes nothing here and is sorted out by _locate below.
    h = queue.handles.check(handle, row["id"])
    kept = archive.retention(tx, row["id"], now)
    if not row["fifo"]:
        # No group head to mend: the plain DELETE, without RETURNING (which makes
        # SQLite collect its rows in a temporary table before the first one comes back).
        params = handle_delete_params(h)
        if kept is not None:
            tx.run_bound(Q.ARCHIVE_BY_HANDLE, archive.params(queue.name, now, kept, how, fifo=0, **params))
        if tx.run_bound(Q.delete_standard_by_handle, params):
            keep_high_water(tx, (h.row_id,))
            return True
    else:
        if kept is not None:
            tx.run_bound(Q.ARCHIVE_BY_HANDLE, archive.params(queue.name, now, kept, how, fifo=1, **handle_delete_params(h)))
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
            keep_high_water(tx, (gone["id"],))
            heads_left(tx, row["id"], [gone])
            return True
    msg = _locate(queue, tx, row, handle, now)
    if msg is None:
        return False  # already deleted with its last handle: deleting again is fine
    if row["fifo"] and msg["visible_at"] <= now:
        raise InvalidParameterValue(
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: The receipt handle has expired.",
            f"The receipt handle has expired: on FIFO queue {queue.name!r} a handle is valid only while its message is in flight.",
        )
    if kept is not None:
        tx.run(Q.ARCHIVE_BY_ID, id=msg["id"], **archive.params(queue.name, now, kept, how))
    gone = tx.one(Q.delete_message, id=msg["id"])
    if gone is not None:
        keep_high_water(tx, (gone["id"],))
    heads_left(tx, row["id"], [gone])
    return gone is not None


def delete_claims(queue: QueueContext, claims: list[Handle]) -> list[tuple[str, SQSError]]:
    """Delete any number of received messages by their claims (Message.claim) in one write
    transaction, for BufferedQueue; returns the receipt handles of those refused, with why.
    Each acts as delete_message's would with the message's handle."""
    failures: list[tuple[str, SQSError]] = []
    with queue.store.write() as tx:
        row = queue_row(tx, queue)
        now = queue.now()
        kept = archive.retention(tx, row["id"], now)
        arc = None if kept is None else archive.params(queue.name, now, kept, "buffered")
        issued = None if row["fifo"] else _delete_issued(tx, row["id"], claims, arc)
        if issued == len(claims):
            history.count(tx, Q.COUNT_DELETED, row["id"], now, deleted=issued)
            return failures
        deleted = issued or 0  # the rest find those deleted already
        text = queue.handles.text
        for claim in claims:
            handle = text(claim)
            try:
                deleted += _delete(queue, tx, row, handle, now, "buffered")
            except SQSError as exc:
                failures.append((handle, exc))
        if deleted:
            history.count(tx, Q.COUNT_DELETED, row["id"], now, deleted=deleted)
    if row["fifo"] and len(failures) < len(claims):  # the groups' next messages may be receivable now
        queue.wakeups.notify(queue.key, len(claims) - len(failures))
    return failures


def change_message_visibility(queue: QueueContext, receipt_handle: str, visibility_timeout: int) -> None:
    vt = V.visibility_timeout(visibility_timeout)
    with queue.store.write() as tx:
        _change(queue, tx, queue_row(tx, queue), receipt_handle, vt, queue.now())
    if vt == 0:
        queue.wakeups.notify(queue.key, 1)


def _change(queue: QueueContext, tx: Tx, row, handle: str, vt: int, now: int) -> None:
    msg = _locate(queue, tx, row, handle, now)
    if msg is None or msg["sent_at"] <= retention_cutoff(row, now):
        raise InvalidParameterValue(
            f"Value {handle} for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change.",
            "The message does not exist any more (deleted, purged or expired).",
        )
    if msg["visible_at"] <= now:
        raise MessageNotInflight(
            "The specified message isn't in flight.",  # AWS's documented text; no recording of the wire's was found
            "Its visibility timeout has ended, so there is nothing to change; receive it again.",
        )
    new_end = now + ms(vt)
    limit = msg["received_at"] + ms(D.MAX_VISIBILITY_TIMEOUT)
    if new_end > limit:
        left = max(0, (limit - now) // 1000)
        raise InvalidParameterValue(
            f"Value {vt} for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message "
            f"is beyond the limit [{D.MAX_VISIBILITY_TIMEOUT} seconds].",
            f"A message stays in flight at most {D.MAX_VISIBILITY_TIMEOUT} seconds from its receive; {left} are left for this one.",
        )
    tx.run(Q.change_visibility, id=msg["id"], visible_at=new_end)


def delete_message_batch(queue: QueueContext, entries: B.Entries) -> BatchResult:
    result = _delete_message_batch(queue, entries)
    # Only FIFO queues end in .fifo (create_queue refuses the suffix elsewhere).
    if queue.name.endswith(".fifo") and result.successful:  # the groups' next messages may be receivable now
        queue.wakeups.notify(queue.key, len(result.successful))
    return result


def _delete_message_batch(queue: QueueContext, entries: B.Entries) -> BatchResult:
    batch = B.batch_entry_ids(entries, "DeleteMessageBatch")
    entries, entry_ids = batch.entries, batch.ids
    check = queue.handles.check
    successful: list[dict] = []
    failed: list[BatchResultErrorEntry] = []
    remembered: list = []
    claims: list = []
    given_messages = False
    plain = batch.members_of("ReceiptHandle")
    if plain is None and any(isinstance(e.get("ReceiptHandle"), Message) for e in entries):
        # Received Messages standing for their handles, as in delete_message: by their claims
        # when all have one (no handle text made), else each as its handle's text.
        claims = [_claim_of(e.get("ReceiptHandle")) for e in entries]
        if not all(claims):
            claims = []
        elif not queue.name.endswith(".fifo"):
            remembered = claims
        given_messages = True
    elif not queue.name.endswith(".fifo"):  # only FIFO queues' names end so
        try:
            remembered = queue.handles.take(map(_get_receipt_handle, entries) if plain is None else plain)
        except KeyError:  # an entry without a ReceiptHandle: the exact path names it
            pass
    with queue.store.write() as tx:
        # The common case first: handles this process issued for the queue it last claimed from
        # by this name (_delete_issued), deleted without reading the queue's row. All of them
        # deleted proves the queue and the messages were there. A shortfall (a handle
        # superseded, the queue deleted) leaves each entry to the exact path below, where a
        # message this deleted reads as already deleted. (A handle repeated in the batch or
        # deleted before was taken already: it reads as unknown, and the fast path is not tried.)
        issued_to = queue.handles.queue_ids.get(queue.key)
        arc = None
        if issued_to is not None and remembered:
            now = queue.now()
            kept = archive.retention(tx, issued_to, now)
            arc = None if kept is None else archive.params(queue.name, now, kept, "batch")
        issued = _delete_issued(tx, issued_to, remembered, arc)
        if issued == len(entries):
            history.count(tx, Q.COUNT_DELETED, issued_to, queue.now(), deleted=issued)  # type: ignore[arg-type]  # issued: the queue is known
            return BatchResult([{"Id": i} for i in entry_ids], failed)
        tried = issued is not None  # the fast path ran, and fell short
        # Rows deleted before the loop below without being marked done in `deleted`: the loop
        # finds their messages deleted already and counts nothing for them, so they count here.
        gone_before = issued or 0
        row = queue_row(tx, queue)
        now = queue.now()
        queue_id = row["id"]
        kept = archive.retention(tx, queue_id, now)
        arc = None if kept is None else archive.params(queue.name, now, kept, "batch")
        handles: dict[str, Handle] = {}
        if row["fifo"] and claims and all(c.queue_id == queue_id for c in claims):
            # A FIFO queue's received messages: their claims hold what its statement needs.
            handles = dict(zip(entry_ids, claims))
        else:
            if given_messages:  # the exact path reads handles as text
                entries, given_messages = [_as_text(e) for e in entries], False
            for e in entries:
                try:
                    handles[e["Id"]] = check(e.get("ReceiptHandle"), queue_id)
                except SQSError:
                    pass  # _delete below reports it, entry by entry
        # The rows deleted here, each with the claim token that deleted it: an entry is done only
        # if it names both (a claim of another database's queue can name a row id of this one).
        deleted: set[tuple[int, bytes]] = set()
        if handles and not row["fifo"] and not tried:
            # Every handle its message's newest, as one executemany whose total rowcount
            # says whether all of them went; if not, the loop below decides each entry
            # exactly (a message this deleted reads as already deleted there, and counts
            # nothing there: the rows this took are counted here). Skipped after the fast
            # path above fell short: it would delete nothing more.
            keys = list(map(handle_delete_params, handles.values()))
            if arc is not None:
                # Each (row, token) once: a handle given twice deletes its row once. Keyed by row
                # id alone, a superseded handle after the newest one would replace it here and
                # archive nothing while the DELETE below still takes the row.
                once = {(k["id"], bytes(k["token"])): k for k in keys}.values()
                tx.run_many_bound(Q.ARCHIVE_BY_HANDLE, [{**arc, "fifo": 0, **k} for k in once])
            taken = tx.run_many_bound(Q.delete_standard_by_handle, keys)
            if taken:
                keep_high_water(tx, (k["id"] for k in keys))
            if taken == len(keys):
                deleted.update((k["id"], bytes(k["token"])) for k in keys)
            else:
                gone_before += taken
        elif handles and row["fifo"]:
            # FIFO: the same by each claim's token (one statement for one receive's messages),
            # deleting only messages still in flight and returning what each deletion did to its
            # group's head. The message ids the handles hold add nothing to token and row id.
            claimed: dict[bytes, list] = {}
            for handle in handles.values():
                claimed.setdefault(bytes(handle.token), [handle.token]).append(handle.row_id)
            heads = set()
            for token, *ids in claimed.values():
                params = {"token": token, "queue_id": queue_id, "now": now, **dict(zip(_IDS, ids))}
                if arc is not None:
                    tx.run(Q.ARCHIVE_CLAIMED, **{**arc, "token": token, "queue_id": queue_id, "ids": json.dumps(ids), "fifo": 1})
                for gone in tx.all(Q.DELETE_CLAIMED_FIFO_ROWS[len(ids)], **params):
                    deleted.add((gone["id"], gone["receipt_token"]))
                    if gone["is_head"]:
                        heads.add(gone["group_id"])
            keep_high_water(tx, (row_id for row_id, _ in deleted))
            for group_id in heads:  # the groups' next messages head them now
                tx.run(Q.fix_group_head, queue_id=queue_id, group_id=group_id)
        count = gone_before + len(deleted)  # the exact path below finds these deleted already
        if len(deleted) == len(entries):  # each entry deleted its own message above
            history.count(tx, Q.COUNT_DELETED, queue_id, now, deleted=count)
            return BatchResult([{"Id": e["Id"]} for e in entries], failed)
        if given_messages:  # as above
            entries = [_as_text(e) for e in entries]
        for e in entries:
            h = handles.get(e["Id"])
            try:
                if isinstance(e.get("ReceiptHandle"), Message):  # one never received (_as_text)
                    raise ReceiptHandleIsInvalid(NOT_RECEIVED)
                if h is None or (h.row_id, bytes(h.token)) not in deleted:
                    count += _delete(queue, tx, row, e.get("ReceiptHandle"), now, "batch")  # type: ignore[arg-type]  # decides the rest exactly, a missing handle included
                successful.append({"Id": e["Id"]})
            except SQSError as exc:
                failed.append(BatchResultErrorEntry(e["Id"], exc.code, exc.message, exc.sender_fault, exc.hint))
        if count:
            history.count(tx, Q.COUNT_DELETED, queue_id, now, deleted=count)
    return BatchResult(successful, failed)


def _claim_of(value: object) -> Handle | None:
    """A received Message's claim (its handle's fields), None for anything else."""
    if isinstance(value, Message) and value.queue is not None:
        return value.claim
    return None


def _as_text(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    """The entry with a received Message given as its ReceiptHandle read as the handle's text
    (made now if it never was). A Message never received (peeked) stays, and is refused."""
    value = entry.get("ReceiptHandle")
    if not isinstance(value, Message) or value.receipt_handle is None:
        return entry
    return {**entry, "ReceiptHandle": value.receipt_handle}


def change_message_visibility_batch(queue: QueueContext, entries: B.Entries) -> BatchResult:
    entries = B.batch_entry_ids(entries, "ChangeMessageVisibilityBatch").entries

    def one(tx, row, e, now):
        if e.get("VisibilityTimeout") is None:  # optional in the model, needed by the action
            raise MissingParameter("The request must contain the parameter VisibilityTimeout.")
        _change(queue, tx, row, e.get("ReceiptHandle"), V.visibility_timeout(e["VisibilityTimeout"]), now)

    result = _batch(queue, entries, one)
    queue.wakeups.notify(queue.key, len(entries))
    return result


def _batch(queue: QueueContext, entries, action) -> BatchResult:
    successful, failed = [], []
    with queue.store.write() as tx:
        row = queue_row(tx, queue)
        now = queue.now()
        for e in entries:
            try:
                action(tx, row, e, now)  # raises before it writes, so a failure changes nothing
                successful.append({"Id": e["Id"]})
            except SQSError as exc:
                failed.append(BatchResultErrorEntry(e["Id"], exc.code, exc.message, exc.sender_fault, exc.hint))
    return BatchResult(successful, failed)


def _delete_issued(tx: Tx, queue_id: int | None, remembered: list, arc: dict | None) -> int | None:
    """Rows deleted for handles this process issued and remembers (Handles.take), or for
    received messages' claims (which have the same fields), or None when any is unknown or
    another queue's. Each receive's run of handles shares its token
    object, and is deleted by one statement of up to ten row ids (Q.DELETE_CLAIMED_ROWS), or of
    up to a claim's most for a buffered consumer's (Q.DELETE_CLAIMED_MANY): the token is fresh
    per claim and only claims set it, so token and row ids name exactly those messages. A
    handle superseded, or its message deleted by another process, deletes nothing, so a count
    short of len(remembered) sends the caller to its exact path. ``arc``: the archive's
    parameters while the queue's is on (archive.params), None while it is off."""
    if not remembered or not all(remembered) or set(map(handle_queue, remembered)) != {queue_id}:
        return None
    n = len(remembered)
    tokens = list(map(handle_token, remembered))
    if n <= D.MAX_BATCH_ENTRIES and tokens.count(tokens[0]) == n:  # one receive's: count() tries identity first
        ids = list(map(handle_row_id, remembered))
        params = {"token": tokens[0], "queue_id": queue_id}
        if arc is not None:
            tx.run(Q.ARCHIVE_CLAIMED, **{**arc, **params, "ids": json.dumps(ids), "fifo": 0})
        params.update(zip(_IDS, ids))
        deleted = tx.run_bound(Q.DELETE_CLAIMED_ROWS[n], params)
        if deleted:
            keep_high_water(tx, ids)
        return deleted
    # More than a batch: a buffered consumer's. Its runs go by one cached statement of a claim's
    # most ids whatever their length (padding, which IN ignores, keeps the row count exact), not
    # one statement per ten.
    many = D.BUFFER_PREFETCH.high
    deleted = start = 0
    while start < n:
        end = start + 1
        while end < n and end - start < many and tokens[end] is tokens[start]:
            end += 1
        ids = list(map(handle_row_id, remembered[start:end]))
        params = {"token": tokens[start], "queue_id": queue_id}
        if arc is not None:
            tx.run(Q.ARCHIVE_CLAIMED, **{**arc, **params, "ids": json.dumps(ids), "fifo": 0})
        if len(ids) <= D.MAX_BATCH_ENTRIES:
            params.update(zip(_IDS, ids))
            deleted += tx.run_bound(Q.DELETE_CLAIMED_ROWS[len(ids)], params)
        else:
            ids += [ids[-1]] * (many - len(ids))
            params.update(zip(_IDS, ids))
            deleted += tx.run_bound(Q.DELETE_CLAIMED_MANY, params)
        start = end
    if deleted:
        keep_high_water(tx, map(handle_row_id, remembered))
    return deleted
