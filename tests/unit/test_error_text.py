"""What an error says in Python: its message once (the class names the code already), and for
a queue that does not exist, the names of those that do which it is close to."""

from __future__ import annotations

import traceback

import pytest

import sqsqlite
from sqsqlite.core.rules import close_names
from sqsqlite.errors import DatabaseError, QueueDoesNotExist


@pytest.fixture
def db(tmp_path):
    d = sqsqlite.connect(str(tmp_path / "errors.db"))
    for name in ("MyQueue", "orders", "orders-dlq"):
        d.create_queue(name)
    yield d
    d.close()


def test_str_of_an_error_is_its_message_and_hint_without_its_class():
    err = QueueDoesNotExist("The specified queue does not exist.", "The queue 'x' does not exist.")
    assert str(err) == "The specified queue does not exist. (The queue 'x' does not exist.)"
    assert str(DatabaseError("Can't create database file '/nope/app.db'.")) == "Can't create database file '/nope/app.db'."


def test_a_tracebacks_last_line_names_the_class_once(tmp_path):
    with pytest.raises(DatabaseError) as caught:
        sqsqlite.connect(str(tmp_path / "no-such-folder" / "app.db"))
    [line] = traceback.format_exception_only(caught.type, caught.value)
    assert line.startswith("sqsqlite.errors.DatabaseError: ") and line.count("DatabaseError") == 1, line


def test_a_mistyped_queue_name_is_told_the_close_names_that_exist(db):
    with pytest.raises(QueueDoesNotExist) as caught:
        db.queue("MyQeue")
    assert caught.value.message == "The specified queue does not exist."  # SQS's own words, unchanged
    assert caught.value.hint == "The queue 'MyQeue' does not exist. Did you mean 'MyQueue'?"


def test_a_queue_named_in_another_case_is_suggested(db):
    with pytest.raises(QueueDoesNotExist) as caught:
        db.get_queue_url("myqueue")
    assert caught.value.hint == "The queue 'myqueue' does not exist. Did you mean 'MyQueue'?"


def test_a_name_close_to_none_gets_no_suggestion(db):
    with pytest.raises(QueueDoesNotExist) as caught:
        db.queue("payments")
    assert caught.value.hint == "The queue 'payments' does not exist."


def test_close_names_come_same_but_case_first_then_by_edit_distance_at_most_three():
    names = ["order", "ORDERS", "orders-dlq", "ordres", "odrers", "invoices"]
    assert close_names("orders", names) == ["ORDERS", "order", "ordres"]
    assert close_names("orders", ["orders"]) == []  # itself is no suggestion
    assert close_names("x", []) == []


def test_the_boto3_shaped_clients_error_keeps_botocores_text_and_carries_the_suggestion(tmp_path):
    botocore = pytest.importorskip("botocore.exceptions")
    sqs = sqsqlite.client(str(tmp_path / "client.db"))
    sqs.create_queue(QueueName="MyQueue")
    with pytest.raises(sqs.exceptions.QueueDoesNotExist) as caught:
        sqs.get_queue_url(QueueName="MyQeue")
    err = caught.value
    assert str(err) == str(botocore.ClientError(err.response, "GetQueueUrl"))
    assert str(err) == (
        "An error occurred (AWS.SimpleQueueService.NonExistentQueue) when calling the GetQueueUrl operation: "
        "The specified queue does not exist."
    )
    assert err.hint == "The queue 'MyQeue' does not exist. Did you mean 'MyQueue'?"


def test_the_close_names_are_worked_out_only_when_the_hint_is_read(db, monkeypatch):
    from sqsqlite.core import rules

    asked = []
    monkeypatch.setattr(rules, "close_names", lambda name, names: asked.append(name) or ["MyQueue"])
    with pytest.raises(QueueDoesNotExist) as caught:
        db.queue("MyQeue")
    assert asked == []  # code that catches the error and goes on never pays for them
    assert caught.value.hint.endswith("Did you mean 'MyQueue'?") and asked == ["MyQeue"]
    caught.value.hint  # noqa: B018  # once only
    assert asked == ["MyQeue"]


def test_a_missing_queues_error_pickles_with_its_hint(db):
    import pickle

    with pytest.raises(QueueDoesNotExist) as caught:
        db.queue("MyQeue")
    again = pickle.loads(pickle.dumps(caught.value))
    assert (type(again), str(again), again.hint) == (QueueDoesNotExist, str(caught.value), caught.value.hint)
