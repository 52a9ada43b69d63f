"""One file, many accounts and regions: each account's queues in each region are apart, as SQS keeps them."""

import json

import pytest

import sqsqlite
from sqsqlite.errors import (
    InvalidParameterValue,
    QueueDeletedRecently,
    QueueDoesNotExist,
    ReceiptHandleIsInvalid,
    ResourceNotFoundException,
)


@pytest.fixture
def views(db):
    """The default account in us-east-1, the same account in eu-west-1, another account in us-east-1."""
    return db, db.scoped(region="eu-west-1"), db.scoped(account_id="111111111111")


def test_a_queue_name_is_unique_only_within_its_account_and_region(views):
    home, west, other = views
    for view in views:
        view.create_queue("orders").send_message(f"for {view.account_id} in {view.region}")
    assert [m.body for m in home.queue("orders").receive_message()] == ["for 000000000000 in us-east-1"]
    assert [m.body for m in west.queue("orders").receive_message()] == ["for 000000000000 in eu-west-1"]
    assert [m.body for m in other.queue("orders").receive_message()] == ["for 111111111111 in us-east-1"]


def test_each_view_lists_counts_and_names_only_its_own_queues(views):
    home, west, other = views
    home.create_queue("a")
    west.create_queue("b")
    other.create_queue("c").send_message("x")
    assert home.list_queues()[0] == ["http://localhost:9324/000000000000/a"]
    assert west.queue_names() == ["b"]
    assert [s.name for s in other.stats()] == ["c"]
    assert other.stats()[0].visible == 1
    assert list(other.queue_tags()) == ["c"]
    with pytest.raises(QueueDoesNotExist):
        home.queue("b")
    with pytest.raises(QueueDoesNotExist):
        west.get_queue_url("c")


def test_urls_and_arns_name_the_views_account_and_region(views):
    _home, west, other = views
    assert west.create_queue("q").arn == "arn:aws:sqs:eu-west-1:000000000000:q"
    assert other.create_queue("q").url == "http://localhost:9324/111111111111/q"
    assert other.queue("q").get_queue_attributes(["QueueArn"]) == {"QueueArn": "arn:aws:sqs:us-east-1:111111111111:q"}


def test_a_receipt_handle_of_one_regions_queue_is_refused_by_the_same_name_in_another(views):
    home, west, _other = views
    home.create_queue("q").send_message("home")
    west.create_queue("q").send_message("west")
    [msg] = home.queue("q").receive_message()
    west.queue("q").receive_message()  # this process has claimed from both queues named q
    with pytest.raises(ReceiptHandleIsInvalid):
        west.queue("q").delete_message(msg.receipt_handle)
    home.queue("q").delete_message(msg.receipt_handle)


def test_a_deleted_name_waits_only_in_its_own_account_and_region(views, clock):
    home, west, _other = views
    home.create_queue("q")
    home.delete_queue("q")
    with pytest.raises(QueueDeletedRecently):
        home.create_queue("q")
    west.create_queue("q")  # another region's name space


def test_a_dead_letter_queue_in_another_region_or_account_is_refused_as_sqs_refuses_it(views):
    home, west, other = views
    west.create_queue("dlq")
    other.create_queue("dlq")
    for target in (west, other):
        policy = json.dumps({"deadLetterTargetArn": target.queue_arn("dlq"), "maxReceiveCount": 1}, separators=(",", ":"))
        with pytest.raises(InvalidParameterValue) as info:
            home.create_queue("src", attributes={"RedrivePolicy": policy})
        assert info.value.message == f"Value {policy} for parameter RedrivePolicy is invalid. Reason: Dead letter target does not exist."


