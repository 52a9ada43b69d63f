"""The aws sqs commands through click's CliRunner: flags, output shapes, global options, errors."""

from __future__ import annotations

import json
import os

import pytest
from click.testing import CliRunner

from sqsqlite.cli import main as cli_main
from sqsqlite.cli.main import cli
from sqsqlite.store import HEAD_REVISION


@pytest.fixture
def sq(tmp_path):
    path = str(tmp_path / "cli.db")
    runner = CliRunner()

    def run(*args: str, code: int = 0, input: str | None = None, env: dict | None = None):
        result = runner.invoke(cli, ["--db", path, *args], input=input, env=env)
        assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr, result.exception)
        assert "Traceback" not in result.output
        return result

    def data(*args: str):
        out = run(*args).stdout
        return json.loads(out) if out.strip() else None

    run.json = data
    run.path = path
    return run


def url(sq, name="MyQueue", *attrs: str) -> str:
    args = ["create-queue", "--queue-name", name]
    if attrs:
        args += ["--attributes", *attrs]
    return sq.json(*args)["QueueUrl"]


def receive(sq, queue="MyQueue", *extra: str) -> list[dict]:
    out = sq.json("receive-message", "--queue-url", queue, "--max-number-of-messages", "10", *extra)
    return out["Messages"] if out else []


# ---------------------------------------------------------------------- queues


def test_create_queue_prints_the_queue_url_and_is_idempotent_for_equal_attributes(sq):
    first = sq.json("create-queue", "--queue-name", "MyQueue", "--attributes", "VisibilityTimeout=60,DelaySeconds=5")
    assert first == {"QueueUrl": "http://localhost:9324/000000000000/MyQueue"}
    again = sq.json("create-queue", "--queue-name", "MyQueue", "--attributes", '{"VisibilityTimeout": "60", "DelaySeconds": "5"}')
    assert again == first
    attrs = sq.json("get-queue-attributes", "--queue-url", "MyQueue", "--attribute-names", "VisibilityTimeout", "DelaySeconds")
    assert attrs == {"Attributes": {"VisibilityTimeout": "60", "DelaySeconds": "5"}}


def test_create_queue_with_tags_in_shorthand_keeps_them(sq):
    sq("create-queue", "--queue-name", "tagged", "--tags", "team=billing,env=dev")
    assert sq.json("list-queue-tags", "--queue-url", "tagged") == {"Tags": {"team": "billing", "env": "dev"}}


def test_tag_untag_and_list_queue_tags(sq):
    q = url(sq)
    assert sq("tag-queue", "--queue-url", q, "--tags", "a=1,b=2,c=3").stdout == ""
    sq("untag-queue", "--queue-url", q, "--tag-keys", "a", "c")
    assert sq.json("list-queue-tags", "--queue-url", q) == {"Tags": {"b": "2"}}
    sq("untag-queue", "--queue-url", q, "--tag-keys", "b")
    assert sq("list-queue-tags", "--queue-url", q).stdout == ""  # no tags: SQS returns nothing


def test_delete_queue_prints_nothing_and_the_queue_is_gone(sq):
    q = url(sq)
    assert sq("delete-queue", "--queue-url", q).stdout == ""
    assert sq("list-queues").stdout == ""


def test_list_queues_filters_by_prefix_and_pages_with_next_token(sq):
    for name in ("alpha", "beta1", "beta2", "beta3"):
        url(sq, name)
    assert len(sq.json("list-queues")["QueueUrls"]) == 4
    page = sq.json("list-queues", "--queue-name-prefix", "beta", "--max-results", "2")
    assert [u.rsplit("/", 1)[1] for u in page["QueueUrls"]] == ["beta1", "beta2"]
    rest = sq.json("list-queues", "--queue-name-prefix", "beta", "--max-results", "2", "--next-token", page["NextToken"])
    assert [u.rsplit("/", 1)[1] for u in rest["QueueUrls"]] == ["beta3"]


def test_get_queue_url_returns_the_url_create_queue_printed(sq):
    q = url(sq)
    assert sq.json("get-queue-url", "--queue-name", "MyQueue") == {"QueueUrl": q}


def test_get_queue_attributes_all_returns_string_values(sq):
    url(sq)
    attrs = sq.json("get-queue-attributes", "--queue-url", "MyQueue", "--attribute-names", "All")["Attributes"]
    assert attrs["QueueArn"] == "arn:aws:sqs:us-east-1:000000000000:MyQueue"
    assert attrs["VisibilityTimeout"] == "30"
    assert all(isinstance(v, str) for v in attrs.values())


def test_attribute_names_accept_a_json_list_or_several_values_after_one_flag(sq):
    url(sq)
    a = sq.json("get-queue-attributes", "--queue-url", "MyQueue", "--attribute-names", '["DelaySeconds", "VisibilityTimeout"]')
    b = sq.json("get-queue-attributes", "--queue-url", "MyQueue", "--attribute-names", "DelaySeconds", "VisibilityTimeout")
    assert a == b == {"Attributes": {"VisibilityTimeout": "30", "DelaySeconds": "0"}}


