"""Queues: create, delete, list, URLs, attributes, counts, tags, purge and redrive policies."""

import json

import pytest

from sqsqlite import defaults as D
from sqsqlite.errors import (
    InvalidAttributeName,
    InvalidAttributeValue,
    InvalidParameterValue,
    PurgeQueueInProgress,
    QueueAlreadyExists,
    QueueDeletedRecently,
    QueueDoesNotExist,
)

DEFAULTS = {
    "VisibilityTimeout": "30",
    "DelaySeconds": "0",
    "MessageRetentionPeriod": "345600",
    "MaximumMessageSize": "1048576",
    "ReceiveMessageWaitTimeSeconds": "0",
}


def _redrive(db, dlq_name, count=3):
    return json.dumps({"deadLetterTargetArn": db.queue_arn(dlq_name), "maxReceiveCount": count})


# ------------------------------------------------------------------ create


def test_a_new_queue_has_the_sqs_defaults(db):
    q = db.create_queue("plain")
    attrs = q.get_queue_attributes(["All"])
    for name, value in DEFAULTS.items():
        assert attrs[name] == value
    assert attrs["QueueArn"] == "arn:aws:sqs:us-east-1:000000000000:plain"
    assert "RedrivePolicy" not in attrs
    assert "FifoQueue" not in attrs
    assert attrs["ApproximateNumberOfMessages"] == "0"


