"""The ``aws sqs`` commands: same names, same flags, same JSON, on a local file.

Each command builds the SQS request from its flags and runs it through the action layer
(:mod:`sqsqlite.actions`), so it behaves exactly as the Python client and the endpoint do.
"""

from __future__ import annotations

from collections.abc import Callable

import click

from sqsqlite import defaults as D

from .calls import PAGINATED
from .options import (
    Command,
    ListOption,
    Settings,
    aws_options,
    command_options_first,
    global_options,
    pass_settings,
    queue_url_option,
    resume_hint,
)
from .values import ENTRY, INTEGER, MAP, MESSAGE_ATTRIBUTES, STRINGS, TEXT

COMMANDS: list[click.Command] = []


def command(name: str, operation: str) -> Callable:
    def decorate(f: Callable) -> click.Command:
        f = aws_options(paginated=operation in PAGINATED)(global_options(sqs=True)(pass_settings(f)))
        cmd = command_options_first(click.command(name, cls=Command, operation=operation)(f))
        COMMANDS.append(cmd)
        return cmd

    return decorate


def _list(*names: str, help: str, type=STRINGS) -> Callable:
    return click.option(*names, cls=ListOption, type=type, help=help)


# ---------------------------------------------------------------------- queues


@command("create-queue", "CreateQueue")
@click.option(
    "--queue-name", type=TEXT, required=True, help=f"1-{D.MAX_QUEUE_NAME_LENGTH} characters of A-Z a-z 0-9 - _; FIFO queues end in .fifo."
)
@click.option("--attributes", type=MAP, help="Queue attributes: Name=value,... or JSON or file://.")
@click.option("--tags", type=MAP, help="Tags: Key=value,... or JSON or file://.")
def create_queue(s: Settings, queue_name, attributes, tags):
    """Create a queue. With equal attributes, it returns the existing queue.

    \b
    Example: sqsqlite create-queue --queue-name MyQueue --attributes VisibilityTimeout=60
    """
    s.call("CreateQueue", QueueName=queue_name, Attributes=attributes, tags=tags)


@command("delete-queue", "DeleteQueue")
@queue_url_option()
def delete_queue(s: Settings, queue_url):
    """Delete a queue and its messages. Its name is free again after 60 seconds.

    \b
    Example: sqsqlite delete-queue --queue-url MyQueue
    """
    s.call("DeleteQueue", QueueUrl=queue_url)


@command("list-queues", "ListQueues")
@click.option("--queue-name-prefix", type=TEXT, help="Only queues whose name starts with this.")
@click.option("--max-results", type=INTEGER, help="One request of at most this many (1-1000), with the service's NextToken for more.")
@click.option("--next-token", type=TEXT, help="The NextToken a previous --max-results request printed.")
def list_queues(s: Settings, queue_name_prefix, max_results, next_token):
    """List queue URLs, by name.

    \b
    Example: sqsqlite list-queues --queue-name-prefix My
    """
    s.call("ListQueues", QueueNamePrefix=queue_name_prefix, MaxResults=max_results, NextToken=next_token)


@command("get-queue-url", "GetQueueUrl")
@click.option("--queue-name", type=TEXT, required=True, help="The queue's name.")
@click.option("--queue-owner-aws-account-id", type=TEXT, help="Must be this database's account id if given.")
def get_queue_url(s: Settings, queue_name, queue_owner_aws_account_id):
    """Print a queue's URL.

    \b
    Example: sqsqlite get-queue-url --queue-name MyQueue
    """
    s.call("GetQueueUrl", QueueName=queue_name, QueueOwnerAWSAccountId=queue_owner_aws_account_id)


@command("get-queue-attributes", "GetQueueAttributes")
@queue_url_option()
@_list("--attribute-names", help="One or more attribute names, or All.")
def get_queue_attributes(s: Settings, queue_url, attribute_names):
    """Print queue attributes. Values are strings; counts are exact.

    \b
    Example: sqsqlite get-queue-attributes --queue-url MyQueue --attribute-names VisibilityTimeout
    """
    s.call("GetQueueAttributes", QueueUrl=queue_url, AttributeNames=attribute_names)


