"""The client checks each request against botocore's SQS model once per operation, compiled, and
asks botocore's own validator only about what that check does not pass: the outcome must be
botocore's, request for request, valid or not, and the error text word for word."""

from __future__ import annotations

import importlib
import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sqsqlite

botocore_session = pytest.importorskip("botocore.session")
from botocore.exceptions import ParamValidationError  # noqa: E402
from botocore.validate import validate_parameters  # noqa: E402

MODEL = botocore_session.get_session().get_service_model("sqs")

# Values of every type botocore tells apart, and the members requests use (with one unknown).
scalars = st.one_of(
    st.text(max_size=5),
    st.integers(-5, 5),
    st.booleans(),
    st.none(),
    st.binary(max_size=3),
    st.floats(allow_nan=False, allow_infinity=False),
)
ENTRY_MEMBERS = ["Id", "MessageBody", "ReceiptHandle", "DelaySeconds", "VisibilityTimeout", "MessageGroupId", "Foo"]
attributes = st.dictionaries(
    st.sampled_from(["a", "b"]),
    st.one_of(
        scalars,
        st.fixed_dictionaries(
            {"DataType": st.sampled_from(["String", "Binary"])}, optional={"StringValue": scalars, "BinaryValue": scalars, "X": scalars}
        ),
    ),
    max_size=2,
)
entry = st.one_of(
    st.dictionaries(st.sampled_from(ENTRY_MEMBERS), scalars, max_size=4),
    st.fixed_dictionaries({"Id": st.just("1"), "MessageBody": st.just("b")}, optional={"MessageAttributes": attributes}),
    scalars,
)
entries = st.one_of(st.lists(entry, max_size=4), st.tuples(entry, entry), scalars)

REQUESTS = {
    "SendMessage": st.fixed_dictionaries(
        {},
        optional={
            "QueueUrl": scalars,
            "MessageBody": scalars,
            "DelaySeconds": scalars,
            "MessageAttributes": st.one_of(attributes, scalars),
            "Foo": scalars,
        },
    ),
    "SendMessageBatch": st.fixed_dictionaries({}, optional={"QueueUrl": scalars, "Entries": entries, "Foo": scalars}),
    "DeleteMessageBatch": st.fixed_dictionaries({}, optional={"QueueUrl": scalars, "Entries": entries}),
    "ReceiveMessage": st.fixed_dictionaries(
        {},
        optional={
            "QueueUrl": scalars,
            "MaxNumberOfMessages": scalars,
            "MessageAttributeNames": st.one_of(st.lists(scalars, max_size=3), scalars),
        },
    ),
}
SNAKE = {"SendMessage": "send_message", "SendMessageBatch": "send_message_batch", "DeleteMessageBatch": "delete_message_batch"}
SNAKE["ReceiveMessage"] = "receive_message"


def botocores_verdict(action: str, params: dict) -> str | None:
    try:
        validate_parameters(params, MODEL.operation_model(action).input_shape)
    except ParamValidationError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    with sqsqlite.client(str(tmp_path_factory.mktemp("checks") / "c.db")) as c:
        yield c


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), action=st.sampled_from(sorted(REQUESTS)))
def test_the_compiled_check_refuses_exactly_what_botocore_refuses_with_its_words(local, data, action):
    params = data.draw(REQUESTS[action])
    expected = botocores_verdict(action, params)
    try:
        getattr(local, SNAKE[action])(**params)
    except ParamValidationError as exc:
        assert str(exc) == expected
    except Exception:  # an SQS error from the queue: botocore let the request through
        assert expected is None
    else:
        assert expected is None


def test_a_batch_of_entries_passed_once_is_still_checked_member_by_member_the_next_time(local):
    url = local.create_queue(QueueName="q")["QueueUrl"]
    good = [{"Id": "1", "MessageBody": "b"}]
    assert len(local.send_message_batch(QueueUrl=url, Entries=good)["Successful"]) == 1
    with pytest.raises(ParamValidationError, match=r"Invalid type for parameter Entries\[0\]\.MessageBody"):
        local.send_message_batch(QueueUrl=url, Entries=[{"Id": "1", "MessageBody": 5}])
    with pytest.raises(ParamValidationError, match=r'Unknown parameter in Entries\[1\]: "Body"'):
        local.send_message_batch(QueueUrl=url, Entries=[*good, {"Id": "2", "Body": "b"}])


