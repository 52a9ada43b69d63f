"""Queues declared in a file (YAML, JSON, ElasticMQ's HOCON), applied to a database: what each
spelling creates, idempotent re-application, and invalid files refused whole, naming the queue
and the key, with nothing written."""

import json
import signal

import pytest
from click.testing import CliRunner

import sqsqlite
from sqsqlite.server.queues_file import QueuesFileError, apply_queues, read_queues_file
from sqsqlite.testing import wait_until_ready

YAML = """\
queues:
  - name: orders
    attributes:
      VisibilityTimeout: 60
      MessageRetentionPeriod: 86400
    deadLetterQueue: {name: orders-dlq, maxReceiveCount: 5}
    tags: {team: payments}
  - name: orders-dlq
  - name: events.fifo
    attributes: {ContentBasedDeduplication: true}
"""

ELASTICMQ = """\
include classpath("application.conf")

node-address { host = "localhost", port = 9324 }
rest-sqs { enabled = true, bind-port = 9324, bind-hostname = "0.0.0.0" }

queues {
  orders {
    defaultVisibilityTimeout = 60 seconds
    delay = 5 seconds
    receiveMessageWait = 0 seconds
    deadLettersQueue {
      name = "orders-dlq"
      maxReceiveCount = 5
    }
    tags {
      team = "payments"
    }
  }
  orders-dlq { }
  "events.fifo" {
    fifo = true
    contentBasedDeduplication = true
  }
}
"""


def apply_file(db, path):
    return apply_queues(db, read_queues_file(path), str(path))


def attributes(db, name):
    return db.queue(name).get_queue_attributes(["All"])


def test_a_yaml_file_creates_its_queues_with_attributes_tags_dead_letter_queue_and_fifo(tmp_path):
    (tmp_path / "queues.yaml").write_text(YAML)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    outcome = apply_file(db, tmp_path / "queues.yaml")
    assert outcome == {"Created": ["orders", "orders-dlq", "events.fifo"], "Updated": [], "Unchanged": [], "NotInFile": []}
    orders = attributes(db, "orders")
    assert orders["VisibilityTimeout"] == "60" and orders["MessageRetentionPeriod"] == "86400"
    assert json.loads(orders["RedrivePolicy"]) == {"deadLetterTargetArn": db.queue_arn("orders-dlq"), "maxReceiveCount": 5}
    assert db.queue("orders").list_queue_tags() == {"team": "payments"}
    fifo = attributes(db, "events.fifo")
    assert fifo["FifoQueue"] == "true" and fifo["ContentBasedDeduplication"] == "true"


def test_a_json_file_says_the_same_as_the_yaml_one(tmp_path):
    import yaml

    (tmp_path / "queues.json").write_text(json.dumps(yaml.safe_load(YAML)))
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    assert apply_file(db, tmp_path / "queues.json")["Created"] == ["orders", "orders-dlq", "events.fifo"]
    assert json.loads(attributes(db, "orders")["RedrivePolicy"])["maxReceiveCount"] == 5


def test_elasticmqs_own_conf_file_maps_each_key_to_its_sqs_attribute(tmp_path):
    (tmp_path / "elasticmq.conf").write_text(ELASTICMQ)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    assert apply_file(db, tmp_path / "elasticmq.conf")["Created"] == ["orders", "orders-dlq", "events.fifo"]
    orders = attributes(db, "orders")
    assert (orders["VisibilityTimeout"], orders["DelaySeconds"], orders["ReceiveMessageWaitTimeSeconds"]) == ("60", "5", "0")
    assert json.loads(orders["RedrivePolicy"]) == {"deadLetterTargetArn": db.queue_arn("orders-dlq"), "maxReceiveCount": 5}
    assert db.queue("orders").list_queue_tags() == {"team": "payments"}
    assert attributes(db, "events.fifo")["ContentBasedDeduplication"] == "true"


def test_elasticmq_durations_in_minutes_or_bare_milliseconds_become_seconds(tmp_path):
    (tmp_path / "e.conf").write_text("queues { a { defaultVisibilityTimeout = 2 minutes, delay = 3000 } }")
    [spec] = read_queues_file(tmp_path / "e.conf")
    assert spec.attributes == {"VisibilityTimeout": "120", "DelaySeconds": "3"}


def test_numbers_and_flags_in_tags_are_stored_as_the_text_sqs_keeps(tmp_path):
    (tmp_path / "q.yaml").write_text("queues:\n  - name: a\n    tags: {version: 2, public: false}\n")
    [spec] = read_queues_file(tmp_path / "q.yaml")
    assert spec.tags == {"version": "2", "public": "false"}


