"""CloudWatch's per-minute counters of each queue, kept in the file (the queue_history table),
when the file's history is on: its retention set (meta), off by default. Off, a counted
operation pays one dictionary look-up (the setting cached with the connection's queue rows,
Tx.meta_setting) and writes, samples and prunes nothing.

Each operation adds what it did to its queue's row of the current minute with one UPSERT, in its
own transaction: a rollback or a crash takes the count with the work. The backlog gauges
(visible, in flight, delayed, oldest age) are sampled once a minute: the first counted write of a
minute on a connection samples them, and the row keeps the first sample any connection wrote.
Once a minute a connection also prunes rows past the history's retention, a bounded number per
transaction (D.HISTORY_PRUNE_ROWS), their counters folded into the queue's totals row (minute 0)
so that totals never go down.
"""

from __future__ import annotations

from typing import Any

from .. import defaults as D
from .. import queries as Q
from ..store import Tx
from .rules import counts, retention_cutoff

MINUTE = D.HISTORY_MINUTE_MS
_SETTING = ("meta", D.HISTORY_RETENTION_META_KEY)  # the connection's cache's key (Tx.meta_setting)


def minute_of(now: int) -> int:
    """The start of ``now``'s minute, epoch milliseconds."""
    return now - now % MINUTE


def count(tx: Tx, sql: Any, queue_id: int, now: int, **values: int) -> None:
    """Add ``values`` (by the names of ``sql``'s columns, one of Q.COUNT_*) to the queue's row of
    ``now``'s minute; then, at a connection's first count of the minute for the queue, sample its
    backlog, and at its first of the minute at all, prune."""
    if tx.meta_setting(_SETTING, now, D.HISTORY_SETTING_RECHECK_MS, seconds_of):  # kept(), one call fewer: off, this is all
        add(tx, sql, queue_id, now, **values)


def add(tx: Tx, sql: Any, queue_id: int, now: int, **values: int) -> None:
    """count() once kept() said the history is on (for a caller with counts to work out first)."""
    minute = now - now % MINUTE
    values["minute"] = minute
    values["queue_id"] = queue_id
    tx.run_bound(sql, values)
    state = tx.state
    key = ("sampled", queue_id)
    if state.get(key) != minute:
        state[key] = minute
        sample(tx, queue_id, minute, now)
        if state.get("history_pruned") != minute:
            state["history_pruned"] = minute
            prune(tx, now, D.HISTORY_PRUNE_ROWS)


def sample(tx: Tx, queue_id: int, minute: int, now: int) -> None:
    """Write the queue's backlog gauges into its row of the minute, unless a sample is there.
    Exact counts over ix_messages_visible: on a queue of a million messages about as long as a
    `sqsqlite stats` (0.1 s), once a minute per queue, by the first connection to write to it
    in the minute (the others find the sample and count nothing)."""
    if tx.scalar(Q.backlog_sampled, minute=minute, queue_id=queue_id) is not None:
        return
    row = tx.one(Q.queue_by_id, id=queue_id)
    if row is None:
        return
    visible, in_flight, delayed = counts(tx, row, now)
    oldest = tx.scalar(Q.oldest_sent, queue_id=queue_id, cutoff=retention_cutoff(row, now))
    age = None if oldest is None else max(0, (now - oldest) // 1000)
    tx.run(Q.sample_backlog, minute=minute, queue_id=queue_id, visible=visible, in_flight=in_flight, delayed=delayed, oldest_age=age)


def kept(tx: Tx, now: int) -> int:
    """In a write transaction: the history's retention in seconds, 0 when it is off; read
    from the connection's cache (a write seeing another connection's change: Tx.meta_setting)."""
    return tx.meta_setting(_SETTING, now, D.HISTORY_SETTING_RECHECK_MS, seconds_of)


def seconds_of(value: bytes | None) -> int:
    """The retention the meta table's value says: absent or 0, off."""
    return 0 if value is None else max(0, int(value))


def retention(tx: Tx) -> int:
    """The history's retention in seconds, 0 when it is off (no setting: off)."""
    value = tx.scalar(Q.get_meta, key=D.HISTORY_RETENTION_META_KEY)
    return seconds_of(None if value is None else bytes(value))


def prune(tx: Tx, now: int, n: int) -> int:
    """Remove up to ``n`` of the oldest rows past the retention (minutes that ended at or
    before now - retention: none of their time is within it), their counters added to their
    queues' totals; how many. Off, none: the rows kept stay until it is on again, or the
    file is downgraded past migration 0011."""
    seconds = retention(tx)
    if not seconds:
        return 0
    before = now - seconds * 1000 - MINUTE + 1
    tx.run(Q.fold_history, before=before, n=n)
    return tx.run(Q.prune_history, before=before, n=n)
