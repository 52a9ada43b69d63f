"""Hostile input, as properties over the library API: whatever a caller passes, a bad value gets
its typed SQS error and every row of every queue stays as it was.

(The CLI is being built on another branch; its property tests come once it lands.)
"""

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite.errors import SQSError
from tests.reliability.snapshots import snapshot

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)

VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,80}")
SQL = st.sampled_from(
    [
        "'; DROP TABLE messages; --",
        '" OR 1=1 --',
        "x' OR '1'='1",
        "1; DELETE FROM queues",
        "%",
        "_",
        "%' --",
        "') UNION SELECT value FROM meta --",
        "/* */ ATTACH DATABASE '/tmp/x' AS x",
        ":name ? ?1 @p $p",
        "\\",
    ]
)
SQLISH = st.one_of(SQL, st.builds(lambda a, s, b: a + s + b, st.text(max_size=8), SQL, st.text(max_size=8)))
# Code points SQS forbids in any text: C0 controls other than tab, LF, CR; lone surrogates;
# U+FFFE and U+FFFF.
BAD_CHAR = st.one_of(
    st.integers(0, 8), st.integers(11, 12), st.integers(14, 31), st.integers(0xD800, 0xDFFF), st.sampled_from([0xFFFE, 0xFFFF])
).map(chr)
GOOD_TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffe\uffff", min_codepoint=32), max_size=20)
BAD_TEXT = st.builds(lambda a, c, b: a + c + b, GOOD_TEXT, BAD_CHAR, GOOD_TEXT)
NOT_INT = st.one_of(
    st.floats(allow_nan=True), st.booleans(), st.just("1.5"), st.just(""), st.just("ten"), st.just([1]), st.just({"v": 1}), st.just(b"1")
)


def out_of(low, high):
    return st.one_of(st.integers(max_value=low - 1), st.integers(min_value=high + 1))


class World:
    """One database with queues in every state, shared by the examples (none of them may change it)."""

    def __init__(self, path):
        self.path = path
        self.clock = sqsqlite.ManualClock()
        self.db = sqsqlite.connect(path, clock=self.clock)
        self.db.set_history_retention(14 * 86_400)  # on: its counts are checked as the rest is
        self.dlq = self.db.create_queue("dlq")
        self.std = self.db.create_queue("std", redrive_policy={"deadLetterTargetArn": self.dlq.arn, "maxReceiveCount": 3})
        self.small = self.db.create_queue("small", maximum_message_size=1024)
        self.fifo = self.db.create_queue("f.fifo", FifoQueue="true", ContentBasedDeduplication="true")
        self.mixed = self.db.create_queue("mixed")  # where the mixed batches may store their good entries
        for q in (self.std, self.small, self.dlq):
            q.send_message_batch([{"Id": f"e{i}", "MessageBody": f"message {i}"} for i in range(6)])
        self.fifo.send_message("fifo one", message_group_id="g")
        self.held = self.std.receive_message(max_number_of_messages=3, visibility_timeout=600)
        self.held_small = self.small.receive_message(visibility_timeout=600)
        [gone] = self.dlq.receive_message()
        gone.delete()
        self.deleted_handle = gone.receipt_handle
        self.handle = self.held[0].receipt_handle

    def rejects(self, call, *codes):
        before = snapshot(self.path)
        with pytest.raises(SQSError) as err:
            call()
        assert err.value.code in codes, err.value
        assert str(err.value)
        assert snapshot(self.path) == before
        return err.value


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World(str(tmp_path_factory.mktemp("props") / "props.db"))
    yield w
    w.db.close()


def names_value_and_range(err, value, low, high):
    if len(repr(value)) <= 50:
        assert repr(value) in str(err) or str(value) in str(err)
    assert str(low) in str(err) and str(high) in str(err)


# ------------------------------------------------------------------ queue names


