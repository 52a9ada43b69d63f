"""Bad input: every rule of SPEC's sending, batch and attribute sections.

Each case checks the typed error, that its message names the offending value and what is
allowed, and that the database is byte-for-byte unchanged afterwards (every table compared).
"""

import contextlib
import re
import sqlite3
from collections import defaultdict
from collections.abc import Mapping
from decimal import Decimal
from types import MappingProxyType

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sqsqlite import batches as B
from sqsqlite import defaults as D
from sqsqlite import validation as V
from sqsqlite.errors import (
    BatchEntryIdsNotDistinct,
    BatchRequestTooLong,
    EmptyBatchRequest,
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidBatchEntryId,
    InvalidMessageContents,
    InvalidParameterValue,
    MissingParameter,
    SQSError,
    TooManyEntriesInBatchRequest,
)

ALLOWED_CHARS = "#x9, #xA, #xD, #x20 to #xD7FF, #xE000 to #xFFFD and #x10000 to #x10FFFF"


def _snapshot(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}


@contextlib.contextmanager
def refused(db, error, *fragments):
    """The block raises ``error`` whose message contains every fragment, and changes nothing."""
    before = _snapshot(db.path)
    with pytest.raises(error) as info:
        yield info
    assert isinstance(info.value, SQSError) and info.value.code == error.code
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
    assert _snapshot(db.path) == before


@pytest.fixture
def q(db):
    queue = db.create_queue("strict")
    queue.send_message("already here")  # so "nothing changed" is checked against real rows
    return queue


# ------------------------------------------------------------------ message body


def test_an_empty_body_is_refused_as_a_missing_body_as_sqs_does(db, q):
    with refused(db, MissingParameter, "The request must contain the parameter MessageBody.", "at least 1"):
        q.send_message("")


def test_a_missing_body_is_missing_parameter(db, q):
    with refused(db, MissingParameter, "MessageBody"):
        q.send_message(None)


def test_a_body_that_is_not_text_is_refused(db, q):
    with refused(db, InvalidParameterValue, "bytes"):
        q.send_message(b"raw")


@pytest.mark.parametrize("char", ["\x00", "\x08", "\x0b", "\x0c", "\x1f", "\ud800", "\udfff", "\ufffe", "\uffff"])
def test_a_body_with_a_character_sqs_forbids_is_refused_naming_it(db, q, char):
    with refused(db, InvalidMessageContents, f"U+{ord(char):04X}", "position 3", ALLOWED_CHARS):
        q.send_message("abc" + char + "def")


@pytest.mark.parametrize("char", ["\t", "\n", "\r", " ", "\ud7ff", "\ue000", "\ufffd", "\U00010000", "\U0010ffff"])
def test_every_boundary_character_sqs_allows_is_accepted_and_kept_exactly(db, char):
    q = db.create_queue("chars")
    q.send_message("a" + char + "b")
    assert q.receive_message()[0].body == "a" + char + "b"


_forbidden = st.one_of(
    st.integers(0, 8), st.integers(0x0B, 0x0C), st.integers(0x0E, 0x1F), st.integers(0xD800, 0xDFFF), st.sampled_from([0xFFFE, 0xFFFF])
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    prefix=st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xD7FF), max_size=20),
    bad=_forbidden,
    suffix=st.text(max_size=5),
)
def test_any_body_containing_a_forbidden_character_is_refused(db, q, prefix, bad, suffix):
    with refused(db, InvalidMessageContents, "U+"):
        q.send_message(prefix + chr(bad) + suffix)


_any_body = st.one_of(
    st.text(max_size=8),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=8),
    st.sampled_from([None, b"raw", 7, "\ufffe", "a\uffffb", "\ud800"]),
    # Over 64 KiB in all, the bodies are checked one by one rather than joined.
    st.sampled_from(["x" * 70_000, "y" * 70_000 + "\x00", "é" * 40_000]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bodies=st.lists(_any_body, min_size=1, max_size=10))
