"""Messages: send, batches, delays, attributes and their digests, receive, delete, visibility."""

import dataclasses
import hashlib
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from moto.sqs.models import Message as MotoMessage

import sqsqlite
from sqsqlite import MessageAttribute, SendResult
from sqsqlite.errors import (
    DatabaseError,
    InvalidAttributeName,
    InvalidExportRecord,
    InvalidMessageContents,
    InvalidParameterValue,
    QueueDoesNotExist,
    ReceiptHandleIsInvalid,
)
from sqsqlite.validation import md5_of_attributes, message_attributes


def moto_md5(attributes: dict) -> str:
    """The independent oracle: moto's implementation of SQS's MD5OfMessageAttributes."""
    m = MotoMessage("id", "body")
    m.message_attributes = attributes
    return m.attribute_md5


# ------------------------------------------------------------------ sending


def test_send_returns_a_uuid_message_id_and_the_md5_of_the_utf8_body(queue):
    body = "héllo wörld ✓ 😀"
    result = queue.send_message(body)
    assert str(uuid.UUID(result.message_id)) == result.message_id
    assert result.md5_of_message_body == hashlib.md5(body.encode("utf-8")).hexdigest()
    assert result.md5_of_message_attributes is None
    [msg] = queue.receive_message()
    assert (msg.message_id, msg.body, msg.md5_of_body) == (result.message_id, body, result.md5_of_message_body)


def test_each_send_gets_its_own_message_id(queue):
    ids = {queue.send_message("same").message_id for _ in range(20)}
    assert len(ids) == 20


def test_single_sends_ids_made_ahead_are_version_4_uuids_never_repeated(queue):
    ids = [queue.send_message("x").message_id for _ in range(100)]  # the pool refilled three times
    assert len(set(ids)) == 100
    assert {(uuid.UUID(i).version, str(uuid.UUID(i))) == (4, i) for i in ids} == {True}


def test_a_forked_child_never_sends_the_ids_its_parent_made_ahead(queue):
    import os

    queue.send_message("parent")  # the parent's pool now holds ids made ahead
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child, which must never return into pytest
        try:
            os.write(write, ",".join(queue.send_message("child").message_id for _ in range(3)).encode())
        finally:
            os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = set(os.read(read, 200).decode().split(","))
    os.close(read)
    parent = {queue.send_message("parent").message_id for _ in range(40)}
    assert len(child) == 3 and not child & parent


def test_md5_of_message_attributes_matches_sqs_for_string_number_binary_and_custom_types(queue):
    attrs = {
        "zeta": {"DataType": "String", "StringValue": "last by name"},
        "Alpha": {"DataType": "Number", "StringValue": "-12.5e3"},
        "blob": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"},
        "custom": {"DataType": "String.json", "StringValue": '{"k": "ü"}'},
        "bin.custom": {"DataType": "Binary.gzip", "BinaryValue": b"\x1f\x8b"},
    }
    result = queue.send_message("with attributes", message_attributes=attrs)
    assert result.md5_of_message_attributes == moto_md5(attrs)
    [msg] = queue.receive_message(message_attribute_names=["All"])
    assert msg.md5_of_message_attributes == result.md5_of_message_attributes
    assert msg.message_attributes["blob"] == MessageAttribute("Binary", binary_value=b"\x00\x01\xfe\xff")
    assert msg.message_attributes["custom"] == MessageAttribute("String.json", string_value='{"k": "ü"}')
    assert msg.message_attributes["Alpha"].data_type == "Number"


@pytest.mark.parametrize(
    "attrs, published",
    [
        # Values published in other projects' SQS digest tests (an SQS emulator in Go and an
        # SQS checksum helper for Node), each checked there against real SQS responses.
        (
            {"ordinal": {"DataType": "Number", "StringValue": "1"}, "category": {"DataType": "String", "StringValue": "test"}},
            "d21ae90c49061e927f57df5f5d72be1f",
        ),
        ({"SellerName": {"DataType": "String", "StringValue": "Example Store"}}, "cd28f3b68aeee4b2eac9c66f2f694b58"),
    ],
)
def test_md5_of_message_attributes_matches_published_values(queue, attrs, published):
    assert queue.send_message("x", message_attributes=attrs).md5_of_message_attributes == published


