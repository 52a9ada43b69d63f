"""Sending: SendMessage and SendMessageBatch. A message is checked against every rule that does
not depend on its queue (Prepared), then inserted under the queue's own rules in one write
transaction: its size limit and delay, and on FIFO queues the group, deduplication and
sequence number.

A batch of bodies alone, the common batch, takes its own path (_insert_plain): one INSERT for the
whole batch, no Prepared per message. It was kept for what it saved (a
batch message cost the general path 1.23-1.29 times as much CPU; the figures in
docs/explanation/decisions.md) and answers as the general path does (tests/unit/test_send_paths.py). A single send has one path: there the plain one saved nothing
measurable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import batches as B
from .. import defaults as D
from .. import queries as Q
from .. import validation as V
from ..errors import InvalidParameterValue, MissingParameter, SQSError
from ..store import Tx
from . import history
from .handles import new_message_id, new_message_ids
from .prepared import Prepared
from .results import BatchResult, BatchResultErrorEntry, SendResult, SentMessages
from .rules import attributes_json, dedup_scope, keep_deduplicating_from, ms, queue_row, sequence_text

if TYPE_CHECKING:
    from .context import QueueContext

_new_tuple = tuple.__new__
# Row i's parameter names of a multi-row insert (Q.INSERT_*_ROWS): :message_id_i, :body_i ...
_MESSAGE_IDS, _BODIES, _VISIBLE_ATS = Q.PER_ROW["message_id"], Q.PER_ROW["body"], Q.PER_ROW["visible_at"]
_ATTRIBUTES, _GROUP_IDS = Q.PER_ROW["attributes"], Q.PER_ROW["group_id"]
# Q.INSERT_SHARED_ROWS[n]'s parameter names, in the order _insert_plain lists its values, and a
# dict of them to copy: a copy of a dict of the same keys is one allocation, and filling it
# resizes nothing, where a dict built key by key resized four times (3.6 us a batch of 10).
_SHARED_NAMES = [
    ("queue_id", "sender_id", "sent_at", "visible_at", *_MESSAGE_IDS[:n], *_BODIES[:n]) for n in range(D.MAX_BATCH_ENTRIES + 1)
]
_SHARED_PARAMS = [dict.fromkeys(names) for names in _SHARED_NAMES]


def trace_header(system: Any) -> str | None:
    """The AWSTraceHeader of a send's MessageSystemAttributes (None without one)."""
    if not system:
        return None
    if not isinstance(system, Mapping):
        raise InvalidParameterValue(f"Invalid MessageSystemAttributes {V.shorten(system)}: expected a map with AWSTraceHeader.")
    unknown = set(system) - {"AWSTraceHeader"}
    if unknown:
        raise InvalidParameterValue(
            f"Message system attribute name '{sorted(map(str, unknown))[0]}' is invalid.",
            f"Unknown message system attribute {', '.join(sorted(map(repr, unknown)))}; only AWSTraceHeader can be sent.",
        )
    value = system.get("AWSTraceHeader")
    if value is None:
        return None
    text = value.get("StringValue") if isinstance(value, Mapping) else None
    # Of type String alone, given (a Number's digits would be digested under that type, and a
    # missing type refused only by the digest, after the message was stored).
    if not isinstance(text, str) or not text or value.get("DataType") != "String":
        raise InvalidParameterValue(
            "Message (system) attribute 'AWSTraceHeader' must contain a non-empty value of type 'String'.",
            f"AWSTraceHeader must be given as {{'DataType': 'String', 'StringValue': ...}}, got {V.shorten(value)}.",
        )
    V.check_text("AWSTraceHeader", text)
    return text