def test_applying_the_same_file_again_changes_nothing(tmp_path):
    (tmp_path / "queues.yaml").write_text(YAML)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    apply_file(db, tmp_path / "queues.yaml")
    before = {n: attributes(db, n)["LastModifiedTimestamp"] for n in ("orders", "orders-dlq", "events.fifo")}
    outcome = apply_file(db, tmp_path / "queues.yaml")
    assert outcome == {"Created": [], "Updated": [], "Unchanged": ["orders", "orders-dlq", "events.fifo"], "NotInFile": []}
    assert {n: attributes(db, n)["LastModifiedTimestamp"] for n in before} == before


def test_a_changed_file_updates_queues_in_place_keeps_their_messages_and_leaves_unlisted_ones(tmp_path):
    (tmp_path / "queues.yaml").write_text(YAML)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    apply_file(db, tmp_path / "queues.yaml")
    db.queue("orders").send_message("kept")
    (tmp_path / "queues.yaml").write_text(
        "queues:\n  - name: orders\n    attributes: {VisibilityTimeout: 90}\n    tags: {team: billing}\n  - name: orders-dlq\n"
    )
    outcome = apply_file(db, tmp_path / "queues.yaml")
    assert outcome == {"Created": [], "Updated": ["orders"], "Unchanged": ["orders-dlq"], "NotInFile": ["events.fifo"]}
    orders = attributes(db, "orders")
    assert orders["VisibilityTimeout"] == "90" and orders["ApproximateNumberOfMessages"] == "1"
    assert db.queue("orders").list_queue_tags() == {"team": "billing"}
    assert "events.fifo" in [u.rsplit("/", 1)[1] for u in db.list_queues()[0]]  # never dropped


def test_a_dead_letter_queue_may_be_declared_after_the_queues_using_it(tmp_path):
    (tmp_path / "q.yaml").write_text("queues:\n  - name: a\n    deadLetterQueue: {name: z, maxReceiveCount: 2}\n  - name: z\n")
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    apply_file(db, tmp_path / "q.yaml")
    assert json.loads(attributes(db, "a")["RedrivePolicy"])["deadLetterTargetArn"].endswith(":z")


@pytest.mark.parametrize(
    ("text", "suffix", "named"),
    [
        ("queues:\n  - name: orders\n    attributes: {VisibilityTimout: 60}\n", "yaml", ["'orders'", "'VisibilityTimout'"]),
        ("queues:\n  - name: orders\n    attributes: {VisibilityTimeout: 99999}\n", "yaml", ["'orders'", "'VisibilityTimeout'", "43200"]),
        ("queues:\n  - name: orders\n    colour: blue\n", "yaml", ["'orders'", "'colour'"]),
        ("queues:\n  - name: orders\n    deadLetterQueue: {name: nowhere, maxReceiveCount: 3}\n", "yaml", ["'orders'", "'nowhere'"]),
        (
            "queues:\n  - name: orders\n    deadLetterQueue: {name: d, maxReceiveCount: 0}\n  - name: d\n",
            "yaml",
            ["'orders'", "maxReceiveCount"],
        ),
        ("queues:\n  - name: orders\n    attributes: {FifoQueue: true}\n", "yaml", ["'orders'", "'FifoQueue'", ".fifo"]),
        ("queues:\n  - name: a\n  - name: a\n", "yaml", ["'a'", "twice"]),
        ("queues:\n  - name: 'bad name!'\n", "yaml", ["'bad name!'", "name"]),
        ("queues:\n  - name: a\n    tags: {'aws:x': y}\n", "yaml", ["'a'", "tags", "aws:"]),
        ('{"queues": [', "json", ["not JSON", "line 1"]),
        ('queues { a { copyTo = "audit" } }', "conf", ["'a'", "'copyTo'", "no SQS meaning"]),
        ('queues { a { moveTo = "b" } }', "conf", ["'a'", "'moveTo'"]),
        ("queues { a { inflightMessagesLimit = 3 } }", "conf", ["'a'", "'inflightMessagesLimit'"]),
        ("queues { a { fifo = true } }", "conf", ["'a'", "'FifoQueue'", ".fifo"]),
        ("queues { a { delay = 1500 } }", "conf", ["'a'", "delay", "whole number"]),
        ("queues { a { delay = soon } }", "conf", ["'a'", "delay", "duration"]),
        ("queues { a { ", "conf", ["not HOCON"]),
    ],
)
def test_an_invalid_file_is_one_error_naming_the_queue_and_key_and_writes_nothing(tmp_path, text, suffix, named):
    path = tmp_path / f"queues.{suffix}"
    path.write_text(text)
    db = sqsqlite.connect(str(tmp_path / "q.db"))
    with pytest.raises(QueuesFileError) as caught:
        apply_file(db, path)
    message = str(caught.value)
    assert message.startswith(str(path)) and "\n" not in message
    for word in named:
        assert word in message
    assert db.list_queues()[0] == []