_names = st.from_regex(r"[A-Za-z0-9_-]([A-Za-z0-9_-]|\.[A-Za-z0-9_-]){0,20}", fullmatch=True).filter(
    lambda n: not n.lower().startswith(("aws.", "amazon."))
)
_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\x0b\x0c\ufffe\uffff"),
    min_size=1,
    max_size=40,
).filter(lambda s: all(c in "\t\n\r" or ord(c) >= 0x20 for c in s))
_attr = st.one_of(
    st.builds(lambda v: {"DataType": "String", "StringValue": v}, _text),
    st.builds(lambda v: {"DataType": "Number", "StringValue": str(v)}, st.integers(-(10**30), 10**30)),
    st.builds(lambda v: {"DataType": "Binary", "BinaryValue": v}, st.binary(min_size=1, max_size=40)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(attrs=st.dictionaries(_names, _attr, min_size=1, max_size=10))
def test_md5_of_message_attributes_agrees_with_the_oracle_for_any_valid_attributes(attrs):
    assert md5_of_attributes(message_attributes(attrs)) == moto_md5(attrs)


def test_python_values_pick_their_sqs_type(queue):
    queue.send_message("typed", message_attributes={"s": "text", "n": 42, "f": 1.5, "b": b"\x01"})
    [msg] = queue.receive_message(message_attribute_names=["All"])
    got = {k: (v.data_type, v.string_value, v.binary_value) for k, v in msg.message_attributes.items()}
    assert got == {"s": ("String", "text", None), "n": ("Number", "42", None), "f": ("Number", "1.5", None), "b": ("Binary", None, b"\x01")}


def test_receive_returns_only_the_message_attributes_asked_for(queue):
    queue.send_message("x", message_attributes={"color": "red", "colour.uk": "red", "size": "L"})
    [msg] = queue.receive_message()
    assert msg.message_attributes == {}
    for v in queue.peek("in-flight"):
        assert set(v.message_attributes) == {"color", "colour.uk", "size"}


@pytest.mark.parametrize(
    "names, expected",
    [
        (["All"], {"color", "colour.uk", "size"}),
        ([".*"], {"color", "colour.uk", "size"}),
        (["size"], {"size"}),
        (["*"], {"color", "colour.uk", "size"}),
        (["colour.*"], {"colour.uk"}),
        (["colo.*"], {"color", "colour.uk"}),
        (["si.*", "color"], {"size", "color"}),
    ],
)
def test_message_attribute_names_select_by_name_all_or_prefix(db, names, expected):
    # As SQS answers: "Hel.*" selects Hello and Help.Me, the text before ".*" being the prefix.
    q = db.create_queue("filtered")
    q.send_message("x", message_attributes={"color": "red", "colour.uk": "red", "size": "L"})
    [msg] = q.receive_message(message_attribute_names=names)
    assert set(msg.message_attributes) == expected


def test_attribute_names_given_as_one_bare_string_mean_that_one_name(db):
    q = db.create_queue("bare-names")
    q.send_message("x", message_attributes={"A": "letter", "size": "L"})
    [msg] = q.receive_message(message_attribute_names="size", message_system_attribute_names="SentTimestamp")
    assert set(msg.message_attributes) == {"size"}  # not "s", "i", "z", "e"
    assert set(msg.attributes) == {"SentTimestamp"}
    q.change_message_visibility(msg.receipt_handle, 0)
    [msg] = q.receive_message(message_attribute_names="All")
    assert set(msg.message_attributes) == {"A", "size"}


# ------------------------------------------------------------------ size and delay


def test_a_message_of_exactly_maximum_message_size_is_accepted_and_one_byte_more_is_not(db):
    q = db.create_queue("small", attributes={"MaximumMessageSize": "1024"})
    q.send_message("x" * 1024)
    with pytest.raises(InvalidParameterValue) as err:
        q.send_message("x" * 1025)
    assert "1025" in str(err.value) and "1024" in str(err.value)
    # Multi-byte characters count as their UTF-8 bytes.
    with pytest.raises(InvalidParameterValue):
        q.send_message("é" * 513)
    # Message attributes count too: name + type + value.
    with pytest.raises(InvalidParameterValue):
        q.send_message("x" * 1000, message_attributes={"name": "v" * 20})  # 1000 + 4 + 6 + 20
    q.send_message("x" * 994, message_attributes={"nm": "v" * 22})  # 994 + 2 + 6 + 22 = 1024
    assert len(q.peek()) == 2


def test_the_queue_delay_hides_new_messages_and_a_per_message_delay_overrides_it(db, clock):
    q = db.create_queue("slow", attributes={"DelaySeconds": "60"})
    q.send_message("queue delay")
    q.send_message("no delay", delay_seconds=0)
    q.send_message("long delay", delay_seconds=120)
    assert [m.body for m in q.receive_message(max_number_of_messages=10, visibility_timeout=43200)] == ["no delay"]
    clock.advance(60)
    assert [m.body for m in q.receive_message(max_number_of_messages=10, visibility_timeout=43200)] == ["queue delay"]
    clock.advance(59.999)
    assert q.receive_message(max_number_of_messages=10) == []
    clock.advance(0.001)
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["long delay"]


def test_changing_the_queue_delay_affects_only_later_sends(db, clock):
    q = db.create_queue("redelay")
    q.send_message("before")
    q.set_queue_attributes({"DelaySeconds": "30"})
    q.send_message("after")
    assert [m.body for m in q.receive_message(max_number_of_messages=10)] == ["before"]


# ------------------------------------------------------------------ batches


def test_send_batch_reports_each_entry_and_one_bad_entry_does_not_fail_the_others(queue):
    result = queue.send_message_batch(
        [
            {"Id": "a", "MessageBody": "first"},
            {"Id": "b", "MessageBody": ""},
            {"Id": "c", "MessageBody": "third", "DelaySeconds": 901},
            {"Id": "d", "MessageBody": "fourth", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "v"}}},
            {"Id": "e", "MessageBody": "bad \x00 char"},
        ]
    )
    assert [s.id for s in result.successful] == ["a", "d"]
    assert [(f.id, f.code, f.sender_fault) for f in result.failed] == [
        ("b", "MissingParameter", True),
        ("c", "InvalidParameterValue", True),
        ("e", "InvalidMessageContents", True),
    ]
    assert "901" in str(result.failed[1]) and "0 to 900" in str(result.failed[1])
    assert result.successful[1].md5_of_message_attributes == moto_md5({"k": {"DataType": "String", "StringValue": "v"}})
    got = sorted(m.body for m in queue.receive_message(max_number_of_messages=10))
    assert got == ["first", "fourth"]


def test_a_batch_of_bodies_alone_returns_results_that_read_as_a_list_of_send_results(queue):
    bodies = ["a", "b", "c"]
    result = queue.send_message_batch([{"Id": f"e{i}", "MessageBody": b} for i, b in enumerate(bodies)])
    sent = result.successful
    as_list = list(sent)
    assert len(sent) == 3 and bool(sent) and all(isinstance(r, SendResult) for r in as_list)
    assert [r.id for r in sent] == ["e0", "e1", "e2"]
    assert [r.md5_of_message_body for r in sent] == [hashlib.md5(b.encode()).hexdigest() for b in bodies]
    assert sent[0] == as_list[0] and sent[-1] == as_list[2] and sent[1:] == as_list[1:]
    assert sent == as_list and as_list == sent and sent != as_list[:2] and sent != "abc"
    assert as_list[1] in sent and repr(sent) == repr(as_list)
    with pytest.raises(IndexError):
        sent[3]
    with pytest.raises(TypeError):
        hash(sent)
    stored = {m.message_id: m.body for m in queue.receive_message(max_number_of_messages=10)}
    assert stored == {r.message_id: b for r, b in zip(sent, bodies)}


def test_send_batch_entries_keep_their_own_delay(queue, clock):
    queue.send_message_batch([{"Id": "now", "MessageBody": "now"}, {"Id": "later", "MessageBody": "later", "DelaySeconds": 10}])
    assert [m.body for m in queue.receive_message(max_number_of_messages=10)] == ["now"]
    clock.advance(10)
    assert [m.body for m in queue.receive_message(max_number_of_messages=10)] == ["later"]


