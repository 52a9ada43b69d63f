"""Replay: send a queue's archived messages again (Database.replay, `sqsqlite replay`).

The archived messages deleted in a time range (and matching a filter) are sent again to their
queue or another, in their queue's send order (sent_at, then position), with their bodies,
message attributes and trace header; each gets a new message id and carries its original one as
the message attribute D.REPLAY_ORIGINAL_ID_ATTRIBUTE (a message with ten attributes already,
SQS's most, goes without it: the result lists it). To a FIFO queue each message keeps its group,
so each group's order holds, with a new deduplication id of the replay run's own.

A replay sends up to D.REPLAY_BATCH messages a transaction, which also records how far it got
(schema.replay_runs, keyed by its arguments): cut short by a crash or a kill, the same replay run
again continues after the last message it committed, sending nothing twice and missing none. It
replays the rows archived when it first began; run again once finished, it sends nothing, unless
``again``: then it sends those same rows once more (not the copies it sent, archived since).
"""

from __future__ import annotations

import bisect
import hashlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .. import defaults as D
from .. import queries as Q
from ..errors import InvalidParameterValue
from . import sending
from .archive import ArchivedMessage, ArchiveFilter
from .context import QueueContext
from .rules import queue_row

_FETCH = 500  # archive rows a dry run reads a statement


@dataclass
class ReplayResult:
    """What a replay did. ``sent``: messages this call sent; ``sent_before``: those earlier runs
    of the same replay sent (it resumed); ``pending``: what a dry run would send;
    ``without_original_id``: the original ids of messages sent without the attribute that
    carries it (they had ten attributes); ``replayed``: (original id, new id) of each sent here."""

    queue_name: str
    target_name: str
    dry_run: bool = False
    sent: int = 0
    sent_before: int = 0
    finished_before: bool = False
    pending: list[ArchivedMessage] = field(default_factory=list)
    without_original_id: list[str] = field(default_factory=list)
    replayed: list[tuple[str, str]] = field(default_factory=list)


