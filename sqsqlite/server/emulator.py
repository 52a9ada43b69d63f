"""The paths other SQS emulators answer, beside SQS's own: health and readiness for compose and
Kubernetes probes, and LocalStack's message look-up.

- ``GET /health``: ``{"status": "ok", "version": ...}`` (200); 503 with ``"starting"`` while the
  server starts (starting.py answers then: the database migrated, the queues file applied), and
  ``"unavailable"`` when the database can't be read.
- ``GET /_localstack/health``, ``/_localstack/init`` and ``/_localstack/init/ready``: LocalStack's
  shapes for its ``sqs`` service, so wait scripts written for LocalStack work unchanged; the init
  paths list the scripts of ``serve --init-dir`` and their states (init_scripts.py).
- ``GET|POST /_aws/sqs/messages?QueueUrl=...`` and ``/_aws/sqs/messages/<region>/<account>/<queue>``:
  a queue's messages as LocalStack answers them, read without receiving them: no receive count, no
  lease, nothing changes. A ReceiveMessage answer: SQS's JSON to a JSON 1.0 request, else XML, or
  with ``Accept: application/json`` LocalStack's JSON (the XML answer's elements as keys, a repeated
  one a list, an error under ``ErrorResponse``). Listed in send order: visible messages, plus
  in-flight ones with ``ShowInvisible=true`` and delayed ones with ``ShowDelayed=true``. A body
  naming another action than ReceiveMessage is LocalStack's ``InvalidRequest``; a queue URL whose
  path names no queue its ``InvalidAddress`` (404). Behind the
  console's rules: the endpoint's keys as HTTP basic credentials, and on loopback a Host naming
  this machine. Its bodies and message attributes hold at most D.LOOKUP_BYTES together: the
  messages past that are left out, and the answer counts them (LOOKUP_LEFT_OUT_HEADER and a
  ``MessagesLeftOut`` member). A body it can't read is a 400 in SQS's shape; any method but GET
  and POST is 405.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Collection
from importlib import metadata
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .. import console as console_module
from .. import defaults as D
from .. import validation as V
from ..actions import message_out
from ..core.rules import message_state
from ..errors import InvalidParameterValue, QueueDoesNotExist, SQSError
from . import urls, wire
from .dispatch import Answer, Dispatcher, Headers, Request
from .init_scripts import STAGES

# The most a look-up's form body may hold (its parameters are a queue URL and two flags).
LOOKUP_BODY_BYTES = 64 * 1024
HEALTH_PATHS = ("/health", "/_localstack/health", "/_localstack/init")
# /_localstack/init/<stage>: one stage's scripts (any case; LocalStack's 404, no body, for another).
INIT_STAGE_PREFIX = "/_localstack/init/"
MESSAGES_PATH = "/_aws/sqs/messages"
# The receipt handle LocalStack gives a message looked up: no receive made it, and no call takes it.
LOOKUP_RECEIPT_HANDLE = "SQS/BACKDOOR/ACCESS"
# LocalStack's answers to a look-up naming another action, and to a queue URL it can't read.
OTHER_ACTION = "This endpoint only accepts ReceiveMessage calls"
INVALID_ADDRESS = "The address https://queue.amazonaws.com/ is not valid for this endpoint."
# The methods the look-up serves (405 with this Allow for any other).
LOOKUP_METHODS = ("GET", "POST")
# On an answer cut at D.LOOKUP_BYTES: how many messages it left out (absent when none).
LOOKUP_LEFT_OUT_HEADER = "x-sqsqlite-messages-left-out"
log = logging.getLogger("sqsqlite.server")
_JSON = "application/json"


def serves(path: str) -> bool:
    """Whether a path is one of these (the rest is SQS's or the console's)."""
    return is_health(path) or path == MESSAGES_PATH or path.startswith(MESSAGES_PATH + "/")


def is_health(path: str) -> bool:
    """Whether a path is a health path: /health, LocalStack's and its init paths (a stage's too)."""
    return path in HEALTH_PATHS or (path.startswith(INIT_STAGE_PREFIX) and "/" not in path[len(INIT_STAGE_PREFIX) :])


def version() -> str:
    try:
        return metadata.version("sqsqlite")
    except metadata.PackageNotFoundError:  # run from a tree that was never installed
        from .. import __version__

        return __version__


def starting_answer(path: str, headers: Headers, request_id: str) -> Answer:
    """The answer to any request while the server starts (nothing of it runs): the health paths
    say "starting"; the rest is ServiceUnavailable (503) in SQS's shape, which the AWS SDKs retry."""
    if is_health(path):
        return health_answer(path, "starting", version())
    err = wire.WireError("ServiceUnavailable", "The request has failed due to a temporary failure of the server.", 503, sender_fault=False)
    return _error(err, Dispatcher.protocol(headers)[0], request_id)


