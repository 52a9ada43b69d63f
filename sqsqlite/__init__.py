"""sqsqlite: the Amazon SQS message lifecycle in one SQLite file.

import sqsqlite
db = sqsqlite.connect("app.db")
q = db.create_queue("orders", visibility_timeout=60)
q.send_message("hello")
for msg in q.receive_message(max_number_of_messages=10, wait_time_seconds=20):
    msg.delete()
"""

from . import errors
from .actions import Actions
from .client import SQSClient, client
from .clock import Clock, ManualClock, SystemClock
from .consumer import Backoff, Consumer, Heartbeat, consume
from .core import (
    BatchResult,
    BatchResultErrorEntry,
    BufferedQueue,
    Database,
    DeferredDeleteFailure,
    Message,
    MoveTask,
    Queue,
    QueueStats,
    SendResult,
    SentMessages,
    connect,
)
from .errors import SQSError
from .validation import MessageAttribute

__version__ = "0.1.0"

__all__ = [
    "Backoff",
    "Consumer",
    "Heartbeat",
    "consume",
    "Actions",
    "BufferedQueue",
    "DeferredDeleteFailure",
    "SQSClient",
    "client",
    "BatchResult",
    "BatchResultErrorEntry",
    "Clock",
    "Database",
    "ManualClock",
    "Message",
    "MessageAttribute",
    "MoveTask",
    "Queue",
    "QueueStats",
    "SQSError",
    "SendResult",
    "SentMessages",
    "SystemClock",
    "connect",
    "errors",
]