def test_a_dict_subclass_is_taken_as_botocore_takes_it(local):
    class Entry(dict):
        pass

    url = local.create_queue(QueueName="q")["QueueUrl"]
    sent = local.send_message_batch(QueueUrl=url, Entries=[Entry(Id="1", MessageBody="b")])
    assert [s["Id"] for s in sent["Successful"]] == ["1"]


def test_a_str_subclass_in_a_text_member_is_taken_as_botocore_takes_it(local):
    class Text(str):
        pass

    url = local.create_queue(QueueName="q")["QueueUrl"]
    assert local.send_message(QueueUrl=Text(url), MessageBody=Text("b"))["MD5OfMessageBody"] == "92eb5ffee6ae2fec3ad71c777531578f"
    with pytest.raises(ParamValidationError, match="Invalid type for parameter MessageBody"):
        local.send_message(QueueUrl=url, MessageBody=b"b")


# A batch of entries of an Id and its one other member alone, all text, is checked by one pass
# (B.plain_batch) instead of the compiled check: the outcome must be the one the compiled check
# and botocore lead to, whatever the Ids, their number and the members hold.
CLIENT = importlib.import_module("sqsqlite.client")
plain_entries = st.lists(
    st.fixed_dictionaries({"Id": st.text(alphabet="ab-_ é", max_size=3), "MessageBody": st.text(alphabet="xé\x07", max_size=3)}),
    max_size=12,
)


def outcome(call) -> tuple:
    try:
        result = call()
    except Exception as exc:  # the outcome is the error, whatever it is
        return (type(exc).__name__, str(exc))
    return ([s["Id"] for s in result.get("Successful", [])], [(f["Id"], f["Code"], f["Message"]) for f in result.get("Failed", [])])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries=plain_entries, deleting=st.booleans())
def test_a_batch_of_ids_and_one_member_alone_meets_the_outcome_of_the_general_check(local, entries, deleting):
    url = local.create_queue(QueueName="plain")["QueueUrl"]
    action = "DeleteMessageBatch" if deleting else "SendMessageBatch"
    if deleting:
        entries = [{"Id": e["Id"], "ReceiptHandle": e["MessageBody"]} for e in entries]
    call = local.delete_message_batch if deleting else local.send_message_batch
    fast = outcome(lambda: call(QueueUrl=url, Entries=entries))
    plain_required = CLIENT._plain_required
    # The general way for this action: the compiled check, botocore's if it refuses.
    CLIENT._plain_required = lambda name: None if name == action else plain_required(name)
    try:
        general = outcome(lambda: call(QueueUrl=url, Entries=entries))
    finally:
        CLIENT._plain_required = plain_required
    assert fast == general


