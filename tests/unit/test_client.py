"""``sqsqlite.client(path)`` as a drop-in for ``boto3.client("sqs")``.

The same calls run against boto3 on moto's ``mock_aws`` (the oracle for response shapes and
exception classes) and against sqsqlite; every response sqsqlite returns is also checked
against botocore's own SQS output model.
"""

from __future__ import annotations

import json

import pytest

import sqsqlite

boto3 = pytest.importorskip("boto3")
botocore_exceptions = pytest.importorskip("botocore.exceptions")
moto = pytest.importorskip("moto")

ClientError = botocore_exceptions.ClientError
MODEL = boto3.session.Session().client("sqs", region_name="us-east-1").meta.service_model


@pytest.fixture
def local(db_path, clock):
    with sqsqlite.client(db_path, clock=clock) as c:
        yield c


@pytest.fixture
def aws():
    with moto.mock_aws():
        yield boto3.client("sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


# ---------------------------------------------------------------------- helpers


def shape(value):
    """A response's structure: keys, nesting and scalar types, not values."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


_SCALARS = {"string": str, "integer": int, "long": int, "boolean": bool, "blob": bytes}
# Members botocore's model calls required that SQS itself leaves out when empty: a batch's
# "Failed" when every entry succeeded, "Successful" when none did (a known fault of the model,
# aws/aws-sdk#536; SDKs that trusted it broke when SQS moved to its JSON protocol).
_LEFT_OUT_WHEN_EMPTY = {"Successful", "Failed"}


def conforms(value, model_shape, path="response") -> None:
    """Every member sqsqlite returns exists in botocore's output shape, with its type."""
    kind = model_shape.type_name
    if kind == "structure":
        assert isinstance(value, dict), path
        unknown = set(value) - set(model_shape.members) - {"ResponseMetadata"}
        assert not unknown, f"{path}: members botocore does not know: {unknown}"
        missing = set(model_shape.required_members) - set(value) - _LEFT_OUT_WHEN_EMPTY
        assert not missing, f"{path}: required members missing: {missing}"
        for k, v in value.items():
            if k != "ResponseMetadata":
                conforms(v, model_shape.members[k], f"{path}.{k}")
    elif kind == "list":
        assert isinstance(value, list), path
        for i, v in enumerate(value):
            conforms(v, model_shape.member, f"{path}[{i}]")
    elif kind == "map":
        assert isinstance(value, dict), path
        for k, v in value.items():
            conforms(k, model_shape.key, f"{path} key")
            conforms(v, model_shape.value, f"{path}[{k}]")
    else:
        assert isinstance(value, _SCALARS[kind]) and not (kind != "boolean" and isinstance(value, bool)), (path, value)


def check(client, method: str, **kwargs) -> dict:
    response = getattr(client, method)(**kwargs)
    operation = "".join(p.title() for p in method.split("_"))
    out = MODEL.operation_model(operation).output_shape
    if out is not None:
        conforms(response, out)
    assert set(response["ResponseMetadata"]) == {"RequestId", "HTTPStatusCode", "HTTPHeaders", "RetryAttempts"}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 200
    return response


def lifecycle(c, validate=False) -> dict:
    """One pass over the message lifecycle; returns every response by step."""
    call = (lambda m, **kw: check(c, m, **kw)) if validate else (lambda m, **kw: getattr(c, m)(**kw))
    r = {}
    r["create_dlq"] = call("create_queue", QueueName="orders-dlq")
    dlq = r["create_dlq"]["QueueUrl"]
    dlq_arn = call("get_queue_attributes", QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    r["create"] = call(
        "create_queue",
        QueueName="orders",
        Attributes={"VisibilityTimeout": "60", "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"})},
        tags={"team": "billing"},
    )
    url = r["create"]["QueueUrl"]
    r["get_queue_url"] = call("get_queue_url", QueueName="orders")
    r["list_queues"] = call("list_queues", QueueNamePrefix="ord")
    r["list_queues_none"] = call("list_queues", QueueNamePrefix="zzz")
    r["send"] = call(
        "send_message",
        QueueUrl=url,
        MessageBody="hello",
        MessageAttributes={
            "s": {"DataType": "String", "StringValue": "x"},
            "n": {"DataType": "Number", "StringValue": "42"},
            "b": {"DataType": "Binary", "BinaryValue": b"\x00\xff"},
        },
    )
    r["send_plain"] = call("send_message", QueueUrl=url, MessageBody="plain", DelaySeconds=0)
    r["send_batch"] = call(
        "send_message_batch",
        QueueUrl=url,
        Entries=[
            {"Id": "1", "MessageBody": "a"},
            {"Id": "2", "MessageBody": "b", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}},
        ],
    )
    r["receive"] = call(
        "receive_message",
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
        WaitTimeSeconds=0,
    )
    handles = {m["Body"]: m["ReceiptHandle"] for m in r["receive"]["Messages"]}
    r["receive_empty"] = call("receive_message", QueueUrl=url)
    r["change_visibility"] = call("change_message_visibility", QueueUrl=url, ReceiptHandle=handles["hello"], VisibilityTimeout=120)
    r["change_visibility_batch"] = call(
        "change_message_visibility_batch",
        QueueUrl=url,
        Entries=[
            {"Id": "a", "ReceiptHandle": handles["a"], "VisibilityTimeout": 0},
            {"Id": "bad", "ReceiptHandle": "not-a-handle", "VisibilityTimeout": 0},
        ],
    )
    r["delete"] = call("delete_message", QueueUrl=url, ReceiptHandle=handles["hello"])
    r["delete_batch"] = call(
        "delete_message_batch",
        QueueUrl=url,
        Entries=[
            {"Id": "p", "ReceiptHandle": handles["plain"]},
            {"Id": "b", "ReceiptHandle": handles["b"]},
        ],
    )
    r["attributes"] = call("get_queue_attributes", QueueUrl=url, AttributeNames=["All"])
    r["set_attributes"] = call("set_queue_attributes", QueueUrl=url, Attributes={"DelaySeconds": "1"})
    r["tag"] = call("tag_queue", QueueUrl=url, Tags={"env": "dev"})
    r["tags"] = call("list_queue_tags", QueueUrl=url)
    r["untag"] = call("untag_queue", QueueUrl=url, TagKeys=["env"])
    r["dead_letter_sources"] = call("list_dead_letter_source_queues", QueueUrl=dlq)
    r["purge"] = call("purge_queue", QueueUrl=url)
    r["delete_queue"] = call("delete_queue", QueueUrl=url)
    return r


