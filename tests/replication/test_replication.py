"""Replication and restore with Litestream: URLs and errors, round trips to a directory and to an
S3-compatible store (moto's server on loopback), sqsqlite's checkpoints under Litestream, and a
crash of everything with the database deleted and restored."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sqsqlite
from sqsqlite.replication import Replica, ReplicationError, config_text, litestream_program

from .helpers import cli_here, fake_litestream

SQSQLITE = [sys.executable, str(Path(sys.executable).with_name("sqsqlite"))]


def _have_litestream() -> bool:
    try:
        litestream_program()
    except ReplicationError:
        return False
    return True


needs_litestream = pytest.mark.skipif(not _have_litestream(), reason="litestream is not installed (pip install 'sqsqlite[replication]')")


def runcli_here(*args: str, code: int = 0, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([*SQSQLITE, *args], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done


def start_replication(db: Path, *targets: str, env: dict | None = None, extra: tuple[str, ...] = ()) -> subprocess.Popen:
    args = [a for t in targets for a in ("--to", t)]
    proc = subprocess.Popen(
        [*SQSQLITE, "replicate", "--db", str(db), "--sync-interval", "100ms", *args, *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group: litestream is killed with it
        env=env,
    )
    return proc


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)


def delete_database(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    for side in db.parent.glob(f".{db.name}-litestream"):
        shutil.rmtree(side)


def messages(path: Path, now_ms: int | None = None) -> dict[str, str]:
    """Every message the database holds, by message id: body. Read without receiving (peek)."""
    with sqsqlite.connect(str(path)) as db:
        out = {}
        for url in db.list_queues()[0]:
            for message in db.queue(url).peek(limit=1_000_000):
                out[message.message_id] = message.body
        return out


def restored_once_caught_up(replica: str, want: dict[str, str], tmp: Path, extra: tuple[str, ...] = (), env: dict | None = None) -> dict:
    """Restore into a scratch file until the replica holds ``want`` (Litestream ships within its
    sync interval; a loaded machine may take longer), at most 30 s."""
    deadline = time.monotonic() + 30
    while True:
        scratch = tmp / "scratch.db"
        delete_database(scratch)
        done = subprocess.run(
            [*SQSQLITE, "restore", "--db", str(scratch), "--from", replica, *extra], capture_output=True, text=True, env=env
        )
        got = messages(scratch) if done.returncode == 0 else {}
        if got == want or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


# ------------------------------------------------------------------ URLs and errors


def test_a_directory_a_file_url_and_an_s3_url_become_litestream_replicas(tmp_path):
    assert Replica(str(tmp_path / "r")).config() == {"type": "file", "path": str(tmp_path / "r")}
    assert Replica(f"file://{tmp_path}/r").config() == {"type": "file", "path": str(tmp_path / "r")}
    s3 = Replica("s3://backups/app/main", endpoint="http://127.0.0.1:9000", region="eu-west-1").config()
    assert s3 == {
        "type": "s3",
        "bucket": "backups",
        "path": "app/main",
        "endpoint": "http://127.0.0.1:9000",
        "force-path-style": True,
        "region": "eu-west-1",
    }
    config = json.loads(config_text(str(tmp_path / "q.db"), [Replica("s3://b/p")], "2s"))
    assert config["dbs"][0]["path"] == str(tmp_path / "q.db")
    assert config["dbs"][0]["replicas"][0]["sync-interval"] == "2s"
    assert "endpoint" not in config["dbs"][0]["replicas"][0]  # Amazon S3 itself


@pytest.mark.parametrize("url", ["ftp://host/x", "s3:///no-bucket", "gs://bucket/x"])
def test_a_replica_url_of_another_kind_is_refused_naming_the_forms_that_work(url):
    with pytest.raises(ReplicationError, match="s3://BUCKET/PATH"):
        Replica(url).config()


def test_replicate_to_an_unknown_kind_of_url_says_so_in_one_line_and_starts_nothing(tmp_path):
    done = runcli_here("replicate", "--db", str(tmp_path / "q.db"), "--to", "ftp://host/x", code=255)
    assert "ftp://host/x: replicas are a directory, file:///PATH or s3://BUCKET/PATH" in done.stderr


@needs_litestream
def test_a_sync_interval_that_is_no_duration_is_bad_usage_and_starts_nothing(tmp_path):
    done = runcli_here("replicate", "--db", str(tmp_path / "q.db"), "--to", str(tmp_path / "replica"), "--sync-interval", "bogus", code=252)
    assert "'bogus' is not a duration" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_restore_refuses_to_overwrite_an_existing_database_without_force(tmp_path):
    sqsqlite.connect(str(tmp_path / "q.db")).close()
    done = runcli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"), code=255)
    assert "exists: restore writes a new database (--force replaces it)" in done.stderr


def test_restore_refuses_a_log_left_from_an_earlier_database_beside_the_path_without_force(tmp_path):
    (tmp_path / "q.db-wal").write_bytes(b"an earlier database's log")
    done = runcli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"), code=255)
    assert "q.db-wal is left from an earlier database, and would be replayed over the restore (--force removes it)" in done.stderr
    assert (tmp_path / "q.db-wal").exists() and not (tmp_path / "q.db").exists()


@needs_litestream
def test_a_forced_restore_that_fails_leaves_the_database_it_would_have_replaced_whole(tmp_path):
    from sqsqlite.replication import restore

    path = tmp_path / "q.db"
    # A process that dies without closing: its last commits are in the -wal file, not yet in q.db.
    crash = "import os, sys, sqsqlite\nsqsqlite.connect(sys.argv[1]).create_queue('kept').send_message('x')\nos._exit(0)"
    subprocess.run([sys.executable, "-c", crash, str(path)], check=True, timeout=60)
    log = Path(f"{path}-wal").read_bytes()
    assert log
    with pytest.raises(ReplicationError, match="litestream could not restore"):
        restore(str(path), Replica(str(tmp_path / "no-replica-here")), force=True)
    assert Path(f"{path}-wal").read_bytes() == log  # neither removed nor written back by the check for users
    with sqlite3.connect(path) as other:  # a new reader still sees every commit
        assert other.execute("SELECT name FROM queues").fetchall() == [("kept",)]


@needs_litestream
def test_a_ctrl_c_to_the_whole_process_group_still_ships_what_replicate_holds_before_it_exits(tmp_path):
    db_path, replica = tmp_path / "q.db", tmp_path / "replica"
    sqsqlite.connect(str(db_path)).close()
    # Litestream ships every 10 s: what is committed just before the Ctrl-C goes out with the sync
    # it makes on its way out, which a second signal (the group's own, then a forwarded one) skipped.
    proc = start_replication(db_path, str(replica), extra=("--sync-interval", "10s"))
    try:
        deadline = time.monotonic() + 30
        while not any(p.is_file() for p in replica.rglob("*")) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(0.5)
        with sqsqlite.connect(str(db_path)) as db:
            db.create_queue("last").send_message("committed just before the Ctrl-C")
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: to every process of the group
        assert proc.wait(timeout=60) == 0
    finally:
        kill_group(proc)
    delete_database(db_path)
    runcli_here("restore", "--db", str(db_path), "--from", str(replica))
    assert list(messages(db_path).values()) == ["committed just before the Ctrl-C"]


@needs_litestream
def test_restore_from_an_empty_replica_says_litestream_found_nothing(tmp_path):
    (tmp_path / "replica").mkdir()
    done = runcli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"), code=255)
    assert "litestream could not restore" in done.stderr and not (tmp_path / "q.db").exists()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_replicate_on_a_file_that_is_not_a_database_is_one_line(tmp_path, monkeypatch):
    fake_litestream(tmp_path, "#!/bin/sh\nexit 0\n", monkeypatch)
    (tmp_path / "q.db").write_text("not a database\n" * 100)
    result = cli_here("replicate", "--db", str(tmp_path / "q.db"), "--to", str(tmp_path / "replica"))
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert "is not a SQLite database" in result.output


@pytest.mark.parametrize("command", ["replicate", "restore"])
def test_a_missing_litestream_is_one_line_saying_how_to_install_it(tmp_path, monkeypatch, command):
    monkeypatch.setattr(shutil, "which", lambda name, path=None: None)
    where = "--to" if command == "replicate" else "--from"
    result = cli_here(command, "--db", str(tmp_path / "q.db"), where, str(tmp_path / "replica"))
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert (
        "litestream is not installed: pip install 'sqsqlite[replication]' (from a clone: pip install -e '.[replication]')" in result.output
    )


@pytest.mark.parametrize("command", ["replicate", "restore"])
def test_a_litestream_that_cannot_be_run_is_one_line(tmp_path, monkeypatch, command):
    program = fake_litestream(tmp_path, "not a program\n", monkeypatch)  # executable, but no format the kernel runs
    where = "--to" if command == "replicate" else "--from"
    result = cli_here(command, "--db", str(tmp_path / "q.db"), where, str(tmp_path / "replica"))
    assert result.exit_code == 255 and result.output == f"sqsqlite: cannot run {program}: Exec format error\n"


@pytest.mark.parametrize("command", ["replicate", "restore"])
def test_an_s3_endpoint_that_is_not_a_url_is_one_line(tmp_path, monkeypatch, command):
    fake_litestream(tmp_path, "#!/bin/sh\nexit 0\n", monkeypatch)
    where = "--to" if command == "replicate" else "--from"
    result = cli_here(command, "--db", str(tmp_path / "q.db"), where, "s3://bucket/app", "--s3-endpoint", "ht!tp://::")
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert "--s3-endpoint 'ht!tp://::' is not an endpoint URL: http(s)://HOST[:PORT]" in result.output
    assert not (tmp_path / "q.db").exists()


@pytest.mark.parametrize("command", ["replicate", "restore"])
def test_an_unreachable_s3_store_is_one_line_at_once_not_after_litestreams_minutes_of_retries(tmp_path, monkeypatch, command):
    fake_litestream(tmp_path, "#!/bin/sh\nsleep 600\n", monkeypatch)  # were it started, the test would hang
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    where = "--to" if command == "replicate" else "--from"
    result = cli_here(command, "--db", str(tmp_path / "q.db"), where, "s3://bucket/app", "--s3-endpoint", endpoint)
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert f"cannot reach the S3 store at {endpoint} for s3://bucket/app: Connection refused" in result.output


def test_a_restored_file_sqsqlite_cannot_open_is_one_line(tmp_path, monkeypatch):
    # A litestream that "restores" garbage (to its -o path): the file is opened afterwards, and that fails.
    script = '#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\necho garbage > "$2"\n'
    fake_litestream(tmp_path, script, monkeypatch)
    result = cli_here("restore", "--db", str(tmp_path / "q.db"), "--from", str(tmp_path / "replica"))
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    assert f"{tmp_path / 'q.db'} restored from {tmp_path / 'replica'} cannot be opened:" in result.output
    assert "is not a SQLite database" in result.output
    assert not (tmp_path / "q.db").exists() and not list(tmp_path.glob(".q.db.restoring*"))  # nothing left behind


# ------------------------------------------------------------------ round trips


@needs_litestream
def test_a_restore_from_a_directory_replica_holds_what_was_sent_and_not_what_was_deleted(tmp_path):
    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        queue = db.create_queue("jobs")
        for i in range(30):
            queue.send_message(f"job {i}")
    replication = start_replication(db_path, str(tmp_path / "replica"))
    try:
        with sqsqlite.connect(str(db_path)) as db:
            queue = db.queue("jobs")
            for message in queue.receive_message(max_number_of_messages=10):
                message.delete()
            queue.receive_message(max_number_of_messages=5, visibility_timeout=600)  # left in flight
            want = messages(db_path)
        assert len(want) == 20
        assert restored_once_caught_up(str(tmp_path / "replica"), want, tmp_path) == want
    finally:
        kill_group(replication)
    delete_database(db_path)
    done = runcli_here("restore", "--db", str(db_path), "--from", str(tmp_path / "replica"))
    assert done.stdout.strip() == f"restored {db_path} from {tmp_path / 'replica'}: integrity ok"
    assert messages(db_path) == want
    # The five in flight stay hidden, and come back when their visibility timeout ends, as
    # after a crash.
    clock = sqsqlite.ManualClock(int(time.time() * 1000))
    with sqsqlite.connect(str(db_path), clock=clock) as db:
        now = [m.body for _ in range(3) for m in db.queue("jobs").receive_message(max_number_of_messages=10, visibility_timeout=3600)]
        assert len(now) == 15
        clock.advance(601)
        later = [m.body for _ in range(2) for m in db.queue("jobs").receive_message(max_number_of_messages=10, visibility_timeout=3600)]
    assert len(later) == 5 and sorted(now + later) == sorted(want.values())


# A `$NAME` Litestream would expand (HOME is set; FIVE is not, so `$5`-like text would vanish),
# spaces and both quotes, in the folder and in the file's name.
ODD = "odd $HOME ${FIVE} 'single' \"double\""


@needs_litestream
def test_paths_with_dollars_spaces_and_quotes_reach_litestream_verbatim_and_the_restored_file_is_0600(tmp_path):
    folder = tmp_path / ODD
    folder.mkdir()
    db_path, replica = folder / "price$5 'q' \"x\".db", folder / "replica $HOME"
    with sqsqlite.connect(str(db_path)) as db:
        db.create_queue("prices").send_message("5 dollars")
        want = messages(db_path)
    env = {**os.environ, "FIVE": "elsewhere"}
    replication = start_replication(db_path, str(replica), env=env)
    try:
        # A restore into another odd path finds the replica where sqsqlite said it would be.
        assert restored_once_caught_up(str(replica), want, folder, env=env) == want
        assert replica.is_dir() and not (tmp_path / "elsewhere").exists()
        assert (folder / f".{db_path.name}-litestream").is_dir()  # Litestream watched this very file
    finally:
        kill_group(replication)
    restored = folder / "back $HOME 'a' \"b\".db"
    done = subprocess.run(
        [*SQSQLITE, "restore", "--db", str(restored), "--from", str(replica)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=lambda: os.umask(0),  # Litestream writes what it restores under the umask
    )
    assert done.returncode == 0, done.stderr
    assert messages(restored) == want
    assert restored.stat().st_mode & 0o777 == 0o600


@needs_litestream
def test_a_restore_with_a_timestamp_gives_the_database_as_that_instant_saw_it(tmp_path):
    from datetime import datetime, timezone

    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        db.create_queue("jobs").send_message("before")
    replication = start_replication(db_path, str(tmp_path / "replica"))
    try:
        before = messages(db_path)
        assert restored_once_caught_up(str(tmp_path / "replica"), before, tmp_path) == before
        time.sleep(1.1)  # real time: the replica stamps its transaction files with the wall clock
        instant = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        time.sleep(1.1)
        with sqsqlite.connect(str(db_path)) as db:
            db.queue("jobs").send_message("after")
        after = messages(db_path)
        assert restored_once_caught_up(str(tmp_path / "replica"), after, tmp_path) == after
    finally:
        kill_group(replication)
    runcli_here("restore", "--db", str(tmp_path / "then.db"), "--from", str(tmp_path / "replica"), "--timestamp", instant)
    assert messages(tmp_path / "then.db") == before


@needs_litestream
def test_sqsqlites_checkpoints_under_litestream_lose_no_transaction(tmp_path):
    # Enough writes to pass the WAL's checkpoint size many times over: the engine's passive
    # checkpoints run beside Litestream's, and the replica still holds every transaction.
    db_path = tmp_path / "q.db"
    sqsqlite.connect(str(db_path)).close()
    replication = start_replication(db_path, str(tmp_path / "replica"))
    try:
        with sqsqlite.connect(str(db_path)) as db:
            queue = db.create_queue("bulk")
            body = "x" * 4000
            for i in range(400):
                queue.send_message_batch([{"Id": str(j), "MessageBody": body + str(i * 10 + j)} for j in range(10)])
                if i % 2:
                    received = queue.receive_message(max_number_of_messages=10)
                    queue.delete_message_batch([{"Id": str(n), "ReceiptHandle": m.receipt_handle} for n, m in enumerate(received)])
            want = messages(db_path)
        assert 2000 <= len(want) < 4000
        assert restored_once_caught_up(str(tmp_path / "replica"), want, tmp_path) == want
        assert replication.poll() is None, replication.stderr.read() if replication.stderr else ""
    finally:
        kill_group(replication)


@pytest.fixture
def s3(moto_server):
    """moto's server as the S3-compatible store, with a bucket."""
    boto3 = pytest.importorskip("boto3")
    endpoint, env = moto_server
    client = boto3.client(
        "s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing"
    )
    client.create_bucket(Bucket="sqsqlite-replica")
    return endpoint, env