def _prepare(body, delay_seconds, message_attributes, group_id, dedup_id, entry_id=None, system_attributes=None) -> Prepared:
    body_bytes = V.message_body(body)
    # Each check called only for what was given (no attributes: {}, as the check answers).
    attributes = V.message_attributes(message_attributes) if message_attributes else {}
    delay = None if delay_seconds is None else V.delay_seconds(delay_seconds)
    if group_id is not None:
        group_id = V.dedup_id("MessageGroupId", group_id)
    if dedup_id is not None:
        dedup_id = V.dedup_id("MessageDeduplicationId", dedup_id)
    trace = trace_header(system_attributes) if system_attributes else None
    return Prepared(body, body_bytes, attributes, delay, group_id, dedup_id, entry_id, trace)


def send_message(
    queue: QueueContext,
    message_body: str,
    *,
    delay_seconds: int | None = None,
    message_attributes: Mapping[str, Any] | None = None,
    message_group_id: str | None = None,
    message_deduplication_id: str | None = None,
    message_system_attributes: Mapping[str, Any] | None = None,
) -> SendResult:
    prepared = _prepare(
        message_body, delay_seconds, message_attributes, message_group_id, message_deduplication_id, None, message_system_attributes
    )
    with queue.store.write(sending=True) as tx:
        row = queue_row(tx, queue)
        if row["fifo"]:
            [result] = _insert(queue, tx, row, [prepared])
        else:
            result = _insert_one(queue, tx, row, prepared)
    queue.wakeups.notify(queue.key, 1)
    if isinstance(result, SQSError):
        raise result
    return result


def send_message_batch(queue: QueueContext, entries: B.Entries) -> BatchResult:
    batch = B.batch_entry_ids(entries, "SendMessageBatch")
    entries, entry_ids = batch.entries, batch.ids
    failed: list[BatchResultErrorEntry] = []
    prepared: Any = None  # when the batch is not plain (_plain_entries)
    bodies = batch.members_of("MessageBody")
    plain: Any = None if bodies is None else _plain_entries(entry_ids, bodies)
    if plain is not None:
        B.check_batch_size(plain.total)
    else:
        prepared = []
        for entry in entries:
            try:
                prepared.append(
                    _prepare(
                        entry.get("MessageBody"),
                        entry.get("DelaySeconds"),
                        entry.get("MessageAttributes"),
                        entry.get("MessageGroupId"),
                        entry.get("MessageDeduplicationId"),
                        entry_id=entry["Id"],
                        system_attributes=entry.get("MessageSystemAttributes"),
                    )
                )
            except SQSError as exc:
                failed.append(BatchResultErrorEntry(entry["Id"], exc.code, exc.message, exc.sender_fault, exc.hint))
        B.check_batch_size(sum(p.size for p in prepared))
        if not prepared:
            return BatchResult([], failed)
    with queue.store.write(sending=True) as tx:
        row = queue_row(tx, queue)
        if row["fifo"]:
            prepared = prepared or _prepared_plain(plain)
            _check_fifo_batch(queue, row, prepared)
        ids = None if plain is None else _insert_plain(queue, tx, row, plain)
        if ids is None:
            prepared = prepared or _prepared_plain(plain)
            results = _insert(queue, tx, row, prepared)
    queue.wakeups.notify(queue.key, len(entries))
    if ids is not None:  # _insert_plain sent every message
        return BatchResult(SentMessages(ids, plain.bodies, plain.entry_ids), failed)
    successful = []
    for p, result in zip(prepared, results):
        if isinstance(result, SQSError):
            failed.append(BatchResultErrorEntry(p.entry_id, result.code, result.message, result.sender_fault, result.hint))
        else:
            successful.append(result)
    if failed:
        order = {e["Id"]: i for i, e in enumerate(entries)}
        failed.sort(key=lambda f: order[f.id])
    return BatchResult(successful, failed)


def _check_fifo_batch(queue: QueueContext, row, prepared: list[Prepared]) -> None:
    """SQS refuses a whole FIFO batch, not the one entry, when an entry lacks its group or
    deduplication id."""
    for p in prepared:
        if p.group_id is None:
            raise InvalidParameterValue(
                "The request must contain the parameter MessageGroupId.", f"Entry {p.entry_id!r}: queue {queue.name!r} is a FIFO queue."
            )
        if p.dedup_id is None and not row["content_based_dedup"]:
            raise _dedup_id_required(queue, p)


