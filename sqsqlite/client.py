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

    class _ClientErrorBase(Exception):  # type: ignore[no-redef]  # botocore's when installed
        def __init__(self, error_response: dict, operation_name: str):
            self.response = error_response
            self.operation_name = operation_name
            err = error_response.get("Error", {})
            super().__init__(
                f"An error occurred ({err.get('Code', 'Unknown')}) when calling the {operation_name} operation: {err.get('Message', '')}"
            )


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _metadata(status: int) -> dict:
    request_id = str(uuid.uuid4())
    # The headers code reads from boto3's responses: the request id, under SQS's header name.
    headers = {"x-amzn-requestid": request_id, "content-type": "application/x-amz-json-1.0"}
    return {"RequestId": request_id, "HTTPStatusCode": status, "HTTPHeaders": headers, "RetryAttempts": 0}


def error_response(err: errors.SQSError) -> dict:
    header, shape, status = errors.wire_error(err.code)
    return {
        "Error": {
            "Code": header,
            "Message": err.message,
            "Type": "Sender" if err.sender_fault else "Receiver",
            "QueryErrorCode": shape,
        },
        "ResponseMetadata": _metadata(status),
    }


def _raw_blobs(params: dict[str, Any]) -> dict[str, Any]:
    """botocore sends a str blob as its UTF-8 bytes; the action layer takes a str
    BinaryValue as base64 (as the wire carries it). So a str becomes its bytes here, in a copy."""

    def attributes(values: Any) -> Any:
        if not isinstance(values, dict):
            return values
        return {
            name: {**v, "BinaryValue": v["BinaryValue"].encode("utf-8")}
            if isinstance(v, dict) and isinstance(v.get("BinaryValue"), str)
            else v
            for name, v in values.items()
        }

    def message(p: dict[str, Any]) -> dict[str, Any]:
        out = dict(p)
        for key in ("MessageAttributes", "MessageSystemAttributes"):
            if key in out:
                out[key] = attributes(out[key])
        return out

    out = message(params)
    if isinstance(out.get("Entries"), list):
        out["Entries"] = [message(e) if isinstance(e, dict) else e for e in out["Entries"]]
    return out


# Errors botocore models for SQS that sqsqlite never raises (no KMS, no IAM, no throttling):
# present so that ``except client.exceptions.KmsThrottled`` still resolves, as with boto3.
_NEVER_RAISED = (
    "InvalidAddress",
    "InvalidIdFormat",
    "InvalidSecurity",
    "KmsAccessDenied",
    "KmsDisabled",
    "KmsInvalidKeyUsage",
    "KmsInvalidState",
    "KmsNotFound",
    "KmsOptInRequired",
    "KmsThrottled",
    "RequestThrottled",
)


class _Exceptions:
    """``client.exceptions``: one class per SQS error, by botocore's name and by sqsqlite's."""

    def __init__(self) -> None:
        self.ClientError = _ClientErrorBase
        self._by_code: dict[str, type] = {}
        self._by_wire: dict[str, type] = {}
        for code, base in errors.ALL_ERRORS.items():
            name = errors.BOTOCORE_NAMES.get(code, code)
            cls = type(name, (_ClientErrorBase, base), {"__module__": "sqsqlite.client", "__str__": Exception.__str__})
            self._by_code[code] = cls
            self._by_wire[name] = self._by_wire[errors.wire_error(code)[1]] = cls
            setattr(self, name, cls)
            setattr(self, code, cls)
        for name in _NEVER_RAISED:
            cls = type(name, (_ClientErrorBase,), {"__module__": "sqsqlite.client"})
            self._by_wire[name] = cls
            setattr(self, name, cls)

    def from_code(self, error_code: str) -> type:
        """The exception class for an error code, or ClientError (botocore's ``from_code``)."""
        return self._by_wire.get(error_code) or self._by_code.get(error_code, _ClientErrorBase)

    def from_error(self, err: errors.SQSError, operation: str) -> Exception:
        cls = self._by_code.get(err.code, _ClientErrorBase)
        exc = cls(error_response(err), operation)
        exc.code, exc.message, exc.sender_fault = err.code, err.message, err.sender_fault
        return exc


_EXCEPTIONS = _Exceptions()


