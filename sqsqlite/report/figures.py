"""The report's figures, their exact definitions, and the oracle that computes them in Python.

Every figure is an integer (counts, or milliseconds), so the Spark job and :func:`compute`
must agree exactly, field by field; ``tests/report/test_report.py`` holds them to it.

Definitions, for one instant ``as_of`` (epoch ms) and one queue with retention ``R`` seconds:

- A message is *live* when ``sent_at > as_of - R*1000``: expired rows (not yet pruned) are
  never counted. A row whose ``sent_at`` is after ``as_of`` counts too, as ``Database.stats()``
  counts it with its clock at ``as_of``: after the wall clock steps back, messages sent before
  the step carry timestamps in the future, and they are still in the queue. Their age is
  negative (the histogram's first bucket holds it).
- State of a live message (sqsqlite/schema.py): *visible* when ``visible_at <= as_of``,
  *delayed* when ``visible_at > as_of`` and ``receive_count = 0``, *in flight* when
  ``visible_at > as_of`` and ``receive_count > 0``. ``backlog`` is their sum.
- *Age* is ``as_of - sent_at``, counted from the original enqueue time, which a message keeps
  when it moves to a dead-letter queue.
- Percentiles are nearest-rank: sort the n ages ascending; the p-th percentile is the age at
  1-based rank ``ceil(p*n/100)``, computed in integers as ``(p*n + 99) // 100``. No
  interpolation, so the value is always an age some message really has.
- *Expiring within T*: live messages with ``sent_at + R*1000 <= as_of + T``.
- *Top by receive count*: live messages with ``receive_count > 0``, by receive count
  descending, then row id ascending (oldest insert first), the first ``top``.
- *Dead-letter depth* of a queue: the backlog of the queue its RedrivePolicy names (as
  ``Database.stats()`` reports it); *dead-letter sources* of a queue: the queues whose
  RedrivePolicy names it; *dead-lettered from*: live messages in the queue by the source queue
  named in their DeadLetterQueueSourceArn.
- FIFO queues: the backlog per message group, largest first (then by group id).
- Fair queues (docs/explanation/fair-queues.md), under Amazon SQS's CloudWatch names: on a standard queue, a
  *fair group* is the live messages with one group id and no sequence number; it is *noisy* when
  ``g >= FAIR_NOISY_MIN_IN_FLIGHT`` and ``100 * g > FAIR_NOISY_SHARE_PERCENT * total``, with
  ``g`` its messages in flight and ``total`` the queue's. ``noisy_groups`` counts them; the
  visible, in-flight and delayed counts and the oldest age *in quiet groups* are the queue's
  figures over its live messages outside noisy groups (a message of no group is quiet). A FIFO
  queue never has a noisy group.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import sqlite3
from dataclasses import asdict, dataclass, field
from urllib.parse import quote

from .. import defaults as D
from . import archive as A
from . import history as H
from .archive import QueueArchive
from .history import QueueHistory, history_retention

HOUR_MS = 3_600_000
DAY_MS = 24 * HOUR_MS
PERCENTILES = (50, 90, 99)

# Upper-exclusive edges of the age histogram (ms). Bucket i holds ages in [edge[i-1], edge[i]).
AGE_EDGES_MS = (60_000, 300_000, 900_000, HOUR_MS, 6 * HOUR_MS, DAY_MS, 4 * DAY_MS)
AGE_LABELS = ("<1m", "1-5m", "5-15m", "15m-1h", "1-6h", "6-24h", "1-4d", ">=4d")


def nearest_rank(p: int, n: int) -> int:
    """1-based rank of the p-th percentile among n sorted values (n > 0)."""
    return (p * n + 99) // 100


def age_bucket(age_ms: int) -> int:
    return bisect.bisect_right(AGE_EDGES_MS, age_ms)


@dataclass
class TopMessage:
    message_id: str
    receive_count: int
    age_ms: int
    state: str


@dataclass
class GroupFigures:
    group_id: str
    visible: int
    in_flight: int
    delayed: int
    backlog: int
    oldest_age_ms: int


@dataclass
class QueueFigures:
    queue: str
    fifo: bool
    retention_seconds: int
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    backlog: int = 0
    dead_letter_queue: str | None = None
    dead_letter_depth: int | None = None
    dead_letter_sources: list[str] = field(default_factory=list)
    dead_lettered_from: dict[str, int] = field(default_factory=dict)
    oldest_age_ms: int | None = None
    age_p50_ms: int | None = None
    age_p90_ms: int | None = None
    age_p99_ms: int | None = None
    expiring_1h: int = 0
    expiring_24h: int = 0
    age_histogram: list[int] = field(default_factory=lambda: [0] * len(AGE_LABELS))
    receive_counts: dict[int, int] = field(default_factory=dict)
    top_received: list[TopMessage] = field(default_factory=list)
    groups: list[GroupFigures] = field(default_factory=list)
    # Fair queues, as Amazon SQS's ApproximateNumberOfNoisyGroups,
    # ApproximateNumberOfMessages{Visible,NotVisible,Delayed}InQuietGroups and
    # ApproximateAgeOfOldestMessageInQuietGroups (in ms here, like every age in the report).
    noisy_groups: int = 0
    visible_in_quiet_groups: int = 0
    in_flight_in_quiet_groups: int = 0
    delayed_in_quiet_groups: int = 0
    oldest_age_in_quiet_groups_ms: int | None = None


def noisy(in_flight_by_group: dict[str, int], total_in_flight: int) -> set[str]:
    """The noisy groups of one queue, by the claim's rule (sqsqlite/defaults.py)."""
    return {
        g
        for g, n in in_flight_by_group.items()
        if n >= D.FAIR_NOISY_MIN_IN_FLIGHT and 100 * n > D.FAIR_NOISY_SHARE_PERCENT * total_in_flight
    }