def _dedup_id_required(queue: QueueContext, p: Prepared) -> InvalidParameterValue:
    """A FIFO send without a deduplication id to a queue without content-based deduplication."""
    what = "The message" if p.entry_id is None else f"Entry {p.entry_id!r}"
    return InvalidParameterValue(
        "The queue should either have ContentBasedDeduplication enabled or MessageDeduplicationId provided explicitly",
        f"{what} has no MessageDeduplicationId and queue {queue.name!r} has no ContentBasedDeduplication.",
    )


def _insert_plain(queue: QueueContext, tx: Tx, row, plain: _Plain) -> list[str] | None:
    """The common batch send, messages with only a body (plain: their entry Ids, bodies and the
    bodies' size in bytes), to a standard queue, every body within its MaximumMessageSize: one
    INSERT binding the queue, sender, send time and visible_at once; the messages' ids. None
    for anything else (a FIFO queue, a body over the size), which _insert decides message by
    message.

    Its own path because a send's Python costs more than its statement: per message, an
    entry's checks and a Prepared, then a seven-value row sliced back into the shared form
    cost about as many instructions as SQLite's insert (callgrind, batches of 10)."""
    _, bodies, total = plain
    max_size = row["max_message_size"]
    if row["fifo"] or (total > max_size and max(map(len, map(str.encode, bodies))) > max_size):
        return None
    now = queue.now()
    n = len(bodies)
    ids = new_message_ids(n)
    values = [row["id"], queue.sender_id, now, now + row["delay_seconds"] * 1000]
    values += ids
    values += bodies
    params = _SHARED_PARAMS[n].copy()
    params.update(zip(_SHARED_NAMES[n], values))
    tx.run_bound(Q.INSERT_SHARED_ROWS[n], params)
    history.count(tx, Q.COUNT_SENT, row["id"], now, sent=n, bytes_sent=total)
    return ids


def _insert(queue: QueueContext, tx: Tx, row, prepared: list[Prepared]) -> list:
    """Insert checked messages; an entry that breaks a queue rule becomes its error."""
    now = queue.now()
    is_fifo = bool(row["fifo"])
    results: list = []
    # The rows' values, column by column.
    message_ids: list[str] = []
    bodies: list[str] = []
    attributes: list[str | None] = []
    visible_ats: list[int] = []
    groups: list[str | None] = []
    queue_id, max_size, queue_delay = row["id"], row["max_message_size"], row["delay_seconds"]
    ids = iter(() if is_fifo else new_message_ids(len(prepared)))  # FIFO sends make their own
    fifo: list[int] = []  # the places in results of FIFO messages that passed their checks
    size = 0  # of the standard messages stored
    for p in prepared:
        if is_fifo:
            try:
                if p.size > max_size:
                    raise _too_large(queue, max_size, p)
                _check_fifo(queue, row, p)
            except SQSError as exc:
                results.append(exc)
                continue
            fifo.append(len(results))
            results.append(p)  # its SendResult once _insert_fifo has sent them all
            continue
        if p.size > max_size or p.dedup_id is not None:
            results.append(_refusal(queue, max_size, p))
            continue
        delay = queue_delay if p.delay is None else p.delay
        message_id = next(ids)
        message_ids.append(message_id)
        bodies.append(p.body)
        attributes.append(attributes_json(p.attributes, p.trace_header))
        visible_ats.append(now + delay * 1000)
        # A standard queue takes a MessageGroupId as SQS's fair queues do (a tenant's label,
        # returned on receive, ordering nothing).
        groups.append(p.group_id)
        size += p.size
        results.append(SendResult((message_id, p.body, p.attributes, None, p.entry_id)))
    if message_ids:
        n = len(message_ids)
        params = {"queue_id": queue_id, "sender_id": queue.sender_id, "sent_at": now}
        params.update(zip(_MESSAGE_IDS, message_ids))
        params.update(zip(_BODIES, bodies))
        params.update(zip(_VISIBLE_ATS, visible_ats))
        if groups.count(None) != n:
            params.update(zip(_ATTRIBUTES, attributes))
            params.update(zip(_GROUP_IDS, groups))
            tx.run_bound(Q.INSERT_GROUPED_ROWS[n], params)
        elif any(attributes):
            params.update(zip(_ATTRIBUTES, attributes))
            tx.run_bound(Q.INSERT_STANDARD_ROWS[n], params)
        else:  # every row's None
            tx.run_bound(Q.INSERT_PLAIN_ROWS[n], params)
        history.count(tx, Q.COUNT_SENT, queue_id, now, sent=n, bytes_sent=size)
    if fifo:
        for at, result in zip(fifo, _insert_fifo(queue, tx, row, [results[at] for at in fifo], now)):
            results[at] = result
    return results


