"""Fidelity to Amazon SQS: recorded AWS answers replayed against ``sqsqlite serve``.

tests/server/fidelity_aws.json holds real AWS responses (error codes, texts, HTTP statuses,
attribute sets and message shapes) recorded over both wire protocols; fidelity_cases.py and
fidelity_cases_more.py make the same requests here with boto3 (JSON 1.0) and a query-protocol
botocore client. Every case must match, except the deliberate differences listed in DELIBERATE
(each documented in docs/reference/compatibility.md). ``python -m tests.server.test_fidelity`` prints the share matched.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from sqsqlite.clock import ManualClock
from sqsqlite.server import BackgroundServer

from . import fidelity_cases_more  # noqa: F401  (registers its drivers in DRIVERS)
from .fidelity_cases import DRIVERS, Ctx, differences

RECORDINGS: dict[str, dict] = json.loads((Path(__file__).parent / "fidelity_aws.json").read_text())

# Cases where sqsqlite answers differently on purpose (docs/reference/compatibility.md says why).
_EXPIRED = (
    "ChangeMessageVisibility on a message whose visibility timeout has ended is MessageNotInflight: "
    "nothing is in flight to change (SQS answers 200 and changes nothing visible)"
)
_CANCEL_AT_ONCE = "a cancelled move task stops at once; SQS's went on moving for a while (8 of 10 moved when it showed CANCELLED)"
DELIBERATE: dict[str, str] = {
    "test_move_task_cancel/list-after": _CANCEL_AT_ONCE,
    "test_change_message_visibility_after_visibility_timeout_expiration[sqs]/visibility_timeout_expired": _EXPIRED,
    "test_change_message_visibility_after_visibility_timeout_expiration[sqs_query]/visibility_timeout_expired": _EXPIRED,
}


def _driver_and_protocol(recording: str) -> tuple[str, str]:
    base, _, param = recording.partition("[")
    param = param.rstrip("]")
    protocol = "query" if param.startswith("sqs_query") else "json"
    rest = param.partition("-")[2] if param.startswith("sqs") and "-" in param else None
    if rest is not None and f"{base}[{rest}]" in DRIVERS:
        return f"{base}[{rest}]", protocol
    if f"{base}[{param}]" in DRIVERS:
        return f"{base}[{param}]", protocol
    return base, protocol


CASES = [f"{recording}/{key}" for recording, content in RECORDINGS.items() for key in content]


class HarnessClock(ManualClock):
    """Manual time, except that a wait of half a second or more (a move task's rate) also takes
    a moment of real time, so a task started at 1 message a second is still running when the
    next request arrives, as it would be on AWS."""

    def __init__(self) -> None:
        super().__init__()
        self._moves: threading.Semaphore | None = None

    def hold_moves(self) -> None:
        """From now on a move task's wait between steps lasts until ``allow_moves`` lets it go,
        so that a driver sees the task after exactly the steps it allowed."""
        self._moves = threading.Semaphore(0)

    def allow_moves(self, steps: int = 1) -> None:
        assert self._moves is not None
        self._moves.release(steps)

    def free_moves(self) -> None:
        gate, self._moves = self._moves, None
        if gate is not None:
            gate.release(1000)

    def sleep(self, seconds: float) -> None:
        gate = self._moves
        if seconds >= 0.5:
            if gate is not None and threading.current_thread().name == "sqsqlite-move":
                gate.acquire(timeout=30)
            else:
                time.sleep(0.05)
        super().sleep(seconds)


class Harness:
    def __init__(self, path: str):
        self.clock = HarnessClock()
        self.server = BackgroundServer(path, clock=self.clock)
        self.answers: dict[str, dict] = {}

    def answer(self, recording: str) -> dict:
        if recording not in self.answers:
            name, protocol = _driver_and_protocol(recording)
            self.answers[recording] = DRIVERS[name](Ctx(self.server.url, protocol, self.clock))
        return self.answers[recording]

    def differences(self, case: str) -> list[str]:
        recording, _, key = case.partition("/")
        got = self.answer(recording)
        if key not in got:
            return [f"no answer for {key!r}"]
        return differences(RECORDINGS[recording][key], got[key])

    def close(self) -> None:
        self.server.stop()


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    h = Harness(str(tmp_path_factory.mktemp("fidelity") / "fidelity.db"))
    yield h
    h.close()


@pytest.mark.parametrize("case", CASES)
def test_each_recorded_case_is_answered_as_aws_answers_it(harness, case):
    diffs = harness.differences(case)
    if case in DELIBERATE:
        assert diffs, f"{case} now matches AWS: take it off DELIBERATE"
        return
    assert not diffs, "\n".join(diffs)


def test_every_recording_has_a_driver():
    assert all(_driver_and_protocol(r)[0] in DRIVERS for r in RECORDINGS)


def test_at_least_95_percent_of_the_recorded_cases_match():
    assert (len(CASES) - len(DELIBERATE)) / len(CASES) >= 0.95


def measure(path: str) -> tuple[int, int, dict[str, list[str]]]:
    h = Harness(path)
    failed = {}
    try:
        for case in CASES:
            try:
                diffs = h.differences(case)
            except Exception as exc:  # a driver that cannot even run counts as a difference
                diffs = [f"driver failed: {exc!r}"]
            if diffs:
                failed[case] = diffs
    finally:
        h.close()
    return len(CASES) - len(failed), len(CASES), failed


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        matched, total, failed = measure(str(Path(tmp) / "fidelity.db"))
    for case, diffs in failed.items():
        print(case)
        for d in diffs[:6]:
            print("   ", d[:300])
    print(f"matched {matched} of {total} recorded cases ({100 * matched / total:.1f}%)", file=sys.stderr)


def test_a_path_style_queue_url_with_a_region_addresses_the_queue_over_the_query_protocol(harness):
    import urllib.parse
    import urllib.request

    sqs = harness_client(harness)
    sqs.create_queue(QueueName="path-style")
    sqs.send_message(QueueUrl="path-style", MessageBody="hi")
    data = urllib.parse.urlencode({"Action": "ReceiveMessage", "VisibilityTimeout": "0"}).encode()
    for path in ("/queue/us-east-1/000000000000/path-style", "/us-east-1/000000000000/path-style"):
        req = urllib.request.Request(f"{harness.server.url}{path}", data=data, method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            assert "<Body>hi</Body>" in resp.read().decode()


def test_an_unknown_query_action_is_invalid_action_in_sqs_words(harness):
    import urllib.error
    import urllib.parse
    import urllib.request

    data = urllib.parse.urlencode({"Action": "Explode"}).encode()
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(urllib.request.Request(harness.server.url, data=data, method="POST"), timeout=30)
    body = err.value.read().decode()
    assert err.value.code == 400
    assert "<Code>InvalidAction</Code><Message>The action Explode is not valid for this endpoint.</Message>" in body


def test_a_trace_header_given_as_a_system_attribute_wins_over_the_x_ray_header(harness):
    sqs = harness_client(harness)
    url = sqs.create_queue(QueueName="traced")["QueueUrl"]

    def add_header(request, **_):
        request.headers["X-Amzn-Trace-Id"] = "Root=from-header"

    sqs.meta.events.register("before-send.sqs.SendMessage", add_header)
    sqs.send_message(
        QueueUrl=url, MessageBody="a", MessageSystemAttributes={"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=given"}}
    )
    sqs.send_message(QueueUrl=url, MessageBody="b")
    sqs.meta.events.unregister("before-send.sqs.SendMessage", add_header)
    sqs.send_message(QueueUrl=url, MessageBody="c")
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["AWSTraceHeader"])["Messages"]
    assert {m["Body"]: m.get("Attributes", {}).get("AWSTraceHeader") for m in got} == {
        "a": "Root=given",
        "b": "Root=from-header",
        "c": None,
    }


def harness_client(harness):
    from .server_helpers import boto3_client

    return boto3_client(harness.server.url)


def test_an_empty_receive_over_the_query_protocol_is_an_empty_result_element_as_sqs_writes_it(harness):
    import urllib.parse
    import urllib.request

    harness_client(harness).create_queue(QueueName="empty-xml")
    data = urllib.parse.urlencode({"Action": "ReceiveMessage", "QueueUrl": "empty-xml"}).encode()
    with urllib.request.urlopen(urllib.request.Request(harness.server.url, data=data, method="POST"), timeout=30) as resp:
        assert "<ReceiveMessageResult/>" in resp.read().decode()


def test_an_unknown_attribute_name_is_refused_in_sqs_words(harness):
    sqs = harness_client(harness)
    url = sqs.create_queue(QueueName="unknown-attr")["QueueUrl"]
    with pytest.raises(sqs.exceptions.InvalidAttributeName) as err:
        sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["Bogus"])
    assert err.value.response["Error"]["Message"] == "Unknown Attribute Bogus."