@pytest.mark.parametrize(
    "queue_delay, entry",
    [("0", {"DelaySeconds": 5}), ("5", {})],
    ids=["each entry's own delay", "the queue's delay for bodies alone"],
)
def test_a_batch_sharing_one_delay_stores_each_entry_with_its_own_id_and_body(db, clock, queue_delay, entry):
    # Entries of an Id and a body alone take the engine's short path (the queue, sender, time and
    # visibility bound once for all rows); they must come out as any other send does.
    q = db.create_queue("shared", attributes={"DelaySeconds": queue_delay})
    result = q.send_message_batch([{"Id": f"e{i}", "MessageBody": f"body {i}", **entry} for i in range(10)])
    assert result.failed == []
    assert [(r.id, r.md5_of_message_body) for r in result.successful] == [
        (f"e{i}", hashlib.md5(f"body {i}".encode()).hexdigest()) for i in range(10)
    ]
    sent = {r.id: r.message_id for r in result.successful}
    assert q.receive_message(max_number_of_messages=10) == []
    clock.advance(5)
    got = q.receive_message(max_number_of_messages=10, message_system_attribute_names=["All"])
    assert {m.message_id: m.body for m in got} == {sent[f"e{i}"]: f"body {i}" for i in range(10)}
    assert {(m.sent_timestamp, m.sender_id) for m in got} == {(clock.now_ms() - 5000, q.db.sender_id)}
    assert [m.message_attributes for m in got] == [{}] * 10


def test_a_batch_of_bodies_alone_with_one_bad_or_too_large_body_fails_only_that_entry(db):
    q = db.create_queue("small", attributes={"MaximumMessageSize": "1024"})
    result = q.send_message_batch(
        [
            {"Id": "fits", "MessageBody": "x" * 1024},
            {"Id": "over", "MessageBody": "é" * 513},  # 1026 bytes of UTF-8
            {"Id": "also", "MessageBody": "y"},
        ]
    )
    assert [r.id for r in result.successful] == ["fits", "also"]
    assert [(f.id, f.code) for f in result.failed] == [("over", "InvalidParameterValue")]
    assert "1026" in str(result.failed[0]) and "1024" in str(result.failed[0])
    result = q.send_message_batch([{"Id": "bad", "MessageBody": "bad \x00 char"}, {"Id": "good", "MessageBody": "z"}])
    assert [r.id for r in result.successful] == ["good"]
    assert [(f.id, f.code) for f in result.failed] == [("bad", "InvalidMessageContents")]
    assert sorted(m.body for m in q.receive_message(max_number_of_messages=10)) == ["x" * 1024, "y", "z"]


def test_send_batch_entries_keep_their_own_attributes_with_or_without_any(queue):
    # A batch without attributes is stored by a statement that leaves the column out; one with
    # some stores each row's own, None where an entry has none.
    queue.send_message_batch([{"Id": f"p{i}", "MessageBody": f"plain {i}"} for i in range(3)])
    queue.send_message_batch(
        [
            {"Id": "a", "MessageBody": "plain a"},
            {"Id": "b", "MessageBody": "with b", "MessageAttributes": {"k": {"DataType": "String", "StringValue": "vb"}}},
            {"Id": "c", "MessageBody": "plain c"},
        ]
    )
    got = {m.body: m for m in queue.receive_message(max_number_of_messages=10, message_attribute_names=["All"])}
    assert sorted(got) == ["plain 0", "plain 1", "plain 2", "plain a", "plain c", "with b"]
    assert {body: {k: v.string_value for k, v in m.message_attributes.items()} for body, m in got.items()} == {
        "plain 0": {},
        "plain 1": {},
        "plain 2": {},
        "plain a": {},
        "plain c": {},
        "with b": {"k": "vb"},
    }
    assert got["plain a"].md5_of_message_attributes is None and got["with b"].md5_of_message_attributes is not None


# ------------------------------------------------------------------ receiving


def test_receive_returns_at_most_max_number_of_messages(queue):
    for i in range(15):
        queue.send_message(f"m{i}")
    assert len(queue.receive_message()) == 1
    assert len(queue.receive_message(max_number_of_messages=10)) == 10
    assert len(queue.receive_message(max_number_of_messages=10)) == 4
    assert queue.receive_message(max_number_of_messages=10) == []


def test_receive_visibility_timeout_overrides_the_queue_for_that_receive_only(db, clock):
    q = db.create_queue("override", visibility_timeout=30)
    q.send_message("x")
    [first] = q.receive_message(visibility_timeout=5)
    clock.advance(5)
    [second] = q.receive_message()
    assert second.message_id == first.message_id
    clock.advance(29.999)
    assert q.receive_message() == []
    clock.advance(0.001)
    assert len(q.receive_message()) == 1


def test_a_zero_visibility_timeout_leaves_the_message_visible(queue):
    queue.send_message("x")
    [a] = queue.receive_message(visibility_timeout=0)
    [b] = queue.receive_message(visibility_timeout=0)
    assert a.message_id == b.message_id and b.receive_count == 2


def test_system_attributes_are_returned_only_on_request(queue, clock, db):
    sent_at = clock.now_ms()
    queue.send_message("x")
    clock.advance(2)
    [msg] = queue.receive_message()
    assert msg.attributes == {}
    msg.change_visibility(0)
    clock.advance(1)
    [msg] = queue.receive_message(message_system_attribute_names=["All"])
    assert msg.attributes == {
        "ApproximateReceiveCount": "2",
        "ApproximateFirstReceiveTimestamp": str(sent_at + 2000),
        "SentTimestamp": str(sent_at),
        "SenderId": db.sender_id,
    }
    msg.change_visibility(0)
    [msg] = queue.receive_message(message_system_attribute_names=["SentTimestamp"])
    assert msg.attributes == {"SentTimestamp": str(sent_at)}
    assert (msg.sent_timestamp, msg.first_receive_timestamp, msg.receive_count) == (sent_at, sent_at + 2000, 3)


def test_an_unknown_system_attribute_name_is_refused(queue):
    queue.send_message("x")
    with pytest.raises(InvalidAttributeName) as err:
        queue.receive_message(message_system_attribute_names=["Bogus"])
    assert "Bogus" in str(err.value)
    # The refused receive claimed nothing.
    assert len(queue.receive_message()) == 1


# ------------------------------------------------------------------ delete and visibility


