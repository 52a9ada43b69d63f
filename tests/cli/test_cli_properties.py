"""Hostile input, as properties over the CLI: whatever a shell user types, a bad value ends the
command with exit 254 and one line on stderr naming the SQS error (or, for what click itself
refuses, exit 252 and click's usage message), never a traceback, and every row of every table
stays as it was.

The strategies and the world of queues are tests/unit/test_properties.py's (the same hostile values
the library API gets); here they travel as argv, the way a shell would pass them.
"""

from __future__ import annotations

import base64
import json
import re

import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sqsqlite import defaults as D
from sqsqlite.cli import calls
from sqsqlite.cli.main import EXIT_SERVICE, EXIT_USAGE, cli
from sqsqlite.errors import code_from_wire
from tests.cli.test_cli_admin import ClockedSettings
from tests.reliability.snapshots import snapshot
from tests.unit.test_properties import (
    B64,
    BAD_ATTRIBUTE_NAME,
    BAD_ATTRIBUTE_VALUE,
    BAD_ENTRY,
    BAD_ENTRY_ID,
    BAD_TEXT,
    ENTRY_ID,
    NOT_INT,
    SETTINGS,
    SQLISH,
    VALID_NAME,
    World,
    out_of,
)

# Each example is a CLI invocation or two plus two snapshots of the file: fewer than the library's 25.
CLI_SETTINGS = settings(SETTINGS, max_examples=20)

ERROR_LINE = re.compile(r"An error occurred \((?P<wire>[^)]+)\) when calling the (?P<operation>\w+) operation: (?P<message>.+)")

# What click's int type refuses: no integer at all. (Python's int() accepts " 7" and "1_0",
# so those are not in here: they are integers, and the range check after them is SQS's.)
NOT_AN_INTEGER = st.one_of(
    st.floats().map(repr),
    st.sampled_from(["", "ten", "1.5", "0x10", "1e3", "True", "[1]", '{"v": 1}', "NaN", "--", "½"]),
)


def as_json(value) -> str:
    """JSON as a shell user would type it; bytes go as base64, as the aws CLI takes blobs."""
    return json.dumps(value, default=lambda v: base64.b64encode(v).decode() if isinstance(v, bytes) else repr(v))


class CliWorld:
    """tests/unit/test_properties.py's World (queues in every state, on a ManualClock), driven
    through ``sqsqlite`` commands that run on the same clock."""

    def __init__(self, world: World):
        self.w = world
        self.runner = CliRunner()

    def __getattr__(self, name):
        return getattr(self.w, name)

    def invoke(self, *args: str):
        settings = ClockedSettings()
        settings.clock = self.w.clock
        result = self.runner.invoke(cli, ["--db", self.w.path, "--output", "json", *args], obj=settings)
        assert "Traceback" not in result.output
        assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
        return result

    def ok(self, *args: str) -> dict:
        result = self.invoke(*args)
        assert result.exit_code == 0, (result.exit_code, result.stderr)
        return json.loads(result.stdout) if result.stdout.strip() else {}

    def rejects(self, operation: str, codes: tuple[str, ...], *args: str) -> str:
        """The command fails with one of ``codes`` (sqsqlite's names), in one stderr line, and
        the file is unchanged. Returns the error message."""
        before = snapshot(self.w.path)
        result = self.invoke(*args)
        assert result.exit_code == EXIT_SERVICE, (result.exit_code, result.stdout, result.stderr)
        assert result.stdout == ""
        lines = result.stderr.splitlines()
        assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("hint: ")), result.stderr
        m = ERROR_LINE.fullmatch(lines[0])
        assert m, lines[0]
        assert code_from_wire(m["wire"]) in codes, lines[0]
        assert m["operation"] == operation
        assert snapshot(self.w.path) == before
        return m["message"]

    def invalid(self, operation: str, request: dict, *args: str) -> None:
        """The request fails the aws CLI's parameter check (botocore's, at every depth) before
        any SQS call: exit 252, botocore's words, and the file is unchanged."""
        problems = calls.request_problems(operation, request)
        assert problems, request
        before = snapshot(self.w.path)
        result = self.invoke(*args)
        assert result.exit_code == EXIT_USAGE, (result.exit_code, result.stdout, result.stderr)
        assert result.stdout == "" and result.stderr.splitlines() == ["Parameter validation failed:", *problems]
        assert snapshot(self.w.path) == before

    def misused(self, flag: str, *args: str) -> None:
        """Click refuses the arguments before any SQS call: exit 252, one line starting
        ``sqsqlite: `` naming the flag, and the file is unchanged."""
        before = snapshot(self.w.path)
        result = self.invoke(*args)
        assert result.exit_code == EXIT_USAGE, (result.exit_code, result.stdout, result.stderr)
        assert result.stdout == ""
        errors = [line for line in result.stderr.splitlines() if line.startswith("sqsqlite: ")]
        assert len(errors) == 1 and flag in errors[0], result.stderr
        assert snapshot(self.w.path) == before