@dataclass
class Report:
    database: str
    as_of_ms: int
    top: int
    queues: list[QueueFigures]
    # The per-minute history over [history_since_ms, history_until_ms), by step (history.py).
    history_since_ms: int = 0
    history_until_ms: int = 0
    history_step_ms: int = 0
    history: list[QueueHistory] = field(default_factory=list)
    # The file's history retention in seconds; 0: the history is off, none is kept.
    history_retention_s: int = 0
    # The archives' figures over the history's window, by hour (archive.py); how many queues
    # keep an archive (0 also for a file older than the archive: no section then).
    archive: list[QueueArchive] = field(default_factory=list)
    archive_queues: int = 0

    def to_dict(self) -> dict:
        d = asdict(self)
        for q in d["queues"]:
            # JSON object keys are strings; keep the histogram's keys numeric in order instead.
            q["receive_counts"] = [{"receive_count": k, "messages": v} for k, v in sorted(q["receive_counts"].items())]
        d["age_buckets"] = list(AGE_LABELS)
        return d


def new_queues(rows: list[dict]) -> dict[str, QueueFigures]:
    """Every queue's figures before any message is counted, by name: identity and redrive
    wiring (each queue's dead-letter sources found in one pass, not one pass a queue)."""
    sources: dict[str, list[str]] = {}
    for r in rows:
        if r["dead_letter_target"] is not None:
            sources.setdefault(r["dead_letter_target"], []).append(r["name"])
    return {
        row["name"]: QueueFigures(
            queue=row["name"],
            fifo=bool(row["fifo"]),
            retention_seconds=int(row["retention_period"]),
            dead_letter_queue=row["dead_letter_target"],
            dead_letter_sources=sorted(sources.get(row["name"], ())),
        )
        for row in rows
    }


def finish(queues: dict[str, QueueFigures]) -> list[QueueFigures]:
    """Fill the figures that depend on other queues (dead-letter depth); order by name."""
    for f in queues.values():
        f.backlog = f.visible + f.in_flight + f.delayed
    for f in queues.values():
        if f.dead_letter_queue is not None and f.dead_letter_queue in queues:
            f.dead_letter_depth = queues[f.dead_letter_queue].backlog
    return [queues[name] for name in sorted(queues)]


def source_name(arn: str) -> str:
    return arn.rsplit(":", 1)[-1]


_STATE_AT = {"visible": 0, "in_flight": 1, "delayed": 2}

QUEUE_COLUMNS = "id, name, fifo, retention_period, dead_letter_target"
MESSAGE_COLUMNS = "id, queue_id, message_id, sent_at, visible_at, receive_count, group_id, sequence_number, dead_letter_source_arn"


