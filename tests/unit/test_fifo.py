"""FIFO queues, rule by rule (SPEC.md "FIFO queues"), every timing rule on a ManualClock."""

import hashlib
import json

import pytest

import sqsqlite
from sqsqlite import defaults as D
from sqsqlite import queries as Q
from sqsqlite.errors import (
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidParameterValue,
    MissingParameter,
    QueueAlreadyExists,
    QueueDoesNotExist,
)

DAY = 86_400


def make_fifo(db, name="jobs.fifo", **attributes):
    attrs = {"FifoQueue": "true", **{k: str(v) for k, v in attributes.items()}}
    return db.create_queue(name, attributes=attrs)


def counts(q):
    a = q.get_queue_attributes(
        ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
    )
    return (
        int(a["ApproximateNumberOfMessages"]),
        int(a["ApproximateNumberOfMessagesNotVisible"]),
        int(a["ApproximateNumberOfMessagesDelayed"]),
    )


def send(q, body, group="g", dedup=None):
    return q.send_message(body, message_group_id=group, message_deduplication_id=dedup or body)


def bodies(msgs):
    return [m.body for m in msgs]


def receive(q, n=10, **kw):
    return q.receive_message(max_number_of_messages=n, **kw)


@pytest.fixture
def fq(db):
    return make_fifo(db, VisibilityTimeout=30)


# ---------------------------------------------------------------- queue names and attributes


def test_a_fifo_queue_name_must_end_in_dot_fifo(db):
    with pytest.raises(InvalidParameterValue, match="name must end in .fifo; got 'jobs'"):
        db.create_queue("jobs", attributes={"FifoQueue": "true"})
    with pytest.raises(QueueDoesNotExist):
        db.queue("jobs")


@pytest.mark.parametrize("attrs", [{}, {"FifoQueue": "false"}])
def test_a_name_ending_in_dot_fifo_is_refused_for_a_standard_queue(db, attrs):
    with pytest.raises(InvalidParameterValue, match="'jobs.fifo'.*FifoQueue=true"):
        db.create_queue("jobs.fifo", attributes=attrs)
    with pytest.raises(QueueDoesNotExist):
        db.queue("jobs.fifo")


def test_the_fifo_suffix_counts_in_the_80_character_name_limit(db):
    make_fifo(db, "a" * 75 + ".fifo")
    with pytest.raises(InvalidParameterValue, match="1 to 80 characters"):
        make_fifo(db, "a" * 76 + ".fifo")


def test_a_fifo_queue_reports_its_fifo_attributes_with_their_defaults(db):
    q = make_fifo(db)
    attrs = q.get_queue_attributes(["All"])
    assert attrs["FifoQueue"] == "true"
    assert attrs["ContentBasedDeduplication"] == "false"
    assert attrs["DeduplicationScope"] == "queue"
    assert attrs["FifoThroughputLimit"] == "perQueue"
    assert q.fifo


@pytest.mark.parametrize("value", ["true", "false"])
def test_fifo_queue_can_be_set_only_at_creation_and_never_changed(db, value):
    q = make_fifo(db)
    if value == "true":
        q.set_queue_attributes({"FifoQueue": value})  # as SQS: saying what it is changes nothing
    else:
        with pytest.raises(InvalidAttributeValue, match="Modifying queue type is not supported"):
            q.set_queue_attributes({"FifoQueue": value})
    s = db.create_queue("plain")
    with pytest.raises(InvalidAttributeName, match="FifoQueue"):
        s.set_queue_attributes({"FifoQueue": value})
    assert q.get_queue_attributes(["FifoQueue"]) == {"FifoQueue": "true"}
    assert "FifoQueue" not in s.get_queue_attributes(["All"])


@pytest.mark.parametrize(
    "name,value",
    [("ContentBasedDeduplication", "true"), ("DeduplicationScope", "messageGroup"), ("FifoThroughputLimit", "perQueue")],
)
def test_fifo_only_attributes_are_refused_on_a_standard_queue(db, name, value):
    with pytest.raises(InvalidAttributeName, match=f"{name} is for FIFO queues only; queue 'plain'"):
        db.create_queue("plain", attributes={name: value})
    with pytest.raises(QueueDoesNotExist):
        db.queue("plain")
    s = db.create_queue("plain")
    with pytest.raises(InvalidAttributeName, match=f"{name} is for FIFO queues only"):
        s.set_queue_attributes({name: value})
    assert name not in s.get_queue_attributes(["All"])


@pytest.mark.parametrize(
    "name,value,allowed",
    [
        ("ContentBasedDeduplication", "yes", "true or false"),
        ("DeduplicationScope", "group", "queue, messageGroup"),
        ("FifoThroughputLimit", "perGroup", "perQueue, perMessageGroupId"),
        ("FifoQueue", "maybe", "true or false"),
    ],
)
def test_fifo_attribute_values_are_refused_in_sqs_words_with_the_value_and_the_choices_in_the_hint(db, name, value, allowed):
    with pytest.raises(InvalidAttributeValue) as err:
        make_fifo(db, **{name: value})
    assert err.value.message == f"Invalid value for the parameter {name}."  # SQS's text, never replaced
    assert err.value.hint == f"Invalid value '{value}' for {name}: must be {'' if allowed == 'true or false' else 'one of '}{allowed}."
    with pytest.raises(QueueDoesNotExist):
        db.queue("jobs.fifo")
    q = make_fifo(db)
    if name != "FifoQueue":
        with pytest.raises(InvalidAttributeValue) as err:
            q.set_queue_attributes({name: value})
        assert (err.value.message, err.value.hint) == (
            f"Invalid value for the parameter {name}.",
            f"Invalid value '{value}' for {name}: must be {'' if allowed == 'true or false' else 'one of '}{allowed}.",
        )
    assert q.get_queue_attributes(["All"])["DeduplicationScope"] == "queue"


