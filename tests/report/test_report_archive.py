"""The report's archive section: per queue and hour, deletes, the time from send to delete and the
receives before it, read from a small archive whose figures are known, equal in Spark and in the
oracle; and nothing (no error) for a file without an archive."""

from __future__ import annotations

import csv
import json
import sqlite3

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite import migrate
from sqsqlite.report import archive as A
from sqsqlite.report import figures, render, snapshot
from sqsqlite.report import spark as sj
from sqsqlite.report.cli import report as report_command
from sqsqlite.store import Store

HOUR_MS = 3_600_000
# Epoch ms far past 2^32, so a timestamp cut to 32 bits on its way through JDBC would show.
H0 = 1_800_000_000_000 - 1_800_000_000_000 % HOUR_MS  # an hour's start
AS_OF = H0 + 3 * HOUR_MS


def build_archive(path: str) -> None:
    """Queue "work" keeps an archive. Hour 0: ten messages sent at H0, the i-th (1..10) deleted
    i*10 s later; the last four received twice before (their first visibility ran out). Hour 1:
    two messages deleted by a batch 5 and 7 minutes after their send, and three purged (not
    deletes). Queue "plain" keeps none, and deletes too."""
    clock = sqsqlite.ManualClock(H0)
    with sqsqlite.connect(path, clock=clock) as db:
        work, plain = db.create_queue("work"), db.create_queue("plain")
        db.set_archive(work.url, 7 * 86_400)
        work.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(10)])
        first = {m.body: m for m in work.receive_message(max_number_of_messages=10, visibility_timeout=60)}
        assert len(first) == 10
        handles = {body: m.receipt_handle for body, m in first.items()}
        for i in range(1, 11):
            clock.set(H0 + i * 10_000)
            if i == 7:  # m6..m9's visibility ran out at 60 s: received again
                again = work.receive_message(max_number_of_messages=10, visibility_timeout=600)
                assert sorted(m.body for m in again) == ["m6", "m7", "m8", "m9"]
                handles.update({m.body: m.receipt_handle for m in again})
            work.delete_message(handles[f"m{i - 1}"])
        plain.send_message("not archived")
        plain.delete_message(plain.receive_message()[0].receipt_handle)

        clock.set(H0 + HOUR_MS + 60_000)
        work.send_message_batch([{"Id": str(i), "MessageBody": f"n{i}"} for i in range(2)])
        got = work.receive_message(max_number_of_messages=2)
        clock.advance(5 * 60 - 1)
        work.delete_message_batch([{"Id": "0", "ReceiptHandle": got[0].receipt_handle}])
        clock.advance(2 * 60)
        work.delete_message_batch([{"Id": "1", "ReceiptHandle": got[1].receipt_handle}])
        work.send_message_batch([{"Id": str(i), "MessageBody": f"p{i}"} for i in range(3)])
        work.purge_queue()


@pytest.fixture(scope="module")
def archived(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("archive") / "archive.db")
    build_archive(path)
    return path


def test_the_oracle_reads_the_known_deletes_times_and_receives_per_hour(archived):
    report = figures.compute(archived, AS_OF, history_since_ms=AS_OF - 3 * HOUR_MS, history_until_ms=AS_OF)
    assert report.archive_queues == 1
    [work] = report.archive  # "plain" keeps no archive
    assert work.queue == "work"
    first, second, third = work.hours
    assert [h.start_ms for h in work.hours] == [H0, H0 + HOUR_MS, H0 + 2 * HOUR_MS]
    # 10 s .. 100 s: nearest rank 5, 9 and 10 of ten.
    assert (first.deletes, first.purged, first.p50_ms, first.p90_ms, first.p99_ms) == (10, 0, 50_000, 90_000, 100_000)
    assert (first.mean_receives, first.max_receives) == (1.4, 2)
    assert (second.deletes, second.purged, second.p50_ms, second.p90_ms, second.p99_ms) == (2, 3, 299_000, 419_000, 419_000)
    assert (second.mean_receives, second.max_receives) == (1.0, 1)
    assert (third.deletes, third.purged, third.p50_ms, third.mean_receives, third.max_receives) == (0, 0, None, None, None)
    # The window: twelve deletes (the purge's three apart), ranks 6, 11 and 12 of twelve.
    assert (work.deletes, work.purged, work.p50_ms, work.p90_ms, work.p99_ms) == (12, 3, 60_000, 299_000, 419_000)
    assert (work.mean_receives, work.max_receives) == (round(16 / 12, 2), 2)


def test_the_window_counts_deletes_from_its_first_whole_hour_until_its_end(archived):
    report = figures.compute(archived, AS_OF, history_since_ms=H0 + HOUR_MS + 1, history_until_ms=H0 + HOUR_MS + 7 * 60_000)
    [work] = report.archive
    assert [h.start_ms for h in work.hours] == [H0 + HOUR_MS]
    assert (work.deletes, work.purged, work.p50_ms) == (1, 0, 299_000)  # the second delete falls after the end