def health_answer(path: str, status: str, version: str, init: dict[str, Any] | None = None) -> Answer:
    """A health path's answer for ``status``: ok, starting or unavailable. ``init``: the init
    scripts' status (init_scripts.py), whose READY stage is completed once its scripts ended."""
    ok = status == "ok"
    if path == "/health":
        return _json(200 if ok else 503, {"status": status, "version": version})
    if path == "/_localstack/health":
        sqs = {"ok": "running", "starting": "starting"}.get(status, "error")  # LocalStack's service states
        return _json(200, {"services": {"sqs": sqs}, "edition": "sqsqlite", "version": version})
    stages = {"BOOT": True, "START": True, "READY": ok, "SHUTDOWN": False}
    scripts: list[dict[str, str]] = []
    if init is not None:
        stages = {**init["completed"], "READY": ok and init["completed"]["READY"]}
        scripts = init["scripts"]
    if path == "/_localstack/init":
        return _json(200, {"completed": stages, "scripts": scripts})
    stage = path[len(INIT_STAGE_PREFIX) :].upper()  # /_localstack/init/<stage>
    if stage not in STAGES:
        return Answer(404, "text/plain; charset=utf-8", b"", {})
    return _json(200, {"completed": stages[stage], "scripts": [s for s in scripts if s["stage"] == stage]})