@pytest.fixture(scope="module")
def cw(tmp_path_factory):
    world = World(str(tmp_path_factory.mktemp("cliprops") / "props.db"))
    yield CliWorld(world)
    world.db.close()


# ------------------------------------------------------------------ queue names and URLs


@CLI_SETTINGS
@given(name=st.one_of(st.text(max_size=100), SQLISH, st.text(min_size=81, max_size=90, alphabet="ab")))
def test_an_invalid_queue_name_is_refused_by_create_queue_and_get_queue_url(cw, name):
    assume(not (VALID_NAME.fullmatch(name) or (name.endswith(".fifo") and VALID_NAME.fullmatch(name[:-5]) and len(name) <= 80)))
    # --flag=value: a name that starts with "-" is still the flag's value, as in a shell.
    cw.rejects("CreateQueue", ("InvalidParameterValue", "MissingParameter"), "create-queue", f"--queue-name={name}")
    cw.rejects("GetQueueUrl", ("InvalidParameterValue", "MissingParameter"), "get-queue-url", f"--queue-name={name}")


@CLI_SETTINGS
@given(url=st.one_of(SQLISH, st.text(min_size=1, max_size=40), st.builds(lambda s: "http://localhost:9324/000000000000/" + s, SQLISH)))
def test_a_queue_url_that_names_no_queue_is_refused_and_sends_nothing(cw, url):
    assume(url.rsplit("/", 1)[-1] not in ("std", "small", "dlq", "f.fifo", "mixed"))
    cw.rejects(
        "SendMessage",
        ("QueueDoesNotExist", "InvalidParameterValue", "MissingParameter"),
        "send-message",
        f"--queue-url={url}",
        "--message-body=b",
    )
    cw.rejects("PurgeQueue", ("QueueDoesNotExist", "InvalidParameterValue", "MissingParameter"), "purge-queue", f"--queue-url={url}")


@CLI_SETTINGS
@given(prefix=SQLISH)
def test_a_list_queues_prefix_that_looks_like_sql_or_a_wildcard_matches_literally(cw, prefix):
    assume(len(prefix) <= 80)
    urls = cw.ok("list-queues", f"--queue-name-prefix={prefix}").get("QueueUrls", [])
    assert all(u.rsplit("/", 1)[1].startswith(prefix) for u in urls)


# ------------------------------------------------------------------ bodies