def _too_large(queue: QueueContext, max_size: int, p: Prepared) -> InvalidParameterValue:
    return InvalidParameterValue(
        f"One or more parameters {'are invalid' if p.entry_id is None else 'cannot be validated'}. "
        f"Reason: Message must be shorter than {max_size} bytes.",
        f"The message is {p.size} bytes (body plus message attributes); queue {queue.name!r} "
        f"allows 1 to {max_size} bytes (MaximumMessageSize).",
    )


def _refusal(queue: QueueContext, max_size: int, p: Prepared) -> InvalidParameterValue:
    """Why a standard queue refuses a checked message over its size or with a deduplication id."""
    if p.size > max_size:
        return _too_large(queue, max_size, p)
    return InvalidParameterValue(
        # SQS's own text, "include" included.
        f"Value {p.dedup_id} for parameter MessageDeduplicationId is invalid. Reason: The request include "
        "parameter that is not valid for this queue type.",
        f"MessageDeduplicationId is for FIFO queues only; {queue.name!r} is a standard queue.",
    )


def _insert_one(queue: QueueContext, tx: Tx, row, p: Prepared) -> SendResult | SQSError:
    """A single send's message to a standard queue: _insert for one message, without the lists
    and the loop a batch needs (they were a tenth of a single send's Python)."""
    max_size = row["max_message_size"]
    if p.size > max_size or p.dedup_id is not None:
        return _refusal(queue, max_size, p)
    now = queue.clock.now_ms()
    message_id = new_message_id()
    queue_id, body = row["id"], p.body
    visible_at = now + (row["delay_seconds"] if p.delay is None else p.delay) * 1000
    attributes = attributes_json(p.attributes, p.trace_header)
    # With the group, or without it, or without the attributes' None too, as _insert chooses.
    params = {"queue_id": queue_id, "sender_id": queue.sender_id, "sent_at": now, "message_id_0": message_id, "body_0": body}
    params["visible_at_0"] = visible_at
    if p.group_id is not None:
        params["attributes_0"] = attributes
        params["group_id_0"] = p.group_id
        tx.run_bound(Q.INSERT_GROUPED_ROWS[1], params)
    elif attributes is not None:
        params["attributes_0"] = attributes
        tx.run_bound(Q.INSERT_STANDARD_ROWS[1], params)
    else:
        tx.run_bound(Q.INSERT_PLAIN_ROWS[1], params)
    history.count(tx, Q.COUNT_SENT, queue_id, now, sent=1, bytes_sent=p.size)
    return _new_tuple(SendResult, (message_id, body, p.attributes, None, None))


def _check_fifo(queue: QueueContext, row, p: Prepared) -> None:
    if p.group_id is None:
        raise MissingParameter("The request must contain the parameter MessageGroupId.", f"Queue {queue.name!r} is a FIFO queue.")
    if p.delay:  # 0 is accepted, as SQS does: the queue's own delay applies
        raise InvalidParameterValue(
            f"Value {p.delay} for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type.",
            f"DelaySeconds {p.delay} is not allowed on a message sent to FIFO queue {queue.name!r}; set the queue's DelaySeconds instead.",
        )
    if p.dedup_id is None and not row["content_based_dedup"]:
        raise _dedup_id_required(queue, p)