def test_created_and_modified_timestamps_are_epoch_seconds_from_the_clock(db, clock):
    q = db.create_queue("stamped")
    created = str(clock.now_ms() // 1000)
    clock.advance(100)
    q.set_queue_attributes({"DelaySeconds": "5"})
    attrs = q.get_queue_attributes(["CreatedTimestamp", "LastModifiedTimestamp"])
    assert attrs == {"CreatedTimestamp": created, "LastModifiedTimestamp": str(clock.now_ms() // 1000)}


def test_creating_a_queue_again_with_equal_attributes_returns_the_same_queue(db):
    first = db.create_queue("same", attributes={"VisibilityTimeout": "45"})
    again = db.create_queue("same", attributes={"VisibilityTimeout": 45})
    assert first == again
    # Unspecified attributes compare as their defaults, both ways.
    assert db.create_queue("same", visibility_timeout=45, delay_seconds=0) == first
    assert [u for u in db.list_queues()[0] if u.endswith("/same")] == [first.url]


def test_creating_a_queue_again_with_different_attributes_is_queue_already_exists(db):
    db.create_queue("taken", attributes={"VisibilityTimeout": "45"})
    with pytest.raises(QueueAlreadyExists) as err:
        db.create_queue("taken", attributes={"VisibilityTimeout": "46"})
    assert "VisibilityTimeout" in str(err.value) and "45" in str(err.value)
    assert err.value.code == "QueueAlreadyExists"
    assert db.queue("taken").get_queue_attributes(["VisibilityTimeout"]) == {"VisibilityTimeout": "45"}


def test_a_queue_name_is_1_to_80_characters_of_letters_digits_hyphen_underscore(db):
    db.create_queue("a" * 80)
    db.create_queue("A-z_09")
    for bad in ("a" * 81, "has space", "dot.name", "ümlaut", "slash/name"):
        with pytest.raises(InvalidParameterValue) as err:
            db.create_queue(bad)
        assert "80" in str(err.value)
    assert len(db.list_queues()[0]) == 2


# ------------------------------------------------------------------ delete


def test_a_deleted_queue_is_gone_and_its_name_is_reusable_only_after_60_seconds(db, clock):
    q = db.create_queue("short-lived")
    q.send_message("x")
    db.delete_queue(q.url)
    with pytest.raises(QueueDoesNotExist):
        db.queue("short-lived")
    clock.advance(59.999)
    with pytest.raises(QueueDeletedRecently) as err:
        db.create_queue("short-lived")
    assert "60" in str(err.value)
    clock.advance(0.001)
    again = db.create_queue("short-lived")
    # The new queue starts empty: the old queue's messages went with it.
    assert again.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "0"}


def test_deleting_a_queue_that_does_not_exist_is_queue_does_not_exist(db):
    with pytest.raises(QueueDoesNotExist) as err:
        db.delete_queue("never-was")
    assert "never-was" in str(err.value)


# ------------------------------------------------------------------ list and URLs


def test_list_queues_filters_by_prefix_exactly(db):
    for name in ("app_a", "app_b", "appXc", "other"):
        db.create_queue(name)
    urls, token = db.list_queues("app_")
    # "_" is a LIKE wildcard in SQL; the prefix must still match literally.
    assert [u.rsplit("/", 1)[1] for u in urls] == ["app_a", "app_b"]
    assert token is None
    assert len(db.list_queues()[0]) == 4
    assert db.list_queues("zzz") == ([], None)


@pytest.mark.parametrize(
    "names, prefix, expected",
    [
        (("Q1", "Q2", "Q3", "q1", "q2"), "q", ["q1", "q2"]),  # LIKE matched letters in either case
        (("xA1", "xB1", "x_1", "x_2"), "x_", ["x_1", "x_2"]),  # and took _ for any character
    ],
)
def test_a_page_of_list_queues_holds_prefix_matches_however_many_near_misses_sort_before_them(db, names, prefix, expected):
    for name in names:
        db.create_queue(name)
    urls, token = db.list_queues(prefix, max_results=1)
    assert [u.rsplit("/", 1)[1] for u in urls] == expected[:1] and token is not None
    urls, token = db.list_queues(prefix, max_results=1, next_token=token)
    assert [u.rsplit("/", 1)[1] for u in urls] == expected[1:] and token is None


def test_list_queues_pages_with_max_results_and_next_token(db):
    names = [f"q{i:02d}" for i in range(7)]
    for name in names:
        db.create_queue(name)
    seen, token, pages = [], None, 0
    while True:
        urls, token = db.list_queues(max_results=3, next_token=token)
        pages += 1
        seen += [u.rsplit("/", 1)[1] for u in urls]
        if token is None:
            break
    assert seen == names
    assert pages == 3


# Tokens no listing made: "!!!" was read leniently as nothing (the list from its start), "eyJ9"
# as '{"}' (past every name: an empty last page). The others: a name's token with padding it has
# no need of, a name and a space, a token and a newline, text that is not base64 at all.
NEVER_MADE_TOKENS = ["!!!", "eyJ9", "cTAx==", "cTAxIA==", "cTAwLWRscQ==\n", "\u00e9t\u00e9"]


@pytest.mark.parametrize("token", NEVER_MADE_TOKENS)
def test_a_list_queues_token_no_listing_made_is_refused_not_read_as_a_place_in_the_list(db, token):
    for name in ("q00", "q01", "q02"):
        db.create_queue(name)
    with pytest.raises(InvalidParameterValue, match="Invalid NextToken"):
        db.list_queues(max_results=2, next_token=token)
    urls, made = db.list_queues(max_results=1)
    assert [u.rsplit("/", 1)[1] for u in db.list_queues(max_results=2, next_token=made)[0]] == ["q01", "q02"]


@pytest.mark.parametrize("token", NEVER_MADE_TOKENS)
def test_a_dead_letter_source_listing_refuses_a_token_it_never_made(tmp_path, token):
    import sqsqlite

    client = sqsqlite.client(tmp_path / "sources.db")
    dlq = client.create_queue(QueueName="dlq")["QueueUrl"]
    arn = client.get_queue_attributes(QueueUrl=dlq, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    policy = json.dumps({"deadLetterTargetArn": arn, "maxReceiveCount": 3})
    for name in ("a", "b", "c"):
        client.create_queue(QueueName=name, Attributes={"RedrivePolicy": policy})
    with pytest.raises(client.exceptions.InvalidParameterValue, match="Invalid NextToken"):
        client.list_dead_letter_source_queues(QueueUrl=dlq, MaxResults=2, NextToken=token)
    made = client.list_dead_letter_source_queues(QueueUrl=dlq, MaxResults=1)["NextToken"]
    page = client.list_dead_letter_source_queues(QueueUrl=dlq, MaxResults=2, NextToken=made)["queueUrls"]
    assert [u.rsplit("/", 1)[1] for u in page] == ["b", "c"]


@pytest.mark.parametrize("token", [0, False, [], {}])
def test_a_token_of_another_type_is_refused_by_both_listings_not_read_as_their_start(db, token):
    from sqsqlite.actions import Actions

    dlq = db.create_queue("dlq")
    db.create_queue("source", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})})
    for action, request in (("ListQueues", {}), ("ListDeadLetterSourceQueues", {"QueueUrl": "dlq"})):
        with pytest.raises(InvalidParameterValue, match="Invalid NextToken"):
            Actions(db).call(action, {**request, "MaxResults": 1, "NextToken": token})