@command("set-queue-attributes", "SetQueueAttributes")
@queue_url_option()
@click.option("--attributes", type=MAP, required=True, help="Name=value,... or JSON or file://.")
def set_queue_attributes(s: Settings, queue_url, attributes):
    """Change queue attributes. A new VisibilityTimeout applies to later receives only.

    \b
    Example: sqsqlite set-queue-attributes --queue-url MyQueue --attributes VisibilityTimeout=120
    """
    s.call("SetQueueAttributes", QueueUrl=queue_url, Attributes=attributes)


@command("purge-queue", "PurgeQueue")
@queue_url_option()
def purge_queue(s: Settings, queue_url):
    """Delete every message in a queue. Once per 60 seconds.

    \b
    Example: sqsqlite purge-queue --queue-url MyQueue
    """
    s.call("PurgeQueue", QueueUrl=queue_url)


@command("list-dead-letter-source-queues", "ListDeadLetterSourceQueues")
@queue_url_option()
@click.option("--max-results", type=INTEGER, help="One request of at most this many (1-1000), with the service's NextToken for more.")
@click.option("--next-token", type=TEXT, help="The NextToken a previous --max-results request printed.")
def list_dead_letter_source_queues(s: Settings, queue_url, max_results, next_token):
    """List the queues that dead-letter here.

    Those whose RedrivePolicy names this queue as deadLetterTargetArn.

    \b
    Example: sqsqlite list-dead-letter-source-queues --queue-url MyQueue-dlq
    """
    s.call("ListDeadLetterSourceQueues", QueueUrl=queue_url, MaxResults=max_results, NextToken=next_token)


@command("tag-queue", "TagQueue")
@queue_url_option()
@click.option("--tags", type=MAP, required=True, help="Key=value,... or JSON or file://.")
def tag_queue(s: Settings, queue_url, tags):
    """Add or replace tags on a queue.

    \b
    Example: sqsqlite tag-queue --queue-url MyQueue --tags team=billing,env=dev
    """
    s.call("TagQueue", QueueUrl=queue_url, Tags=tags)


@command("untag-queue", "UntagQueue")
@queue_url_option()
@_list("--tag-keys", help="One or more tag keys to remove.")
def untag_queue(s: Settings, queue_url, tag_keys):
    """Remove tags from a queue.

    \b
    Example: sqsqlite untag-queue --queue-url MyQueue --tag-keys env team
    """
    s.call("UntagQueue", QueueUrl=queue_url, TagKeys=tag_keys)


@command("add-permission", "AddPermission")
@queue_url_option()
@click.option("--label", type=TEXT, required=True, help="The permission's name, unique in the queue's policy.")
@_list("--aws-account-ids", help="The AWS account ids the permission grants to.")
@_list("--actions", help="The actions it grants: SendMessage, ReceiveMessage, ... or *.")
def add_permission(s: Settings, queue_url, label, aws_account_ids, actions):
    """Add a statement to the queue's Policy, as SQS writes it (kept, not enforced locally).

    \b
    Example: sqsqlite add-permission --queue-url MyQueue --label Send --aws-account-ids 111122223333 --actions SendMessage
    """
    s.call("AddPermission", QueueUrl=queue_url, Label=label, AWSAccountIds=aws_account_ids, Actions=actions)


@command("remove-permission", "RemovePermission")
@queue_url_option()
@click.option("--label", type=TEXT, required=True, help="The permission to remove.")
def remove_permission(s: Settings, queue_url, label):
    """Remove a statement add-permission added to the queue's Policy.

    \b
    Example: sqsqlite remove-permission --queue-url MyQueue --label Send
    """
    s.call("RemovePermission", QueueUrl=queue_url, Label=label)


@command("list-queue-tags", "ListQueueTags")
@queue_url_option()
def list_queue_tags(s: Settings, queue_url):
    """Print a queue's tags.

    \b
    Example: sqsqlite list-queue-tags --queue-url MyQueue
    """
    s.call("ListQueueTags", QueueUrl=queue_url)


# ---------------------------------------------------------------------- messages


