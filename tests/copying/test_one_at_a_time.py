"""One copy at a time to a queue there: a second copy to it while the first runs is refused before
it changes anything there or here (both would start from the same kept position and send the
same messages), and a copy that dies leaves nothing that holds the next one back. Real processes where a process's
death is the point; the first copy is held at its first batch rather than raced against."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

import sqsqlite
from sqsqlite.copying import CopyError, copy_to

from .helpers import cli, drain, other_account_client

HINT = "hint: one copy at a time to a queue there: run this again once that one has ended, and it continues where that one stopped"


class HeldAtFirstBatch:
    """The endpoint's client, whose first send waits until ``go`` is set: the copy using it runs
    (and holds what it holds) for as long as the test needs."""

    def __init__(self, inner):
        self.inner = inner
        self.sending, self.go = threading.Event(), threading.Event()

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def send_message_batch(self, **kwargs):
        self.sending.set()
        assert self.go.wait(60)
        return self.inner.send_message_batch(**kwargs)


def make_queue(path: str, name: str, count: int) -> None:
    with sqsqlite.connect(path) as db:
        queue = db.create_queue(name)
        for i in range(0, count, 10):
            queue.send_message_batch([{"Id": str(j), "MessageBody": f"{name}-{i + j}"} for j in range(10)])


def bodies(client, name: str) -> Counter:
    return Counter(m["Body"] for m in drain(client, client.get_queue_url(QueueName=name)["QueueUrl"]))


@contextlib.contextmanager
def first_copy_held(path: str, client, *names):
    """A copy of the file at ``path`` to ``client``'s endpoint, held at its first batch while the
    block runs (so that another copy meets it for certain); yields its future, done once the
    block has ended."""
    held = HeldAtFirstBatch(client)
    with sqsqlite.connect(path) as db, ThreadPoolExecutor(1) as pool:
        first = pool.submit(copy_to, db, held, *names)
        try:
            assert held.sending.wait(60)
            yield first
        finally:
            held.go.set()


def test_a_second_copy_to_the_same_queue_is_refused_while_the_first_runs_and_each_message_arrives_once(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 30)
    with first_copy_held(path, client) as first:
        second = cli("copy", "--db", path, "--to-endpoint-url", endpoint, env=env, code=255)
    assert first.result(timeout=120).messages == {"orders": 30}
    assert second.stdout == ""
    assert second.stderr.splitlines() == [
        f"sqsqlite: orders: another copy to orders at {endpoint} is running (process {os.getpid()}): this one changed nothing there",
        HINT,
    ]
    assert bodies(client, "orders") == Counter(f"orders-{i}" for i in range(30))
    assert not [f for f in os.listdir(tmp_path) if "-copy-" in f]  # the lease's file goes with the copy


def test_a_second_copy_in_the_same_process_is_refused_with_a_typed_error_and_sends_nothing(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 10)
    with first_copy_held(path, client) as first:
        with sqsqlite.connect(path) as other, pytest.raises(CopyError) as refused:
            copy_to(other, client)
        bookmarks = other.bookmarks("copy-to ")
    assert first.result(timeout=120).messages == {"orders": 10}
    assert str(refused.value) == f"orders: another copy to orders at {endpoint} is running (this process): this one changed nothing there"
    assert refused.value.hint == HINT.removeprefix("hint: ")
    assert bookmarks == {}  # the refused copy kept no position: the first had sent nothing yet either
    assert bodies(client, "orders") == Counter(f"orders-{i}" for i in range(10))


def test_copies_to_different_queues_there_run_at_the_same_time(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 10)
    make_queue(path, "invoices", 10)
    with first_copy_held(path, client, ["orders"]) as first:
        other = cli("copy", "--db", path, "--to-endpoint-url", endpoint, "--queue-url", "invoices", env=env)
    assert first.result(timeout=120).messages == {"orders": 10}
    assert other.stdout == f"invoices: 10 messages copied to {endpoint}\n"
    assert bodies(client, "orders") == Counter(f"orders-{i}" for i in range(10))
    assert bodies(client, "invoices") == Counter(f"invoices-{i}" for i in range(10))


# A copy in a process of its own that stops at its first send, before the endpoint has it, and
# waits there until killed: a copy that dies while it holds its lease, at a moment of the test's
# choosing.
STOPS_AT_FIRST_SEND = textwrap.dedent(
    """
    import sys, threading
    import boto3
    import sqsqlite
    from sqsqlite.copying import copy_to

    class StopsAtFirstSend:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def send_message_batch(self, **kwargs):
            print("sending", flush=True)
            threading.Event().wait()

    client = boto3.client("sqs", endpoint_url=sys.argv[2], region_name="us-east-1")
    with sqsqlite.connect(sys.argv[1]) as db:
        copy_to(db, StopsAtFirstSend(client))
    """
)


def test_a_copy_killed_with_sigkill_leaves_the_next_copy_free_to_run(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 30)
    script = tmp_path / "stops_at_first_send.py"
    script.write_text(STOPS_AT_FIRST_SEND)
    dying = subprocess.Popen([sys.executable, str(script), path, endpoint], env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert dying.stdout.readline() == "sending\n"
        refused = cli("copy", "--db", path, "--to-endpoint-url", endpoint, env=env, code=255)
        assert f"is running (process {dying.pid})" in refused.stderr
    finally:
        dying.send_signal(signal.SIGKILL)
        dying.wait(timeout=60)
        dying.stdout.close()
    assert dying.returncode == -signal.SIGKILL
    again = cli("copy", "--db", path, "--to-endpoint-url", endpoint, env=env)
    assert again.stdout == f"orders: 30 messages copied to {endpoint}\n"
    assert bodies(client, "orders") == Counter(f"orders-{i}" for i in range(30))
    assert not [f for f in os.listdir(tmp_path) if "-copy-" in f]  # the killed copy's file, taken and removed by the next


def endpoint_state(client) -> dict:
    """Every queue at the endpoint, with its attributes and tags, as the endpoint reports them."""
    return {
        url: (
            client.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"],
            client.list_queue_tags(QueueUrl=url).get("Tags"),
        )
        for url in client.list_queues().get("QueueUrls", [])
    }


def file_state(path: str) -> tuple[list[str], list[str]]:
    """The database's every row, as SQL, and the files beside it."""
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        rows = list(con.iterdump())
    return rows, sorted(os.listdir(os.path.dirname(path)))