@needs_litestream
def test_a_database_replicated_to_an_s3_compatible_store_restores_whole(tmp_path, s3):
    endpoint, env = s3
    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        fifo = db.create_queue("orders.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
        for i in range(12):
            fifo.send_message(f"order {i}", message_group_id=f"customer-{i % 3}")
        db.create_queue("plain").send_message("hello", message_attributes={"kind": {"DataType": "String", "StringValue": "greeting"}})
        want = messages(db_path)
    url = "s3://sqsqlite-replica/app"
    replication = start_replication(db_path, url, env=env, extra=("--s3-endpoint", endpoint))
    try:
        assert restored_once_caught_up(url, want, tmp_path, ("--s3-endpoint", endpoint), env) == want
    finally:
        kill_group(replication)
    delete_database(db_path)
    runcli_here("restore", "--db", str(db_path), "--from", url, "--s3-endpoint", endpoint, env=env)
    with sqsqlite.connect(str(db_path)) as db:
        got = db.queue("orders.fifo").receive_message(max_number_of_messages=10)
        assert [m.body for m in got][:4] == ["order 0", "order 3", "order 6", "order 9"]  # group order kept
        (plain,) = db.queue("plain").receive_message(message_attribute_names=["All"])
        assert plain.message_attributes["kind"].string_value == "greeting"


# ------------------------------------------------------------------ a crash of everything

PRODUCER = """
import os, sys, time, sqsqlite
db = sqsqlite.connect(sys.argv[1]); q = db.queue("jobs"); log = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
i = 0
while True:
    body = f"{sys.argv[3]}-{i}"
    q.send_message(body)
    os.write(log, f"{time.monotonic()} {body}\\n".encode())
    i += 1
"""

CONSUMER = """
import os, sys, time, sqsqlite
db = sqsqlite.connect(sys.argv[1]); q = db.queue("jobs"); log = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
n = 0
while True:
    for m in q.receive_message(max_number_of_messages=10, wait_time_seconds=1):
        os.write(log, f"{time.monotonic()} received {m.body}\\n".encode())
        n += 1
        if n % 7:  # every seventh message stays in flight
            os.write(log, f"{time.monotonic()} deleting {m.body}\\n".encode())
            m.delete()
            os.write(log, f"{time.monotonic()} deleted {m.body}\\n".encode())
"""

# A transaction is in the replica within the sync interval (100 ms here) plus the time to copy
# it; checked with a wide margin so that a loaded machine does not fail the test.
WINDOW_S = 3.0


def _log(path: Path) -> list[tuple[float, str]]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        stamp, _, rest = line.partition(" ")
        out.append((float(stamp), rest))
    return out


@needs_litestream
@pytest.mark.slow
def test_everything_killed_and_the_database_deleted_a_restore_keeps_every_replicated_send_and_delete(tmp_path):
    db_path = tmp_path / "q.db"
    with sqsqlite.connect(str(db_path)) as db:
        db.create_queue("jobs", attributes={"VisibilityTimeout": "60"})
    replication = start_replication(db_path, str(tmp_path / "replica"))
    workers = []
    for n in range(2):
        workers.append(subprocess.Popen([sys.executable, "-c", PRODUCER, str(db_path), str(tmp_path / f"p{n}.log"), f"p{n}"]))
        workers.append(subprocess.Popen([sys.executable, "-c", CONSUMER, str(db_path), str(tmp_path / f"c{n}.log")]))
    try:
        time.sleep(6)  # real processes under real load: the point of this test
    finally:
        for worker in workers:
            worker.kill()
        killed_wall_ms = int(time.time() * 1000)  # the restored rows' clock is the wall clock
        kill_group(replication)
        killed_at = time.monotonic()
        for worker in workers:
            worker.wait(timeout=30)
    delete_database(db_path)
    runcli_here("restore", "--db", str(db_path), "--from", str(tmp_path / "replica"))

    sent = [(t, body) for n in range(2) for t, body in _log(tmp_path / f"p{n}.log")]
    events = [entry for n in range(2) for entry in _log(tmp_path / f"c{n}.log")]
    received = {rest.split(" ", 1)[1]: t for t, rest in events if rest.startswith("received ")}
    deleting = {rest.split(" ", 1)[1] for _, rest in events if rest.startswith("deleting ")}
    deleted = {rest.split(" ", 1)[1]: t for t, rest in events if rest.startswith("deleted ")}
    settled = killed_at - WINDOW_S
    # Received before the window and never deleted: in flight in the replica, for 60 s from the
    # receive, so still hidden at the instant of the kill and visible a minute after it.
    kept_in_flight = {body for body, t in received.items() if t < settled and body not in deleting}
    clock = sqsqlite.ManualClock(killed_wall_ms)
    with sqsqlite.connect(str(db_path), clock=clock) as db:
        assert db.integrity_check() == "ok"
        queue = db.queue("jobs")
        visible_at_kill, visible_a_minute_on = [], []
        while batch := queue.receive_message(max_number_of_messages=10, visibility_timeout=3600):
            visible_at_kill += [m.body for m in batch]
        clock.set(killed_wall_ms + 61_000)
        while batch := queue.receive_message(max_number_of_messages=10, visibility_timeout=3600):
            visible_a_minute_on += [m.body for m in batch]
    restored = visible_at_kill + visible_a_minute_on
    assert len(restored) == len(set(restored)), "a message restored twice"
    restored_set = set(restored)
    early_sends = [body for t, body in sent if t < settled]
    assert len(early_sends) > 20 and len([b for b, t in deleted.items() if t < settled]) > 5, "too little traffic to prove anything"
    assert len(kept_in_flight) > 2, "too little traffic to prove anything"
    # In-flight messages become visible again after their timeout, and not before.
    assert kept_in_flight.isdisjoint(visible_at_kill)
    assert kept_in_flight <= set(visible_a_minute_on)
    # Every send replicated is there unless its delete was acknowledged. A delete the kill cut
    # short (logged as begun, not as done: at most one per consumer) may or may not have
    # committed, so its message may be either way.
    cut_short = deleting - deleted.keys()
    assert len(cut_short) <= 2
    lost = [body for body in early_sends if body not in restored_set and body not in deleted and body not in cut_short]
    assert lost == []
    # No delete replicated comes back.
    back = [body for body, t in deleted.items() if t < settled and body in restored_set]
    assert back == []
    # Nothing that was never sent appears (a producer's last send may be unlogged: its next id).
    logged = {body for _, body in sent}
    last = {f"p{n}": max((int(b.rsplit("-", 1)[1]) for _, b in _log(tmp_path / f"p{n}.log")), default=-1) for n in range(2)}
    phantoms = [b for b in restored_set - logged if int(b.rsplit("-", 1)[1]) != last[b.rsplit("-", 1)[0]] + 1]
    assert phantoms == []


@pytest.mark.parametrize("where", ["the database file", "/proc/forbidden", "a path below a file"])
def test_replicate_to_a_directory_it_cannot_use_is_one_line_at_once_not_litestreams_endless_errors(tmp_path, monkeypatch, where):
    fake_litestream(tmp_path, "#!/bin/sh\nsleep 600\n", monkeypatch)  # were it started, the test would hang
    db = tmp_path / "q.db"
    sqsqlite.connect(str(db)).close()
    target = {"the database file": str(db), "/proc/forbidden": "/proc/forbidden", "a path below a file": f"{db}/replica"}[where]
    result = cli_here("replicate", "--db", str(db), "--to", target)
    assert result.exit_code == 255 and result.output.count("\n") == 1, result.output
    reason = "not a directory" if where == "the database file" else "cannot write a replica there"
    assert result.output.startswith(f"sqsqlite: {target}: {reason}"), result.output
    assert not Path("/proc/forbidden").exists()


def _dir_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())