def compute(path: str, as_of_ms: int, top: int = 5, history_since_ms: int | None = None, history_until_ms: int | None = None) -> Report:
    """The oracle: every figure computed in plain Python from one read transaction; the
    history's window is by default the 24 hours before ``as_of_ms``."""
    until = as_of_ms if history_until_ms is None else history_until_ms
    since = until - H.DEFAULT_WINDOW_MS if history_since_ms is None else history_since_ms
    with contextlib.closing(sqlite3.connect("file:" + quote(os.path.abspath(path)) + "?mode=ro", uri=True, isolation_level=None)) as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN")
        qrows = [dict(r) for r in conn.execute(f"SELECT {QUEUE_COLUMNS} FROM queues")]
        mrows = conn.execute(f"SELECT {MESSAGE_COLUMNS} FROM messages ORDER BY id").fetchall()
        hrows = H.read_rows(conn, since, until)
        retention = history_retention(conn)
        arows = A.read_rows(conn, since, until)
        archiving = A.archiving_queues(conn)
        conn.execute("COMMIT")
    by_id = {r["id"]: r for r in qrows}
    figs = new_queues(qrows)
    ages: dict[str, list[int]] = {name: [] for name in figs}
    tops: dict[str, list] = {name: [] for name in figs}
    groups: dict[str, dict[str, GroupFigures]] = {name: {} for name in figs}
    # Fair queues, counted as the messages go by (no list of every live message): per fair
    # group, its [visible, in_flight, delayed, oldest age]; and the oldest age of no group.
    fair: dict[str, dict[str, list[int]]] = {name: {} for name in figs}
    ungrouped_oldest: dict[str, int | None] = {name: None for name in figs}
    for m in mrows:
        qrow = by_id.get(m["queue_id"])
        if qrow is None:
            continue
        retention_ms = qrow["retention_period"] * 1000
        sent = m["sent_at"]
        if sent <= as_of_ms - retention_ms:
            continue
        f = figs[qrow["name"]]
        if m["visible_at"] <= as_of_ms:
            state = "visible"
        elif m["receive_count"] > 0:
            state = "in_flight"
        else:
            state = "delayed"
        setattr(f, state, getattr(f, state) + 1)
        age = as_of_ms - sent
        ages[f.queue].append(age)
        f.age_histogram[age_bucket(age)] += 1
        expires = sent + retention_ms
        f.expiring_1h += expires <= as_of_ms + HOUR_MS
        f.expiring_24h += expires <= as_of_ms + DAY_MS
        rc = m["receive_count"]
        f.receive_counts[rc] = f.receive_counts.get(rc, 0) + 1
        if rc > 0:
            tops[f.queue].append((-rc, m["id"], TopMessage(m["message_id"], rc, age, state)))
        if m["dead_letter_source_arn"] is not None:
            src = source_name(m["dead_letter_source_arn"])
            f.dead_lettered_from[src] = f.dead_lettered_from.get(src, 0) + 1
        fair_group = m["group_id"] if not f.fifo and m["sequence_number"] is None else None
        if fair_group is None:
            oldest = ungrouped_oldest[f.queue]
            ungrouped_oldest[f.queue] = age if oldest is None else max(oldest, age)
        else:
            counts = fair[f.queue].get(fair_group)
            if counts is None:
                counts = fair[f.queue][fair_group] = [0, 0, 0, age]
            counts[_STATE_AT[state]] += 1
            counts[3] = max(counts[3], age)
        if f.fifo and m["group_id"] is not None:
            g = groups[f.queue].get(m["group_id"])
            if g is None:
                g = groups[f.queue][m["group_id"]] = GroupFigures(m["group_id"], 0, 0, 0, 0, age)
            setattr(g, state, getattr(g, state) + 1)
            g.backlog += 1
            g.oldest_age_ms = max(g.oldest_age_ms, age)
    for name, f in figs.items():
        a = sorted(ages[name])
        if a:
            f.oldest_age_ms = a[-1]
            f.age_p50_ms, f.age_p90_ms, f.age_p99_ms = (a[nearest_rank(p, len(a)) - 1] for p in PERCENTILES)
        f.receive_counts = dict(sorted(f.receive_counts.items()))
        f.dead_lettered_from = dict(sorted(f.dead_lettered_from.items()))
        f.top_received = [t for _, _, t in sorted(tops[name], key=lambda x: (x[0], x[1]))[:top]]
        f.groups = sorted(groups[name].values(), key=lambda g: (-g.backlog, g.group_id))
        groups_counts = fair[name]
        loud = noisy({g: c[1] for g, c in groups_counts.items() if c[1]}, f.in_flight)
        f.noisy_groups = len(loud)
        quiet = [c for g, c in groups_counts.items() if g not in loud]
        f.visible_in_quiet_groups = f.visible - sum(groups_counts[g][0] for g in loud)
        f.in_flight_in_quiet_groups = f.in_flight - sum(groups_counts[g][1] for g in loud)
        f.delayed_in_quiet_groups = f.delayed - sum(groups_counts[g][2] for g in loud)
        ages_quiet = [c[3] for c in quiet]
        ungrouped = ungrouped_oldest[name]
        if ungrouped is not None:
            ages_quiet.append(ungrouped)
        f.oldest_age_in_quiet_groups_ms = max(ages_quiet, default=None)
    step_rows, hour_rows = H.reduce(hrows, since, until)
    names = {r["id"]: r["name"] for r in qrows}
    history = H.finish(names, step_rows, hour_rows, since, until)
    archived = A.finish(names, A.reduce(arows, since, until), since, until)
    return Report(str(path), as_of_ms, top, finish(figs), since, until, H.step_for(since, until), history, retention, archived, archiving)