def test_a_copy_refused_while_another_runs_creates_no_queue_there_and_leaves_the_file_as_it_was(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 10)
    make_queue(path, "invoices", 10)
    with first_copy_held(path, client, ["orders"]) as first:
        there, here = endpoint_state(client), file_state(path)
        refused = cli("copy", "--db", path, "--to-endpoint-url", endpoint, env=env, code=255)
        assert endpoint_state(client) == there  # invoices not made there
        assert file_state(path) == here
    assert "orders: another copy to orders at" in refused.stderr
    assert first.result(timeout=120).messages == {"orders": 10}
    assert [url.rsplit("/", 1)[-1] for url in client.list_queues()["QueueUrls"]] == ["orders"]


def test_a_copy_refused_while_another_runs_sets_no_attribute_or_tag_there(tmp_path, remote):
    endpoint, env, client = remote
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 10)
    with first_copy_held(path, client) as first:
        with sqsqlite.connect(path) as db:  # changed here since the first copy made the queue there
            db.queue("orders").set_queue_attributes({"VisibilityTimeout": "45"})
            db.queue("orders").tag_queue({"team": "billing"})
        there, here = endpoint_state(client), file_state(path)
        cli("copy", "--db", path, "--to-endpoint-url", endpoint, env=env, code=255)
        assert endpoint_state(client) == there
        assert file_state(path) == here
    assert first.result(timeout=120).messages == {"orders": 10}
    url = client.get_queue_url(QueueName="orders")["QueueUrl"]
    assert client.get_queue_attributes(QueueUrl=url, AttributeNames=["VisibilityTimeout"])["Attributes"] == {"VisibilityTimeout": "30"}


def test_copies_from_one_database_to_one_queue_name_in_two_accounts_behind_one_url_run_one_at_a_time(tmp_path, remote):
    # The lease is taken before the queue there is known by its ARN: by its name at that URL.
    endpoint, env, client = remote
    other = other_account_client(endpoint)
    path = str(tmp_path / "q.db")
    make_queue(path, "orders", 10)
    with first_copy_held(path, client) as first:
        with sqsqlite.connect(path) as db, pytest.raises(CopyError, match="another copy to orders at"):
            copy_to(db, other)
    assert first.result(timeout=120).messages == {"orders": 10}
    assert other.list_queues().get("QueueUrls", []) == []
