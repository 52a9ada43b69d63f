"""/metrics: every queue's stats figures under CloudWatch's names, the server's own requests by
action, in a text Prometheus parses; and the one statement behind the figures."""

from __future__ import annotations

import sqlite3
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

import sqsqlite
from sqsqlite import queries as Q
from sqsqlite.console.metrics import FAIR_QUEUE_FIGURES, QUEUE_FIGURES
from tests.server.server_helpers import boto3_client

from .helpers import POISON


def scrape(web) -> dict[str, dict[tuple, float]]:
    """Each metric's samples, by their sorted labels."""
    answer = web.get("/metrics")
    assert answer.status == 200 and answer.headers["content-type"].startswith("text/plain; version=0.0.4")
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(answer.text):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_every_stats_figure_of_every_queue_is_a_metric_under_its_cloudwatch_name(web, served):
    metrics = scrape(web)
    for s in served.db.stats():
        label = (("queue_name", s.name),)
        assert metrics["approximate_number_of_messages_visible"][label] == s.visible
        assert metrics["approximate_number_of_messages_not_visible"][label] == s.in_flight
        assert metrics["approximate_number_of_messages_delayed"][label] == s.delayed
        assert metrics["approximate_number_of_noisy_groups"][label] == s.noisy_groups == 0
        assert metrics["approximate_number_of_messages_visible_in_quiet_groups"][label] == s.visible_in_quiet_groups == s.visible
        assert metrics["approximate_number_of_messages_not_visible_in_quiet_groups"][label] == s.in_flight
        assert metrics["approximate_number_of_messages_delayed_in_quiet_groups"][label] == s.delayed
    ages = metrics["approximate_age_of_oldest_message"]
    assert ages[(("queue_name", "orders"),)] == 40 and ages[(("queue_name", "orders-dlq"),)] == 135
    assert (("queue_name", "emails"),) not in ages  # no message, no age
    depth = metrics["sqsqlite_dead_letter_queue_messages"]
    assert depth == {(("dead_letter_queue_name", "orders-dlq"), ("queue_name", "orders")): POISON}
    assert metrics["sqsqlite_queues"] == {(): 3}


def test_the_figures_are_read_at_each_scrape(web, served):
    served.db.queue("emails").send_message("new")
    assert scrape(web)["approximate_number_of_messages_visible"][(("queue_name", "emails"),)] == 1


def test_requests_errors_and_latency_are_counted_by_action(web, served):
    sqs = boto3_client(served.url)
    url = sqs.get_queue_url(QueueName="emails")["QueueUrl"]
    for _ in range(3):
        sqs.send_message(QueueUrl=url, MessageBody="hi")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="missing")
    # The server counts a request just after writing its answer: give the last one a moment.
    deadline = time.monotonic() + 10
    while (metrics := scrape(web))["sqsqlite_requests_total"].get((("action", "GetQueueUrl"),)) != 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert metrics["sqsqlite_requests_total"][(("action", "SendMessage"),)] == 3
    assert metrics["sqsqlite_requests_total"][(("action", "GetQueueUrl"),)] == 2
    errors = metrics["sqsqlite_request_errors_total"]
    assert errors == {(("action", "GetQueueUrl"), ("code", "AWS.SimpleQueueService.NonExistentQueue")): 1}
    assert metrics["sqsqlite_request_duration_seconds_count"][(("action", "SendMessage"),)] == 3
    assert metrics["sqsqlite_request_duration_seconds_bucket"][(("action", "SendMessage"), ("le", "+Inf"))] == 3


def test_an_action_no_sqs_has_is_counted_as_unknown_so_clients_cannot_grow_the_labels(web, served):
    import urllib.error
    import urllib.request

    for made_up in ("Nope1", "Nope2"):
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{served.url}/?Action={made_up}")
    actions = {dict(k)["action"] for k in scrape(web)["sqsqlite_requests_total"]}
    assert "Unknown" in actions and not actions & {"Nope1", "Nope2"}


def test_every_figure_is_a_stats_field_under_a_cloudwatch_style_snake_case_name_with_help():
    import dataclasses

    fields = {f.name for f in dataclasses.fields(sqsqlite.QueueStats)}
    for field, name, help_text in QUEUE_FIGURES + FAIR_QUEUE_FIGURES:
        assert field in fields and name == name.lower() and name.startswith("approximate_") and help_text.endswith(".")


def test_every_queue_s_figures_come_from_one_statement_that_reads_only_the_index(db):
    db.create_queue("orders").send_message("x")
    conn = sqlite3.connect(db.path)
    plan = " / ".join(
        row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + Q.queue_stats, Q.queue_stats.bind({"now": db.now(), **db.scope_params()}))
    )
    conn.close()
    assert plan.count("COVERING INDEX ix_messages_visible") == 2, plan  # each queue's visible range, then its hidden range
    assert "SCAN messages" not in plan and "SCAN hidden" not in plan


