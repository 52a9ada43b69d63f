"""``sqsqlite serve`` as a real process: SIGTERM stops it cleanly with nothing half-written."""

import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from botocore.exceptions import BotoCoreError, ClientError

import sqsqlite
from sqsqlite.testing import wait_until_ready
from tests.server.server_helpers import boto3_client

pytestmark = pytest.mark.slow


def start(db_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", db_path, "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    line = proc.stderr.readline()
    m = re.search(r"at (http://\S+)", line)
    assert m, f"no start line: {line!r}"
    wait_until_ready(m.group(1), process=proc)
    return proc, m.group(1)


def test_sigterm_finishes_requests_in_progress_ends_long_polls_and_loses_no_acknowledged_send(tmp_path):
    db_path = str(tmp_path / "term.db")
    proc, url = start(db_path)
    try:
        sqs = boto3_client(url)
        queue = sqs.create_queue(QueueName="work")["QueueUrl"]
        sqs.create_queue(QueueName="idle")
        acked: list[str] = []
        errors: list[Exception] = []
        polls: list = []
        stop = threading.Event()

        def sender(n):
            client = boto3_client(url)
            i = 0
            while not stop.is_set():
                try:
                    r = client.send_message_batch(
                        QueueUrl=queue, Entries=[{"Id": str(k), "MessageBody": f"{n}-{i}-{k}"} for k in range(10)]
                    )
                except (BotoCoreError, ClientError) as exc:  # the server went away: expected at the end
                    errors.append(exc)
                    return
                acked.extend(s["MessageId"] for s in r["Successful"])
                i += 1

        # The poll's client is built first, and SIGTERM waits until its request is on its way
        # (then a moment for it to land): on a loaded machine a boto3 client takes long to make,
        # and a poll arriving after the stop is refused, which is not what this test is about.
        poll_client, poll_sent = boto3_client(url), threading.Event()
        poll_client.meta.events.register("before-send.sqs.ReceiveMessage", lambda **kw: poll_sent.set())

        def poller():
            polls.append(poll_client.receive_message(QueueUrl="idle", WaitTimeSeconds=20))

        threads = [threading.Thread(target=sender, args=(n,)) for n in range(3)] + [threading.Thread(target=poller)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 30
        while len(acked) < 200 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert poll_sent.wait(30)
        time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=30)
        stop.set()
        for t in threads:
            t.join(30)
        stderr = proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == 0, stderr
    assert "sqsqlite stopped" in stderr
    # The long poll in progress got an answer (empty), not a broken connection.
    assert len(polls) == 1 and polls[0].get("Messages", []) == [] and polls[0]["ResponseMetadata"]["HTTPStatusCode"] == 200
    # Every acknowledged send is in the file, and the file is whole.
    assert len(acked) >= 200
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    db = sqsqlite.connect(db_path)
    stored = {m.message_id for m in db.queue("work").peek("all", limit=1_000_000)}
    db.close()
    assert set(acked) <= stored
    # Nothing stored that was never acknowledged, beyond the batches cut off mid-answer.
    assert len(stored - set(acked)) <= 10 * 3


def test_a_stopped_server_accepts_no_new_connections(tmp_path):
    proc, url = start(str(tmp_path / "gone.db"))
    boto3_client(url).list_queues()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) == 0
    with pytest.raises((BotoCoreError, ClientError)):
        boto3_client(url).list_queues()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/limits")
def test_serve_raises_its_open_descriptor_limit_to_the_hard_limit_at_start(tmp_path):
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard <= 64:
        pytest.skip("no finite hard limit above 64 to raise to")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "fds.db"), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard)),  # as `ulimit -Sn 64` would leave it
    )
    try:
        assert "serving" in proc.stderr.readline()
        with open(f"/proc/{proc.pid}/limits") as f:
            [line] = [line for line in f if line.startswith("Max open files")]
        assert line.split()[3:5] == [str(hard), str(hard)]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
