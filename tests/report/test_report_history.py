"""The report's history: per queue and step from the per-minute counters, equal in Spark and in a
plain Python count, and a drain forecast checked on constructed cases."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.report import figures, render, snapshot, synthetic
from sqsqlite.report import history as H
from sqsqlite.report import spark as sj
from sqsqlite.report.cli import report as report_command

UNTIL = 1_800_000_000_000 + 1234  # not on a minute
NAMES = {1: "a"}


def _step_row(at, **counts):
    return H.StepRow(1, at, **{c: counts.get(c, 0) for c in H.STEP_COUNTERS}, sample=counts.get("sample"))


@pytest.mark.parametrize(
    ("arrivals", "departures", "backlog", "expected", "words"),
    [
        (600, 1200, 3000, ("drains", 300, 0), "drains in 5h 0m at the last hour's net rate"),  # shrinking: 600 an hour net
        (7, 10, 10, ("drains", 200, 0), "drains in 3h 20m at the last hour's net rate"),  # rounded up to a whole minute
        (1200, 0, 50, ("grows", None, 1200), "grows by 1,200 an hour at the last hour's net rate"),  # growing
        (500, 500, 40, ("flat", None, 0), "holds at 40: the last hour's departures equal its arrivals"),  # flat
        (0, 0, 0, ("empty", None, 0), "empty"),  # empty
        (100, 0, None, ("unknown", None, 0), "no backlog sample in the window"),  # nothing sampled
    ],
)
def test_the_drain_forecast_on_constructed_cases(arrivals, departures, backlog, expected, words):
    assert H.forecast(backlog, departures - arrivals) == expected
    last_minute = UNTIL - UNTIL % 60_000
    sample = None if backlog is None else H.Sample(last_minute, backlog, 7)
    # The same through finish: the last hour's rows say the rates, the newest sample the backlog.
    step_rows = [_step_row(last_minute, sent=arrivals, deleted=departures, sample=sample)]
    hour_rows = [H.HourRow(1, arrivals, departures, departures, 0, 0)]
    [h] = H.finish(NAMES, step_rows, hour_rows, UNTIL - 3_600_000, UNTIL)
    assert (h.forecast, h.drain_minutes, h.growth_per_hour) == expected
    assert render.forecast_text(h) == words


def test_a_spike_is_a_step_well_above_the_queues_usual_count():
    start = H.first_step(UNTIL - 24 * 3_600_000, 3_600_000)
    steps = [H.Step(start + k * 3_600_000, dead_lettered=d, redelivered=r) for k, (d, r) in enumerate([(2, 0)] * 20 + [(40, 9), (6, 0)])]
    found = H.spikes("dead_lettered", steps) + H.spikes("redelivered", steps)
    assert [(s.counter, s.step_ms, s.count, s.usual) for s in found] == [("dead_lettered", start + 20 * 3_600_000, 40, 2)]


def test_the_step_is_a_minute_up_to_three_hours_and_an_hour_beyond():
    assert H.step_for(UNTIL - 3 * 3_600_000, UNTIL) == 60_000
    assert H.step_for(UNTIL - 3 * 3_600_000 - 1, UNTIL) == 3_600_000


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """A day of minutes of 1,000 queues (about 1.4 million rows) and two days of 20."""
    folder = tmp_path_factory.mktemp("history")
    many, long = str(folder / "many.db"), str(folder / "long.db")
    synthetic.build_history(many, 1000, 1440, UNTIL)
    synthetic.build_history(long, 20, 2 * 1440, UNTIL)
    return many, long


def _plain_count(path, since, until):
    """Per queue name: the counters summed over the window's minutes, and the newest sample."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute(
            "SELECT name, sum(sent), sum(moved_in), sum(deleted), sum(dead_lettered), sum(expired), sum(purged), sum(moved), "
            "sum(redelivered) FROM queue_history JOIN queues ON queues.id = queue_id WHERE minute >= ? AND minute < ? GROUP BY name",
            (since, until),
        ).fetchall()
        newest = dict(
            conn.execute(
                "SELECT name, visible + in_flight + delayed FROM queue_history h JOIN queues ON queues.id = queue_id "
                "WHERE visible IS NOT NULL AND minute = (SELECT max(minute) FROM queue_history WHERE queue_id = h.queue_id "
                "AND visible IS NOT NULL AND minute >= ? AND minute < ?)",
                (since, until),
            ).fetchall()
        )
    return {r[0]: (r[1] + r[2], r[3], r[3] + r[4] + r[5] + r[6] + r[7], r[8], newest.get(r[0])) for r in rows}


