"""Every SQS action is described once (sqsqlite.action_table) and offered, under the names taken
from there, by every layer: the action layer (and so the HTTP endpoint), the boto3-shaped client,
the asyncio client and the CLI. An action added to one and forgotten in another fails here."""

from __future__ import annotations

import inspect

import pytest

import sqsqlite
from sqsqlite.action_table import BY_METHOD, BY_NAME, PAGINATED, TABLE
from sqsqlite.actions import ACTIONS, MEMBERS, Actions
from sqsqlite.aio import AsyncSQSClient
from sqsqlite.cli import aws, calls, shapes
from sqsqlite.cli.options import AWS_OPTIONS, GLOBAL_OPTIONS
from sqsqlite.client import SQSClient

# What the clients offer besides the actions (boto3's and aiobotocore's own, and sqsqlite's).
CLIENT_EXTRAS = {"close", "can_paginate", "get_paginator", "get_waiter", "waiter_names", "exceptions", "meta", "db"}
AIO_EXTRAS = CLIENT_EXTRAS | {"open", "call", "sync", "wakeups"}


def public_callables(cls: type) -> set[str]:
    return {n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_each_action_has_one_name_per_layer_taken_from_its_sqs_name():
    assert len(BY_NAME) == len(BY_METHOD) == len(TABLE)
    send = BY_NAME["ReceiveMessage"]
    assert (send.method, send.command) == ("receive_message", "receive-message")
    assert BY_NAME["ListDeadLetterSourceQueues"].command == "list-dead-letter-source-queues"
    for action in TABLE:
        assert set(action.required) <= set(action.members), action.name


def test_the_action_layer_offers_every_action_in_the_table_and_no_other():
    assert ACTIONS == tuple(a.name for a in TABLE)
    assert MEMBERS == {a.name: tuple(a.members) for a in TABLE}
    pascal = {n for n in vars(Actions) if n[:1].isupper()}
    assert pascal == set(BY_NAME)


def test_the_client_offers_every_action_in_the_table_and_no_other(tmp_path):
    assert public_callables(SQSClient) - CLIENT_EXTRAS == set(BY_METHOD)
    client = sqsqlite.client(str(tmp_path / "c.db"))
    try:
        for action in TABLE:
            method = getattr(client, action.method)
            assert method.__name__ == action.method and method.__doc__.startswith(action.name)
            assert all(m in method.__doc__ for m in action.members)
            # help() shows SQS's members, keyword only, the required ones without a default.
            params = inspect.signature(method).parameters
            assert list(params) == list(action.members), action.name
            assert {n for n, p in params.items() if p.default is inspect.Parameter.empty} == set(action.required)
            assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
            assert client.meta.method_to_api_mapping[action.method] == action.name
            assert client.can_paginate(action.method) == (action.pages is not None)
        with pytest.raises(TypeError, match=r"^purge_queue\(\) only accepts keyword arguments\.$"):
            client.purge_queue("q")
    finally:
        client.close()


def test_the_asyncio_client_offers_every_action_in_the_table_as_a_coroutine_and_no_other():
    assert public_callables(AsyncSQSClient) - AIO_EXTRAS == set(BY_METHOD)
    for action in TABLE:
        coroutine = getattr(AsyncSQSClient, action.method)
        assert inspect.iscoroutinefunction(coroutine), action.method
        assert action.name in coroutine.__doc__


def test_the_cli_offers_every_action_in_the_table_as_its_aws_command_and_no_other():
    commands = {c.operation: c for c in aws.COMMANDS}
    assert len(commands) == len(aws.COMMANDS) and set(commands) == set(BY_NAME)
    for action in TABLE:
        cmd = commands[action.name]
        assert cmd.name == action.command
        # Each of its own flags sets a member of the action, named after it.
        own = {opt for p in cmd.params if p.name not in GLOBAL_OPTIONS + AWS_OPTIONS for opt in p.opts}
        assert own == {aws.flag(m) for m in action.members}, action.name
    assert calls.PAGINATED == PAGINATED and shapes.MEMBERS == {a.name: a.members for a in TABLE}


def test_the_actions_the_table_says_never_write_run_without_a_write(tmp_path, monkeypatch):
    # The endpoint and sqsqlite.aio take the write lock up front only for the actions that may
    # write: one the table calls a read must never need it.
    db = sqsqlite.connect(str(tmp_path / "reads.db"))
    dead = db.create_queue("dead")
    source = db.create_queue("source", attributes={"RedrivePolicy": f'{{"deadLetterTargetArn": "{dead.arn}", "maxReceiveCount": 1}}'})
    source.send_message("in flight")
    source.receive_message()
    dead.send_message("dead")
    actions = Actions(db)
    requests = {
        "ListQueues": {},
        "GetQueueUrl": {"QueueName": "source"},
        "GetQueueAttributes": {"QueueUrl": "source", "AttributeNames": ["All"]},
        "ListQueueTags": {"QueueUrl": "source"},
        "ListDeadLetterSourceQueues": {"QueueUrl": "dead"},
        "ListMessageMoveTasks": {"SourceArn": dead.arn},
    }
    assert set(requests) == {a.name for a in TABLE if not a.writes}

    def no_write(*args, **kwargs):
        raise AssertionError("a read wrote")

    monkeypatch.setattr(db.store, "write", no_write)
    for action, request in requests.items():
        actions.call(action, request)
    db.close()