def test_a_repeated_list_flag_keeps_only_its_last_occurrence_as_the_aws_clis_argparse_does(sq):
    url(sq)
    for args in (
        ["--attribute-names", "DelaySeconds", "Policy", "--attribute-names", "VisibilityTimeout"],
        ["--attribute-names=DelaySeconds", "--attribute-names=VisibilityTimeout"],
        ["--attribute-names", "DelaySeconds", "--attribute-names=VisibilityTimeout"],
    ):
        assert sq.json("get-queue-attributes", "--queue-url", "MyQueue", *args) == {"Attributes": {"VisibilityTimeout": "30"}}
    sq("tag-queue", "--queue-url", "MyQueue", "--tags", "a=1,b=2,c=3")
    sq("untag-queue", "--queue-url", "MyQueue", "--tag-keys", "a", "b", "--tag-keys", "c")
    assert sq.json("list-queue-tags", "--queue-url", "MyQueue") == {"Tags": {"a": "1", "b": "2"}}
    sq("send-message", "--queue-url", "MyQueue", "--message-body", "x", "--message-attributes", "k={DataType=String,StringValue=v}")
    [m] = receive(sq, "MyQueue", "--visibility-timeout", "0", "--message-attribute-names", "All", "--message-attribute-names", "other")
    assert "MessageAttributes" not in m
    [m] = receive(sq, "MyQueue", "--visibility-timeout", "0", "--attribute-names", "All", "--attribute-names", "SenderId")
    assert list(m["Attributes"]) == ["SenderId"]


def test_a_repeated_entries_flag_sends_or_deletes_only_its_last_occurrences_entries(sq):
    q = url(sq)
    sent = sq.json(
        "send-message-batch", "--queue-url", q, "--entries", "Id=1,MessageBody=a", "--entries", "Id=2,MessageBody=b", "Id=3,MessageBody=c"
    )
    assert [s["Id"] for s in sent["Successful"]] == ["2", "3"]
    sent = sq.json("send-message-batch", "--queue-url", q, "--entries=Id=4,MessageBody=d", "--entries=Id=5,MessageBody=e")
    assert [s["Id"] for s in sent["Successful"]] == ["5"]
    messages = receive(sq, q)
    assert sorted(m["Body"] for m in messages) == ["b", "c", "e"]
    first, second, third = (f"Id={i},ReceiptHandle={m['ReceiptHandle']}" for i, m in enumerate(messages))
    deleted = sq.json("delete-message-batch", "--queue-url", q, "--entries", first, second, "--entries", third)
    assert [s["Id"] for s in deleted["Successful"]] == ["2"]
    counts = sq.json("get-queue-attributes", "--queue-url", q, "--attribute-names", "ApproximateNumberOfMessagesNotVisible")
    assert counts == {"Attributes": {"ApproximateNumberOfMessagesNotVisible": "2"}}