def test_the_table_shows_each_archiving_queues_figures_over_the_window(archived):
    text = render.table(figures.compute(archived, AS_OF, history_since_ms=AS_OF - 3 * HOUR_MS, history_until_ms=AS_OF))
    section = text[text.index("Archive ") :].splitlines()
    assert "time from send to delete" in section[0]
    assert section[3].split() == ["work", "12", "3", "1m", "0s", "4m", "59s", "6m", "59s", "1.33", "2"]


def test_spark_reads_the_archive_over_jdbc_and_agrees_with_the_oracle(spark, archived, tmp_path):
    since = AS_OF - 3 * HOUR_MS
    snap = snapshot.take(archived, str(tmp_path / "s.db"), AS_OF, None, since, AS_OF)
    assert (snap.archive_rows, snap.archive_queues) == (15, 1)  # plain's delete is not archived
    result = sj.compute(spark, snap, database=archived)
    expected = figures.compute(archived, AS_OF, history_since_ms=since, history_until_ms=AS_OF)
    assert result.archive[0].hours[0].p99_ms == 100_000
    assert result == expected
    # And from a Parquet snapshot, as a cluster reads it.
    assert sj.compute(spark, snapshot.to_parquet(snap, str(tmp_path / "pq")), database=archived) == expected


@pytest.mark.parametrize("on", [False, True])
def test_an_archive_holding_nothing_in_the_window_says_so_only_when_one_is_kept(tmp_path, on):
    path = str(tmp_path / "empty.db")
    with sqsqlite.connect(path, clock=sqsqlite.ManualClock(H0)) as db:
        q = db.create_queue("q")
        if on:
            db.set_archive(q.url, 86_400)
        q.send_message("kept")
    report = figures.compute(path, AS_OF)
    assert report.archive == [] and report.archive_queues == int(on)
    text = render.table(report)
    assert ("no deletes archived in the window" in text) is on and ("Archive " in text) is on


def test_a_file_older_than_the_archive_gives_no_archive_section_and_no_error(spark, tmp_path):
    path = str(tmp_path / "old.db")
    with sqsqlite.connect(path, clock=sqsqlite.ManualClock(H0)) as db:
        q = db.create_queue("q")
        q.send_message("m")
        q.delete_message(q.receive_message()[0].receipt_handle)
    store = Store(path)
    migrate.downgrade(store, "0015")
    store.close()
    with sqlite3.connect(path) as conn:
        assert not A.kept(conn)
    snap = snapshot.take(path, str(tmp_path / "s.db"), AS_OF)
    assert (snap.archive_rows, snap.archive_queues) == (0, 0)
    result = sj.compute(spark, snap, database=path)
    assert result == figures.compute(path, AS_OF)
    assert result.archive == [] and "Archive " not in render.table(result)


def test_the_command_writes_the_archive_as_csv_json_parquet_and_a_chart(spark, archived, tmp_path):
    out = tmp_path / "out"
    r = CliRunner().invoke(
        report_command, ["--db", archived, "--as-of", str(AS_OF), "--since", "3h", "--out", str(out), "--parquet"], catch_exceptions=False
    )
    assert r.exit_code == 0, r.output
    assert "Archive " in r.output
    for name in ("archive.csv", "archive_queues.csv", "archive.parquet", "archive_queues.parquet", "archive.png"):
        assert (out / name).exists(), name
    with open(out / "archive.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(row["hour_ms"], row["deletes"], row["p50_ms"], row["mean_receives"]) for row in rows] == [
        (str(H0), "10", "50000", "1.4"),
        (str(H0 + HOUR_MS), "2", "299000", "1.0"),
        (str(H0 + 2 * HOUR_MS), "0", "", ""),
    ]
    import pyarrow.parquet as pq

    table = pq.read_table(out / "archive_queues.parquet").to_pylist()
    assert table == [
        {"queue": "work", "deletes": 12, "purged": 3, "p50_ms": 60_000, "p90_ms": 299_000, "p99_ms": 419_000}
        | {"mean_receives": 1.33, "max_receives": 2}
    ]
    data = json.loads((out / "report.json").read_text())
    assert data["archive_queues"] == 1 and data["archive"][0]["hours"][0]["p90_ms"] == 90_000


def test_a_snapshot_of_one_account_and_region_copies_only_its_queues_archives(tmp_path):
    path = str(tmp_path / "scoped.db")
    with sqsqlite.connect(path, clock=sqsqlite.ManualClock(H0)) as db:
        for scoped, n in ((db, 1), (db.scoped(region="eu-west-1"), 2)):
            q = scoped.create_queue("q")
            scoped.set_archive(q.url, 86_400)
            q.send_message_batch([{"Id": str(i), "MessageBody": "m"} for i in range(n)])
            q.delete_message_batch(
                [{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(q.receive_message(max_number_of_messages=n))]
            )
    home = snapshot.take(path, str(tmp_path / "home.db"), AS_OF, scope=("000000000000", "us-east-1"))
    west = snapshot.take(path, str(tmp_path / "west.db"), AS_OF, scope=("000000000000", "eu-west-1"))
    assert [(s.archive_rows, s.archive_queues) for s in (home, west)] == [(1, 1), (2, 1)]
