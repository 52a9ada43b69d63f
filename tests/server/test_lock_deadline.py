"""An HTTP request's write waits for the database's write lock only until its deadline
(``serve --lock-wait-seconds``), then is answered 503 ServiceUnavailable having written nothing:
an SDK retries that, where a request still waiting past the SDK's read timeout would be sent again
and both commit, storing one send twice. A request whose client left while it waited still
commits once it gets the lock within its deadline."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ReadTimeoutError

from sqsqlite.server.endpoint import BackgroundServer
from tests.server.server_helpers import CREDENTIALS, boto3_client

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def _held(path: str, how: str) -> Iterator[None]:
    """The database's write lock held by another program: SQLite's own (a connection's BEGIN
    IMMEDIATE, as the sqlite3 shell's), or sqsqlite's writers' lock file (another sqsqlite
    process's long transaction)."""
    if how == "sqlite":
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("COMMIT")
            conn.close()
    else:
        fd = os.open(path + "-lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)


def _client(url: str, config: Config):
    return boto3.client("sqs", endpoint_url=url, config=config, region_name="us-east-1", **CREDENTIALS)


def _bodies(client, url: str) -> list[str]:
    messages = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=0, WaitTimeSeconds=0)
    return sorted(m["Body"] for m in messages.get("Messages", []))


@pytest.mark.parametrize("how", ["sqlite", "lock file"])
def test_a_send_that_cannot_get_the_write_lock_in_time_is_answered_503_and_its_retry_stores_it_once(tmp_path, how):
    path = str(tmp_path / "q.db")
    with BackgroundServer(path, lock_wait_seconds=0.5) as server:
        client = boto3_client(server.url)
        url = client.create_queue(QueueName="q")["QueueUrl"]
        with _held(path, how):
            with pytest.raises(ClientError) as refused:
                client.send_message(QueueUrl=url, MessageBody="once")
        error = refused.value.response
        assert error["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert error["Error"]["Code"] == "ServiceUnavailable"
        assert _bodies(client, url) == []  # nothing of it was written
        client.send_message(QueueUrl=url, MessageBody="once")
        assert _bodies(client, url) == ["once"]
        assert server.server.app.gave_up == 1


def test_a_batch_that_cannot_get_the_write_lock_in_time_is_answered_503_in_the_query_protocol_too(tmp_path):
    from tests.server.server_helpers import query_protocol_client

    path = str(tmp_path / "q.db")
    with BackgroundServer(path, lock_wait_seconds=0.5) as server:
        client = query_protocol_client(server.url)
        url = client.create_queue(QueueName="q")["QueueUrl"]
        with _held(path, "sqlite"):
            with pytest.raises(ClientError) as refused:
                client.send_message_batch(QueueUrl=url, Entries=[{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])
        assert refused.value.response["ResponseMetadata"]["HTTPStatusCode"] == 503
        assert refused.value.response["Error"]["Code"] == "ServiceUnavailable"
        assert _bodies(client, url) == []


def test_an_sdk_retrying_by_itself_stores_a_send_held_up_by_a_long_transaction_once(tmp_path):
    path = str(tmp_path / "q.db")
    with BackgroundServer(path, lock_wait_seconds=0.5) as server:
        client = boto3_client(server.url)
        url = client.create_queue(QueueName="q")["QueueUrl"]
        retrying = _client(server.url, Config(retries={"mode": "standard", "total_max_attempts": 2}, read_timeout=60))
        with _held(path, "sqlite"):
            with pytest.raises(ClientError) as refused:
                retrying.send_message(QueueUrl=url, MessageBody="once")
        assert refused.value.response["ResponseMetadata"]["RetryAttempts"] == 1
        assert _bodies(client, url) == []
        retrying.send_message(QueueUrl=url, MessageBody="once")
        assert _bodies(client, url) == ["once"]


def test_a_send_whose_client_left_while_it_waited_for_the_lock_commits_once_it_gets_it(tmp_path):
    path = str(tmp_path / "q.db")
    with BackgroundServer(path, lock_wait_seconds=30) as server:
        client = boto3_client(server.url)
        url = client.create_queue(QueueName="q")["QueueUrl"]
        impatient = _client(server.url, Config(retries={"total_max_attempts": 1}, read_timeout=0.5))
        with _held(path, "sqlite"):
            with pytest.raises(ReadTimeoutError):  # the client goes; the request waits on
                impatient.send_message(QueueUrl=url, MessageBody="left")
        ends = time.monotonic() + 20
        while not (bodies := _bodies(client, url)) and time.monotonic() < ends:
            time.sleep(0.05)
        assert bodies == ["left"]
        assert server.server.app.gave_up == 0


def _healthy(url: str) -> None:
    """Until /health answers 200 (bounded): every worker serves."""
    ends = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/health", timeout=5) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.HTTPError, OSError):
            if time.monotonic() > ends:
                raise
        time.sleep(0.05)


def test_serve_with_workers_takes_lock_wait_seconds_and_answers_503_past_it(tmp_path):
    path = str(tmp_path / "q.db")
    args = [sys.executable, "-m", "sqsqlite.server", "--db", path, "--port", "0", "--workers", "2", "--lock-wait-seconds", "0.5"]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()  # type: ignore[union-attr]
        found = re.search(r"at (http://\S+)", line)
        assert found, line
        url = found.group(1)
        _healthy(url)
        client = boto3_client(url)
        queue = client.create_queue(QueueName="q")["QueueUrl"]
        with _held(path, "sqlite"):
            with pytest.raises(ClientError) as refused:
                client.send_message(QueueUrl=queue, MessageBody="once")
        assert refused.value.response["Error"]["Code"] == "ServiceUnavailable"
        client.send_message(QueueUrl=queue, MessageBody="once")
        assert _bodies(client, queue) == ["once"]
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)


@pytest.mark.parametrize("value", ["inf", "nan", "56", "0"])
def test_a_lock_wait_that_is_no_finite_number_under_the_sdks_timeout_is_a_usage_error(tmp_path, value):
    from click.testing import CliRunner

    from sqsqlite.cli.main import cli

    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "q.db"), "--port", "0", "--lock-wait-seconds", value])
    assert result.exit_code == 252, result.output  # the aws CLI's status for a usage error
    assert result.stderr.startswith("sqsqlite: Invalid value for '--lock-wait-seconds'"), result.stderr