def test_per_message_group_throughput_needs_message_group_deduplication_scope(db):
    # AWS documents: "The perMessageGroupId value is allowed only when the value for
    # DeduplicationScope is messageGroup." The refusal is SQS's InvalidAttributeValue text.
    said = (
        "Invalid value for the parameter FifoThroughputLimit.",
        "FifoThroughputLimit perMessageGroupId needs DeduplicationScope messageGroup.",
    )
    with pytest.raises(InvalidAttributeValue) as err:
        make_fifo(db, FifoThroughputLimit="perMessageGroupId")
    assert (err.value.message, err.value.hint) == said
    q = make_fifo(db, FifoThroughputLimit="perMessageGroupId", DeduplicationScope="messageGroup")
    with pytest.raises(InvalidAttributeValue) as err:
        q.set_queue_attributes({"DeduplicationScope": "queue"})
    assert (err.value.message, err.value.hint) == said
    attrs = q.get_queue_attributes(["DeduplicationScope", "FifoThroughputLimit"])
    assert attrs == {"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}


def test_the_other_fifo_attributes_can_be_changed_after_creation(db):
    q = make_fifo(db)
    q.set_queue_attributes(
        {"ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}
    )
    attrs = q.get_queue_attributes(["All"])
    assert (attrs["ContentBasedDeduplication"], attrs["DeduplicationScope"], attrs["FifoThroughputLimit"]) == (
        "true",
        "messageGroup",
        "perMessageGroupId",
    )


def test_creating_a_fifo_queue_again_is_idempotent_only_with_the_same_fifo_attributes(db):
    q = make_fifo(db, ContentBasedDeduplication="true")
    assert make_fifo(db, ContentBasedDeduplication="true") == q
    assert make_fifo(db) == q  # attributes not given are not compared, as in SQS
    with pytest.raises(QueueAlreadyExists, match="ContentBasedDeduplication is 'true', not 'false'"):
        make_fifo(db, ContentBasedDeduplication="false")


# ---------------------------------------------------------------- sending


def test_sending_to_a_fifo_queue_requires_a_message_group_id(fq):
    with pytest.raises(MissingParameter, match="MessageGroupId"):
        fq.send_message("x", message_deduplication_id="d")
    assert counts(fq) == (0, 0, 0)


def test_a_send_or_batch_entries_of_a_body_alone_are_refused_on_a_fifo_queue_for_want_of_a_group(fq):
    # A body alone is the standard send's short path; on a FIFO queue it must still be refused.
    with pytest.raises(MissingParameter, match="MessageGroupId"):
        fq.send_message("x")
    # SQS refuses the whole batch, not entry by entry.
    with pytest.raises(InvalidParameterValue, match="The request must contain the parameter MessageGroupId."):
        fq.send_message_batch([{"Id": "a", "MessageBody": "x"}, {"Id": "b", "MessageBody": "y"}])
    assert counts(fq) == (0, 0, 0)


@pytest.mark.parametrize("group", ["has space", "é", "x" * 129, ""])
def test_a_message_group_id_is_1_to_128_ascii_letters_digits_or_punctuation(fq, group):
    with pytest.raises((InvalidParameterValue, MissingParameter), match="MessageGroupId"):
        fq.send_message("x", message_group_id=group, message_deduplication_id="d")
    assert counts(fq) == (0, 0, 0)


def test_per_message_delay_seconds_is_refused_on_a_fifo_queue_but_zero_is_the_queues_delay(db, clock, fq):
    with pytest.raises(InvalidParameterValue, match="Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter"):
        fq.send_message("x", message_group_id="g", message_deduplication_id="d", delay_seconds=5)
    assert counts(fq) == (0, 0, 0)
    delayed = make_fifo(db, "delayed.fifo", DelaySeconds=2)
    delayed.send_message("x", message_group_id="g", message_deduplication_id="d", delay_seconds=0)
    assert counts(delayed) == (0, 0, 1)
    clock.advance(2)
    assert counts(delayed) == (1, 0, 0)


def test_a_batch_entry_with_delay_seconds_fails_alone_on_a_fifo_queue(fq):
    result = fq.send_message_batch(
        [
            {"Id": "a", "MessageBody": "a", "MessageGroupId": "g", "MessageDeduplicationId": "a"},
            {"Id": "b", "MessageBody": "b", "MessageGroupId": "g", "MessageDeduplicationId": "b", "DelaySeconds": 3},
            {"Id": "c", "MessageBody": "c", "MessageGroupId": "g", "MessageDeduplicationId": "c"},
        ]
    )
    assert [s.id for s in result.successful] == ["a", "c"]
    assert [(f.id, f.code) for f in result.failed] == [("b", "InvalidParameterValue")]
    assert bodies(receive(fq)) == ["a", "c"]


def test_the_queue_delay_seconds_delays_fifo_messages_and_keeps_their_order(db, clock):
    q = make_fifo(db, DelaySeconds=10)
    send(q, "1")
    clock.advance(4)
    send(q, "2")
    assert receive(q) == []
    assert counts(q) == (0, 0, 2)
    clock.advance(6)
    assert bodies(receive(q)) == ["1"]  # "2" is still delayed
    clock.advance(4)
    assert receive(q) == []  # "1" is in flight: "2" waits behind it
    assert counts(q) == (1, 1, 0)


def test_without_content_based_deduplication_a_send_needs_a_deduplication_id(fq):
    with pytest.raises(InvalidParameterValue, match="ContentBasedDeduplication enabled or MessageDeduplicationId"):
        fq.send_message("x", message_group_id="g")
    assert counts(fq) == (0, 0, 0)


def test_a_deduplication_id_is_refused_on_a_standard_queue(queue):
    with pytest.raises(InvalidParameterValue, match="MessageDeduplicationId is for FIFO queues only"):
        queue.send_message("x", message_deduplication_id="d")
    with pytest.raises(InvalidParameterValue, match="MessageDeduplicationId is for FIFO queues only"):
        queue.send_message("x", message_group_id="g", message_deduplication_id="d")
    assert counts(queue) == (0, 0, 0)


def test_a_standard_queue_takes_a_group_id_as_a_fair_queue_label_without_ordering(queue, clock):
    # SQS fair queues: a MessageGroupId on a standard queue names the tenant; it comes back on
    # receive and orders nothing (a group's later message is received while an earlier is in flight).
    first = queue.send_message("first", message_group_id="tenant-1")
    assert first.sequence_number is None
    result = queue.send_message_batch(
        [{"Id": "a", "MessageBody": "second", "MessageGroupId": "tenant-1"}, {"Id": "b", "MessageBody": "plain"}]
    )
    assert not result.failed
    got = {m.body: m for m in queue.receive_message(max_number_of_messages=1, message_system_attribute_names=["All"])}
    got.update({m.body: m for m in queue.receive_message(max_number_of_messages=10, message_system_attribute_names=["All"])})
    assert set(got) == {"first", "second", "plain"}
    for body in ("first", "second"):
        assert got[body].message_group_id == got[body].attributes["MessageGroupId"] == "tenant-1"
        assert got[body].sequence_number is None and "SequenceNumber" not in got[body].attributes
    assert got["plain"].message_group_id is None and "MessageGroupId" not in got["plain"].attributes
    with pytest.raises(InvalidParameterValue, match="Invalid MessageGroupId"):
        queue.send_message("x", message_group_id="bad group")


def test_a_fair_queues_group_survives_dead_lettering_and_redrive_and_never_becomes_a_fifo_head(db, clock):
    dlq = db.create_queue("fair-dlq")
    source = db.create_queue("fair", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})})
    source.send_message("poison", message_group_id="tenant-1")
    source.receive_message(visibility_timeout=0)
    assert source.receive_message() == []  # the second receive moved it
    [moved] = dlq.peek()
    assert moved.message_group_id == "tenant-1"
    db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    [back] = source.receive_message(message_system_attribute_names=["MessageGroupId"])
    assert back.body == "poison" and back.attributes["MessageGroupId"] == "tenant-1"
    # Heads are FIFO's: nothing on a standard queue is one, and the group index holds no row of it.
    conn = db.store.connection()
    assert conn.execute("SELECT count(*) FROM messages WHERE is_head = 1").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM messages INDEXED BY ix_messages_group WHERE sequence_number IS NOT NULL").fetchone()[0] == 0


# ---------------------------------------------------------------- deduplication


def test_a_duplicate_send_succeeds_returns_the_first_message_id_and_is_never_delivered(fq, clock):
    first = send(fq, "a", dedup="order-1")
    clock.advance(60)
    again = fq.send_message("a changed", message_group_id="g", message_deduplication_id="order-1")
    assert again.message_id == first.message_id
    assert again.sequence_number == first.sequence_number
    [msg] = receive(fq)
    assert msg.body == "a"
    msg.delete()
    clock.advance(60)
    # Still within 5 minutes of the first send: deduplicated even though the first was consumed.
    assert send(fq, "a", dedup="order-1").message_id == first.message_id
    assert receive(fq) == []
    assert counts(fq) == (0, 0, 0)


def test_the_deduplication_window_is_five_minutes_from_the_first_send(fq, clock):
    first = send(fq, "a", dedup="d")
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS - 0.001)
    assert send(fq, "a", dedup="d").message_id == first.message_id  # a duplicate does not restart the window
    clock.advance(0.001)
    later = send(fq, "a", dedup="d")
    assert later.message_id != first.message_id
    assert later.sequence_number > first.sequence_number
    assert [m.message_id for m in receive(fq)] == [first.message_id, later.message_id]


