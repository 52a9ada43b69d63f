"""``sqsqlite.client("app.db")``: a drop-in for ``boto3.client("sqs")`` on a local file.

Same method names, keyword arguments, response dicts (with ``ResponseMetadata``) and exception
classes under ``client.exceptions`` (botocore's names, e.g. ``QueueNameExists``). When botocore
is installed the exceptions are real ``botocore.exceptions.ClientError`` subclasses, so code
that catches ClientError or reads ``err.response["Error"]["Code"]`` keeps working unchanged.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from itertools import chain, repeat
from operator import contains, countOf
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from . import batches as B
from . import errors
from .action_table import BY_METHOD, TABLE, Action, method_name
from .actions import ACTIONS, UNSUPPORTED, Actions
from .core import Database, Wait, connect
from .core.handles import new_request_id

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


def response_metadata(status: int) -> dict:
    request_id = new_request_id()
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
        "ResponseMetadata": response_metadata(status),
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
    if isinstance(out.get("Entries"), (list, tuple)):  # botocore takes a tuple for a list
        out["Entries"] = [message(e) if isinstance(e, dict) else e for e in out["Entries"]]
    return out


_SENDS = ("SendMessage", "SendMessageBatch")
_ATTRIBUTE_MEMBERS = ("MessageAttributes", "MessageSystemAttributes")


def _has_attributes(params: dict[str, Any]) -> bool:
    """Whether _raw_blobs has anything to look at: most sends carry a body alone. (params
    passed _validate: a list of entries holds dicts.)"""
    entries = params.get("Entries")
    if entries is None:
        return not params.keys().isdisjoint(_ATTRIBUTE_MEMBERS)
    if type(entries) is list and countOf(map(type, entries), dict) == len(entries):
        return any(map(contains, entries, repeat(_ATTRIBUTE_MEMBERS[0]))) or any(map(contains, entries, repeat(_ATTRIBUTE_MEMBERS[1])))
    return True


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
        exc.hint = lambda: err.hint  # sqsqlite's fuller explanation beside SQS's own text, as on SQSError (read when asked)
        return exc


EXCEPTIONS = _Exceptions()


class SQSClient:
    """Methods named as boto3's SQS client's; each runs the action of the same SQS name."""

    def __init__(self, db: Database):
        self.db = db
        self._actions = Actions(db)
        # One set for every client, as botocore caches them per service: code that catches
        # another client's class (a module-level client's, in a test) must still catch.
        self.exceptions = EXCEPTIONS
        self.meta = _meta(db)

    def _call(self, action: str, params: dict[str, Any]) -> dict:
        plain = _plain_request(action, params)
        if plain is not None:
            # Its members are the action's own (a batch's: QueueUrl and its checked Entries):
            # straight to the action, without Actions.call's look-ups.
            return self._answer(action, plain, getattr(self._actions, action))
        return self._general(action, params)

    def _general(self, action: str, params: dict[str, Any]) -> dict:
        """Any request's way: the check compiled from botocore's model (botocore's own validator
        where it can't decide), then the action layer's generic handling."""
        _validate(action, params)
        if action in _SENDS and _has_attributes(params):
            params = _raw_blobs(params)
        return self._answer(action, params)

    def _answer(self, action: str, params: dict[str, Any], act: Callable[[dict], dict] | None = None) -> dict:
        """The action's response to a checked request, or its error as boto3 raises it. act: the
        action's method itself, for a request whose members the caller knows Actions takes."""
        try:
            response = self._actions.call(action, params) if act is None else act(params)
        except errors.SQSError as err:
            raise self.exceptions.from_error(err, action) from None
        response["ResponseMetadata"] = response_metadata(200)
        return response

    # ------------------------------------------------------------ the SQS actions
    # One method an action, named as boto3's (send_message, ...): made below the class from
    # action_table.TABLE, each with its docstring and signature (help(client.send_message)).
    # A type checker can't see methods made so: it sees these declarations of them, one per
    # action, SQS's members keyword-only, the optional ones defaulting (to OMITTED, at run time),
    # so that a misspelt method or member is a type error rather than an AttributeError at run
    # time. tests/unit/test_typed_methods.py fails while they and the table disagree.
    if TYPE_CHECKING:

        def create_queue(self, *, QueueName: str, Attributes: dict[str, Any] = ..., tags: dict[str, Any] = ...) -> dict[str, Any]: ...
        def delete_queue(self, *, QueueUrl: str) -> dict[str, Any]: ...
        def list_queues(self, *, QueueNamePrefix: str = ..., NextToken: str = ..., MaxResults: int = ...) -> dict[str, Any]: ...
        def get_queue_url(self, *, QueueName: str, QueueOwnerAWSAccountId: str = ...) -> dict[str, Any]: ...
        def get_queue_attributes(self, *, QueueUrl: str, AttributeNames: list[Any] | tuple[Any, ...] = ...) -> dict[str, Any]: ...
        def set_queue_attributes(self, *, QueueUrl: str, Attributes: dict[str, Any]) -> dict[str, Any]: ...
        def send_message(
            self,
            *,
            QueueUrl: str,
            MessageBody: str,
            DelaySeconds: int = ...,
            MessageAttributes: dict[str, Any] = ...,
            MessageSystemAttributes: dict[str, Any] = ...,
            MessageDeduplicationId: str = ...,
            MessageGroupId: str = ...,
        ) -> dict[str, Any]: ...
        def send_message_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        def receive_message(
            self,
            *,
            QueueUrl: str,
            AttributeNames: list[Any] | tuple[Any, ...] = ...,
            MessageSystemAttributeNames: list[Any] | tuple[Any, ...] = ...,
            MessageAttributeNames: list[Any] | tuple[Any, ...] = ...,
            MaxNumberOfMessages: int = ...,
            VisibilityTimeout: int = ...,
            WaitTimeSeconds: int = ...,
            ReceiveRequestAttemptId: str = ...,
        ) -> dict[str, Any]: ...
        def delete_message(self, *, QueueUrl: str, ReceiptHandle: str) -> dict[str, Any]: ...
        def delete_message_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> dict[str, Any]: ...
        def change_message_visibility_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        def purge_queue(self, *, QueueUrl: str) -> dict[str, Any]: ...
        def list_dead_letter_source_queues(self, *, QueueUrl: str, NextToken: str = ..., MaxResults: int = ...) -> dict[str, Any]: ...
        def start_message_move_task(
            self, *, SourceArn: str, DestinationArn: str = ..., MaxNumberOfMessagesPerSecond: int = ...
        ) -> dict[str, Any]: ...
        def list_message_move_tasks(self, *, SourceArn: str, MaxResults: int = ...) -> dict[str, Any]: ...
        def cancel_message_move_task(self, *, TaskHandle: str) -> dict[str, Any]: ...
        def add_permission(
            self, *, QueueUrl: str, Label: str, AWSAccountIds: list[Any] | tuple[Any, ...], Actions: list[Any] | tuple[Any, ...]
        ) -> dict[str, Any]: ...
        def remove_permission(self, *, QueueUrl: str, Label: str) -> dict[str, Any]: ...
        def tag_queue(self, *, QueueUrl: str, Tags: dict[str, Any]) -> dict[str, Any]: ...
        def untag_queue(self, *, QueueUrl: str, TagKeys: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        def list_queue_tags(self, *, QueueUrl: str) -> dict[str, Any]: ...

    def close(self) -> None:
        self.db.close()

    # boto3's pagination and waiters, for the two paginated SQS actions and no waiters.

    def can_paginate(self, operation_name: str) -> bool:
        return operation_name in PAGINATED

    def get_paginator(self, operation_name: str) -> Any:
        """botocore's own paginator when botocore is installed (resume tokens, MaxItems,
        search() exactly as boto3's); else a small one that follows NextToken."""
        if operation_name not in PAGINATED:
            raise operation_not_pageable(operation_name)
        method = getattr(self, operation_name)
        model = _model()
        if model is None:
            return Paginator(method, PAGINATED[operation_name])
        import botocore.paginate
        import botocore.session

        action = model.operation_model(ACTION_OF[operation_name])
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


# The paginated methods: the member whose items a page holds, and their actions.
PAGINATED = {a.method: a.pages for a in TABLE if a.pages}
ACTION_OF = {method: BY_METHOD[method].name for method in PAGINATED}


def action_signature(action: Action) -> inspect.Signature:
    """A method's signature as help() shows it: SQS's members, keyword only, the optional ones
    defaulting to OMITTED (a member left out; boto3 takes no None for one)."""
    kind = inspect.Parameter.KEYWORD_ONLY
    members = [inspect.Parameter(m, kind) if m in action.required else inspect.Parameter(m, kind, default=OMITTED) for m in action.members]
    return inspect.Signature([inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY), *members], return_annotation=dict)


class _Omitted:
    def __repr__(self) -> str:
        return "<omitted>"


OMITTED = _Omitted()


def _client_method(action: Action) -> Callable[..., dict]:
    name, method = action.name, action.method

    def call(self: SQSClient, *args: Any, **kwargs: Any) -> dict:
        if args:
            raise keywords_only(method)
        return self._call(name, kwargs)

    return described(call, action, SQSClient)


def described(fn: Callable, action: Action, owner: type) -> Callable:
    """fn named, documented and signed as the method of ``action`` on class ``owner``."""
    fn.__name__, fn.__qualname__, fn.__module__ = action.method, f"{owner.__name__}.{action.method}", owner.__module__
    fn.__doc__ = action.doc()
    fn.__signature__ = action_signature(action)  # type: ignore[attr-defined]
    return fn


for _action in TABLE:
    setattr(SQSClient, _action.method, _client_method(_action))


def operation_not_pageable(operation_name: str) -> Exception:
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


def _meta(db: Database) -> SimpleNamespace:
    """``client.meta`` as botocore's: the region, endpoint and SQS model, the partition, each
    method's action, and with botocore its ``Config`` and an event emitter (which takes handlers,
    as code that instruments clients registers them; none fires: no HTTP request is made)."""
    meta = SimpleNamespace(
        region_name=db.region,
        endpoint_url=db.endpoint,
        service_model=_model(),
        partition="aws",
        method_to_api_mapping={method_name(a): a for a in ACTIONS + UNSUPPORTED},
    )
    try:
        from botocore.config import Config
        from botocore.hooks import HierarchicalEmitter
    except ImportError:  # pragma: no cover - exercised only without botocore
        return meta
    meta.config, meta.events = Config(region_name=db.region), HierarchicalEmitter()
    return meta


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
    parameters, wrong types), against botocore's own SQS model when botocore is installed.

    Each operation's input shape is compiled once into a check (_compile) that accepts what
    botocore's validator accepts, without its walk of the model on every call (a third of a
    batch send's time). A request the check does not pass, or a shape it cannot decide, goes
    to botocore's validator itself, so the errors are botocore's own, word for word."""
    check = _CHECKS.get(action)
    if check is None:
        check = _CHECKS[action] = _operation_check(action)
    if check(params):
        return
    from botocore.validate import validate_parameters

    validate_parameters(params, _model().operation_model(action).input_shape)


_CHECKS: dict[str, Callable[[Any], bool]] = {}
_URL_AND_ENTRIES = frozenset(("QueueUrl", "Entries"))


def receive_round(client: SQSClient, request: dict[str, Any]) -> dict | Wait:
    """One round of ``client.receive_message(**request)``, which never waits: its response, or
    Wait, what to wait for before the next round (sqsqlite.aio's long polls park on it). Not a
    method: the client's methods are boto3's."""
    params = _plain_request("ReceiveMessage", request)
    if params is None:  # checked as SQSClient._general checks any request
        _validate("ReceiveMessage", request)
        params = request
    try:
        response = client._actions.receive_round(params)
    except errors.SQSError as err:
        raise client.exceptions.from_error(err, "ReceiveMessage") from None
    if isinstance(response, dict):
        response["ResponseMetadata"] = response_metadata(200)
    return response


# Requests of these members alone, each of exactly this type, are plain (_plain_request).
_PLAIN_TYPES: dict[str, dict[str, type]] = {
    "SendMessage": {"QueueUrl": str, "MessageBody": str},
    "ReceiveMessage": {"QueueUrl": str, "MaxNumberOfMessages": int},
    "DeleteMessage": {"QueueUrl": str, "ReceiptHandle": str},
}
_SHAPE_TYPES = {str: "string", int: "integer"}


def _plain_request(action: str, params: dict[str, Any]) -> dict[str, Any] | None:
    """The request as the action layer takes it, when it is a plain one: a send of a body alone,
    a receive of a queue and a count, a delete of one handle (_PLAIN_TYPES), or a batch send or
    delete of entries of an Id and one other member alone (B.plain_batch), all text. Their one
    check is this: botocore's validator passes every such request. None for any other request,
    which the compiled check takes."""
    types = _PLAIN_TYPES.get(action)
    if types is not None:
        required = _plain_required(action)
        if required is None or not required <= params.keys():
            return None
        for name, value in params.items():
            if type(value) is not types.get(name):  # an unknown member's None included
                return None
        return params
    if action in B.PLAIN_MEMBER and params.keys() == _URL_AND_ENTRIES and type(params["QueueUrl"]) is str:
        if _plain_required(action) is not None:
            batch = B.plain_batch(params["Entries"], action)
            if batch is not None:
                return {"QueueUrl": params["QueueUrl"], "Entries": batch}
    return None


@functools.cache
def _plain_required(action: str) -> frozenset[str] | None:
    """Whether botocore's validator passes every plain request of action, by the SQS model: no
    other member required, each member's shape of its type with no minimum (botocore checks a
    string's or an integer's type and its 'min', nothing else). The required members if so,
    else None. Decided once per action."""
    model = _model()
    if model is None:
        return frozenset()  # no model to check against; the action layer checks what it takes
    try:
        shape = model.operation_model(action).input_shape
        required = frozenset(shape.required_members)
        types = _PLAIN_TYPES.get(action)
        if types is not None:
            passes = (
                not _botocore_decides(shape)
                and required <= types.keys()
                and all(_plain_member(shape.members[name], kind) for name, kind in types.items())
            )
            return required if passes else None
        entries = shape.members["Entries"]
        entry = entries.member
        member = B.PLAIN_MEMBER[action]
        texts = (shape.members["QueueUrl"], entry.members["Id"], entry.members[member])
    except (KeyError, AttributeError):
        return None
    passes = (
        not any(map(_botocore_decides, (shape, entries, entry)))
        and required <= _URL_AND_ENTRIES
        and set(entry.required_members) <= {"Id", member}
        and entries.type_name == "list"
        and entries.metadata.get("min", 0) <= 1
        and all(_plain_member(text, str) for text in texts)
    )
    return required if passes else None


def _plain_member(shape: Any, kind: type) -> bool:
    return shape.type_name == _SHAPE_TYPES[kind] and "min" not in shape.metadata and not _botocore_decides(shape)


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _compiling(value: Any) -> bool:  # in ``done`` while a shape's members compile
    return False


def _operation_check(action: str) -> Callable[[Any], bool]:
    model = _model()
    if model is None or action in UNSUPPORTED:
        return _always  # no model to check against; the action layer checks what it takes
    try:
        shape = model.operation_model(action).input_shape
    except Exception:  # an action this botocore does not know yet
        return _always
    return _always if shape is None else _compile(shape, {})


# botocore's ParamValidator.SCALAR_TYPES, for the scalar types its validator checks by type
# (and by 'min', when the shape has one) and nothing else.
_SCALAR_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "long": (int,), "boolean": (bool,)}


class _TypeCheck:
    """The check of a scalar that botocore checks by type alone."""

    __slots__ = ("types",)

    def __init__(self, types: tuple[type, ...]):
        self.types = types

    def __call__(self, value: Any) -> bool:
        return isinstance(value, self.types)


class _StructCheck:
    """The check of a structure: a dict of known members, the required ones present, each
    member's value passing its own check."""

    __slots__ = ("names", "required_names", "kinds", "texts")

    def __init__(self, members: dict[str, Callable[[Any], bool]], required: tuple[str, ...]):
        self.names = members.keys()
        self.required_names = frozenset(required)
        # A member that only needs its type checked is checked by isinstance, without a call.
        self.kinds: dict[str, Any] = {name: c.types if isinstance(c, _TypeCheck) else c for name, c in members.items()}
        # The members any str passes: most batch entries hold nothing else.
        self.texts = frozenset(name for name, c in members.items() if isinstance(c, _TypeCheck) and c.types == (str,))

    def __call__(self, value: Any) -> bool:
        # A dict subclass may answer keys() and items() its own way: botocore's validator decides.
        if type(value) is not dict:
            return False
        keys = value.keys()
        if not (keys <= self.names and self.required_names <= keys):
            return False
        if keys <= self.texts:  # text members alone, as most requests hold: their types in C
            return countOf(map(type, value.values()), str) == len(value)
        kinds = self.kinds
        for name, item in value.items():
            kind = kinds[name]
            if not (isinstance(item, kind) if type(kind) is tuple else kind(item)):
                return False
        return True

    def all(self, values: list | tuple) -> bool:
        """Every one of values passes. A batch's entries of text members alone (Id and
        MessageBody, Id and ReceiptHandle) are checked all at once, in C: plain dicts, their
        keys text members, the required ones present, every value a str. Others one by one."""
        if (
            countOf(map(type, values), dict) == len(values)
            and all(map(self.texts.issuperset, map(dict.keys, values)))
            and all(all(map(contains, values, repeat(name))) for name in self.required_names)
            and countOf(map(type, chain.from_iterable(map(dict.values, values))), str) == sum(map(len, values))
        ):
            return True
        return all(map(self, values))