class SQSClient:
    """Methods named as boto3's SQS client's; each runs the action of the same SQS name."""

    def __init__(self, db: Database):
        self.db = db
        self._actions = Actions(db)
        # One set for every client, as botocore caches them per service: code that catches
        # another client's class (a module-level client's, in a test) must still catch.
        self.exceptions = _EXCEPTIONS
        self.meta = SimpleNamespace(region_name=db.region, endpoint_url=db.endpoint, service_model=_model())

    def _call(self, action: str, params: dict[str, Any]) -> dict:
        _validate(action, params)
        if action in ("SendMessage", "SendMessageBatch"):
            params = _raw_blobs(params)
        try:
            response = self._actions.call(action, params)
        except errors.SQSError as err:
            raise self.exceptions.from_error(err, action) from None
        response["ResponseMetadata"] = _metadata(200)
        return response

    def close(self) -> None:
        self.db.close()

    # boto3's pagination and waiters, for the two paginated SQS actions and no waiters.

    def can_paginate(self, operation_name: str) -> bool:
        return operation_name in _PAGINATED

    def get_paginator(self, operation_name: str) -> Any:
        """botocore's own paginator when botocore is installed (resume tokens, MaxItems,
        search() exactly as boto3's); else a small one that follows NextToken."""
        if operation_name not in _PAGINATED:
            raise _operation_not_pageable(operation_name)
        method = getattr(self, operation_name)
        model = _model()
        if model is None:
            return Paginator(method, _PAGINATED[operation_name])
        import botocore.paginate
        import botocore.session

        action = model.operation_model(_ACTION_OF[operation_name])
        config = botocore.session.get_session().get_paginator_model("sqs").get_paginator(action.name)
        return botocore.paginate.Paginator(method, config, action)

    @property
    def waiter_names(self) -> list[str]:
        return []

    def get_waiter(self, waiter_name: str):
        raise ValueError(f"Waiter does not exist: {waiter_name}")

    def __enter__(self) -> SQSClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_PAGINATED = {"list_queues": "QueueUrls", "list_dead_letter_source_queues": "queueUrls"}
_ACTION_OF = {"list_queues": "ListQueues", "list_dead_letter_source_queues": "ListDeadLetterSourceQueues"}


def _operation_not_pageable(operation_name: str) -> Exception:
    try:
        from botocore.exceptions import OperationNotPageableError
    except ImportError:  # pragma: no cover
        return ValueError(f"Operation cannot be paginated: {operation_name}")
    return OperationNotPageableError(operation_name=operation_name)


class Paginator:
    """Without botocore, a paginator for ListQueues and ListDeadLetterSourceQueues: pages
    follow NextToken; PaginationConfig takes MaxItems, PageSize and StartingToken (a NextToken
    as the action returned it; no resume token after MaxItems)."""

    def __init__(self, method, result_key: str):
        self._method = method
        self.result_keys = [result_key]

    def paginate(self, PaginationConfig: dict | None = None, **kwargs: Any) -> PageIterator:
        return PageIterator(self._method, self.result_keys[0], kwargs, dict(PaginationConfig or {}))


class PageIterator:
    def __init__(self, method, result_key: str, kwargs: dict, config: dict):
        self._method, self._key, self._kwargs, self._config = method, result_key, kwargs, config
        self.resume_token = None

    def __iter__(self):
        kwargs = dict(self._kwargs)
        if self._config.get("PageSize"):
            kwargs["MaxResults"] = self._config["PageSize"]
        elif "MaxResults" not in kwargs:
            kwargs["MaxResults"] = 1000  # paging needs MaxResults; SQS's own limit
        if self._config.get("StartingToken"):
            kwargs["NextToken"] = self._config["StartingToken"]
        left = self._config.get("MaxItems")
        while True:
            page = self._method(**kwargs)
            items = page.get(self._key, [])
            if left is not None and len(items) >= left:
                page[self._key] = items[:left]
                page.pop("NextToken", None)
                yield page
                return
            if left is not None:
                left -= len(items)
            yield page
            token = page.get("NextToken")
            if not token:
                return
            kwargs["NextToken"] = token

    def build_full_result(self) -> dict:
        items: list = []
        for page in self:
            items.extend(page.get(self._key, []))
        return {self._key: items}


_MODEL: list = []  # botocore's SQS model, loaded on first use (None when botocore is absent)


def _model() -> Any:
    if not _MODEL:
        try:
            import botocore.session

            _MODEL.append(botocore.session.get_session().get_service_model("sqs"))
        except Exception:  # no botocore, or no SQS model in it: the action layer still checks
            _MODEL.append(None)
    return _MODEL[0]


def _validate(action: str, params: dict[str, Any]) -> None:
    """Check parameters as boto3 does before sending (ParamValidationError: unknown or missing
    parameters, wrong types), using botocore's own SQS model when botocore is installed."""
    model = _model()
    if model is None or action in UNSUPPORTED:
        return
    from botocore.validate import validate_parameters

    try:
        shape = model.operation_model(action).input_shape
    except Exception:  # an action this botocore does not know yet
        return
    if shape is not None:
        validate_parameters(params, shape)


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