class EmulatorRoutes:
    """Answers the paths above for one endpoint that serves."""

    def __init__(
        self,
        db: Any,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        loopback: bool = True,
        allowed_hosts: Collection[str] = (),
        dispatcher: Dispatcher | None = None,
    ):
        self.db = db
        # Reads a look-up's account and region as it reads an SQS request's (None: the URL's alone).
        self.dispatcher = dispatcher
        self.credentials = None if access_key is None else f"{access_key}:{secret_key}".encode()
        self.loopback = loopback
        self.allowed_hosts = frozenset(h.lower().rstrip(".") for h in allowed_hosts)
        self.version = version()
        # The init scripts (init_scripts.InitScripts or StatusFile): None, serve has none.
        self.init: Any = None

    def refused_before_body(self, method: str, path: str, headers: Headers) -> Answer | None:
        """The answer to a request refused whatever its body, on a connection then closed (the
        body may still be coming), so that no unauthenticated body is read or counts against the
        server's budget; None otherwise. Health takes no body; the look-up takes the console's
        rules and a form's size."""
        if is_health(path):
            answer = None if method in ("GET", "HEAD") else _not_allowed("Health is asked with GET.", ("GET", "HEAD"))
        else:
            answer = self._refused(Request(method, path, "", headers, b"")) or _wrong_method(method)
            length = headers.get("Content-Length") or ""
            if answer is None and length.isdigit() and int(length) > LOOKUP_BODY_BYTES:
                answer = _text(413, f"A look-up's parameters fit in {LOOKUP_BODY_BYTES} bytes; give them in the query string.")
            elif answer is None and "chunked" in (headers.get("Transfer-Encoding") or "").lower():
                answer = _text(411, "A look-up's body needs a Content-Length; give its parameters in the query string.")
        if answer is not None:
            answer.headers["Connection"] = "close"
        return answer

    def handle(self, req: Request, request_id: str) -> Answer:
        """Answer one request (blocking: it reads the database); never raises."""
        if is_health(req.path):
            return self.health(req.path)
        return self.messages(req, request_id)

    # ------------------------------------------------------------ health

    def status(self) -> str:
        """ok, or unavailable (the database can't be read)."""
        try:
            self.db.list_queues("", 1)
        except Exception:  # any failure to read: a probe wants a status, not a traceback
            return "unavailable"
        return "ok"

    def health(self, path: str) -> Answer:
        init = self.init.status() if self.init is not None else None
        return health_answer(path, self.status(), self.version, init)

    # ------------------------------------------------------------ message look-up

    def messages(self, req: Request, request_id: str) -> Answer:
        content_type = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        is_json = content_type == wire.JSON_CONTENT_TYPE
        # What LocalStack answers a request of the query protocol or none in: XML, unless it
        # accepts JSON better (or, accepting anything, sent JSON).
        as_json = not is_json and _prefers_json(req.headers.get("Accept"), content_type)
        refused = self._refused(req) or _wrong_method(req.method)
        if refused is not None:
            return refused
        try:
            params = self._params(req, is_json)
            target = req.headers.get("X-Amz-Target") if is_json else None
            action = target.rpartition(".")[2] if target else params.get("Action")
            if action is not None and action != "ReceiveMessage":
                raise wire.WireError("InvalidRequest", OTHER_ACTION, 400, json_type="InvalidRequest", sender_fault=False)
            name, db = self._queue_name(req, params)
            show_invisible = _flag("ShowInvisible", params.get("ShowInvisible"))
            show_delayed = _flag("ShowDelayed", params.get("ShowDelayed"))
            shown = {"visible"} | ({"in-flight"} if show_invisible else set()) | ({"delayed"} if show_delayed else set())
            queue = db.queue(name)
            now = db.now()
            # The engine leaves out the bodies past the cap unread (counted in characters);
            # the cut in bytes is made here.
            messages, left_out = queue.peek_within(shown, D.LOOKUP_LIMIT, D.LOOKUP_BYTES)
            out = []
            used = 0
            for i, m in enumerate(messages):
                used += V.message_size(_utf8(m.body), m.message_attributes)
                if used > D.LOOKUP_BYTES:
                    left_out += len(messages) - i
                    break
                state = message_state(now if m.visible_at is None else m.visible_at, m.receive_count, now)
                item = message_out(m)
                item["ReceiptHandle"] = LOOKUP_RECEIPT_HANDLE
                attributes = item.setdefault("Attributes", {})
                attributes.setdefault("ApproximateFirstReceiveTimestamp", "0")  # LocalStack's, never received
                if show_invisible:
                    attributes["IsVisible"] = "true" if state == "visible" else "false"
                if show_delayed:
                    attributes["IsDelayed"] = "true" if state == "delayed" else "false"
                out.append(item)
            del messages
        except SQSError as err:
            return _error(err, is_json, request_id, as_json)
        except Exception:  # a bug: SQS's InternalError, never the HTTP server's bare 500
            log.exception("look-up %s failed", request_id)
            bug = wire.WireError("InternalError", f"The server could not complete request {request_id}.", 500, sender_fault=False)
            return _error(bug, is_json, request_id, as_json)
        result: dict[str, Any] = {"Messages": out} if out else {}
        headers: dict[str, str] = {}
        if left_out:
            # Members no ReceiveMessage answer has, which the SDKs' parsers pass over.
            result["MessagesLeftOut"] = left_out
            headers[LOOKUP_LEFT_OUT_HEADER] = str(left_out)
        if is_json:
            return Answer(200, wire.JSON_CONTENT_TYPE, wire.json_response(result), headers)
        if as_json:
            return Answer(200, _JSON, _localstack_json(result, request_id), headers)
        return Answer(200, wire.XML_CONTENT_TYPE, wire.xml_response("ReceiveMessage", result, request_id), headers)

    def _params(self, req: Request, is_json: bool) -> dict[str, Any]:
        # Strict UTF-8, as for an SQS request: a percent-escape that decodes to none is refused.
        try:
            params: dict[str, Any] = dict(parse_qsl(req.raw_query, keep_blank_values=True, errors="strict"))
        except UnicodeDecodeError:
            raise InvalidParameterValue("The query string is not valid UTF-8 once percent-decoded.") from None
        if req.method == "POST" and req.body:
            if is_json:
                # SQS's own parse: a body that is not JSON, nests too deeply or is not an object
                # is a SerializationException (400).
                params.update(wire.json_request(req.body))
            else:
                try:
                    params.update(parse_qsl(req.body.decode("utf-8"), keep_blank_values=True, errors="strict"))
                except UnicodeDecodeError:
                    raise InvalidParameterValue("The form-encoded request body is not valid UTF-8 once percent-decoded.") from None
        return params

    def _queue_name(self, req: Request, params: dict[str, Any]) -> tuple[str, Any]:
        """The queue's name, and the database as its account and region see it: what the address
        leaves out is the request's, as for an SQS request (its signature, its Host), else the
        default's."""
        path = req.path
        if path != MESSAGES_PATH:  # /_aws/sqs/messages/<region>/<account>/<queue>
            parts = path[len(MESSAGES_PATH) + 1 :].split("/")
            if len(parts) != 3 or not all(parts):
                raise wire.WireError(
                    "InvalidAddress", f"The address {path!r} is not valid: use {MESSAGES_PATH}/<region>/<account>/<queue>.", 404
                )
            return V.queue_name(parts[2]), self.db.scoped(region=V.region(parts[0]), account_id=V.account_id(parts[1]))
        url = params.get("QueueUrl")
        if not url or not isinstance(url, str):
            raise QueueDoesNotExist("The specified queue does not exist.", "Give the queue as QueueUrl=<its URL or name>.")
        if "/" in url and not _names_a_queue(url):
            raise wire.WireError("InvalidAddress", INVALID_ADDRESS, 404)
        if self.dispatcher is not None:
            account, region, _ = self.dispatcher.scope(req, "ReceiveMessage", {"QueueUrl": url})
        else:
            account, region = urls.scope_of_url(url)
        return V.queue_name_from_url(url), self.db.scoped(region=region, account_id=account)

    def _refused(self, req: Request) -> Answer | None:
        """The console's rules: on loopback, a Host naming this machine (a page whose own name
        a DNS rebinding pointed here sends its own); with keys, them as basic credentials."""
        if self.loopback and not console_module.names_this_machine(req.headers.get("Host") or "", self.allowed_hosts):
            return _text(403, "This endpoint listens on loopback only: ask it as localhost or 127.0.0.1 (--allow-host for another name).")
        if self.credentials is None or console_module.has_credentials(req.headers, self.credentials):
            return None
        answer = _text(401, console_module.CREDENTIALS_REQUIRED)
        answer.headers.update(console_module.BASIC_REALM)
        return answer