@CLI_SETTINGS
@given(body=BAD_TEXT)
def test_a_body_with_a_forbidden_character_is_refused_naming_the_code_point(cw, body):
    bad = next(c for c in body if not (c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" or c >= "\U00010000"))
    message = cw.rejects("SendMessage", ("InvalidMessageContents",), "send-message", "--queue-url=std", f"--message-body={body}")
    assert f"Invalid binary character '#x{ord(bad):X}' was found in the message body" in message  # SQS's words


@CLI_SETTINGS
@given(extra=st.integers(1, 8), char=st.sampled_from(["a", "é", "€", "😀"]), from_file=st.booleans())
def test_a_body_over_maximum_message_size_is_refused_naming_the_limit_from_argv_or_a_file(cw, tmp_path_factory, extra, char, from_file):
    size = len(char.encode())
    body = char * ((1024 + extra + size - 1) // size)
    assert len(body.encode()) > 1024
    if from_file:
        path = tmp_path_factory.mktemp("body") / "body.txt"
        path.write_text(body, encoding="utf-8")
        body = f"file://{path}"
    message = cw.rejects("SendMessage", ("InvalidParameterValue",), "send-message", "--queue-url=small", f"--message-body={body}")
    assert "1024" in message


def test_a_body_of_exactly_the_limit_is_accepted_and_comes_back_byte_for_byte(tmp_path):
    path = str(tmp_path / "edge.db")
    runner = CliRunner()

    def run(*args: str):
        r = runner.invoke(cli, ["--db", path, *args])
        assert r.exit_code == 0, r.stderr
        return json.loads(r.stdout) if r.stdout.strip() else {}

    run("create-queue", "--queue-name", "small", "--attributes", "MaximumMessageSize=1024")
    (tmp_path / "body.txt").write_text("é" * 512, encoding="utf-8")
    run("send-message", "--queue-url", "small", "--message-body", f"file://{tmp_path / 'body.txt'}")
    [m] = run("receive-message", "--queue-url", "small")["Messages"]
    assert m["Body"] == "é" * 512


def test_a_missing_or_empty_body_is_refused(cw):
    cw.misused("--message-body", "send-message", "--queue-url=std")
    cw.rejects("SendMessage", ("InvalidParameterValue", "MissingParameter"), "send-message", "--queue-url=std", "--message-body=")


# ------------------------------------------------------------------ message attributes


@CLI_SETTINGS
@given(name=BAD_ATTRIBUTE_NAME)
def test_an_invalid_message_attribute_name_is_refused(cw, name):
    attrs = as_json({name: {"DataType": "String", "StringValue": "v"}})
    cw.rejects(
        "SendMessage", ("InvalidParameterValue",), "send-message", "--queue-url=std", "--message-body=b", f"--message-attributes={attrs}"
    )


@CLI_SETTINGS
@given(value=BAD_ATTRIBUTE_VALUE)
def test_an_invalid_message_attribute_type_or_value_is_refused(cw, value):
    args = ("send-message", "--queue-url=std", "--message-body=b", f"--message-attributes={as_json({'attr': value})}")
    if isinstance(value, dict):
        cw.rejects("SendMessage", ("InvalidParameterValue",), *args)
    else:  # not even the {DataType=...} shape: botocore's check refuses it, as the aws CLI's does
        cw.invalid("SendMessage", {"QueueUrl": "std", "MessageBody": "b", "MessageAttributes": {"attr": value}}, *args)


@CLI_SETTINGS
@given(n=st.integers(D.MAX_MESSAGE_ATTRIBUTES + 1, 30))
def test_more_than_ten_message_attributes_are_refused_naming_the_count(cw, n):
    attrs = as_json({f"a{i}": {"DataType": "String", "StringValue": "v"} for i in range(n)})
    message = cw.rejects(
        "SendMessage", ("InvalidParameterValue",), "send-message", "--queue-url=std", "--message-body=b", f"--message-attributes={attrs}"
    )
    assert str(n) in message and "10" in message


# ------------------------------------------------------------------ numbers outside every range

# (operation, the command's other arguments, flag, allowed range)
NUMBER_FLAGS = {
    "send delay": ("SendMessage", ["send-message", "--queue-url=std", "--message-body=b"], "--delay-seconds", 0, D.MAX_DELAY_SECONDS),
    "receive count": ("ReceiveMessage", ["receive-message", "--queue-url=std"], "--max-number-of-messages", 1, D.MAX_MESSAGES_PER_RECEIVE),
    "receive visibility": ("ReceiveMessage", ["receive-message", "--queue-url=std"], "--visibility-timeout", 0, D.MAX_VISIBILITY_TIMEOUT),
    "receive wait": ("ReceiveMessage", ["receive-message", "--queue-url=std"], "--wait-time-seconds", 0, D.MAX_WAIT_TIME_SECONDS),
    "list-queues page": ("ListQueues", ["list-queues"], "--max-results", 1, D.MAX_LIST_QUEUES_RESULTS),
    "dead-letter sources page": (
        "ListDeadLetterSourceQueues",
        ["list-dead-letter-source-queues", "--queue-url=dlq"],
        "--max-results",
        1,
        1000,
    ),
    "move task rate": (
        "StartMessageMoveTask",
        ["start-message-move-task", "--source-arn=arn:aws:sqs:us-east-1:000000000000:dlq"],
        "--max-number-of-messages-per-second",
        1,
        D.MAX_MOVE_TASK_RATE,
    ),
    "move task list": (
        "ListMessageMoveTasks",
        ["list-message-move-tasks", "--source-arn=arn:aws:sqs:us-east-1:000000000000:dlq"],
        "--max-results",
        1,
        10,
    ),
}


@CLI_SETTINGS
@given(which=st.sampled_from(sorted(NUMBER_FLAGS)), data=st.data())
def test_a_number_outside_its_range_is_refused_naming_the_value_and_the_range(cw, which, data):
    operation, args, flag, low, high = NUMBER_FLAGS[which]
    value = data.draw(out_of(low, high), label="value")
    message = cw.rejects(operation, ("InvalidParameterValue",), *args, f"{flag}={value}")
    assert str(low) in message and str(high) in message
    if len(str(value)) <= 50:
        assert str(value) in message


@CLI_SETTINGS
@given(which=st.sampled_from(sorted(NUMBER_FLAGS) + ["change visibility"]), value=NOT_AN_INTEGER)
def test_an_sqs_number_flag_given_something_int_refuses_stops_the_command_in_pythons_words_as_the_aws_cli_does(cw, which, value):
    if which == "change visibility":
        args, flag = ["change-message-visibility", "--queue-url=std", f"--receipt-handle={cw.handle}"], "--visibility-timeout"
    else:
        _, args, flag, _, _ = NUMBER_FLAGS[which]
    before = snapshot(cw.w.path)
    result = cw.invoke(*args, f"{flag}={value}")
    assert (result.exit_code, result.stdout) == (255, ""), (result.exit_code, result.stdout, result.stderr)
    with pytest.raises(ValueError) as refused:
        int(value)
    assert result.stderr == f"sqsqlite: {refused.value} ({flag} takes an integer)\n"
    assert snapshot(cw.w.path) == before


@CLI_SETTINGS
@given(value=NOT_AN_INTEGER)
def test_an_administration_number_flag_given_something_that_is_not_an_integer_is_a_usage_error(cw, value):
    cw.misused("--limit", "peek", "--queue-url=std", f"--limit={value}")


@CLI_SETTINGS
@given(value=out_of(0, D.MAX_VISIBILITY_TIMEOUT), batch=st.booleans())
def test_a_visibility_change_outside_0_to_43200_is_refused_and_the_lease_is_unchanged(cw, value, batch):
    if batch:
        entries = as_json([{"Id": "x", "ReceiptHandle": cw.handle, "VisibilityTimeout": value}])
        before = snapshot(cw.path)
        out = cw.ok("change-message-visibility-batch", "--queue-url=std", f"--entries={entries}")
        assert [f["Code"] for f in out["Failed"]] == ["InvalidParameterValue"] and not out.get("Successful")
        assert snapshot(cw.path) == before
    message = cw.rejects(
        "ChangeMessageVisibility",
        ("InvalidParameterValue",),
        "change-message-visibility",
        "--queue-url=std",
        f"--receipt-handle={cw.handle}",
        f"--visibility-timeout={value}",
    )
    assert "43200" in message


def test_peek_with_a_limit_outside_its_range_is_bad_usage(cw):
    # peek is no SQS call: its range is the command line's to check, above as below (252).
    cw.misused("--limit", "peek", "--queue-url=std", "--limit=1000001")
    cw.misused("--limit", "peek", "--queue-url=std", "--limit=99999999999999999999999")
    cw.misused("--limit", "peek", "--queue-url=std", "--limit=0")
    cw.misused("--state", "peek", "--queue-url=std", "--state=' OR 1=1 --")


# ------------------------------------------------------------------ queue attributes


@CLI_SETTINGS
@given(attribute=st.sampled_from(sorted(D.INT_ATTRIBUTES)), data=st.data(), create=st.booleans())
def test_a_queue_attribute_outside_its_range_is_refused_in_sqs_words(cw, attribute, data, create):
    r = D.INT_ATTRIBUTES[attribute]
    value = data.draw(st.one_of(out_of(r.low, r.high), out_of(r.low, r.high).map(str), NOT_INT), label="value")
    attrs = as_json({attribute: value})
    if not isinstance(json.loads(attrs)[attribute], str):  # the model types every attribute's value as a string
        request = {"QueueName": "never-created"} if create else {"QueueUrl": "std"}
        request["Attributes"] = json.loads(attrs)
        command = ("create-queue", "--queue-name=never-created") if create else ("set-queue-attributes", "--queue-url=std")
        cw.invalid("CreateQueue" if create else "SetQueueAttributes", request, *command, f"--attributes={attrs}")
        return
    if create:
        message = cw.rejects(
            "CreateQueue", ("InvalidAttributeValue",), "create-queue", "--queue-name=never-created", f"--attributes={attrs}"
        )
    else:
        message = cw.rejects(
            "SetQueueAttributes", ("InvalidAttributeValue",), "set-queue-attributes", "--queue-url=std", f"--attributes={attrs}"
        )
    assert f"Invalid value for the parameter {attribute}." in message


@CLI_SETTINGS
@given(count=st.one_of(out_of(1, D.MAX_RECEIVE_COUNT), NOT_INT))
def test_a_redrive_policy_with_max_receive_count_outside_1_to_1000_is_refused(cw, count):
    policy = json.loads(as_json({"deadLetterTargetArn": cw.dlq.arn, "maxReceiveCount": count}))
    attrs = as_json({"RedrivePolicy": json.dumps(policy)})
    cw.rejects("SetQueueAttributes", ("InvalidParameterValue",), "set-queue-attributes", "--queue-url=std", f"--attributes={attrs}")


@CLI_SETTINGS
@given(name=st.one_of(st.text(max_size=30), SQLISH, st.sampled_from(["ApproximateNumberOfMessages", "QueueArn", "FifoQueue"])))
def test_an_unknown_or_read_only_queue_attribute_is_refused_by_set_and_unknown_ones_by_get(cw, name):
    assume(name not in D.SETTABLE_ATTRIBUTES or name == "FifoQueue")
    value = "true" if name == "FifoQueue" else "1"  # a valid value: the name is what is wrong
    cw.rejects(
        "SetQueueAttributes", ("InvalidAttributeName",), "set-queue-attributes", "--queue-url=std", f"--attributes={as_json({name: value})}"
    )
    if name not in D.ALL_ATTRIBUTES and name != "All":
        # As a JSON list, so that a name beginning with "[" is a name.
        cw.rejects(
            "GetQueueAttributes",
            ("InvalidAttributeName",),
            "get-queue-attributes",
            "--queue-url=std",
            f"--attribute-names={as_json([name])}",
        )


# ------------------------------------------------------------------ batches

BATCH_COMMANDS = {
    "send": ("SendMessageBatch", "send-message-batch"),
    "delete": ("DeleteMessageBatch", "delete-message-batch"),
    "change": ("ChangeMessageVisibilityBatch", "change-message-visibility-batch"),
}


# BAD_ENTRY_ID draws from SQLISH, whose "_" is a valid entry id (a whole valid delete batch
# would delete the world's held message): only ids that really are invalid.
NOT_AN_ENTRY_ID = BAD_ENTRY_ID.filter(lambda i: not (isinstance(i, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,80}", i)))


@CLI_SETTINGS
@given(kind=st.sampled_from(sorted(BATCH_COMMANDS)), shape=st.sampled_from(["empty", "too many", "duplicate", "bad id"]), data=st.data())
def test_a_malformed_batch_is_refused_as_a_whole(cw, kind, shape, data):
    def entry(i):
        return {
            "send": {"Id": i, "MessageBody": "b"},
            "delete": {"Id": i, "ReceiptHandle": cw.handle},
            "change": {"Id": i, "ReceiptHandle": cw.handle, "VisibilityTimeout": 5},
        }[kind]

    if shape == "empty":
        entries, code = [], "EmptyBatchRequest"
    elif shape == "too many":
        n = data.draw(st.integers(D.MAX_BATCH_ENTRIES + 1, 25), label="n")
        entries, code = [entry(f"e{i}") for i in range(n)], "TooManyEntriesInBatchRequest"
    elif shape == "duplicate":
        i = data.draw(ENTRY_ID, label="id")
        entries, code = [entry(i), entry("other"), entry(i)], "BatchEntryIdsNotDistinct"
    else:
        entries, code = [entry("ok"), entry(data.draw(NOT_AN_ENTRY_ID, label="id"))], "InvalidBatchEntryId"
    operation, command = BATCH_COMMANDS[kind]
    args = (command, "--queue-url=std", f"--entries={as_json(entries)}")
    request = {"QueueUrl": "std", "Entries": json.loads(as_json(entries))}
    if calls.request_problems(operation, request):  # an Id of another type than text: the model's check
        cw.invalid(operation, request, *args)
        return
    cw.rejects(operation, (code,), *args)


@settings(CLI_SETTINGS, max_examples=3)
@given(sizes=st.lists(st.integers(200_000, 400_000), min_size=3, max_size=4).filter(lambda s: sum(s) > D.MAX_BATCH_PAYLOAD))
def test_a_batch_over_one_mebibyte_in_total_is_refused(cw, sizes):
    entries = [{"Id": f"e{i}", "MessageBody": "x" * n} for i, n in enumerate(sizes)]
    message = cw.rejects(
        "SendMessageBatch", ("BatchRequestTooLong",), "send-message-batch", "--queue-url=std", f"--entries={as_json(entries)}"
    )
    assert str(D.MAX_BATCH_PAYLOAD) in message


@CLI_SETTINGS
@given(bad=st.lists(BAD_ENTRY, min_size=1, max_size=5), good=st.integers(0, 5), data=st.data())
def test_bad_batch_entries_fail_alone_and_only_the_good_ones_are_stored(cw, bad, good, data):
    entries = [dict(e, Id=f"bad{i}") for i, (e, _) in enumerate(bad)]
    entries += [{"Id": f"good{i}", "MessageBody": f"good {i}"} for i in range(good)]
    entries = data.draw(st.permutations(entries), label="entries")
    before = snapshot(cw.path)

    args = ("send-message-batch", "--queue-url=mixed", f"--entries={as_json(entries)}")
    request = {"QueueUrl": "mixed", "Entries": json.loads(as_json(entries))}
    if calls.request_problems("SendMessageBatch", request):
        # A member of a type the model doesn't give it (an attribute that is no structure):
        # the aws CLI refuses the whole command before sending, and so does this one.
        cw.invalid("SendMessageBatch", request, *args)
        return
    if any(_undecodable_binary(e) for e in entries):
        # Base64 that doesn't decode is a malformed request, not a bad entry: the aws CLI refuses
        # the whole command too (and SQS the whole JSON request). Nothing is stored.
        cw.rejects("SendMessageBatch", ("InvalidParameterValue",), *args)
        return
    out = cw.ok(*args)

    assert {f["Id"]: f["Code"] for f in out.get("Failed", [])} == {f"bad{i}": code for i, (_, code) in enumerate(bad)}
    assert sorted(s["Id"] for s in out.get("Successful", [])) == sorted(f"good{i}" for i in range(good))
    after = snapshot(cw.path)
    added = sorted(set(after["messages"]) - set(before["messages"]))
    assert sorted(row[3] for row in added) == sorted(f"good {i}" for i in range(good))  # body column
    assert len(after["messages"]) == len(before["messages"]) + good
    assert _besides_messages(after) == _besides_messages(before)


def _undecodable_binary(entry: dict) -> bool:
    for value in (entry.get("MessageAttributes") or {}).values():
        if isinstance(value, dict) and isinstance(value.get("BinaryValue"), str):
            try:
                base64.b64decode(value["BinaryValue"], validate=True)
            except ValueError:
                return True
    return False


# ------------------------------------------------------------------ receipt handles


def _handle_refused(cw, handle: str, queue: str = "std") -> None:
    cw.rejects("DeleteMessage", ("ReceiptHandleIsInvalid",), "delete-message", f"--queue-url={queue}", f"--receipt-handle={handle}")
    cw.rejects(
        "ChangeMessageVisibility",
        ("ReceiptHandleIsInvalid",),
        "change-message-visibility",
        f"--queue-url={queue}",
        f"--receipt-handle={handle}",
        "--visibility-timeout=0",
    )


@CLI_SETTINGS
@given(handle=st.one_of(st.text(max_size=200), st.text(alphabet=B64, min_size=80, max_size=95), SQLISH, st.integers().map(str)))
def test_a_forged_receipt_handle_is_refused_and_touches_nothing(cw, handle):
    assume(handle != "")
    assume(not handle.startswith(("file://", "fileb://")))  # a paramfile to load, as the aws CLI reads it
    _handle_refused(cw, handle)


@CLI_SETTINGS
@given(handle=st.one_of(st.text(min_size=1, max_size=100), SQLISH), which=st.sampled_from(["delete", "change"]))
def test_a_forged_receipt_handle_fails_its_batch_entry_alone(cw, handle, which):
    operation, command = BATCH_COMMANDS[which]
    entries = [{"Id": "forged", "ReceiptHandle": handle}]
    if which == "change":
        entries[0]["VisibilityTimeout"] = 0
    before = snapshot(cw.path)
    out = cw.ok(command, "--queue-url=std", f"--entries={as_json(entries)}")
    assert [(f["Id"], f["Code"]) for f in out["Failed"]] == [("forged", "ReceiptHandleIsInvalid")] and not out.get("Successful")
    assert snapshot(cw.path) == before


@CLI_SETTINGS
@given(cut=st.integers(1, 200), which=st.integers(0, 2))
def test_a_truncated_or_extended_receipt_handle_is_refused(cw, cut, which):
    handle = cw.held[which].receipt_handle
    assume(cut < len(handle))
    _handle_refused(cw, handle[:cut])
    _handle_refused(cw, handle + handle[:cut])


@CLI_SETTINGS
@given(data=st.data())
def test_a_receipt_handle_with_any_one_character_changed_inserted_or_removed_is_refused(cw, data):
    handle = cw.handle
    i = data.draw(st.integers(0, len(handle) - 1), label="position")
    edit = data.draw(st.sampled_from(["replace", "insert", "delete"]), label="edit")
    c = data.draw(st.one_of(st.sampled_from(B64 + "=+/. \n!"), st.characters()), label="char")
    if edit == "replace":
        assume(c != handle[i])
        tampered = handle[:i] + c + handle[i + 1 :]
    elif edit == "insert":
        tampered = handle[:i] + c + handle[i:]
    else:
        tampered = handle[:i] + handle[i + 1 :]
    _handle_refused(cw, tampered)


@CLI_SETTINGS
@given(target=st.sampled_from(["small", "dlq", "f.fifo", "mixed"]), which=st.integers(0, 2))
def test_a_receipt_handle_from_another_queue_is_refused_there(cw, target, which):
    _handle_refused(cw, cw.held[which].receipt_handle, queue=target)
    _handle_refused(cw, cw.held_small[0].receipt_handle, queue="std")


def test_a_missing_receipt_handle_is_refused_as_missing(cw):
    cw.rejects("DeleteMessage", ("MissingParameter",), "delete-message", "--queue-url=std", "--receipt-handle=")
    cw.misused("--receipt-handle", "delete-message", "--queue-url=std")


# ------------------------------------------------------------------ other strings that look like SQL


@CLI_SETTINGS
@given(text=SQLISH)
def test_identifiers_that_look_like_sql_are_refused_as_values(cw, text):
    assume(text.strip())
    cw.rejects(
        "CancelMessageMoveTask", ("ResourceNotFoundException", "InvalidParameterValue"), "cancel-message-move-task", f"--task-handle={text}"
    )
    cw.rejects(
        "ListMessageMoveTasks",
        ("InvalidParameterValue", "QueueDoesNotExist", "ResourceNotFoundException"),
        "list-message-move-tasks",
        f"--source-arn={text}",
    )
    cw.rejects(
        "ReceiveMessage",
        ("InvalidParameterValue",),
        "receive-message",
        "--queue-url=f.fifo",
        f"--receive-request-attempt-id={text}\x00",
    )
    cw.rejects(
        "SendMessage",
        ("InvalidParameterValue",),
        "send-message",
        "--queue-url=f.fifo",
        "--message-body=b",
        f"--message-group-id={text}\x00",
    )


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_an_error_quoting_a_value_with_a_line_break_stays_on_one_line(cw, brk):
    # The engine quotes unknown attribute names as given; the CLI keeps the promise of one line.
    message = cw.rejects(
        "GetQueueAttributes",
        ("InvalidAttributeName",),
        "get-queue-attributes",
        "--queue-url=std",
        f"--attribute-names={as_json(['a' + brk + 'b'])}",
    )
    assert "a" + brk.encode("unicode_escape").decode() + "b" in message


def _besides_messages(snap: dict) -> dict:
    """Every table but messages, the history that counts them (the World's is on), and
    message_positions (the highest message id a deletion took from the top, which a deletion of
    the newest advances)."""
    rest = {k: v for k, v in snap.items() if k not in ("messages", "queue_history", "message_positions")}
    return rest
