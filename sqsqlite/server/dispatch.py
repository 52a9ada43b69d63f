"""One request, whatever carried it: SQS's JSON 1.0 and query protocols over the action layer.

The transport (``asgi.py``) reads the request, hands it here as a :class:`Request` and writes the
:class:`Answer` back. Everything SQS-shaped lives here: which action, signature checks, the
queue named by the path, errors in each protocol's words. Only the engine call itself is left to
the transport, because a long poll parks there instead of blocking a thread.
"""

from __future__ import annotations

import functools
import logging
import re
import sys
import time
import traceback
from collections.abc import Collection
from email.utils import formatdate
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from .. import console as console_module
from .. import defaults as D
from .. import validation as V
from ..action_table import BY_NAME
from ..actions import MEMBERS, UNSUPPORTED, Actions
from ..core.handles import new_request_id
from ..errors import BatchRequestTooLong, InvalidParameterValue, SQSError
from ..longpoll import Stopping
from . import sigv4, urls, wire
from .served import Scope, ServedDatabase
from .sigv4 import Verifier

log = logging.getLogger("sqsqlite.server")

_FORM = "application/x-www-form-urlencoded"
_HOST = re.compile(r"[A-Za-z0-9.\-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
_BATCH_ACTIONS = {"SendMessageBatch", "DeleteMessageBatch", "ChangeMessageVisibilityBatch"}


class Headers:
    """A request's headers, found by name whatever its case (the first of a repeated name)."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self._pairs = pairs
        self._by_name: dict[str, str] = {}
        for name, value in pairs:
            self._by_name.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._by_name.get(name.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return self._pairs


class Request(NamedTuple):
    method: str
    path: str
    raw_query: str
    headers: Headers
    body: bytes


Answer = console_module.Response  # an HTTP answer: status, content type, body, headers


class Call:
    """An SQS request parsed and checked, ready for the engine: ``actions``, the action layer of
    its scope (its endpoint, account, region and sender: Dispatcher.actions_for)."""

    __slots__ = ("action", "request", "is_json", "request_id", "actions", "started", "json_query", "writes")

    def __init__(
        self, action: str, request: dict, is_json: bool, request_id: str, actions: Actions, started: float, json_query: bool = False
    ):
        self.action, self.request, self.is_json = action, request, is_json
        self.request_id, self.actions, self.started = request_id, actions, started
        # A query request that asked for JSON (Accept: application/json): answered in JSON, as SQS does.
        self.json_query = json_query
        # Whether it may write (action_table): only then is the write lock taken up front for it.
        known = BY_NAME.get(action)
        self.writes = known is not None and known.writes


# Query actions Amazon SQS refuses at a queue's URL (InvalidAction): they name no queue. GetQueueUrl
# it answers there.
_NOT_FOR_A_QUEUE = frozenset(("CreateQueue", "ListQueues"))


class Refused(Exception):
    """Parsing ended in an answer (an error, or a console page) instead of a Call."""

    def __init__(self, answer: Answer, action: str | None, request_id: str):
        self.answer, self.action, self.request_id = answer, action, request_id


class Dispatcher:
    """Parses requests into Calls, runs them through the action layer, and words the answers."""

    def __init__(
        self,
        db: ServedDatabase,
        *,
        verifier: Verifier | None,
        console: Any,
        max_request_bytes: int,
        default_host: str,
        loopback: bool = False,
        allowed_hosts: Collection[str] = (),
    ):
        self.db = db
        # Listening on a loopback address: only names of this machine are answered (_from_a_web_page).
        self.loopback = loopback
        self.allowed_hosts = frozenset(h.lower().rstrip(".") for h in allowed_hosts)
        self.actions = Actions(db)  # the database's own scope's (a long poll's hand-back outside a request)
        self._scoped: dict[Scope, Actions] = {}
        self._queues: dict = {}  # the scopes' action layers share one bounded cache of queues by URL
        self.verifier = verifier
        self.console = console
        self.max_request_bytes = max_request_bytes
        self.default_host = default_host
        self.stopping = False
        # `sqsqlite console`: every path is the console's ("/" its queue list), none SQS's.
        self.console_only = False

    # ------------------------------------------------------------ parsing

    @staticmethod
    def protocol(headers: Headers) -> tuple[bool, str | None]:
        """(is the request JSON 1.0, its action as far as the headers tell)."""
        target = headers.get("X-Amz-Target")
        content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
        is_json = target is not None or content_type.startswith("application/x-amz-json")
        action = None
        if is_json and target:
            prefix, _, action = target.partition(".")
            if prefix != "AmazonSQS":
                action = target
        return is_json, action

    def parse(self, req: Request, started: float) -> Call:
        """The Call a request makes; raises Refused with the answer when it makes none."""
        request_id = new_request_id()
        is_json, action = self.protocol(req.headers)
        json_query = not is_json and "application/json" in (req.headers.get("Accept") or "").lower()
        try:
            if self.verifier is not None:
                self.verifier.verify(req.method, req.path, req.raw_query, req.headers.items(), req.body)
            else:
                self._from_a_web_page(req.headers)
            if is_json:
                if not action or action not in MEMBERS and action not in UNSUPPORTED:
                    raise wire.WireError(
                        "InvalidAction",
                        f"Unknown X-Amz-Target {req.headers.get('X-Amz-Target')!r}: expected AmazonSQS.<Action>, one of {', '.join(MEMBERS)}.",
                        json_type="com.amazon.coral.service#UnknownOperationException",
                    )
                request = wire.json_request(req.body)
            else:
                # errors="strict": a percent-escape that decodes to no UTF-8 is refused, not
                # stored as U+FFFD (parse_qsl's default replaces it).
                try:
                    params = parse_qsl(req.raw_query, keep_blank_values=True, errors="strict")
                except UnicodeDecodeError:
                    raise InvalidParameterValue("The query string is not valid UTF-8 once percent-decoded.") from None
                if req.method == "POST" and req.body:
                    form = (req.headers.get("Content-Type") or _FORM).split(";")[0].strip().lower()
                    if form != _FORM:  # a web page's text/plain or multipart post, which no SDK sends
                        raise InvalidParameterValue(
                            f"A query request's body must be {_FORM}, not {V.shorten(req.headers.get('Content-Type'))}."
                        )
                    try:
                        params += parse_qsl(req.body.decode("utf-8"), keep_blank_values=True, errors="strict")
                    except UnicodeDecodeError:
                        raise InvalidParameterValue("The form-encoded request body is not valid UTF-8 once percent-decoded.") from None
                action = next((v for k, v in params if k == "Action"), None)
                if not action:
                    if self._names_a_queue(req.path):  # as Amazon SQS answers a queue's URL asked nothing
                        raise Refused(Answer(404, wire.XML_CONTENT_TYPE, b"<UnknownOperationException/>", {}), None, request_id)
                    raise wire.WireError("MissingAction", "The request must contain the parameter Action.")
                unknown = action not in MEMBERS and action not in UNSUPPORTED
                if unknown or action in _NOT_FOR_A_QUEUE and self._queue_in_path(req.path):
                    # SQS's words for both, at its root and at a queue's URL (recorded).
                    raise wire.WireError("InvalidAction", f"The action {action} is not valid for this endpoint.")
                request = wire.query_request(params, action)
                if request.get("AttributeNames") and "MessageSystemAttributeNames" in request:
                    # SQS's query API answers AttributeNames alone when a receive gives both.
                    del request["MessageSystemAttributeNames"]
            account_id, region, sender_id = self.scope(req, action, request)
            self._queue_from_path(req.path, action, request)
            trace = req.headers.get("X-Amzn-Trace-Id")
            if trace and action == "SendMessage":
                # As SQS: the X-Ray header of a SendMessage becomes the message's AWSTraceHeader,
                # unless the request gives one as a message system attribute.
                system = request.setdefault("MessageSystemAttributes", {})
                if isinstance(system, dict):
                    system.setdefault("AWSTraceHeader", {"DataType": "String", "StringValue": trace})
        except SQSError as err:
            raise Refused(self.error(err, is_json, request_id, json_query=json_query), action, request_id) from None
        actions = self.actions_for(Scope(self._endpoint(req.headers), account_id, region, sender_id))
        return Call(action, request, is_json, request_id, actions, started, json_query)

    def actions_for(self, scope: Scope) -> Actions:
        """The action layer over the database as requests of ``scope`` see it (for_request), made
        once for each scope: its queues' checked URLs are kept across requests."""
        actions = self._scoped.get(scope)
        if actions is None:
            if len(self._scoped) >= D.REQUEST_SCOPES_KEPT:
                self._scoped.clear()
            actions = self._scoped[scope] = Actions(self.db.for_request(scope), queues=self._queues)
        return actions

    def refused_before_body(self, raw_query: str, headers: Headers, request_id: str) -> Answer | None:
        """With keys, the answer to a request whose signature is refused whatever its body (none,
        malformed, another key or scope, stale), given before the body is read, on a connection
        then closed (the body may still be coming); None when the body is needed to tell."""
        if self.verifier is None:
            return None
        try:
            self.verifier.check_before_body(raw_query, headers.items())
        except SQSError as err:
            answer = self.error(err, self.protocol(headers)[0], request_id)
            return answer._replace(headers={**answer.headers, "Connection": "close"})
        return None

    def _from_a_web_page(self, headers: Headers) -> None:
        """Without keys (a signature keeps web pages out), refuse what only a browser sends for a
        page of another site: an Origin that is not this endpoint, Sec-Fetch-Site cross-site or
        same-site; and, listening on loopback, a Host that is no loopback name (a page whose own
        name a DNS rebinding pointed at 127.0.0.1). The AWS SDKs and CLI send none of these."""
        host = (headers.get("Host") or "").strip().lower()
        origin = headers.get("Origin")
        site = (headers.get("Sec-Fetch-Site") or "none").strip().lower()
        if site not in ("none", "same-origin"):
            why = f"a browser sent it for a page of another site (Sec-Fetch-Site: {V.shorten(site)})"
        elif origin is not None and _netloc(origin) != host:
            why = f"a browser sent it for a page of another site (Origin: {V.shorten(origin)})"
        elif self.loopback and host and not _names_this_machine(host, self.allowed_hosts):
            why = f"this endpoint listens on loopback and answers only names of this machine, not {V.shorten(host)}"
        else:
            return
        err = wire.WireError(
            "AccessDenied",
            f"Access to the resource http://{host or self.default_host}/ is denied.",
            403,
            json_type="com.amazon.coral.service#AccessDeniedException",
        )
        err.hint = f"Refused: {why}. Web pages can't use this endpoint; an SDK or the aws CLI can." + (
            " Reached by another name, start the server with --allow-host NAME, or with --access-key and --secret-key "
            "(signed requests are let in)."
            if why.startswith("this endpoint")
            else ""
        )
        raise err

    def scope(self, req: Request, action: str, request: dict) -> tuple[str | None, str | None, str | None]:
        """(account, region) whose queues a request reaches, as LocalStack tells them, and the
        account that sends (None: the database's default): the account a 12-digit access key id
        names, the region of the signature's scope, else of the host (sqs.<region>.<host>,
        <region>.queue.<host>); a queue's URL, as the path or the QueueUrl member, names its own
        where it gives them, and GetQueueUrl's QueueOwnerAWSAccountId its account. The sender is
        the signer's account whatever queue it reaches (a message's SenderId)."""
        signed = sigv4.credential_scope(req.raw_query, req.headers.get("Authorization"))
        account = sender = signed[0] if signed and urls.is_account(signed[0]) else None
        region = signed[1] if signed else None  # a region's name (credential_scope checked it)
        url = request.get("QueueUrl")
        named = None
        if isinstance(url, str) and url:
            named = urls.scope_of_url(url)
        if region is None or named is None and req.path != "/":  # the host (or the path) tells
            host = (req.headers.get("Host") or "").strip()
            if not _HOST.fullmatch(host):
                host = self.default_host
            if region is None:
                region = urls.region_of_host(host)
            if named is None and self._names_a_queue(req.path):
                named = urls.scope_of_url(f"http://{host}{req.path}")
        if named is not None:
            account = named.account or account
            if named.region is not None:
                region = V.region(named.region)
        elif signed is None and region is not None:
            region = V.region(region)  # the host's
        owner = request.get("QueueOwnerAWSAccountId")
        if action == "GetQueueUrl" and isinstance(owner, str) and urls.is_account(owner):
            account = owner
        return account, region, sender

    def _queue_in_path(self, path: str) -> str | None:
        """The queue a path names (/<account>/<queue>, or the path-style URLs emulators give:
        /queue/<region>/<account>/<queue>); None for the endpoint's own (/). The account and
        region it names are the queue's (scope)."""
        parts = [p for p in path.split("/") if p]
        if not parts:
            return None
        head = parts[:-2]
        if (
            head == ["queue"]
            or (len(head) == 1 and urls.is_region(head[0]))
            or (len(head) == 2 and head[0] == "queue" and urls.is_region(head[1]))
        ):
            parts = parts[-2:]
        if len(parts) != 2:
            raise wire.WireError(
                "InvalidAddress", f"The address {path!r} is not valid for this endpoint: use / or /<account>/<queue>.", 404
            )
        return parts[1]

    def _names_a_queue(self, path: str) -> bool:
        try:
            return self._queue_in_path(path) is not None
        except wire.WireError:  # no address of this endpoint's
            return False

    def _queue_from_path(self, path: str, action: str, request: dict) -> None:
        """Query requests may be sent to the queue's own URL; the path then names the queue."""
        name = self._queue_in_path(path)
        if name is not None and "QueueUrl" in MEMBERS.get(action, ()) and not request.get("QueueUrl"):
            request["QueueUrl"] = name

    def _endpoint(self, headers: Headers) -> str:
        host = (headers.get("Host") or "").strip()
        if not _HOST.fullmatch(host):
            host = self.default_host
        return f"http://{host}"

    # ------------------------------------------------------------ running

    def console_refused_before_body(self, method: str, path: str, headers: Headers) -> Answer | None:
        """The console's answer to a request it refuses whatever its body (Console.refused_before_body),
        on a connection then closed (the body may still be coming); None otherwise."""
        check = getattr(self.console, "refused_before_body", None)  # not the stand-in without the extra
        answer = check(method, path, headers) if check is not None else None
        if answer is None:
            return None
        return Answer(answer.status, answer.content_type, answer.body, {**answer.headers, "Connection": "close"})

    def console_page(self, req: Request) -> Answer:
        answer = self.console.handle(req.method, req.path, req.raw_query, req.headers, req.body)
        return Answer(answer.status, answer.content_type, answer.body, dict(answer.headers))

    # ------------------------------------------------------------ answers

    def success(self, call: Call, result: dict) -> Answer:
        if call.is_json:
            return Answer(200, wire.JSON_CONTENT_TYPE, wire.json_response(result), {})
        if call.json_query:
            return Answer(200, wire.QUERY_JSON_CONTENT_TYPE, wire.query_json_response(call.action, result, call.request_id), {})
        return Answer(200, wire.XML_CONTENT_TYPE, wire.xml_response(call.action, result, call.request_id), {})

    def answer(self, call: Call) -> Answer:
        """The answer to a Call, run here and now (attempt, then shaped)."""
        return self.shaped(call, self.attempt(call))

    def shaped(self, call: Call, got: dict | Answer) -> Answer:
        """The answer to a Call whose engine work gave ``got`` (attempt's, or an error's answer):
        a result shaped as SQS's success; a failure to shape it, SQS's InternalError."""
        if not isinstance(got, dict):
            return got
        try:
            return self.success(call, got)
        except Exception:
            return self.internal(call.is_json, call.request_id, call.json_query)

    def attempt(self, call: Call) -> dict | Answer:
        """The engine's result of a Call, or the answer its error gets (SQS's): an answer to a
        success is shaped afterwards (success), outside the write lock the call may hold."""
        try:
            return call.actions.call(call.action, call.request)
        except Stopping:
            return self.success(call, {})  # shutting down: a long poll ends with no messages, as at its deadline
        except SQSError as err:
            return self.error(err, call.is_json, call.request_id, json_query=call.json_query)
        except Exception:
            return self.internal(call.is_json, call.request_id, call.json_query)

    def internal(self, is_json: bool, request_id: str, json_query: bool = False) -> Answer:
        """A bug, not the caller's fault: say so without leaking internals."""
        # Outside an except block (a grouped call whose group failed), the cause is logged already.
        log.error("request %s failed:\n%s", request_id, traceback.format_exc() if sys.exc_info()[0] else "its write was not committed")
        err = wire.WireError(
            "InternalError", f"The server could not complete request {request_id}.", 500, "com.amazonaws.sqs#InternalError", False
        )
        return self.error(err, is_json, request_id, json_query=json_query)

    def error(self, err: SQSError, is_json: bool, request_id: str, status: int | None = None, json_query: bool = False) -> Answer:
        code, _, wire_status = wire.error_parts(err)
        headers = {"x-amzn-query-error": f"{code};{'Sender' if err.sender_fault else 'Receiver'}"}
        if is_json:
            return Answer(status or wire_status, wire.JSON_CONTENT_TYPE, wire.json_error(err), headers)
        if json_query:
            return Answer(status or wire_status, wire.QUERY_JSON_CONTENT_TYPE, wire.query_json_error(err, request_id), headers)
        return Answer(status or wire_status, wire.XML_CONTENT_TYPE, wire.xml_error(err, request_id), headers)

    def too_large(self, size: int | None, headers: Headers, request_id: str) -> Answer:
        is_json, action = self.protocol(headers)
        limit = self.max_request_bytes
        what = f"of {size} bytes" if size is not None else "(chunked)"
        message = f"The request body {what} is larger than this endpoint accepts ({limit} bytes); a message or batch carries at most {D.MAX_BATCH_PAYLOAD} bytes."
        err: SQSError = BatchRequestTooLong(message) if action in _BATCH_ACTIONS else InvalidParameterValue(message)
        answer = self.error(err, is_json, request_id, status=413)
        return answer._replace(headers={**answer.headers, "Connection": "close"})

    def bad_request(self, message: str, headers: Headers, request_id: str) -> Answer:
        is_json, _ = self.protocol(headers)
        return self.error(wire.WireError("InvalidRequest", message), is_json, request_id)

    def body_cut_off(self, stopping: bool, headers: Headers, request_id: str) -> Answer:
        """The answer to a request whose body stopped arriving (RequestTimeout, which the AWS SDKs
        retry), or was still arriving when the server began to stop (ServiceUnavailable, retried
        too): nothing of it ran. The connection closes: the rest of the body may still come."""
        is_json, _ = self.protocol(headers)
        if stopping:
            err = wire.WireError(
                "ServiceUnavailable", "The request has failed due to a temporary failure of the server.", 503, sender_fault=False
            )
        else:
            err = wire.WireError(
                "RequestTimeout", "Your socket connection to the server was not read from or written to within the timeout period.", 408
            )
        answer = self.error(err, is_json, request_id)
        return answer._replace(headers={**answer.headers, "Connection": "close"})

    def lock_wait_over(self, call: Call) -> Answer:
        """The answer to a call whose write could not get the database's write lock before its
        deadline (asgi.py): nothing of it was written. ServiceUnavailable, which every AWS SDK
        retries, as SQS says it when it fails for a while; not a throttling error, which would
        tell an SDK in adaptive mode to slow its own rate for a lock another program held."""
        err = wire.WireError(
            "ServiceUnavailable", "The request has failed due to a temporary failure of the server.", 503, sender_fault=False
        )
        return self.error(err, call.is_json, call.request_id, json_query=call.json_query)

    def head(self, answer: Answer, request_id: str, started: float) -> list[tuple[bytes, bytes]]:
        """The response's headers, as bytes pairs."""
        elapsed = (time.perf_counter() - started) * 1000
        # A console HEAD answer names its GET's length itself, with no body: one Content-Length only.
        length = next((v for k, v in answer.headers.items() if k.lower() == "content-length"), len(answer.body))
        pairs = [
            (b"Content-Type", answer.content_type.encode("latin-1")),
            (b"Content-Length", str(length).encode()),
            (b"x-amzn-RequestId", request_id.encode()),
            (b"Server-Timing", f"sqsqlite;dur={elapsed:.3f}".encode()),
            (b"Date", _date()),
            _SERVER,
        ]
        pairs += [(k.encode("latin-1"), str(v).encode("latin-1")) for k, v in answer.headers.items() if k.lower() != "content-length"]
        if self.stopping and "Connection" not in answer.headers:
            pairs.append((b"Connection", b"close"))
        return pairs


_SERVER = (b"Server", b"sqsqlite")
# (epoch second, its Date header), replaced whole in one assignment: the loop and the engine
# threads read it without a lock.
_date_cache: tuple[int, bytes] = (0, b"")


def _date() -> bytes:
    """The Date header, formatted once a second rather than once per response."""
    global _date_cache
    now = int(time.time())
    second, text = _date_cache
    if second != now:
        text = formatdate(now, usegmt=True).encode()
        _date_cache = (now, text)
    return text


@functools.lru_cache(maxsize=64)  # a server sees few Host values; this runs for every request
def _names_this_machine(host: str, allowed: frozenset[str]) -> bool:
    return console_module.names_this_machine(host, allowed)


def _netloc(origin: str) -> str:
    """An Origin header's host and port as a Host header gives them; "" for one that is none."""
    try:
        return urlsplit(origin.strip()).netloc.lower()
    except ValueError:  # "http://[::1", say: no origin this endpoint has
        return ""


console_serves = console_module.serves
console_action = console_module.action
