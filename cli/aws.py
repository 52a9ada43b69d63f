"""The ``aws sqs`` commands: same names, same flags, same JSON, on a local file.

Each command builds the SQS request from its flags and runs it through the action layer
(:mod:`sqsqlite.actions`), so it behaves exactly as the Python client and the endpoint do. The
commands that only forward their flags are made from FORWARDING below: each names its action
(``sqsqlite.action_table``: the command is the action's name, ``send-message``), its help, and its
flags in --help's order, each flag named after the request member it sets (``--queue-url``:
QueueUrl).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import click

from sqsqlite import defaults as D
from sqsqlite.action_table import BY_NAME, PAGINATED

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


def command(name: str, operation: str, before: str | None = None) -> Callable:
    """An SQS command, listed in --help after those made before it (or ``before`` that one)."""

    def decorate(f: Callable) -> click.Command:
        f = aws_options(paginated=operation in PAGINATED)(global_options(sqs=True)(pass_settings(f)))
        cmd = command_options_first(click.command(name, cls=Command, operation=operation)(f))
        names = [c.name for c in COMMANDS]
        COMMANDS.insert(names.index(before) if before in names else len(COMMANDS), cmd)
        return cmd

    return decorate


def flag(member: str) -> str:
    """The flag that sets a request member, as the aws CLI names it: AWSAccountIds -> --aws-account-ids."""
    return "--" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "-", member).lower()


class Flag:
    """One flag of a forwarding command: the member it sets and its click option."""

    def __init__(self, member: str, type: Any = TEXT, *, help: str = "", required: bool = False, many: bool = False):
        self.member = member
        if member == "QueueUrl":
            self.option = queue_url_option(required=required)
        elif many:  # greedy: --entries a b, as the aws CLI takes a list
            self.option = click.option(flag(member), cls=ListOption, type=type, help=help)
        else:
            self.option = click.option(flag(member), type=type, required=required, help=help)


def _forwarding(action: str, help: str, *flags: Flag) -> click.Command:
    """The command of ``action`` that sends the members its flags set (None: not given)."""
    members = {flag(f.member)[2:].replace("-", "_"): f.member for f in flags}

    def forward(s: Settings, **given: Any) -> None:
        s.call(action, **{members[name]: value for name, value in given.items()})

    forward.__name__ = BY_NAME[action].method
    forward.__doc__ = help
    for f in reversed(flags):
        forward = f.option(forward)
    return command(BY_NAME[action].command, action)(forward)


_URL = Flag("QueueUrl", required=True)  # with queue_url_option's own help
_ATTRIBUTES = "name={DataType=String,StringValue=x},... or JSON."
_PAGE = (
    Flag("MaxResults", INTEGER, help="One request of at most this many (1-1000), with the service's NextToken for more."),
    Flag("NextToken", help="The NextToken a previous --max-results request printed."),
)
_HANDLE = Flag("ReceiptHandle", required=True, help="The handle of the message's latest receive.")

# The commands that only forward their flags, in --help's order (start-message-move-task, which
# also runs the task, is written out below). Each: its action, its help, its flags in order.
FORWARDING: tuple[tuple[str, str, tuple[Flag, ...]], ...] = (
    (
        "CreateQueue",
        """Create a queue. With equal attributes, it returns the existing queue.

        \b
        Example: sqsqlite create-queue --queue-name MyQueue --attributes VisibilityTimeout=60
        """,
        (
            Flag("QueueName", required=True, help=f"1-{D.MAX_QUEUE_NAME_LENGTH} characters of A-Z a-z 0-9 - _; FIFO queues end in .fifo."),
            Flag("Attributes", MAP, help="Queue attributes: Name=value,... or JSON or file://."),
            Flag("tags", MAP, help="Tags: Key=value,... or JSON or file://."),
        ),
    ),
    (
        "DeleteQueue",
        """Delete a queue and its messages. Its name is free again after 60 seconds.

        \b
        Example: sqsqlite delete-queue --queue-url MyQueue
        """,
        (_URL,),
    ),
    (
        "ListQueues",
        """List queue URLs, by name.

        \b
        Example: sqsqlite list-queues --queue-name-prefix My
        """,
        (Flag("QueueNamePrefix", help="Only queues whose name starts with this."), *_PAGE),
    ),
    (
        "GetQueueUrl",
        """Print a queue's URL.

        \b
        Example: sqsqlite get-queue-url --queue-name MyQueue
        """,
        (
            Flag("QueueName", required=True, help="The queue's name."),
            Flag("QueueOwnerAWSAccountId", help="Must be this database's account id if given."),
        ),
    ),
    (
        "GetQueueAttributes",
        """Print queue attributes. Values are strings; counts are exact.

        \b
        Example: sqsqlite get-queue-attributes --queue-url MyQueue --attribute-names VisibilityTimeout
        """,
        (_URL, Flag("AttributeNames", STRINGS, many=True, help="One or more attribute names, or All.")),
    ),
    (
        "SetQueueAttributes",
        """Change queue attributes. A new VisibilityTimeout applies to later receives only.

        \b
        Example: sqsqlite set-queue-attributes --queue-url MyQueue --attributes VisibilityTimeout=120
        """,
        (_URL, Flag("Attributes", MAP, required=True, help="Name=value,... or JSON or file://.")),
    ),
    (
        "PurgeQueue",
        """Delete every message in a queue. Once per 60 seconds.

        \b
        Example: sqsqlite purge-queue --queue-url MyQueue
        """,
        (_URL,),
    ),
    (
        "ListDeadLetterSourceQueues",
        """List the queues that dead-letter here.

        Those whose RedrivePolicy names this queue as deadLetterTargetArn.

        \b
        Example: sqsqlite list-dead-letter-source-queues --queue-url MyQueue-dlq
        """,
        (_URL, *_PAGE),
    ),
    (
        "TagQueue",
        """Add or replace tags on a queue.

        \b
        Example: sqsqlite tag-queue --queue-url MyQueue --tags team=billing,env=dev
        """,
        (_URL, Flag("Tags", MAP, required=True, help="Key=value,... or JSON or file://.")),
    ),
    (
        "UntagQueue",
        """Remove tags from a queue.

        \b
        Example: sqsqlite untag-queue --queue-url MyQueue --tag-keys env team
        """,
        (_URL, Flag("TagKeys", STRINGS, many=True, help="One or more tag keys to remove.")),
    ),
    (
        "AddPermission",
        """Add a statement to the queue's Policy, as SQS writes it (kept, not enforced locally).

        \b
        Example: sqsqlite add-permission --queue-url MyQueue --label Send --aws-account-ids 111122223333 --actions SendMessage
        """,
        (
            _URL,
            Flag("Label", required=True, help="The permission's name, unique in the queue's policy."),
            Flag("AWSAccountIds", STRINGS, many=True, help="The AWS account ids the permission grants to."),
            Flag("Actions", STRINGS, many=True, help="The actions it grants: SendMessage, ReceiveMessage, ... or *."),
        ),
    ),
    (
        "RemovePermission",
        """Remove a statement add-permission added to the queue's Policy.

        \b
        Example: sqsqlite remove-permission --queue-url MyQueue --label Send
        """,
        (_URL, Flag("Label", required=True, help="The permission to remove.")),
    ),
    (
        "ListQueueTags",
        """Print a queue's tags.

        \b
        Example: sqsqlite list-queue-tags --queue-url MyQueue
        """,
        (_URL,),
    ),
    (
        "SendMessage",
        """Send one message.

        \b
        Example: sqsqlite send-message --queue-url MyQueue --message-body "order #1" --message-attributes 'priority={DataType=String,StringValue=high}'
        """,
        (
            _URL,
            Flag("MessageBody", required=True, help="The body (text, or file://path)."),
            Flag("DelaySeconds", INTEGER, help=f"0-{D.MAX_DELAY_SECONDS}: hide the message this long (standard queues)."),
            Flag("MessageAttributes", MESSAGE_ATTRIBUTES, help=_ATTRIBUTES),
            Flag("MessageSystemAttributes", MESSAGE_ATTRIBUTES, help="AWSTraceHeader={DataType=String,StringValue=...}."),
            Flag("MessageDeduplicationId", help="FIFO: messages with the same id within 5 minutes are sent once."),
            Flag(
                "MessageGroupId",
                help="FIFO: messages of one group are delivered in order. Standard: a fair queue's tenant label, returned on receive.",
            ),
        ),
    ),
    (
        "SendMessageBatch",
        """Send up to 10 messages. Each entry succeeds or fails on its own.

        \b
        Example: sqsqlite send-message-batch --queue-url MyQueue --entries Id=1,MessageBody=a Id=2,MessageBody=b
        """,
        (
            _URL,
            Flag(
                "Entries",
                ENTRY,
                many=True,
                help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,MessageBody=a Id=2,MessageBody=b, or a JSON list, or file://.",
            ),
        ),
    ),
    (
        "ReceiveMessage",
        """Receive up to 10 messages. Each becomes in flight with a fresh receipt handle.

        \b
        Example: sqsqlite receive-message --queue-url MyQueue --max-number-of-messages 10 --message-system-attribute-names All
        """,
        (
            _URL,
            Flag("AttributeNames", STRINGS, many=True, help="System attributes to return (deprecated spelling of the next option)."),
            Flag(
                "MessageSystemAttributeNames",
                STRINGS,
                many=True,
                help="System attributes to return: All, SentTimestamp, ApproximateReceiveCount...",
            ),
            Flag("MessageAttributeNames", STRINGS, many=True, help="Message attributes to return: All, names, or prefixes like order.*"),
            Flag("MaxNumberOfMessages", INTEGER, help=f"1-{D.MAX_MESSAGES.high} (default {D.MAX_MESSAGES.default})."),
            Flag("VisibilityTimeout", INTEGER, help=f"0-{D.MAX_VISIBILITY_TIMEOUT} seconds, for this receive only."),
            Flag("WaitTimeSeconds", INTEGER, help=f"0-{D.MAX_WAIT_TIME_SECONDS}: long poll until a message arrives."),
            Flag("ReceiveRequestAttemptId", help="FIFO: repeating an attempt id within 5 minutes returns the same messages."),
        ),
    ),
    (
        "DeleteMessage",
        """Delete a received message.

        Pass the receipt handle of its latest receive.

        \b
        Example: sqsqlite delete-message --queue-url MyQueue --receipt-handle AQEB...
        """,
        (_URL, _HANDLE),
    ),
    (
        "DeleteMessageBatch",
        """Delete up to 10 messages. Each entry succeeds or fails on its own.

        \b
        Example: sqsqlite delete-message-batch --queue-url MyQueue --entries Id=1,ReceiptHandle=AQEB...
        """,
        (
            _URL,
            Flag(
                "Entries", ENTRY, many=True, help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,ReceiptHandle=... , or a JSON list, or file://."
            ),
        ),
    ),
    (
        "ChangeMessageVisibility",
        """Change a message's visibility timeout.

        The message stays hidden until now + the timeout; 0 makes it visible at once.

        \b
        Example: sqsqlite change-message-visibility --queue-url MyQueue --receipt-handle AQEB... --visibility-timeout 300
        """,
        (
            _URL,
            _HANDLE,
            Flag(
                "VisibilityTimeout",
                INTEGER,
                required=True,
                help=f"0-{D.MAX_VISIBILITY_TIMEOUT}: hidden until now + this many seconds.",
            ),
        ),
    ),
    (
        "ChangeMessageVisibilityBatch",
        """Change visibility of up to 10 messages. Each entry succeeds or fails on its own.

        \b
        Example: sqsqlite change-message-visibility-batch --queue-url MyQueue --entries Id=1,ReceiptHandle=AQEB...,VisibilityTimeout=60
        """,
        (
            _URL,
            Flag(
                "Entries",
                ENTRY,
                many=True,
                help=f"1-{D.MAX_BATCH_ENTRIES} entries: Id=1,ReceiptHandle=...,VisibilityTimeout=60, or JSON, or file://.",
            ),
        ),
    ),
    (
        "ListMessageMoveTasks",
        """List a queue's message move tasks. The most recent first, with progress.

        \b
        Example: sqsqlite list-message-move-tasks --source-arn arn:aws:sqs:us-east-1:000000000000:MyQueue-dlq
        """,
        (
            Flag("SourceArn", required=True, help="The dead-letter queue's ARN."),
            Flag(
                "MaxResults",
                INTEGER,
                help=f"1-{D.MOVE_TASKS_LISTED.high} (default {D.MOVE_TASKS_LISTED.default}): the most recent tasks first.",
            ),
        ),
    ),
    (
        "CancelMessageMoveTask",
        """Cancel a running message move task. Messages already moved stay moved.

        \b
        Example: sqsqlite cancel-message-move-task --task-handle eyJxIjog...
        """,
        (Flag("TaskHandle", required=True, help="The TaskHandle of a running task."),),
    ),
)
for _action, _help, _flags in FORWARDING:
    _forwarding(_action, _help, *_flags)


# ---------------------------------------------------------------------- message move tasks


@command("start-message-move-task", "StartMessageMoveTask", before="list-message-move-tasks")
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