def _error(err: SQSError, is_json: bool, request_id: str, as_json: bool = False) -> Answer:
    code, _, status = wire.error_parts(err)
    headers = {"x-amzn-query-error": f"{code};{'Sender' if err.sender_fault else 'Receiver'}"}
    if is_json:
        return Answer(status, wire.JSON_CONTENT_TYPE, wire.json_error(err), headers)
    if as_json:
        error = {"Code": code, "Message": err.message} | ({"Type": "Sender"} if err.sender_fault else {})
        return Answer(status, _JSON, json.dumps({"ErrorResponse": {"Error": error, "RequestId": request_id}}).encode(), headers)
    return Answer(status, wire.XML_CONTENT_TYPE, wire.xml_error(err, request_id), headers)


def _names_a_queue(url: str) -> bool:
    """Whether a queue URL's path has a queue's place in it, as LocalStack reads one:
    ``/<account>/<name>`` or ``/queue/<region>/<account>/<name>`` (and sqsqlite's
    ``/<region>/<account>/<name>``)."""
    try:
        parts = urlsplit(url.rstrip("/")).path.lstrip("/").split("/")
    except ValueError:  # such as an IPv6 host without its "]"
        return False
    if len(parts) == 3:
        return urls.is_region(parts[0])
    return len(parts) == 2 or (len(parts) == 4 and parts[0] == "queue")