def _botocore_decides(shape: Any) -> bool:
    """A shape with rules the checks here don't model (documents, unions, JSON-value headers,
    host labels): botocore's validator decides every value of it."""
    from botocore.utils import is_json_value_header

    return bool(
        is_json_value_header(shape)
        or set(shape.metadata) & {"document", "union"}
        or getattr(shape, "serialization", {}).get("hostLabel")
        or (shape.type_name == "structure" and shape.is_document_type)
    )


def _compile(shape: Any, done: dict[str, Callable[[Any], bool]]) -> Callable[[Any], bool]:
    """A check that is True only for values botocore's ParamValidator finds no fault with; a
    False sends the request to botocore's validator for its report. What the check does not
    model (documents, unions, JSON-value headers, timestamps, floats, host labels) is always
    False, so botocore decides it. ``done``: the checks compiled so far, by shape name
    (recursive shapes refer to themselves)."""
    key = shape.name
    if key in done:
        if done[key] is _compiling:  # a shape inside itself: its check, once it is made
            return lambda value: done[key](value)
        return done[key]
    metadata = shape.metadata
    if _botocore_decides(shape):
        return _never
    low = metadata.get("min")
    kind = shape.type_name
    check: Callable[[Any], bool]
    if kind in _SCALAR_TYPES:
        types = _SCALAR_TYPES[kind]
        if low is None:
            check = _TypeCheck(types)
        elif kind == "string":
            check = lambda value: isinstance(value, str) and len(value) >= low  # noqa: E731
        else:
            check = lambda value: isinstance(value, types) and value >= low  # noqa: E731
    elif kind == "blob":
        check = lambda value: isinstance(value, (bytes, bytearray, str)) or hasattr(value, "read")  # noqa: E731
    elif kind == "list":
        done[key] = _compiling
        member = _compile(shape.member, done)
        if isinstance(member, _TypeCheck):  # names, say: one isinstance per item, no call
            types = member.types
            check = lambda value: (  # noqa: E731
                isinstance(value, (list, tuple)) and (low is None or len(value) >= low) and all(isinstance(v, types) for v in value)
            )
        elif isinstance(member, _StructCheck):  # batch entries
            check = lambda value: isinstance(value, (list, tuple)) and (low is None or len(value) >= low) and member.all(value)  # noqa: E731
        else:
            check = lambda value: isinstance(value, (list, tuple)) and (low is None or len(value) >= low) and all(map(member, value))  # noqa: E731
    elif kind == "map":
        done[key] = _compiling
        key_check, value_check = _compile(shape.key, done), _compile(shape.value, done)
        check = lambda value: (  # noqa: E731
            type(value) is dict and all(map(key_check, value.keys())) and all(map(value_check, value.values()))
        )
    elif kind == "structure":
        done[key] = _compiling
        members = {name: _compile(member, done) for name, member in shape.members.items()}
        check = _StructCheck(members, tuple(metadata.get("required", ())))
    else:
        return _never
    done[key] = check
    return check


def keywords_only(name: str) -> TypeError:
    """What boto3 raises for a positional argument (its words)."""
    return TypeError(f"{name}() only accepts keyword arguments.")


def client(path: str | None = None, **options: Any) -> SQSClient:
    """A boto3-compatible SQS client on a sqsqlite file (``connect``'s options apply)."""
    return SQSClient(connect(path, **options))
