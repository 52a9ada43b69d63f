"""``/metrics`` in the Prometheus text format (prometheus_client).

Per queue, every figure of ``Database.stats()`` under CloudWatch's SQS metric name in snake
case, labelled ``queue_name``, read by one statement at each scrape; figures CloudWatch has no
name for carry the ``sqsqlite_`` prefix. Plus the server's own requests: counts, errors and a
latency histogram by action. And the database file's size, free pages and WAL size
(docs/reliability.md, "Disk space").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from .. import defaults as D
from .. import space
from ..actions import MEMBERS, UNSUPPORTED

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_KNOWN = frozenset(MEMBERS) | frozenset(UNSUPPORTED) | {"Console", "Metrics", "Emulator"}

# (QueueStats field, metric name, help). A queue whose figure is None (no messages: no age; no
# dead-letter queue: no depth) has no sample of that metric.
QUEUE_FIGURES: tuple[tuple[str, str, str], ...] = (
    (
        "visible",
        "approximate_number_of_messages_visible",
        "Messages available for retrieval (CloudWatch ApproximateNumberOfMessagesVisible).",
    ),
    (
        "in_flight",
        "approximate_number_of_messages_not_visible",
        "Messages in flight: received, visibility timeout running (CloudWatch ApproximateNumberOfMessagesNotVisible).",
    ),
    (
        "delayed",
        "approximate_number_of_messages_delayed",
        "Messages delayed, not yet visible (CloudWatch ApproximateNumberOfMessagesDelayed).",
    ),
    (
        "oldest_age_seconds",
        "approximate_age_of_oldest_message",
        "Seconds since the oldest live message was sent (CloudWatch ApproximateAgeOfOldestMessage).",
    ),
)
# Fair queues' figures (docs/fair-queues.md), under CloudWatch's names.
FAIR_QUEUE_FIGURES: tuple[tuple[str, str, str], ...] = (
    (
        "noisy_groups",
        "approximate_number_of_noisy_groups",
        "Message groups holding a disproportionate share of the in-flight messages (CloudWatch ApproximateNumberOfNoisyGroups).",
    ),
    (
        "visible_in_quiet_groups",
        "approximate_number_of_messages_visible_in_quiet_groups",
        "Visible messages of quiet groups and of no group (CloudWatch ApproximateNumberOfMessagesVisibleInQuietGroups).",
    ),
    (
        "in_flight_in_quiet_groups",
        "approximate_number_of_messages_not_visible_in_quiet_groups",
        "In-flight messages of quiet groups and of no group (CloudWatch ApproximateNumberOfMessagesNotVisibleInQuietGroups).",
    ),
    (
        "delayed_in_quiet_groups",
        "approximate_number_of_messages_delayed_in_quiet_groups",
        "Delayed messages of quiet groups and of no group (CloudWatch ApproximateNumberOfMessagesDelayedInQuietGroups).",
    ),
    (
        "oldest_age_in_quiet_groups_seconds",
        "approximate_age_of_oldest_message_in_quiet_groups",
        "Seconds since the oldest live message of a quiet group was sent (CloudWatch ApproximateAgeOfOldestMessageInQuietGroups).",
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


class Metrics:
    """A registry of its own per server (so two servers in one process don't share counts)."""

    def __init__(self, db: Any):
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(QueueFigures(db))
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