def _prefers_json(accept: str | None, content_type: str) -> bool:
    """Whether an Accept header ranks application/json above XML, as LocalStack's serializer
    ranks them (XML on a tie; ``*/*`` alone, or no Accept, defers to the request's own type)."""
    accept = (accept or "").strip()
    if not accept or accept == "*/*":
        return content_type == _JSON
    ranges = []
    for part in accept.split(","):
        media, _, rest = part.partition(";")
        q = 1.0
        for param in rest.split(";"):
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        ranges.append((media.strip().lower(), q))

    def quality(media: str) -> float:
        # The most specific range that matches decides (type/subtype over type/* over */*).
        kind = media.split("/")[0]
        for wanted in (media, f"{kind}/*", "*/*"):
            for given, q in ranges:
                if given == wanted:
                    return q
        return 0.0

    return quality(_JSON) > max(quality("text/xml"), quality("application/xml"), 0.0)


def _one_or_many(items: list[Any]) -> Any:
    # An element that appears once is a value in LocalStack's JSON, more than once a list.
    return items[0] if len(items) == 1 else items


def _localstack_json(result: dict[str, Any], request_id: str) -> bytes:
    """A look-up's answer in LocalStack's JSON: its XML answer's elements as keys (namespace
    left out), a repeated element a list of them, a lone one its value, an empty result null,
    every value text."""
    out: dict[str, Any] = {}
    messages = result.get("Messages") or []
    if messages:
        out["Message"] = _one_or_many([_localstack_message(m) for m in messages])
    if "MessagesLeftOut" in result:
        out["MessagesLeftOut"] = str(result["MessagesLeftOut"])
    answer = {"ReceiveMessageResult": out or None, "ResponseMetadata": {"RequestId": request_id}}
    return json.dumps({"ReceiveMessageResponse": answer}).encode()


def _localstack_message(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: m[k] for k in ("MessageId", "ReceiptHandle", "MD5OfBody", "Body")}
    if m.get("Attributes"):
        out["Attribute"] = _one_or_many([{"Name": k, "Value": v} for k, v in m["Attributes"].items()])
    if m.get("MessageAttributes"):
        out["MD5OfMessageAttributes"] = m["MD5OfMessageAttributes"]
        out["MessageAttribute"] = _one_or_many([{"Name": k, "Value": _localstack_value(v)} for k, v in m["MessageAttributes"].items()])
    return out


def _localstack_value(value: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in value.items():
        if isinstance(v, (list, tuple)):
            if v:
                out[k.removesuffix("s")] = _one_or_many([_localstack_text(i) for i in v])
        elif v is not None:
            out[k] = _localstack_text(v)
    return out


def _localstack_text(v: Any) -> str:
    return base64.b64encode(bytes(v)).decode("ascii") if isinstance(v, (bytes, bytearray, memoryview)) else str(v)


def _flag(name: str, value: Any) -> bool:
    if value is None or isinstance(value, bool):
        return bool(value)
    if not isinstance(value, (str, int, float)):  # a JSON list or object: never str() it (it may nest deep)
        raise InvalidParameterValue(f"Invalid {name}: use true or false.")
    return str(value).strip().lower() in ("true", "1")


def _utf8(body: Any) -> bytes:
    return body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")


def _wrong_method(method: str) -> Answer | None:
    if method in LOOKUP_METHODS:
        return None
    return _not_allowed("The look-up is asked with GET or POST.", LOOKUP_METHODS)


def _not_allowed(message: str, methods: Collection[str]) -> Answer:
    answer = _text(405, message)
    answer.headers["Allow"] = ", ".join(methods)
    return answer


def _json(status: int, value: Any) -> Answer:
    # json.dumps' own spacing, as LocalStack writes it: wait scripts grep for '"sqs": "running"'.
    return Answer(status, _JSON, json.dumps(value).encode(), {"Cache-Control": "no-store"})


def _text(status: int, message: str) -> Answer:
    return Answer(status, "text/plain; charset=utf-8", (message + "\n").encode(), {})
