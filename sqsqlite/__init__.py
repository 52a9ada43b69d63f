"""sqsqlite: the Amazon SQS message lifecycle in one SQLite file.

import sqsqlite
db = sqsqlite.connect("app.db")
q = db.create_queue("orders", visibility_timeout=60)
q.send_message("hello")
for msg in q.receive_message(max_number_of_messages=10, wait_time_seconds=20):
    msg.delete()
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from . import errors
from .clock import Clock, ManualClock, SystemClock
from .errors import SQSError

if TYPE_CHECKING:
    from .actions import Actions
    from .client import SQSClient, client
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
        Transaction,
        connect,
    )
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
    "Transaction",
    "connect",
    "errors",
]

# The rest of __all__ is imported on first use (PEP 562), so a program or a CLI command loads
# only the modules it touches: the engine, the client and the consumer each cost milliseconds
# at start-up, and a one-shot command uses one of them at most.
_LAZY = {
    "Actions": ".actions",
    "MessageAttribute": ".validation",
    **dict.fromkeys(("SQSClient", "client"), ".client"),
    **dict.fromkeys(("Backoff", "Consumer", "Heartbeat", "consume"), ".consumer"),
    **dict.fromkeys(
        ("BatchResult", "BatchResultErrorEntry", "BufferedQueue", "Database", "DeferredDeleteFailure", "Message", "MoveTask", "Queue")
        + ("QueueStats", "Transaction", "SendResult", "SentMessages", "connect"),
        ".core",
    ),
}


def __getattr__(name: str) -> Any:
    if name == "aio":  # the asyncio client, a module of its own: sqsqlite.aio.client(...)
        return importlib.import_module(".aio", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next look-up is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """sqsqlite.client is a function, and also the name of the module that defines it: loading
    that module (``from sqsqlite.client import SQSClient``, a lazy look-up above) makes Python
    set the package's attribute to the module. It is kept the function, as it was when this
    package imported the client eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "client" and isinstance(value, types.ModuleType):
            value = value.client
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