def test_a_send_after_the_window_starts_a_new_window_that_dedups_against_it(fq, clock):
    first = send(fq, "a", dedup="d")
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS)
    later = send(fq, "b", dedup="d")
    clock.advance(D.FIFO_DEDUP_WINDOW_SECONDS - 0.001)
    again = send(fq, "c", dedup="d")
    assert (
        (again.message_id, again.sequence_number) == (later.message_id, later.sequence_number) != (first.message_id, first.sequence_number)
    )
    assert [m.body for m in receive(fq)] == ["a", "b"]


def test_a_duplicate_takes_no_sequence_number_and_the_next_send_heads_its_emptied_group(fq):
    first = send(fq, "a", dedup="d1")
    send(fq, "a again", dedup="d1")
    second = send(fq, "b", dedup="d2")
    assert int(second.sequence_number) == int(first.sequence_number) + 1
    for m in receive(fq):
        m.delete()
    third = send(fq, "c", dedup="d3")
    [head] = receive(fq)  # the group emptied: its next message heads it and is receivable at once
    assert (head.body, head.sequence_number) == ("c", third.sequence_number)


def test_content_based_deduplication_uses_the_sha256_of_the_body_only(db, clock):
    q = make_fifo(db, ContentBasedDeduplication="true")
    attr = {"k": {"DataType": "String", "StringValue": "v"}}
    first = q.send_message("same body", message_group_id="g")
    assert q.send_message("same body", message_group_id="g", message_attributes=attr).message_id == first.message_id
    other = q.send_message("other body", message_group_id="g")
    assert other.message_id != first.message_id
    msgs = receive(q, message_system_attribute_names=["MessageDeduplicationId"])
    assert bodies(msgs) == ["same body", "other body"]
    assert msgs[0].attributes["MessageDeduplicationId"] == hashlib.sha256(b"same body").hexdigest()


def test_an_explicit_deduplication_id_overrides_content_based_deduplication(db):
    q = make_fifo(db, ContentBasedDeduplication="true")
    a = q.send_message("same", message_group_id="g", message_deduplication_id="1")
    b = q.send_message("same", message_group_id="g", message_deduplication_id="2")
    assert a.message_id != b.message_id
    assert [m.message_deduplication_id for m in receive(q)] == ["1", "2"]


def test_queue_scope_deduplicates_across_groups(fq):
    a = send(fq, "a", group="g1", dedup="d")
    assert send(fq, "b", group="g2", dedup="d").message_id == a.message_id
    assert bodies(receive(fq)) == ["a"]


def test_message_group_scope_deduplicates_within_each_group_only(db):
    q = make_fifo(db, DeduplicationScope="messageGroup")
    a = send(q, "a", group="g1", dedup="d")
    b = send(q, "b", group="g2", dedup="d")
    assert a.message_id != b.message_id
    assert send(q, "c", group="g1", dedup="d").message_id == a.message_id
    assert sorted(bodies(receive(q))) == ["a", "b"]


def test_duplicates_inside_one_batch_all_succeed_with_the_first_message_id(fq):
    result = fq.send_message_batch(
        [{"Id": str(i), "MessageBody": "x", "MessageGroupId": "g", "MessageDeduplicationId": "same"} for i in range(3)]
    )
    assert not result.failed
    assert len({s.message_id for s in result.successful}) == 1
    assert bodies(receive(fq)) == ["x"]


def drain_by_group(q):
    """Every message, received and deleted until none is left: each group's bodies in the order received."""
    groups: dict = {}
    while msgs := receive(q):
        for m in msgs:
            groups.setdefault(m.message_group_id, []).append(m.body)
            m.delete()
    return groups


@pytest.mark.parametrize("scope", ["queue", "messageGroup"])
def test_a_batch_sends_deduplicates_and_orders_exactly_as_its_entries_sent_one_at_a_time(db, scope):
    """One batch of mixed groups, repeats of its own entries, a repeat of an earlier send and a
    refused entry, beside the same entries sent one by one to a twin queue: the same results
    entry by entry, the same messages stored, each group in entry order behind what it held."""
    entries = [
        ("0", "a1", "a", "d1"),
        ("1", "b1", "b", "d2"),
        ("2", "a2", "a", "d1"),  # a repeat of entry 0 in either scope
        ("3", "b2", "b", "d1"),  # d1 from another group: a repeat in queue scope only
        ("4", "c1", "c", "old"),  # a repeat of the send before the batch
        ("5", "a3", "a", "d3"),
        ("6", "x" * 1025, "a", "d4"),  # over the queues' MaximumMessageSize: fails alone
        ("7", "b3", "b", "d2"),  # a repeat of entry 1
    ]
    queues = [make_fifo(db, f"{name}.fifo", DeduplicationScope=scope, MaximumMessageSize=1024) for name in ("batch", "single")]
    for q in queues:
        q.send_message("held", message_group_id="a", message_deduplication_id="held")
        q.send_message("c0", message_group_id="c", message_deduplication_id="old")
    batch, single = queues
    result = batch.send_message_batch(
        [{"Id": i, "MessageBody": body, "MessageGroupId": g, "MessageDeduplicationId": d} for i, body, g, d in entries]
    )
    one_by_one = {}
    for i, body, g, d in entries:
        try:
            one_by_one[i] = single.send_message(body, message_group_id=g, message_deduplication_id=d)
        except InvalidParameterValue:
            pass
    assert [f.id for f in result.failed] == ["6"]
    assert [s.id for s in result.successful] == sorted(one_by_one) == ["0", "1", "2", "3", "4", "5", "7"]

    def shape(sent):
        """Each result as the first entry whose message it is and the rank of its sequence number."""
        ids, numbers = [s.message_id for s in sent], sorted({int(s.sequence_number) for s in sent})
        return [(ids.index(s.message_id), numbers.index(int(s.sequence_number))) for s in sent]

    assert shape(result.successful) == shape([one_by_one[i] for i in sorted(one_by_one)])
    assert result.successful[4].message_id != one_by_one["4"].message_id  # each queue's own earlier send
    expected = {"a": ["held", "a1", "a3"], "b": ["b1", "b2"] if scope == "messageGroup" else ["b1"], "c": ["c0"]}
    assert drain_by_group(batch) == drain_by_group(single) == expected


def test_a_batch_to_groups_with_and_without_messages_keeps_each_groups_send_order(db):
    q = make_fifo(db)
    q.send_message("old", message_group_id="busy", message_deduplication_id="old")
    q.send_message_batch(
        [
            {"Id": str(i), "MessageBody": f"{g}{i}", "MessageGroupId": g, "MessageDeduplicationId": f"{g}{i}"}
            for i, g in enumerate(["new", "busy", "new", "other", "busy"])
        ]
    )
    with db.store.read() as tx:  # one head a group: the oldest message of each
        heads = sorted(row[0] for row in tx.c.execute("SELECT body FROM messages WHERE is_head = 1"))
    assert heads == ["new0", "old", "other3"]
    assert drain_by_group(q) == {"busy": ["old", "busy1", "busy4"], "new": ["new0", "new2"], "other": ["other3"]}


def test_sequence_numbers_increase_strictly_per_queue_and_come_back_on_send_and_receive(fq):
    sent = [send(fq, f"m{i}", group=f"g{i % 3}") for i in range(6)]
    numbers = [s.sequence_number for s in sent]
    assert all(len(n) == 20 and n.isdigit() for n in numbers)
    assert [int(n) for n in numbers] == sorted({int(n) for n in numbers})
    msgs = receive(fq, message_system_attribute_names=["SequenceNumber"])
    by_id = {s.message_id: s.sequence_number for s in sent}
    assert {m.message_id: m.sequence_number for m in msgs} == by_id
    assert all(m.attributes["SequenceNumber"] == m.sequence_number for m in msgs)


def test_sequence_numbers_keep_increasing_after_the_newest_message_is_deleted(fq):
    send(fq, "a")
    last = send(fq, "b")
    for m in receive(fq):
        m.delete()
    assert counts(fq) == (0, 0, 0)
    assert int(send(fq, "c").sequence_number) > int(last.sequence_number)


