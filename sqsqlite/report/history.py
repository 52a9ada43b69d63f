"""The report's history figures: the per-minute counters the file keeps (docs/howto/history.md), over
a window, per queue and step, with rates, trends, a drain forecast and spikes.

Both the Spark job and the oracle reduce the minute rows to the same integers (per queue and
step, and per queue over the window's last two hours); :func:`finish` then derives everything
else from those in plain Python, so the two agree exactly. Definitions, for a window
[``since``, ``until``) (epoch ms):

- The *step* is a minute for a window of up to 3 hours, else an hour. Steps start at ``since``
  rounded down to a whole step (so the first step is whole), and every minute row whose minute
  starts in [that, ``until``) counts in the step it starts in.
- Per step: the sums of sent, received (first receives), redelivered, deleted, dead-lettered,
  expired, purged, moved and moved in; and the *backlog* (visible + in flight + delayed) and
  *oldest age* (seconds) of the step's newest backlog sample (none when no minute of the step
  has one).
- *Arrivals* are sent + moved in; *completions* are deleted; *departures* are deleted +
  dead-lettered + expired + purged + moved (everything that leaves the backlog).
- *Last hour*: the minutes that start in [until - 1 h, until); *hour before*: in
  [until - 2 h, until - 1 h), whatever the window: a window shorter than two hours is read
  from until - 2 h for them (the rows before the window count in no step). The *trend* of arrivals (completions) is the last hour's minus
  the hour before's, a change per hour.
- *Drain forecast*, at the last hour's net rate: ``net = departures - arrivals`` of the last
  hour, ``backlog`` the newest sample of the window. No sample: unknown. Backlog 0: empty.
  ``net > 0``: drains in ``ceil(backlog * 60 / net)`` minutes. ``net = 0``: flat. ``net < 0``:
  grows by ``-net`` an hour.
- *Spikes*: for dead-lettered and redelivered, a step whose count is at least SPIKE_MIN and
  more than SPIKE_FACTOR times the queue's usual count, the lower median over all the window's
  steps (steps without a row count 0).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any, NamedTuple

from .. import defaults as D

MINUTE_MS = 60_000
HOUR_MS = 3_600_000
MINUTE_STEPS_UP_TO_MS = 3 * HOUR_MS  # a window this long or shorter is shown by minute
DEFAULT_WINDOW_MS = 24 * HOUR_MS
SPIKE_MIN = 10
SPIKE_FACTOR = 3


class HistoryRow(NamedTuple):
    """A minute row of queue_history, as the report reads it (HISTORY_COLUMNS)."""

    minute: int
    queue_id: int
    sent: int
    received: int
    redelivered: int
    deleted: int
    dead_lettered: int
    expired: int
    purged: int
    moved: int
    moved_in: int
    visible: int | None  # the backlog sample's gauges: None in a minute without one
    in_flight: int | None
    delayed: int | None
    oldest_age: int | None


class Sample(NamedTuple):
    """A step's newest backlog sample; ordered by minute, as Spark's max() of its struct."""

    minute: int
    backlog: int
    oldest_age: int | None


class StepRow(NamedTuple):
    """A queue's step, reduced from its minute rows: the STEP_COUNTERS' sums and its newest sample."""

    queue_id: int
    at: int  # the step's start
    sent: int
    received: int
    redelivered: int
    deleted: int
    dead_lettered: int
    expired: int
    purged: int
    moved: int
    moved_in: int
    sample: Sample | None


class HourRow(NamedTuple):
    """A queue's last hour and the hour before, reduced from its minute rows."""

    queue_id: int
    arrivals_last_hour: int
    completions_last_hour: int
    departures_last_hour: int
    arrivals_hour_before: int
    completions_hour_before: int