def test_every_metric_the_grafana_dashboard_queries_is_one_metrics_exposes(web, served):
    import json
    import re
    from pathlib import Path

    sqs = boto3_client(served.url)
    sqs.list_queues()  # so the request counters have samples, the errors' too
    with pytest.raises(sqs.exceptions.QueueDoesNotExist):
        sqs.get_queue_url(QueueName="missing")
    exposed = set(scrape(web))
    dashboard = json.loads((Path(__file__).parents[2] / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 10
    for expr in exprs:
        names = set(re.findall(r"\b((?:approximate|sqsqlite)_[a-z_]+)", expr))
        assert names and names <= exposed, expr


def test_the_database_files_size_free_pages_and_wal_are_metrics(web, served):
    from sqsqlite import space

    metrics = scrape(web)
    figures = space.file_space(served.db.path)
    assert metrics["sqsqlite_database_free_pages"][()] == figures.free_pages
    assert metrics["sqsqlite_database_free_bytes"][()] == figures.free_bytes
    assert metrics["sqsqlite_database_file_bytes"][()] > 0
    assert metrics["sqsqlite_wal_bytes"][()] >= 0


def _counters(metrics) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families(metrics.text().decode()):
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out.setdefault(sample.name, {})[sample.labels.get("queue_name", "")] = sample.value
    return out


def test_cloudwatchs_counters_are_prometheus_counters_of_every_connections_work_that_never_go_down(db_path, clock):
    from sqsqlite.console.metrics import Metrics

    clock.set(1_800_000_000_000)
    serving = sqsqlite.connect(db_path, clock=clock)
    other = sqsqlite.connect(db_path, clock=clock)  # as another process: its work is read from the file
    other.set_history_retention(14 * 86_400)
    q = other.create_queue("jobs")
    metrics = Metrics(serving)
    q.send_message_batch([{"Id": str(i), "MessageBody": "ab"} for i in range(5)])
    got = q.receive_message(max_number_of_messages=2)
    q.delete_message(got[0])
    q.receive_message(max_number_of_messages=10, visibility_timeout=0)
    q.receive_message(max_number_of_messages=10)
    first = _counters(metrics)
    assert {name: by_queue["jobs"] for name, by_queue in first.items()} == {
        "number_of_messages_sent_total": 5,
        "number_of_messages_received_total": 2 + 3 + 3,  # the last receive redelivers the 3 released
        "number_of_messages_deleted_total": 1,
        "number_of_empty_receives_total": 0,
        "sent_message_size_bytes_total": 10,
        "sqsqlite_messages_redelivered_total": 3,
        "sqsqlite_messages_dead_lettered_total": 0,
        "sqsqlite_messages_moved_in_total": 0,
        "sqsqlite_messages_moved_total": 0,
        "sqsqlite_messages_expired_total": 0,
        "sqsqlite_messages_purged_total": 0,
    }
    # Minutes later: the first ones are settled, summed once and kept between scrapes.
    clock.advance(300)
    q.send_message("later")
    assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 6
    # Scraped every few minutes while the history's retention prunes the oldest: only growing.
    other.set_history_retention(3600)
    for _ in range(30):
        clock.advance(240)
        q.send_message("more")
        other.prune()
        assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 7 + _
    assert len(other.history(1)) < 31
    # And after two hours without a scrape.
    clock.advance(7200)
    q.send_message("last")
    other.prune()
    later = _counters(metrics)
    assert later["number_of_messages_sent_total"]["jobs"] == 37
    assert later["number_of_messages_received_total"]["jobs"] == 8
    assert _counters(Metrics(serving))["number_of_messages_sent_total"]["jobs"] == 37  # a new server reads the same
    serving.close()
    other.close()


def test_counts_committed_minutes_after_their_minute_still_reach_the_counters(db_path, clock):
    from sqsqlite.console.metrics import Metrics

    writer = sqsqlite.connect(db_path, clock=clock)
    writer.set_history_retention(14 * 86_400)
    q = writer.create_queue("jobs")
    q.send_message("before")
    serving = sqsqlite.connect(db_path, clock=clock)
    metrics = Metrics(serving)
    assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 1
    with writer.transaction() as tx:  # a batch job: counts in its first minute, commits minutes later
        tx.queue("jobs").send_message("in a long transaction")
        for _ in range(4):
            clock.advance(50)
            assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 1  # not committed yet
    for _ in range(3):  # the count is its minute's, four minutes old by now
        clock.advance(30)
        assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 2
    clock.advance(600)
    assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 2
    serving.close()
    writer.close()


def test_with_the_history_off_metrics_says_so_and_exposes_no_counters_as_if_measured(db_path, clock):
    from sqsqlite.console.metrics import Metrics

    db = sqsqlite.connect(db_path, clock=clock)
    db.create_queue("jobs").send_message("not counted")
    metrics = Metrics(db)
    text = metrics.text().decode()
    assert "sqsqlite_history_retention_seconds 0.0" in text
    assert "# TYPE number_of_messages_sent" not in text and "number_of_messages_sent_total" not in _counters(metrics)
    db.set_history_retention(3600)
    db.queue("jobs").send_message("counted")
    assert _counters(metrics)["number_of_messages_sent_total"]["jobs"] == 1
    assert "sqsqlite_history_retention_seconds 3600.0" in metrics.text().decode()
    db.close()
