"""``sqsqlite serve`` while another program (the ``sqlite3`` shell, a backup tool) holds SQLite's
write lock on the file: a write waits off the event loop, so the worker goes on answering the
other clients, and the write completes once the lock is let go."""

import fcntl
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ReadTimeoutError

import sqsqlite
from sqsqlite.testing import wait_until_ready
from tests.server.server_helpers import CREDENTIALS, boto3_client

pytestmark = pytest.mark.slow


def _start(db_path: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "sqsqlite.server", "--db", db_path, "--port", "0", "--workers", "1"], stderr=subprocess.PIPE, text=True
    )
    line = proc.stderr.readline()  # type: ignore[union-attr]
    m = re.search(r"at (http://\S+)", line)
    assert m, f"no start line: {line!r}"
    wait_until_ready(m.group(1), process=proc)
    return proc, m.group(1)


def _writers_lock_taken(db_path: str) -> bool:
    """Whether a sqsqlite writer holds the file's writers' lock (it takes it before BEGIN IMMEDIATE)."""
    fd = os.open(db_path + "-lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def _send_behind_the_lock(url: str, queue: str, db_path: str) -> tuple[threading.Thread, list[dict], list[Exception]]:
    """A send in a thread of its own, returned once it is in the server waiting for SQLite's lock
    (it holds the writers' lock file then), with the lists its answer or error will be put in."""
    sent: list[dict] = []
    errors: list[Exception] = []

    def send() -> None:
        try:
            sent.append(boto3_client(url).send_message(QueueUrl=queue, MessageBody="behind the lock"))
        except Exception as exc:  # reported by the callers' assertions
            errors.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    _wait_for_the_writers_lock(db_path, sender)
    return sender, sent, errors


def _let_go(other: sqlite3.Connection | None, sender: threading.Thread | None) -> None:
    """The other program's lock let go and closed, and the send waited for, however a test ended."""
    if other is not None:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
    if sender is not None:
        sender.join(30)


def _wait_for_the_writers_lock(db_path: str, alive: threading.Thread) -> None:
    deadline = time.monotonic() + 30
    while not _writers_lock_taken(db_path):
        assert time.monotonic() < deadline and alive.is_alive()
        time.sleep(0.01)


def test_a_send_behind_another_programs_write_lock_leaves_the_worker_answering_other_clients_and_lands_once_it_is_let_go(tmp_path):
    db_path = str(tmp_path / "held.db")
    proc, url = _start(db_path)
    other = None
    sender = None
    try:
        sqs = boto3_client(url)
        queue = sqs.create_queue(QueueName="work")["QueueUrl"]
        # A read that the loop does not answer within this bound is a loop held up by the send.
        config = Config(retries={"total_max_attempts": 1}, connect_timeout=5, read_timeout=5)
        reader = boto3.client("sqs", endpoint_url=url, region_name="us-east-1", config=config, **CREDENTIALS)
        reader.list_queues()  # connected and served once before the lock is taken

        other = sqlite3.connect(db_path, isolation_level=None)  # knows nothing of sqsqlite's lock file
        other.execute("BEGIN IMMEDIATE")
        sender, sent, errors = _send_behind_the_lock(url, queue, db_path)

        try:
            urls = reader.list_queues()["QueueUrls"]
            url_of = reader.get_queue_url(QueueName="work")["QueueUrl"]
        except ReadTimeoutError:
            pytest.fail("the worker's loop stopped answering while another program held SQLite's write lock")
        assert urls == [queue] and url_of == queue
        # Answered while the send still waits: the lock still held (no duration asserted).
        assert sender.is_alive() and not sent

        other.execute("ROLLBACK")
        sender.join(30)
        assert not sender.is_alive() and not errors, errors
        got = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
        assert [(m["MessageId"], m["Body"]) for m in got] == [(sent[0]["MessageId"], "behind the lock")]
        assert sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10).get("Messages", []) == []
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        counts = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=names)["Attributes"]
        # Written once, though first tried on the loop (which gave up having written nothing).
        assert counts == {"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "1"}
    finally:
        _let_go(other, sender)
        proc.terminate()
        proc.wait(30)


def test_a_send_still_waiting_when_a_stop_gives_up_waiting_is_answered_with_what_it_stored(tmp_path, monkeypatch):
    # The stop waits 0.3 s for requests in progress; the send waits behind another program's lock
    # longer than that, then commits. Its client must learn of the message stored (a 500 would be
    # sent again by every SDK: the message twice).
    from sqsqlite.server import BackgroundServer, endpoint

    monkeypatch.setattr(endpoint, "GRACEFUL_STOP_SECONDS", 0.3)
    db_path = str(tmp_path / "late.db")
    background = BackgroundServer(db_path)
    other = None
    sender = None
    try:
        sqs = boto3_client(background.url)
        queue = sqs.create_queue(QueueName="work")["QueueUrl"]
        other = sqlite3.connect(db_path, isolation_level=None)  # knows nothing of sqsqlite's lock file
        other.execute("BEGIN IMMEDIATE")
        sender, sent, errors = _send_behind_the_lock(background.url, queue, db_path)
        stopped: list[bool] = []
        stopper = threading.Thread(target=lambda: stopped.append(background.stop(timeout=30)))
        stopper.start()
        time.sleep(1.0)  # well past the stop's wait: the request is cut off from here on
        assert sender.is_alive() and not sent and not errors
        other.execute("ROLLBACK")
        sender.join(30)
        stopper.join(60)
    finally:
        _let_go(other, sender)
    assert not errors, errors
    assert stopped == [False]  # a request outlived the stop's wait: not a clean stop
    db = sqsqlite.connect(db_path)
    stored = [m.message_id for m in db.queue("work").peek("all")]
    db.close()
    assert stored == [sent[0]["MessageId"]]


def test_a_large_answer_given_late_at_a_stop_is_written_out_whole_before_the_server_exits(tmp_path, monkeypatch):
    # A receive of ten 1 MB messages waits behind another program's lock past the stop's wait;
    # its answer, given late, is more than the socket takes at once: the server's loop runs on
    # until it is all written (asyncio.run cut it off at a few MB, the claim committed).
    from sqsqlite.server import BackgroundServer, endpoint

    monkeypatch.setattr(endpoint, "GRACEFUL_STOP_SECONDS", 0.3)
    db_path = str(tmp_path / "big.db")
    with sqsqlite.connect(db_path) as db:
        big = db.create_queue("big")
        for i in range(10):
            big.send_message(str(i) * 1_000_000)
    background = BackgroundServer(db_path)
    host, port = background.url.removeprefix("http://").split(":")
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    client = socket.create_connection((host, int(port)), timeout=30)
    body = json.dumps({"QueueUrl": f"{background.url}/000000000000/big", "MaxNumberOfMessages": 10}).encode()
    client.sendall(
        f"POST / HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        f"X-Amz-Target: AmazonSQS.ReceiveMessage\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    received = bytearray()
    reader = threading.Thread(target=lambda: received.extend(_read_all(client)))
    reader.start()
    try:
        _wait_for_the_writers_lock(db_path, reader)
        stopped: list[bool] = []
        stopper = threading.Thread(target=lambda: stopped.append(background.stop(timeout=30)))
        stopper.start()
        time.sleep(1.0)  # past the stop's wait
        other.execute("ROLLBACK")
        stopper.join(60)
        reader.join(60)
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        client.close()
    head, _, answer = bytes(received).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))  # type: ignore[union-attr]
    assert len(answer) == length
    assert sorted(m["Body"][0] for m in json.loads(answer)["Messages"]) == [str(i) for i in range(10)]
    assert stopped == [False]


def _read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)