def test_a_batch_of_bodies_alone_refuses_exactly_the_entries_a_single_send_would(db, bodies):
    # Such a batch is checked all at once (V.message_bodies); any body it doubts sends the whole
    # batch through the entry-by-entry path, so each entry must still get its own verdict.
    checked = V.message_bodies(bodies)
    expected = {}
    for i, body in enumerate(bodies):
        try:
            V.message_body(body)
        except SQSError as exc:
            expected[f"e{i}"] = exc.code
    if expected:
        assert checked is None
    elif checked is not None:
        assert checked == sum(len(V.message_body(body)) for body in bodies)
    q = db.create_queue("bodies")
    request = [{"Id": f"e{i}", "MessageBody": body} for i, body in enumerate(bodies)]
    if sum(len(body.encode()) for i, body in enumerate(bodies) if f"e{i}" not in expected) > D.MAX_BATCH_PAYLOAD:
        with refused(db, BatchRequestTooLong, "bytes"):
            q.send_message_batch(request)
        return
    result = q.send_message_batch(request)
    assert {f.id: f.code for f in result.failed} == expected
    assert [r.id for r in result.successful] == [f"e{i}" for i in range(len(bodies)) if f"e{i}" not in expected]


def test_a_body_over_maximum_message_size_is_refused_naming_both_sizes(db):
    q = db.create_queue("small", attributes={"MaximumMessageSize": "1024"})
    with refused(db, InvalidParameterValue, "1025 bytes", "1 to 1024"):
        q.send_message("x" * 1025)
    with refused(db, InvalidParameterValue, "1030 bytes"):
        q.send_message("x" * 1000, message_attributes={"name": "v" * 20})


# ------------------------------------------------------------------ message attributes


def test_more_than_10_message_attributes_are_refused(db, q):
    with refused(db, InvalidParameterValue, "11", "at most 10"):
        q.send_message("x", message_attributes={f"a{i}": "v" for i in range(11)})


@pytest.mark.parametrize(
    "name",
    [
        "a" * 257,
        "has space",
        "Invalid-!-attr",
        'Invalid-"-attr',
        "Invalid-§-attr",
        "Invalid-(-attr",
        "Invalid-?-attr",
        "aWs.mixed",
        "AMAZON.upper",
        "AWS.reserved",
        "aws.lower",
        "Amazon.reserved",
        ".leading",
        "trailing.",
        "two..dots",
        "",
        "slash/no",
    ],
)
def test_a_bad_message_attribute_name_is_refused_naming_it(db, q, name):
    with refused(db, InvalidParameterValue, repr(name)[:20], "is invalid: it can"):
        q.send_message("x", message_attributes={name: "v"})


def test_a_message_attribute_name_of_256_characters_is_accepted(db, q):
    q.send_message("x", message_attributes={"n" * 256: "v", "a-b_c.d": "v"})


def test_a_message_attribute_name_may_hold_letters_of_any_script_as_sqs_takes_them(db, q):
    q.send_message("x", message_attributes={"attr.1øßä": "Valida", "ümlaut": "v", "名前": "v"})
    received = {m.body: m for m in q.receive_message(max_number_of_messages=10, message_attribute_names=["All"])}
    assert set(received["x"].message_attributes) == {"attr.1øßä", "ümlaut", "名前"}


@pytest.mark.parametrize("data_type", ["string", "Strin", "Number.", "Binary.", "", "Text", None])
def test_a_bad_data_type_is_refused_naming_it(db, q, data_type):
    with refused(db, InvalidParameterValue, repr(data_type), "String, Number or Binary"):
        q.send_message("x", message_attributes={"k": {"DataType": data_type, "StringValue": "v"}})


