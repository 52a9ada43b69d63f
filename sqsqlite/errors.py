"""One exception root; one class per SQS error code.

Each error carries the SQS code name (``err.code``), a message naming the offending value and
what is allowed, and whether the caller is at fault (``err.sender_fault``). A call that raises
changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable


class SQSError(Exception):
    """Root of every sqsqlite error. ``code`` is the SQS error code name."""

    code = "InternalError"
    sender_fault = True
    _hint: str | Callable[[], str | None] | None = None

    def __init__(self, message: str, hint: str | Callable[[], str | None] | None = None):
        super().__init__(message)
        self.message = message
        # sqsqlite's own fuller explanation (which queue, what is allowed); the message is
        # worded as Amazon SQS words it, so code matching on AWS's texts works unchanged.
        self.hint = hint

    @property
    def hint(self) -> str | None:
        # Given as a function, worked out when first read: a missing queue's close names cost a
        # look through every queue's name, which code that catches the error never pays.
        if callable(self._hint):
            self._hint = self._hint()
        return self._hint

    @hint.setter
    def hint(self, value: str | Callable[[], str | None] | None) -> None:
        self._hint = value

    def __reduce__(self) -> tuple:
        # Pickled with its hint worked out: a function of it may not pickle.
        return (type(self), self.args, {**self.__dict__, "_hint": self.hint})

    def __str__(self) -> str:
        # The message once: a traceback's last line already names the class (whose name is the
        # code), and f"{type(err).__name__}: {err}" in a log line does too.
        return self.message + (f" ({self.hint})" if self.hint else "")


class QueueDoesNotExist(SQSError):
    code = "QueueDoesNotExist"


class QueueAlreadyExists(SQSError):
    code = "QueueAlreadyExists"


class QueueDeletedRecently(SQSError):
    code = "QueueDeletedRecently"


class InvalidParameterValue(SQSError):
    code = "InvalidParameterValue"


class InvalidMessageContents(SQSError):
    """A message body holds a character outside the set SQS allows."""

    code = "InvalidMessageContents"


class InvalidExportRecord(InvalidParameterValue):
    """A record import_messages cannot read: not the shape export_messages writes (a missing or
    unknown field, a wrong JSON type, a number out of range). Its code is InvalidParameterValue;
    the class lets the CLI call it bad usage of the file rather than a value SQS refuses. The
    message is a predicate ("has Body 5; it must be a string.") for the caller to put after the
    record's place."""


class MissingParameter(SQSError):
    code = "MissingParameter"


class InvalidAttributeName(SQSError):
    code = "InvalidAttributeName"


class InvalidAttributeValue(SQSError):
    code = "InvalidAttributeValue"


class ReceiptHandleIsInvalid(SQSError):
    code = "ReceiptHandleIsInvalid"


class MessageNotInflight(SQSError):
    code = "MessageNotInflight"


class OverLimit(SQSError):
    code = "OverLimit"


class PurgeQueueInProgress(SQSError):
    code = "PurgeQueueInProgress"


class EmptyBatchRequest(SQSError):
    code = "EmptyBatchRequest"


class TooManyEntriesInBatchRequest(SQSError):
    code = "TooManyEntriesInBatchRequest"


class BatchEntryIdsNotDistinct(SQSError):
    code = "BatchEntryIdsNotDistinct"


class InvalidBatchEntryId(SQSError):
    code = "InvalidBatchEntryId"


class BatchRequestTooLong(SQSError):
    code = "BatchRequestTooLong"


class UnsupportedOperation(SQSError):
    code = "UnsupportedOperation"


class ResourceNotFoundException(SQSError):
    code = "ResourceNotFoundException"


class DatabaseError(SQSError):
    """The database file can't be used: not a sqsqlite database, newer schema, read-only, full."""

    code = "DatabaseError"
    sender_fault = False


class TransactionError(SQSError):
    """A call that an application's transaction can't take (a receive that would wait, a buffered
    queue's claim), or a transaction that can't be begun or go on (another file's connection, one
    whose transaction began as a read and can't write now, one that SQLite rolled back). sqsqlite's
    own: Amazon SQS has no transactions, and no code of this travels on the wire."""

    code = "TransactionError"


# The error classes above by code, all but TransactionError, which never travels on the wire.
ALL_ERRORS: dict[str, type[SQSError]] = {cls.code: cls for cls in SQSError.__subclasses__() if cls is not TransactionError}


# How each code travels on the wire: (x-amzn-query-error code, JSON 1.0 ``__type`` shape, HTTP
# status). botocore takes the code from the header and maps it to its modelled exception.
_PREFIXED = {
    "TooManyEntriesInBatchRequest",
    "BatchRequestTooLong",
    "InvalidBatchEntryId",
    "EmptyBatchRequest",
    "BatchEntryIdsNotDistinct",
    "PurgeQueueInProgress",
    "QueueDeletedRecently",
    "MessageNotInflight",
    "UnsupportedOperation",
}
_WIRE = {
    "QueueDoesNotExist": ("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist"),
    "QueueAlreadyExists": ("QueueAlreadyExists", "QueueNameExists"),
    "InvalidParameterValue": ("InvalidParameterValue", "InvalidParameterValueException"),
    "MissingParameter": ("MissingParameter", "MissingRequiredParameterException"),
}
# The exception name botocore gives each code (client.exceptions.<name>).
BOTOCORE_NAMES = {"QueueAlreadyExists": "QueueNameExists"}


def wire_error(code: str) -> tuple[str, str, int]:
    """(query error code, JSON __type shape, HTTP status) for an SQS error code."""
    if code in ("PurgeQueueInProgress", "OverLimit"):
        status = 403
    elif code in ("ResourceNotFoundException", "ReceiptHandleIsInvalid"):
        status = 404  # SQS's model says so, and Amazon SQS answers a handle it never issued so
    elif code in ("DatabaseError", "InternalError"):
        status = 500
    else:
        status = 400
    if code in _WIRE:
        header, shape = _WIRE[code]
    elif code in _PREFIXED:
        header, shape = f"AWS.SimpleQueueService.{code}", code
    else:
        header, shape = code, code
    return header, shape, status


def code_from_wire(header_or_shape: str) -> str:
    """The sqsqlite code for a wire code or shape name (the inverse of wire_error)."""
    for code, (header, shape) in _WIRE.items():
        if header_or_shape in (header, shape):
            return code
    return header_or_shape.removeprefix("AWS.SimpleQueueService.")
