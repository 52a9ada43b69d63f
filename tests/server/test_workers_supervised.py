"""``serve --workers N`` supervises its workers: one that dies is replaced while the others serve,
a crash loop is slowed by pauses that double, and one that cannot start at all stops the service
in one line. Real processes, since a death is the point; each test is bounded to seconds."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from sqsqlite import defaults as D
from sqsqlite.server.workers import Restarts, exit_cause, run_workers
from sqsqlite.testing import wait_until_ready
from tests.server.server_helpers import boto3_client

pytest.importorskip("uvicorn")


def test_a_worker_that_ran_a_while_is_replaced_at_once_and_one_that_keeps_dying_waits_longer_each_time():
    restarts = Restarts()
    assert restarts.after_death(3600) == 0  # a death after a long run: at once
    quick = [restarts.after_death(0.2) for _ in range(9)]
    assert quick == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert quick[0] == D.WORKER_RESTART_FIRST_SECONDS and quick[-1] == D.WORKER_RESTART_MAX_SECONDS
    assert restarts.after_death(D.WORKER_STABLE_SECONDS) == 0  # stable again: the pauses start over
    assert restarts.after_death(1) == 0.5


def test_an_exit_cause_names_the_signal_or_the_status():
    assert exit_cause(-signal.SIGKILL) == "was killed by SIGKILL"
    assert exit_cause(1) == "exited with status 1"


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return sorted(int(p) for p in out.split())


def _sockets(pid: int) -> int:
    """How many sockets a process holds (its clients' connections among them)."""
    fds, count = f"/proc/{pid}/fd", 0
    for fd in os.listdir(fds):
        with contextlib.suppress(OSError):  # closed meanwhile
            count += os.readlink(f"{fds}/{fd}").startswith("socket:")
    return count


def test_a_worker_sigkilled_under_load_is_replaced_the_service_answers_throughout_and_no_acknowledged_send_is_lost(tmp_path):
    path = str(tmp_path / "supervised.db")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2"], stderr=subprocess.PIPE, text=True
    )
    try:
        line = proc.stderr.readline()
        m = re.search(r"at (http://\S+) with 2 workers", line)
        assert m, line
        url = m.group(1)
        wait_until_ready(url, process=proc)
        queue = boto3_client(url).create_queue(QueueName="load")["QueueUrl"]
        first = _children(proc.pid)
        assert len(first) == 2
        clients = 4
        acked: dict[str, str] = {}
        failed: list[tuple[float, str]] = []
        answered: list[float] = []
        done = threading.Event()

        def client(n: int) -> None:
            sqs = boto3_client(url)
            i = 0
            while not done.is_set():
                body = f"{n}-{i}"
                i += 1
                try:
                    acked[body] = sqs.send_message(QueueUrl=queue, MessageBody=body)["MessageId"]
                    answered.append(time.monotonic())
                except Exception as exc:  # in flight on the worker killed: cut off, or its answer cut short
                    failed.append((time.monotonic(), repr(exc)))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        killed_at = time.monotonic()
        victim = first[0]
        os.kill(victim, signal.SIGKILL)
        deadline = killed_at + 30
        while True:
            now = _children(proc.pid)
            if len(now) == 2 and victim not in now:
                break
            assert time.monotonic() < deadline, "the dead worker was not replaced"
            time.sleep(0.05)
        replaced_at = time.monotonic()
        time.sleep(1.5)
        done.set()
        for t in threads:
            t.join(30)
        ended_at = time.monotonic()
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert re.search(rf"worker \d \(process {victim}\) was killed by SIGKILL after [\d.]+ s; starting another", err), err
    # Only requests in flight on the dead worker may fail: at most one a client.
    assert len(failed) <= clients, failed
    # Answered throughout: in every half second from the kill to the end, some send succeeded.
    t = killed_at
    while t < ended_at - 0.5:
        assert any(t <= a < t + 0.5 for a in answered), (
            f"no answer between {t - killed_at:.1f} and {t - killed_at + 0.5:.1f} s after the kill"
        )
        t += 0.5
    assert len(acked) > 100 and replaced_at - killed_at < 10
    # Nothing acknowledged lost, nothing received twice (visibility longer than the test).
    from sqsqlite import connect

    with connect(path) as db:
        q = db.queue("load")
        got: list[str] = []
        while batch := q.receive_message(max_number_of_messages=10, visibility_timeout=600):
            got += [m.body for m in batch]
    assert len(got) == len(set(got))
    assert set(acked) <= set(got)


CRASH_AT_ONCE = """
import json, os, sys
options = json.loads(os.environ["SQSQLITE_WORKER_OPTIONS"])
os.write(options["status_fd"], f"{os.getpid()} ready\\n".encode())
sys.exit(1)
"""

CANNOT_START = """
import json, os, sys
options = json.loads(os.environ["SQSQLITE_WORKER_OPTIONS"])
os.write(options["status_fd"], f"{os.getpid()} failed the database is gone\\n".encode())
sys.exit(3)
"""


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    return sock


