"""``sqsqlite.client("app.db")``: a drop-in for ``boto3.client("sqs")`` on a local file.

Same method names, keyword arguments, response dicts (with ``ResponseMetadata``) and exception
classes under ``client.exceptions`` (botocore's names, e.g. ``QueueNameExists``). When botocore
is installed the exceptions are real ``botocore.exceptions.ClientError`` subclasses, so code
that catches ClientError or reads ``err.response["Error"]["Code"]`` keeps working unchanged.
"""

from __future__ import annotations

import re
import uuid
from types import SimpleNamespace
from typing import Any

from . import errors
from .actions import ACTIONS, UNSUPPORTED, Actions
from .core import Database, connect

try:  # the drop-in is most faithful with botocore around, but doesn't need it
    from botocore.exceptions import ClientError as _ClientErrorBase
except ImportError:  # pragma: no cover - exercised only without botocore

    class _ClientErrorBase(Exception):
        def __init__(self, error_response: dict, operation_name: str):
            self.response = error_response
            self.operation_name = operation_name
            err = error_response.get("Error", {})
            super().__init__(
                f"An error occurred ({err.get('Code', 'Unknown')}) when calling the {operation_name} operation: {err.get('Message', '')}"
            )


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def error_response(err: errors.SQSError) -> dict:
    header, shape, status = errors.wire_error(err.code)
    return {
        "Error": {
            "Code": header,
            "Message": err.message,
            "Type": "Sender" if err.sender_fault else "Receiver",
            "QueryErrorCode": shape,
        },
        "ResponseMetadata": {"RequestId": str(uuid.uuid4()), "HTTPStatusCode": status, "HTTPHeaders": {}, "RetryAttempts": 0},
    }


class _Exceptions:
    """``client.exceptions``: one class per SQS error, by botocore's name and by sqsqlite's."""

    def __init__(self) -> None:
        self.ClientError = _ClientErrorBase
        self._by_code: dict[str, type] = {}
        for code, base in errors.ALL_ERRORS.items():
            name = errors.BOTOCORE_NAMES.get(code, code)
            cls = type(name, (_ClientErrorBase, base), {"__module__": "sqsqlite.client", "__str__": Exception.__str__})
            self._by_code[code] = cls
            setattr(self, name, cls)
            setattr(self, code, cls)

    def from_error(self, err: errors.SQSError, operation: str) -> Exception:
        cls = self._by_code.get(err.code, _ClientErrorBase)
        exc = cls(error_response(err), operation)
        exc.code, exc.message, exc.sender_fault = err.code, err.message, err.sender_fault
        return exc


class SQSClient:
    """Methods named as boto3's SQS client's; each runs the action of the same SQS name."""

    def __init__(self, db: Database):
        self.db = db
        self._actions = Actions(db)
        self.exceptions = _Exceptions()
        self.meta = SimpleNamespace(region_name=db.region, endpoint_url=db.endpoint, service_model=None)

    def _call(self, action: str, params: dict[str, Any]) -> dict:
        try:
            response = self._actions.call(action, params)
        except errors.SQSError as err:
            raise self.exceptions.from_error(err, action) from None
        response["ResponseMetadata"] = {
            "RequestId": str(uuid.uuid4()),
            "HTTPStatusCode": 200,
            "HTTPHeaders": {},
            "RetryAttempts": 0,
        }
        return response

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "SQSClient":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _method(action: str):
    def call(self: SQSClient, **kwargs: Any) -> dict:
        return self._call(action, kwargs)

    call.__name__ = _snake(action)
    call.__doc__ = f"The SQS {action} action (same keyword arguments and response as boto3's)."
    return call


for _action in ACTIONS + UNSUPPORTED:
    setattr(SQSClient, _snake(_action), _method(_action))


def client(path: str | None = None, **options: Any) -> SQSClient:
    """A boto3-compatible SQS client on a sqsqlite file (``connect``'s options apply)."""
    return SQSClient(connect(path, **options))