def test_each_fifo_queue_numbers_its_own_messages(db):
    a, b = make_fifo(db, "a.fifo"), make_fifo(db, "b.fifo")
    send(a, "1")
    assert int(send(b, "1").sequence_number) == int(send(a, "2").sequence_number) - 1


# ---------------------------------------------------------------- order and head-of-line blocking


def test_a_group_is_returned_in_send_order_one_receive_at_a_time(fq):
    for i in range(5):
        send(fq, str(i))
    seen = []
    while True:
        msgs = receive(fq, n=1)
        if not msgs:
            break
        seen.append(msgs[0].body)
        msgs[0].delete()
    assert seen == ["0", "1", "2", "3", "4"]


def test_one_receive_returns_several_messages_of_a_group_in_order(fq):
    for i in range(12):
        send(fq, str(i))
    assert bodies(receive(fq)) == [str(i) for i in range(10)]
    assert receive(fq) == []  # the group is in flight


def test_a_receive_across_groups_keeps_each_groups_order(fq):
    for body, group in [("a1", "A"), ("b1", "B"), ("a2", "A"), ("c1", "C"), ("b2", "B"), ("a3", "A")]:
        send(fq, body, group=group)
    msgs = receive(fq)
    assert sorted(bodies(msgs)) == ["a1", "a2", "a3", "b1", "b2", "c1"]
    for group in "ABC":
        mine = [m.body for m in msgs if m.message_group_id == group]
        assert mine == sorted(mine)


def test_a_message_in_flight_blocks_its_group_but_not_other_groups(fq):
    send(fq, "a1", group="A")
    send(fq, "a2", group="A")
    send(fq, "b1", group="B")
    [a1] = receive(fq, n=1)
    assert a1.body == "a1"
    assert bodies(receive(fq)) == ["b1"]  # not a2
    assert receive(fq) == []
    assert counts(fq) == (1, 2, 0)  # a2 is visible, yet blocked behind a1


def test_deleting_the_message_in_flight_releases_its_group(fq):
    send(fq, "a1")
    send(fq, "a2")
    [a1] = receive(fq, n=1)
    assert receive(fq) == []
    a1.delete()
    assert bodies(receive(fq)) == ["a2"]


def test_when_its_visibility_ends_the_blocking_message_comes_back_first(fq, clock):
    send(fq, "a1")
    send(fq, "a2")
    [a1] = receive(fq, n=1)
    clock.advance(29.999)
    assert receive(fq) == []
    clock.advance(0.001)
    again = receive(fq)
    assert bodies(again) == ["a1", "a2"]
    assert [m.receive_count for m in again] == [2, 1]


def test_changing_the_blocking_messages_visibility_to_zero_releases_the_group(fq):
    send(fq, "a1")
    send(fq, "a2")
    [a1] = receive(fq, n=1)
    a1.change_visibility(0)
    assert bodies(receive(fq)) == ["a1", "a2"]


def test_deleting_a_later_message_of_a_received_run_keeps_the_group_blocked(fq):
    for body in ("a1", "a2", "a3"):
        send(fq, body)
    a1, a2 = receive(fq, n=2)
    a2.delete()
    assert receive(fq) == []  # a1 is still in flight
    a1.delete()
    assert bodies(receive(fq)) == ["a3"]


def test_a_delayed_head_blocks_later_messages_of_its_group(db, clock):
    q = make_fifo(db, DelaySeconds=60)
    send(q, "a1")
    q.set_queue_attributes({"DelaySeconds": "0"})
    send(q, "a2")
    send(q, "b1", group="B")
    [b1] = receive(q)
    assert b1.body == "b1"
    b1.delete()
    clock.advance(60)
    assert bodies(receive(q)) == ["a1", "a2"]


def test_a_message_released_before_a_later_one_of_its_group_is_returned_again_and_the_rest_stay_hidden(fq):
    # As SQS (recorded): a group is hidden from its first message in flight on, not whole.
    for body in ("a1", "a2", "a3"):
        send(fq, body)
    a1, a2 = receive(fq, n=2)
    a1.change_visibility(0)  # a1 is visible again, a2 is still in flight
    [again] = receive(fq)  # a1 again; a3 stays hidden behind a2
    assert again.body == "a1" and again.receive_count == 2
    a2.delete()
    again.delete()
    assert bodies(receive(fq)) == ["a3"]


def test_with_three_received_and_the_second_extended_the_first_comes_back_alone_when_its_lease_ends(fq, clock):
    for body in ("a1", "a2", "a3"):
        send(fq, body)
    _, a2, _ = receive(fq, n=3)
    a2.change_visibility(60)
    clock.advance(31)  # a1's and a3's leases ended; a2's runs on
    [a1] = receive(fq)
    assert a1.body == "a1"
    a1.delete()
    clock.advance(29)  # a2's lease ends
    assert bodies(receive(fq)) == ["a2", "a3"]


def test_a_released_message_comes_back_after_the_other_groups_messages_visible_before_it(fq, clock):
    send(fq, "g1-m1", group="g1")
    send(fq, "g1-m2", group="g1")
    g1m1, _ = receive(fq, n=2)
    send(fq, "g2-m1", group="g2")
    clock.advance(1)
    g1m1.change_visibility(0)
    assert bodies(receive(fq)) == ["g2-m1", "g1-m1"]


def test_a_delayed_message_holds_back_the_later_messages_of_its_group(db, clock):
    q = make_fifo(db)
    send(q, "a1")
    q.set_queue_attributes({"DelaySeconds": "60"})
    send(q, "a2")
    q.set_queue_attributes({"DelaySeconds": "0"})
    send(q, "a3")
    [a1] = receive(q)
    assert a1.body == "a1"
    a1.delete()
    assert receive(q) == []  # a3 is visible but waits for the delayed a2
    clock.advance(60)
    assert bodies(receive(q)) == ["a2", "a3"]


# ---------------------------------------------------------------- ReceiveRequestAttemptId


def test_repeating_a_receive_attempt_returns_the_same_messages_with_the_same_handles(fq, clock):
    for body in ("a1", "a2"):
        send(fq, body)
    send(fq, "b1", group="B")
    first = receive(fq, n=2, receive_request_attempt_id="try-1")
    clock.advance(10)
    again = receive(fq, n=2, receive_request_attempt_id="try-1")
    assert [(m.message_id, m.receipt_handle) for m in again] == [(m.message_id, m.receipt_handle) for m in first]
    assert [m.receive_count for m in again] == [1, 1]
    assert bodies(receive(fq, receive_request_attempt_id="try-2")) == ["b1"]
    for m in again:
        m.delete()  # the handles the repeat returned work
    assert counts(fq) == (0, 1, 0)


def test_a_repeated_receive_attempt_restarts_the_visibility_timeout(fq, clock):
    # SQS: "If a retry occurs within the deduplication interval, it resets the visibility timeout."
    send(fq, "a1")
    receive(fq, receive_request_attempt_id="try")
    clock.advance(20)
    [m] = receive(fq, receive_request_attempt_id="try")
    clock.advance(20)
    assert counts(fq) == (0, 1, 0)  # 40 s after the first receive, 20 s after the repeat
    m.delete()


def test_a_receive_attempt_id_is_remembered_for_five_minutes(db, clock):
    q = make_fifo(db, VisibilityTimeout=900)
    send(q, "a1")
    [first] = receive(q, receive_request_attempt_id="try")
    clock.advance(D.RECEIVE_ATTEMPT_WINDOW_SECONDS)
    assert receive(q, receive_request_attempt_id="try") == []  # a fresh receive: a1 is in flight
    first.change_visibility(0)
    [again] = receive(q, receive_request_attempt_id="try")
    assert again.receipt_handle != first.receipt_handle


