"""``/metrics`` in the Prometheus text format (prometheus_client).

Per queue, every figure of ``Database.stats()`` under CloudWatch's SQS metric name in snake
case, labelled ``queue_name``, read by one statement at each scrape; CloudWatch's counters
(NumberOfMessagesSent and the rest) as Prometheus counters read from the per-minute history in
the file, so every process's work counts, when the file's history is on (else only
sqsqlite_history_retention_seconds 0 says it is off); figures CloudWatch has no name for carry the
``sqsqlite_`` prefix. Plus the server's own requests: counts, errors and a latency histogram by
action. And the database file's size, free pages and WAL size (docs/explanation/reliability.md, "Disk space").
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from .. import defaults as D
from .. import space
from ..actions import MEMBERS, UNSUPPORTED

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_KNOWN = frozenset(MEMBERS) | frozenset(UNSUPPORTED) | {"Console", "Metrics", "Emulator"}


def _figure(field: str, cloudwatch: str, said: str) -> tuple[str, str, str]:
    """(QueueStats field, CloudWatch's metric name in snake case, help naming the CloudWatch one)."""
    return field, re.sub(r"(?<!^)(?=[A-Z])", "_", cloudwatch).lower(), f"{said} (CloudWatch {cloudwatch})."


# A queue whose figure is None (no messages: no age; no dead-letter queue: no depth) has no
# sample of that metric.
QUEUE_FIGURES: tuple[tuple[str, str, str], ...] = (
    _figure("visible", "ApproximateNumberOfMessagesVisible", "Messages available for retrieval"),
    _figure("in_flight", "ApproximateNumberOfMessagesNotVisible", "Messages in flight: received, visibility timeout running"),
    _figure("delayed", "ApproximateNumberOfMessagesDelayed", "Messages delayed, not yet visible"),
    _figure("oldest_age_seconds", "ApproximateAgeOfOldestMessage", "Seconds since the oldest live message was sent"),
)
# Fair queues' figures (docs/explanation/fair-queues.md).
_QUIET = "of quiet groups and of no group"
FAIR_QUEUE_FIGURES: tuple[tuple[str, str, str], ...] = (
    _figure("noisy_groups", "ApproximateNumberOfNoisyGroups", "Message groups holding a disproportionate share of the in-flight messages"),
    _figure("visible_in_quiet_groups", "ApproximateNumberOfMessagesVisibleInQuietGroups", f"Visible messages {_QUIET}"),
    _figure("in_flight_in_quiet_groups", "ApproximateNumberOfMessagesNotVisibleInQuietGroups", f"In-flight messages {_QUIET}"),
    _figure("delayed_in_quiet_groups", "ApproximateNumberOfMessagesDelayedInQuietGroups", f"Delayed messages {_QUIET}"),
    _figure(
        "oldest_age_in_quiet_groups_seconds",
        "ApproximateAgeOfOldestMessageInQuietGroups",
        "Seconds since the oldest live message of a quiet group was sent",
    ),
)


class QueueFigures(Collector):
    """Every queue's figures, read from the database at each scrape (one statement)."""

    def __init__(self, db: Any):
        self.db = db

    def collect(self) -> Iterator[GaugeMetricFamily]:
        started = time.perf_counter()
        stats = self.db.stats()
        took = time.perf_counter() - started
        for field, name, help_text in QUEUE_FIGURES + FAIR_QUEUE_FIGURES:
            family = GaugeMetricFamily(name, help_text, labels=["queue_name"])
            for s in stats:
                value = getattr(s, field, None)
                if value is not None:
                    family.add_metric([s.name], value)
            yield family
        depth = GaugeMetricFamily(
            "sqsqlite_dead_letter_queue_messages",
            "Messages in the queue's dead-letter queue, every state (no CloudWatch name: the dead-letter queue's own metrics, summed).",
            labels=["queue_name", "dead_letter_queue_name"],
        )
        for s in stats:
            if s.dead_letter_depth is not None:
                depth.add_metric([s.name, s.dead_letter_queue], s.dead_letter_depth)
        yield depth
        queues = GaugeMetricFamily("sqsqlite_queues", "Queues in the database.")
        queues.add_metric([], len(stats))
        yield queues
        figures = space.measure(self.db.store.connection(), self.db.path)
        for name, value, help_text in (
            ("sqsqlite_database_file_bytes", figures.file_bytes, "The database file's size on disk, without its WAL."),
            (
                "sqsqlite_database_free_pages",
                figures.free_pages,
                "Free pages in the database file: reused by writes, returned to the disk in the background.",
            ),
            ("sqsqlite_database_free_bytes", figures.free_bytes, "The free pages' bytes."),
            ("sqsqlite_wal_bytes", figures.wal_bytes, "The write-ahead log's size on disk."),
        ):
            family = GaugeMetricFamily(name, help_text)
            family.add_metric([], value)
            yield family
        duration = GaugeMetricFamily("sqsqlite_stats_read_seconds", "How long this scrape's read of every queue's figures took.")
        duration.add_metric([], took)
        yield duration


# CloudWatch's SQS counters kept in the file (the per-minute history), as Prometheus counters
# labelled queue_name: (metric name without _total, the history's counters it sums, help).
QUEUE_COUNTERS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("number_of_messages_sent", ("sent",), "Messages added to the queue by a send (CloudWatch NumberOfMessagesSent)."),
    (
        "number_of_messages_received",
        ("received", "redelivered"),
        "Messages returned by receives, redeliveries included (CloudWatch NumberOfMessagesReceived).",
    ),
    ("number_of_messages_deleted", ("deleted",), "Messages deleted by their receipt handle (CloudWatch NumberOfMessagesDeleted)."),
    ("number_of_empty_receives", ("empty_receives",), "Receives that returned no message (CloudWatch NumberOfEmptyReceives)."),
    ("sent_message_size_bytes", ("bytes_sent",), "Bytes of the messages sent, attributes included (CloudWatch SentMessageSize, summed)."),
    ("sqsqlite_messages_redelivered", ("redelivered",), "Messages received again after an earlier receive (no CloudWatch name)."),
    ("sqsqlite_messages_dead_lettered", ("dead_lettered",), "Messages moved to the dead-letter queue past maxReceiveCount."),
    ("sqsqlite_messages_moved_in", ("moved_in",), "Messages that arrived by a dead-letter move or a move task."),
    ("sqsqlite_messages_moved", ("moved",), "Messages moved out by a message move task."),
    ("sqsqlite_messages_expired", ("expired",), "Messages removed past their retention period (counted when removed)."),
    ("sqsqlite_messages_purged", ("purged",), "Messages removed by a purge."),
)
# Minutes this far behind the minute of the last scrape that found no write transaction open
# are taken as final: their sums are kept between scrapes, and each scrape reads only the rows
# since (a file's 14 days of 100 queues' minutes are two million rows, a second to sum). The
# margin allows for processes' clocks a minute apart.
_SETTLED_MINUTES = 2
_SETTLED_LIMIT_MS = D.HISTORY_RETENTION_MIN_SECONDS * 500