def test_delete_removes_the_message_for_good(queue, clock):
    queue.send_message("x")
    [msg] = queue.receive_message(visibility_timeout=1)
    queue.delete_message(msg.receipt_handle)
    clock.advance(3600)
    assert queue.receive_message() == []
    assert queue.peek() == []


def test_delete_batch_reports_each_entry(queue):
    for i in range(3):
        queue.send_message(f"m{i}")
    msgs = queue.receive_message(max_number_of_messages=3)
    result = queue.delete_message_batch(
        [
            {"Id": "a", "ReceiptHandle": msgs[0].receipt_handle},
            {"Id": "bad", "ReceiptHandle": "forged"},
            {"Id": "c", "ReceiptHandle": msgs[2].receipt_handle},
        ]
    )
    assert result.successful == [{"Id": "a"}, {"Id": "c"}]
    assert [(f.id, f.code) for f in result.failed] == [("bad", "ReceiptHandleIsInvalid")]
    assert [m.message_id for m in queue.peek()] == [msgs[1].message_id]


def test_delete_batch_with_a_superseded_handle_deletes_the_others_and_keeps_that_message(queue, clock):
    for i in range(3):
        queue.send_message(f"m{i}")
    first = queue.receive_message(max_number_of_messages=3, visibility_timeout=5)
    clock.advance(6)
    again = {m.message_id: m for m in queue.receive_message(max_number_of_messages=3, visibility_timeout=30)}
    newest = [again[m.message_id].receipt_handle for m in first]
    result = queue.delete_message_batch(
        [
            {"Id": "new0", "ReceiptHandle": newest[0]},
            {"Id": "old1", "ReceiptHandle": first[1].receipt_handle},
            {"Id": "new2", "ReceiptHandle": newest[2]},
            {"Id": "twice2", "ReceiptHandle": newest[2]},
        ]
    )
    assert result.successful == [{"Id": "new0"}, {"Id": "new2"}, {"Id": "twice2"}]
    assert [(f.id, f.code) for f in result.failed] == [("old1", "ReceiptHandleIsInvalid")]
    assert [m.message_id for m in queue.peek()] == [first[1].message_id]


def test_delete_batch_of_one_receives_handles_deletes_those_messages_and_only_those(queue):
    for i in range(5):
        queue.send_message(f"m{i}")
    taken = queue.receive_message(max_number_of_messages=3)
    result = queue.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(taken)])
    assert result.successful == [{"Id": "d0"}, {"Id": "d1"}, {"Id": "d2"}] and result.failed == []
    left = {m.message_id for m in queue.peek()}
    assert len(left) == 2 and not left & {m.message_id for m in taken}


def test_delete_batch_of_one_receives_handles_with_one_superseded_keeps_that_message(queue, clock):
    for i in range(3):
        queue.send_message(f"m{i}")
    first = queue.receive_message(max_number_of_messages=3, visibility_timeout=5)
    clock.advance(6)
    [again] = queue.receive_message(max_number_of_messages=1, visibility_timeout=30)  # supersedes one handle
    entries = [{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(first)]
    result = queue.delete_message_batch(entries)
    superseded = next(e["Id"] for e, m in zip(entries, first) if m.message_id == again.message_id)
    assert [(f.id, f.code) for f in result.failed] == [(superseded, "ReceiptHandleIsInvalid")]
    assert sorted(s["Id"] for s in result.successful) == sorted(e["Id"] for e in entries if e["Id"] != superseded)
    assert [m.message_id for m in queue.peek()] == [again.message_id]


def test_delete_batch_of_one_receives_handles_repeated_or_already_deleted_succeeds_for_each(queue):
    for i in range(3):
        queue.send_message(f"m{i}")
    taken = queue.receive_message(max_number_of_messages=3)
    queue.delete_message(taken[0].receipt_handle)
    handles = [m.receipt_handle for m in taken] + [taken[1].receipt_handle]
    result = queue.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": h} for i, h in enumerate(handles)])
    assert result.successful == [{"Id": f"d{i}"} for i in range(4)] and result.failed == []
    assert queue.peek() == []


def test_handles_received_before_their_queue_was_deleted_find_no_queue_and_a_new_queue_of_the_name_refuses_them(db, clock):
    q = db.create_queue("again")
    q.send_message_batch([{"Id": "a", "MessageBody": "a"}, {"Id": "b", "MessageBody": "b"}])
    taken = q.receive_message(max_number_of_messages=2)
    entries = [{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(taken)]
    db.delete_queue(q.url)
    with pytest.raises(QueueDoesNotExist):
        q.delete_message(taken[0].receipt_handle)
    with pytest.raises(QueueDoesNotExist):
        q.delete_message_batch(entries)
    clock.advance(60)
    again = db.create_queue("again")
    again.send_message("new")
    [fresh] = again.receive_message()
    with pytest.raises(ReceiptHandleIsInvalid):
        again.delete_message(taken[0].receipt_handle)
    result = again.delete_message_batch(entries)
    assert [(f.id, f.code) for f in result.failed] == [("d0", "ReceiptHandleIsInvalid"), ("d1", "ReceiptHandleIsInvalid")]
    assert [m.message_id for m in again.peek()] == [fresh.message_id]


def test_a_claim_whose_group_of_writes_rolled_back_vouches_for_no_delete_through_its_queue(db):
    # A queue whose creation rolled back leaves its id to the next queue created: the handles
    # of that queue's messages must not delete through the name of the one that never was.
    group = db.store.begin_group()
    gone = db.create_queue("gone")
    gone.send_message("x")
    gone.receive_message()
    group.broken = True  # as a failed write inside the group leaves it
    with pytest.raises(DatabaseError):
        db.store.end_group(group)
    other = db.create_queue("other")
    other.send_message("y")
    [theirs] = other.receive_message()
    with pytest.raises(QueueDoesNotExist):
        gone.delete_message(theirs.receipt_handle)
    with pytest.raises(QueueDoesNotExist):
        gone.delete_message_batch([{"Id": "a", "ReceiptHandle": theirs.receipt_handle}])
    assert other.get_queue_attributes(["ApproximateNumberOfMessagesNotVisible"]) == {"ApproximateNumberOfMessagesNotVisible": "1"}


def test_a_delete_by_this_process_handles_still_deletes_after_another_connection_changed_the_queue(db, clock):
    q = db.create_queue("shared")
    q.send_message_batch([{"Id": str(i), "MessageBody": str(i)} for i in range(3)])
    taken = q.receive_message(max_number_of_messages=3)
    other = sqsqlite.connect(db.path, clock=clock)
    try:
        other.queue("shared").set_queue_attributes({"VisibilityTimeout": "5"})
    finally:
        other.close()
    q.delete_message(taken[0].receipt_handle)
    result = q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(taken[1:])])
    assert result.failed == [] and q.peek() == []
    assert q.get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "5"}