def _insert_fifo(queue: QueueContext, tx: Tx, row, prepared: list[Prepared], now: int) -> list[SendResult]:
    """Send checked messages (_check_fifo) to a FIFO queue, in order: each is deduplicated
    against the queue's window and the batch's earlier messages, or takes the next sequence
    number and is its group's head if the group has no message. Each of those steps is one
    statement for the whole batch (a batch of 10 made 50, and cost 1.6 times the CPU)."""
    queue_id = row["id"]
    by_group = dedup_scope(row, now) == "messageGroup"
    window_start = now - ms(D.FIFO_DEDUP_WINDOW_SECONDS)
    groups: list[str] = []
    keys: list[tuple[str, str]] = []
    for p in prepared:
        group = p.group_id
        assert group is not None  # _check_fifo
        groups.append(group)
        keys.append((group if by_group else "", p.dedup_id if p.dedup_id is not None else hashlib.sha256(p.body_bytes).hexdigest()))
    if len(prepared) == 1:
        return [_insert_fifo_one(queue, tx, row, prepared[0], keys[0], now, window_start)]
    # (scope, deduplication id) -> the message id and sequence number of the message the window
    # holds, or the place in fresh of the batch's own message; then the messages to send and the
    # places of those deduplicated.
    known: dict[tuple[str, str], int | tuple[str, int]] = {}
    for (scope, dedup), seen in _dedup_entries(tx, queue_id, keys, window_start):
        keep_deduplicating_from(tx, queue_id, scope, dedup, seen, now)
        known[scope, dedup] = (seen["message_id"], seen["sequence_number"])
    fresh: list[int] = []
    repeats: list[int] = []
    for at, key in enumerate(keys):
        if key in known:
            repeats.append(at)
        else:
            known[key] = len(fresh)
            fresh.append(at)
    results: list[Any] = [None] * len(prepared)
    if fresh:
        n = len(fresh)
        first = tx.scalar(Q.next_sequence, id=queue_id, n=n) - n + 1
        ids = new_message_ids(n)
        sender, visible_at = queue.sender_id, now + ms(row["delay_seconds"])
        held = _groups_with_messages(tx, queue_id, list(dict.fromkeys(groups[at] for at in fresh)))
        values = {"queue_id": queue_id, "sender_id": sender, "sent_at": now, "visible_at": visible_at}
        entries = {"queue_id": queue_id, "created_at": now}
        for i, at in enumerate(fresh):
            p, group, (scope, dedup), sequence, message_id = prepared[at], groups[at], keys[at], first + i, ids[i]
            is_head = group not in held  # the first of a group that held no message
            held.add(group)
            row_values: dict[str, Any] = {
                "message_id": message_id,
                "body": p.body,
                "attributes": attributes_json(p.attributes, p.trace_header),
            }
            row_values |= {"group_id": group, "dedup_id": dedup, "sequence_number": sequence, "is_head": int(is_head)}
            values.update((Q.PER_ROW[name][i], value) for name, value in row_values.items())
            row_entries = {"scope": scope, "dedup_id": dedup, "message_id": message_id, "sequence_number": sequence}
            entries.update((Q.PER_ROW[name][i], value) for name, value in row_entries.items())
            results[at] = SendResult((message_id, p.body, p.attributes, sequence_text(sequence), p.entry_id))
        tx.run_bound(Q.INSERT_FIFO_ROWS[n], values)
        tx.run_bound(Q.PUT_DEDUP_ROWS[n], entries)
        if history.kept(tx, now):
            history.add(tx, Q.COUNT_SENT, queue_id, now, sent=n, bytes_sent=sum(prepared[at].size for at in fresh))
    for at in repeats:  # deduplicated: the first message's id and sequence number
        p, first_sent = prepared[at], known[keys[at]]
        if isinstance(first_sent, int):  # sent by this batch
            message_id, sequence = ids[first_sent], first + first_sent
        else:
            message_id, sequence = first_sent
        results[at] = SendResult((message_id, p.body, p.attributes, sequence_text(sequence), p.entry_id))
    return results