class QueueCounters(Collector):
    """Every queue's counters since the file began counting, from the database: any process's
    work, not only this server's. Rows of minutes settled are summed once and kept.

    A minute is settled by what the scrape saw, not by its age alone: a transaction counts in
    the minute of its operation (its clock read under the writers' lock) and may commit minutes
    later. Each scrape first looks whether the writers' lock is free (Store.writers_idle): if it
    is, no transaction was open at that moment, and every one still to commit counts in minutes
    from then on, so the minutes before it (less a margin) are final. While a transaction stays
    open, nothing more is settled: the rows since the last settled minute are read at each scrape
    (a minute's more for each minute it stays open) until a scrape finds the lock free, or for
    half an hour at most (_SETTLED_LIMIT_MS): a count committed later than that after its minute
    is missed.

    Pruning adds a minute's counters to its queue's totals row (minute 0) as it removes it, both
    inside what was summed: the kept sums stay right as long as a minute is summed before it is
    pruned. Minutes are pruned an hour old at the soonest (D.HISTORY_RETENTION_MIN_SECONDS), so
    after a gap of half that between scrapes (or a clock stepped back) everything is summed
    again."""

    def __init__(self, db: Any):
        self.db = db
        self.settled: dict[str, dict[str, int]] = {}
        self.settled_until = 0
        self.scraped_at: int | None = None
        self.idle_at: int | None = None  # the clock's time before the last look that found no writer

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        retention = self.db.history_retention
        yield GaugeMetricFamily(
            "sqsqlite_history_retention_seconds",
            "How long the per-minute history is kept; 0: it is off, no history is kept, and CloudWatch's counters "
            "(number_of_messages_sent_total and the rest) are left out rather than shown as zeros.",
            value=retention,
        )
        if not retention:
            self.settled, self.settled_until, self.scraped_at, self.idle_at = {}, 0, None, None
            return
        minute = D.HISTORY_MINUTE_MS
        now = self.db.now()
        if self.scraped_at is None or not 0 <= now - self.scraped_at <= D.HISTORY_RETENTION_MIN_SECONDS * 500:
            self.settled, self.settled_until, self.idle_at = {}, 0, None
        self.scraped_at = now
        if self.db.store.writers_idle(D.METRICS_WRITERS_IDLE_WAIT_SECONDS):
            self.idle_at = now  # read before the look: no count still to commit is older
        # Half the shortest retention back is settled whatever the looks found: a minute must be
        # summed before it is pruned (into the totals row, summed already), and so the rows read
        # at each scrape stay at most that many minutes'.
        until = now - now % minute - _SETTLED_LIMIT_MS
        if self.idle_at is not None:
            until = max(until, self.idle_at - self.idle_at % minute - _SETTLED_MINUTES * minute)
        if until > self.settled_until:
            for name, sums in self.db.history_totals(self.settled_until, until).items():
                kept = self.settled.setdefault(name, dict.fromkeys(sums, 0))
                for key, value in sums.items():
                    kept[key] += value
            self.settled_until = until
        live = self.db.history_totals(self.settled_until)
        names = sorted(set(self.settled) | set(live))
        for metric, keys, help_text in QUEUE_COUNTERS:
            family = CounterMetricFamily(metric, help_text, labels=["queue_name"])
            for name in names:
                old, new = self.settled.get(name, {}), live.get(name, {})
                family.add_metric([name], sum(old.get(k, 0) + new.get(k, 0) for k in keys))
            yield family