def test_a_receive_attempt_that_found_nothing_is_not_remembered(fq):
    assert receive(fq, receive_request_attempt_id="try") == []
    send(fq, "a1")
    assert bodies(receive(fq, receive_request_attempt_id="try")) == ["a1"]


def test_a_long_poll_with_an_attempt_id_returns_a_message_sent_during_the_wait(db_path, clock):
    class SendDuringWait(sqsqlite.ManualClock):
        """Another connection sends once the long poll has started waiting."""

        producer = None

        def sleep(self, seconds):
            if self.producer is not None:
                self.producer, producer = None, self.producer
                producer.send_message("late", message_group_id="g", message_deduplication_id="late")
            super().sleep(seconds)

    tick = SendDuringWait()
    with sqsqlite.connect(db_path, clock=tick) as consumer, sqsqlite.connect(db_path, clock=tick) as other:
        q = make_fifo(consumer)
        tick.producer = other.queue("jobs.fifo")
        assert bodies(q.receive_message(wait_time_seconds=5, receive_request_attempt_id="poll")) == ["late"]


@pytest.mark.parametrize("attempt", ["has space", "x" * 129, "é"])
def test_a_receive_attempt_id_is_1_to_128_ascii_letters_digits_or_punctuation(fq, attempt):
    send(fq, "a1")
    with pytest.raises(InvalidParameterValue, match="ReceiveRequestAttemptId"):
        receive(fq, receive_request_attempt_id=attempt)
    assert counts(fq) == (1, 0, 0)


def test_a_repeated_attempt_never_returns_a_message_past_its_retention_period(db, clock):
    q = make_fifo(db, "short.fifo", MessageRetentionPeriod=60, VisibilityTimeout=300)
    send(q, "old")
    clock.advance(50)
    assert bodies(receive(q, receive_request_attempt_id="x")) == ["old"]
    clock.advance(20)  # 70 s after the send: expired, though its lease still runs
    assert receive(q, receive_request_attempt_id="x") == []
    assert counts(q) == (0, 0, 0)


def test_a_repeated_attempt_never_shortens_a_lease_a_heartbeat_extended(fq, clock):
    send(fq, "job")
    [m] = receive(fq, receive_request_attempt_id="x")
    m.change_visibility(600)  # a heartbeat
    clock.advance(10)
    assert bodies(receive(fq, receive_request_attempt_id="x")) == ["job"]  # an SDK's late retry
    clock.advance(31)  # past the retry's own 30 s, within the heartbeat's 600
    assert receive(fq) == []


def test_a_repeated_attempt_whose_messages_were_all_deleted_receives_afresh(fq):
    send(fq, "a1")
    send(fq, "a2")
    [a1] = receive(fq, n=1, receive_request_attempt_id="try")
    a1.delete()
    assert bodies(receive(fq, n=1, receive_request_attempt_id="try")) == ["a2"]


# ---------------------------------------------------------------- dead-letter queues


def redrive(dlq, max_receive_count=1):
    return json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": max_receive_count})


def dead_letter(q, clock):
    """Every visible message of ``q`` (VisibilityTimeout=1, maxReceiveCount 1) received once, then
    moved to its dead-letter queue by the next receive."""
    receive(q)
    clock.advance(2)
    assert receive(q) == []


def test_the_dead_letter_queue_of_a_fifo_queue_must_be_fifo(db):
    plain = db.create_queue("plain-dlq")
    with pytest.raises(InvalidParameterValue, match="dead-letter queue of a FIFO queue must also be a FIFO queue"):
        make_fifo(db, RedrivePolicy=redrive(plain))
    with pytest.raises(QueueDoesNotExist):
        db.queue("jobs.fifo")
    dlq = make_fifo(db, "dead.fifo")
    with pytest.raises(InvalidParameterValue, match="dead-letter queue of a standard queue must also be a standard queue"):
        db.create_queue("plain", attributes={"RedrivePolicy": redrive(dlq)})
    q = make_fifo(db)
    with pytest.raises(InvalidParameterValue, match="must also be a FIFO queue"):
        q.set_queue_attributes({"RedrivePolicy": redrive(plain)})
    assert "RedrivePolicy" not in q.get_queue_attributes(["All"])


def test_moving_the_blocking_message_to_the_dead_letter_queue_releases_its_group(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=30, RedrivePolicy=redrive(dlq))
    send(q, "a1")
    send(q, "a2")
    assert bodies(receive(q, n=1)) == ["a1"]
    clock.advance(30)
    assert bodies(receive(q, n=1)) == ["a2"]  # a1 went to the dead-letter queue in the same claim
    [dead] = receive(dlq, message_system_attribute_names=["All"])
    assert dead.body == "a1"
    assert dead.attributes["DeadLetterQueueSourceArn"] == q.arn


def test_moved_messages_keep_their_group_and_order_in_the_dead_letter_queue(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=30, RedrivePolicy=redrive(dlq))
    sent = [send(q, f"a{i}", group="A") for i in range(3)] + [send(q, "b0", group="B")]
    first = receive(q)
    assert bodies(first) == ["a0", "a1", "a2", "b0"]
    first[3].delete()
    clock.advance(30)
    assert receive(q) == []
    msgs = receive(dlq, message_system_attribute_names=["All"])
    assert bodies(msgs) == ["a0", "a1", "a2"]
    assert [m.message_id for m in msgs] == [s.message_id for s in sent[:3]]
    assert {m.message_group_id for m in msgs} == {m.attributes["MessageGroupId"] for m in msgs} == {"A"}
    assert [int(m.sequence_number) for m in msgs] == sorted(int(m.sequence_number) for m in msgs)
    assert [m.sent_timestamp for m in msgs] == [first[0].sent_timestamp] * 3


def test_dead_letter_retention_counts_from_the_original_enqueue_time(db, clock):
    dlq = make_fifo(db, "dead.fifo", MessageRetentionPeriod=2 * DAY)
    q = make_fifo(db, VisibilityTimeout=60, RedrivePolicy=redrive(dlq))
    sent_at = clock.now_ms()
    send(q, "a1")
    receive(q)
    clock.advance(DAY)
    assert receive(q) == []  # moved after a day in the source queue
    assert counts(dlq) == (1, 0, 0)
    [peeked] = dlq.peek()
    assert peeked.sent_timestamp == sent_at
    clock.advance(DAY - 0.001)
    assert counts(dlq) == (1, 0, 0)
    clock.advance(0.001)  # two days after the original send: gone, though it spent one day in the DLQ
    assert counts(dlq) == (0, 0, 0)
    assert receive(dlq) == []


def test_an_expired_message_in_flight_stops_blocking_its_group_the_moment_it_expires(db, clock):
    q = make_fifo(db, MessageRetentionPeriod=3600)
    send(q, "a")
    assert bodies(receive(q, visibility_timeout=43_200)) == ["a"]  # in flight for 12 hours
    clock.advance(3000)
    send(q, "b")
    assert receive(q) == []  # a is still in flight, and holds its group
    clock.advance(600)  # a has expired: gone, though its lease has hours to run
    assert bodies(receive(q)) == ["b"]


def test_a_run_of_expired_messages_longer_than_one_claim_clears_never_hides_a_live_one(db, clock, monkeypatch):
    monkeypatch.setattr(D, "CLAIM_CLEANUP_BUDGET", 3)  # the rule at any budget; 3 keeps it quick
    q = make_fifo(db, MessageRetentionPeriod=60)
    for i in range(10):
        send(q, f"stale-{i}", group="stale")
    clock.advance(59)
    send(q, "live-behind-them", group="stale")
    send(q, "live", group="other")
    clock.advance(1)  # the ten stale ones expire
    start = clock.now_ms()
    # The first receive clears 3 and returns what it can; the second clears the rest of the run
    # (three transactions of 3) and reaches the live message behind them.
    got = bodies(receive(q, wait_time_seconds=20)) + bodies(receive(q, wait_time_seconds=20))
    assert sorted(got) == ["live", "live-behind-them"]
    assert clock.now_ms() == start  # both returned at once: no wait while messages were receivable
    assert q.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "0"}


