"""SQS code written with the AWS SDK for JavaScript v3 runs unchanged against ``sqsqlite serve``.

tests/server/js/scenario.mjs is a Node.js service's use of @aws-sdk/client-sqs, signed with
SigV4 against a server that requires it; this checks what each of its steps saw. The SDK checks
every MD5OfMessageBody itself (send, batch send, receive) and throws on a mismatch, and raises
SQS's modeled errors as its own exception classes. ``make test`` installs the SDK into
tests/server/js/node_modules where Node.js and npm are present; elsewhere the test is skipped.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sqsqlite.server import BackgroundServer

HERE = Path(__file__).parent / "js"
ACCESS, SECRET = "AKIDJSEXAMPLE", "js-secret"

pytestmark = pytest.mark.slow

if shutil.which("node") is None or not (HERE / "node_modules" / "@aws-sdk" / "client-sqs").is_dir():
    pytest.skip(
        "needs Node.js and @aws-sdk/client-sqs in tests/server/js (make test installs it: npm install --prefix tests/server/js)",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def seen(tmp_path_factory) -> dict:
    with BackgroundServer(str(tmp_path_factory.mktemp("js") / "js.db"), access_key=ACCESS, secret_key=SECRET) as server:
        env = {**os.environ, "NODE_NO_WARNINGS": "1", "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}
        done = subprocess.run(
            ["node", str(HERE / "scenario.mjs"), server.url, ACCESS, SECRET], capture_output=True, text=True, timeout=120, env=env
        )
    assert done.returncode == 0, done.stderr
    return {"url": server.url, **json.loads(done.stdout)}


def test_queues_are_made_and_found_by_the_sdk(seen):
    assert seen["create"] == seen["get_url"] == f"{seen['url']}/000000000000/orders"


def test_sends_pass_the_sdks_own_md5_checks(seen):
    assert seen["send"] == ["MD5OfMessageAttributes", "MD5OfMessageBody", "MD5OfMessageSystemAttributes", "MessageId"]
    assert seen["send_batch"] == {"successful": ["a", "b"], "failed": None}


def test_a_receive_returns_bodies_attributes_and_binary_values_intact(seen):
    first, second, third = seen["receive"]
    assert first["body"] == "héllo ✓ order #1"
    assert first["attributes"] == ["blob", "count", "kind"]
    assert first["count"] == "42" and first["blob"] == [0, 1, 2, 255]
    assert "AWSTraceHeader" in first["system"]
    assert {"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp"} <= set(third["system"])
    assert (second["body"], second["attributes"], third["body"], third["attributes"]) == ("order #2", ["kind"], "order #3", [])
    assert {m["receive_count"] for m in seen["receive"]} == {"1"}


def test_visibility_changes_and_deletes_succeed_and_empty_the_queue(seen):
    assert seen["change_visibility"] == {"successful": 3, "failed": None}
    assert seen["delete"] == {"successful": 2, "failed": None}
    counts = seen["counts"]
    assert (counts["ApproximateNumberOfMessages"], counts["ApproximateNumberOfMessagesNotVisible"]) == ("0", "0")
    assert counts["VisibilityTimeout"] == "30"


def test_a_long_poll_is_answered_by_a_send_made_while_it_waits(seen):
    assert seen["long_poll"] == {"body": "wake up", "within_5s": True}


def test_tags_are_added_removed_and_listed(seen):
    assert seen["tags"] == {"env": "test"}


def test_dead_letters_move_and_a_move_task_starts(seen):
    dead = seen["dead_letters"]
    assert (dead["source_after"], dead["dead"], dead["task_handle"]) == (0, ["poison"], "string")
    assert dead["sources"] == [f"{seen['url']}/000000000000/payments"]
    assert dead["task_status"][0] in ("RUNNING", "COMPLETED")


def test_fifo_sends_are_ordered_and_deduplicated(seen):
    assert seen["fifo"] == {"sequence_number": "string", "retry_deduplicated": True, "bodies": ["e1", "e2", "e3"], "groups": ["g1"] * 3}


def test_the_sdks_paginator_pages_through_every_queue(seen):
    assert seen["paginate"] == ["events.fifo", "orders", "orders-dlq", "payments"]


@pytest.mark.parametrize(
    ("step", "name", "message", "status"),
    [
        ("no_such_queue", "QueueDoesNotExist", "The specified queue does not exist.", 400),
        ("bad_handle", "ReceiptHandleIsInvalid", 'The input receipt handle "not-a-handle" is not a valid receipt handle.', 404),
        ("empty_batch", "EmptyBatchRequest", "There should be at least one DeleteMessageBatchRequestEntry in the request.", 400),
        ("repeated_ids", "BatchEntryIdsNotDistinct", "Id x repeated.", 400),
    ],
)
def test_sqs_errors_reach_the_sdk_as_its_own_exception_classes(seen, step, name, message, status):
    assert seen[step] == {"error": name, "message": message, "fault": "client", "status": status, "modeled": True}


def test_errors_sqs_does_not_model_keep_their_code_and_text(seen):
    assert seen["too_long"]["error"] == "InvalidParameterValue"
    assert seen["too_long"]["message"] == "One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes."
    assert (seen["wrong_secret"]["error"], seen["wrong_secret"]["status"]) == ("SignatureDoesNotMatch", 403)


def test_a_purged_and_deleted_queue_is_gone_from_the_list(seen):
    assert seen["purge_and_delete"] == [f"{seen['url']}/000000000000/orders-dlq"]