@pytest.mark.parametrize(
    "value, fragment",
    [
        ({"DataType": "String", "StringValue": ""}, "non-empty StringValue"),
        ({"DataType": "String"}, "non-empty StringValue"),
        ({"DataType": "Binary", "BinaryValue": b""}, "non-empty BinaryValue"),
        ({"DataType": "Binary", "BinaryValue": "%%not base64%%"}, "base64"),
        ({"DataType": "Number", "StringValue": "twelve"}, "'twelve' is not a Number"),
        ({"DataType": "Number", "StringValue": "1.2.3"}, "not a Number"),
        ({"DataType": "Number", "StringValue": "1" * 39}, "not a Number"),  # 39 significant digits
        ({"DataType": "Number", "StringValue": "9" * 40 + ".5"}, "not a Number"),
        ({"DataType": "Number", "StringValue": "1e127"}, "not a Number"),  # above 10^126
        ({"DataType": "Number", "StringValue": "-1e127"}, "not a Number"),
        ({"DataType": "Number", "StringValue": "1e-129"}, "not a Number"),  # below 10^-128
        (
            {"DataType": "Number", "StringValue": "0." + "9" * 35 + "e-128"},
            "not a Number",
        ),  # below, by more digits than decimal's context keeps
        ({"DataType": "Number", "StringValue": "1e1000000"}, "not a Number"),  # past decimal's own exponent range
        ({"DataType": "String", "StringValue": "bad\x00char"}, "U+0000"),
        (True, "bool"),
        (["list"], "mapping"),
    ],
)
def test_a_bad_message_attribute_value_is_refused(db, q, value, fragment):
    with refused(db, InvalidParameterValue, "'k'", fragment):
        q.send_message("x", message_attributes={"k": value})


@pytest.mark.parametrize("value", ["1" * 38, "12" + "0" * 60, "0." + "0" * 60 + "1", "1e126", "-1e126", "1e-128", "0", "-0.0", "007.50"])
def test_a_number_of_38_significant_digits_within_sqs_range_is_taken_as_written(q, value):
    q.send_message("x", message_attributes={"n": {"DataType": "Number", "StringValue": value}})
    [m] = [m for m in q.receive_message(max_number_of_messages=10, message_attribute_names=["All"]) if m.body == "x"]
    assert m.message_attributes["n"].string_value == value


def test_custom_type_suffixes_are_accepted(db, q):
    q.send_message(
        "x",
        message_attributes={"a": {"DataType": "Number.int", "StringValue": "7"}, "b": {"DataType": "Binary.png", "BinaryValue": b"\x89"}},
    )


# ------------------------------------------------------------------ per-message options


@pytest.mark.parametrize("delay", [-1, 901, "soon", 1.5, True])
def test_a_per_message_delay_outside_0_to_900_is_refused(db, q, delay):
    with refused(db, InvalidParameterValue, repr(delay), "0 to 900 seconds"):
        q.send_message("x", delay_seconds=delay)


def test_a_deduplication_id_on_a_standard_queue_is_refused(db, q):
    # A MessageGroupId is taken there (SQS's fair queues); a deduplication id is FIFO's alone.
    with refused(db, InvalidParameterValue, "FIFO", "standard"):
        q.send_message("x", message_deduplication_id="d1")


# ------------------------------------------------------------------ batches


def _entries(n, size=1):
    return [{"Id": f"e{i}", "MessageBody": "x" * size} for i in range(n)]


@pytest.mark.parametrize("entries", [[], None])
def test_an_empty_batch_is_refused(db, q, entries):
    with refused(db, EmptyBatchRequest, "1 to 10"):
        q.send_message_batch(entries)


def test_a_batch_of_11_is_refused(db, q):
    with refused(db, TooManyEntriesInBatchRequest, "11 entries", "at most 10"):
        q.send_message_batch(_entries(11))


def test_batch_entry_ids_must_be_distinct(db, q):
    with refused(db, BatchEntryIdsNotDistinct, "'same'"):
        q.send_message_batch([{"Id": "same", "MessageBody": "a"}, {"Id": "other", "MessageBody": "b"}, {"Id": "same", "MessageBody": "c"}])