# ---------------------------------------------------------------------- responses


def test_every_lifecycle_response_has_the_shape_boto3_gets_from_sqs(local, aws):
    ours, theirs = lifecycle(local, validate=True), lifecycle(aws)
    for step in theirs:
        if step == "attributes":
            # moto adds SqsManagedSseEnabled (an SSE default sqsqlite has no use for); the rest match
            assert set(ours[step]["Attributes"]) <= set(theirs[step]["Attributes"])
            assert set(theirs[step]["Attributes"]) - set(ours[step]["Attributes"]) <= {"SqsManagedSseEnabled"}
            continue
        # moto answers a batch with both lists, an empty one too; SQS leaves an empty one out.
        sqs = {k: v for k, v in theirs[step].items() if not (k in _LEFT_OUT_WHEN_EMPTY and v == [])}
        assert shape(ours[step]) == shape(sqs), step


def test_received_messages_carry_the_same_md5s_and_attributes_as_boto3s(local, aws):
    ours, theirs = lifecycle(local), lifecycle(aws)
    key = lambda m: m["Body"]  # noqa: E731
    for a, b in zip(sorted(ours["receive"]["Messages"], key=key), sorted(theirs["receive"]["Messages"], key=key)):
        assert a["MD5OfBody"] == b["MD5OfBody"]
        assert a.get("MD5OfMessageAttributes") == b.get("MD5OfMessageAttributes")
        assert a.get("MessageAttributes") == b.get("MessageAttributes")
        assert set(a["Attributes"]) == set(b["Attributes"])
    assert ours["send"]["MD5OfMessageAttributes"] == theirs["send"]["MD5OfMessageAttributes"]