def _insert_fifo_one(queue: QueueContext, tx: Tx, row, p: Prepared, key: tuple[str, str], now: int, window_start: int) -> SendResult:
    """_insert_fifo for one message in three statements, where a batch's way takes five: its
    deduplication entry is written by the look-up itself (none when the window holds the key),
    and its INSERT finds whether it heads its group."""
    queue_id = row["id"]
    scope, dedup = key
    message_id = new_message_id()
    params = dict(queue_id=queue_id, scope=scope, dedup_id=dedup, window_start=window_start)
    sequence = tx.scalar(Q.put_new_dedup, **params, message_id=message_id, now=now)
    if sequence is None:  # deduplicated: the first message's id and sequence number
        seen = tx.one(Q.find_dedup, **params)
        keep_deduplicating_from(tx, queue_id, scope, dedup, seen, now)
        message_id, sequence = seen["message_id"], seen["sequence_number"]
    else:
        tx.scalar(Q.next_sequence, id=queue_id, n=1)
        attributes = attributes_json(p.attributes, p.trace_header)
        visible_at = now + ms(row["delay_seconds"])
        tx.run(
            Q.insert_fifo_message,
            queue_id=queue_id,
            message_id=message_id,
            body=p.body,
            attributes=attributes,
            sender_id=queue.sender_id,
            sent_at=now,
            visible_at=visible_at,
            group_id=p.group_id,
            dedup_id=dedup,
            sequence_number=sequence,
        )
        history.count(tx, Q.COUNT_SENT, queue_id, now, sent=1, bytes_sent=p.size)
    return SendResult((message_id, p.body, p.attributes, sequence_text(sequence), p.entry_id))


def _dedup_entries(tx: Tx, queue_id: int, keys: list[tuple[str, str]], window_start: int) -> list[tuple[tuple[str, str], Any]]:
    """The window's deduplication entries of a batch's (scope, deduplication id) keys, in one
    look-up (a JSON array of them)."""
    found = tx.all(Q.find_dedups, queue_id=queue_id, keys=json.dumps(keys), window_start=window_start)
    return [((seen["scope"], seen["dedup_id"]), seen) for seen in found]


def _groups_with_messages(tx: Tx, queue_id: int, groups: list) -> set[str]:
    """Which of these groups hold messages, at once (one at a time for one group)."""
    if len(groups) == 1:
        return set() if tx.one(Q.group_has_messages, queue_id=queue_id, group_id=groups[0]) is None else set(groups)
    return {r["value"] for r in tx.all(Q.groups_with_messages, queue_id=queue_id, groups=json.dumps(groups))}


def _plain_entries(entry_ids: list, bodies: list) -> _Plain | None:
    """The batch's messages when every body is valid (_insert_plain's kind), else None: the
    general path then checks each entry and reports each one's error. bodies: the batch's
    members when it is plain (B.Batch.members_of: entries of an Id and a MessageBody alone,
    plain dicts, all text)."""
    total = V.message_bodies(bodies)
    if total is None:
        return None
    return _new_tuple(_Plain, (entry_ids, bodies, total))


class _Plain(NamedTuple):
    """A batch's messages of a body alone: their entry Ids, bodies, and the bodies' total size
    in UTF-8 bytes."""

    entry_ids: list
    bodies: list
    total: int


def _prepared_plain(plain: _Plain) -> list[Prepared]:
    """_plain_entries' messages as _insert takes them (they passed every check _prepare makes)."""
    return [Prepared(body, body.encode(), {}, None, None, None, entry_id) for entry_id, body in zip(plain.entry_ids, plain.bodies)]