def run_key(source: QueueContext, target: QueueContext, f: ArchiveFilter) -> str:
    """The replay's identity: the same arguments, the same run (which resumes)."""
    parts = [source.account_id, source.region, source.name, target.account_id, target.region, target.name, f.since, f.until]
    parts += [sorted(f.message_ids), f.group_id, list(f.where) if f.where else None]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def replay(
    source: QueueContext,
    target: QueueContext,
    f: ArchiveFilter,
    *,
    dry_run: bool = False,
    again: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> ReplayResult:
    """Send ``source``'s archived messages matching ``f`` to ``target`` (see the module);
    ``progress(sent so far, total)`` after each transaction."""
    store = source.store
    result = ReplayResult(source.name, target.name, dry_run=dry_run)
    key = run_key(source, target, f)
    with store.write() as tx:
        source_id = queue_row(tx, source)["id"]
        target_row = queue_row(tx, target)
        run = tx.one(Q.REPLAY_RUN, key=key)
        if run is None:
            max_id = tx.scalar(Q.ARCHIVE_MAX_ID)
            if not dry_run:
                tx.run(
                    Q.INSERT_REPLAY_RUN, key=key, queue_id=source_id, target=target.name, max_id=max_id, nonce=_nonce(), now=source.now()
                )
            cursor = (-1, -1, -1)
        elif again and run["done"]:
            # The same rows from the start (a dry run: what that would send). Not a new max_id:
            # the copies the first run sent, deleted since, are archived too and would be sent
            # again with the rest. A new nonce: new deduplication ids.
            max_id, cursor = run["max_id"], (-1, -1, -1)
            if not dry_run:
                tx.run(Q.RESTART_REPLAY_RUN, key=key, nonce=_nonce(), now=source.now())
        else:
            max_id = run["max_id"]
            cursor = (run["last_sent_at"], run["last_position"], run["last_id"])
            result.sent_before, result.finished_before = run["sent"], bool(run["done"])
    if result.finished_before:
        return result
    # The rows to replay in order, read once and outside the writers' lock (their order is a
    # sort no index serves): the same on every read, for the rows up to max_id are all there is
    # and none comes later (ids are never reused); only pruning takes some away.
    order = _order(source, source_id, f, max_id)
    if dry_run:
        result.pending = [ArchivedMessage.from_row(r) for r in _fetch(source, order[bisect.bisect_right(order, cursor) :])]
        return result
    total, fifo = len(order) - bisect.bisect_right(order, cursor), bool(target_row["fifo"])
    while True:
        group = store.begin_transaction()
        ok = False
        try:
            with store.write() as tx:
                # Read again under the writers' lock: another process running the same replay
                # (or this one, resumed meanwhile) may have gone on.
                run = tx.one(Q.REPLAY_RUN, key=key)
                if run is None or run["done"]:
                    return result
                cursor, nonce = (run["last_sent_at"], run["last_position"], run["last_id"]), run["nonce"]
                at = bisect.bisect_right(order, cursor)
                chunk = order[at : at + D.REPLAY_BATCH]
                found = {r["id"]: r for r in tx.all(Q.REPLAY_ROWS, ids=json.dumps([k[2] for k in chunk]))} if chunk else {}
            batch = [found[k[2]] for k in chunk if k[2] in found]  # a row pruned meanwhile is gone
            if chunk:
                cursor = chunk[-1]
            done = at + len(chunk) >= len(order)
            sent = _send(target, nonce, batch, fifo, result) if batch else []
            with store.write() as tx:
                tx.run(Q.REPLAY_PROGRESS, key=key, **_after(cursor), n=len(sent), done=int(done), now=source.now())
            ok = True
        finally:
            store.end_transaction(group, ok)
        result.sent += len(sent)
        result.replayed.extend(sent)
        if progress is not None:
            progress(result.sent, total)
        if done:
            return result


def _nonce() -> str:
    return secrets.token_hex(8)


def _after(cursor: tuple[int, int, int]) -> dict[str, int]:
    return dict(zip(("last_sent_at", "last_position", "last_id"), cursor))


def _order(source: QueueContext, queue_id: int, f: ArchiveFilter, max_id: int) -> list[tuple[int, int, int]]:
    """The (sent_at, position, id) of each row ``f`` takes, in replay order."""
    with source.store.read() as tx:
        rows = tx.all(Q.REPLAY_ORDER, queue_id=queue_id, since=f.since, until=f.until, max_id=max_id)
    return [(r["sent_at"], r["position"], r["id"]) for r in rows if f.matches(r)]


def _fetch(source: QueueContext, keys: list[tuple[int, int, int]]) -> list[Any]:
    """The rows of ``keys``, in their order (a dry run's list)."""
    out: list[Any] = []
    with source.store.read() as tx:
        for i in range(0, len(keys), _FETCH):
            part = keys[i : i + _FETCH]
            found = {r["id"]: r for r in tx.all(Q.REPLAY_ROWS, ids=json.dumps([k[2] for k in part]))}
            out.extend(found[k[2]] for k in part if k[2] in found)
    return out


def _send(target: QueueContext, nonce: str, rows: list[Any], fifo: bool, result: ReplayResult) -> list[tuple[str, str]]:
    """Send ``rows`` again as one batch (in the caller's transaction); (original, new) ids."""
    entries = []
    for i, r in enumerate(rows):
        m = ArchivedMessage.from_row(r)
        attributes: dict[str, Any] = {name: a.to_sqs() for name, a in m.message_attributes.items()}
        if len(attributes) < D.MAX_MESSAGE_ATTRIBUTES:
            attributes[D.REPLAY_ORIGINAL_ID_ATTRIBUTE] = {"DataType": "String", "StringValue": m.message_id}
        else:
            result.without_original_id.append(m.message_id)
        entry: dict[str, Any] = {"Id": str(i), "MessageBody": m.body}
        if attributes:
            entry["MessageAttributes"] = attributes
        if m.message_group_id is not None:
            entry["MessageGroupId"] = m.message_group_id
        if fifo:
            # The run's own: a resumed run sends the ids it would have (a copy it sent before the
            # crash is dropped as a duplicate), a run again new ones (not dropped as this one's).
            entry["MessageDeduplicationId"] = f"replay-{nonce}-{m.archive_id}"
        if m.aws_trace_header is not None:
            entry["MessageSystemAttributes"] = {"AWSTraceHeader": {"DataType": "String", "StringValue": m.aws_trace_header}}
        entries.append(entry)
    # A batch refused whole (a FIFO target and a message of no group) raises its own error.
    out = sending.send_message_batch(target, entries)
    if out.failed:
        first = out.failed[0]
        original = rows[int(first.id)]["message_id"]
        raise InvalidParameterValue(
            f"Replaying message {original} failed: {first.code}: {first.message}",
            f"Nothing of this batch was sent; the replay stopped after {result.sent} messages and resumes here when run again.",
        )
    return [(rows[int(s.id)]["message_id"], s.message_id) for s in out.successful]
