"""Administration commands through CliRunner: db, stats, peek, prune, redrive, export/import,
demo, the lazily loaded report/serve commands, and the help text."""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import re
import sys

import click
import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite import records
from sqsqlite.cli import admin, demo, main
from sqsqlite.cli.main import cli
from sqsqlite.cli.options import Settings
from sqsqlite.errors import DatabaseError
from sqsqlite.store import HEAD_REVISION


class ClockedSettings(Settings):
    """Settings whose database runs on the test's ManualClock (timing rules without sleeping)."""

    clock: sqsqlite.ManualClock | None = None

    def connect(self, path):
        return sqsqlite.connect(path, clock=self.clock, region=self.region, account_id=self.account_id, endpoint=self.endpoint_url)


@pytest.fixture
def sq(tmp_path, clock):
    path = str(tmp_path / "admin.db")
    runner = CliRunner()

    def run(*args: str, code: int = 0, db: str = path):
        settings = ClockedSettings()
        settings.clock = clock
        result = runner.invoke(cli, ["--db", db, *args], obj=settings)
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
        assert "Traceback" not in result.output
        return result

    run.json = lambda *args, **kw: json.loads(run(*args, **kw).stdout or "null")
    run.path = path
    run.db = lambda: sqsqlite.connect(path, clock=clock)
    return run


def _queue_with_dead_letters(sq, n: int):
    with sq.db() as db:
        dlq = db.create_queue("orders-dlq")
        q = db.create_queue("orders", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": "1"})})
        for i in range(n):
            q.send_message(f"m{i}")
        q.receive_message(max_number_of_messages=10, visibility_timeout=0)
        assert q.receive_message(max_number_of_messages=10) == []  # all moved
        return q.arn, dlq.arn


# ---------------------------------------------------------------------- db


# The revisions, newest first (numbered 0001 on, one a migration).
REVISIONS = [f"{n:04d}" for n in range(int(HEAD_REVISION), 0, -1)]
HEAD, PREVIOUS = REVISIONS[0], REVISIONS[1]
NEWER = f"{int(HEAD_REVISION) + 1:04d}"


def test_db_current_upgrade_downgrade_and_history_move_between_revisions(sq):
    assert sq("db", "current").stdout == "base\n"
    assert sq("db", "upgrade").stdout == f"base\t{HEAD}\n"
    assert sq.json("db", "current", "--output", "json") == {"Revision": HEAD}
    assert sq("db", "downgrade").stdout == f"{HEAD}\t{PREVIOUS}\n"
    assert sq("db", "downgrade", "base").stdout == f"{PREVIOUS}\tbase\n"  # a file only the db commands touched holds no rows
    history = sq.json("--output", "json", "db", "history")["Revisions"]
    assert [h["Revision"] for h in history] == REVISIONS
    sq("list-queues")  # any other command upgrades again
    assert sq("db", "current").stdout == f"{HEAD}\n"


@pytest.mark.parametrize(
    ("revision", "tables"), [("base", "fifo_dedup, messages, meta, queues), every queue and message"), ("0001", "fifo_dedup)")]
)
def test_db_downgrade_that_would_drop_data_needs_force_and_without_it_fails_changing_nothing(sq, revision, tables):
    sq("create-queue", "--queue-name", "orders.fifo", "--attributes", "FifoQueue=true")
    sq("send-message", "--queue-url", "orders.fifo", "--message-body", "kept", "--message-group-id", "g", "--message-deduplication-id", "d")
    r = sq("db", "downgrade", revision, code=255)
    assert r.stdout == "" and r.stderr == (
        f"sqsqlite: Downgrading {sq.path!r} to {revision!r} would drop tables that hold data ({tables}; nothing was changed. "
        "To drop them, run it again with --force (after `sqsqlite export` of any queue to keep).\n"
    )
    assert sq("db", "current").stdout == f"{HEAD}\n"
    assert [m["Body"] for m in sq.json("receive-message", "--queue-url", "orders.fifo")["Messages"]] == ["kept"]
    assert sq("db", "downgrade", revision, "--force").stdout == f"{HEAD}\t{revision}\n"


@pytest.mark.parametrize(
    "args",
    [("upgrade", "nonsense"), ("upgrade", "head:base"), ("upgrade", "+99"), ("downgrade", "--", "-99"), ("downgrade", "0013")],
    ids=lambda a: " ".join(a),
)
def test_db_upgrade_or_downgrade_to_a_revision_alembic_cannot_reach_is_bad_usage_listing_the_known_ones(sq, args):
    sq("db", "upgrade", "0004")
    r = sq("db", *args, code=252)
    assert f"{args[-1]!r}" in r.stderr and f"Known revisions, newest first: {', '.join(REVISIONS)}" in r.stderr
    assert "unexpected error" not in r.stderr
    assert sq("db", "current").stdout == "0004\n"  # unchanged


def test_db_upgrade_and_downgrade_of_a_file_newer_than_this_sqsqlite_say_so_as_every_other_command_does(sq):
    import sqlite3

    sq("create-queue", "--queue-name", "a")
    with contextlib.closing(sqlite3.connect(sq.path)) as conn, conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (NEWER,))
    said = (
        f"sqsqlite: {sq.path!r} has unknown schema revision '{NEWER}' (a newer sqsqlite's, or another application's; this sqsqlite "
        f"knows revisions up to '{HEAD}'); a newer sqsqlite's file needs sqsqlite upgraded to use it.\n"
    )
    for args in (("db", "upgrade"), ("db", "upgrade", HEAD), ("db", "downgrade"), ("db", "downgrade", "base"), ("list-queues",)):
        assert sq(*args, code=255).stderr == said, args
    assert sq("db", "current").stdout == f"{NEWER}\n"  # unchanged


@pytest.mark.parametrize(
    "args", [("list-queues",), ("stats",), ("db", "current"), ("db", "upgrade"), ("db", "downgrade"), ("create-queue", "--queue-name", "q")]
)
def test_any_command_on_another_alembic_managed_applications_database_refuses_it_and_leaves_it_byte_for_byte(tmp_path, args):
    import hashlib
    import sqlite3

    path = tmp_path / "app.db"
    with contextlib.closing(sqlite3.connect(path)) as conn, conn:  # journal_mode delete, as SQLite makes it
        conn.execute("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)")
        conn.execute("INSERT INTO alembic_version VALUES ('ae1027a6acf')")
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    result = CliRunner().invoke(cli, ["--db", str(path), *args])
    assert result.exit_code == 255 and result.stderr == (
        f"sqsqlite: {str(path)!r} is a SQLite database but not a sqsqlite one (it has tables, and not sqsqlite's); refusing to change it.\n"
    )
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # not even switched to WAL


# ---------------------------------------------------------------------- stats