def test_an_empty_batch_and_a_repeated_id_are_refused_in_sqs_own_words_for_each_batch_action(db, q):
    # SQS names the action's entry shape in its text for an empty batch, and the repeated Id in
    # its text for Ids not distinct; sqsqlite's explanation stays in the hint.
    q.send_message("x")
    [m] = q.receive_message()
    repeated = [{"Id": "dup", "ReceiptHandle": m.receipt_handle, "MessageBody": "x", "VisibilityTimeout": 0}] * 2
    with q.buffered() as buffered:
        for action, call in (
            ("SendMessageBatch", q.send_message_batch),
            ("DeleteMessageBatch", q.delete_message_batch),
            ("ChangeMessageVisibilityBatch", q.change_message_visibility_batch),
            ("DeleteMessageBatch", buffered.delete_message_batch),
            ("ChangeMessageVisibilityBatch", buffered.change_message_visibility_batch),
        ):
            with refused(db, EmptyBatchRequest, "1 to 10") as err:
                call([])
            assert err.value.message == f"There should be at least one {action}RequestEntry in the request."
            with refused(db, BatchEntryIdsNotDistinct, "'dup'") as err:
                call(repeated)
            assert err.value.message == "Id dup repeated."


@pytest.mark.parametrize("entry_id", ["x" * 81, "has space", "dot.ted", "", None, 7])
def test_a_bad_batch_entry_id_is_refused_naming_it(db, q, entry_id):
    with refused(db, InvalidBatchEntryId, repr(entry_id)[:20], "1 to 80 characters"):
        q.send_message_batch([{"Id": "good", "MessageBody": "a"}, {"Id": entry_id, "MessageBody": "b"}])


def test_a_batch_entry_id_of_80_characters_is_accepted(db, q):
    result = q.send_message_batch([{"Id": "x" * 80, "MessageBody": "a"}])
    assert [s.id for s in result.successful] == ["x" * 80]


_any_entry_id = st.one_of(
    st.from_regex(r"[A-Za-z0-9_-]{1,80}", fullmatch=True),
    st.text(max_size=6),
    st.sampled_from(["a\nb", "a\n", "\n", "", None, 7, b"id", "x" * 80, "x" * 81, "é"]),
)
_any_entry = st.one_of(
    st.builds(lambda i: {"Id": i, "MessageBody": "b"}, _any_entry_id),
    st.sampled_from([{"MessageBody": "no id"}, ["Id", "x"], "Id", MappingProxyType({"Id": "proxy", "MessageBody": "b"})]),
)


