"""`sqsqlite report`: the Spark job's figures equal the Python oracle's, field by field."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.report import cli as report_cli
from sqsqlite.report import figures, render, snapshot, synthetic
from sqsqlite.report import spark as sj
from sqsqlite.report.cli import parse_as_of, report
from sqsqlite.report.spark import SetupError

pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")]

START = 1_700_000_000_000
HOUR = 3600


def _redrive(db, target: str, n: int) -> dict:
    return {"RedrivePolicy": json.dumps({"deadLetterTargetArn": db.queue_arn(target), "maxReceiveCount": n})}


def build_every_state(path: str) -> int:
    """A database with visible, in-flight, delayed, dead-lettered, expiring and expired
    messages (expired ones still stored, not yet pruned), in standard and FIFO queues, and
    two sources feeding one dead-letter queue. Returns the as-of instant."""
    clock = sqsqlite.ManualClock(START)
    as_of = START + 40 * HOUR * 1000
    db = sqsqlite.connect(path, clock=clock)
    db.set_history_retention(14 * 24 * HOUR)  # on: the sample in report.md shows its history
    db.create_queue("orders-dlq", attributes={"MessageRetentionPeriod": str(4 * 24 * HOUR)})
    orders = db.create_queue("orders", attributes={"MessageRetentionPeriod": str(36 * HOUR), **_redrive(db, "orders-dlq", 2)})
    payments = db.create_queue("payments", attributes=_redrive(db, "orders-dlq", 1))
    archive = db.create_queue("archive", attributes={"MessageRetentionPeriod": str(HOUR)})
    db.create_queue("idle")
    db.create_queue("jobs-dlq.fifo", attributes={"FifoQueue": "true"})
    jobs = db.create_queue(
        "jobs.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true", **_redrive(db, "jobs-dlq.fifo", 1)}
    )

    archive.send_message_batch([{"Id": str(i), "MessageBody": f"archived {i}"} for i in range(3)])  # expired at as-of
    payments.send_message("bad payment")
    orders.send_message_batch([{"Id": str(i), "MessageBody": f"poison {i}"} for i in range(2)])
    for _ in range(3):  # payments' message moves after 1 receive, the orders poison after 2
        payments.receive_message(visibility_timeout=30)
        orders.receive_message(max_number_of_messages=10, visibility_timeout=30)
        clock.advance(31)
    jobs.send_message("poison job", message_group_id="g0")
    jobs.receive_message(visibility_timeout=5)
    clock.advance(6)
    assert jobs.receive_message() == []  # moved to jobs-dlq.fifo

    clock.set(as_of - 35 * HOUR * 1000 - 1_800_000)
    for i in range(4):
        orders.send_message(f"early {i}")  # 35.5 h old: expiring within 1 h
        clock.advance(1)
    clock.set(as_of - 20 * HOUR * 1000)
    orders.send_message_batch([{"Id": str(i), "MessageBody": f"midday {i}"} for i in range(4)])  # within 24 h
    clock.set(as_of - 10 * HOUR * 1000)
    for g, n in (("g1", 3), ("g2", 2), ("g3", 4)):
        for i in range(n):
            jobs.send_message(f"{g} job {i}", message_group_id=g)
            clock.advance(7)
    assert [m.body for m in jobs.receive_message(visibility_timeout=600)] == ["g1 job 0"]
    clock.advance(700)
    assert [m.body for m in jobs.receive_message(visibility_timeout=1)] == ["g2 job 0"]
    clock.set(as_of - HOUR * 1000)
    assert len(jobs.receive_message(max_number_of_messages=1, visibility_timeout=7200)) == 1  # in flight at as-of

    got = orders.receive_message(max_number_of_messages=3, visibility_timeout=30)
    assert len(got) == 3
    clock.advance(31)
    assert len(orders.receive_message(max_number_of_messages=2, visibility_timeout=7200)) == 2  # in flight
    # A fair queue: tenant "big" holds 35 messages in flight (noisy), five quiet tenants one each.
    clock.set(as_of - 60_000)
    tenants = db.create_queue("tenants")
    tenants.send_message_batch([{"Id": str(i), "MessageBody": "big", "MessageGroupId": "big"} for i in range(10)])
    for _ in range(3):
        tenants.send_message_batch([{"Id": str(i), "MessageBody": "big", "MessageGroupId": "big"} for i in range(10)])
    tenants.send_message_batch([{"Id": str(i), "MessageBody": "small", "MessageGroupId": f"small-{i}"} for i in range(5)])
    assert len([m for _ in range(4) for m in tenants.receive_message(max_number_of_messages=10, visibility_timeout=7200)]) == 40
    tenants.send_message_batch([{"Id": str(i), "MessageBody": "later", "MessageGroupId": f"later-{i}"} for i in range(3)])
    tenants.send_message("plain")
    tenants.send_message("delayed", message_group_id="later-0", delay_seconds=300)
    clock.set(as_of - 30_000)
    orders.send_message("fresh")
    orders.send_message("delayed", delay_seconds=120)
    clock.set(as_of)
    db.close()
    return as_of


@pytest.fixture(scope="module")
def every_state(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("report") / "every.db")
    as_of = build_every_state(path)
    return path, as_of


@pytest.fixture(scope="module")
def snap(every_state, tmp_path_factory):
    path, as_of = every_state
    return snapshot.take(path, str(tmp_path_factory.mktemp("snap") / "s.db"), as_of)


@pytest.fixture(scope="module")
def spark_report(spark, snap, every_state):
    return sj.compute(spark, snap, top=3, partitions=3, database=every_state[0])


def _by_queue(report):
    return {q.queue: q for q in report.queues}


# ------------------------------------------------------------------ the database under test


def test_the_database_under_test_holds_every_state(every_state):
    path, as_of = every_state
    q = _by_queue(figures.compute(path, as_of, top=3))
    assert q["orders"].visible and q["orders"].in_flight and q["orders"].delayed
    assert q["jobs.fifo"].in_flight and q["jobs.fifo"].visible
    assert q["orders-dlq"].backlog == 3 and q["jobs-dlq.fifo"].backlog == 1
    assert q["orders"].expiring_1h == 4 and q["orders"].expiring_24h == 8
    # Expired rows are still stored (nothing pruned them) and are never counted.
    with sqlite3.connect(path) as conn:
        stored = conn.execute("SELECT count(*) FROM messages JOIN queues q ON q.id = queue_id WHERE q.name = 'archive'").fetchone()[0]
    assert stored == 3 and q["archive"].backlog == 0


def _oracle_checked_against_stats(path: str, as_of: int) -> dict:
    """The oracle's figures by queue, once each queue's equal Database.stats() with its clock at as_of."""
    report = _by_queue(figures.compute(path, as_of))
    db = sqsqlite.connect(path, clock=sqsqlite.ManualClock(as_of))
    try:
        stats = db.stats()
        sources = {s.name: sorted(u.rsplit("/", 1)[-1] for u in db.queue(s.name).list_dead_letter_source_queues()) for s in stats}
    finally:
        db.close()
    assert sorted(report) == sorted(s.name for s in stats)
    for s in stats:
        f = report[s.name]
        assert (f.visible, f.in_flight, f.delayed) == (s.visible, s.in_flight, s.delayed), s.name
        assert f.oldest_age_ms == (None if s.oldest_age_seconds is None else round(s.oldest_age_seconds * 1000)), s.name
        assert (f.dead_letter_queue, f.dead_letter_depth) == (s.dead_letter_queue, s.dead_letter_depth), s.name
        assert f.dead_letter_sources == sources[s.name], s.name
        fair = (f.noisy_groups, f.visible_in_quiet_groups, f.in_flight_in_quiet_groups, f.delayed_in_quiet_groups)
        assert fair == (s.noisy_groups, s.visible_in_quiet_groups, s.in_flight_in_quiet_groups, s.delayed_in_quiet_groups), s.name
        quiet_age = s.oldest_age_in_quiet_groups_seconds
        assert f.oldest_age_in_quiet_groups_ms == (None if quiet_age is None else round(quiet_age * 1000)), s.name
    return report


def test_the_oracle_agrees_with_the_library_statistics(every_state):
    report = _oracle_checked_against_stats(*every_state)
    tenants = report["tenants"]
    assert (tenants.noisy_groups, tenants.visible_in_quiet_groups, tenants.in_flight_in_quiet_groups) == (1, 4, 5)
    assert tenants.delayed_in_quiet_groups == 1 and tenants.in_flight == 40


def build_stepped_back(path: str) -> int:
    """A queue whose messages were sent, received and made visible again around a wall clock
    that stepped back an hour; returns the instant after the step."""
    clock = sqsqlite.ManualClock(START)
    db = sqsqlite.connect(path, clock=clock)
    orders = db.create_queue("orders")
    orders.send_message_batch([{"Id": str(i), "MessageBody": f"before the step {i}"} for i in range(3)])
    in_flight, made_visible = orders.receive_message(max_number_of_messages=2, visibility_timeout=60)
    clock.set(START - HOUR * 1000)  # the wall clock steps back an hour
    orders.change_message_visibility(made_visible.receipt_handle, 0)  # visible now, its sent_at still ahead
    orders.send_message("after the step")
    db.close()
    return START - HOUR * 1000


def test_messages_sent_before_the_clock_stepped_back_are_counted_as_the_library_statistics_count_them(spark, tmp_path):
    path = str(tmp_path / "stepped.db")
    as_of = build_stepped_back(path)
    report = _oracle_checked_against_stats(path, as_of)
    # Sent "in the future" of as_of: one never received (delayed), one in flight, one visible again.
    orders = report["orders"]
    assert (orders.visible, orders.in_flight, orders.delayed) == (2, 1, 1)
    assert (orders.age_p50_ms, orders.oldest_age_ms) == (-HOUR * 1000, 0)  # ages from the future are negative
    assert orders.age_histogram[0] == 4 and orders.receive_counts == {0: 2, 1: 2}
    snap = snapshot.take(path, str(tmp_path / "s.db"), as_of)
    oracle = figures.compute(path, as_of)
    _assert_same(sj.compute(spark, snap, partitions=2, database=path), oracle)
    row = next(line for line in render.table(oracle).splitlines() if line.startswith("orders "))
    assert row.split()[:9] == ["orders", "2", "1", "1", "4", "0ms", "-1h", "0m", "0ms"]  # p50 age -1h 0m


def test_percentiles_use_the_nearest_rank():
    assert [figures.nearest_rank(p, 1) for p in (50, 90, 99)] == [1, 1, 1]
    assert [figures.nearest_rank(p, 10) for p in (50, 90, 99)] == [5, 9, 10]
    assert [figures.nearest_rank(p, 100) for p in (50, 90, 99)] == [50, 90, 99]
    assert [figures.nearest_rank(p, 101) for p in (50, 90, 99)] == [51, 91, 100]


# ------------------------------------------------------------------ Spark against the oracle


def _assert_same(spark_report, oracle_report):
    assert spark_report.as_of_ms == oracle_report.as_of_ms
    assert [q.queue for q in spark_report.queues] == [q.queue for q in oracle_report.queues]
    for s, o in zip(spark_report.queues, oracle_report.queues):
        for name in vars(o):
            assert getattr(s, name) == getattr(o, name), f"{o.queue}.{name}"
    assert spark_report.to_dict() == oracle_report.to_dict()


def test_spark_figures_equal_the_oracle_field_by_field(spark_report, every_state):
    path, as_of = every_state
    _assert_same(spark_report, figures.compute(path, as_of, top=3))


def test_spark_figures_equal_the_oracle_on_a_large_random_database(spark, tmp_path):
    as_of = 1_750_000_000_000
    path = str(tmp_path / "random.db")
    synthetic.build(path, 20_000, as_of, seed=11)
    snap = snapshot.take(path, str(tmp_path / "s.db"), as_of)
    oracle = figures.compute(path, as_of, top=4)
    assert all(q.age_p50_ms is not None for q in oracle.queues)
    assert any(q.groups for q in oracle.queues)
    _assert_same(sj.compute(spark, snap, top=4, partitions=5, database=path), oracle)


def test_an_imported_message_stamped_near_the_largest_long_is_counted_as_the_oracle_counts_it(spark, tmp_path):
    # Its sent_at plus the retention period overflows a long, which Spark's ANSI mode refuses.
    import uuid

    as_of = 1_700_000_000_000
    path = str(tmp_path / "far.db")
    with sqsqlite.connect(path, clock=sqsqlite.ManualClock(as_of)) as db:
        q = db.create_queue("imports")
        q.send_message("ordinary")
        q.import_messages([{"MessageId": str(uuid.uuid4()), "Body": "a clock far ahead", "SentTimestamp": 2**63 - 1}])
    snap = snapshot.take(path, str(tmp_path / "far-snap.db"), as_of)
    oracle = figures.compute(path, as_of, top=3)
    assert oracle.queues[0].visible == 2
    _assert_same(sj.compute(spark, snap, top=3, database=path), oracle)


def test_a_failed_spark_query_prints_no_query_context_with_its_java_stack(spark, capfd):
    from pyspark.sql import functions as F

    capfd.readouterr()
    with pytest.raises(Exception, match="ARITHMETIC_OVERFLOW"):
        spark.range(1).select(F.lit(2**63 - 1) + F.col("id") + 1).collect()
    assert "QueryContextLogger" not in capfd.readouterr().err


def test_group_ids_that_a_spreadsheet_would_run_are_written_to_csv_as_text(tmp_path):
    [queue] = figures.new_queues([{"name": "q.fifo", "fifo": 1, "retention_period": 60, "dead_letter_target": None}]).values()
    queue.groups = [figures.GroupFigures('=HYPERLINK("http://x";"y")', 1, 0, 0, 1, 0)]
    report = figures.Report(database="x.db", as_of_ms=0, top=3, queues=[queue])
    render.write(report, str(tmp_path / "out"))
    with open(tmp_path / "out" / "groups.csv", newline="") as f:
        [row] = list(csv.DictReader(f))
    assert row["group_id"] == '\'=HYPERLINK("http://x";"y")'


def test_epoch_millisecond_timestamps_survive_the_jdbc_type_mapping(spark, snap, tmp_path):
    from pyspark.sql.types import LongType

    # Make some values need all 64 bits: past 2**31 (a 32-bit int keeps only the low bits)
    # and past 2**53 (a double would round them).
    extreme = shutil_copy(snap.path, tmp_path / "extreme.db")
    with sqlite3.connect(extreme) as conn:
        conn.execute("UPDATE messages SET sent_at = ?, visible_at = ? WHERE id = ?", (2**53 + 1, 2**62 + 3, snap.min_id))
        conn.execute("UPDATE messages SET sent_at = ?, visible_at = ? WHERE id = ?", (2**31 + 5, -(2**40) - 7, snap.max_id))
        expected = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT id, sent_at, visible_at, receive_count FROM messages")}
    copy = snapshot.Snapshot(extreme, snap.as_of_ms, snap.messages, snap.min_id, snap.max_id)
    df = sj.read_messages(spark, copy, partitions=3)
    for column in ("id", "sent_at", "visible_at", "receive_count"):
        assert isinstance(df.schema[column].dataType, LongType), column
    got = {r["id"]: (r["sent_at"], r["visible_at"], r["receive_count"]) for r in df.collect()}
    assert got == expected
    assert all(type(v) is int for row in got.values() for v in row)


def shutil_copy(src, dest) -> str:
    import shutil

    return str(shutil.copyfile(src, dest))


def test_messages_are_read_in_partitions_over_the_id_range(spark, snap):
    df = sj.read_messages(spark, snap, partitions=4)
    assert df.rdd.getNumPartitions() == 4
    spans = df.rdd.mapPartitions(lambda rows: [[r["id"] for r in rows]]).collect()
    ids = [i for span in spans for i in span]
    assert sorted(ids) == list(range(snap.min_id, snap.max_id + 1))  # each row exactly once
    filled = [s for s in spans if s]
    assert len(filled) >= 3
    # Each partition is one contiguous id range, and the ranges follow each other.
    assert all(max(a) < min(b) for a, b in zip(filled, filled[1:]))


def test_the_default_partition_count_grows_with_the_messages():
    small = snapshot.Snapshot("x", 0, 10, 1, 10)
    big = snapshot.Snapshot("x", 0, 10_000_000, 1, 10_000_000)
    assert sj.default_partitions(small) == 1
    assert sj.default_partitions(big) == 10_000_000 // sj.ROWS_PER_PARTITION


# ------------------------------------------------------------------ the command


def _run(args, **kw):
    return CliRunner().invoke(report, args, catch_exceptions=False, **kw)


def test_the_command_prints_a_table_and_writes_json_csv_parquet_and_a_chart(spark, every_state, tmp_path):
    import pyarrow.parquet as pq

    path, as_of = every_state
    out = tmp_path / "out"
    result = _run(["--db", path, "--as-of", str(as_of), "--top", "3", "--out", str(out), "--parquet"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith(f"sqsqlite report: {path}\nas of 2023-11-16T14:13:20.000Z")
    for needle in (
        "in flight",
        "orders-dlq (3)",
        "orders, payments",
        "FIFO jobs.fifo: backlog per message group, 3 groups",
        "poison candidates",
    ):
        assert needle in text
    oracle = figures.compute(path, as_of, top=3)
    data = json.loads((out / "report.json").read_text())
    assert data.pop("as_of") == "2023-11-16T14:13:20.000Z"
    assert data == json.loads(json.dumps(oracle.to_dict()))
    with open(out / "queues.csv") as f:
        rows = {r["queue"]: r for r in csv.DictReader(f)}
    assert int(rows["orders"]["in_flight"]) == _by_queue(oracle)["orders"].in_flight
    assert pq.read_table(out / "queues.parquet").to_pylist() == render.tables(oracle)["queues"][1]
    assert pq.read_table(out / "groups.parquet").num_rows == 4
    assert (out / "age_distribution.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_command_prints_json_equal_to_the_oracle(spark, every_state):
    path, as_of = every_state
    result = _run(["--db", path, "--as-of", "2023-11-16T14:13:20Z", "--json", "--top", "2"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    data.pop("as_of")
    assert data == json.loads(json.dumps(figures.compute(path, as_of, top=2).to_dict()))


def test_the_sample_in_report_md_is_what_the_report_prints_on_the_database_it_names(spark_report, every_state):
    # docs/howto/report.md shows `sqsqlite report --db app.db --as-of 2023-11-16T14:13:20Z --top 3` on
    # this database: message ids are new each time it is built, and all else must match.
    page = (Path(__file__).resolve().parents[2] / "docs" / "howto" / "report.md").read_text(encoding="utf-8")
    sample = re.search(r"^## Sample\n.*?^```text\n(.*?)^```", page, flags=re.M | re.S)
    assert sample is not None, "report.md has no sample"
    printed = render.table(spark_report).replace(f"sqsqlite report: {every_state[0]}\n", "sqsqlite report: app.db\n", 1)
    uuid = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
    assert uuid.sub("<message id>", sample.group(1)) == uuid.sub("<message id>", printed)


def test_the_sqsqlite_groups_global_db_option_picks_the_database_over_the_environment(spark, every_state, tmp_path, monkeypatch):
    from sqsqlite.cli.main import cli

    path, as_of = every_state
    elsewhere = tmp_path / "elsewhere.db"
    sqsqlite.connect(elsewhere).close()
    monkeypatch.setenv("SQSQLITE_DB", str(elsewhere))
    result = CliRunner().invoke(cli, ["--db", path, "report", "--as-of", str(as_of), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["database"] == path
    # The command's own --db, given on its command line, wins over the group's.
    result = CliRunner().invoke(cli, ["--db", path, "report", "--db", str(elsewhere), "--as-of", str(as_of), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["database"] == str(elsewhere)


def test_as_of_accepts_iso_8601_and_epoch_milliseconds():
    assert parse_as_of("1700144000000") == 1_700_144_000_000
    assert parse_as_of("2023-11-16T14:13:20Z") == 1_700_144_000_000
    assert parse_as_of("2023-11-16T14:13:20z") == 1_700_144_000_000  # ISO 8601's lower-case UTC too
    assert parse_as_of("2023-11-16T15:13:20+01:00") == 1_700_144_000_000
    assert parse_as_of("2023-11-16 14:13:20.250") == 1_700_144_000_250


def test_an_iso_as_of_keeps_its_exact_millisecond():
    # Through a float, .018 s came out as 17 ms (1,230 of 400,000 random instants were off).
    assert parse_as_of("2004-09-29T02:19:51.018Z") == 1_096_424_391_018
    assert parse_as_of("9999-12-31T23:59:59.999Z") == 253_402_300_799_999
    assert render.iso(253_402_300_799_999) == "9999-12-31T23:59:59.999Z"  # and back, exactly


@pytest.mark.parametrize(
    "value, says",
    [
        ("yesterday", "'yesterday' is not a timestamp"),
        ("²", "'²' is not a timestamp"),
        ("--5", "'--5' is not a timestamp"),
        ("-5", "'-5' is outside the range the report covers: epoch milliseconds from 0 to 253402300799999"),
        ("99999999999999999999", "'99999999999999999999' is outside the range"),
        ("253402300800000", "'253402300800000' is outside the range"),
        ("1" * 4301, "is outside the range"),  # int() itself refuses so many digits
        ("1969-12-31T23:59:59Z", "'1969-12-31T23:59:59Z' is outside the range"),
    ],
)
def test_a_bad_as_of_is_a_usage_error_naming_the_value_and_the_range(tmp_path, value, says):
    result = CliRunner().invoke(report, ["--db", str(tmp_path / "x.db"), f"--as-of={value}"])
    assert result.exit_code == 2
    assert says in result.output and "Invalid value for '--as-of'" in result.output  # the option named


def test_an_as_of_that_looks_like_epoch_seconds_gets_a_warning(every_state, monkeypatch):
    monkeypatch.setattr(report_cli, "get_session", _no_spark)
    result = CliRunner().invoke(report, ["--db", every_state[0], "--as-of", "1700000000"])
    assert (
        "warning: --as-of 1700000000 is 1970-01-20T16:13:20.000Z read as epoch milliseconds; for epoch seconds, give 1700000000000."
        in result.output
    )


def _no_spark(*args, **kwargs):
    raise SetupError("Spark was not to be started")


def _locked_elsewhere(path):
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    return holder


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda p: p.write_text("not a database at all\n" * 100), "is not a sqsqlite database (file is not a database)"),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE queues (x)"),
            "is not a sqsqlite database, or an older one not yet upgraded (no such column: id;",
        ),
        (
            lambda p: sqlite3.connect(p).execute("CREATE TABLE other (x)"),
            "is not a sqsqlite database, or an older one not yet upgraded (no such table: src.queues;",
        ),
    ],
    ids=["text", "another program's queues table", "another program's database"],
)
def test_a_file_that_is_not_a_sqsqlite_database_is_one_line_before_spark_starts(tmp_path, monkeypatch, make, says):
    path = tmp_path / "x.db"
    make(path)
    monkeypatch.setattr(report_cli, "get_session", _no_spark)
    result = CliRunner().invoke(report, ["--db", str(path)])
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert result.output.startswith(f"sqsqlite: {path} {says}")


def test_a_database_of_a_newer_sqsqlite_is_one_line_before_spark_starts(every_state, tmp_path, monkeypatch):
    newer = tmp_path / "newer.db"
    shutil.copy(every_state[0], newer)
    with contextlib.closing(sqlite3.connect(newer)) as c:
        c.execute("UPDATE alembic_version SET version_num = '9999'")
        c.commit()
    monkeypatch.setattr(report_cli, "get_session", _no_spark)
    result = CliRunner().invoke(report, ["--db", str(newer)])
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert "has schema revision '9999', newer than this sqsqlite knows" in result.output


def test_a_database_locked_past_the_busy_timeout_is_said_so(tmp_path, monkeypatch):
    path = tmp_path / "held.db"
    sqsqlite.connect(path).close()
    holder = _locked_elsewhere(str(path))
    monkeypatch.setattr(snapshot, "_BUSY_TIMEOUT_MS", 50)  # not a minute, in a test
    try:
        with pytest.raises(snapshot.SnapshotError, match=f"{path} is locked: another connection held it"):
            snapshot.take(str(path), str(tmp_path / "snap.db"))
    finally:
        holder.close()


def test_a_missing_database_is_one_clear_line_and_creates_nothing(tmp_path):
    missing = tmp_path / "missing.db"
    result = CliRunner().invoke(report, ["--db", str(missing)])
    assert result.exit_code == 255
    assert result.output == f"sqsqlite: no database at {missing} (give --db PATH or set SQSQLITE_DB)\n"
    assert not missing.exists()


def test_a_missing_jdbc_driver_is_one_line_saying_what_to_install(every_state, tmp_path):
    result = CliRunner().invoke(report, ["--db", every_state[0], "--jdbc-jar", str(tmp_path / "nope.jar")])
    assert result.exit_code == 255
    assert result.output.count("\n") == 1
    assert "apt-get install libxerial-sqlite-jdbc-java" in result.output
    assert "Traceback" not in result.output


def test_a_jdbc_jar_that_is_not_the_driver_is_one_line_saying_what_to_install(every_state, tmp_path, jdbc_jar):
    not_the_driver = tmp_path / "other.jar"
    not_the_driver.write_bytes(b"PK\x05\x06" + bytes(18))  # an empty zip: a jar without the driver's classes
    result = subprocess.run(
        [sys.executable, "-m", "sqsqlite.report.cli", "--db", every_state[0], "--jdbc-jar", str(not_the_driver)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 255, result.stderr[-2000:]
    assert result.stderr.count("\n") == 1 and "could not be loaded" in result.stderr, result.stderr[-2000:]
    assert "apt-get install libxerial-sqlite-jdbc-java" in result.stderr and "Traceback" not in result.stderr


def test_missing_java_is_one_line_saying_what_to_install(every_state, monkeypatch):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    result = CliRunner().invoke(report, ["--db", every_state[0]])
    assert result.exit_code == 255
    assert result.output.count("\n") == 1
    assert "install Java 17 or later" in result.output


def test_parquet_needs_an_output_directory(every_state):
    result = CliRunner().invoke(report, ["--db", every_state[0], "--parquet"])
    assert result.exit_code == 2
    assert "--parquet needs --out DIR" in result.output


@pytest.mark.slow
def test_a_fresh_run_keeps_sparks_log_noise_out_of_the_output(every_state, jdbc_jar):
    # A new process, so a new JVM: the path users take, with the packaged driver jar.
    path, as_of = every_state
    proc = subprocess.run(
        [sys.executable, "-m", "sqsqlite.report.cli", "--db", path, "--as-of", str(as_of), "--master", "local[2]", "--top", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith(f"sqsqlite report: {path}\n")
    assert "WARN" not in proc.stdout


# ------------------------------------------------------------------ a cluster: the snapshot as Parquet


def test_a_snapshot_written_as_parquet_gives_the_oracles_figures(spark, snap, every_state, tmp_path):
    path, as_of = every_state
    shared = snapshot.to_parquet(snap, str(tmp_path / "shared"))
    assert sorted(os.listdir(shared.parquet)) == ["message_archive", "messages", "queue_history", "queues"]
    result = sj.compute(spark, shared, top=3, database=path)
    assert result.to_dict() == figures.compute(path, as_of, top=3).to_dict()


@pytest.mark.parametrize(
    ("option", "value"), [("--master", "junk"), ("--master", "spark:/head"), ("--driver-memory", "abc"), ("--driver-memory", "2 g")]
)
def test_a_master_or_driver_memory_spark_would_refuse_is_bad_usage_before_spark_starts(every_state, monkeypatch, option, value):
    path, _ = every_state
    monkeypatch.setattr(report_cli, "get_session", lambda *a, **k: pytest.fail("Spark was started"))
    result = CliRunner().invoke(report, ["--db", path, option, value])
    assert result.exit_code == 2 and f"{option} {value!r}" in result.output


def test_a_cluster_master_without_a_snapshot_dir_is_bad_usage_naming_what_to_give(every_state):
    path, _ = every_state
    result = CliRunner().invoke(report, ["--db", path, "--master", "spark://head:7077"])
    assert result.exit_code == 2
    assert "executors on other machines cannot open" in result.output and "--snapshot-dir DIR" in result.output


@pytest.mark.slow
def test_the_report_on_a_two_worker_cluster_equals_local_mode(jdbc_jar, every_state, tmp_path):
    # Spark's local-cluster master starts a master and two worker JVMs on loopback, as a
    # standalone cluster of two machines would run: its executors read the Parquet snapshot.
    path, as_of = every_state
    command = [sys.executable, str(Path(sys.executable).with_name("sqsqlite")), "report", "--db", path, "--as-of", str(as_of), "--json"]
    env = {**os.environ, "SQSQLITE_JDBC_JAR": jdbc_jar}
    local = subprocess.run([*command, "--master", "local[2]"], capture_output=True, text=True, timeout=600, env=env)
    shared = tmp_path / "shared"
    cluster = subprocess.run(
        [*command, "--master", "local-cluster[2,1,1024]", "--snapshot-dir", str(shared)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert local.returncode == 0 and cluster.returncode == 0, (local.stderr, cluster.stderr)
    assert json.loads(cluster.stdout) == json.loads(local.stdout)
    assert os.listdir(shared) == []  # the snapshot is removed after the report


def test_a_parquet_snapshot_is_streamed_in_chunks_into_files_of_bounded_size(snap, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    monkeypatch.setattr(snapshot, "ROWS_PER_PARQUET_FILE", 20)
    monkeypatch.setattr(snapshot, "ROWS_PER_PARQUET_CHUNK", 7)  # not a divisor: a file's last chunk is cut to fit
    shared = snapshot.to_parquet(snap, str(tmp_path))
    files = sorted((Path(shared.parquet) / "messages").iterdir())
    assert len(files) == -(-snap.messages // 20) and snap.messages > 40
    groups = [pq.ParquetFile(f).metadata for f in files]
    assert [m.num_rows for m in groups[:-1]] == [20] * (len(files) - 1)
    assert max(m.row_group(i).num_rows for m in groups for i in range(m.num_row_groups)) == 7  # never more held at once
    written = [tuple(row.values()) for f in files for row in pq.read_table(f).to_pylist()]
    with sqlite3.connect(snap.path) as conn:
        assert written == conn.execute(f"SELECT {figures.MESSAGE_COLUMNS} FROM messages ORDER BY id").fetchall()


def test_an_empty_table_is_written_as_one_parquet_file_carrying_its_columns(tmp_path):
    import pyarrow.parquet as pq

    sqsqlite.connect(str(tmp_path / "empty.db")).create_queue("idle").db.close()
    snap = snapshot.take(str(tmp_path / "empty.db"), str(tmp_path / "s.db"))
    shared = snapshot.to_parquet(snap, str(tmp_path / "shared"))
    (only,) = (Path(shared.parquet) / "messages").iterdir()
    table = pq.read_table(only)
    assert table.num_rows == 0 and table.column_names == figures.MESSAGE_COLUMNS.split(", ")


def test_spark_reads_the_parquet_snapshot_by_a_file_uri_not_against_its_default_file_system(spark, snap, every_state, tmp_path):
    # A cluster's default file system is often HDFS; a bare path would be looked for there.
    path, as_of = every_state
    shared = snapshot.to_parquet(snap, str(tmp_path / "a shared dir"))
    spark.conf.set("fs.defaultFS", "nowhere:///")
    try:
        result = sj.compute(spark, shared, top=3, database=path)
    finally:
        spark.conf.unset("fs.defaultFS")
    assert result.to_dict() == figures.compute(path, as_of, top=3).to_dict()
    assert sj.local_uri(str(tmp_path / "a b")) == f"file://{tmp_path}/a b"
    # Hadoop reads [ ] { } * ? and a backslash in a path it reads as a glob: escaped, so a
    # --snapshot-dir holding them is read as named.
    assert sj.local_uri(str(tmp_path / "s[1]{a}*?")) == f"file://{tmp_path}/s\\[1\\]\\{{a\\}}\\*\\?"
    odd = snapshot.to_parquet(snap, str(tmp_path / "s[1]"))
    assert sj.compute(spark, odd, top=3, database=path).to_dict() == figures.compute(path, as_of, top=3).to_dict()


def _no_spark_needed(*args, **kwargs):
    raise AssertionError("Spark started after the snapshot failed")


def test_a_snapshot_dir_that_cannot_be_created_is_one_line_exit_255_and_no_traceback(every_state, tmp_path, monkeypatch):
    from sqsqlite.cli.main import cli

    monkeypatch.setattr(report_cli, "get_session", _no_spark_needed)
    (tmp_path / "a-file").write_text("")
    blocked = tmp_path / "a-file" / "shared"  # under a regular file: nothing can be created there, even by root
    result = CliRunner().invoke(cli, ["report", "--db", every_state[0], "--master", "spark://head:7077", "--snapshot-dir", str(blocked)])
    assert result.exit_code == 255, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output and "unexpected error" not in result.output
    assert result.output.startswith(f"sqsqlite: cannot write the snapshot to {blocked}/sqsqlite-snapshot-")
    assert result.output.rstrip().endswith(f"Not a directory: {blocked}")


def test_a_write_that_fails_part_way_is_one_line_and_leaves_no_folder_behind(every_state, tmp_path, monkeypatch):
    import pyarrow.parquet as pq

    def disk_full(self, table, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_cli, "get_session", _no_spark_needed)
    monkeypatch.setattr(pq.ParquetWriter, "write_table", disk_full)
    shared = tmp_path / "shared"
    result = CliRunner().invoke(report, ["--db", every_state[0], "--snapshot-dir", str(shared)])
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert "cannot write the snapshot to" in result.output and result.output.rstrip().endswith("No space left on device")
    assert os.listdir(shared) == []


def test_top_0_leaves_the_most_received_section_out_instead_of_saying_none_were_received(every_state):
    path, as_of = every_state
    assert "Most received messages (top 3" in render.table(figures.compute(path, as_of, top=3))
    assert "Most received messages" not in render.table(figures.compute(path, as_of, top=0))


def test_a_snapshot_of_one_account_and_region_copies_only_its_queues_and_their_messages(tmp_path):
    path = str(tmp_path / "scoped.db")
    with sqsqlite.connect(path) as db:
        db.create_queue("q").send_message("home")
        west = db.scoped(region="eu-west-1")
        west.create_queue("q").send_message("west")
        west.queue("q").send_message("west again")
    snap = snapshot.take(path, str(tmp_path / "home.db"), scope=("000000000000", "us-east-1"))
    assert snap.messages == 1
    snap = snapshot.take(path, str(tmp_path / "west.db"), scope=("000000000000", "eu-west-1"))
    assert snap.messages == 2
    with contextlib.closing(sqlite3.connect(snap.path)) as conn:
        assert conn.execute("SELECT name FROM queues").fetchall() == [("q",)]
    assert snapshot.take(path, str(tmp_path / "all.db")).messages == 3  # no scope: every queue, as before