def test_stats_wide_prints_one_table_of_every_queue_with_its_dead_letter_depth(sq, clock):
    _queue_with_dead_letters(sq, 2)
    with sq.db() as db:
        db.queue("orders").send_message("fresh")
        db.queue("orders").send_message("later", delay_seconds=60)
    clock.advance(5)
    out = sq("stats", "--wide").stdout
    lines = out.splitlines()
    assert [c.strip() for c in lines[1].strip("|").split("|")] == [
        "Queue",
        "Visible",
        "InFlight",
        "Delayed",
        "OldestAgeSeconds",
        "DeadLetterQueue",
        "DeadLetterDepth",
        "ApproximateNumberOfNoisyGroups",
        "ApproximateNumberOfMessagesVisibleInQuietGroups",
        "ApproximateNumberOfMessagesNotVisibleInQuietGroups",
        "ApproximateNumberOfMessagesDelayedInQuietGroups",
        "ApproximateAgeOfOldestMessageInQuietGroups",
    ]
    rows = {c[0]: c for c in ([x.strip() for x in line.strip("|").split("|")] for line in lines[3:-1])}
    assert rows["orders"] == ["orders", "1", "0", "1", "5.0", "orders-dlq", "2", "0", "1", "0", "1", "5.0"]
    assert rows["orders-dlq"][:4] == ["orders-dlq", "2", "0", "0"]


def test_stats_as_json_lists_the_queues(sq):
    _queue_with_dead_letters(sq, 1)
    queues = {q["Queue"]: q for q in sq.json("stats", "--output", "json")["Queues"]}
    assert queues["orders"]["DeadLetterDepth"] == 1 and queues["orders-dlq"]["Visible"] == 1


def test_stats_as_json_gives_a_fair_queues_figures_under_their_cloudwatch_names(sq):
    with sq.db() as db:
        q = db.create_queue("tenants")
        for _ in range(4):
            q.send_message_batch([{"Id": str(i), "MessageBody": "b", "MessageGroupId": "big"} for i in range(10)])
        q.send_message("small", message_group_id="small")
        for _ in range(3):
            q.receive_message(max_number_of_messages=10)
    (row,) = sq.json("stats", "--output", "json")["Queues"]
    assert {k: v for k, v in row.items() if "Quiet" in k or "Noisy" in k} == {
        "ApproximateNumberOfNoisyGroups": 1,
        "ApproximateNumberOfMessagesVisibleInQuietGroups": 1,
        "ApproximateNumberOfMessagesNotVisibleInQuietGroups": 0,
        "ApproximateNumberOfMessagesDelayedInQuietGroups": 0,
        "ApproximateAgeOfOldestMessageInQuietGroups": 0.0,
    }


def test_stats_since_gives_each_queues_counters_and_rates_over_the_window(sq, clock):
    clock.set(1_800_000_000_000)  # a minute's start
    with sq.db() as db:
        db.set_history_retention(14 * 86_400)
        q = db.create_queue("orders")
        db.create_queue("idle")
        q.send_message_batch([{"Id": str(i), "MessageBody": "abc"} for i in range(6)])
        clock.advance(120)
        got = q.receive_message(max_number_of_messages=4)
        q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got[:3])])
        clock.advance(3600)
        q.send_message("the last hour's first send")
    data = sq.json("stats", "--since", "1h", "--output", "json")
    assert data["Until"] == "2027-01-15T09:02:00Z" and data["Since"] == "2027-01-15T08:02:00Z"
    rows = {r["Queue"]: r for r in data["Queues"]}
    # The window is the minutes that start in the last hour: the batch sent 62 minutes ago is
    # left out, the receive and deletes of 60 minutes ago are in.
    assert rows["orders"] == {
        "Queue": "orders",
        "Sent": 1,
        "Received": 4,
        "Redelivered": 0,
        "Deleted": 3,
        "DeadLettered": 0,
        "Expired": 0,
        "Purged": 0,
        "Moved": 0,
        "MovedIn": 0,
        "EmptyReceives": 0,
        "BytesSent": 26,
        "ArrivalsPerMinute": 0.02,
        "CompletionsPerMinute": 0.05,
        "NetPerMinute": -0.03,
        "Backlog": 4,
        "OldestAgeSeconds": 3720,
    }
    assert rows["idle"]["Sent"] == 0 and rows["idle"]["Backlog"] is None
    two = {r["Queue"]: r for r in sq.json("stats", "--since", "2h", "--output", "json")["Queues"]}["orders"]
    assert (two["Sent"], two["Received"], two["Deleted"], two["CompletionsPerMinute"]) == (7, 4, 3, 0.03)
    table = sq("stats", "--since", "90m").stdout
    assert "ArrivalsPerMinute" in table and "| orders" in table


@pytest.mark.parametrize("since", ["1x", "h", "0m", "-1h", "1h 2"])
def test_stats_since_refuses_what_is_not_a_duration(sq, since):
    r = sq("stats", "--since", since, code=252)
    assert "is not a duration" in r.stderr


def test_stats_on_an_empty_database_says_there_are_no_queues_and_how_to_make_one(sq):
    sq("db", "upgrade")  # the file, with no queue in it
    result = sq("stats")
    assert "Queue" not in result.stdout and "FileBytes" in result.stdout  # the file's figures alone
    assert "No queues in" in result.stderr and "sqsqlite create-queue --queue-name NAME" in result.stderr
    out = sq.json("stats", "--output", "json")
    assert out["Queues"] == [] and set(out["File"]) == {"FileBytes", "FreePages", "FreeBytes", "WalBytes", "AutoVacuum"}