@SETTINGS
@given(name=st.one_of(st.text(max_size=100), SQLISH, st.text(min_size=81, max_size=90, alphabet="ab")))
def test_an_invalid_queue_name_is_refused_and_creates_nothing(world, name):
    assume(not (VALID_NAME.fullmatch(name) or (name.endswith(".fifo") and VALID_NAME.fullmatch(name[:-5]) and len(name) <= 80)))
    world.rejects(lambda: world.db.create_queue(name), "InvalidParameterValue", "MissingParameter")
    world.rejects(lambda: world.db.get_queue_url(name), "InvalidParameterValue", "MissingParameter")


@SETTINGS
@given(name=st.one_of(st.integers(), st.none(), st.binary(max_size=5), st.lists(st.text(max_size=3), max_size=2)))
def test_a_queue_name_that_is_not_a_string_is_refused(world, name):
    world.rejects(lambda: world.db.create_queue(name), "InvalidParameterValue", "MissingParameter")


@settings(SETTINGS, max_examples=15)
@given(name=st.from_regex(r"[A-Za-z0-9_-]{1,75}", fullmatch=True))
def test_any_valid_queue_name_round_trips_exactly(world, name):
    assume(name not in ("std", "small", "dlq"))
    q = world.db.create_queue(name)
    assert world.db.get_queue_url(name).endswith("/" + name)
    urls, _ = world.db.list_queues(queue_name_prefix=name)
    assert all(u.rsplit("/", 1)[1].startswith(name) for u in urls) and q.url in urls


@SETTINGS
@given(prefix=SQLISH)
def test_a_list_queues_prefix_that_looks_like_sql_or_a_wildcard_matches_literally(world, prefix):
    assume(len(prefix) <= 80)
    urls, _ = world.db.list_queues(queue_name_prefix=prefix)
    assert all(u.rsplit("/", 1)[1].startswith(prefix) for u in urls)


# ------------------------------------------------------------------ bodies


@SETTINGS
@given(body=BAD_TEXT, where=st.sampled_from(["send", "batch"]))
def test_a_body_with_a_forbidden_character_is_refused_naming_the_code_point(world, body, where):
    bad = next(c for c in body if not (c in "\t\n\r" or " " <= c <= "\ud7ff" or "\ue000" <= c <= "\ufffd" or c >= "\U00010000"))
    if where == "send":
        err = world.rejects(lambda: world.std.send_message(body), "InvalidMessageContents")
        assert f"U+{ord(bad):04X}" in str(err)
    else:
        result = world.std.send_message_batch([{"Id": "only", "MessageBody": body}])  # checked by rejects below
        assert [f.code for f in result.failed] == ["InvalidMessageContents"] and result.successful == []
        world.rejects(lambda: world.std.send_message(body), "InvalidMessageContents")


@SETTINGS
@given(body=st.one_of(st.none(), st.just(""), st.integers(), st.binary(min_size=1, max_size=4), st.just(["x"])))
def test_a_missing_empty_or_non_text_body_is_refused(world, body):
    world.rejects(lambda: world.std.send_message(body), "InvalidParameterValue", "MissingParameter")