class Metrics:
    """A registry of its own per server (so two servers in one process don't share counts)."""

    def __init__(self, db: Any):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(QueueFigures(db))
        self.registry.register(QueueCounters(db))
        self.requests = Counter("sqsqlite_requests", "Requests served, by action.", ["action"], registry=self.registry)
        self.errors = Counter(
            "sqsqlite_request_errors",
            "Requests answered with an error, by action and error code.",
            ["action", "code"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "sqsqlite_request_duration_seconds",
            "Time from reading a request to writing its answer, by action (a long poll counts its wait).",
            ["action"],
            buckets=D.METRICS_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self._children: dict[str, tuple[Any, Any]] = {}

    def observe(self, action: str | None, status: int, code: str | None, seconds: float) -> None:
        """Count one request (the endpoint calls this for every request it answers)."""
        # Only names the server knows become labels: a client can't grow the label set.
        label = action if action in _KNOWN else "Unknown"
        children = self._children.get(label)
        if children is None:  # labels() costs more than the count itself: look each up once
            children = self._children.setdefault(label, (self.requests.labels(label), self.latency.labels(label)))
        children[0].inc()
        children[1].observe(seconds)
        if status >= 400:
            self.errors.labels(label, code if code and code.isascii() and len(code) <= 80 else str(status)).inc()

    def text(self) -> bytes:
        return generate_latest(self.registry)