# The per-step sums, in the order of the table's columns (a step row's, between its key and sample).
STEP_COUNTERS: tuple[str, ...] = StepRow._fields[2:-1]
HISTORY_COLUMNS = ", ".join(HistoryRow._fields)
HOUR_FIGURES: tuple[str, ...] = HourRow._fields[1:]
_COUNTERS_OF = attrgetter(*STEP_COUNTERS)  # a minute row's counters, in STEP_COUNTERS' order


@dataclass
class Step:
    start_ms: int
    sent: int = 0
    received: int = 0
    redelivered: int = 0
    deleted: int = 0
    dead_lettered: int = 0
    expired: int = 0
    purged: int = 0
    moved: int = 0
    moved_in: int = 0
    backlog: int | None = None
    oldest_age_s: int | None = None


@dataclass
class Spike:
    counter: str  # dead_lettered or redelivered
    step_ms: int
    count: int
    usual: int


@dataclass
class QueueHistory:
    queue: str
    arrivals: int = 0  # over the window
    completions: int = 0
    departures: int = 0
    arrivals_last_hour: int = 0
    completions_last_hour: int = 0
    departures_last_hour: int = 0
    arrivals_trend: int = 0  # the last hour's minus the hour before's
    completions_trend: int = 0
    backlog: int | None = None  # the newest sample of the window
    oldest_age_s: int | None = None
    forecast: str = "unknown"  # unknown, empty, drains, flat, grows
    drain_minutes: int | None = None
    growth_per_hour: int = 0
    spikes: list[Spike] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


def step_for(since_ms: int, until_ms: int) -> int:
    return MINUTE_MS if until_ms - since_ms <= MINUTE_STEPS_UP_TO_MS else HOUR_MS


def first_step(since_ms: int, step_ms: int) -> int:
    return since_ms - since_ms % step_ms


def window_start(since_ms: int, until_ms: int) -> int:
    """Where the rows read begin: ``since`` rounded down to a whole step (never minute 0, the
    totals of pruned minutes)."""
    return max(first_step(since_ms, step_for(since_ms, until_ms)), 1)


def rows_start(since_ms: int, until_ms: int) -> int:
    """Where the rows read begin: the window's (window_start), or two hours before ``until`` if
    that is earlier, for the last hour's and the hour before's figures."""
    return max(min(window_start(since_ms, until_ms), until_ms - 2 * HOUR_MS), 1)