def test_the_oracle_agrees_with_a_plain_count_of_the_same_counters(generated):
    many, long = generated
    windows = ((many, UNTIL - 24 * 3_600_000), (long, UNTIL - 30 * 3_600_000), (long, UNTIL - 2 * 3_600_000), (long, UNTIL - 30 * 60_000))
    for path, since in windows:
        step = H.step_for(since, UNTIL)
        start = H.first_step(since, step)
        report = figures.compute(path, UNTIL, history_since_ms=since, history_until_ms=UNTIL)
        counted = _plain_count(path, start, UNTIL)
        got = {h.queue: (h.arrivals, h.completions, h.departures, sum(s.redelivered for s in h.steps), h.backlog) for h in report.history}
        assert got == counted
        assert all(len(h.steps) == -(-(UNTIL - start) // step) for h in report.history)
        # The last hour and the hour before by a plain count too, whole whatever the window.
        last = _plain_count(path, UNTIL - 3_600_000, UNTIL)
        before = _plain_count(path, UNTIL - 2 * 3_600_000, UNTIL - 3_600_000)
        assert {h.queue: (h.arrivals_last_hour, h.completions_last_hour, h.departures_last_hour) for h in report.history} == {
            name: c[:3] for name, c in last.items()
        }
        assert {h.queue: (h.arrivals_trend, h.completions_trend) for h in report.history} == {
            name: (c[0] - before[name][0], c[1] - before[name][1]) for name, c in last.items()
        }


def test_spark_agrees_with_the_oracle_on_a_day_of_minutes_of_a_thousand_queues(spark, generated, tmp_path):
    many, long = generated
    snap = snapshot.take(many, str(tmp_path / "many.db"), UNTIL)
    assert snap.history_rows > 1_000_000
    result = sj.compute(spark, snap, database=many)
    assert len(result.history) == 1000
    assert result == figures.compute(many, UNTIL)
    # By minute over a short window, and over a window given by its start.
    snap = snapshot.take(long, str(tmp_path / "long.db"), UNTIL, None, UNTIL - 90 * 60_000, UNTIL)
    result = sj.compute(spark, snap, database=long)
    assert result.history_step_ms == 60_000 and len(result.history[0].steps) == 91  # the last minute, partial, too
    assert result == figures.compute(long, UNTIL, history_since_ms=UNTIL - 90 * 60_000, history_until_ms=UNTIL)
    # Shorter than an hour: the hour figures still read whole hours.
    snap = snapshot.take(long, str(tmp_path / "short.db"), UNTIL, None, UNTIL - 30 * 60_000, UNTIL)
    result = sj.compute(spark, snap, database=long)
    assert len(result.history[0].steps) == 31
    assert result == figures.compute(long, UNTIL, history_since_ms=UNTIL - 30 * 60_000, history_until_ms=UNTIL)


def test_the_engines_own_counters_read_back_through_the_report(spark, tmp_path):
    path = str(tmp_path / "real.db")
    clock = sqsqlite.ManualClock(UNTIL - UNTIL % 60_000 - 89 * 60_000)  # the 90th minute is UNTIL's
    db = sqsqlite.connect(path, clock=clock)
    db.set_history_retention(14 * 86_400)
    q = db.create_queue("work")
    for _ in range(90):  # 90 minutes: 10 sent, 4 received and deleted a minute
        q.send_message_batch([{"Id": str(i), "MessageBody": "m"} for i in range(10)])
        got = q.receive_message(max_number_of_messages=4)
        q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got)])
        clock.advance(60)
    db.close()
    snap = snapshot.take(path, str(tmp_path / "s.db"), UNTIL)
    result = sj.compute(spark, snap, database=path)
    [h] = result.history
    assert (h.arrivals, h.completions, h.arrivals_last_hour, h.departures_last_hour) == (900, 360, 600, 240)
    assert (h.forecast, h.growth_per_hour, h.backlog) == ("grows", 360, 544)  # sampled after the last minute's send
    assert result == figures.compute(path, UNTIL)


def test_with_the_history_off_the_report_says_no_history_is_kept_rather_than_showing_zeros(tmp_path):
    path = str(tmp_path / "off.db")
    clock = sqsqlite.ManualClock(UNTIL - 600_000)
    with sqsqlite.connect(path, clock=clock) as db:
        db.create_queue("work").send_message("not counted")
    snap = snapshot.take(path, str(tmp_path / "s.db"), UNTIL)
    assert (snap.history_rows, snap.history_retention_s) == (0, 0)
    result = figures.compute(path, UNTIL)
    assert result.history == [] and result.history_retention_s == 0
    text = render.table(result)
    assert "no history is kept: the file's history is off" in text and "no history in the window" not in text
    with sqsqlite.connect(path, clock=clock) as db:
        db.set_history_retention(3600)
    assert figures.compute(path, UNTIL).history_retention_s == 3600


def test_the_command_prints_the_history_and_writes_its_tables_and_a_chart_per_queue(spark, generated, tmp_path):
    _, long = generated
    out = tmp_path / "out"
    r = CliRunner().invoke(
        report_command, ["--db", long, "--as-of", str(UNTIL), "--since", "6h", "--out", str(out), "--parquet"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert "History 2027-01-15T02:00:01.234Z to 2027-01-15T08:00:01.234Z, by hour" in r.output
    assert "q0000" in r.output and ("drains in" in r.output or "grows by" in r.output)
    for name in ("history.csv", "history_queues.csv", "history_spikes.csv", "history.parquet", "history_queues.parquet"):
        assert (out / name).exists(), name
    assert sorted(p for p in os.listdir(out) if p.startswith("history_q") and p.endswith(".png")) == [
        f"history_q{i:04d}.png" for i in range(20)
    ]
    data = json.loads((out / "report.json").read_text())
    assert len(data["history"]) == 20 and len(data["history"][0]["steps"]) == 7  # 02:00 to 08:00, partial hours at both ends


def test_a_since_that_is_neither_a_duration_nor_a_timestamp_is_bad_usage(tmp_path):
    r = CliRunner().invoke(report_command, ["--db", str(tmp_path / "x.db"), "--since", "yesterday"])
    assert r.exit_code == 2 and "'--since'" in r.output