def test_the_cli_applies_a_file_and_says_what_it_did(tmp_path):
    from sqsqlite.cli.main import cli

    (tmp_path / "queues.yaml").write_text(YAML)
    db_path = str(tmp_path / "q.db")
    result = CliRunner().invoke(cli, ["--db", db_path, "apply-queues", str(tmp_path / "queues.yaml")])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["Created"] == ["orders", "orders-dlq", "events.fifo"]


def test_the_cli_refuses_an_invalid_file_in_one_line_without_a_traceback(tmp_path):
    from sqsqlite.cli.main import cli

    (tmp_path / "queues.yaml").write_text("queues:\n  - name: orders\n    attributes: {DelaySeconds: -1}\n")
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "q.db"), "apply-queues", str(tmp_path / "queues.yaml")])
    assert result.exit_code == 255
    assert "queue 'orders': attribute 'DelaySeconds'" in result.output and "Traceback" not in result.output


def test_serve_with_an_invalid_file_exits_before_listening(tmp_path):
    from sqsqlite.cli.main import cli

    (tmp_path / "queues.yaml").write_text("queues:\n  - name: orders\n    attributes: {Colour: blue}\n")
    result = CliRunner().invoke(cli, ["serve", "--db", str(tmp_path / "q.db"), "--port", "0", "--queues", str(tmp_path / "queues.yaml")])
    assert result.exit_code == 255
    assert "queue 'orders': attribute 'Colour'" in result.output and "sqsqlite serving" not in result.output


def test_serve_stops_with_the_error_when_the_file_names_a_dead_letter_queue_nowhere_to_be_found(tmp_path):
    from sqsqlite.cli.main import cli

    (tmp_path / "queues.yaml").write_text("queues:\n  - name: a\n  - name: b\n    deadLetterQueue: {name: gone, maxReceiveCount: 2}\n")
    db_path = str(tmp_path / "q.db")
    result = CliRunner().invoke(cli, ["serve", "--db", db_path, "--port", "0", "--queues", str(tmp_path / "queues.yaml")])
    assert result.exit_code == 255
    assert "queue 'b': dead-letter queue 'gone'" in result.output
    assert sqsqlite.connect(db_path).list_queues()[0] == []  # checked before anything was written


@pytest.mark.slow
def test_serve_with_workers_applies_the_file_once_before_they_serve(tmp_path):
    import re
    import signal
    import subprocess
    import sys

    (tmp_path / "queues.yaml").write_text(YAML)
    db_path = str(tmp_path / "q.db")
    args = [
        sys.executable,
        "-m",
        "sqsqlite.server",
        "--db",
        db_path,
        "--port",
        "0",
        "--workers",
        "2",
        "--queues",
        str(tmp_path / "queues.yaml"),
    ]
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in proc.stderr:  # type: ignore[union-attr]
            lines.append(line)
            if "sqsqlite serving" in line:
                break
        assert "queues from" in "".join(lines) and "created 3" in "".join(lines)
        url = re.search(r"at (http://\S+)", lines[-1]).group(1)  # type: ignore[union-attr]
        wait_until_ready(url, timeout=10, process=proc)
        assert sorted(u.rsplit("/", 1)[1] for u in sqsqlite.connect(db_path).list_queues()[0]) == ["events.fifo", "orders", "orders-dlq"]
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0  # a stop while a worker still starts is clean too


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_sigterm_while_serve_is_still_starting_stops_it_cleanly(tmp_path, workers):
    import socket
    import subprocess
    import sys
    import time
    import urllib.error
    import urllib.request

    (tmp_path / "queues.yaml").write_text("queues:\n" + "".join(f"  - name: q{i}\n" for i in range(3000)))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = [sys.executable, "-m", "sqsqlite.server", "--db", str(tmp_path / "s.db"), "--port", str(port), "--workers", workers]
    proc = subprocess.Popen([*args, "--queues", str(tmp_path / "queues.yaml")], stderr=subprocess.PIPE, text=True)
    try:
        deadline, starting = time.monotonic() + 30, False
        while not starting and time.monotonic() < deadline:  # bounded: until /health says starting
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).close()
                break  # served already: too late to test the start
            except urllib.error.HTTPError as answered:
                starting = answered.code == 503
            except OSError:
                time.sleep(0.01)
        if not starting:
            pytest.skip("the queues file was applied before a probe got in")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and err.strip().endswith("sqsqlite stopped")  # it was killed by SIGTERM: -15


def test_without_pyhocon_an_elasticmq_file_says_which_extra_to_install(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "pyhocon", None)  # as if it were not installed
    (tmp_path / "elasticmq.conf").write_text(ELASTICMQ)
    with pytest.raises(QueuesFileError, match=r"pip install 'sqsqlite\[elasticmq\]'"):
        read_queues_file(tmp_path / "elasticmq.conf")