def test_a_redrive_back_to_the_source_keeps_each_groups_order(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=30, RedrivePolicy=redrive(dlq))
    for i in range(3):
        send(q, f"a{i}")
    receive(q)
    clock.advance(30)
    receive(q)
    assert counts(dlq) == (3, 0, 0)
    send(q, "a3")  # sent after the others, so it queues behind them once they are back
    handle = db.start_message_move_task(dlq.arn, background=False)
    assert db.run_message_move_task(handle).status == "COMPLETED"
    assert bodies(receive(q)) == ["a3", "a0", "a1", "a2"]


def test_a_redrive_leaves_a_group_whose_message_a_consumer_holds_in_the_dead_letter_queue(db, clock):
    dlq = make_fifo(db, "dead.fifo", VisibilityTimeout=30)
    q = make_fifo(db, VisibilityTimeout=30, RedrivePolicy=redrive(dlq))
    for body, group in (("a0", "a"), ("a1", "a"), ("a2", "a"), ("b0", "b")):
        send(q, body, group=group)
    receive(q)
    clock.advance(30)
    receive(q)
    assert counts(dlq) == (4, 0, 0)
    [held] = dlq.receive_message()  # someone inspects a0 in the dead-letter queue
    assert held.body == "a0"
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert task.status == "COMPLETED" and task.approximate_number_of_messages_moved == 1
    assert bodies(receive(q)) == ["b0"]  # a1 and a2 wait behind a0, as a redrive receiving from the queue would
    assert sorted(m.body for m in dlq.peek()) == ["a0", "a1", "a2"]


def test_a_redrive_moves_a_group_in_the_dead_letter_queues_order_whatever_queue_each_came_from(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    first, second = (make_fifo(db, name, VisibilityTimeout=1, RedrivePolicy=redrive(dlq)) for name in ("first.fifo", "second.fifo"))
    dest = make_fifo(db, "dest.fifo")
    send(first, "x-sent-first")
    send(second, "y-sent-second")
    for q in (second, first):  # y reaches the dead-letter queue first, then x
        dead_letter(q, clock)
    assert bodies(dlq.peek()) == ["y-sent-second", "x-sent-first"]
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, destination_arn=dest.arn, background=False))
    assert task.status == "COMPLETED" and task.approximate_number_of_messages_moved == 2
    assert bodies(receive(dest)) == ["y-sent-second", "x-sent-first"]


def test_a_fifo_redrive_that_cannot_move_a_groups_first_message_keeps_the_rest_of_the_group_and_fails(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    gone, kept, other = (
        make_fifo(db, name, VisibilityTimeout=1, RedrivePolicy=redrive(dlq)) for name in ("gone.fifo", "kept.fifo", "other.fifo")
    )
    for q, body, group in ((gone, "g0", "g"), (kept, "k0", "k"), (other, "g1", "g")):  # g1 behind g0 once dead-lettered
        send(q, body, group=group)
        dead_letter(q, clock)
    db.delete_queue(gone.url)
    # One message a step: g1 is decided in a step after the one that left g0.
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=1, background=False))
    assert task.status == "FAILED" and gone.arn in task.failure_hint
    assert task.approximate_number_of_messages_moved == 1  # k0; g1 waits behind g0, which has nowhere to go
    assert sorted(m.body for m in dlq.peek()) == ["g0", "g1"]


def test_a_fifo_redrive_passes_a_groups_expired_first_message_and_moves_the_rest(db, clock):
    dlq = make_fifo(db, "dead.fifo", MessageRetentionPeriod=60)
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    send(q, "old")
    clock.advance(30)
    send(q, "young")
    dead_letter(q, clock)
    assert counts(dlq) == (2, 0, 0)
    clock.advance(28)  # "old" has outlived the dead-letter queue's retention, "young" has not
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 1)
    assert bodies(receive(q)) == ["young"]


def test_a_fifo_redrive_moves_only_the_messages_there_when_it_started(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    send(q, "a0")
    dead_letter(q, clock)
    handle = db.start_message_move_task(dlq.arn, background=False)
    send(q, "a1")  # dead-lettered after the task started, into the same group
    dead_letter(q, clock)
    task = db.run_message_move_task(handle)
    assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 1)
    assert bodies(receive(q)) == ["a0"]
    assert bodies(dlq.peek()) == ["a1"]


def test_a_fifo_redrive_into_the_dead_letter_queue_itself_is_refused_and_redrive_to_source_keeps_each_group_in_order(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    for body, group in (("a0", "a"), ("b0", "b"), ("a1", "a"), ("b1", "b")):
        send(q, body, group=group)
    dead_letter(q, clock)
    with pytest.raises(InvalidParameterValue, match="The destination queue must be different from the source queue."):
        db.start_message_move_task(dlq.arn, destination_arn=dlq.arn, background=False)
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=1, background=False))
    assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 4)
    got = bodies(receive(q))
    assert [b for b in got if b.startswith("a")] == ["a0", "a1"] and [b for b in got if b.startswith("b")] == ["b0", "b1"]


def test_a_fifo_redrive_fails_saying_why_when_a_message_sent_there_directly_holds_its_group_back(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    send(dlq, "direct", group="g")
    send(dlq, "alone", group="solo")  # sent directly too, holding nothing back: no failure of its own
    send(q, "dead-lettered", group="g")
    dead_letter(q, clock)
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert task.status == "FAILED" and task.approximate_number_of_messages_moved == 0
    assert task.failure_reason == "A message of group g has no source queue to return to, and the group's later messages stay behind it."
    assert sorted(m.body for m in dlq.peek()) == ["alone", "dead-lettered", "direct"]


def test_a_fifo_redrive_decides_a_held_group_once_whatever_its_pace(db, clock):
    for rate in (None, 1):  # the whole queue in one step, or one message a step
        dlq = make_fifo(db, f"dead-{rate}.fifo", VisibilityTimeout=30)
        q = make_fifo(db, f"jobs-{rate}.fifo", VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
        for body in ("a0", "a1", "a2"):
            send(q, body, group="a")
        dead_letter(q, clock)
        first, *_ = receive(dlq)  # a consumer holds the group in the dead-letter queue
        first.change_visibility(0)  # and lets its first message go, holding the rest
        task = db.run_message_move_task(db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=rate, background=False))
        assert (task.status, task.approximate_number_of_messages_moved, task.failure_reason) == ("COMPLETED", 0, None), rate
        clock.advance(31)


def test_messages_sent_to_a_fifo_dead_letter_queue_directly_hold_back_only_messages_that_could_move(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    send(dlq, "d0", group="g")
    send(dlq, "d1", group="g")  # behind d0, but with nowhere to go either: nothing held back that could move
    send(q, "x", group="x")
    dead_letter(q, clock)
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, max_number_of_messages_per_second=1, background=False))
    assert (task.status, task.approximate_number_of_messages_moved, task.failure_reason) == ("COMPLETED", 1, None)


def test_a_fifo_redrive_clears_a_long_run_of_expired_first_messages_over_several_transactions(db, clock, monkeypatch):
    monkeypatch.setattr(D, "MOVE_TASK_CLEANUP_BUDGET", 2)
    dlq = make_fifo(db, "dead.fifo", MessageRetentionPeriod=60)
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    for i in range(5):
        send(q, f"old{i}", group="g")
    clock.advance(30)
    send(q, "young", group="g")
    dead_letter(q, clock)
    clock.advance(28)  # the five old ones expire; "young" is the group's one live message
    task = db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False))
    assert (task.status, task.approximate_number_of_messages_moved) == ("COMPLETED", 1)
    assert bodies(receive(q)) == ["young"]