def test_delete_batch_of_handles_from_two_receives_deletes_them_all(queue):
    for i in range(4):
        queue.send_message(f"m{i}")
    taken = queue.receive_message(max_number_of_messages=2) + queue.receive_message(max_number_of_messages=2)
    result = queue.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": m.receipt_handle} for i, m in enumerate(taken)])
    assert result.successful == [{"Id": f"d{i}"} for i in range(4)] and result.failed == []
    assert queue.peek() == []


def test_a_batch_delete_takes_received_messages_for_their_handles_without_making_the_texts(queue, db):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(5)])
    taken = queue.receive_message(max_number_of_messages=3)
    result = queue.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": m} for i, m in enumerate(taken)])
    assert result.successful == [{"Id": "d0"}, {"Id": "d1"}, {"Id": "d2"}] and result.failed == []
    assert not db.handles._issued  # deleted by their claims: no handle's text was made
    left = {m.message_id for m in queue.peek()}
    assert len(left) == 2 and not left & {m.message_id for m in taken}


def test_a_batch_delete_of_messages_refuses_a_superseded_one_and_deletes_the_rest(queue, clock):
    for i in range(3):
        queue.send_message(f"m{i}")
    first = queue.receive_message(max_number_of_messages=3, visibility_timeout=5)
    clock.advance(6)
    [again] = queue.receive_message(max_number_of_messages=1, visibility_timeout=30)
    result = queue.delete_message_batch([{"Id": f"d{i}", "ReceiptHandle": m} for i, m in enumerate(first)])
    superseded = next(f"d{i}" for i, m in enumerate(first) if m.message_id == again.message_id)
    assert [(f.id, f.code) for f in result.failed] == [(superseded, "ReceiptHandleIsInvalid")]
    assert "received again" in result.failed[0].hint
    assert len(result.successful) == 2
    assert [m.message_id for m in queue.peek()] == [again.message_id]


def test_a_batch_delete_refuses_a_message_never_received_or_detached_and_deletes_the_rest(queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    peeked = queue.peek()[0]
    received = queue.receive_message(max_number_of_messages=3)
    detached = dataclasses.replace(received[0], queue=None)
    entries = [{"Id": "peeked", "ReceiptHandle": peeked}, {"Id": "detached", "ReceiptHandle": detached}]
    entries += [{"Id": f"d{i}", "ReceiptHandle": m} for i, m in enumerate(received[1:])]
    result = queue.delete_message_batch(entries)
    assert [(f.id, f.code) for f in result.failed] == [("peeked", "ReceiptHandleIsInvalid"), ("detached", "ReceiptHandleIsInvalid")]
    with pytest.raises(ReceiptHandleIsInvalid) as refused:
        queue.delete_message(peeked)
    assert {f.message for f in result.failed} == {refused.value.message}
    assert result.successful == [{"Id": "d0"}, {"Id": "d1"}]
    assert [m.message_id for m in queue.peek("in-flight")] == [received[0].message_id]


def test_a_batch_delete_takes_messages_and_handle_texts_together(queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(4)])
    a, b, c, d = queue.receive_message(max_number_of_messages=4)
    entries = [{"Id": "a", "ReceiptHandle": a}, {"Id": "b", "ReceiptHandle": b.receipt_handle}, {"Id": "c", "ReceiptHandle": c}]
    result = queue.delete_message_batch(entries)
    assert result.successful == [{"Id": "a"}, {"Id": "b"}, {"Id": "c"}] and result.failed == []
    assert [m.message_id for m in queue.peek("in-flight")] == [d.message_id]


@pytest.mark.parametrize("fifo", [False, True])
def test_a_batch_delete_refuses_another_queues_message_as_it_refuses_its_handle(db, fifo):
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
    suffix, group = (".fifo", {"message_group_id": "g"}) if fifo else ("", {})
    one, other = db.create_queue("one" + suffix, attributes), db.create_queue("other" + suffix, attributes)
    one.send_message("x", **group)
    other.send_message("y", **group)
    [x] = one.receive_message()
    [y] = other.receive_message()
    result = one.delete_message_batch([{"Id": "x", "ReceiptHandle": x}, {"Id": "y", "ReceiptHandle": y}])
    assert result.successful == [{"Id": "x"}]
    assert [(f.id, f.code) for f in result.failed] == [("y", "ReceiptHandleIsInvalid")]
    assert "another queue" in result.failed[0].hint
    assert one.peek() == [] and [m.body for m in other.peek("in-flight")] == ["y"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    plan=st.lists(st.tuples(st.booleans(), st.sampled_from(["in flight", "received again", "deleted"])), min_size=1, max_size=10),
    fifo=st.booleans(),
)
def test_a_batch_delete_decides_each_message_as_it_decides_its_handle(tmp_path_factory, plan, fifo):
    """Each entry given as the received message or as its handle's text, whatever became of the
    message since: the same outcome, entry by entry, as a batch of texts on a twin queue."""
    clock = sqsqlite.ManualClock()
    db = sqsqlite.connect(str(tmp_path_factory.mktemp("twins") / "t.db"), clock=clock)
    try:
        outcomes = []
        for name, as_message in (("texts", lambda i: False), ("mixed", lambda i: plan[i][0])):
            attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true"} if fifo else {}
            q = db.create_queue(name + (".fifo" if fifo else ""), attributes)
            for i in range(len(plan)):
                q.send_message(f"m{i}", **({"message_group_id": f"g{i}"} if fifo else {}))
            got = {m.body: m for m in q.receive_message(max_number_of_messages=10, visibility_timeout=5)}
            held = [got[f"m{i}"] for i in range(len(plan))]
            for m, (_, state) in zip(held, plan):
                if state == "in flight":
                    m.change_visibility(30)
                elif state == "deleted":
                    q.delete_message(m)
            clock.advance(6)  # the leases left at 5 s end: those messages are received again
            again = q.receive_message(max_number_of_messages=10, visibility_timeout=30)
            assert sorted(m.body for m in again) == sorted(f"m{i}" for i, (_, state) in enumerate(plan) if state == "received again")
            entries = [{"Id": f"e{i}", "ReceiptHandle": m if as_message(i) else m.receipt_handle} for i, m in enumerate(held)]
            result = q.delete_message_batch(entries)
            codes = {f.id: f.code for f in result.failed}
            outcomes.append(([codes.get(f"e{i}", "ok") for i in range(len(plan))], sorted(m.body for m in q.peek())))
        assert outcomes[0] == outcomes[1]
    finally:
        db.close()