def test_list_queues_rejects_max_results_outside_1_to_1000(db):
    for bad in (0, 1001, "x"):
        with pytest.raises(InvalidParameterValue) as err:
            db.list_queues(max_results=bad)
        assert "1 to 1000" in str(err.value)


def test_get_queue_url_returns_endpoint_account_and_name(db):
    q = db.create_queue("where")
    assert db.get_queue_url("where") == "http://localhost:9324/000000000000/where" == q.url
    with pytest.raises(QueueDoesNotExist):
        db.get_queue_url("nowhere")


def test_every_entry_point_accepts_the_url_or_the_bare_name(db):
    q = db.create_queue("either")
    assert db.queue(q.url) == db.queue("either") == q
    db.queue(q.url).send_message("by url")
    assert db.queue("either").get_queue_attributes(["ApproximateNumberOfMessages"])["ApproximateNumberOfMessages"] == "1"
    db.delete_queue(q.url)
    with pytest.raises(QueueDoesNotExist):
        db.queue("either")


# ------------------------------------------------------------------ attributes


def test_set_queue_attributes_changes_only_the_named_attributes(db):
    q = db.create_queue("tunable")
    q.set_queue_attributes({"VisibilityTimeout": "120", "MaximumMessageSize": 2048})
    attrs = q.get_queue_attributes(["All"])
    assert attrs["VisibilityTimeout"] == "120"
    assert attrs["MaximumMessageSize"] == "2048"
    assert attrs["DelaySeconds"] == "0"
    assert attrs["MessageRetentionPeriod"] == "345600"


@pytest.mark.parametrize("name", list(D.INT_ATTRIBUTES))
def test_every_integer_attribute_accepts_its_bounds_and_refuses_one_past_them(db, name):
    r = D.INT_ATTRIBUTES[name]
    q = db.create_queue("ranged")
    for ok in (r.low, r.high):
        q.set_queue_attributes({name: str(ok)})
        assert q.get_queue_attributes([name]) == {name: str(ok)}
    for bad in (r.low - 1, r.high + 1, "ten", "1.5"):
        with pytest.raises(InvalidAttributeValue) as err:
            q.set_queue_attributes({name: bad})
        assert f"{r.low} to {r.high}" in str(err.value) and repr(bad) in str(err.value)
        with pytest.raises(InvalidAttributeValue):
            db.create_queue(f"bad-{name}", attributes={name: bad})
    assert q.get_queue_attributes([name]) == {name: str(r.high)}
    assert [u.rsplit("/", 1)[1] for u in db.list_queues()[0]] == ["ranged"]


def test_an_unknown_or_read_only_attribute_name_is_invalid_attribute_name(db):
    q = db.create_queue("strict")
    for bad in ("Visibility", "ApproximateNumberOfMessages", "QueueArn"):
        with pytest.raises(InvalidAttributeName) as err:
            q.set_queue_attributes({bad: "1"})
        assert bad in str(err.value)
    with pytest.raises(InvalidAttributeName) as err:
        q.get_queue_attributes(["NoSuchThing"])
    assert "NoSuchThing" in str(err.value)


def test_fifo_queue_cannot_be_set_after_creation(db):
    q = db.create_queue("standard")
    with pytest.raises(InvalidAttributeName):
        q.set_queue_attributes({"FifoQueue": "true"})