def test_set_queue_attributes_takes_json_from_a_file(sq, tmp_path):
    dlq_arn = sq.json("get-queue-attributes", "--queue-url", url(sq, "dlq"), "--attribute-names", "QueueArn")["Attributes"]["QueueArn"]
    q = url(sq)
    policy = {"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "3"}), "VisibilityTimeout": "45"}
    (tmp_path / "attrs.json").write_text(json.dumps(policy))
    assert sq("set-queue-attributes", "--queue-url", q, "--attributes", f"file://{tmp_path / 'attrs.json'}").stdout == ""
    got = sq.json("get-queue-attributes", "--queue-url", q, "--attribute-names", "RedrivePolicy", "VisibilityTimeout")["Attributes"]
    assert got["VisibilityTimeout"] == "45"
    assert json.loads(got["RedrivePolicy"])["deadLetterTargetArn"] == dlq_arn
    assert sq.json("list-dead-letter-source-queues", "--queue-url", "dlq") == {"queueUrls": [q]}


def test_purge_queue_removes_every_message(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    assert sq("purge-queue", "--queue-url", q).stdout == ""
    assert receive(sq) == []


# ---------------------------------------------------------------------- messages


def test_send_message_prints_id_and_md5s_and_receive_returns_the_aws_keys(sq):
    q = url(sq)
    sent = sq.json(
        "send-message",
        "--queue-url",
        q,
        "--message-body",
        "hello",
        "--message-attributes",
        "color={DataType=String,StringValue=red},size={DataType=Number,StringValue=3}",
    )
    assert set(sent) == {"MessageId", "MD5OfMessageBody", "MD5OfMessageAttributes"}
    assert sent["MD5OfMessageBody"] == "5d41402abc4b2a76b9719d911017c592"
    [m] = receive(sq, q, "--message-attribute-names", "All", "--message-system-attribute-names", "All")
    assert set(m) == {"MessageId", "ReceiptHandle", "MD5OfBody", "Body", "Attributes", "MD5OfMessageAttributes", "MessageAttributes"}
    assert m["MessageId"] == sent["MessageId"] and m["Body"] == "hello"
    assert m["MD5OfMessageAttributes"] == sent["MD5OfMessageAttributes"]
    assert m["MessageAttributes"] == {
        "color": {"DataType": "String", "StringValue": "red"},
        "size": {"DataType": "Number", "StringValue": "3"},
    }
    assert m["Attributes"]["ApproximateReceiveCount"] == "1"


def test_message_attributes_in_json_with_a_binary_value_come_back_base64(sq):
    q = url(sq)
    sq(
        "send-message",
        "--queue-url",
        q,
        "--message-body",
        "b",
        "--message-attributes",
        '{"blob": {"DataType": "Binary", "BinaryValue": "AAEC"}}',
    )
    [m] = receive(sq, q, "--message-attribute-names", "blob")
    assert m["MessageAttributes"] == {"blob": {"DataType": "Binary", "BinaryValue": "AAEC"}}


def test_a_message_attribute_name_with_letters_of_any_script_is_sent_and_a_reserved_one_refused(sq):
    q = url(sq)
    sq(
        "send-message",
        "--queue-url",
        q,
        "--message-body",
        "b",
        "--message-attributes",
        '{"attr.1øßä": {"DataType": "String", "StringValue": "Valida"}}',
    )
    [m] = receive(sq, q, "--message-attribute-names", "All")
    assert m["MessageAttributes"] == {"attr.1øßä": {"DataType": "String", "StringValue": "Valida"}}
    result = sq(
        "send-message", "--queue-url", q, "--message-body", "b", "--message-attributes", "aWs.x={DataType=String,StringValue=v}", code=254
    )
    assert "InvalidParameterValue" in result.output and "Traceback" not in result.output


def test_send_message_body_can_come_from_a_file(sq, tmp_path):
    q = url(sq)
    (tmp_path / "body.txt").write_text("from a file ✓")
    sq("send-message", "--queue-url", q, "--message-body", f"file://{tmp_path / 'body.txt'}")
    assert receive(sq, q)[0]["Body"] == "from a file ✓"


def test_send_message_delay_seconds_delays_the_message(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "later", "--delay-seconds", "60")
    assert receive(sq, q) == []
    attrs = sq.json("get-queue-attributes", "--queue-url", q, "--attribute-names", "ApproximateNumberOfMessagesDelayed")
    assert attrs["Attributes"]["ApproximateNumberOfMessagesDelayed"] == "1"


def test_send_message_batch_takes_several_shorthand_entries_after_one_flag(sq):
    q = url(sq)
    out = sq.json("send-message-batch", "--queue-url", q, "--entries", "Id=1,MessageBody=a", "Id=2,MessageBody=b,DelaySeconds=0")
    assert [s["Id"] for s in out["Successful"]] == ["1", "2"]
    assert "Failed" not in out  # as SQS answers: an empty list is left out
    assert sorted(m["Body"] for m in receive(sq, q)) == ["a", "b"]


def test_send_message_batch_reports_a_bad_entry_under_failed_and_sends_the_rest(sq, tmp_path):
    q = url(sq)
    entries = [{"Id": "ok", "MessageBody": "fine"}, {"Id": "bad", "MessageBody": "x", "DelaySeconds": 5000}]
    (tmp_path / "entries.json").write_text(json.dumps(entries))
    out = sq.json("send-message-batch", "--queue-url", q, "--entries", f"file://{tmp_path / 'entries.json'}")
    assert [s["Id"] for s in out["Successful"]] == ["ok"]
    [failed] = out["Failed"]
    assert failed["Id"] == "bad" and failed["Code"] == "InvalidParameterValue" and failed["SenderFault"] is True


def test_receive_message_visibility_timeout_zero_leaves_the_message_visible(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    [first] = receive(sq, q, "--visibility-timeout", "0", "--wait-time-seconds", "0", "--attribute-names", "ApproximateReceiveCount")
    [second] = receive(sq, q, "--attribute-names", "ApproximateReceiveCount")
    assert first["MessageId"] == second["MessageId"]
    assert second["Attributes"] == {"ApproximateReceiveCount": "2"}
    assert first["ReceiptHandle"] != second["ReceiptHandle"]


def test_receive_message_on_an_empty_queue_prints_nothing(sq):
    url(sq)
    assert sq("receive-message", "--queue-url", "MyQueue").stdout == ""


def test_delete_message_removes_it_and_prints_nothing(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    [m] = receive(sq, q, "--visibility-timeout", "0")
    assert sq("delete-message", "--queue-url", q, "--receipt-handle", m["ReceiptHandle"]).stdout == ""
    assert receive(sq, q) == []


def test_delete_message_batch_lists_successes_and_failures(sq):
    q = url(sq)
    sq("send-message-batch", "--queue-url", q, "--entries", "Id=1,MessageBody=a", "Id=2,MessageBody=b")
    a, b = receive(sq, q)
    out = sq.json(
        "delete-message-batch",
        "--queue-url",
        q,
        "--entries",
        f"Id=a,ReceiptHandle={a['ReceiptHandle']}",
        f"Id=b,ReceiptHandle={b['ReceiptHandle']}",
        "Id=c,ReceiptHandle=forged",
    )
    assert sorted(s["Id"] for s in out["Successful"]) == ["a", "b"]
    assert [(f["Id"], f["Code"]) for f in out["Failed"]] == [("c", "ReceiptHandleIsInvalid")]


def test_change_message_visibility_zero_makes_the_message_visible_at_once(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    [m] = receive(sq, q)
    assert receive(sq, q) == []
    assert (
        sq("change-message-visibility", "--queue-url", q, "--receipt-handle", m["ReceiptHandle"], "--visibility-timeout", "0").stdout == ""
    )
    assert [x["Body"] for x in receive(sq, q)] == ["x"]


def test_change_message_visibility_batch_converts_shorthand_timeouts_to_numbers(sq):
    q = url(sq)
    sq("send-message-batch", "--queue-url", q, "--entries", "Id=1,MessageBody=a", "Id=2,MessageBody=b")
    a, b = receive(sq, q)
    out = sq.json(
        "change-message-visibility-batch",
        "--queue-url",
        q,
        "--entries",
        f"Id=a,ReceiptHandle={a['ReceiptHandle']},VisibilityTimeout=0",
        f"Id=b,ReceiptHandle={b['ReceiptHandle']},VisibilityTimeout=600",
    )
    assert sorted(s["Id"] for s in out["Successful"]) == ["a", "b"] and "Failed" not in out
    assert [x["Body"] for x in receive(sq, q)] == [a["Body"]]


# ---------------------------------------------------------------------- FIFO


def test_fifo_flags_deduplicate_and_a_repeated_receive_attempt_returns_the_same_messages(sq):
    q = url(sq, "jobs.fifo", "FifoQueue=true")
    first = sq.json(
        "send-message", "--queue-url", q, "--message-body", "one", "--message-group-id", "g", "--message-deduplication-id", "d1"
    )
    dup = sq.json("send-message", "--queue-url", q, "--message-body", "one", "--message-group-id", "g", "--message-deduplication-id", "d1")
    assert dup["MessageId"] == first["MessageId"] and "SequenceNumber" in first
    sq("send-message", "--queue-url", q, "--message-body", "two", "--message-group-id", "g", "--message-deduplication-id", "d2")
    a = receive(sq, q, "--receive-request-attempt-id", "attempt-1", "--attribute-names", "MessageGroupId")
    b = receive(sq, q, "--receive-request-attempt-id", "attempt-1")
    assert [m["Body"] for m in a] == ["one", "two"]
    assert [m["ReceiptHandle"] for m in a] == [m["ReceiptHandle"] for m in b]
    assert a[0]["Attributes"] == {"MessageGroupId": "g"}


# ---------------------------------------------------------------------- move tasks


def _dead_letters(sq, n: int = 2) -> tuple[str, str]:
    dlq = url(sq, "dlq")
    arn = sq.json("get-queue-attributes", "--queue-url", dlq, "--attribute-names", "QueueArn")["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": "1"})
    q = url(sq, "src", json.dumps({"RedrivePolicy": policy}))
    for i in range(n):
        sq("send-message", "--queue-url", q, "--message-body", f"m{i}")
    receive(sq, q, "--visibility-timeout", "0")
    assert receive(sq, q) == []  # the second receive moved them all
    return q, arn


def test_start_message_move_task_moves_the_dead_letters_back_before_returning(sq):
    q, arn = _dead_letters(sq, 3)
    out = sq.json("start-message-move-task", "--source-arn", arn)
    assert set(out) == {"TaskHandle"}
    assert sorted(m["Body"] for m in receive(sq, q)) == ["m0", "m1", "m2"]
    [task] = sq.json("list-message-move-tasks", "--source-arn", arn)["Results"]
    assert task["Status"] == "COMPLETED" and task["ApproximateNumberOfMessagesMoved"] == 3


def test_start_message_move_task_with_a_destination_and_a_rate(sq):
    _, arn = _dead_letters(sq, 2)
    other = url(sq, "other")
    dest = sq.json("get-queue-attributes", "--queue-url", other, "--attribute-names", "QueueArn")["Attributes"]["QueueArn"]
    sq("start-message-move-task", "--source-arn", arn, "--destination-arn", dest, "--max-number-of-messages-per-second", "500")
    assert sorted(m["Body"] for m in receive(sq, other)) == ["m0", "m1"]
    [task] = sq.json("list-message-move-tasks", "--source-arn", arn, "--max-results", "10")["Results"]
    assert task["DestinationArn"] == dest and task["MaxNumberOfMessagesPerSecond"] == 500


def test_cancel_message_move_task_of_a_finished_task_is_resource_not_found_as_in_sqs(sq):
    _, arn = _dead_letters(sq, 1)
    handle = sq.json("start-message-move-task", "--source-arn", arn)["TaskHandle"]
    r = sq("cancel-message-move-task", "--task-handle", handle, code=254)
    assert r.stderr.startswith(
        "An error occurred (ResourceNotFoundException) when calling the CancelMessageMoveTask operation: Task does not exist."
    )


def test_cancel_message_move_task_of_a_running_task_prints_the_count_moved(sq):
    import sqsqlite

    _, arn = _dead_letters(sq, 1)
    with sqsqlite.connect(sq.path) as db:
        handle = db.start_message_move_task(arn, background=False)  # recorded, not yet run
    assert sq.json("cancel-message-move-task", "--task-handle", handle) == {"ApproximateNumberOfMessagesMoved": 0}


# ---------------------------------------------------------------------- global options and output


def test_global_options_may_follow_the_command(sq):
    url(sq)
    out = sq("list-queues", "--output", "text").stdout
    assert out == "QUEUEURLS\thttp://localhost:9324/000000000000/MyQueue\n"


def test_endpoint_url_account_id_and_region_shape_urls_and_arns(sq):
    out = sq.json(
        "--endpoint-url",
        "http://example.test:4566",
        "--account-id",
        "123456789012",
        "--region",
        "eu-west-1",
        "create-queue",
        "--queue-name",
        "q",
    )
    assert out == {"QueueUrl": "http://example.test:4566/123456789012/q"}
    arn = sq.json(
        "--region", "eu-west-1", "--account-id", "123456789012", "get-queue-attributes", "--queue-url", "q", "--attribute-names", "QueueArn"
    )["Attributes"]["QueueArn"]
    assert arn == "arn:aws:sqs:eu-west-1:123456789012:q"


def test_region_and_account_id_pick_whose_queues_a_command_works_on(sq):
    sq("--region", "eu-west-1", "create-queue", "--queue-name", "orders")
    sq("--account-id", "111111111111", "create-queue", "--queue-name", "orders")
    sq("--region", "eu-west-1", "send-message", "--queue-url", "orders", "--message-body", "west")
    assert sq.json("list-queues") is None  # the default account's us-east-1: none (nothing printed)
    assert sq.json("--region", "eu-west-1", "list-queues") == {"QueueUrls": ["http://localhost:9324/000000000000/orders"]}
    assert sq.json("--account-id", "111111111111", "list-queues") == {"QueueUrls": ["http://localhost:9324/111111111111/orders"]}
    assert sq.json("--account-id", "111111111111", "receive-message", "--queue-url", "orders") is None
    [msg] = sq.json("--region", "eu-west-1", "receive-message", "--queue-url", "orders")["Messages"]
    assert msg["Body"] == "west"


def test_the_database_path_comes_from_sqsqlite_db_when_no_db_flag_is_given(tmp_path):
    path = tmp_path / "from-env.db"
    result = CliRunner().invoke(cli, ["create-queue", "--queue-name", "q"], env={"SQSQLITE_DB": str(path)})
    assert result.exit_code == 0 and path.exists()


def test_table_output_is_the_aws_clis_box_with_the_operation_as_its_title(sq):
    url(sq)
    out = sq("--output", "table", "get-queue-url", "--queue-name", "MyQueue").stdout
    # As the aws CLI draws it: the widest row's width plus padding, the title centred, a single
    # scalar member as a name | value row.
    assert out.splitlines() == [
        "-" * 60,
        "|" + " " * 24 + "GetQueueUrl" + " " * 23 + "|",
        "+" + "-" * 10 + "+" + "-" * 47 + "+",
        "|  QueueUrl|  http://localhost:9324/000000000000/MyQueue   |",
        "+" + "-" * 10 + "+" + "-" * 47 + "+",
    ]


def test_text_output_follows_the_aws_cli_rules(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "hello")
    [line] = sq("--output", "text", "receive-message", "--queue-url", q).stdout.splitlines()
    fields = line.split("\t")
    assert fields[0] == "MESSAGES" and fields[1] == "hello"  # then MD5OfBody, MessageId, ReceiptHandle (sorted keys)
    assert len(fields) == 5


# ---------------------------------------------------------------------- errors


def _error(sq, *args: str) -> str:
    r = sq(*args, code=254)
    assert r.stdout == ""
    line, *hint = r.stderr.splitlines()  # SQS's error as aws prints it, then at most sqsqlite's hint
    assert hint == [] or (len(hint) == 1 and hint[0].startswith("hint: ")), r.stderr
    return line


def test_a_missing_queue_prints_the_aws_error_line_and_exits_254(sq):
    line = _error(sq, "get-queue-url", "--queue-name", "Nope")
    assert (
        line
        == "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the GetQueueUrl operation: The specified queue does not exist."
    )


def test_a_forged_receipt_handle_is_receipt_handle_is_invalid(sq):
    q = url(sq)
    line = _error(sq, "delete-message", "--queue-url", q, "--receipt-handle", "AQEB...")
    assert line.startswith("An error occurred (ReceiptHandleIsInvalid) when calling the DeleteMessage operation: ")


def test_a_superseded_receipt_handle_is_refused(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    [old] = receive(sq, q, "--visibility-timeout", "0")
    receive(sq, q)
    line = _error(sq, "change-message-visibility", "--queue-url", q, "--receipt-handle", old["ReceiptHandle"], "--visibility-timeout", "10")
    assert "(ReceiptHandleIsInvalid) when calling the ChangeMessageVisibility operation" in line


@pytest.mark.parametrize(
    "setup, args, code",
    [
        ([], ["create-queue", "--queue-name", "MyQueue", "--attributes", "VisibilityTimeout=61"], "QueueAlreadyExists"),
        (
            [["delete-queue", "--queue-url", "MyQueue"]],
            ["create-queue", "--queue-name", "MyQueue"],
            "AWS.SimpleQueueService.QueueDeletedRecently",
        ),
        ([], ["create-queue", "--queue-name", "bad name!"], "InvalidParameterValue"),
        ([], ["get-queue-attributes", "--queue-url", "MyQueue", "--attribute-names", "Bogus"], "InvalidAttributeName"),
        ([], ["set-queue-attributes", "--queue-url", "MyQueue", "--attributes", "VisibilityTimeout=43201"], "InvalidAttributeValue"),
        ([], ["send-message", "--queue-url", "MyQueue", "--message-body", "x", "--delay-seconds", "901"], "InvalidParameterValue"),
        ([], ["send-message", "--queue-url", "MyQueue", "--message-body", ""], "MissingParameter"),
        ([], ["receive-message", "--queue-url", "MyQueue", "--max-number-of-messages", "11"], "InvalidParameterValue"),
        (
            [["purge-queue", "--queue-url", "MyQueue"]],
            ["purge-queue", "--queue-url", "MyQueue"],
            "AWS.SimpleQueueService.PurgeQueueInProgress",
        ),
        ([], ["send-message-batch", "--queue-url", "MyQueue", "--entries", "[]"], "AWS.SimpleQueueService.EmptyBatchRequest"),
        (
            [],
            ["send-message-batch", "--queue-url", "MyQueue", "--entries", *[f"Id={i},MessageBody=x" for i in range(11)]],
            "AWS.SimpleQueueService.TooManyEntriesInBatchRequest",
        ),
        (
            [],
            ["send-message-batch", "--queue-url", "MyQueue", "--entries", "Id=1,MessageBody=a", "Id=1,MessageBody=b"],
            "AWS.SimpleQueueService.BatchEntryIdsNotDistinct",
        ),
        (
            [],
            ["send-message-batch", "--queue-url", "MyQueue", "--entries", "Id=no.dots,MessageBody=a"],
            "AWS.SimpleQueueService.InvalidBatchEntryId",
        ),
        (
            [],
            [
                "cancel-message-move-task",
                "--task-handle",
                "eyJ0YXNrSWQiOiJ4Iiwic291cmNlQXJuIjoiYXJuOmF3czpzcXM6dXMtZWFzdC0xOjAwMDAwMDAwMDAwMDpub25lIn0=",
            ],
            "ResourceNotFoundException",
        ),
        ([], ["start-message-move-task", "--source-arn", "arn:aws:sqs:us-east-1:000000000000:MyQueue"], "InvalidParameterValue"),
    ],
)
def test_every_sqs_error_is_one_line_with_the_code_the_aws_cli_prints(sq, setup, args, code):
    url(sq)
    for step in setup:
        sq(*step)
    line = _error(sq, *args)
    assert line.startswith(f"An error occurred ({code}) when calling the ")


def test_a_batch_over_one_mebibyte_is_batch_request_too_long(sq, tmp_path):
    url(sq)
    entries = [{"Id": str(i), "MessageBody": "x" * 200_000} for i in range(6)]
    (tmp_path / "big.json").write_text(json.dumps(entries))
    line = _error(sq, "send-message-batch", "--queue-url", "MyQueue", "--entries", f"file://{tmp_path / 'big.json'}")
    assert line.startswith("An error occurred (AWS.SimpleQueueService.BatchRequestTooLong) when calling the SendMessageBatch operation")


def test_a_message_not_in_flight_cannot_change_visibility(sq):
    q = url(sq)
    sq("send-message", "--queue-url", q, "--message-body", "x")
    [m] = receive(sq, q, "--visibility-timeout", "0")
    line = _error(sq, "change-message-visibility", "--queue-url", q, "--receipt-handle", m["ReceiptHandle"], "--visibility-timeout", "5")
    assert "(AWS.SimpleQueueService.MessageNotInflight)" in line


@pytest.mark.parametrize("how", ["--db", "SQSQLITE_DB"])
def test_a_directory_given_as_the_database_is_one_line_naming_it_and_exit_255(tmp_path, how):
    args, env = (["--db", str(tmp_path)], {}) if how == "--db" else ([], {"SQSQLITE_DB": str(tmp_path)})
    r = CliRunner().invoke(cli, [*args, "list-queues"], env=env)
    assert r.exit_code == 255  # as any other file that can't be used, not a usage error
    assert r.stderr == f"sqsqlite: Can't open database {str(tmp_path)!r}: it is a directory; give the path of a file in it.\n"


def test_a_damaged_database_is_one_line_naming_it_and_exit_255(tmp_path):
    import sqlite3

    path = tmp_path / "damaged.db"
    assert CliRunner().invoke(cli, ["--db", str(path), "create-queue", "--queue-name", "a"]).exit_code == 0
    with sqlite3.connect(path) as c:
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[:4096] + b"\x55" * (len(data) - 4096))  # every page but the header's
    r = CliRunner().invoke(cli, ["--db", str(path), "list-queues"])
    assert r.exit_code == 255 and "unexpected error" not in r.stderr
    assert r.stderr.startswith(f"sqsqlite: Database error on {str(path)!r}: ") and r.stderr.count("\n") == 1


def test_a_file_that_is_not_a_database_is_one_line_naming_it_and_exit_255(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_text("not sqlite at all " * 100)
    r = CliRunner().invoke(cli, ["--db", str(bad), "list-queues"])
    assert r.exit_code == 255  # a failure of the file, not an SQS error (254)
    assert r.stderr.startswith(f"sqsqlite: {str(bad)!r} is not a SQLite database") and r.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["create-queue"], "Missing option '--queue-name'"),
        (["create-queue", "--queue-name", "q", "--bogus"], "No such option '--bogus'"),
        (["no-such-command"], "No such command"),
        (["create-queue", "--queue-name", "q", "--attributes", "VisibilityTimeout"], "Error parsing shorthand syntax"),
        (["create-queue", "--queue-name", "q", "--attributes", "{not json"], "Invalid JSON"),
        (["create-queue", "--queue-name", "q", "--attributes", "file:///no/such/file.json"], "Unable to load paramfile"),
        (["--output", "xml", "list-queues"], "Invalid value for '--output'"),
    ],
)
def test_bad_usage_is_said_as_every_failure_with_the_commands_usage_as_its_hint_and_exits_252(sq, args, fragment):
    r = sq(*args, code=252)
    assert r.stdout == ""
    assert r.stderr.startswith("sqsqlite: ") and fragment in r.stderr and "Error:" not in r.stderr
    assert r.stderr.splitlines()[-1].startswith("hint: usage: sqsqlite")


@pytest.mark.parametrize(
    "args, problem",
    [
        (["send-message", "--message-body", "x", "--message-attributes", "a=b"], "MessageAttributes.a, value: b, type: <class 'str'>"),
        (["send-message", "--message-body", "x", "--message-attributes", '{"a": 1}'], "MessageAttributes.a, value: 1, type: <class 'int'>"),
        (["send-message-batch", "--entries", "[1, 2]"], "Entries[0], value: 1, type: <class 'int'>"),
    ],
)
def test_a_message_attributes_or_a_batch_entrys_form_is_refused_in_botocores_words_as_the_aws_cli_refuses_it(sq, args, problem):
    sq("create-queue", "--queue-name", "q")
    r = sq(*args[:1], "--queue-url", "q", *args[1:], code=252)
    assert r.stderr.startswith("Parameter validation failed:\nInvalid type for parameter " + problem + ", valid types: <class 'dict'>")
    assert sq("get-queue-attributes", "--queue-url", "q", "--attribute-names", "ApproximateNumberOfMessages").stdout.count('"0"') == 1


def test_an_unexpected_failure_is_one_line_and_exit_255(sq, monkeypatch):
    from sqsqlite.cli import options

    def boom(self, create=True):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(options.Settings, "database", boom)
    r = sq("list-queues", code=255)
    assert r.stderr == "sqsqlite: unexpected error: RuntimeError: disk on fire\n"


def test_ctrl_c_exits_130_without_a_traceback_and_at_most_one_blank_line(sq, monkeypatch):
    from sqsqlite.cli import options

    def interrupted(self, create=True):
        raise KeyboardInterrupt

    monkeypatch.setattr(options.Settings, "database", interrupted)
    r = sq("list-queues", code=cli_main.EXIT_INTERRUPTED)
    assert r.stderr == "\nInterrupted.\n"  # the first line break ends the terminal's ^C


@pytest.mark.parametrize(
    ("option", "value", "named"),
    [
        ("--account-id", "123", "12 digits"),
        ("--account-id", "", "12 digits"),
        ("--region", "x:y", "lowercase letters"),
        ("--db", "", "file name"),
    ],
)
def test_a_bad_account_id_region_or_database_path_is_a_usage_error_before_any_file_is_made(tmp_path, option, value, named):
    path = tmp_path / "never.db"
    result = CliRunner().invoke(cli, ["--db", str(path), option, value, "create-queue", "--queue-name", "dlq"])
    assert result.exit_code == 252 and named in result.stderr and repr(value) in result.stderr
    assert not path.exists() and not (tmp_path / "sqsqlite.db").exists()


def test_a_file_sqlite_cannot_use_is_one_clean_line_naming_it(sq):
    result = sq("--db", "/dev/null", "list-queues", code=255)
    assert result.stderr.count("\n") == 1 and "'/dev/null'" in result.stderr and "sqlalche.me" not in result.stderr


def test_an_interrupt_while_the_command_line_loads_exits_130_without_a_traceback(monkeypatch, capsys):
    import sys
    import types

    from sqsqlite.cli import entry

    class Loading(types.ModuleType):
        def __getattr__(self, name):
            raise KeyboardInterrupt  # Ctrl-C in the middle of the command line's imports

    monkeypatch.setitem(sys.modules, "sqsqlite.cli.main", Loading("sqsqlite.cli.main"))
    with pytest.raises(SystemExit) as exited:
        entry.main()
    assert exited.value.code == 130
    assert capsys.readouterr().err == "\nInterrupted.\n"


def test_the_console_script_runs_the_entry_that_answers_an_early_interrupt():
    from pathlib import Path

    pyproject = (Path(__file__).parents[2] / "pyproject.toml").read_text()
    assert '\n[project.scripts]\nsqsqlite = "sqsqlite.cli.entry:main"\n' in pyproject


@pytest.mark.parametrize("given", ["not a url", "localhost:9324", "ftp://host/", "http://host:port/"])
def test_an_endpoint_url_that_is_no_http_url_is_bad_usage_and_changes_nothing(sq, given):
    r = sq("--endpoint-url", given, "create-queue", "--queue-name", "E1", code=252)
    assert "must be of the form http://<hostname>/ or https://<hostname>/" in r.stderr
    assert sq.json("list-queues") is None
    copy = sq("copy", "--to-endpoint-url", given, code=252)
    assert "Invalid value for '--to-endpoint-url'" in copy.stderr


def test_a_query_whose_function_gets_a_value_of_another_type_is_one_line_and_exit_255(sq):
    url(sq)
    r = sq("list-queues", "--query", 'abs(`"x"`)', code=255)
    # jmespath's words, as the aws CLI prints them: without sqsqlite's prefix.
    assert r.stderr == "In function abs(), invalid type for value: x, expected one of: ['number'], received: \"string\"\n"
    url(sq)
    r = sq("receive-message", "--queue-url", "MyQueue", "--query", "length(Messages)", code=255)
    assert (
        r.stderr
        == "In function length(), invalid type for value: None, expected one of: ['string', 'array', 'object'], received: \"null\"\n"
    )


def test_a_command_started_with_standard_output_closed_says_so_in_one_line(tmp_path):
    import subprocess
    import sys

    env = {**os.environ, "SQSQLITE_DB": str(tmp_path / "closed.db")}
    assert CliRunner().invoke(cli, ["create-queue", "--queue-name", "q"], env=env).exit_code == 0  # something to list
    script = "import sys; from sqsqlite.cli.entry import main; sys.argv = ['sqsqlite', 'list-queues']; main()"
    done = subprocess.run(  # the shell starts it with its standard output closed, as `>&-` does
        ["sh", "-c", 'exec "$0" -c "$1" >&-', sys.executable, script], env=env, stderr=subprocess.PIPE, text=True, timeout=60
    )
    assert done.returncode == 255
    assert done.stderr == "sqsqlite: standard output is closed, so the answer could not be printed\n"


@pytest.mark.parametrize(
    "args, code",
    [
        (("list-queues",), 0),
        (("get-queue-url", "--queue-name", "q"), 254),
        (("send-message", "--queue-url", "q", "--message-body", "x"), 254),
        (("peek", "--queue-url", "q"), 254),
        (("stats",), 0),
        (("prune",), 0),
        (("export", "--queue-url", "q", "-"), 254),
        (("db", "current"), 0),
    ],
    ids=lambda a: " ".join(a) if isinstance(a, tuple) else str(a),
)
def test_a_command_that_makes_no_queue_leaves_no_file_at_a_mistyped_db_path_and_says_there_is_none(tmp_path, args, code):
    typo = tmp_path / "typo.db"
    result = CliRunner().invoke(cli, ["--db", str(typo), *args])
    assert result.exit_code == code, (result.stdout, result.stderr)
    said = [line for line in result.stderr.splitlines() if f"no database at {str(typo)!r}" in line]
    # Said once: after an error, on its hint line; else on a line of its own.
    assert len(said) == 1 and said[0].startswith("hint: " if code else "sqsqlite: There is no database at"), result.stderr
    assert list(tmp_path.iterdir()) == []  # not the file, nor its -wal, -shm or lock files


def test_db_current_and_history_answer_a_mistyped_db_path_as_an_empty_file_and_downgrade_refuses_all_creating_nothing(tmp_path):
    typo = str(tmp_path / "typo.db")
    current = CliRunner().invoke(cli, ["--db", typo, "db", "current"])
    assert (current.exit_code, current.stdout) == (0, "base\n")
    assert current.stderr == f"sqsqlite: There is no database at {typo!r}, so no queues (create-queue makes one).\n"
    history = CliRunner().invoke(cli, ["--db", typo, "db", "history", "--output", "json"])
    assert history.exit_code == 0 and json.loads(history.stdout)["Revisions"][-1]["Revision"] == "0001"
    for args in ([], ["base"]):
        downgrade = CliRunner().invoke(cli, ["--db", typo, "db", "downgrade", *args])
        assert (downgrade.exit_code, downgrade.stdout) == (255, "")
        assert downgrade.stderr == f"sqsqlite: There is no database at {typo!r} to downgrade.\n"
    assert list(tmp_path.iterdir()) == []
    upgrade = CliRunner().invoke(cli, ["--db", typo, "db", "upgrade"])  # what it is for: the file, made
    assert (upgrade.exit_code, upgrade.stdout) == (0, f"base\t{HEAD_REVISION}\n") and os.path.exists(typo)


def test_a_read_only_console_on_a_mistyped_db_path_refuses_in_one_line_and_creates_nothing(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("sqsqlite.server.console_command")
    typo = str(tmp_path / "typo.db")
    script = "import sys; from sqsqlite.cli.entry import main; sys.argv = ['sqsqlite', *sys.argv[1:]]; main()"
    for args in (["console", "--db", typo], ["--db", typo, "console"]):
        # Bounded: a console that started would serve until stopped.
        done = subprocess.run(
            [sys.executable, "-c", script, *args, "--read-only", "--port", "0"], capture_output=True, text=True, timeout=60
        )
        assert (done.returncode, done.stdout) == (255, "")
        assert done.stderr == f"sqsqlite: There is no database at {typo!r} to show; a read-only console creates none.\n"
    assert list(tmp_path.iterdir()) == []


def test_create_queue_makes_the_database_file_a_command_names(sq):
    import os

    assert not os.path.exists(sq.path)
    r = sq("create-queue", "--queue-name", "q")
    assert os.path.exists(sq.path) and "no database" not in r.stderr
    assert "no database" not in sq("list-queues").stderr