def test_a_fifo_batch_delete_of_messages_lets_their_groups_go_on(db):
    q = db.create_queue("jobs.fifo", {"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    for body, group in (("a", "g"), ("b", "h"), ("a2", "g"), ("b2", "h")):
        q.send_message(body, message_group_id=group)
    taken = [q.receive_message()[0], q.receive_message()[0]]
    assert sorted(m.body for m in taken) == ["a", "b"] and q.receive_message() == []  # both groups wait
    result = q.delete_message_batch([{"Id": m.body, "ReceiptHandle": m} for m in taken])
    assert result.failed == []
    assert not db.handles._issued  # deleted by their claims: no handle's text was made
    assert sorted(m.body for m in q.receive_message(max_number_of_messages=10)) == ["a2", "b2"]


def test_a_fifo_batch_delete_refuses_a_message_of_another_databases_queue_that_names_a_row_it_deletes(tmp_path):
    """Each file's first queue and first message have the same ids: the other file's message must
    not pass for deleted because this batch deleted this file's row of that id."""
    clock = sqsqlite.ManualClock()
    attributes = {"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "30"}
    one, two = (sqsqlite.connect(str(tmp_path / name), clock=clock) for name in ("one.db", "two.db"))
    try:
        mine, theirs = (db.create_queue("jobs.fifo", attributes) for db in (one, two))
        mine.send_message("in one.db", message_group_id="g")
        theirs.send_message("in two.db", message_group_id="g")
        [m1], [m2] = mine.receive_message(), theirs.receive_message()
        result = mine.delete_message_batch([{"Id": "mine", "ReceiptHandle": m1}, {"Id": "theirs", "ReceiptHandle": m2}])
        assert result.successful == [{"Id": "mine"}]
        assert [(f.id, f.code) for f in result.failed] == [("theirs", "ReceiptHandleIsInvalid")]
        clock.advance(31)
        assert [m.body for m in theirs.receive_message()] == ["in two.db"]
    finally:
        one.close()
        two.close()


def test_change_visibility_batch_reports_each_entry_and_applies_the_good_ones(queue, clock):
    for i in range(3):
        queue.send_message(f"m{i}")
    msgs = queue.receive_message(max_number_of_messages=3, visibility_timeout=100)
    result = queue.change_message_visibility_batch(
        [
            {"Id": "zero", "ReceiptHandle": msgs[0].receipt_handle, "VisibilityTimeout": 0},
            {"Id": "toolong", "ReceiptHandle": msgs[1].receipt_handle, "VisibilityTimeout": 43201},
            {"Id": "ten", "ReceiptHandle": msgs[2].receipt_handle, "VisibilityTimeout": 10},
        ]
    )
    assert result.successful == [{"Id": "zero"}, {"Id": "ten"}]
    assert [(f.id, f.code) for f in result.failed] == [("toolong", "InvalidParameterValue")]
    assert "43201" in str(result.failed[0])
    assert [m.message_id for m in queue.receive_message(max_number_of_messages=10, visibility_timeout=1000)] == [msgs[0].message_id]
    clock.advance(10)
    assert [m.message_id for m in queue.receive_message(max_number_of_messages=10, visibility_timeout=1000)] == [msgs[2].message_id]
    clock.advance(90)
    assert [m.message_id for m in queue.receive_message(max_number_of_messages=10)] == [msgs[1].message_id]


def test_a_change_visibility_batch_entry_without_a_timeout_fails_alone_as_a_missing_parameter(queue):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(2)])
    a, b = queue.receive_message(max_number_of_messages=2, visibility_timeout=100)
    result = queue.change_message_visibility_batch(
        [{"Id": "none", "ReceiptHandle": a.receipt_handle}, {"Id": "zero", "ReceiptHandle": b.receipt_handle, "VisibilityTimeout": 0}]
    )
    assert result.successful == [{"Id": "zero"}]
    [failed] = result.failed
    assert (failed.id, failed.code, failed.message) == (
        "none",
        "MissingParameter",
        "The request must contain the parameter VisibilityTimeout.",
    )
    assert [m.body for m in queue.peek("in-flight")] == [a.body]


def test_message_helpers_act_with_their_own_receipt_handle(queue):
    queue.send_message("x")
    [msg] = queue.receive_message()
    msg.change_visibility(0)
    [again] = queue.receive_message()
    with pytest.raises(ReceiptHandleIsInvalid):
        msg.delete()
    again.delete()
    assert queue.peek() == []


def test_a_message_deleted_without_its_handle_read_never_makes_the_handle(queue, db):
    queue.send_message_batch([{"Id": str(i), "MessageBody": f"m{i}"} for i in range(3)])
    first, second, third = queue.receive_message(max_number_of_messages=3)
    first.delete()
    queue.delete_message(second)  # the received message stands for its handle
    assert not db.handles._issued  # no handle's text was made, so none is remembered
    handle = third.receipt_handle
    assert handle == third.receipt_handle and handle in db.handles._issued  # made once, when first read
    third.delete()
    assert queue.peek() == [] and not db.handles._issued


def test_a_message_given_another_handle_acts_with_that_handle(queue):
    queue.send_message("x")
    [msg] = queue.receive_message()
    good = msg.receipt_handle
    msg.receipt_handle = good[:-1] + ("0" if good[-1] != "0" else "1")
    with pytest.raises(ReceiptHandleIsInvalid):
        msg.delete()
    msg.receipt_handle = good
    msg.delete()
    assert queue.peek() == []


def test_two_copies_of_one_received_message_are_equal_whether_or_not_either_handle_was_read(queue):
    queue.send_message("x")
    [msg] = queue.receive_message()
    copy = dataclasses.replace(msg)
    assert copy.receipt_handle  # the copy's text made, the original's not
    assert copy == msg and msg.receipt_handle == copy.receipt_handle
    assert dataclasses.replace(msg, claim=None) != msg  # a message's claim is part of it


def test_a_received_message_detached_from_its_queue_has_no_handle_and_acts_on_nothing(queue):
    queue.send_message("x")
    [msg] = queue.receive_message()
    detached = dataclasses.replace(msg, queue=None)
    assert detached.receipt_handle is None  # no queue to make it with
    for act in (detached.delete, lambda: detached.change_visibility(0), lambda: queue.delete_message(detached)):
        with pytest.raises(ReceiptHandleIsInvalid):
            act()
    assert [m.body for m in queue.peek("in-flight")] == ["x"]


def test_a_fifo_message_deleted_without_its_handle_read_lets_its_group_go_on(db):
    q = db.create_queue("jobs.fifo", {"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    q.send_message("a", message_group_id="g")
    q.send_message("b", message_group_id="g")
    [a] = q.receive_message()
    assert q.receive_message() == []  # the group waits for a
    a.delete()
    assert [m.body for m in q.receive_message()] == ["b"]


def test_a_peeked_message_has_no_handle_and_cannot_be_deleted_through_it(queue):
    queue.send_message("x")
    [peeked] = queue.peek()
    assert peeked.receipt_handle is None
    with pytest.raises(ReceiptHandleIsInvalid):
        peeked.delete()
    with pytest.raises(ReceiptHandleIsInvalid):
        queue.delete_message(peeked)
    with pytest.raises(ReceiptHandleIsInvalid):
        peeked.change_visibility(0)
    assert queue.receive_message()[0].receive_count == 1


def test_asking_for_aws_trace_header_on_receive_is_accepted_and_returns_nothing(queue):
    queue.send_message("traced")
    [msg] = queue.receive_message(message_system_attribute_names=["AWSTraceHeader", "SentTimestamp"])
    assert set(msg.attributes) == {"SentTimestamp"}


def test_message_ids_are_distinct_canonical_version_4_uuids_alone_and_in_batches(queue):
    # A batch's ids are made together (one random buffer, cut apart): every size, 1 to 10.
    ids = [queue.send_message("one").message_id for _ in range(50)]
    for _ in range(50):
        result = queue.send_message_batch([{"Id": str(i), "MessageBody": "b"} for i in range(10)])
        ids += [r.message_id for r in result.successful]
    for n in range(1, 11):
        ids += [r.message_id for r in queue.send_message_batch([{"Id": str(i), "MessageBody": "b"} for i in range(n)]).successful]
    assert len(set(ids)) == len(ids) == 605
    for text in ids:
        u = uuid.UUID(text)
        assert str(u) == text and u.version == 4 and u.variant == uuid.RFC_4122


def test_a_fifo_queues_export_is_refused_by_a_standard_queue_as_its_send_would_refuse_it(db):
    fifo = db.create_queue("orders.fifo", attributes={"FifoQueue": "true", "ContentBasedDeduplication": "true"})
    fifo.send_message("grouped", message_group_id="g1")
    plain = db.create_queue("plain")
    with pytest.raises(
        InvalidExportRecord,
        match=r"record 1 has MessageDeduplicationId '[0-9a-f]+\.\.\.; it is for FIFO queues only, and 'plain' is a standard queue\.",
    ):
        plain.import_messages(fifo.export_messages())
    assert plain.peek() == []


@pytest.mark.parametrize("scope", ["queue", "messageGroup"])
def test_a_fifo_message_imported_within_its_deduplication_interval_keeps_deduplicating_its_id(db, clock, scope):
    attributes = {
        "FifoQueue": "true",
        "DeduplicationScope": scope,
        "FifoThroughputLimit": "perMessageGroupId" if scope == "messageGroup" else "perQueue",
    }
    source = db.create_queue("source.fifo", attributes=attributes)
    sent = source.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42")
    clock.advance(120)
    target = db.create_queue("target.fifo", attributes=attributes)
    assert target.import_messages(source.export_messages()) == 1
    retry = target.send_message(
        "charge 42", message_group_id="g", message_deduplication_id="order-42"
    )  # a producer's retry after the cut-over
    assert retry.message_id == sent.message_id  # dropped, as the source queue would have dropped it
    assert [m.body for m in target.peek()] == ["charge 42"]
    clock.advance(180)  # five minutes after the original send: the id is free again
    assert target.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42").message_id != sent.message_id
    old = db.create_queue("late.fifo", attributes=attributes)
    assert old.import_messages(source.export_messages()) == 1  # imported after the interval: nothing to keep
    assert old.send_message("charge 42", message_group_id="g", message_deduplication_id="order-42").message_id != sent.message_id


def test_an_import_takes_any_mapping_not_only_dicts(db):
    from collections import ChainMap
    from types import MappingProxyType

    q = db.create_queue("restore")
    record = {
        "MessageId": str(uuid.uuid4()),
        "Body": "kept",
        "SentTimestamp": db.now(),
        "MessageAttributes": MappingProxyType({"a": MappingProxyType({"DataType": "String", "StringValue": "x"})}),
    }
    assert q.import_messages([MappingProxyType(record), ChainMap({"Body": "also"}, record)]) == 2
    assert sorted(m.body for m in q.receive_message(max_number_of_messages=10)) == ["also", "kept"]


def test_an_import_refuses_a_dead_letter_source_of_the_other_kind(db):
    q = db.create_queue("dlq")
    record = {
        "MessageId": str(uuid.uuid4()),
        "Body": "x",
        "SentTimestamp": db.now(),
        "DeadLetterQueueSourceArn": "arn:aws:sqs:us-east-1:000000000000:orders.fifo",
    }
    with pytest.raises(
        InvalidExportRecord, match="record 1 has DeadLetterQueueSourceArn .*orders.fifo', a FIFO queue's; 'dlq' is a standard queue"
    ):
        q.import_messages([record])
    assert q.peek() == []


def test_a_standard_queues_older_fifo_fields_are_left_out_of_its_export_so_it_imports_again(db):
    q = db.create_queue("old")
    q.send_message("from an older import")
    with db.store.write() as tx:  # what an older sqsqlite's import could leave on a standard row
        tx.c.execute("UPDATE messages SET dedup_id = 'd', sequence_number = 7")
    [record] = q.export_messages()
    assert record["MessageDeduplicationId"] is None and record["SequenceNumber"] is None
    assert db.create_queue("again").import_messages([record]) == 1


def test_a_standard_queues_grouped_messages_come_back_from_export_with_their_group(db):
    source = db.create_queue("tenants")
    source.send_message("for tenant 1", message_group_id="tenant-1")
    copy = db.create_queue("copy")
    assert copy.import_messages(source.export_messages()) == 1
    [m] = copy.receive_message(message_system_attribute_names=["MessageGroupId"])
    assert m.message_group_id == m.attributes["MessageGroupId"] == "tenant-1"


def test_an_import_checks_every_record_before_it_writes_any_and_names_the_bad_one(db):
    q = db.create_queue("restore")
    good = {"MessageId": str(uuid.uuid4()).upper(), "Body": "kept", "SentTimestamp": db.now()}
    refused = [
        ({"MessageId": good["MessageId"]}, InvalidExportRecord, "record 2 is not an exported message (no Body, SentTimestamp)."),
        (
            {**good, "SentTimestamp": "1700000000000"},
            InvalidExportRecord,
            "record 2 has SentTimestamp '1700000000000'; it must be an integer",
        ),
        (
            {**good, "ApproximateReceiveCount": True},
            InvalidExportRecord,
            "record 2 has ApproximateReceiveCount True; it must be an integer",
        ),
        (
            {**good, "VisibleAt": 2**63},
            InvalidExportRecord,
            "record 2 has VisibleAt 9223372036854775808; it must be an integer from 0 to 9223372036854775807",
        ),
        ({**good, "MessageAttributes": {"a": 5}}, InvalidExportRecord, "record 2 has message attribute 'a' 5; it must be an object"),
        ({**good, "Colour": "red"}, InvalidExportRecord, "record 2 has unknown field Colour;"),
        (7, InvalidExportRecord, "record 2 is not an exported message (no MessageId, Body, SentTimestamp)."),
        ({**good, "MessageId": "nope"}, InvalidParameterValue, "record 2: MessageId 'nope' is not a UUID"),
        ({**good, "Body": "\x00"}, InvalidMessageContents, "record 2: "),
    ]
    for bad, error, message in refused:
        with pytest.raises(error) as caught:
            q.import_messages([good, bad])
        assert caught.value.code == error.code and caught.value.message.startswith(message), caught.value.message
    assert q.peek() == []
    assert q.import_messages([good, {**good, "MessageAttributes": {"b": {"DataType": "Binary", "BinaryValue": "AAE="}}}]) == 2
    [first, second] = q.export_messages()
    assert first["MessageId"] == second["MessageId"] == good["MessageId"].lower()  # stored canonical
    assert second["MessageAttributes"] == {"b": {"DataType": "Binary", "BinaryValue": "AAE="}}


def test_an_aws_trace_header_is_kept_with_the_message_and_out_of_its_message_attributes(db):
    q = db.create_queue("traced")
    trace = {"AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-5759e988-bd862e3fe1be46a994272793"}}
    q.send_message("x", message_attributes={"k": "v"}, message_system_attributes=trace)
    [msg] = q.receive_message(message_attribute_names=["All"], message_system_attribute_names=["All"])
    assert msg.attributes["AWSTraceHeader"] == "Root=1-5759e988-bd862e3fe1be46a994272793"
    assert set(msg.message_attributes) == {"k"}
    with pytest.raises(InvalidParameterValue, match="Message system attribute name 'Other' is invalid."):
        q.send_message("x", message_system_attributes={"Other": {"DataType": "String", "StringValue": "v"}})


_FIPS_LIKE = """
import hashlib, sys
_md5, _blake2b = hashlib.md5, hashlib.blake2b
def refusing(real):
    # What hashlib does where OpenSSL runs in FIPS mode: MD5 and BLAKE2b only for non-security uses.
    def digest(*args, usedforsecurity=True, **kwargs):
        if usedforsecurity:
            raise ValueError("[digital envelope routines] unsupported")
        return real(*args, usedforsecurity=usedforsecurity, **kwargs)
    return digest
hashlib.md5, hashlib.blake2b = refusing(_md5), refusing(_blake2b)
sys.modules["_md5"] = None  # FIPS builds of Python leave out their own MD5
import sqsqlite
db = sqsqlite.connect(sys.argv[1])
q = db.create_queue("q")
assert q.receive_message() == [] and q.receive_message(max_number_of_messages=10) == []
small = q.send_message("small", message_attributes={"a": "b"})
large = q.send_message("x" * 5000)
assert small.md5_of_message_body == "SMALL" and small.md5_of_message_attributes
assert large.md5_of_message_body == "LARGE"
q.send_message_batch([{"Id": str(i), "MessageBody": f"b{i}"} for i in range(4)])
got = q.receive_message(max_number_of_messages=10)
assert len(got) == 6 and {m.md5_of_body for m in got if m.body == "small"} == {"SMALL"}
assert q.receive_message(max_number_of_messages=10) == []
got[0].change_visibility(60)
got[1].delete()
assert not q.delete_message_batch([{"Id": str(i), "ReceiptHandle": m.receipt_handle} for i, m in enumerate(got[2:5])]).failed
print(got[5].receipt_handle)  # left in flight, for a process with BLAKE2b to delete
"""


def test_the_lifecycle_works_where_openssl_refuses_md5_and_blake2b_for_security_uses(tmp_path):
    import subprocess
    import sys

    import sqsqlite

    path = str(tmp_path / "f.db")
    script = _FIPS_LIKE.replace("SMALL", hashlib.md5(b"small").hexdigest()).replace("LARGE", hashlib.md5(b"x" * 5000).hexdigest())
    done = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    handle = done.stdout.strip()
    assert bytes.fromhex(handle)[0] == 3  # HMAC-SHA256, not BLAKE2b
    with sqsqlite.connect(path) as db:
        q = db.queue("q")
        q.delete_message(handle)  # checked by a process that has BLAKE2b
        assert len(q.peek(limit=10)) == 1  # the one whose visibility changed, still in flight