@command("send-message", "SendMessage")
@queue_url_option()
@click.option("--message-body", type=TEXT, required=True, help="The body (text, or file://path).")
@click.option("--delay-seconds", type=INTEGER, help=f"0-{D.MAX_DELAY_SECONDS}: hide the message this long (standard queues).")
@click.option("--message-attributes", type=MESSAGE_ATTRIBUTES, help="name={DataType=String,StringValue=x},... or JSON.")
@click.option("--message-system-attributes", type=MESSAGE_ATTRIBUTES, help="AWSTraceHeader={DataType=String,StringValue=...}.")
@click.option("--message-deduplication-id", type=TEXT, help="FIFO: messages with the same id within 5 minutes are sent once.")
@click.option(
    "--message-group-id",
    type=TEXT,
    help="FIFO: messages of one group are delivered in order. Standard: a fair queue's tenant label, returned on receive.",
)
def send_message(
    s: Settings,
    queue_url,
    message_body,
    delay_seconds,
    message_attributes,
    message_system_attributes,
    message_deduplication_id,
    message_group_id,
):
    """Send one message.

    \b
    Example: sqsqlite send-message --queue-url MyQueue --message-body "order #1" --message-attributes 'priority={DataType=String,StringValue=high}'
    """
    s.call(
        "SendMessage",
        QueueUrl=queue_url,
        MessageBody=message_body,
        DelaySeconds=delay_seconds,
        MessageAttributes=message_attributes,
        MessageSystemAttributes=message_system_attributes,
        MessageDeduplicationId=message_deduplication_id,
        MessageGroupId=message_group_id,
    )