@settings(max_examples=300, deadline=None)  # microseconds an example; a loaded machine must not fail it on time
@given(entries=st.lists(_any_entry, min_size=1, max_size=10))
def test_batch_ids_checked_at_once_pass_exactly_the_dict_batches_the_entry_by_entry_check_passes(entries):
    # B.batch_entry_ids checks a batch of dicts in C and sends anything else through its loop,
    # which names the first bad entry: the two must agree on every batch of dicts.
    def loop_passes():
        ids = [e.get("Id") if isinstance(e, Mapping) else None for e in entries]
        return all(isinstance(i, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,80}", i) for i in ids) and len(set(ids)) == len(ids)

    all_dicts = all(type(e) is dict for e in entries)
    assert (B._ids_at_once(entries, "Id") is not None) == (all_dicts and loop_passes())
    try:
        assert B.batch_entry_ids(entries, "SendMessageBatch")[:3] == (entries, [e["Id"] for e in entries], all_dicts)
        passed = True
    except (InvalidBatchEntryId, BatchEntryIdsNotDistinct, InvalidParameterValue):  # the last: an entry not a map
        passed = False
    assert passed == loop_passes()


def test_a_batch_entry_that_is_a_dict_subclass_is_read_by_its_own_rules(db, q):
    # A defaultdict would answer a missing MessageBody with its default: such an entry goes the
    # entry-by-entry way, which asks it with get() and finds no body.
    entry = defaultdict(lambda: "surprise", {"Id": "a", "DelaySeconds": 5})
    result = q.send_message_batch([entry])
    assert [(f.id, f.code) for f in result.failed] == [("a", "MissingParameter")]
    assert "MessageBody" not in entry and "surprise" not in [m.body for m in q.peek(limit=10)]


def test_a_batch_over_1_mib_in_total_is_refused(db, q):
    # Ten bodies that each fit a queue's limit but add up past 1 MiB.
    with refused(db, BatchRequestTooLong, "1048580 bytes", "1048576"):
        q.send_message_batch([{"Id": f"e{i}", "MessageBody": "x" * (104_858 if i < 9 else 104_858)} for i in range(10)])


def test_a_batch_of_exactly_1_mib_is_accepted(db, q):
    sizes = [104_857] * 9 + [1_048_576 - 9 * 104_857]
    result = q.send_message_batch([{"Id": f"e{i}", "MessageBody": "x" * s} for i, s in enumerate(sizes)])
    assert len(result.successful) == 10


@pytest.mark.parametrize(
    "entries, error",
    [
        ([], EmptyBatchRequest),
        ([{"Id": f"e{i}", "ReceiptHandle": "h"} for i in range(11)], TooManyEntriesInBatchRequest),
        ([{"Id": "a", "ReceiptHandle": "h"}] * 2, BatchEntryIdsNotDistinct),
        ([{"Id": "a b", "ReceiptHandle": "h"}], InvalidBatchEntryId),
    ],
)
def test_delete_and_change_visibility_batches_follow_the_same_batch_rules(db, q, entries, error):
    [m] = q.receive_message()
    with refused(db, error):
        q.delete_message_batch(entries)
    with refused(db, error):
        q.change_message_visibility_batch([{**e, "VisibilityTimeout": 0} for e in entries])
    m.delete()


def test_a_failed_batch_entry_is_reported_and_only_the_good_entries_are_stored(db, q):
    before = len(q.peek(limit=100))
    result = q.send_message_batch(
        [{"Id": "ok", "MessageBody": "fine"}, {"Id": "bad", "MessageBody": "x", "MessageAttributes": {"AWS.no": "v"}}]
    )
    assert [s.id for s in result.successful] == ["ok"]
    assert [(f.id, f.code) for f in result.failed] == [("bad", "InvalidParameterValue")]
    assert "'AWS.no'" in str(result.failed[0])
    assert len(q.peek(limit=100)) == before + 1


# ------------------------------------------------------------------ receive and visibility parameters


@pytest.mark.parametrize("n", [0, 11, -1, "ten"])
def test_max_number_of_messages_outside_1_to_10_is_refused(db, q, n):
    with refused(db, InvalidParameterValue, repr(n), "1 to 10"):
        q.receive_message(max_number_of_messages=n)


@pytest.mark.parametrize("vt", [-1, 43_201, "long"])
def test_a_receive_visibility_timeout_outside_0_to_43200_is_refused(db, q, vt):
    with refused(db, InvalidParameterValue, repr(vt), "0 to 43200 seconds"):
        q.receive_message(visibility_timeout=vt)


@pytest.mark.parametrize("vt", [-1, 43_201, None])
def test_a_change_visibility_outside_0_to_43200_is_refused(db, q, vt):
    [m] = q.receive_message()
    with refused(db, InvalidParameterValue, repr(vt), "0 to 43200 seconds"):
        m.change_visibility(vt)


def test_a_missing_receipt_handle_is_missing_parameter(db, q):
    with refused(db, MissingParameter, "ReceiptHandle"):
        q.delete_message("")


# ------------------------------------------------------------------ queue attributes


@pytest.mark.parametrize(
    "name, value, error, fragments",
    [
        ("NotAnAttribute", "1", InvalidAttributeName, ["'NotAnAttribute'", "VisibilityTimeout"]),
        ("ApproximateNumberOfMessages", "1", InvalidAttributeName, ["read-only"]),
        ("VisibilityTimeout", "43201", InvalidAttributeValue, ["'43201'", "0 to 43200 seconds"]),
        ("DelaySeconds", "-1", InvalidAttributeValue, ["'-1'", "0 to 900 seconds"]),
        ("MessageRetentionPeriod", "59", InvalidAttributeValue, ["'59'", "60 to 1209600 seconds"]),
        ("MaximumMessageSize", "1048577", InvalidAttributeValue, ["'1048577'", "1024 to 1048576 bytes"]),
        ("ReceiveMessageWaitTimeSeconds", "21", InvalidAttributeValue, ["'21'", "0 to 20 seconds"]),
        ("KmsDataKeyReusePeriodSeconds", "59", InvalidAttributeValue, ["'59'", "60 to 86400"]),
        ("SqsManagedSseEnabled", "yes", InvalidAttributeValue, ["'yes'", "true or false"]),
        ("Policy", "{not json", InvalidAttributeValue, ["JSON object"]),
        ("RedrivePolicy", '{"maxReceiveCount": 3}', InvalidParameterValue, ["deadLetterTargetArn"]),
        ("RedrivePolicy", '{"deadLetterTargetArn": "arn:nope", "maxReceiveCount": 3}', InvalidParameterValue, ["'arn:nope'"]),
        ("ContentBasedDeduplication", "true", InvalidAttributeName, ["FIFO queues only"]),
        ("DeduplicationScope", "messageGroup", InvalidAttributeName, ["FIFO queues only"]),
        ("FifoThroughputLimit", "perQueue", InvalidAttributeName, ["FIFO queues only"]),
    ],
)
def test_a_bad_queue_attribute_is_refused_on_create_and_on_set(db, q, name, value, error, fragments):
    with refused(db, error, *fragments):
        q.set_queue_attributes({name: value})
    with refused(db, error, *fragments):
        db.create_queue("new-queue", attributes={name: value})


@pytest.mark.parametrize(
    "name, value, hint",
    [
        ("SqsManagedSseEnabled", "yes", "Invalid value 'yes' for SqsManagedSseEnabled: must be true or false."),
        ("KmsMasterKeyId", "k" * 2049, "for KmsMasterKeyId: must be a key id or alias."),
        (
            "RedriveAllowPolicy",
            '{"redrivePermission": "byQueue", "sourceQueueArns": ["not-an-arn"]}',
            "Invalid RedriveAllowPolicy: Invalid sourceQueueArns entry 'not-an-arn': expected arn:aws:sqs:",
        ),
    ],
)
def test_a_bad_queue_attribute_value_is_sqs_s_invalid_value_text_with_sqsqlite_s_reason_as_the_hint(db, q, name, value, hint):
    for call in (lambda: q.set_queue_attributes({name: value}), lambda: db.create_queue("new-queue", attributes={name: value})):
        with refused(db, InvalidAttributeValue) as err:
            call()
        assert err.value.message == f"Invalid value for the parameter {name}."  # SQS's text, never replaced
        assert err.value.hint is not None and hint in err.value.hint


def test_set_queue_attributes_with_one_bad_attribute_changes_none_of_them(db, q):
    with refused(db, InvalidAttributeValue, "'99999'"):
        q.set_queue_attributes({"VisibilityTimeout": "60", "DelaySeconds": "99999"})
    assert q.get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": str(D.VISIBILITY_TIMEOUT.default)}


@pytest.mark.parametrize(
    "member, call, hint",
    [
        ("Attributes", lambda q: q.set_queue_attributes({}), "Give one or more queue attributes to set."),
        ("Tags", lambda q: q.tag_queue({}), "Give one or more tags, each a key and a value."),
        ("TagKeys", lambda q: q.untag_queue([]), "Give one or more tag keys to remove."),
    ],
)
def test_nothing_to_set_tag_or_untag_is_missing_parameter_in_sqs_s_plain_sentence(db, q, member, call, hint):
    with refused(db, MissingParameter) as err:
        call(q)
    # The same sentence as the action layer's for an absent member; sqsqlite's words in the hint.
    assert (err.value.message, err.value.hint) == (f"The request must contain the parameter {member}.", hint)


@pytest.mark.parametrize("tags", [{"a\nb": "x"}, {"ok": "nul\x00"}, {"semi;colon": "x"}])
def test_tags_with_characters_aws_refuses_are_refused_and_change_nothing(queue, tags):
    with pytest.raises(InvalidParameterValue) as err:
        queue.tag_queue(tags)
    assert "tag" in str(err.value)
    assert queue.list_queue_tags() == {}


@pytest.mark.parametrize("key", ["aws:cloudformation:stack-name", "AWS:x", "Aws:"])
def test_a_tag_key_with_the_reserved_aws_prefix_is_refused_in_any_case(queue, key):
    with pytest.raises(InvalidParameterValue, match="the aws: prefix, in any case, is reserved for AWS"):
        queue.tag_queue({key: "x"})
    assert queue.list_queue_tags() == {}
    queue.tag_queue({"k": "aws:values are the owners"})  # the reservation is on keys


def test_tags_with_letters_digits_spaces_and_the_allowed_punctuation_are_accepted(queue):
    queue.tag_queue({"team name": "Équipe 7 _.:/=+-@"})
    assert queue.list_queue_tags() == {"team name": "Équipe 7 _.:/=+-@"}


# ------------------------------------------------------------------ any shape, through the action layer

_JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False)
    | st.text(max_size=8)
    | st.sampled_from(["\udcff", "All", ".*", "x"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(max_size=4) | st.sampled_from(["Id", "MessageBody", "ReceiptHandle"]), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_a_request_member_of_any_json_shape_gets_an_sqs_error_never_a_crash(db, data):
    # What the HTTP endpoint passes on from any JSON body: a non-SQS exception there is a 500.
    from sqsqlite.actions import MEMBERS, Actions

    actions = Actions(db, background_moves=False)
    for name in ("q", "d"):
        with contextlib.suppress(SQSError):  # idempotent; refused for a minute after a DeleteQueue
            db.create_queue(name)
    valid = {"QueueName": "q", "QueueUrl": "q", "MessageBody": "b", "ReceiptHandle": "x", "VisibilityTimeout": 5, "TaskHandle": "t",
             "SourceArn": db.queue_arn("d"), "Tags": {"a": "b"}, "TagKeys": ["a"], "Attributes": {"DelaySeconds": "1"},
             "Entries": [{"Id": "1", "MessageBody": "b", "ReceiptHandle": "x", "VisibilityTimeout": 1}]}  # fmt: skip
    action = data.draw(st.sampled_from(sorted(MEMBERS)))
    member = data.draw(st.sampled_from(MEMBERS[action]))
    request = {k: valid[k] for k in MEMBERS[action] if k in valid} | {member: data.draw(_JSONISH)}
    try:
        actions.call(action, request)
    except SQSError:
        pass


# ------------------------------------------------------------------ newcomers' first tries


@pytest.mark.parametrize("action", ["send_message_batch", "delete_message_batch", "change_message_visibility_batch"])
def test_a_batch_of_plain_strings_is_refused_naming_the_entry_and_what_an_entry_is(db, q, action):
    with refused(db, InvalidParameterValue, "Invalid batch entry 'a' (entry 1)", "each entry is a map with an Id"):
        getattr(q, action)(["a", "b"])


def test_an_in_memory_database_is_refused_saying_a_file_is_needed():
    import sqsqlite
    from sqsqlite.errors import DatabaseError

    with pytest.raises(DatabaseError, match="needs a database file, not ':memory:'"):
        sqsqlite.connect(":memory:")


# ------------------------------------------------------------------ SQS's own words

_ATTRIBUTES_11 = {f"a{i}": "v" for i in range(11)}
SQS_TEXTS = {
    "a deduplication id on a standard queue": (
        lambda q: q.send_message("x", message_deduplication_id="d1"),
        "Value d1 for parameter MessageDeduplicationId is invalid. Reason: The request include parameter that is not valid for this queue type.",
        "FIFO queues only",
    ),
    "eleven message attributes": (
        lambda q: q.send_message("x", message_attributes=_ATTRIBUTES_11),
        "Number of message attributes [11] exceeds the allowed maximum [10].",
        "at most 10",
    ),
    "an attribute type that is not one": (
        lambda q: q.send_message("x", message_attributes={"n": {"DataType": "Text", "StringValue": "v"}}),
        "The type of message (user) attribute 'n' is invalid. You must use only the following supported type prefixes: Binary, Number, String.",
        "'Text'",
    ),
    "an attribute with no type": (
        lambda q: q.send_message("x", message_attributes={"n": {"StringValue": "v"}}),
        "The message (user) attribute 'n' must contain a non-empty message attribute type.",
        "has no DataType (None)",
    ),
    "a Number attribute that is no number": (
        lambda q: q.send_message("x", message_attributes={"n": {"DataType": "Number", "StringValue": "ten"}}),
        "Can't cast the value of message (user) attribute 'n' to a number.",
        "'ten' is not a Number",
    ),
    "a body with a bell character": (
        lambda q: q.send_message("ring \x07"),
        "Invalid binary character '#x7' was found in the message body, the set of allowed characters is "
        "#x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF].",
        "U+0007 at position 5",
    ),
    "an empty tag key": (
        lambda q: q.tag_queue({"": "v"}),
        "Tag keys must be between 1 and 128 characters in length.",
        "1 to 128 characters",
    ),
}


@pytest.mark.parametrize("case", list(SQS_TEXTS))
def test_a_refusal_carries_sqs_own_text_and_sqsqlite_explanation_as_its_hint(db, q, case):
    call, text, hint = SQS_TEXTS[case]
    with refused(db, InvalidMessageContents if "body" in case else InvalidParameterValue) as err:
        call(q)
    assert err.value.message == text
    assert hint in err.value.hint


def test_a_visibility_change_past_12_hours_carries_sqs_own_text_and_the_seconds_left_as_its_hint(db, q, clock):
    [m] = q.receive_message(visibility_timeout=43_200)
    clock.advance(43_000)
    with refused(db, InvalidParameterValue) as err:
        m.change_visibility(201)
    assert err.value.message == (
        "Value 201 for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]."
    )
    assert "200 are left" in err.value.hint


def _sqs_number(text: str) -> bool:
    """SQS's rule for a Number, written out in full with Decimal: up to 38 significant digits
    (leading and trailing zeros not counted), 0 or of magnitude 10^-128 to 10^126."""
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        return False
    number = Decimal(text)
    significant = "".join(map(str, number.as_tuple().digits)).strip("0")
    return not number or (len(significant) <= 38 and Decimal("1e-128") <= number.copy_abs() <= Decimal("1e126"))


NUMBERISH = st.from_regex(r"[+-]?[0-9]{0,45}\.?[0-9]{0,45}([eE][+-]?[0-9]{1,4})?", fullmatch=True)
NEAR_38_DIGITS = st.from_regex(r"[+-]?[1-9][0-9]{34,41}(\.[0-9]{0,3})?", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(NUMBERISH, NEAR_38_DIGITS, st.text(alphabet="0123456789.+-eE ", max_size=45)))
def test_a_number_attribute_is_taken_exactly_when_sqs_takes_it(text):
    attribute = {"n": {"DataType": "Number", "StringValue": text}}
    if _sqs_number(text.strip()) and text:
        assert V.message_attributes(attribute)["n"].string_value == text
    else:
        with pytest.raises(InvalidParameterValue):
            V.message_attributes(attribute)