def forecast(backlog: int | None, net: int) -> tuple[str, int | None, int]:
    """(kind, minutes to drain, growth an hour) from the newest backlog and the last hour's net
    departures (departures - arrivals)."""
    if backlog is None:
        return "unknown", None, 0
    if backlog == 0:
        return "empty", None, 0
    if net > 0:
        return "drains", -(-backlog * 60 // net), 0
    if net == 0:
        return "flat", None, 0
    return "grows", None, -net


def spikes(counter: str, steps: list[Step]) -> list[Spike]:
    values = [getattr(s, counter) for s in steps]
    if not values:
        return []
    usual = sorted(values)[(len(values) - 1) // 2]
    return [Spike(counter, s.start_ms, v, usual) for s, v in zip(steps, values) if v >= SPIKE_MIN and v > SPIKE_FACTOR * usual]


def finish(
    names: dict[int, str],
    step_rows: list[StepRow],
    hour_rows: list[HourRow],
    since_ms: int,
    until_ms: int,
) -> list[QueueHistory]:
    """Every figure from the reduced rows, each queue's steps and hours. Queues with a row in
    the window only, by name."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    n = -(-(until_ms - start) // step)
    by_queue: dict[int, dict[int, StepRow]] = {}
    for r in step_rows:
        by_queue.setdefault(r.queue_id, {})[r.at] = r
    hours = {r.queue_id: r for r in hour_rows}
    out = []
    for queue_id, rows in by_queue.items():
        if queue_id not in names:
            continue  # a queue deleted since
        h = QueueHistory(names[queue_id])
        newest: Sample | None = None
        for k in range(n):
            s = Step(start + k * step)
            found = rows.get(s.start_ms)
            if found is not None:
                for name in STEP_COUNTERS:
                    setattr(s, name, int(getattr(found, name)))
                sample = found.sample
                if sample is not None:
                    s.backlog, s.oldest_age_s = _backlog(sample)
                    newest = sample
            h.steps.append(s)
        h.arrivals = sum(s.sent + s.moved_in for s in h.steps)
        h.completions = sum(s.deleted for s in h.steps)
        h.departures = sum(s.deleted + s.dead_lettered + s.expired + s.purged + s.moved for s in h.steps)
        last = hours.get(queue_id) or HourRow(queue_id, **dict.fromkeys(HOUR_FIGURES, 0))
        h.arrivals_last_hour, h.completions_last_hour = int(last.arrivals_last_hour), int(last.completions_last_hour)
        h.departures_last_hour = int(last.departures_last_hour)
        h.arrivals_trend = h.arrivals_last_hour - int(last.arrivals_hour_before)
        h.completions_trend = h.completions_last_hour - int(last.completions_hour_before)
        if newest is not None:
            h.backlog, h.oldest_age_s = _backlog(newest)
        h.forecast, h.drain_minutes, h.growth_per_hour = forecast(h.backlog, h.departures_last_hour - h.arrivals_last_hour)
        h.spikes = spikes("dead_lettered", h.steps) + spikes("redelivered", h.steps)
        out.append(h)
    return sorted(out, key=lambda q: q.queue)


def _backlog(sample: Sample) -> tuple[int, int | None]:
    return int(sample.backlog), None if sample.oldest_age is None else int(sample.oldest_age)


def reduce(rows: list[HistoryRow], since_ms: int, until_ms: int) -> tuple[list[StepRow], list[HourRow]]:
    """The oracle's reduction of minute rows (minute in [rows_start, until)) to finish's step
    rows and hour rows, in plain Python."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    low = window_start(since_ms, until_ms)
    sums: dict[tuple[int, int], dict[str, int]] = {}
    samples: dict[tuple[int, int], Sample] = {}
    hours: dict[int, dict[str, int]] = {}
    for r in rows:
        minute = r.minute
        if minute >= low:  # before the window: read for the hour figures only
            key = (r.queue_id, start + (minute - start) // step * step)
            acc = sums.get(key)
            if acc is None:
                acc = sums[key] = dict.fromkeys(STEP_COUNTERS, 0)
            for name, count in zip(STEP_COUNTERS, _COUNTERS_OF(r)):
                acc[name] += count
            if r.visible is not None:
                assert r.in_flight is not None and r.delayed is not None  # sampled together
                sample = Sample(minute, r.visible + r.in_flight + r.delayed, r.oldest_age)
                newest = samples.get(key)
                if newest is None or sample > newest:
                    samples[key] = sample
        hour = hours.get(r.queue_id)
        if hour is None:
            hour = hours[r.queue_id] = dict.fromkeys(HOUR_FIGURES, 0)
        if minute >= until_ms - HOUR_MS:
            hour["arrivals_last_hour"] += r.sent + r.moved_in
            hour["completions_last_hour"] += r.deleted
            hour["departures_last_hour"] += r.deleted + r.dead_lettered + r.expired + r.purged + r.moved
        elif minute >= until_ms - 2 * HOUR_MS:
            hour["arrivals_hour_before"] += r.sent + r.moved_in
            hour["completions_hour_before"] += r.deleted
    step_rows = [StepRow(queue_id, at, **acc, sample=samples.get((queue_id, at))) for (queue_id, at), acc in sums.items()]
    hour_rows = [HourRow(queue_id, **figures) for queue_id, figures in hours.items()]
    return step_rows, hour_rows


def _history_row(cursor: sqlite3.Cursor, values: tuple[Any, ...]) -> HistoryRow:
    return HistoryRow(*values)  # the SELECT's columns are HistoryRow's fields, in order


def read_rows(conn: sqlite3.Connection, since_ms: int, until_ms: int) -> list[HistoryRow]:
    """The minute rows of the window, and of the two hours before ``until`` (rows_start);
    minute 0, the totals of pruned minutes, never."""
    cursor = conn.cursor()
    cursor.row_factory = _history_row
    window = {"low": rows_start(since_ms, until_ms), "until": until_ms}
    return cursor.execute(f"SELECT {HISTORY_COLUMNS} FROM queue_history WHERE minute >= :low AND minute < :until", window).fetchall()


def oracle(conn: sqlite3.Connection, names: dict[int, str], since_ms: int, until_ms: int) -> list[QueueHistory]:
    step_rows, hour_rows = reduce(read_rows(conn, since_ms, until_ms), since_ms, until_ms)
    return finish(names, step_rows, hour_rows, since_ms, until_ms)


def spark_rows(F, frame, since_ms: int, until_ms: int) -> tuple[list[StepRow], list[HourRow]]:
    """Spark's reduction of the minute rows (a DataFrame of HISTORY_COLUMNS) to finish's rows."""
    step = step_for(since_ms, until_ms)
    start = first_step(since_ms, step)
    rows = frame.where((F.col("minute") >= rows_start(since_ms, until_ms)) & (F.col("minute") < until_ms))
    in_window = rows.where(F.col("minute") >= window_start(since_ms, until_ms))
    at = (F.lit(start) + F.floor((F.col("minute") - F.lit(start)) / F.lit(step)).cast("long") * F.lit(step)).alias("at")
    backlog = F.col("visible") + F.col("in_flight") + F.col("delayed")
    sample = F.when(F.col("visible").isNotNull(), F.struct(F.col("minute"), backlog.alias("backlog"), F.col("oldest_age")))
    aggs = [F.sum(c).alias(c) for c in STEP_COUNTERS] + [F.max(sample).alias("sample")]
    step_rows = [
        StepRow(
            r["queue_id"],
            r["at"],
            **{c: r[c] for c in STEP_COUNTERS},
            sample=None if r["sample"] is None else Sample(r["sample"]["minute"], r["sample"]["backlog"], r["sample"]["oldest_age"]),
        )
        for r in in_window.groupBy("queue_id", at).agg(*aggs).collect()
    ]
    arrivals = F.col("sent") + F.col("moved_in")
    departures = F.col("deleted") + F.col("dead_lettered") + F.col("expired") + F.col("purged") + F.col("moved")
    last = F.col("minute") >= F.lit(until_ms - HOUR_MS)
    before = (~last) & (F.col("minute") >= F.lit(until_ms - 2 * HOUR_MS))

    def total(cond, value):
        return F.sum(F.when(cond, value).otherwise(F.lit(0)))

    hour_rows = [
        HourRow(r["queue_id"], **{name: r[name] for name in HOUR_FIGURES})
        for r in rows.groupBy("queue_id")
        .agg(
            total(last, arrivals).alias("arrivals_last_hour"),
            total(last, F.col("deleted")).alias("completions_last_hour"),
            total(last, departures).alias("departures_last_hour"),
            total(before, arrivals).alias("arrivals_hour_before"),
            total(before, F.col("deleted")).alias("completions_hour_before"),
        )
        .collect()
    ]
    return step_rows, hour_rows


def history_retention(conn: sqlite3.Connection, schema: str = "") -> int:
    """The file's history retention in seconds from its meta table (``schema``: "src." when
    attached); 0 when the history is off (no setting), as the engine reads it."""
    master = f"{schema}sqlite_master"
    if conn.execute(f"SELECT 1 FROM {master} WHERE type = 'table' AND name = 'meta'").fetchone() is None:
        return 0  # a snapshot of the queues and messages alone: no setting, no history
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    key = {"key": D.HISTORY_RETENTION_META_KEY}
    row = cursor.execute(f"SELECT CAST(value AS INTEGER) AS seconds FROM {schema}meta WHERE key = :key", key).fetchone()
    return 0 if row is None or row["seconds"] is None else max(0, int(row["seconds"]))