def test_passthrough_attributes_are_stored_and_returned_as_given(db):
    q = db.create_queue("kms", attributes={"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "600"})
    attrs = q.get_queue_attributes(["KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds", "SqsManagedSseEnabled"])
    assert attrs == {"KmsMasterKeyId": "alias/aws/sqs", "KmsDataKeyReusePeriodSeconds": "600", "SqsManagedSseEnabled": "false"}


def test_a_new_queue_is_encrypted_by_sqs_until_a_kms_key_is_set_and_the_two_exclude_each_other(db):
    q = db.create_queue("sse")
    assert q.get_queue_attributes(["All"])["SqsManagedSseEnabled"] == "true"
    with pytest.raises(InvalidAttributeName, match="You can use one type of server-side encryption"):
        q.set_queue_attributes({"KmsMasterKeyId": "k", "SqsManagedSseEnabled": "true"})
    q.set_queue_attributes({"KmsMasterKeyId": "k", "KmsDataKeyReusePeriodSeconds": "6000"})
    assert q.get_queue_attributes(["SqsManagedSseEnabled", "KmsMasterKeyId"]) == {"SqsManagedSseEnabled": "false", "KmsMasterKeyId": "k"}
    q.set_queue_attributes({"KmsMasterKeyId": "", "KmsDataKeyReusePeriodSeconds": "300"})
    attrs = q.get_queue_attributes(["All"])
    assert "KmsMasterKeyId" not in attrs and "KmsDataKeyReusePeriodSeconds" not in attrs
    assert attrs["SqsManagedSseEnabled"] == "false"


def test_get_queue_attributes_returns_only_the_names_asked_for(db):
    q = db.create_queue("narrow")
    assert q.get_queue_attributes(["DelaySeconds"]) == {"DelaySeconds": "0"}
    assert set(q.get_queue_attributes(["All"])) >= set(D.READ_ONLY_ATTRIBUTES)


# ------------------------------------------------------------------ counts


def test_the_read_only_counts_are_exact_for_visible_in_flight_and_delayed(db):
    q = db.create_queue("counted")
    for i in range(5):
        q.send_message(f"v{i}")
    for i in range(3):
        q.send_message(f"d{i}", delay_seconds=60)
    got = q.receive_message(max_number_of_messages=2)
    assert len(got) == 2
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"]
    assert q.get_queue_attributes(names) == dict(zip(names, ["3", "2", "3"]))
    got[0].delete()
    assert q.get_queue_attributes(names) == dict(zip(names, ["3", "1", "3"]))


# ------------------------------------------------------------------ tags


def test_tags_are_added_merged_listed_and_removed(db):
    q = db.create_queue("tagged", tags={"team": "a"})
    q.tag_queue({"env": "prod", "team": "b"})
    assert q.list_queue_tags() == {"team": "b", "env": "prod"}
    q.untag_queue(["team", "absent"])
    assert q.list_queue_tags() == {"env": "prod"}


def test_more_than_50_tags_is_refused_and_changes_nothing(db):
    q = db.create_queue("many-tags", tags={"keep": "1"})
    with pytest.raises(InvalidParameterValue) as err:
        q.tag_queue({f"k{i}": "v" for i in range(50)})
    assert "50" in str(err.value)
    assert q.list_queue_tags() == {"keep": "1"}


def test_every_queues_tags_are_read_at_once_by_name(db):
    db.create_queue("a", tags={"team": "billing"})
    db.create_queue("b")
    assert db.queue_tags() == {"a": {"team": "billing"}, "b": {}}


# ------------------------------------------------------------------ purge


def test_purge_deletes_every_message_and_a_second_purge_within_60_seconds_is_refused(db, clock):
    q = db.create_queue("purged")
    for i in range(4):
        q.send_message(f"m{i}")
    q.receive_message()
    q.purge_queue()
    assert q.receive_message() == []
    assert all(v == "0" for k, v in q.get_queue_attributes(["All"]).items() if k.startswith("ApproximateNumber"))
    q.send_message("after purge")
    clock.advance(59)
    with pytest.raises(PurgeQueueInProgress) as err:
        q.purge_queue()
    assert "60" in str(err.value)
    # The refused purge changed nothing.
    assert [m.body for m in q.receive_message()] == ["after purge"]
    clock.advance(1)
    q.purge_queue()
    assert q.peek() == []


def test_purging_the_visible_messages_leaves_delayed_and_in_flight_ones_counts_what_it_deleted_and_can_run_again(db, clock):
    q = db.create_queue("purged")
    for i in range(2):
        q.send_message(f"m{i}")
    q.receive_message()
    q.send_message("later", delay_seconds=60)
    q.send_message("now")
    assert q.purge_visible() == 2  # the message not received, and "now"
    assert q.peek("visible") == []
    assert len(q.peek("in-flight")) == 1 and [m.body for m in q.peek("delayed")] == ["later"]
    q.send_message("again")
    assert q.purge_visible() == 1  # no 60-second rule
    assert q.purge_visible() == 0


def test_a_purge_of_the_visible_messages_receives_none_so_none_goes_to_the_dead_letter_queue(db):
    dlq = db.create_queue("dlq")
    q = db.create_queue("src", attributes={"RedrivePolicy": _redrive(db, "dlq", 1)})
    q.send_message("poison")
    q.receive_message()[0].change_visibility(0)  # its next receive moves it
    assert q.purge_visible() == 1
    assert dlq.peek() == [] and q.peek() == []


# ------------------------------------------------------------------ redrive policies


def test_a_redrive_policy_needs_an_existing_dead_letter_queue(db):
    with pytest.raises(InvalidParameterValue) as err:
        db.create_queue("src", attributes={"RedrivePolicy": _redrive(db, "missing-dlq")})
    assert "missing-dlq" in str(err.value)
    with pytest.raises(QueueDoesNotExist):
        db.queue("src")
    q = db.create_queue("src2")
    with pytest.raises(InvalidParameterValue):
        q.set_queue_attributes({"RedrivePolicy": _redrive(db, "missing-dlq")})
    assert "RedrivePolicy" not in q.get_queue_attributes(["All"])


def test_a_redrive_policy_round_trips_and_can_be_removed(db):
    db.create_queue("dlq")
    q = db.create_queue("src", attributes={"RedrivePolicy": _redrive(db, "dlq", 5)})
    policy = json.loads(q.get_queue_attributes(["RedrivePolicy"])["RedrivePolicy"])
    assert policy == {"deadLetterTargetArn": db.queue_arn("dlq"), "maxReceiveCount": 5}
    q.set_queue_attributes({"RedrivePolicy": ""})
    assert "RedrivePolicy" not in q.get_queue_attributes(["All"])
    assert db.queue("dlq").list_dead_letter_source_queues() == []


def test_a_dead_letter_queue_must_be_the_same_type_as_its_source(db):
    db.create_queue("fifo-dlq.fifo", attributes={"FifoQueue": "true"})
    with pytest.raises(InvalidParameterValue) as err:
        db.create_queue("std-src", attributes={"RedrivePolicy": _redrive(db, "fifo-dlq.fifo")})
    assert "standard" in str(err.value)
    db.create_queue("std-dlq")
    with pytest.raises(InvalidParameterValue) as err:
        db.create_queue("fifo-src.fifo", attributes={"FifoQueue": "true", "RedrivePolicy": _redrive(db, "std-dlq")})
    assert "FIFO" in str(err.value)


def test_a_queue_may_name_itself_as_its_dead_letter_queue_and_keeps_delivering_its_messages(db, clock):
    # SQS accepts it (recorded: test_set_empty_redrive_policy); a move to itself would change
    # nothing, so a message past maxReceiveCount stays and is delivered on.
    q = db.create_queue("loop")
    q.set_queue_attributes({"RedrivePolicy": _redrive(db, "loop", 1)})
    assert json.loads(q.get_queue_attributes(["RedrivePolicy"])["RedrivePolicy"])["deadLetterTargetArn"] == db.queue_arn("loop")
    q.send_message("again and again")
    for receive in range(1, 4):
        [m] = q.receive_message(visibility_timeout=0, message_system_attribute_names=["ApproximateReceiveCount"])
        assert (m.body, m.attributes["ApproximateReceiveCount"]) == ("again and again", str(receive))
    assert q.list_dead_letter_source_queues() == [q.url]
    q.set_queue_attributes({"RedrivePolicy": ""})
    assert "RedrivePolicy" not in q.get_queue_attributes(["All"])


@pytest.mark.parametrize("count", [0, 1001, "many"])
def test_max_receive_count_must_be_1_to_1000(db, count):
    db.create_queue("dlq")
    q = db.create_queue("src")
    with pytest.raises(InvalidParameterValue) as err:
        q.set_queue_attributes({"RedrivePolicy": json.dumps({"deadLetterTargetArn": db.queue_arn("dlq"), "maxReceiveCount": count})})
    assert f"Reason: Invalid value for maxReceiveCount: {count}, valid values are from 1 to 1000 both inclusive." in err.value.message


def test_redrive_allow_policy_deny_all_refuses_every_source(db):
    db.create_queue("closed", attributes={"RedriveAllowPolicy": json.dumps({"redrivePermission": "denyAll"})})
    with pytest.raises(InvalidParameterValue) as err:
        db.create_queue("src", attributes={"RedrivePolicy": _redrive(db, "closed")})
    assert "RedriveAllowPolicy" in str(err.value)


def test_redrive_allow_policy_by_queue_allows_only_the_listed_sources(db):
    allow = {"redrivePermission": "byQueue", "sourceQueueArns": [db.queue_arn("friend")]}
    db.create_queue("picky", attributes={"RedriveAllowPolicy": json.dumps(allow)})
    db.create_queue("friend", attributes={"RedrivePolicy": _redrive(db, "picky")})
    with pytest.raises(InvalidParameterValue):
        db.create_queue("stranger", attributes={"RedrivePolicy": _redrive(db, "picky")})
    assert db.queue("picky").list_dead_letter_source_queues() == [db.queue_url("friend")]


_UNSUPPORTED = "Invalid value for the parameter RedriveAllowPolicy. Reason: Amazon SQS can't create the redrive allow policy, as it’s in an unsupported format."


@pytest.mark.parametrize(
    "policy, error, words",
    [
        ({"redrivePermission": "sometimes"}, InvalidAttributeValue, _UNSUPPORTED),
        ({"sourceQueueArns": []}, InvalidAttributeValue, _UNSUPPORTED),
        ({"redrivePermission": "allowAll", "extra": 1}, InvalidAttributeValue, _UNSUPPORTED),
        ({"redrivePermission": "byQueue", "sourceQueueArns": "arn:aws:sqs:us-east-1:000000000000:q"}, InvalidAttributeValue, _UNSUPPORTED),
        ("not json", InvalidAttributeValue, _UNSUPPORTED),
        (
            {"redrivePermission": "byQueue"},
            InvalidParameterValue,
            'Value {"redrivePermission": "byQueue"} for parameter RedriveAllowPolicy is invalid. Reason: Amazon SQS can\'t create the '
            "redrive allow policy. When you specify the byQueue permission type, you must also specify one or more sourceQueueArns values.",
        ),
        (
            {"redrivePermission": "byQueue", "sourceQueueArns": [f"arn:aws:sqs:us-east-1:000000000000:q{i}" for i in range(11)]},
            InvalidParameterValue,
            "Reason: Amazon SQS can't create the redrive allow policy. The maximum number of source queue ARNs you can specify is 10.",
        ),
        (
            {"redrivePermission": "allowAll", "sourceQueueArns": ["arn:aws:sqs:us-east-1:000000000000:q"]},
            InvalidParameterValue,
            "Reason: Amazon SQS can't create the redrive allow policy. To specify one or more source queue ARNs, you must set "
            "redrivePermission to byQueue.",
        ),
    ],
)
def test_a_redrive_allow_policy_sqs_cannot_take_is_refused_in_its_words_and_changes_nothing(db, policy, error, words):
    q = db.create_queue("dlq")
    with pytest.raises(error) as refused:
        q.set_queue_attributes({"RedriveAllowPolicy": policy if isinstance(policy, str) else json.dumps(policy)})
    assert words in refused.value.message
    assert "RedriveAllowPolicy" not in q.get_queue_attributes(["All"])


def test_a_redrive_policy_sqs_cannot_take_is_refused_in_its_words(db):
    db.create_queue("dlq.fifo", attributes={"FifoQueue": "true"})
    q = db.create_queue("source")
    with pytest.raises(InvalidAttributeValue) as not_json:
        q.set_queue_attributes({"RedrivePolicy": "[1]"})
    assert not_json.value.message == "Invalid value for the parameter RedrivePolicy. Reason: Redrive policy is not a valid JSON map."
    with pytest.raises(InvalidParameterValue) as empty:
        q.set_queue_attributes({"RedrivePolicy": "{ }"})
    assert (
        empty.value.message
        == "Value { } for parameter RedrivePolicy is invalid. Reason: Redrive policy does not contain mandatory attribute: maxReceiveCount."
    )
    with pytest.raises(InvalidParameterValue) as other_kind:
        q.set_queue_attributes({"RedrivePolicy": _redrive(db, "dlq.fifo")})
    assert other_kind.value.message.endswith("Reason: Dead-letter queue must be same type of queue as the source..")
    assert "RedrivePolicy" not in q.get_queue_attributes(["All"])


def test_a_policy_is_checked_as_json_and_returned_exactly_as_given(db):
    text = '{ "Version": "2012-10-17",\n  "Statement": [] }'
    q = db.create_queue("with-policy", attributes={"Policy": text})
    assert q.get_queue_attributes(["Policy"]) == {"Policy": text}
    q.set_queue_attributes({"Policy": {"Version": "2012-10-17", "Statement": []}})
    assert json.loads(q.get_queue_attributes(["Policy"])["Policy"]) == {"Version": "2012-10-17", "Statement": []}
    with pytest.raises(InvalidAttributeValue):
        q.set_queue_attributes({"Policy": "[1, 2]"})
    q.set_queue_attributes({"Policy": ""})
    assert "Policy" not in q.get_queue_attributes(["All"])


def test_permissions_are_statements_of_the_policy_attribute_named_by_their_labels(db):
    q = db.create_queue("shared")
    q.add_permission("both", ["111111111111", "222222222222"], ["SendMessage", "ReceiveMessage"])
    q.add_permission("one", ["111111111111"], ["*"])
    policy = json.loads(q.get_queue_attributes(["Policy"])["Policy"])
    assert policy["Version"] == "2008-10-17" and policy["Id"] == f"{q.arn}/SQSDefaultPolicy"
    assert policy["Statement"][0]["Principal"] == {"AWS": ["arn:aws:iam::111111111111:root", "arn:aws:iam::222222222222:root"]}
    assert policy["Statement"][0]["Action"] == ["SQS:SendMessage", "SQS:ReceiveMessage"]
    assert policy["Statement"][1] == {
        "Sid": "one",
        "Effect": "Allow",
        "Principal": {"AWS": "arn:aws:iam::111111111111:root"},
        "Action": "SQS:*",
        "Resource": q.arn,
    }
    with pytest.raises(InvalidParameterValue, match="Value one for parameter Label is invalid. Reason: Already exists."):
        q.add_permission("one", ["111111111111"], ["SendMessage"])
    with pytest.raises(InvalidParameterValue, match="for parameter ActionName is invalid"):
        q.add_permission("bad", ["111111111111"], ["Explode"])
    q.remove_permission("both")
    q.remove_permission("one")
    assert q.get_queue_attributes(["Policy"]) == {}
    with pytest.raises(InvalidParameterValue, match="Reason: can't find label."):
        q.remove_permission("one")