def test_an_export_keeps_each_groups_order_after_a_redrive_made_it_differ_from_the_rows(db, clock):
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=1, RedrivePolicy=redrive(dlq))
    send(q, "m1")
    receive(q)
    clock.advance(2)
    receive(q)  # m1 to the dead-letter queue
    send(q, "m2")
    send(q, "m3")
    assert db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False)).status == "COMPLETED"
    copy = make_fifo(db, "copy.fifo")
    copy.import_messages(q.export_messages())
    assert bodies(receive(q)) == bodies(receive(copy)) == ["m2", "m3", "m1"]


# ---------------------------------------------------------------- limits and handles


def test_at_the_in_flight_cap_a_fifo_receive_returns_nothing_and_no_error(fq, monkeypatch):
    # The rule is the same at any cap; 20,000 real messages in flight would only make the test
    # slow, so the cap is lowered (the engine reads it from defaults at every receive).
    monkeypatch.setattr(D, "MAX_IN_FLIGHT_FIFO", 3)
    for i in range(5):
        send(fq, f"m{i}", group=f"g{i}")
    held = receive(fq)
    assert len(held) == 3
    assert receive(fq) == []
    assert counts(fq) == (2, 3, 0)
    held[0].delete()
    assert len(receive(fq)) == 1
    assert receive(fq) == []


def test_deleting_with_an_expired_handle_fails_and_keeps_the_message(fq, clock):
    send(fq, "a1")
    [m] = receive(fq)
    clock.advance(30)
    with pytest.raises(InvalidParameterValue, match="The receipt handle has expired"):
        m.delete()
    assert counts(fq) == (1, 0, 0)
    result = fq.delete_message_batch([{"Id": "x", "ReceiptHandle": m.receipt_handle}])
    assert [(f.id, f.code) for f in result.failed] == [("x", "InvalidParameterValue")]
    assert "expired" in str(result.failed[0])
    [again] = receive(fq)
    again.delete()
    again.delete()  # deleting with the last handle again is fine
    assert counts(fq) == (0, 0, 0)


def test_a_handle_still_in_flight_deletes_the_message(fq, clock):
    send(fq, "a1")
    [m] = receive(fq)
    clock.advance(29.999)
    m.delete()
    assert counts(fq) == (0, 0, 0)


def test_a_batch_delete_of_several_receives_messages_deletes_each_and_moves_their_groups_on(fq, clock):
    for body in ("a1", "a2"):
        send(fq, body, group="a")
    for body in ("b1", "b2"):
        send(fq, body, group="b")
    [a1] = receive(fq, 1)
    [b1] = receive(fq, 1)
    assert bodies([a1, b1]) == ["a1", "b1"]
    # Two receives' handles (two claims' tokens), one as the Message and one as its text.
    result = fq.delete_message_batch([{"Id": "a", "ReceiptHandle": a1}, {"Id": "b", "ReceiptHandle": b1.receipt_handle}])
    assert [s["Id"] for s in result.successful] == ["a", "b"] and result.failed == []
    assert counts(fq) == (2, 0, 0)
    assert sorted(bodies(receive(fq))) == ["a2", "b2"]


def test_a_batch_delete_deletes_the_messages_still_in_flight_and_refuses_an_expired_handle(fq, clock):
    send(fq, "a1", group="a")
    [a1] = receive(fq, 1)
    clock.advance(20)
    send(fq, "b1", group="b")
    [b1] = receive(fq, 1)
    clock.advance(15)  # a1's lease ended, b1's runs
    result = fq.delete_message_batch([{"Id": "a", "ReceiptHandle": a1.receipt_handle}, {"Id": "b", "ReceiptHandle": b1.receipt_handle}])
    assert [s["Id"] for s in result.successful] == ["b"]
    assert [(f.id, f.code) for f in result.failed] == [("a", "InvalidParameterValue")]
    assert bodies(receive(fq)) == ["a1"]


# ---------------------------------------------------------------- the claim's cost


def _plan(db, sql, **params):
    conn = db.store.connection()
    return " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, sql.bind(params)))


def test_the_fifo_claim_reads_group_heads_and_group_runs_off_their_indexes(db):
    make_fifo(db)
    heads = _plan(db, Q.fifo_heads, queue_id=1, now=0, cutoff=0, n=10)
    assert heads == "SEARCH messages USING INDEX ix_messages_heads (queue_id=? AND visible_at<?)"
    run = _plan(db, Q.fifo_group_run, queue_id=1, group_id="g", cutoff=0, n=10)
    # sequence_number IS NOT NULL, the index's predicate, is a range on its last column.
    assert run == "SEARCH messages USING INDEX ix_messages_group (queue_id=? AND group_id=? AND sequence_number>?)"


def _receive_steps(db, q):
    """SQLite virtual-machine steps spent by one receive: a measure of work, not of time."""
    conn = db.store.connection()
    steps = 0

    def count():
        nonlocal steps
        steps += 1

    conn.set_progress_handler(count, 1)
    try:
        msgs = receive(q)
    finally:
        conn.set_progress_handler(None, 0)
    return msgs, steps


def _blocked_backlog(db, name, per_group):
    """A queue whose ten groups each hold per_group messages behind a head in flight, plus one
    free group with one visible message."""
    q = make_fifo(db, name)
    for g in range(10):
        for start in range(0, per_group, 10):
            q.send_message_batch(
                [
                    {"Id": str(i), "MessageBody": f"{g}-{i}", "MessageGroupId": f"g{g}", "MessageDeduplicationId": f"{g}-{i}"}
                    for i in range(start, min(start + 10, per_group))
                ]
            )
    for _ in range(10):
        assert len(receive(q, n=1)) == 1
    send(q, "free", group="free")
    return q


def test_a_fifo_receive_costs_the_same_whatever_the_blocked_backlog(db):
    small = _blocked_backlog(db, "small.fifo", 2)
    large = _blocked_backlog(db, "large.fifo", 300)
    small_msgs, small_steps = _receive_steps(db, small)
    large_msgs, large_steps = _receive_steps(db, large)
    assert bodies(small_msgs) == bodies(large_msgs) == ["free"]
    # 20 messages against 3,000: the same work, give or take a deeper B-tree.
    assert large_steps <= small_steps * 1.1, (small_steps, large_steps)


def _in_flight(db, name, groups):
    """A queue with groups x 10 messages in flight (each group's whole run received), plus one
    free group with one visible message."""
    q = make_fifo(db, name)
    for g in range(groups):
        q.send_message_batch(
            [{"Id": str(i), "MessageBody": f"{g}-{i}", "MessageGroupId": f"g{g}", "MessageDeduplicationId": f"{g}-{i}"} for i in range(10)]
        )
    while receive(q):
        pass
    send(q, "free", group="free")
    return q


def test_a_fifo_receive_costs_the_same_whatever_the_number_in_flight(db):
    small = _in_flight(db, "few.fifo", 2)
    large = _in_flight(db, "many.fifo", 200)
    assert counts(large)[1] == 2000
    small_msgs, small_steps = _receive_steps(db, small)
    large_msgs, large_steps = _receive_steps(db, large)
    assert bodies(small_msgs) == bodies(large_msgs) == ["free"]
    # 20 messages in flight against 2,000: a group whose head is in flight has no visible head,
    # so the claim never reads it.
    assert large_steps <= small_steps * 1.1, (small_steps, large_steps)


def test_deleting_a_fifo_queue_leaves_no_dedup_or_attempt_records(db, clock):
    q = db.create_queue("gone.fifo", FifoQueue="true")
    q.send_message("a", message_group_id="g", message_deduplication_id="d1")
    q.receive_message(receive_request_attempt_id="attempt-1")
    db.delete_queue(q.url)
    conn = db.store.connection()
    assert conn.execute("SELECT count(*) FROM fifo_dedup").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM receive_attempts").fetchone()[0] == 0