@command("send-message-batch", "SendMessageBatch")
@queue_url_option()
@_list("--entries", type=ENTRY, help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,MessageBody=a Id=2,MessageBody=b, or a JSON list, or file://.")
def send_message_batch(s: Settings, queue_url, entries):
    """Send up to 10 messages. Each entry succeeds or fails on its own.

    \b
    Example: sqsqlite send-message-batch --queue-url MyQueue --entries Id=1,MessageBody=a Id=2,MessageBody=b
    """
    s.call("SendMessageBatch", QueueUrl=queue_url, Entries=entries)


@command("receive-message", "ReceiveMessage")
@queue_url_option()
@_list("--attribute-names", help="System attributes to return (deprecated spelling of the next option).")
@_list("--message-system-attribute-names", help="System attributes to return: All, SentTimestamp, ApproximateReceiveCount...")
@_list("--message-attribute-names", help="Message attributes to return: All, names, or prefixes like order.*")
@click.option("--max-number-of-messages", type=INTEGER, help=f"1-{D.MAX_MESSAGES.high} (default {D.MAX_MESSAGES.default}).")
@click.option("--visibility-timeout", type=INTEGER, help=f"0-{D.MAX_VISIBILITY_TIMEOUT} seconds, for this receive only.")
@click.option("--wait-time-seconds", type=INTEGER, help=f"0-{D.MAX_WAIT_TIME_SECONDS}: long poll until a message arrives.")
@click.option("--receive-request-attempt-id", type=TEXT, help="FIFO: repeating an attempt id within 5 minutes returns the same messages.")
def receive_message(
    s: Settings,
    queue_url,
    attribute_names,
    message_system_attribute_names,
    message_attribute_names,
    max_number_of_messages,
    visibility_timeout,
    wait_time_seconds,
    receive_request_attempt_id,
):
    """Receive up to 10 messages. Each becomes in flight with a fresh receipt handle.

    \b
    Example: sqsqlite receive-message --queue-url MyQueue --max-number-of-messages 10 --message-system-attribute-names All
    """
    s.call(
        "ReceiveMessage",
        QueueUrl=queue_url,
        AttributeNames=attribute_names,
        MessageSystemAttributeNames=message_system_attribute_names,
        MessageAttributeNames=message_attribute_names,
        MaxNumberOfMessages=max_number_of_messages,
        VisibilityTimeout=visibility_timeout,
        WaitTimeSeconds=wait_time_seconds,
        ReceiveRequestAttemptId=receive_request_attempt_id,
    )


@command("delete-message", "DeleteMessage")
@queue_url_option()
@click.option("--receipt-handle", type=TEXT, required=True, help="The handle of the message's latest receive.")
def delete_message(s: Settings, queue_url, receipt_handle):
    """Delete a received message.

    Pass the receipt handle of its latest receive.

    \b
    Example: sqsqlite delete-message --queue-url MyQueue --receipt-handle AQEB...
    """
    s.call("DeleteMessage", QueueUrl=queue_url, ReceiptHandle=receipt_handle)


@command("delete-message-batch", "DeleteMessageBatch")
@queue_url_option()
@_list("--entries", type=ENTRY, help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,ReceiptHandle=... , or a JSON list, or file://.")
def delete_message_batch(s: Settings, queue_url, entries):
    """Delete up to 10 messages. Each entry succeeds or fails on its own.

    \b
    Example: sqsqlite delete-message-batch --queue-url MyQueue --entries Id=1,ReceiptHandle=AQEB...
    """
    s.call("DeleteMessageBatch", QueueUrl=queue_url, Entries=entries)


@command("change-message-visibility", "ChangeMessageVisibility")
@queue_url_option()
@click.option("--receipt-handle", type=TEXT, required=True, help="The handle of the message's latest receive.")
@click.option(
    "--visibility-timeout", type=INTEGER, required=True, help=f"0-{D.MAX_VISIBILITY_TIMEOUT}: hidden until now + this many seconds."
)
def change_message_visibility(s: Settings, queue_url, receipt_handle, visibility_timeout):
    """Change a message's visibility timeout.

    The message stays hidden until now + the timeout; 0 makes it visible at once.

    \b
    Example: sqsqlite change-message-visibility --queue-url MyQueue --receipt-handle AQEB... --visibility-timeout 300
    """
    s.call("ChangeMessageVisibility", QueueUrl=queue_url, ReceiptHandle=receipt_handle, VisibilityTimeout=visibility_timeout)


@command("change-message-visibility-batch", "ChangeMessageVisibilityBatch")
@queue_url_option()
@_list("--entries", type=ENTRY, help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,ReceiptHandle=...,VisibilityTimeout=60, or JSON, or file://.")
def change_message_visibility_batch(s: Settings, queue_url, entries):
    """Change visibility of up to 10 messages. Each entry succeeds or fails on its own.

    \b
    Example: sqsqlite change-message-visibility-batch --queue-url MyQueue --entries Id=1,ReceiptHandle=AQEB...,VisibilityTimeout=60
    """
    s.call("ChangeMessageVisibilityBatch", QueueUrl=queue_url, Entries=entries)


# ---------------------------------------------------------------------- message move tasks


@command("start-message-move-task", "StartMessageMoveTask")
@click.option("--source-arn", type=TEXT, required=True, help="The dead-letter queue's ARN.")
@click.option("--destination-arn", type=TEXT, help="Move here instead of back to each message's source queue.")
@click.option("--max-number-of-messages-per-second", type=INTEGER, help="Rate limit, 1-500.")
def start_message_move_task(s: Settings, source_arn, destination_arn, max_number_of_messages_per_second):
    """Move dead letters back to their sources.

    Prints the TaskHandle, then runs the task to the end in this process (there is no server to
    run it later); Ctrl-C leaves it RUNNING, and `sqsqlite redrive` resumes it.

    \b
    Example: sqsqlite start-message-move-task --source-arn arn:aws:sqs:us-east-1:000000000000:MyQueue-dlq
    """
    response = s.call(
        "StartMessageMoveTask",
        SourceArn=source_arn,
        DestinationArn=destination_arn,
        MaxNumberOfMessagesPerSecond=max_number_of_messages_per_second,
    )
    try:
        s.database().run_message_move_task(response["TaskHandle"])
    except KeyboardInterrupt:
        arn = source_arn or (s.cli_input or {}).get("SourceArn", "")
        resume_hint(f"sqsqlite redrive --queue-url {arn.rsplit(':', 1)[-1]}")


@command("list-message-move-tasks", "ListMessageMoveTasks")
@click.option("--source-arn", type=TEXT, required=True, help="The dead-letter queue's ARN.")
@click.option(
    "--max-results",
    type=INTEGER,
    help=f"1-{D.MOVE_TASKS_LISTED.high} (default {D.MOVE_TASKS_LISTED.default}): the most recent tasks first.",
)
def list_message_move_tasks(s: Settings, source_arn, max_results):
    """List a queue's message move tasks. The most recent first, with progress.

    \b
    Example: sqsqlite list-message-move-tasks --source-arn arn:aws:sqs:us-east-1:000000000000:MyQueue-dlq
    """
    s.call("ListMessageMoveTasks", SourceArn=source_arn, MaxResults=max_results)


@command("cancel-message-move-task", "CancelMessageMoveTask")
@click.option("--task-handle", type=TEXT, required=True, help="The TaskHandle of a running task.")
def cancel_message_move_task(s: Settings, task_handle):
    """Cancel a running message move task. Messages already moved stay moved.

    \b
    Example: sqsqlite cancel-message-move-task --task-handle eyJxIjog...
    """
    s.call("CancelMessageMoveTask", TaskHandle=task_handle)