def test_binary_attributes_come_back_as_bytes(local):
    url = local.create_queue(QueueName="q")["QueueUrl"]
    local.send_message(QueueUrl=url, MessageBody="x", MessageAttributes={"b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}})
    [m] = local.receive_message(QueueUrl=url, MessageAttributeNames=["b"])["Messages"]
    assert m["MessageAttributes"]["b"] == {"DataType": "Binary", "BinaryValue": b"\x00\x01"}


def test_a_str_binary_value_is_sent_as_its_utf8_bytes_as_boto3_sends_it(local, aws):
    got = []
    for c in (local, aws):
        url = c.create_queue(QueueName="blobs")["QueueUrl"]
        sent = c.send_message(QueueUrl=url, MessageBody="x", MessageAttributes={"b": {"DataType": "Binary", "BinaryValue": "abcd"}})
        c.send_message_batch(
            QueueUrl=url,
            Entries=[{"Id": "1", "MessageBody": "y", "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "hello"}}}],
        )
        received = c.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"])["Messages"]
        got.append((sent["MD5OfMessageAttributes"], sorted(m["MessageAttributes"]["b"]["BinaryValue"] for m in received)))
    assert got[0] == got[1] and got[0][1] == [b"abcd", b"hello"]


def test_a_str_binary_value_in_a_tuple_of_batch_entries_is_sent_as_its_utf8_bytes_as_in_a_list(local, aws):
    # "aGk=" is also base64 (of b"hi"): read as the wire's text, it stored the wrong bytes.
    entry = {"Id": "1", "MessageBody": "y", "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "aGk="}}}
    got = []
    for c in (local, aws):
        url = c.create_queue(QueueName="blobs-in-a-tuple")["QueueUrl"]
        sent = c.send_message_batch(QueueUrl=url, Entries=(entry,))
        received = c.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
        got.append((sent["Successful"][0]["MD5OfMessageAttributes"], [m["MessageAttributes"]["b"]["BinaryValue"] for m in received]))
    assert got[0] == got[1] and got[0][1] == [b"aGk="]


def test_positional_arguments_are_refused_in_boto3s_words(local, aws):
    refusals = []
    for c in (local, aws):
        with pytest.raises(TypeError) as err:
            c.send_message("https://queue", "body")
        refusals.append(str(err.value))
    assert refusals[0] == refusals[1] == "send_message() only accepts keyword arguments."


def test_two_clients_share_exception_classes_as_boto3s_do(db_path, local):
    other = sqsqlite.client(db_path)
    try:
        assert other.exceptions.QueueDoesNotExist is local.exceptions.QueueDoesNotExist
        with pytest.raises(other.exceptions.QueueDoesNotExist):
            local.get_queue_url(QueueName="nope")
    finally:
        other.close()


def test_the_response_headers_carry_the_request_id_as_sqss_do(local):
    meta = local.create_queue(QueueName="q")["ResponseMetadata"]
    assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"]
    with pytest.raises(local.exceptions.QueueDoesNotExist) as info:
        local.get_queue_url(QueueName="nope")
    meta = info.value.response["ResponseMetadata"]
    assert meta["HTTPHeaders"]["x-amzn-requestid"] == meta["RequestId"] and meta["HTTPStatusCode"] == 400
    assert local.meta.service_model.service_name == "sqs"


def test_a_forked_child_never_repeats_its_parents_request_ids(local):
    import os

    local.list_queues()  # the parent's ids so far: its random prefix and a count
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which must never return into pytest
        try:
            os.write(write, local.list_queues()["ResponseMetadata"]["RequestId"].encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 100).decode()
    os.close(read)
    parent = {local.list_queues()["ResponseMetadata"]["RequestId"] for _ in range(20)}
    assert len(child) == 36 and child not in parent
    assert child[:24] not in {p[:24] for p in parent}  # the child drew a prefix of its own


def test_request_ids_are_version_4_uuids_and_never_repeat(local):
    import uuid

    ids = [local.list_queues()["ResponseMetadata"]["RequestId"] for _ in range(1000)]
    assert len(set(ids)) == 1000
    assert {(uuid.UUID(i).version, str(uuid.UUID(i))) == (4, i) for i in ids} == {True}


def test_fifo_and_move_task_responses_conform_to_botocores_model(local, clock):
    f = check(local, "create_queue", QueueName="jobs.fifo", Attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})[
        "QueueUrl"
    ]
    sent = check(local, "send_message", QueueUrl=f, MessageBody="x", MessageGroupId="g")
    assert sent["SequenceNumber"].isdigit()
    batch = check(local, "send_message_batch", QueueUrl=f, Entries=[{"Id": "1", "MessageBody": "y", "MessageGroupId": "g"}])
    assert "SequenceNumber" in batch["Successful"][0]
    check(local, "receive_message", QueueUrl=f, ReceiveRequestAttemptId="a", MessageSystemAttributeNames=["All"])

    dlq = local.create_queue(QueueName="dlq")["QueueUrl"]
    dlq_arn = local.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    src = local.create_queue(
        QueueName="src", Attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "1"})}
    )["QueueUrl"]
    local.send_message(QueueUrl=src, MessageBody="poison")
    local.receive_message(QueueUrl=src, VisibilityTimeout=0)
    local.receive_message(QueueUrl=src)  # moves it
    started = check(local, "start_message_move_task", SourceArn=dlq_arn, MaxNumberOfMessagesPerSecond=10)
    local.close()  # waits for the background task
    reopened = sqsqlite.client(local.db.path, clock=clock)
    try:
        [task] = check(reopened, "list_message_move_tasks", SourceArn=dlq_arn)["Results"]
        assert task["Status"] == "COMPLETED" and task["ApproximateNumberOfMessagesMoved"] == 1
        assert started["TaskHandle"]
    finally:
        reopened.close()


def test_paginators_walk_list_queues_like_boto3s(local, aws):
    for c in (local, aws):
        for i in range(5):
            c.create_queue(QueueName=f"page-{i}")
    ours = [len(p["QueueUrls"]) for p in local.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": 2})]
    theirs = [len(p["QueueUrls"]) for p in aws.get_paginator("list_queues").paginate(PaginationConfig={"PageSize": 2})]
    assert ours == theirs == [2, 2, 1]
    assert len(local.get_paginator("list_queues").paginate(QueueNamePrefix="page").build_full_result()["QueueUrls"]) == 5
    assert len(list(local.get_paginator("list_queues").paginate(PaginationConfig={"MaxItems": 3, "PageSize": 2}))) == 2
    assert local.can_paginate("list_dead_letter_source_queues") and not local.can_paginate("send_message")
    assert local.waiter_names == aws.waiter_names == []


def test_a_paginator_cut_by_max_items_resumes_where_it_stopped_like_boto3s(local, aws):
    for c in (local, aws):
        for i in range(5):
            c.create_queue(QueueName=f"page-{i}")
    names = []
    for c in (local, aws):
        first = c.get_paginator("list_queues").paginate(PaginationConfig={"MaxItems": 3, "PageSize": 2}).build_full_result()
        rest = (
            c.get_paginator("list_queues")
            .paginate(PaginationConfig={"StartingToken": first["NextToken"], "PageSize": 2})
            .build_full_result()
        )
        searched = list(c.get_paginator("list_queues").paginate().search("QueueUrls[]"))
        names.append(([u.rsplit("/", 1)[1] for u in first["QueueUrls"] + rest["QueueUrls"]], len(searched)))
    assert names[0] == names[1] == ([f"page-{i}" for i in range(5)], 5)


# ---------------------------------------------------------------------- exceptions


def _raise(c, setup, call):
    state = setup(c) if setup else None
    with pytest.raises(ClientError) as info:
        call(c, state)
    return info.value


def _queue(c):
    url = c.create_queue(QueueName="q1")["QueueUrl"]
    c.send_message(QueueUrl=url, MessageBody="x")
    return url, c.receive_message(QueueUrl=url)["Messages"][0]["ReceiptHandle"]


ERRORS = {
    "QueueDoesNotExist": (None, lambda c, s: c.get_queue_url(QueueName="nope")),
    "QueueDoesNotExist on send": (_queue, lambda c, s: c.send_message(QueueUrl=s[0].replace("q1", "zz"), MessageBody="x")),
    "QueueNameExists": (_queue, lambda c, s: c.create_queue(QueueName="q1", Attributes={"VisibilityTimeout": "61"})),
    "ReceiptHandleIsInvalid": (_queue, lambda c, s: c.delete_message(QueueUrl=s[0], ReceiptHandle="garbage")),
    "InvalidAttributeName": (_queue, lambda c, s: c.get_queue_attributes(QueueUrl=s[0], AttributeNames=["Bogus"])),
    "EmptyBatchRequest": (_queue, lambda c, s: c.send_message_batch(QueueUrl=s[0], Entries=[])),
    "TooManyEntriesInBatchRequest": (
        _queue,
        lambda c, s: c.send_message_batch(QueueUrl=s[0], Entries=[{"Id": str(i), "MessageBody": "x"} for i in range(11)]),
    ),
    "BatchEntryIdsNotDistinct": (_queue, lambda c, s: c.send_message_batch(QueueUrl=s[0], Entries=[{"Id": "a", "MessageBody": "x"}] * 2)),
    "InvalidBatchEntryId": (_queue, lambda c, s: c.send_message_batch(QueueUrl=s[0], Entries=[{"Id": "a.b", "MessageBody": "x"}])),
    "PurgeQueueInProgress": (_queue, lambda c, s: (c.purge_queue(QueueUrl=s[0]), c.purge_queue(QueueUrl=s[0]))),
    "InvalidParameterValue (visibility)": (
        _queue,
        lambda c, s: c.change_message_visibility(QueueUrl=s[0], ReceiptHandle=s[1], VisibilityTimeout=50000),
    ),
    "InvalidParameterValue (delay)": (_queue, lambda c, s: c.send_message(QueueUrl=s[0], MessageBody="x", DelaySeconds=901)),
    "InvalidParameterValue (name)": (None, lambda c, s: c.create_queue(QueueName="bad name")),
    "MissingParameter": (
        None,
        lambda c, s: c.send_message(
            QueueUrl=c.create_queue(QueueName="f.fifo", Attributes={"FifoQueue": "true"})["QueueUrl"], MessageBody="x"
        ),
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_raise_what_boto3_raises(local, aws, case):
    setup, call = ERRORS[case]
    ours, theirs = _raise(local, setup, call), _raise(aws, setup, call)
    assert ours.response["Error"]["Code"] == theirs.response["Error"]["Code"]
    assert ours.response["Error"]["Type"] == theirs.response["Error"]["Type"] == "Sender"
    assert ours.operation_name == theirs.operation_name
    modelled = type(theirs).__name__
    if modelled != "ClientError":  # a class boto3 models: the same name, under client.exceptions
        assert type(ours).__name__ == modelled
        assert isinstance(ours, getattr(local.exceptions, modelled))
        assert ours.response["Error"]["QueryErrorCode"] == theirs.response["Error"]["QueryErrorCode"]
    assert str(ours).startswith(
        f"An error occurred ({theirs.response['Error']['Code']}) when calling the {theirs.operation_name} operation: "
    )


@pytest.mark.parametrize(
    "call, modelled, code",
    [
        # moto does not model these; the classes and codes are botocore's for SQS
        (
            lambda c: c.set_queue_attributes(QueueUrl=c.create_queue(QueueName="q")["QueueUrl"], Attributes={"VisibilityTimeout": "99999"}),
            "InvalidAttributeValue",
            "InvalidAttributeValue",
        ),
        (
            lambda c: (c.delete_queue(QueueUrl=c.create_queue(QueueName="q")["QueueUrl"]), c.create_queue(QueueName="q")),
            "QueueDeletedRecently",
            "AWS.SimpleQueueService.QueueDeletedRecently",
        ),
        (
            lambda c: c.cancel_message_move_task(
                TaskHandle="eyJ0YXNrSWQiOiJ4Iiwic291cmNlQXJuIjoiYXJuOmF3czpzcXM6dXMtZWFzdC0xOjAwMDAwMDAwMDAwMDpub25lIn0="
            ),
            "ResourceNotFoundException",
            "ResourceNotFoundException",
        ),
    ],
)
def test_errors_moto_does_not_model_use_botocores_classes(local, call, modelled, code):
    with pytest.raises(getattr(local.exceptions, modelled)) as info:
        call(local)
    assert info.value.response["Error"]["Code"] == code
    assert local.exceptions.from_code(info.value.response["Error"]["QueryErrorCode"]) is type(info.value)


def test_an_error_is_also_an_sqsqlite_error_with_its_code(local):
    with pytest.raises(sqsqlite.SQSError) as info:
        local.get_queue_url(QueueName="nope")
    assert info.value.code == "QueueDoesNotExist"
    assert isinstance(info.value, ClientError)


def test_bad_parameters_raise_param_validation_error_as_boto3_does(local, aws):
    for c in (local, aws):
        url = c.create_queue(QueueName="q")["QueueUrl"]
        with pytest.raises(botocore_exceptions.ParamValidationError, match='Unknown parameter in input: "Foo"'):
            c.send_message(QueueUrl=url, MessageBody="x", Foo=1)
        with pytest.raises(botocore_exceptions.ParamValidationError, match="Missing required parameter"):
            c.send_message(QueueUrl=url)
        with pytest.raises(botocore_exceptions.ParamValidationError, match="Invalid type for parameter MaxNumberOfMessages"):
            c.receive_message(QueueUrl=url, MaxNumberOfMessages="ten")


def test_the_client_offers_every_method_and_exception_name_boto3s_does(local, aws):
    public = lambda obj: {n for n in dir(obj) if not n.startswith("_")}  # noqa: E731
    assert public(aws) - public(local) <= {"generate_presigned_url"}
    assert public(aws.exceptions) <= public(local.exceptions)
    assert local.meta.region_name == "us-east-1"
    with pytest.raises(ValueError, match="Waiter does not exist"):
        local.get_waiter("queue_exists")


def test_the_clients_meta_has_what_boto3s_has_and_takes_event_handlers(local, aws):
    public = lambda obj: {n for n in dir(obj) if not n.startswith("_")}  # noqa: E731
    assert public(aws.meta) <= public(local.meta)
    assert local.meta.method_to_api_mapping == aws.meta.method_to_api_mapping
    assert (local.meta.partition, local.meta.config.region_name) == ("aws", "us-east-1")
    local.meta.events.register("before-send.sqs", lambda **kwargs: None)  # instrumentation registers; nothing is sent


def test_the_client_follows_the_sqs_lifecycle_on_a_manual_clock(local, clock):
    url = local.create_queue(QueueName="q", Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    local.send_message(QueueUrl=url, MessageBody="x")
    [m] = local.receive_message(QueueUrl=url)["Messages"]
    assert "Messages" not in local.receive_message(QueueUrl=url)
    clock.advance(31)
    [again] = local.receive_message(QueueUrl=url, MessageSystemAttributeNames=["ApproximateReceiveCount"])["Messages"]
    assert again["Attributes"] == {"ApproximateReceiveCount": "2"}
    with pytest.raises(local.exceptions.ReceiptHandleIsInvalid):
        local.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    local.delete_message(QueueUrl=url, ReceiptHandle=again["ReceiptHandle"])


def test_a_client_error_carries_sqss_text_in_its_response_and_sqsqlites_hint_beside_it(tmp_path):
    import sqsqlite

    sqs = sqsqlite.client(str(tmp_path / "c.db"))
    try:
        sqs.get_queue_url(QueueName="nope")
    except sqs.exceptions.QueueDoesNotExist as err:
        assert err.response["Error"]["Message"] == "The specified queue does not exist."
        assert err.hint == "The queue 'nope' does not exist."
    else:
        raise AssertionError("no error")


def test_every_sqs_action_is_a_client_method_with_its_members_in_its_docstring():
    from sqsqlite.actions import MEMBERS
    from sqsqlite.client import SQSClient, method_name

    for action, members in MEMBERS.items():
        method = SQSClient.__dict__.get(method_name(action))
        assert method is not None, f"SQSClient has no {method_name(action)}"
        assert method.__doc__.startswith(action) and all(m in method.__doc__ for m in members)


@pytest.mark.parametrize("attribute", ["Policy", "RedrivePolicy", "RedriveAllowPolicy"])
def test_json_nested_deeper_than_python_recurses_is_refused_as_malformed_json_is_and_nothing_is_written(local, attribute):
    deep = "[" * 100_000
    url = local.create_queue(QueueName="q")["QueueUrl"]
    with pytest.raises(ClientError) as malformed:
        local.set_queue_attributes(QueueUrl=url, Attributes={attribute: "[not json"})
    for call in (
        lambda: local.create_queue(QueueName="deep", Attributes={attribute: deep}),
        lambda: local.set_queue_attributes(QueueUrl=url, Attributes={attribute: deep}),
    ):
        with pytest.raises(ClientError) as refused:
            call()
        assert refused.value.response["Error"]["Code"] == malformed.value.response["Error"]["Code"]
        assert refused.value.response["Error"]["Message"] == malformed.value.response["Error"]["Message"]
    assert local.list_queues().get("QueueUrls") == [url]
    assert attribute not in local.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