@needs_litestream
@pytest.mark.parametrize("how", ["background", "vacuum-steps", "vacuum-whole"])
def test_a_replica_stays_restorable_across_giving_space_back(tmp_path, monkeypatch, how):
    # A drained queue's free pages returned while Litestream ships the WAL: by the checkpoint
    # thread's steps, by `sqsqlite vacuum`'s steps, or by a VACUUM converting an older file. The
    # replica restores to exactly the messages left, into a file as small as the source's.
    from sqsqlite import defaults as D
    from sqsqlite import space

    monkeypatch.setattr(D, "RECLAIM_MIN_FREE_BYTES", (1 << 20) if how == "background" else (1 << 40))
    monkeypatch.setattr(D, "RECLAIM_LOOK_SECONDS", 0.1)
    db_path = tmp_path / "q.db"
    if how == "vacuum-whole":
        conn = sqlite3.connect(db_path)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.close()
    sqsqlite.connect(str(db_path)).close()
    replication = start_replication(db_path, str(tmp_path / "replica"))
    try:
        with sqsqlite.connect(str(db_path)) as db:
            queue = db.create_queue("bulk")
            for i in range(1000):
                queue.send_message_batch([{"Id": str(j), "MessageBody": "x" * 2000 + str(i * 10 + j)} for j in range(10)])
            full = os.path.getsize(db_path) + os.path.getsize(f"{db_path}-wal")
            queue.purge_queue()
            for i in range(5):
                queue.send_message(f"after {i}")
            if how != "background":
                done = runcli_here("vacuum", "--db", str(db_path), "--output", "json")
                assert json.loads(done.stdout)["FreePagesAfter"] == 0
            # The database's pages, in the file or in the WAL: the file itself is cut short by a
            # checkpoint that copies the whole WAL back, which Litestream's read transaction may
            # hold off until its own checkpoint (docs/explanation/reliability.md, "Disk space").
            deadline = time.monotonic() + 30
            while space.file_space(str(db_path)).pages * 4096 > full / 10 and time.monotonic() < deadline:
                time.sleep(0.1)
            assert space.file_space(str(db_path)).pages * 4096 < full / 10
            want = messages(db_path)
        assert sorted(want.values()) == [f"after {i}" for i in range(5)]
        got = restored_once_caught_up(str(tmp_path / "replica"), want, tmp_path)
        assert got == want
        restored = tmp_path / "scratch.db"
        with sqsqlite.connect(str(restored)) as copy:
            assert copy.integrity_check() == "ok"
        assert os.path.getsize(restored) < full / 10
        assert replication.poll() is None, replication.stderr.read() if replication.stderr else ""
    finally:
        kill_group(replication)