def test_dead_letter_queues_and_move_tasks_work_within_another_region(views, clock):
    _home, west, _other = views
    dlq = west.create_queue("dlq")
    src = west.create_queue("src", attributes={"RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1})})
    src.send_message("poison")
    src.receive_message(visibility_timeout=0)
    assert src.receive_message() == []  # the second receive moved it to the dead-letter queue
    assert dlq.list_dead_letter_source_queues() == [src.url]
    [moved] = dlq.receive_message(visibility_timeout=0)
    assert moved.attributes.get("DeadLetterQueueSourceArn", src.arn) == src.arn
    handle = west.start_message_move_task(dlq.arn, background=False)
    assert west.run_message_move_task(handle).status == "COMPLETED"
    assert [m.body for m in src.receive_message()] == ["poison"]
    assert [t.source_arn for t in west.list_message_move_tasks(dlq.arn)] == [dlq.arn]
    with pytest.raises(ResourceNotFoundException):
        _home.start_message_move_task(dlq.arn, background=False)


def test_a_view_shares_the_file_and_closing_it_leaves_its_database_open(db):
    west = db.scoped(region="eu-west-1")
    west.create_queue("q")
    west.close()
    assert db.scoped(region="eu-west-1").queue_names() == ["q"]
    assert db.scoped(region="eu-west-1").scoped(account_id="111111111111").region == "eu-west-1"


def test_a_bad_region_or_account_for_a_view_is_refused(db):
    with pytest.raises(InvalidParameterValue, match="Invalid region"):
        db.scoped(region="EU West")
    with pytest.raises(InvalidParameterValue):
        db.scoped(account_id="12")


def test_a_database_opened_for_another_account_and_region_sees_that_ones_queues(db_path, clock):
    with sqsqlite.connect(db_path, clock=clock, region="ap-south-1", account_id="222222222222") as first:
        first.create_queue("far")
    with sqsqlite.connect(db_path, clock=clock) as default:
        assert default.queue_names() == []
        assert default.scoped(region="ap-south-1", account_id="222222222222").queue_names() == ["far"]


def test_another_accounts_queue_url_names_that_accounts_queue_never_this_ones_of_the_same_name(views):
    default, _, other = views
    mine, theirs = default.create_queue("orders"), other.create_queue("orders")
    default.queue(theirs.url).send_message("for 111111111111")
    assert default.queue(theirs.url).arn == "arn:aws:sqs:us-east-1:111111111111:orders"
    assert [m.body for m in other.queue("orders").receive_message()] == ["for 111111111111"]
    assert mine.receive_message() == []
    default.delete_queue(theirs.url)
    assert default.queue_names() == ["orders"] and other.queue_names() == []


def test_a_path_style_url_names_any_region_a_signature_may_name_and_a_malformed_one_names_none(views):
    from sqsqlite.queue_urls import Scope, scope_of_url

    assert scope_of_url("http://h:1/queue/elasticmq/000000000000/q") == Scope("000000000000", "elasticmq")
    assert scope_of_url("http://[::1/000000000000/q") == Scope(None, None)
    default, _, _ = views
    default.scoped(region="elasticmq").create_queue("q")
    assert default.queue("http://h:1/queue/elasticmq/000000000000/q").arn == "arn:aws:sqs:elasticmq:000000000000:q"


def test_a_move_task_is_cancelled_only_from_its_own_account_and_region(views):
    default, west, other = views
    dlq = west.create_queue("dl")
    west.create_queue("src", redrive_policy=json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1}))
    dlq.send_message("m")
    handle = west.start_message_move_task(dlq.arn, destination_arn=west.create_queue("back").arn, background=False)
    for stranger in (default, other.scoped(region="eu-west-1")):
        with pytest.raises(ResourceNotFoundException):
            stranger.cancel_message_move_task(handle)
    assert [t.status for t in west.list_message_move_tasks(dlq.arn)] == ["RUNNING"]
    assert west.cancel_message_move_task(handle) == 0


def test_a_move_task_returns_no_message_to_a_source_queue_of_another_region(views, tmp_path):
    default, west, _ = views
    west_src = west.create_queue(
        "src", redrive_policy=json.dumps({"deadLetterTargetArn": west.create_queue("dl").arn, "maxReceiveCount": 1})
    )
    west_src.send_message("poison")
    west_src.receive_message(visibility_timeout=0)
    assert west_src.receive_message() == []  # moved to eu-west-1's dead-letter queue
    records = list(west.queue("dl").export_messages())
    dlq = default.create_queue("dl")
    default.create_queue("src", redrive_policy=json.dumps({"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 1}))
    dlq.import_messages(records)  # us-east-1's dead-letter queue now holds a message of eu-west-1's src
    task = default.run_message_move_task(default.start_message_move_task(dlq.arn, background=False))
    assert (task.status, task.failure_reason) == ("FAILED", "AWS.SimpleQueueService.NonExistentQueue")
    assert dlq.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "1"}
    assert west_src.get_queue_attributes(["ApproximateNumberOfMessages"]) == {"ApproximateNumberOfMessages": "0"}


def test_a_url_naming_an_account_the_file_holds_no_queue_of_names_this_databases_queue(views):
    # As the aws CLI's examples print them (account 123456789012): they run here as printed.
    default, _, _ = views
    default.create_queue("MyQueue")
    default.queue("https://sqs.us-east-1.amazonaws.com/123456789012/MyQueue").send_message("m")
    assert [m.body for m in default.queue("MyQueue").receive_message()] == ["m"]