def _filled_and_drained(sq, old: bool = False) -> set[str]:
    """A file that held a backlog and holds one message now (its id returned); ``old``: made
    with auto_vacuum off, as sqsqlite made files before."""
    if old:
        import sqlite3

        conn = sqlite3.connect(sq.path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    with sq.db() as db:
        q = db.create_queue("q")
        for _ in range(200):
            q.send_message_batch([{"Id": str(i), "MessageBody": "x" * 2000} for i in range(10)])
        q.purge_queue()
        q.send_message("kept")
        return {m.message_id for m in q.peek("all", 10)}


def test_stats_shows_the_files_size_free_pages_and_wal_in_a_short_section_of_their_own(sq):
    _filled_and_drained(sq)
    table = sq("stats").stdout
    queues, file = table.split("| Name ")  # the queues' table first, then the file's two columns
    assert "FileBytes" not in queues and "FreePages" in file and "WalBytes" in file and "AutoVacuum" in file
    figures = sq.json("stats", "--output", "json")["File"]
    assert figures["AutoVacuum"] == "incremental" and figures["FreePages"] > 0
    assert figures["FreeBytes"] == figures["FreePages"] * 4096 and figures["FileBytes"] >= 0 and figures["WalBytes"] >= 0


def test_vacuum_makes_an_older_file_compact_and_incremental_and_keeps_its_messages(sq):
    kept = _filled_and_drained(sq, old=True)
    out = sq.json("vacuum", "--output", "json")
    assert out["AutoVacuum"] == "incremental" and out["FreePagesBefore"] > 1000 and out["FreePagesAfter"] == 0
    assert out["FileBytesAfter"] < out["FreePagesBefore"] * 4096 / 10
    with sq.db() as db:
        assert {m.message_id for m in db.queue("q").peek("all", 10)} == kept
        assert db.integrity_check() == "ok"
    assert sq.json("vacuum", "--output", "json")["FreePagesBefore"] == 0  # again: nothing left to do


def test_vacuum_into_writes_a_compact_copy_and_refuses_to_replace_a_file_in_one_line(sq, tmp_path, clock):
    kept = _filled_and_drained(sq, old=True)
    target = str(tmp_path / "copy.db")
    out = sq.json("vacuum", "--into", target, "--output", "json")
    assert out["CopyBytes"] < out["FileBytes"] / 10
    with sqsqlite.connect(target, clock=clock) as copy:
        assert {m.message_id for m in copy.queue("q").peek("all", 10)} == kept
    r = sq("vacuum", "--into", target, code=255)
    assert r.stderr.splitlines() == [f"sqsqlite: {target!r} exists already; vacuum --into writes a new file and never replaces one."]


def test_vacuum_while_another_process_holds_the_write_lock_refuses_in_one_line_and_changes_nothing(sq):
    import fcntl

    from sqsqlite import space

    _filled_and_drained(sq, old=True)
    before = space.file_space(sq.path)
    fd = os.open(space.lock_path(sq.path), os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        r = sq("vacuum", "--wait", "0.1", code=255)
    finally:
        os.close(fd)
    [line] = [x for x in r.stderr.splitlines() if x.startswith("sqsqlite:")]
    assert "another process is writing" in line and "--wait" in line
    after = space.file_space(sq.path)
    assert (after.free_pages, after.auto_vacuum) == (before.free_pages, "none")


def test_vacuum_of_no_database_or_of_another_applications_file_is_refused_and_creates_nothing(sq, tmp_path):
    missing = str(tmp_path / "nope.db")
    assert "There is no database" in sq("vacuum", code=255, db=missing).stderr
    assert not os.path.exists(missing)
    import sqlite3

    other = str(tmp_path / "other.db")
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    assert "not a sqsqlite one" in sq("vacuum", code=255, db=other).stderr


def test_stats_watch_refreshes_until_ctrl_c_and_exits_130(sq, monkeypatch):
    sq("create-queue", "--queue-name", "q")
    pauses = []

    def pause(seconds):
        pauses.append(seconds)
        if len(pauses) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(admin, "_sleep", pause)
    out = sq("stats", "--watch", "0.5", code=130).stdout
    assert pauses == [0.5, 0.5]
    assert out.count("Ctrl-C to stop") == 2 and out.count("| q ") == 2 and out.count("CloudWatch name.") == 2
    assert out.count("| AutoVacuum ") == 2 and out.endswith("+\n\n")  # each frame ends with the file's table


def test_ctrl_c_on_stats_watch_in_a_real_process_ends_the_line_and_exits_130(tmp_path):
    import os
    import selectors
    import signal
    import subprocess
    import time

    env = {**os.environ, "SQSQLITE_DB": str(tmp_path / "watched.db")}
    assert CliRunner().invoke(cli, ["create-queue", "--queue-name", "q"], env=env).exit_code == 0
    script = "import sys; from sqsqlite.cli.entry import main; sys.argv = ['sqsqlite', 'stats', '--watch', '0.5']; main()"
    # Ctrl-C as a terminal gives it: a suite started in the background of a non-interactive shell
    # (as a CI runner may) ignores SIGINT, and a child would inherit that and never see it.
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        seen, deadline = b"", time.monotonic() + 30
        with selectors.DefaultSelector() as selector:  # bounded: wait for the first frame, then interrupt
            selector.register(proc.stdout, selectors.EVENT_READ)
            while b"| q " not in seen and time.monotonic() < deadline:
                if selector.select(timeout=1):
                    chunk = os.read(proc.stdout.fileno(), 65536)
                    if not chunk:  # it ended before its first frame
                        break
                    seen += chunk
        assert b"| q " in seen, seen
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 130, err
    assert (seen + out).endswith(b"\n\n") and b"Traceback" not in err


@pytest.mark.parametrize("seconds", ["nan", "NaN", "inf", "-inf", "1e400", "0", "86401"])
def test_stats_watch_outside_a_tenth_of_a_second_to_a_day_is_bad_usage_before_any_frame(sq, monkeypatch, seconds):
    monkeypatch.setattr(admin, "_sleep", lambda s: pytest.fail(f"slept {s}"))
    r = sq("stats", "--watch", seconds, code=252)
    assert "Invalid value for '--watch'" in r.stderr and "is not in the range 0.1<=x<=86400." in r.stderr
    assert r.stdout == ""


# ---------------------------------------------------------------------- peek


def test_peek_shows_messages_by_state_without_receiving_them(sq):
    with sq.db() as db:
        q = db.create_queue("q")
        q.send_message("in flight")
        q.receive_message(visibility_timeout=60)
        q.send_message("visible", message_attributes={"k": "v"})
        q.send_message("delayed", delay_seconds=30)
    everything = sq.json("peek", "--queue-url", "q")["Messages"]
    assert {m["Body"]: m["State"] for m in everything} == {"in flight": "in-flight", "visible": "visible", "delayed": "delayed"}
    [visible] = sq.json("peek", "--queue-url", "q", "--state", "visible")["Messages"]
    assert visible["MessageAttributes"] == {"k": {"DataType": "String", "StringValue": "v"}}
    assert "ReceiptHandle" not in visible and visible["Attributes"]["ApproximateReceiveCount"] == "0"
    assert len(sq.json("peek", "--queue-url", "q", "--limit", "1")["Messages"]) == 1
    with sq.db() as db:  # peeking changed nothing
        [m] = db.queue("q").receive_message()
        assert m.body == "visible" and m.receive_count == 1


def test_peek_on_an_empty_state_prints_nothing(sq):
    sq("create-queue", "--queue-name", "q")
    assert sq("peek", "--queue-url", "q", "--state", "in-flight").stdout == ""


# ---------------------------------------------------------------------- prune


def test_prune_removes_expired_messages_and_says_how_many(sq, clock):
    with sq.db() as db:
        q = db.create_queue("short", attributes={"MessageRetentionPeriod": "60"})
        q.send_message("old")
        q.send_message("older")
        clock.advance(61)
        q2 = db.create_queue("long")
        q2.send_message("kept")
    assert sq.json("prune") == {"ExpiredMessagesRemoved": 2}
    assert sq.json("prune") == {"ExpiredMessagesRemoved": 0}
    assert len(sq.json("peek", "--queue-url", "long")["Messages"]) == 1


def test_history_is_off_until_turned_on_and_its_retention_then_prunes(sq, clock):
    sq("db", "upgrade")
    assert sq.json("history") == {"History": "off"}
    assert sq.json("history", "--retention", "14d") == {"History": "on", "RetentionSeconds": 14 * 86_400}
    with sq.db() as db:
        q = db.create_queue("q")
        q.send_message("two hours ago")
        clock.advance(3600)
        q.send_message("an hour ago")
        clock.advance(3600)
    assert sq.json("history", "--retention", "90m") == {"History": "on", "RetentionSeconds": 5400}
    assert sq.json("prune") == {"ExpiredMessagesRemoved": 0}
    with sq.db() as db:
        assert [r["sent"] for r in db.history(1)] == [1]  # the older minute went
        assert db.history_totals()["q"]["sent"] == 2  # and stays in the totals
    r = sq("history", "--retention", "30m", code=252)
    assert "'--retention'" in r.stderr and "3600" in r.stderr
    r = sq("history", "--retention", "1d", "--off", code=252)
    assert "not both" in r.stderr
    with sq.db() as db:
        assert db.history_retention == 5400  # unchanged
    assert sq.json("history", "--off") == {"History": "off"}
    with sq.db() as db:
        assert db.history(1) == [] and db.history_totals() == {}  # the rows kept went with it


def test_stats_since_says_plainly_that_no_history_is_kept_when_it_is_off(sq):
    with sq.db() as db:
        db.create_queue("orders").send_message("not counted")
    r = sq("stats", "--since", "1h")
    assert "No history is kept" in r.stderr and "sqsqlite history --retention 14d" in r.stderr
    assert "orders" not in r.stdout  # no row of zeros as if measured
    data = sq.json("stats", "--since", "1h", "--output", "json")
    assert data["History"] == "off" and data["Queues"] == []


# ---------------------------------------------------------------------- redrive


def test_redrive_moves_dead_letters_back_to_their_source_queue(sq):
    _queue_with_dead_letters(sq, 3)
    out = sq.json("redrive", "--queue-url", "orders-dlq")
    assert out["Status"] == "COMPLETED" and out["ApproximateNumberOfMessagesMoved"] == 3
    with sq.db() as db:
        assert sorted(m.body for m in db.queue("orders").receive_message(max_number_of_messages=10)) == ["m0", "m1", "m2"]


def test_redrive_to_another_queue_at_a_rate(sq, clock):
    _queue_with_dead_letters(sq, 2)
    sq("create-queue", "--queue-name", "elsewhere")
    start = clock.now_ms()
    out = sq.json("redrive", "--queue-url", "orders-dlq", "--to", "elsewhere", "--rate", "1")
    assert out["ApproximateNumberOfMessagesMoved"] == 2
    assert clock.now_ms() - start >= 2000  # one message per (manual) second
    assert len(sq.json("peek", "--queue-url", "elsewhere")["Messages"]) == 2


def test_redrive_resumes_a_task_interrupted_halfway(sq):
    _, dlq_arn = _queue_with_dead_letters(sq, 3)
    with sq.db() as db:
        handle = db.start_message_move_task(dlq_arn, max_number_of_messages_per_second=1, background=False)

        def interrupt(task):
            if task.approximate_number_of_messages_moved == 1:
                raise KeyboardInterrupt  # Ctrl-C after the first message

        with pytest.raises(KeyboardInterrupt):
            db.run_message_move_task(handle, interrupt)
    result = sq("redrive", "--queue-url", "orders-dlq")
    assert "Resuming the running move task on orders-dlq" in result.stderr
    out = json.loads(result.stdout)
    assert out["Status"] == "COMPLETED" and out["ApproximateNumberOfMessagesMoved"] == 3
    assert len(sq.json("peek", "--queue-url", "orders")["Messages"]) == 3


def test_redrive_with_another_destination_or_rate_than_the_running_task_is_refused_not_resumed(sq):
    _, dlq_arn = _queue_with_dead_letters(sq, 1)
    sq("create-queue", "--queue-name", "elsewhere")
    with sq.db() as db:
        handle = db.start_message_move_task(dlq_arn, background=False)  # left RUNNING, as after a Ctrl-C
    for flags in (["--to", "elsewhere"], ["--rate", "5"]):
        r = sq("redrive", "--queue-url", "orders-dlq", *flags, code=252)
        assert "a move task on orders-dlq is still running (to each source queue at full per second)" in r.stderr
        assert f"cancel-message-move-task --task-handle {handle}" in r.stderr
    assert sq("peek", "--queue-url", "elsewhere").stdout == ""  # nothing moved by the refused runs
    assert sq.json("redrive", "--queue-url", "orders-dlq")["Status"] == "COMPLETED"  # resumed as it was


def test_redrive_that_finds_a_source_queue_gone_gives_sqs_failure_reason_and_names_the_queue_in_a_hint(sq):
    source_arn, dlq_arn = _queue_with_dead_letters(sq, 1)
    sq("delete-queue", "--queue-url", "orders")
    with sq.db() as db:  # the dead-letter queue stays one: another queue's RedrivePolicy names it
        db.create_queue("payments", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 1})})
    r = sq("redrive", "--queue-url", "orders-dlq")
    out = json.loads(r.stdout)
    assert (out["Status"], out["FailureReason"]) == ("FAILED", "AWS.SimpleQueueService.NonExistentQueue")
    assert f"hint: The destination queue {source_arn} does not exist." in r.stderr