def test_plain_sends_receives_and_deletes_one_or_in_batches_are_checked_without_botocores_validator(local, monkeypatch):
    url = local.create_queue(QueueName="plain-fast")["QueueUrl"]

    def refuse(*args):
        raise AssertionError("botocore's validator was asked")

    monkeypatch.setattr(CLIENT, "_validate", refuse)
    assert local.send_message(QueueUrl=url, MessageBody="alone")["MD5OfMessageBody"] == "c42bbd90740264d115048a82c9a10214"
    sent = local.send_message_batch(QueueUrl=url, Entries=[{"Id": str(i), "MessageBody": f"m{i}"} for i in range(9)])
    assert len(sent["Successful"]) == 9
    got = local.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    local.delete_message(QueueUrl=url, ReceiptHandle=got.pop()["ReceiptHandle"])
    deleted = local.delete_message_batch(
        QueueUrl=url, Entries=[{"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(got)]
    )
    assert len(deleted["Successful"]) == len(got) == 9


# A send, receive or delete of one message with all of a plain request's members, each of its
# type, goes straight to its action (client._call): the outcome, and the queue after it, must be
# the general way's.
QUEUES = itertools.count()
plain_singles = st.one_of(
    st.fixed_dictionaries({"MessageBody": st.one_of(st.text(alphabet="xé\x07\ufffe", max_size=3), scalars)}).map(
        lambda r: ("SendMessage", "send_message", r)
    ),
    st.fixed_dictionaries({"MaxNumberOfMessages": st.one_of(st.integers(-1, 12), scalars)}).map(
        lambda r: ("ReceiveMessage", "receive_message", r)
    ),
    st.fixed_dictionaries({"ReceiptHandle": st.one_of(st.text(max_size=3), scalars)}).map(lambda r: ("DeleteMessage", "delete_message", r)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(single=plain_singles, url_as_text=st.booleans())
def test_a_send_receive_or_delete_of_one_message_meets_the_outcome_of_the_general_check(local, single, url_as_text):
    action, method, members = single
    call = getattr(local, method)
    number = next(QUEUES)

    def shape(way: str) -> tuple:
        # Each way on a queue of its own, holding one message: the same state for both.
        name = f"plain-one-{way}-{number}"
        url = local.create_queue(QueueName=name)["QueueUrl"]
        local.send_message(QueueUrl=url, MessageBody="waiting")
        request = {"QueueUrl": url if url_as_text else url.encode(), **members}
        try:
            # The general way (client._general) is what every request took before the straight one.
            result = call(**request) if way == "straight" else local._general(action, request)
        except Exception as exc:
            return (type(exc).__name__, str(exc).replace(name, "<queue>")), stored(name)
        result.pop("ResponseMetadata")
        result.pop("MessageId", None)
        # A receive's messages differ by id and handle from queue to queue: their bodies are the outcome.
        return tuple(sorted((k, [m["Body"] for m in v] if k == "Messages" else v) for k, v in result.items())), stored(name)

    def stored(name: str) -> list:
        """The queue's messages after the call: bodies, receive counts, whether in flight."""
        now = local.db.now()
        return sorted((m.body, m.receive_count, m.visible_at > now) for m in local.db.queue(name).peek())

    assert shape("straight") == shape("general")


def test_plain_sends_receives_and_deletes_alone_or_in_batches_skip_the_action_layers_generic_checks(local, monkeypatch):
    url = local.create_queue(QueueName="plain-straight")["QueueUrl"]

    def refuse(*args):
        raise AssertionError("Actions.call was asked")

    monkeypatch.setattr(CLIENT.Actions, "call", refuse)
    local.send_message(QueueUrl=url, MessageBody="one")
    local.send_message_batch(QueueUrl=url, Entries=[{"Id": "2", "MessageBody": "two"}])
    got = local.receive_message(QueueUrl=url, MaxNumberOfMessages=1)["Messages"]
    assert [m["Body"] for m in got] == ["one"]
    assert local.delete_message(QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"])["ResponseMetadata"]["HTTPStatusCode"] == 200
    [two] = local.receive_message(QueueUrl=url)["Messages"]  # QueueUrl alone is plain too
    deleted = local.delete_message_batch(QueueUrl=url, Entries=[{"Id": "2", "ReceiptHandle": two["ReceiptHandle"]}])
    assert deleted["Successful"] == [{"Id": "2"}]
    with pytest.raises(AssertionError, match="Actions.call was asked"):
        local.receive_message(QueueUrl=url, WaitTimeSeconds=0)  # a member no plain receive has: the general way


def test_a_plain_request_the_model_does_not_vouch_for_takes_the_general_way(local, monkeypatch):
    url = local.create_queue(QueueName="plain-unvouched")["QueueUrl"]
    asked = []
    general = CLIENT.Actions.call

    def counted(self, action, request=None):
        asked.append(action)
        return general(self, action, request)

    monkeypatch.setattr(CLIENT.Actions, "call", counted)
    monkeypatch.setattr(CLIENT, "_plain_required", lambda name: None)
    local.send_message(QueueUrl=url, MessageBody="checked by the compiled check")
    assert asked == ["SendMessage"]