def test_a_crash_looping_worker_is_started_again_after_pauses_that_double(caplog):
    stop = threading.Event()
    outcome: list[str | None] = []
    caplog.set_level("WARNING", logger="sqsqlite.server")
    runner = threading.Thread(
        target=lambda: outcome.append(run_workers({}, 1, _listening(), argv=[sys.executable, "-c", CRASH_AT_ONCE], stop=stop))
    )
    runner.start()
    time.sleep(4.0)
    stop.set()
    runner.join(30)
    deaths = [r.getMessage() for r in caplog.records if "exited with status 1" in r.getMessage()]
    pauses = [float(m.group(1)) for d in deaths if (m := re.search(r"starting another in ([\d.]+) s", d))]
    # 0.5 + 1 + 2 s of pauses fit in 4 s, with each start's interpreter: 3 or 4 deaths, not dozens.
    assert 2 <= len(deaths) <= 4, deaths
    assert pauses == [0.5, 1, 2, 4][: len(pauses)] and len(pauses) == len(deaths)
    assert outcome == ["some requests did not finish in time"] or outcome == [None]


SLOW_START = """
import time
time.sleep(30)  # stopped before it is ready: SIGTERM's default action ends it
"""


def test_a_stop_while_workers_are_starting_is_clean():
    stop = threading.Event()
    outcome: list[str | None] = []
    runner = threading.Thread(
        target=lambda: outcome.append(run_workers({}, 2, _listening(), argv=[sys.executable, "-c", SLOW_START], stop=stop))
    )
    runner.start()
    time.sleep(0.5)
    stop.set()
    runner.join(30)
    assert outcome == [None]  # it said "some requests did not finish in time", and serve exited 1


def test_a_worker_that_cannot_start_stops_the_service_with_its_reason_in_one_line():
    started: list[bool] = []
    begun = time.monotonic()
    problem = run_workers({}, 2, _listening(), lambda: started.append(True), argv=[sys.executable, "-c", CANNOT_START])
    assert problem == "a worker could not start: the database is gone"
    assert not started and time.monotonic() - begun < 20


def test_long_polls_parked_in_a_killed_worker_end_as_dropped_connections_and_its_claimed_messages_come_back(tmp_path):
    path = str(tmp_path / "polls.db")
    polls: list[threading.Thread] = []
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2"], stderr=subprocess.PIPE, text=True
    )
    try:
        url = re.search(r"at (http://\S+) with 2 workers", proc.stderr.readline()).group(1)  # type: ignore[union-attr]
        wait_until_ready(url, process=proc)
        sqs = boto3_client(url)
        queue = sqs.create_queue(QueueName="polls")["QueueUrl"]
        empty = sqs.create_queue(QueueName="empty")["QueueUrl"]
        for i in range(20):
            sqs.send_message(QueueUrl=queue, MessageBody=str(i))
        # Claimed through fresh connections, spread over both workers, for 2 s.
        claimed = [m["Body"] for _ in range(10) for m in boto3_client(url).receive_message(QueueUrl=queue, VisibilityTimeout=2)["Messages"]]
        ended: list[tuple[float, str]] = []

        def poll() -> None:
            try:
                boto3_client(url).receive_message(QueueUrl=empty, WaitTimeSeconds=20)
                ended.append((time.monotonic(), "answered"))
            except Exception as exc:
                ended.append((time.monotonic(), type(exc).__name__))

        polls += [threading.Thread(target=poll) for _ in range(8)]
        for t in polls:
            t.start()
        time.sleep(1.0)  # parked, in one worker or the other
        killed_at = time.monotonic()
        os.kill(max(_children(proc.pid), key=_sockets), signal.SIGKILL)  # the one holding more of the polls
        time.sleep(3.0)
        dropped = [(at, how) for at, how in ended if how != "answered"]
        # Those parked in the dead worker end at once, as dropped connections; the rest wait on.
        assert dropped and all(at - killed_at < 3 for at, _ in dropped), ended
        assert len(ended) < len(polls), ended
        # Nothing lost: the claimed messages are received again once their 2 s are over.
        again: list[str] = []
        while len(again) < 20 and time.monotonic() < killed_at + 30:
            again += [
                m["Body"] for m in sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages", [])
            ]
        assert sorted(again, key=int) == [str(i) for i in range(20)] and set(claimed) <= set(again)
        sqs.send_message(QueueUrl=empty, MessageBody="wake")  # the polls still waiting end now
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        for t in polls:
            t.join(30)


def test_a_real_worker_that_cannot_open_its_database_says_why_on_the_status_pipe_and_exits_3(tmp_path):
    import json

    from sqsqlite.server.workers import CANNOT_START, OPTIONS_VARIABLE

    sock = _listening()
    readout, status = os.pipe()
    options = {
        "db_path": str(tmp_path),  # a directory, not a database file
        "fd": sock.fileno(),
        "status_fd": status,
        "parent": os.getpid(),
        "console_secret": "00" * 32,
    }
    env = {**os.environ, OPTIONS_VARIABLE: json.dumps(options)}
    try:
        worker = subprocess.Popen(
            [sys.executable, "-m", "sqsqlite.server.workers"], pass_fds=[sock.fileno(), status], env=env, stderr=subprocess.PIPE, text=True
        )
        _, err = worker.communicate(timeout=60)
        os.close(status)
        said = os.read(readout, 65536).decode()
    finally:
        os.close(readout)
        sock.close()
    assert worker.returncode == CANNOT_START and "Traceback" not in err
    pid, word, why = said.rstrip("\n").split(" ", 2)
    assert (int(pid), word) == (worker.pid, "failed") and "\n" not in said.rstrip("\n")
    assert why == f"Can't open database {str(tmp_path)!r}: it is a directory; give the path of a file in it."