def test_redrive_of_a_queue_that_is_no_dead_letter_queue_is_an_sqs_error(sq):
    sq("create-queue", "--queue-name", "plain")
    r = sq("redrive", "--queue-url", "plain", code=254)
    assert r.stderr.startswith("An error occurred (InvalidParameterValue) when calling the redrive operation: ")


# ---------------------------------------------------------------------- export / import


def _records(path) -> list[dict]:
    """The export's header and messages, its end line checked and left out."""
    lines = [json.loads(line) for line in open(path, encoding="utf-8")]
    assert lines[-1] == {admin.EXPORT_END: True, "MessagesExported": len(lines) - 2}
    return lines[:-1]


def test_export_then_import_into_a_new_database_loses_nothing(sq, tmp_path, clock):
    with sq.db() as db:
        q = db.create_queue("jobs", attributes={"VisibilityTimeout": "45"}, tags={"team": "a"})
        q.send_message("plain")
        q.send_message("with attributes", message_attributes={"s": "text", "n": 3, "b": b"\x00\x01"})
        q.send_message("delayed", delay_seconds=600)
        q.send_message("taken")
        q.receive_message(max_number_of_messages=1)  # "plain" is now in flight, received once
        f = db.create_queue("jobs.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
        f.send_message("first", message_group_id="g")
        f.send_message("second", message_group_id="g")
    out = tmp_path / "jobs.jsonl"
    fifo_out = tmp_path / "jobs-fifo.jsonl"
    assert sq.json("export", "--queue-url", "jobs", str(out))["MessagesExported"] == 4
    sq("export", "--queue-url", "jobs.fifo", str(fifo_out))

    other = str(tmp_path / "restored.db")
    assert sq.json("import", str(out), db=other)["MessagesImported"] == 4
    assert sq.json("import", str(fifo_out), db=other) == {"QueueUrl": "http://localhost:9324/000000000000/jobs.fifo", "MessagesImported": 2}
    again = tmp_path / "again.jsonl"
    sq("export", "--queue-url", "jobs", str(again), db=other)

    before, after = _records(out), _records(again)
    assert before[0] == after[0]  # queue attributes and tags
    assert before[0]["Attributes"]["VisibilityTimeout"] == "45" and before[0]["Tags"] == {"team": "a"}
    by_id = {r["MessageId"]: r for r in after[1:]}
    for rec in before[1:]:
        got = by_id[rec["MessageId"]]
        if rec["ApproximateReceiveCount"]:
            # the in-flight message comes back visible: its receipt handle did not travel
            assert got["VisibleAt"] <= rec["VisibleAt"]
            rec, got = {**rec, "VisibleAt": None}, {**got, "VisibleAt": None}
        assert got == rec
    fifo = sqsqlite.connect(other, clock=clock)
    try:
        assert [m.body for m in fifo.queue("jobs.fifo").receive_message(max_number_of_messages=10)] == ["first", "second"]
    finally:
        fifo.close()


def test_export_to_stdout_writes_json_lines_only(sq):
    sq("create-queue", "--queue-name", "q")
    sq("send-message", "--queue-url", "q", "--message-body", "hi")
    lines = sq("export", "--queue-url", "q", "-").stdout.splitlines()
    assert json.loads(lines[0])["QueueName"] == "q" and json.loads(lines[1])["Body"] == "hi"
    assert json.loads(lines[2]) == {"ExportEnd": True, "MessagesExported": 1} and len(lines) == 3


def test_import_into_a_named_queue_without_a_header(sq, tmp_path):
    sq("create-queue", "--queue-name", "target")
    f = tmp_path / "bare.jsonl"
    f.write_text(json.dumps({"MessageId": "3f1c5d3e-2a9b-4c6e-9d1f-0a1b2c3d4e5f", "Body": "x", "SentTimestamp": 1}) + "\n")
    # SentTimestamp 1 is long past retention: imported, then never returned
    assert sq.json("import", "--queue-url", "target", str(f))["MessagesImported"] == 1


@pytest.mark.parametrize(
    "content, fragment",
    [
        ('{"MessageId": "3f1c5d3e-2a9b-4c6e-9d1f-0a1b2c3d4e5f", "Body": "b", "SentTimestamp": 1}\nnot json\n', "line 2 of"),
        ('{"Body": "no id"}\n', "no MessageId, SentTimestamp"),
    ],
)
def test_import_of_a_bad_file_names_the_line_and_exits_252(sq, tmp_path, content, fragment):
    sq("create-queue", "--queue-name", "target")
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    r = sq("import", "--queue-url", "target", str(f), code=252)
    assert fragment in r.stderr


def test_import_of_a_message_id_that_is_not_a_uuid_names_it_and_imports_nothing_of_its_batch(sq, tmp_path):
    sq("create-queue", "--queue-name", "target")
    f = tmp_path / "ids.jsonl"
    good = {"MessageId": "3F1C5D3E-2A9B-4C6E-9D1F-0A1B2C3D4E5F", "Body": "kept", "SentTimestamp": 10**13}
    f.write_text(json.dumps(good) + "\n" + json.dumps({"MessageId": "not-a-uuid", "Body": "b", "SentTimestamp": 10**13}) + "\n")
    r = sq("import", "--queue-url", "target", str(f), code=254)
    assert "MessageId 'not-a-uuid' is not a UUID" in r.stderr and "Traceback" not in r.stderr
    with sq.db() as db:
        assert db.queue("target").peek() == []
    f.write_text(json.dumps(good) + "\n")
    assert sq.json("import", "--queue-url", "target", str(f))["MessagesImported"] == 1
    [m] = sq.json("receive-message", "--queue-url", "target")["Messages"]
    assert m["MessageId"] == good["MessageId"].lower()  # stored in canonical form


def test_import_without_a_header_or_queue_url_is_bad_usage(sq, tmp_path):
    f = tmp_path / "bare.jsonl"
    f.write_text('{"MessageId": "x", "Body": "b", "SentTimestamp": 1}\n')
    assert "pass --queue-url" in sq("import", str(f), code=252).stderr


def test_export_into_a_missing_directory_is_bad_usage_naming_the_path(sq, tmp_path):
    sq("create-queue", "--queue-name", "q")
    target = tmp_path / "no" / "such" / "dir" / "q.jsonl"
    r = sq("export", "--queue-url", "q", str(target), code=252)
    assert f"cannot write {target}: No such file or directory." in r.stderr and "unexpected error" not in r.stderr


def test_import_takes_every_field_export_writes(sq, tmp_path):
    with sq.db() as db:
        db.create_queue("q.fifo", attributes={"FifoQueue": "true"}).send_message("x", message_group_id="g", message_deduplication_id="d")
    out = tmp_path / "q.jsonl"
    sq("export", "--queue-url", "q.fifo", str(out))
    header, record = _records(out)
    assert set(header) == set(admin._HEADER_FIELDS)
    assert set(record) == set(records.EXPORTED_FIELDS)  # export's format changed: teach import its new fields


def _message(**fields) -> dict:
    return {"MessageId": "3f1c5d3e-2a9b-4c6e-9d1f-0a1b2c3d4e5f", "Body": "b", "SentTimestamp": 10**13, **fields}


# A version-1 file's header, as an older sqsqlite wrote it (no end line), which import still reads.
_HEADER = {"Format": "sqsqlite-export/1", "QueueName": "made", "Attributes": {}, "Tags": {}}


def _exported(sq, tmp_path, n: int = 5):
    with sq.db() as db:
        q = db.create_queue("src")
        for i in range(n):
            q.send_message(f"m{i}")
    f = tmp_path / "src.jsonl"
    sq("export", "--queue-url", "src", str(f))
    return f, f.read_text().splitlines(keepends=True)


@pytest.mark.parametrize("kept", [1, 3, 6], ids=["the header alone", "part of the messages", "every message, no end line"])
def test_an_export_cut_short_is_refused_as_incomplete_and_imports_nothing(sq, tmp_path, kept):
    f, lines = _exported(sq, tmp_path)
    f.write_text("".join(lines[:kept]))
    said = sq("import", "--queue-url", "into", str(f), code=252, db=str(tmp_path / "other.db")).stderr
    assert f"{f} is incomplete: it has no end line" in said and f"({kept - 1} messages in it)" in said
    assert not (tmp_path / "other.db").exists()


@pytest.mark.parametrize(
    ("end", "fragment"),
    [
        ('{"ExportEnd": true, "MessagesExported": 4}', "ends an export of 4 messages, but 5 come before it"),
        ('{"ExportEnd": true}', "is a bad end line"),
        (
            '{"ExportEnd": true, "MessagesExported": 5}\n{"ExportEnd": true, "MessagesExported": 5}',
            "follows the export's end line (line 7)",
        ),
    ],
)
def test_an_export_whose_end_line_does_not_match_its_messages_is_refused_naming_the_line(sq, tmp_path, end, fragment):
    f, lines = _exported(sq, tmp_path)
    f.write_text("".join(lines[:-1]) + end + "\n")
    assert fragment in sq("import", str(f), code=252, db=str(tmp_path / "other.db")).stderr


def test_an_export_stopped_part_way_leaves_the_file_it_would_replace_as_it_was(sq, tmp_path, monkeypatch):
    from sqsqlite.core import Queue

    f, whole = _exported(sq, tmp_path)
    real = Queue.export_messages

    def stopping(self, *args, **kwargs):
        for i, record in enumerate(real(self, *args, **kwargs)):
            if i == 2:
                raise KeyboardInterrupt
            yield record

    monkeypatch.setattr(Queue, "export_messages", stopping)
    sq("export", "--queue-url", "src", str(f), code=130)
    assert f.read_text() == "".join(whole)  # the earlier export, whole
    assert [n for n in os.listdir(tmp_path) if n.startswith("src")] == ["src.jsonl"]  # and no src.jsonl.partial


@pytest.mark.parametrize("with_header", [False, True], ids=["into an existing queue", "creating the queue"])
def test_import_of_a_file_bad_after_its_first_batch_imports_nothing_and_creates_no_queue(sq, tmp_path, with_header):
    sq("create-queue", "--queue-name", "target")
    f = tmp_path / "big.jsonl"
    lines = [json.dumps(_HEADER)] if with_header else []
    lines += [json.dumps(_message(MessageId=f"00000000-0000-4000-8000-{i:012x}", Body=f"m{i}")) for i in range(501)]
    f.write_text("\n".join(lines) + "\nnot json\n")
    args = [str(f)] if with_header else ["--queue-url", "target", str(f)]
    r = sq("import", *args, code=252)
    assert f"line {len(lines) + 1} of {f} is not JSON" in r.stderr
    with sq.db() as db:
        assert db.queue("target").peek() == []
        assert db.list_queues()[0] == ["http://localhost:9324/000000000000/target"]


def test_import_of_a_value_sqs_refuses_names_the_line_and_creates_no_queue(sq, tmp_path):
    f = tmp_path / "ids.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (_HEADER, _message(), _message(MessageId="not-a-uuid"))) + "\n")
    r = sq("import", str(f), code=254)
    assert f"when calling the import operation: line 3 of {f}: MessageId 'not-a-uuid' is not a UUID" in r.stderr
    with sq.db() as db:
        assert db.list_queues()[0] == []


def test_import_into_a_database_that_cant_be_written_blames_the_database_not_a_line_of_the_file(sq, tmp_path, monkeypatch):
    from sqsqlite.core import Database
    from sqsqlite.errors import DatabaseError

    said = f"{sq.path!r} is read-only; sqsqlite needs to write to it (SQLite said: attempt to write a readonly database)."

    def read_only(*args, **kwargs):
        raise DatabaseError(said)

    monkeypatch.setattr(Database, "create_queue", read_only)
    f = tmp_path / "good.jsonl"
    f.write_text("\n".join(json.dumps(x) for x in (_HEADER, _message())) + "\n")
    assert sq("import", str(f), code=255).stderr == f"sqsqlite: {said}\n"


@pytest.mark.parametrize(
    "lines, queue, fragment",
    [
        (
            [{**_HEADER, "Attributes": "x"}],
            None,
            "line 1 of {f} is a bad export header: Attributes must be an object of names to strings, got 'x'.",
        ),
        ([{**_HEADER, "QueueName": 5}], None, "line 1 of {f} is a bad export header: QueueName must be a string, got 5."),
        ([{**_HEADER, "Format": "sqsqlite-export/9"}], None, "line 1 of {f} is an export header of format 'sqsqlite-export/9'"),
        (
            [_HEADER, _message(SentTimestamp=10**23)],
            None,
            "line 2 of {f} has SentTimestamp 100000000000000000000000; it must be an integer from 0 to 9223372036854775807",
        ),
        ([_message(SentTimestamp=-5)], "target", "line 1 of {f} has SentTimestamp -5; it must be an integer from 0"),
        ([_message(), _message(MessageAttributes=7)], "target", "line 2 of {f} has MessageAttributes 7; it must be an object"),
        (
            [_message(MessageAttributes={"a": "x"})],
            "target",
            "line 1 of {f} has message attribute 'a' 'x'; it must be an object with DataType",
        ),
        (
            [_message(ApproximateFirstReceiveTimestamp="abc")],
            "target",
            "line 1 of {f} has ApproximateFirstReceiveTimestamp 'abc'; it must be an integer",
        ),
        ([_message(ApproximateReceiveCount=True)], "target", "line 1 of {f} has ApproximateReceiveCount True; it must be an integer"),
        ([_message(SenderId=["x"])], "target", "line 1 of {f} has SenderId ['x']; it must be a string."),
        ([_message(Body=None)], "target", "line 1 of {f} has a null Body; it must be a string."),
        ([_message(ReceiveCount=1)], "target", "line 1 of {f} has unknown field ReceiveCount; an exported message has MessageId, Body"),
        (
            [_message(MessageDeduplicationId="d")],
            "target",
            "line 1 of {f} has MessageDeduplicationId 'd'; it is for FIFO queues only, and 'target' is a standard queue.",
        ),
        ([_message()], "target.fifo", "line 1 of {f} has no MessageGroupId, which every message of FIFO queue 'target.fifo' needs."),
        ([_message(), "[" * 100_000], "target", "line 2 of {f} is not JSON that sqsqlite reads (nested too deeply)."),
        ([_message(), b"\xff\xfe"], "target", "line 2 of {f} is not UTF-8 text (byte 1 of the line)."),
    ],
    ids=[
        "header Attributes",
        "header QueueName",
        "header Format",
        "huge SentTimestamp",
        "negative SentTimestamp",
        "MessageAttributes",
        "one message attribute",
        "ApproximateFirstReceiveTimestamp",
        "bool count",
        "SenderId",
        "null Body",
        "unknown field",
        "deduplication id on a standard queue",
        "no group on a FIFO queue",
        "deep nesting",
        "not UTF-8",
    ],
)
def test_import_of_a_field_export_would_not_write_is_bad_usage_naming_the_line_and_changes_nothing(sq, tmp_path, lines, queue, fragment):
    sq("create-queue", "--queue-name", "target")
    sq("create-queue", "--queue-name", "target.fifo", "--attributes", "FifoQueue=true")
    f = tmp_path / "bad.jsonl"
    f.write_bytes(b"\n".join(x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode() for x in lines) + b"\n")
    r = sq("import", *(["--queue-url", queue] if queue else []), str(f), code=252)
    assert fragment.format(f=f) in r.stderr and "unexpected error" not in r.stderr
    with sq.db() as db:
        assert len(db.list_queues()[0]) == 2 and db.queue("target").peek() == [] and db.queue("target.fifo").peek() == []


def test_import_of_a_missing_file_or_a_directory_is_bad_usage(sq, tmp_path):
    sq("create-queue", "--queue-name", "target")
    assert "does not exist" in sq("import", "--queue-url", "target", str(tmp_path / "nope.jsonl"), code=252).stderr
    assert "is a directory" in sq("import", "--queue-url", "target", str(tmp_path), code=252).stderr


# ---------------------------------------------------------------------- demo


def test_demo_tells_the_lifecycle_and_can_run_again_on_the_same_file(sq):
    first = sq("demo").stdout
    for fragment in (
        "Create a queue whose poison messages go to a dead-letter queue",
        "received 'order #1'",
        "stays hidden for 120 s more",
        "deleted 'order #3'",
        "old handle no longer works: ReceiptHandleIsInvalid",
        "receive 3: 0 messages; the message went to the dead-letter queue instead",
        "OldestAgeSeconds",
        "| demo-orders     | 0       | 0        | 0       |                  | demo-orders-dlq | 1 ",
    ):
        assert fragment in first
    second = sq("demo").stdout
    assert "(deleted 1 message left by an earlier run)" in second
    assert "| demo-orders-dlq | 1 " in second


# ---------------------------------------------------------------------- report and serve (lazy)


def test_report_and_serve_are_listed_without_importing_them(sq, tmp_path, monkeypatch):
    (tmp_path / "exploding_mod.py").write_text("raise RuntimeError('imported')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(main.LAZY, "report", ("exploding_mod", "report", "Analytics report.", "spark"))
    out = sq("--help").stdout
    assert re.search(r"\n  report +Analytics report\.\n", out) and "serve " in out
    assert "exploding_mod" not in sys.modules


def test_a_lazy_command_whose_dependency_is_missing_prints_one_line(sq, tmp_path, monkeypatch):
    (tmp_path / "needs_spark_mod.py").write_text("import pyspark_is_not_installed_here\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(main.LAZY, "report", ("needs_spark_mod", "report", "Analytics.", "spark"))
    r = sq("report", "--anything", code=255)
    assert r.stderr == (
        "sqsqlite: `sqsqlite report` needs pyspark_is_not_installed_here, which is not installed: pip install 'sqsqlite[spark]' (from a clone: pip install -e '.[spark]').\n"
    )


def test_a_lazy_command_missing_from_the_installation_says_so(sq, monkeypatch):
    monkeypatch.setitem(main.LAZY, "serve", ("sqsqlite.no_such_server", "serve", "Serve.", "sqsqlite"))
    r = sq("serve", code=255)
    assert r.stderr == "sqsqlite: `sqsqlite serve` is not part of this installation (sqsqlite.no_such_server is missing).\n"


def test_a_lazy_command_runs_when_its_module_imports(sq, tmp_path, monkeypatch):
    (tmp_path / "fake_report_mod.py").write_text(
        "import click\n@click.command('report')\n@click.option('--top', type=int)\ndef report(top):\n    click.echo(f'report top={top}')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(main.LAZY, "report", ("fake_report_mod", "report", "Analytics.", "spark"))
    assert sq("report", "--top", "3").stdout == "report top=3\n"


# ---------------------------------------------------------------------- help


def _all_commands() -> list[tuple[str, click.Command]]:
    out = []
    for name, cmd in cli.commands.items():
        out.append((name, cmd))
        if isinstance(cmd, click.Group):
            out += [(f"{name} {sub}", c) for sub, c in cmd.commands.items()]
    return out


def test_help_groups_the_commands_into_aws_and_administration_sections(sq):
    out = sq("--help").stdout
    aws_at = out.index("aws sqs commands")
    admin_at = out.index("Administration:")
    assert aws_at < out.index("  receive-message ") < admin_at < out.index("  redrive ") < out.index("Serving, analytics and replication:")


@pytest.mark.parametrize("name, cmd", _all_commands(), ids=[n for n, _ in _all_commands()])
def test_every_command_help_ends_with_an_example(sq, name, cmd):
    last = inspect.cleandoc(cmd.help).split("\n\n")[-1].removeprefix("\b\n")
    assert last.startswith("Example: sqsqlite"), name
    out = sq(*name.split(), "--help").stdout
    assert "Example: sqsqlite" in out


@pytest.mark.parametrize(
    "args, default",
    [
        (("stats",), "table"),
        (("db", "history"), "table"),
        (("db", "current"), "text"),
        (("db", "upgrade"), "text"),
        (("db", "downgrade"), "text"),
        (("peek", "--queue-url", "q"), "json"),
        (("prune",), "json"),
        (("list-queues",), "json"),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, tuple) else a,
)
def test_each_commands_help_states_the_output_format_it_prints_when_given_none(sq, args, default):
    sq("create-queue", "--queue-name", "q")
    sq("send-message", "--queue-url", "q", "--message-body", "x")
    words = [a for a in args if a not in ("--queue-url", "q")]
    assert f"Output format (default {default})." in " ".join(sq(*words, "--help").stdout.split())
    plain = sq(*args).stdout
    sq("db", "upgrade")  # back where it was, after a downgrade
    assert plain and plain == sq(*args, "--output", default).stdout


def test_export_says_in_its_help_that_it_writes_json_lines_whatever_output_is_asked(sq):
    sq("create-queue", "--queue-name", "q")
    assert "prints text of its own" in " ".join(sq("export", "--help").stdout.split())
    assert sq("export", "--queue-url", "q", "-", "--output", "table").stdout == sq("export", "--queue-url", "q", "-").stdout


def test_ctrl_c_during_redrive_leaves_the_task_running_and_says_how_to_resume(sq, monkeypatch):
    _queue_with_dead_letters(sq, 2)

    def interrupted(self, handle, progress=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(sqsqlite.Database, "run_message_move_task", interrupted)
    r = sq("redrive", "--queue-url", "orders-dlq", code=130)
    assert "`sqsqlite redrive --queue-url orders-dlq` resumes it" in r.stderr
    with sq.db() as db:
        [task] = db.list_message_move_tasks(db.queue("orders-dlq").arn)
        assert task.status == "RUNNING"


def test_the_demo_says_how_to_put_sqsqlite_on_path_when_the_shell_would_not_find_it(tmp_path, monkeypatch):
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text("")
    (bin_dir / "sqsqlite").write_text("")
    (bin_dir / "sqsqlite").chmod(0o755)
    monkeypatch.setattr(sys, "argv", [str(bin_dir / "sqsqlite"), "demo"])
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert demo._activate_hint() == ". venv/bin/activate"  # as `make demo` runs it: not on PATH
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    assert demo._activate_hint() is None  # activated: the commands it prints run as printed


def _failing_after(monkeypatch, rows: int, failure: BaseException) -> None:
    """import_messages, once it has written ``rows`` messages in its transaction, fails."""
    from sqsqlite.core import transfer

    real, made = transfer.message_row, []

    def message_row(*args, **kwargs):
        if len(made) == rows:
            raise failure
        made.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(transfer, "message_row", message_row)


def _export_of_five(tmp_path):
    f = tmp_path / "five.jsonl"
    five = [_message(MessageId=f"00000000-0000-4000-8000-{i:012x}", Body=f"m{i}") for i in range(5)]
    f.write_text("\n".join(json.dumps(x) for x in (_HEADER, *five)) + "\n")
    return f


@pytest.mark.parametrize(
    ("failure", "code"), [(KeyboardInterrupt(), 130), (DatabaseError("The disk is full."), 255)], ids=["interrupted", "failing"]
)
def test_an_import_stopped_part_way_into_a_new_database_leaves_no_queue_and_no_file(sq, tmp_path, monkeypatch, failure, code):
    f = _export_of_five(tmp_path)
    _failing_after(monkeypatch, 3, failure)
    said = sq("import", str(f), code=code, db=str(tmp_path / "new.db")).stderr
    assert said.endswith("Interrupted.\n" if code == 130 else "sqsqlite: The disk is full.\n")  # what stopped it, not the undoing
    assert os.listdir(tmp_path) == [f.name]  # no database, nor its -wal, -shm or -lock


@pytest.mark.parametrize(
    ("failure", "code"), [(KeyboardInterrupt(), 130), (DatabaseError("The disk is full."), 255)], ids=["interrupted", "failing"]
)
def test_an_import_stopped_part_way_into_a_new_queue_leaves_no_queue_and_a_second_try_needs_no_wait(
    sq, tmp_path, monkeypatch, failure, code
):
    sq("create-queue", "--queue-name", "kept")
    f = _export_of_five(tmp_path)
    with monkeypatch.context() as patch:
        _failing_after(patch, 3, failure)
        sq("import", str(f), code=code)
    with sq.db() as db:
        assert db.list_queues()[0] == ["http://localhost:9324/000000000000/kept"]
    assert sq.json("import", str(f))["MessagesImported"] == 5  # no deleted queue's name held for 60 s


@pytest.mark.parametrize("with_header", [False, True], ids=["into a named queue", "creating the queue"])
def test_import_of_a_refused_file_creates_no_database_at_a_new_path(sq, tmp_path, with_header):
    f = tmp_path / "bad.jsonl"
    lines = [json.dumps(_HEADER)] if with_header else []
    f.write_text("\n".join([*lines, json.dumps(_message()), "not json"]) + "\n")
    fresh = str(tmp_path / "never.db")
    args = [str(f)] if with_header else ["--queue-url", "target", str(f)]
    sq("import", *args, code=252, db=fresh)
    assert not os.path.exists(fresh)


def test_import_into_a_queue_missing_from_a_new_path_creates_no_database(sq, tmp_path):
    f = tmp_path / "good.jsonl"
    f.write_text(json.dumps(_message()) + "\n")
    fresh = str(tmp_path / "never.db")
    r = sq("import", "--queue-url", "target", str(f), code=254, db=fresh)
    assert "NonExistentQueue" in r.stderr
    assert not os.path.exists(fresh)


def test_import_of_a_file_whose_header_sqs_refuses_creates_no_database_at_a_new_path(sq, tmp_path):
    f = tmp_path / "bad-header.jsonl"
    header = {**_HEADER, "Attributes": {"VisibilityTimeout": "999999"}}
    f.write_text("\n".join([json.dumps(header), json.dumps(_message())]) + "\n")
    fresh = str(tmp_path / "never.db")
    r = sq("import", str(f), code=254, db=fresh)
    assert f"line 1 of {f}:" in r.stderr and "VisibilityTimeout" in r.stderr
    assert not os.path.exists(fresh)


def test_import_of_a_queue_with_a_dead_letter_queue_into_a_new_path_is_refused_and_creates_no_database(sq, tmp_path):
    f = tmp_path / "with-dlq.jsonl"
    policy = json.dumps({"deadLetterTargetArn": "arn:aws:sqs:us-east-1:000000000000:made-dlq", "maxReceiveCount": "3"})
    header = {**_HEADER, "Attributes": {"RedrivePolicy": policy}}
    f.write_text("\n".join([json.dumps(header), json.dumps(_message())]) + "\n")
    fresh = str(tmp_path / "never.db")
    r = sq("import", str(f), code=254, db=fresh)
    assert "Dead letter target does not exist." in r.stderr
    assert os.listdir(tmp_path) == [f.name]  # nothing made beside it either


def test_an_export_through_a_symbolic_link_replaces_the_file_it_names_and_keeps_its_permissions(sq, tmp_path):
    f, _ = _exported(sq, tmp_path)
    volume = tmp_path / "volume"
    volume.mkdir()
    real = volume / "backup.jsonl"
    real.write_text("an older export\n")
    real.chmod(0o600)
    link = tmp_path / "backup.jsonl"
    link.symlink_to(real)
    sq("export", "--queue-url", "src", str(link))
    assert link.is_symlink() and real.read_text() == f.read_text()  # the link kept, its file the new export
    assert oct(real.stat().st_mode & 0o777) == oct(0o600)
    assert [n for n in os.listdir(volume)] == ["backup.jsonl"]  # no backup.jsonl.partial left


def test_stats_of_a_missing_file_says_so_once_and_draws_no_empty_file_table(sq, tmp_path):
    missing = str(tmp_path / "nope.db")
    plain = sq("stats", db=missing)
    assert "Name" not in plain.stdout and "There is no database" in plain.stderr
    since = sq("stats", "--since", "1h", db=missing)
    assert "There is no database" in since.stderr and "No history is kept" not in since.stderr
    assert not os.path.exists(missing)


def test_stats_refuses_wide_with_since(sq):
    assert "--wide is for the counts' table" in sq("stats", "--since", "1h", "--wide", code=252).stderr


def test_db_upgrade_past_0012_gives_the_files_queues_the_global_account_and_region(sq):
    sq("create-queue", "--queue-name", "old")
    sq("db", "downgrade", "0011")
    sq("--region", "eu-west-1", "--account-id", "123456789012", "db", "upgrade")
    assert sq.json("list-queues") is None  # not the default account's us-east-1 any more
    assert sq.json("--region", "eu-west-1", "--account-id", "123456789012", "list-queues") == {
        "QueueUrls": ["http://localhost:9324/123456789012/old"]
    }