@SETTINGS
@given(extra=st.integers(1, 8), char=st.sampled_from(["a", "é", "€", "😀"]))
def test_a_body_one_byte_or_more_over_maximum_message_size_is_refused_naming_the_limit(world, extra, char):
    size = len(char.encode())
    body = char * ((1024 + extra + size - 1) // size)
    assert len(body.encode()) > 1024
    err = world.rejects(lambda: world.small.send_message(body), "InvalidParameterValue")
    assert "1024" in str(err)


@SETTINGS
@given(name_len=st.integers(1, 20))
def test_message_attributes_count_toward_maximum_message_size(world, name_len):
    body = "b" * (1024 - name_len - len("String"))  # exactly 1024 with a one-character value...
    attrs = {"n" * name_len: {"DataType": "String", "StringValue": "vv"}}  # ...so this is one over
    world.rejects(lambda: world.small.send_message(body, message_attributes=attrs), "InvalidParameterValue")


def test_a_body_of_exactly_maximum_message_size_is_accepted_and_one_more_byte_is_not(tmp_path):
    db = sqsqlite.connect(str(tmp_path / "edge.db"), clock=sqsqlite.ManualClock())
    small, big = db.create_queue("small", maximum_message_size=1024), db.create_queue("big")
    small.send_message("x" * 1024)
    big.send_message("x" * D.MAXIMUM_MESSAGE_SIZE.high)
    with pytest.raises(SQSError, match=str(D.MAXIMUM_MESSAGE_SIZE.high)):
        big.send_message("x" * (D.MAXIMUM_MESSAGE_SIZE.high + 1))
    assert [len(m.body) for m in big.receive_message()] == [D.MAXIMUM_MESSAGE_SIZE.high]
    db.close()


@SETTINGS
@given(body=st.one_of(SQLISH, st.text(min_size=1, max_size=50)))
def test_any_valid_body_including_sql_comes_back_byte_for_byte(tmp_path_factory, body):
    assume(body and not any(c in body for c in "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\ufffe\uffff"))
    assume(all(ord(c) >= 32 or c in "\t\n\r" for c in body))
    db = sqsqlite.connect(str(tmp_path_factory.mktemp("rt") / "rt.db"), clock=sqsqlite.ManualClock())
    q = db.create_queue("rt")
    q.send_message(body, message_attributes={"a": body})
    [m] = q.receive_message(message_attribute_names=["All"])
    assert m.body == body and m.message_attributes["a"].string_value == body
    db.close()


# ------------------------------------------------------------------ message attributes

BAD_ATTRIBUTE_NAME = st.one_of(
    st.text(max_size=10).filter(lambda s: not re.fullmatch(r"[\w.-]{1,256}", s)),
    st.sampled_from(["AWS.x", "aws.x", "Amazon.y", ".lead", "trail.", "a..b", "x" * 257]),
    SQLISH.filter(lambda s: not re.fullmatch(r"[\w.-]{1,256}", s)),
)
BAD_ATTRIBUTE_VALUE = st.one_of(
    st.builds(
        lambda t: {"DataType": t, "StringValue": "v"},
        st.text(max_size=12).filter(lambda t: not re.fullmatch(r"(String|Number|Binary)(\.[A-Za-z0-9_.-]{1,250})?", t)),
    ),
    st.just({"DataType": "String", "StringValue": ""}),
    st.just({"DataType": "String"}),
    st.builds(lambda v: {"DataType": "String", "StringValue": v}, BAD_TEXT),
    st.builds(
        lambda v: {"DataType": "Number", "StringValue": v},
        st.text(min_size=1, max_size=8).filter(lambda v: not re.fullmatch(r"\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*", v)),
    ),
    st.just({"DataType": "Number", "StringValue": "1" * 60}),
    st.just({"DataType": "Binary", "BinaryValue": b""}),
    st.just({"DataType": "Binary", "BinaryValue": "not base64!"}),
    st.just(True),
    st.just(None),
    st.just(["list"]),
)


@SETTINGS
@given(name=BAD_ATTRIBUTE_NAME)
def test_an_invalid_message_attribute_name_is_refused(world, name):
    world.rejects(lambda: world.std.send_message("b", message_attributes={name: "v"}), "InvalidParameterValue")


@SETTINGS
@given(value=BAD_ATTRIBUTE_VALUE)
def test_an_invalid_message_attribute_type_or_value_is_refused(world, value):
    world.rejects(lambda: world.std.send_message("b", message_attributes={"attr": value}), "InvalidParameterValue")


@SETTINGS
@given(n=st.integers(D.MAX_MESSAGE_ATTRIBUTES + 1, 30))
def test_more_than_ten_message_attributes_are_refused(world, n):
    attrs = {f"a{i}": "v" for i in range(n)}
    err = world.rejects(lambda: world.std.send_message("b", message_attributes=attrs), "InvalidParameterValue")
    assert str(n) in str(err) and "10" in str(err)


# ------------------------------------------------------------------ numbers outside every range


@SETTINGS
@given(value=out_of(0, D.MAX_DELAY_SECONDS))
def test_a_per_message_delay_outside_0_to_900_is_refused_naming_it(world, value):
    err = world.rejects(lambda: world.std.send_message("b", delay_seconds=value), "InvalidParameterValue")
    names_value_and_range(err, value, 0, D.MAX_DELAY_SECONDS)


@SETTINGS
@given(
    param=st.sampled_from(["max_number_of_messages", "visibility_timeout", "wait_time_seconds"]),
    data=st.data(),
)
def test_receive_parameters_outside_their_ranges_are_refused_and_claim_nothing(world, param, data):
    low, high = {"max_number_of_messages": (1, 10), "visibility_timeout": (0, 43200), "wait_time_seconds": (0, 20)}[param]
    value = data.draw(st.one_of(out_of(low, high), NOT_INT))
    err = world.rejects(lambda: world.std.receive_message(**{param: value}), "InvalidParameterValue")
    if isinstance(value, int) and not isinstance(value, bool):
        names_value_and_range(err, value, low, high)


@SETTINGS
@given(value=st.one_of(out_of(0, D.MAX_VISIBILITY_TIMEOUT), NOT_INT), batch=st.booleans())
def test_a_visibility_change_outside_0_to_43200_is_refused_and_the_lease_is_unchanged(world, value, batch):
    if batch:
        result = world.std.change_message_visibility_batch([{"Id": "x", "ReceiptHandle": world.handle, "VisibilityTimeout": value}])
        assert [f.code for f in result.failed] == ["InvalidParameterValue"]
    world.rejects(lambda: world.std.change_message_visibility(world.handle, value), "InvalidParameterValue")


@SETTINGS
@given(attribute=st.sampled_from(sorted(D.INT_ATTRIBUTES)), data=st.data(), create=st.booleans())
def test_a_queue_attribute_outside_its_range_is_refused_naming_the_range(world, attribute, data, create):
    r = D.INT_ATTRIBUTES[attribute]
    value = data.draw(st.one_of(out_of(r.low, r.high), out_of(r.low, r.high).map(str), NOT_INT))
    if create:
        call = lambda: world.db.create_queue("never-created", attributes={attribute: value})  # noqa: E731
    else:
        call = lambda: world.std.set_queue_attributes({attribute: value})  # noqa: E731
    err = world.rejects(call, "InvalidAttributeValue")
    assert r.describe() in str(err)


@SETTINGS
@given(count=st.one_of(out_of(1, D.MAX_RECEIVE_COUNT), NOT_INT))
def test_a_redrive_policy_with_max_receive_count_outside_1_to_1000_is_refused(world, count):
    policy = {"deadLetterTargetArn": world.dlq.arn, "maxReceiveCount": count}
    world.rejects(lambda: world.std.set_queue_attributes({"RedrivePolicy": policy}), "InvalidParameterValue")


@SETTINGS
@given(name=st.one_of(st.text(max_size=30), SQLISH, st.sampled_from(["ApproximateNumberOfMessages", "QueueArn", "FifoQueue"])))
def test_an_unknown_or_read_only_queue_attribute_is_refused(world, name):
    assume(name not in D.SETTABLE_ATTRIBUTES or name == "FifoQueue")
    value = "true" if name == "FifoQueue" else "1"  # a valid value: the name is what is wrong
    world.rejects(lambda: world.std.set_queue_attributes({name: value}), "InvalidAttributeName")


@SETTINGS
@given(limit=st.one_of(out_of(1, 1_000_000), NOT_INT), state=st.one_of(st.sampled_from(["all", "visible"]), SQLISH))
def test_peek_with_a_bad_state_or_limit_is_refused(world, limit, state):
    world.rejects(lambda: world.std.peek(state, limit), "InvalidParameterValue")


# ------------------------------------------------------------------ batches

ENTRY_ID = st.from_regex(r"[A-Za-z0-9_-]{1,10}", fullmatch=True)
# SQL-looking text can be a valid entry id ("_" is one), so it is filtered like the rest.
BAD_ENTRY_ID = st.one_of(
    st.none(),
    st.integers(),
    st.one_of(st.text(max_size=90), SQLISH).filter(lambda s: not re.fullmatch(r"[A-Za-z0-9_-]{1,80}", s)),
)


@SETTINGS
@given(
    kind=st.sampled_from(["send", "delete", "change"]), shape=st.sampled_from(["empty", "too many", "duplicate", "bad id"]), data=st.data()
)
def test_a_malformed_batch_is_refused_as_a_whole(world, kind, shape, data):
    def entry(i):
        return {
            "send": {"Id": i, "MessageBody": "b"},
            "delete": {"Id": i, "ReceiptHandle": world.handle},
            "change": {"Id": i, "ReceiptHandle": world.handle, "VisibilityTimeout": 5},
        }[kind]

    if shape == "empty":
        entries, code = data.draw(st.sampled_from([[], None, ()])), "EmptyBatchRequest"
    elif shape == "too many":
        n = data.draw(st.integers(D.MAX_BATCH_ENTRIES + 1, 25))
        entries, code = [entry(f"e{i}") for i in range(n)], "TooManyEntriesInBatchRequest"
    elif shape == "duplicate":
        i = data.draw(ENTRY_ID)
        entries, code = [entry(i), entry("other"), entry(i)], "BatchEntryIdsNotDistinct"
    else:
        entries, code = [entry("ok"), entry(data.draw(BAD_ENTRY_ID))], "InvalidBatchEntryId"
    call = {
        "send": world.std.send_message_batch,
        "delete": world.std.delete_message_batch,
        "change": world.std.change_message_visibility_batch,
    }[kind]
    world.rejects(lambda: call(entries), code)


@SETTINGS
@given(sizes=st.lists(st.integers(100_000, 1_000_000), min_size=2, max_size=4).filter(lambda s: sum(s) > D.MAX_BATCH_PAYLOAD))
def test_a_batch_over_one_mebibyte_in_total_is_refused(world, sizes):
    entries = [{"Id": f"e{i}", "MessageBody": "x" * n} for i, n in enumerate(sizes)]
    err = world.rejects(lambda: world.std.send_message_batch(entries), "BatchRequestTooLong")
    assert str(D.MAX_BATCH_PAYLOAD) in str(err)


BAD_ENTRY = st.one_of(
    BAD_TEXT.map(lambda b: ({"MessageBody": b}, "InvalidMessageContents")),
    st.just(({"MessageBody": ""}, "MissingParameter")),
    st.just(({}, "MissingParameter")),
    out_of(0, 900).map(lambda d: ({"MessageBody": "b", "DelaySeconds": d}, "InvalidParameterValue")),
    BAD_ATTRIBUTE_VALUE.map(lambda v: ({"MessageBody": "b", "MessageAttributes": {"a": v}}, "InvalidParameterValue")),
    st.just(({"MessageBody": "b", "MessageDeduplicationId": "d"}, "InvalidParameterValue")),  # FIFO-only on a standard queue
)


@SETTINGS
@given(bad=st.lists(BAD_ENTRY, min_size=1, max_size=5), good=st.integers(0, 5), data=st.data())
def test_bad_batch_entries_fail_alone_and_only_the_good_ones_are_stored(world, bad, good, data):
    entries = [dict(e, Id=f"bad{i}") for i, (e, _) in enumerate(bad)]
    entries += [{"Id": f"good{i}", "MessageBody": f"good {i}"} for i in range(good)]
    entries = data.draw(st.permutations(entries))
    before = snapshot(world.path)

    result = world.mixed.send_message_batch(entries)

    codes = {f"bad{i}": code for i, (_, code) in enumerate(bad)}
    assert {f.id: f.code for f in result.failed} == codes
    assert sorted(r.id for r in result.successful) == sorted(f"good{i}" for i in range(good))
    after = snapshot(world.path)
    added = sorted(set(after["messages"]) - set(before["messages"]))
    assert sorted(row[3] for row in added) == sorted(f"good {i}" for i in range(good))  # body column
    assert len(after["messages"]) == len(before["messages"]) + good
    assert _besides_messages(after) == _besides_messages(before)
    sent = [sum(row[2] for row in snap.get("queue_history", [])) for snap in (before, after)]  # the sent column
    assert sent[1] - sent[0] == good  # the good ones counted, the bad ones not


# ------------------------------------------------------------------ receipt handles

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


@SETTINGS
@given(
    handle=st.one_of(st.text(max_size=200), st.text(alphabet=B64, min_size=80, max_size=95), SQLISH, st.integers(), st.binary(max_size=80))
)
def test_a_forged_receipt_handle_is_refused_and_touches_nothing(world, handle):
    assume(handle not in ("", None))
    world.rejects(lambda: world.std.delete_message(handle), "ReceiptHandleIsInvalid")
    world.rejects(lambda: world.std.change_message_visibility(handle, 0), "ReceiptHandleIsInvalid")


@SETTINGS
@given(cut=st.integers(1, 200), which=st.integers(0, 2))
def test_a_truncated_receipt_handle_is_refused(world, cut, which):
    handle = world.held[which].receipt_handle
    assume(cut < len(handle))
    world.rejects(lambda: world.std.delete_message(handle[:cut]), "ReceiptHandleIsInvalid")
    world.rejects(lambda: world.std.delete_message(handle + handle[:cut]), "ReceiptHandleIsInvalid")


@SETTINGS
@given(data=st.data())
def test_a_receipt_handle_with_any_one_character_changed_inserted_or_removed_is_refused(world, data):
    handle = world.handle
    i = data.draw(st.integers(0, len(handle) - 1))
    edit = data.draw(st.sampled_from(["replace", "insert", "delete"]))
    c = data.draw(st.one_of(st.sampled_from(B64 + "=+/. \n!"), st.characters()))
    if edit == "replace":
        assume(c != handle[i])
        tampered = handle[:i] + c + handle[i + 1 :]
    elif edit == "insert":
        tampered = handle[:i] + c + handle[i:]
    else:
        tampered = handle[:i] + handle[i + 1 :]
    world.rejects(lambda: world.std.delete_message(tampered), "ReceiptHandleIsInvalid")
    world.rejects(lambda: world.std.change_message_visibility(tampered, 30), "ReceiptHandleIsInvalid")


@SETTINGS
@given(target=st.sampled_from(["small", "dlq", "fifo", "mixed"]), which=st.integers(0, 2))
def test_a_receipt_handle_from_another_queue_is_refused_there(world, target, which):
    q = getattr(world, target)
    handle = world.held[which].receipt_handle
    world.rejects(lambda: q.delete_message(handle), "ReceiptHandleIsInvalid")
    world.rejects(lambda: q.change_message_visibility(handle, 0), "ReceiptHandleIsInvalid")
    world.rejects(lambda: world.std.delete_message(world.held_small[0].receipt_handle), "ReceiptHandleIsInvalid")


@SETTINGS
@given(handle=st.sampled_from([None, ""]))
def test_a_missing_receipt_handle_is_refused_as_missing(world, handle):
    world.rejects(lambda: world.std.delete_message(handle), "MissingParameter")


def test_a_handle_for_a_deleted_message_cannot_change_its_visibility(world):
    world.rejects(lambda: world.dlq.change_message_visibility(world.deleted_handle, 30), "InvalidParameterValue")


def _besides_messages(snap: dict) -> dict:
    """Every table but messages, the history that counts them, and message_positions (the
    highest message id a deletion took from the top, which a deletion of the newest advances)."""
    rest = {k: v for k, v in snap.items() if k not in ("messages", "queue_history", "message_positions")}
    return rest