# ---------------------------------------------------------------- purge


def test_a_purge_clears_the_deduplication_window_so_a_resent_id_is_delivered(fq):
    first = send(fq, "message-1", dedup="d")
    fq.purge_queue()
    second = send(fq, "message-2", dedup="d")
    assert second.message_id != first.message_id
    assert bodies(receive(fq)) == ["message-2"]


def test_a_purge_deletes_every_message_whatever_time_it_was_stamped_with_and_its_groups_start_afresh(fq, clock):
    start = clock.now_ms()
    send(fq, "old")
    clock.advance(1)
    send(fq, "new")  # stamped after the time the purge reads below (the clock is set back)
    send(fq, "other", group="h")
    clock.set(start + 500)
    fq.purge_queue()
    clock.advance(1)
    assert receive(fq) == []
    assert counts(fq) == (0, 0, 0)
    send(fq, "later")
    assert bodies(receive(fq)) == ["later"]  # the head of its group, which nothing holds back


def test_purging_the_visible_messages_leaves_a_head_in_each_group_that_keeps_messages(db, clock):
    q = make_fifo(db, "slow.fifo", DelaySeconds=5)
    send(q, "a")
    send(q, "x", group="h")
    clock.advance(5)
    assert bodies(receive(q, 1)) in (["a"], ["x"])  # one group's head in flight, the other's visible
    send(q, "b")  # delayed 5 s, behind its group's head
    send(q, "y", group="h")
    assert q.purge_visible() == 1  # the visible head; the one in flight and the delayed two stay
    assert counts(q) == (0, 1, 2)
    clock.advance(31)
    # The purged head's delayed follower is its group's head now: received, not stuck forever.
    assert sorted(bodies(receive(q))) in (["a", "b", "y"], ["b", "x", "y"])


# ---------------------------------------------------------------- a group hidden from its first message in flight on


def test_a_message_released_early_is_returned_again_while_the_rest_of_its_run_is_in_flight(fq, clock):
    for body in ("m0", "m1", "m2", "m3"):
        send(fq, body)
    m0, m1, m2, m3 = receive(fq, 4)
    m0.change_visibility(0)
    assert bodies(receive(fq)) == ["m0"]  # as SQS: hidden from m1, the first in flight, on
    for m in (m1, m2, m3):
        m.delete()
    assert receive(fq) == []  # m0 is in flight again


def test_the_next_head_released_early_is_returned_without_the_message_behind_it(fq, clock):
    for body in ("m0", "m1", "m2"):
        send(fq, body)
    m0, m1, m2 = receive(fq, 3)
    m0.delete()  # m1 becomes the head
    m1.change_visibility(0)
    assert bodies(receive(fq)) == ["m1"]  # m2, still in flight, is not
    clock.advance(31)  # both leases end
    assert bodies(receive(fq)) == ["m1", "m2"]


def test_a_head_released_early_is_returned_past_expired_messages_of_its_group(db, clock):
    # Expired messages can sit inside a group (a redrive brings back messages older than the
    # queue's retention): the claim's run passes over them, however many there are.
    dlq = make_fifo(db, "dead.fifo")
    q = make_fifo(db, VisibilityTimeout=30, MessageRetentionPeriod=60)
    q.set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})})
    for i in range(D.MAX_MESSAGES_PER_RECEIVE):
        send(q, f"x{i}")
    receive(q)
    clock.advance(30)
    receive(q)  # x0..x9 move to the dead-letter queue
    q.set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 5})})
    clock.advance(120)  # older than q's retention now
    send(q, "H")
    assert db.run_message_move_task(db.start_message_move_task(dlq.arn, background=False)).approximate_number_of_messages_moved == 10
    send(q, "L")  # behind ten expired messages of its group
    head, later = receive(q)
    assert bodies([head, later]) == ["H", "L"]
    head.change_visibility(0)
    assert bodies(receive(q)) == ["H"]  # L, still in flight, is not
    later.delete()
    assert receive(q) == []


@pytest.mark.parametrize("n", [1, 10])
def test_a_released_head_comes_first_and_its_group_stops_at_the_message_in_flight(fq, clock, n):
    send(fq, "a0", group="a")
    send(fq, "a1", group="a")
    a0, a1 = receive(fq, 2)
    assert bodies([a0, a1]) == ["a0", "a1"]
    a0.change_visibility(0)  # visible again before b0 was sent: the oldest visible head
    clock.advance(1)
    send(fq, "b0", group="b")
    assert bodies(receive(fq, n)) == ["a0", "b0"][:n]  # a1, still in flight, is not


def test_a_buffered_fifo_consumer_hands_out_a_released_message_again_before_the_rest_of_its_group(db, clock):
    q = make_fifo(db, VisibilityTimeout=30, ContentBasedDeduplication="true")
    for i in range(5):
        q.send_message(f"m{i}", message_group_id="g")
    with q.buffered(prefetch=5) as b:
        [first] = b.receive_message()
        first.change_visibility(0)
        other = db.queue("jobs.fifo")
        handed = [first.body]
        while True:
            got = b.receive_message()
            if not got:
                break
            assert other.receive_message() == []  # never while the buffer holds part of the group
            handed.append(got[0].body)
            got[0].delete()
    # The rest of the run it fetched went back with m0, as a consumer receiving one at a time
    # would never have held it: m0 comes first again, and the group in order after it.
    assert handed == ["m0", "m0", "m1", "m2", "m3", "m4"]


def test_a_deduplication_scope_change_reaches_deduplication_a_minute_later_as_sqs_recorded(db, clock):
    q = make_fifo(db, DeduplicationScope="queue")
    send(q, "Test1", group="group1", dedup="same")
    q.set_queue_attributes({"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"})
    assert q.get_queue_attributes(["DeduplicationScope"]) == {"DeduplicationScope": "messageGroup"}
    assert not any(name.startswith("~") for name in q.get_queue_attributes(["All"]))
    send(q, "Test3", group="group3", dedup="same")  # still the queue's scope: a duplicate
    q.set_queue_attributes({"VisibilityTimeout": "40"})  # another change keeps the scope's delay
    send(q, "Test4", group="group4", dedup="d2")
    send(q, "Test5", group="group5", dedup="d2")  # a duplicate too (recorded)
    clock.advance(D.DEDUP_SCOPE_DELAY_SECONDS)
    send(q, "Test6", group="group6", dedup="d2")  # now deduplicated within its group only
    assert bodies(receive(q)) == ["Test1", "Test4", "Test6"]


def test_a_change_back_to_messagegroup_scope_keeps_deduplicating_by_group_at_first(db, clock):
    q = make_fifo(db, DeduplicationScope="messageGroup", FifoThroughputLimit="perMessageGroupId")
    send(q, "Test1", group="group1", dedup="same")
    send(q, "Test2", group="group2", dedup="same")
    q.set_queue_attributes({"DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"})
    send(q, "Test3", group="group3", dedup="same")  # recorded: accepted
    assert bodies(receive(q)) == ["Test1", "Test2", "Test3"]


def test_a_sequence_number_has_sqs_form_twenty_digits_increasing_per_queue(db):
    q = make_fifo(db)
    numbers = [send(q, f"m{i}").sequence_number for i in range(3)]
    assert all(len(n) == 20 and n.isdigit() and not n.startswith("0") for n in numbers)
    assert int(numbers[0]) < int(numbers[1]) < int(numbers[2])
    other = make_fifo(db, "other.fifo")
    assert send(other, "x").sequence_number == numbers[0]  # each queue counts its own
    [m] = receive(other, message_system_attribute_names=["SequenceNumber"])
    assert m.attributes["SequenceNumber"] == m.sequence_number == numbers[0]
