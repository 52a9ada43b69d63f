"""The console's routes: server-rendered pages, the JSON the pages poll, the forms that act.

``Console.handle(method, path, query, headers, body)`` answers one request with a ``Response``;
the endpoint (``sqsqlite serve``) and the console's own server (``sqsqlite console``) both call
it, so the two serve the same thing. Reading never changes a message: pages come from
``Database.stats`` and ``Queue.peek_previews``.
"""

from __future__ import annotations

import base64
import dataclasses
import hmac
import json
import mimetypes
import re
import secrets
import threading
import traceback
from collections.abc import Callable, Collection
from datetime import datetime, timezone
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import escape

from .. import defaults as D
from .. import space
from ..core.rules import message_state
from ..errors import QueueDoesNotExist, SQSError
from . import BASIC_REALM, CREDENTIALS_REQUIRED, Response, chart, has_credentials, names_this_machine, serves
from .metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from .metrics import Metrics

_HERE = Path(__file__).resolve().parent
_STATIC = _HERE / "static"
_QUEUE = r"(?P<name>[A-Za-z0-9_-]{1,80}(?:\.fifo)?)"
# A queue page's attributes: all but the counts, which the page shows from stats already (and
# which would count a big queue a second time).
_SETTINGS = tuple(n for n in D.ALL_ATTRIBUTES if not n.startswith("ApproximateNumberOf"))
# No inline script or style, nothing from another origin, never inside a frame (a purge button
# in someone else's page).
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Frame-Options": "DENY",  # frame-ancestors' older spelling, for browsers without CSP 2
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def said(err: SQSError) -> str:
    """An error as an operator reads it: SQS's text, then sqsqlite's fuller explanation."""
    return f"{err.message} ({err.hint})" if err.hint else err.message


# What the console says where a chart of the history would be, when the file keeps none.
HISTORY_OFF = "No history is kept for this file: it is off. Turn it on with: sqsqlite history --retention 14d"


_TOO_LARGE = "The form is larger than the console reads."


class Refused(Exception):
    """A request the console answers with an error page: status and a sentence."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


def age(seconds: float | None) -> str:
    """Seconds as people read them: 42 s, 3 min 12 s, 2 h 5 min, 3 d 4 h."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    if s < 86400:
        return f"{s // 3600} h {s % 3600 // 60} min"
    return f"{s // 86400} d {s % 86400 // 3600} h"


def num(value: int | None) -> str:
    """A count with thousands separators, as the page's script writes it."""
    return "-" if value is None else f"{value:,}"


def size(value: int) -> str:
    """Bytes in the unit a person reads them in."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:,.1f} {unit}"
    return f"{value:,} bytes"


def _when(epoch_ms: int | None) -> str:
    if epoch_ms is None:
        return "-"
    return datetime.fromtimestamp(epoch_ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _queue_name(arn: str | None) -> str | None:
    return arn.rsplit(":", 1)[-1] if arn else None


class Console:
    """The console and /metrics over one Database.

    ``read_only`` refuses every action with 403. With ``access_key`` and ``secret_key`` every
    request must carry them as HTTP basic credentials (user and password). ``loopback``: the
    server listens on a loopback address only, so a request must name the host as such (a page
    elsewhere can't reach the console by pointing its own name at 127.0.0.1), or as one of
    ``allowed_hosts``. ``secret``: what the keys of the form tokens and the banners derive from,
    the same in every worker of a server; without it, each is drawn at random.
    """

    def __init__(
        self,
        db: Any,
        *,
        read_only: bool = False,
        access_key: str | None = None,
        secret_key: str | None = None,
        loopback: bool = True,
        metrics: Metrics | None = None,
        allowed_hosts: Collection[str] = (),
        secret: bytes | None = None,
    ):
        if (access_key is None) != (secret_key is None):
            raise ValueError("give both access_key and secret_key, or neither")
        self.db = db
        self.read_only = read_only
        self.loopback = loopback
        self.allowed_hosts = frozenset(h.lower().rstrip(".") for h in allowed_hosts)
        self.credentials = None if access_key is None else f"{access_key}:{secret_key}".encode()
        self.metrics = metrics or Metrics(db)
        # form_key signs the forms' tokens (form_token), so a page of another site can't make the
        # browser purge a queue. banner_key signs the banners' text in the redirects that carry
        # it: a link of anyone else's can't put words of its own in the console's trusted notice
        # and error boxes.
        if secret is None:
            self.form_key, self.banner_key = secrets.token_bytes(32), secrets.token_bytes(32)
        else:
            self.form_key = hmac.new(secret, b"form token", "sha256").digest()
            self.banner_key = hmac.new(secret, b"banner key", "sha256").digest()
        self.templates = Environment(
            loader=FileSystemLoader(str(_HERE / "templates")),
            autoescape=select_autoescape(default=True),
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.filters.update(age=age, when=_when, num=num, size=size)
        pages: list[tuple[re.Pattern[str], Callable[..., Response]]] = [
            (re.compile(r"/console/?"), self.index),
            (re.compile(r"/console/api/stats"), self.stats_json),
            (re.compile(r"/console/api/history"), self.history_json),
            (re.compile(rf"/console/queues/{_QUEUE}"), self.queue_page),
            (re.compile(rf"/console/queues/{_QUEUE}/tasks"), self.tasks_fragment),
            (re.compile(r"/console/static/(?P<file>[a-z]+\.(?:js|css))"), self.static),
            (re.compile(r"/metrics"), self.metrics_text),
        ]
        actions: list[tuple[re.Pattern[str], Callable[..., Response]]] = [
            (re.compile(rf"/console/queues/{_QUEUE}/redrive"), self.redrive),
            (re.compile(rf"/console/queues/{_QUEUE}/cancel-redrive"), self.cancel_redrive),
            (re.compile(rf"/console/queues/{_QUEUE}/purge"), self.purge),
            (re.compile(rf"/console/queues/{_QUEUE}/delete"), self.delete),
            (re.compile(rf"/console/queues/{_QUEUE}/archive"), self.set_archive),
        ]
        # Each path's views by method (no two patterns match one path): a method it lacks gets
        # 405 with that path's own Allow.
        self.routes: list[tuple[re.Pattern[str], dict[str, Callable[..., Response]]]] = [
            (pattern, {"GET": view, "HEAD": self.queue_head if view == self.queue_page else view}) for pattern, view in pages
        ] + [(pattern, {"POST": view}) for pattern, view in actions]
        # The views that render a page of the database's contents. Console work runs on the
        # endpoint's engine threads, which SQS requests share: past this many at once the
        # console answers 503 at once rather than queue (a waiting request holds a thread too).
        self.renders = threading.BoundedSemaphore(D.CONSOLE_RENDERS)
        self.rendering = (self.index, self.queue_page, self.queue_head, self.tasks_fragment)

    # ------------------------------------------------------------ dispatch

    def handle(self, method: str, path: str, query: str, headers: Any, body: bytes) -> Response:
        """Answer one request; never raises."""
        admitted = False  # past the Host and credentials checks: may see the database's path
        try:
            self._admit(path, headers)
            admitted = True
            found = next(((views, m) for pattern, views in self.routes if (m := pattern.fullmatch(path))), None)
            if found is None:
                raise Refused(404, f"Nothing at {path}.")
            views, match = found
            if method not in views:
                raise Refused(405, f"{method} is not allowed on {path}.", {"Allow": ", ".join(views)})
            view = views[method]
            params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
            if method == "POST":
                if self.read_only:
                    raise Refused(403, "This console is read-only (--read-only): it shows queues and changes nothing.")
                if len(body) > D.CONSOLE_MAX_FORM_BYTES:
                    raise Refused(413, _TOO_LARGE)
                # What a browser says of the page that sent the form: a page of another site is
                # refused even with a token still in its window (one that leaked). Not Origin
                # against Host: a proxy in front may rewrite Host, never this header.
                site = (headers.get("Sec-Fetch-Site") or "").strip().lower()
                if site in ("cross-site", "same-site"):
                    raise Refused(
                        403,
                        f"The form came from a page of another site (Sec-Fetch-Site: {site}): the console takes forms from its own pages only.",
                    )
                form = {k: v[-1] for k, v in parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True).items()}
                if not self.accepts_token(form.get("token", "")):
                    raise Refused(403, "The form is stale or came from another page: reload the console and try again.")
                params.update(form)
            if view not in self.rendering:
                response = view(params, **match.groupdict())
            elif not self.renders.acquire(blocking=False):
                raise Refused(503, "The console is busy with other pages: try again in a moment.", {"Retry-After": "1"})
            else:
                try:
                    response = view(params, **match.groupdict())
                finally:
                    self.renders.release()
        except Refused as r:
            response = self._error_page(r.status, r.message, r.headers, admitted)
        except QueueDoesNotExist as err:
            response = self._error_page(404, said(err), {})
        except SQSError as err:  # a name the path's pattern lets by (81-85 characters with .fifo), a queue gone mid-page
            response = self._error_page(400 if err.sender_fault else 500, said(err), {})
        except Exception:
            traceback.print_exc()
            response = self._error_page(500, "The console could not answer; the server's log has the details.", {})
        if method == "HEAD":  # the GET's headers; a view may state a Content-Length it never rendered
            response = response._replace(body=b"", headers={"Content-Length": str(len(response.body)), **response.headers})
        return response

    def refused_before_body(self, method: str, path: str, headers: Any) -> Response | None:
        """The answer to a request with a body that is refused whatever the body says (a path not
        the console's, a Host not of this machine, no credentials, a form larger than the console
        reads, by its Content-Length), for the server to give before it reads the body; None when
        the body must be read to tell."""
        if method in ("GET", "HEAD"):
            return None
        admitted = False
        try:
            self._admit(path, headers)
            admitted = True
            length = (headers.get("Content-Length") or "").strip()
            if length.isdigit() and int(length) > D.CONSOLE_MAX_FORM_BYTES:
                raise Refused(413, _TOO_LARGE)
        except Refused as r:
            return self._error_page(r.status, r.message, r.headers, admitted)
        return None

    def _admit(self, path: str, headers: Any) -> None:
        """Refused unless the path is the console's and the request is let in (Host, credentials)."""
        if not serves(path):
            raise Refused(404, f"Nothing at {path}.")
        self._check_host(headers)
        self._check_credentials(headers)

    def observe(self, action: str | None, status: int, code: str | None, seconds: float) -> None:
        self.metrics.observe(action, status, code, seconds)

    def form_token(self) -> str:
        """A token for the forms of a page served now: the time it is issued (epoch seconds of
        the database's clock) and an HMAC of that time, accepted for CONSOLE_FORM_TOKEN_SECONDS.
        Any worker sharing the secret accepts it; none accepts it for longer."""
        issued = str(self.db.now() // 1000)
        return f"{issued}.{self._token_mac(issued)}"

    def accepts_token(self, token: str) -> bool:
        """Whether a form's token is one this console (or a worker sharing its secret) issued,
        within CONSOLE_FORM_TOKEN_SECONDS of now."""
        issued, _, mac = token.partition(".")
        # As bytes: compare_digest refuses a str that is not ASCII with a TypeError.
        if not re.fullmatch(r"[0-9]{1,12}", issued) or not hmac.compare_digest(mac.encode(), self._token_mac(issued).encode()):
            return False
        # Either side of now: only a clock stepped back makes a token issued in the future, and
        # such a token is still bounded by the window.
        return abs(self.db.now() // 1000 - int(issued)) <= D.CONSOLE_FORM_TOKEN_SECONDS

    def _token_mac(self, issued: str) -> str:
        return hmac.new(self.form_key, f"form token\n{issued}".encode(), "sha256").hexdigest()[:32]

    def _check_host(self, headers: Any) -> None:
        if not self.loopback:
            return
        if not names_this_machine(headers.get("Host") or "", self.allowed_hosts):
            raise Refused(403, "This console listens on loopback only: open it as localhost or 127.0.0.1 (--host to listen elsewhere).")

    def _check_credentials(self, headers: Any) -> None:
        if self.credentials is not None and not has_credentials(headers, self.credentials):
            raise Refused(401, CREDENTIALS_REQUIRED, dict(BASIC_REALM))

    # ------------------------------------------------------------ rendering

    def _page(self, template: str, code: int = 200, **values: Any) -> Response:
        context = {"read_only": self.read_only, "refresh_seconds": D.CONSOLE_REFRESH_SECONDS, "db_path": str(self.db.path), **values}
        html = self.templates.get_template(template).render(token=self.form_token(), **context)
        return Response(code, "text/html; charset=utf-8", html.encode("utf-8"), dict(_SECURITY_HEADERS))

    def _error_page(self, status: int, message: str, headers: dict[str, str], admitted: bool = True) -> Response:
        """An error page; one for a request not ``admitted`` (without the credentials, or with a
        Host a DNS rebinding page sends: that page reads the answer) says nothing of the server."""
        values = {} if admitted else {"db_path": None, "read_only": False}
        page = self._page("error.html", status, status=status, title=HTTPStatus(status).phrase, message=message, **values)
        page.headers.update(headers)
        return page

    def _json(self, value: Any) -> Response:
        return Response(200, "application/json", json.dumps(value).encode(), dict(_SECURITY_HEADERS))

    def _redirect(self, location: str, **banner: str) -> Response:
        """A 303 to ``location``, with at most one banner (notice= or error=) and its signature."""
        for kind, text in banner.items():
            location += "?" + urlencode({kind: text, "sig": self._signature(kind, text)})
        return Response(303, "text/plain; charset=utf-8", b"", {"Location": location, **_SECURITY_HEADERS})

    def _signature(self, kind: str, text: str) -> str:
        return hmac.new(self.banner_key, f"{kind}\n{text}".encode(), "sha256").hexdigest()[:32]

    def _banners(self, params: dict[str, str]) -> dict[str, Any]:
        """The notice and error a redirect of this console signed; any other text is ignored."""
        sig = params.get("sig", "").encode()
        out = {}
        for kind in ("notice", "error"):
            text = params.get(kind)
            out[kind] = text if text is not None and hmac.compare_digest(sig, self._signature(kind, text).encode()) else None
        return out

    def _stats(self, names: list[str] | None = None) -> list[dict[str, Any]]:
        """Every queue's figures as dicts, or the named queues' (see Database.stats)."""
        return [dataclasses.asdict(s) for s in self.db.stats(names)]

    # ------------------------------------------------------------ pages

    def index(self, params: dict[str, str]) -> Response:
        return self._page("index.html", queues=self._stats(), file=self._file(), **self._banners(params))

    def _file(self) -> dict[str, Any]:
        """The database file's figures for the queue list (docs/explanation/reliability.md, "Disk space")."""
        figures = space.measure(self.db.store.connection(), self.db.path)
        return {**dataclasses.asdict(figures), "free_bytes": figures.free_bytes}

    def stats_json(self, params: dict[str, str]) -> Response:
        """Every queue's figures, or with ``?queue=NAME`` that queue's alone (a queue page polls them)."""
        name = params.get("queue")
        # With a fresh form token: the page's script puts it in the page's forms, so a page left
        # open keeps working past CONSOLE_FORM_TOKEN_SECONDS while none of its tokens does.
        stats = self._stats(None if name is None else [name])
        answer = {"queues": stats, "now": self.db.now(), "token": self.form_token()}
        if name is None:  # the queue list's poll: its line on the file too
            answer["file"] = self._file()
        return self._json(answer)

    def _history(self, name: str, window: str) -> tuple[list[dict[str, Any]], str] | None:
        """The queue's steps over a window of chart.WINDOWS (1h or 24h), and its label; None
        when the file keeps no history (it is off)."""
        found = next((w for w in chart.WINDOWS if w[0] == window), None)
        if found is None:
            raise Refused(400, f"Unknown history window {window[:20]!r}: " + " or ".join(w[0] for w in chart.WINDOWS) + ".")
        if not self.db.history_retention:
            return None
        _, label, length, step = found
        now = self.db.now()
        rows = self.db.history(now - now % step + step - length, names=[name])
        points = chart.steps(rows, now, length, step)
        arrivals, completions = sum(p["arrivals"] for p in points), sum(p["completions"] for p in points)
        return points, f"{name}, {label}: {arrivals:,} arrived, {completions:,} completed"

    def history_json(self, params: dict[str, str]) -> Response:
        """A queue's history over ``?window=1h`` (by minute, the default) or ``24h`` (by hour):
        each step's start (epoch ms), arrivals, completions and sampled backlog."""
        name = params.get("queue")
        if not name:
            raise Refused(400, "Give the queue: ?queue=NAME.")
        name = self.db.queue(name).name  # a queue that does not exist is the usual 404
        drawn = self._history(name, params.get("window", "1h"))
        if drawn is None:
            return self._json({"queue": name, "history": "off", "label": HISTORY_OFF, "steps": []})
        points, label = drawn
        return self._json(
            {
                "queue": name,
                "history": "on",
                "label": label,
                "steps": [{k: p[k] for k in ("start", "arrivals", "completions", "backlog")} for p in points],
            }
        )

    def queue_page(self, params: dict[str, str], name: str, head: bool = False) -> Response:
        queue = self.db.queue(name)
        window = params.get("history", "1h")
        drawn = self._history(queue.name, window)
        state = params.get("state", "all")
        if state not in ("all", "visible", "in-flight", "delayed"):
            raise Refused(400, f"Unknown state {state[:40]!r}: all, visible, in-flight or delayed.")
        after = params.get("after") or None
        try:
            previews, cursor = queue.peek_previews(state, D.CONSOLE_PAGE_SIZE, after, D.CONSOLE_BODY_SHOWN)
        except SQSError as err:
            raise Refused(400, said(err)) from None
        now = self.db.now()
        rows = []
        unrendered = 0  # HEAD: the bytes the bodies would add to the page
        for m, length in previews:
            preview, shown = m.body[: D.CONSOLE_BODY_PREVIEW], m.body
            folded = length > D.CONSOLE_BODY_PREVIEW
            if head:
                unrendered += len(str(escape(preview)).encode()) + (len(str(escape(shown)).encode()) if folded else 0)
                preview = shown = ""
            rows.append(
                {
                    "id": m.message_id,
                    "state": message_state(m.visible_at, m.receive_count, now),
                    "time_left": (m.visible_at - now) / 1000 if m.visible_at is not None and m.visible_at > now else None,
                    "sent": m.sent_timestamp,
                    "receive_count": m.receive_count,
                    "source": _queue_name(m.dead_letter_queue_source_arn),
                    "group": m.message_group_id,
                    "preview": preview,
                    "folded": folded,
                    "shown": shown,
                    "not_shown": max(0, length - D.CONSOLE_BODY_SHOWN),
                    "attributes": [(k, a.data_type, _attribute_text(a)) for k, a in sorted(m.message_attributes.items())],
                }
            )
        archived = []
        for a in self.db.archived(queue.url, limit=D.CONSOLE_PAGE_SIZE, newest_first=True):
            preview, shown = a.body[: D.CONSOLE_BODY_PREVIEW], a.body[: D.CONSOLE_BODY_SHOWN]
            folded = len(a.body) > D.CONSOLE_BODY_PREVIEW
            if head:
                unrendered += len(str(escape(preview)).encode()) + (len(str(escape(shown)).encode()) if folded else 0)
                preview = shown = ""
            archived.append(
                {
                    "id": a.message_id,
                    "how": _HOW.get(a.how, a.how),
                    "deleted": a.deleted_at,
                    "sent": a.sent_at,
                    "receive_count": a.receive_count,
                    "group": a.message_group_id,
                    "preview": preview,
                    "folded": folded,
                    "shown": shown,
                    "not_shown": max(0, len(a.body) - D.CONSOLE_BODY_SHOWN),
                }
            )
        # This queue's figures alone: counting every queue's messages would make one small
        # queue's page as slow as the largest queue.
        stats = next(iter(self._stats([queue.name])), None)
        sources = [u.rsplit("/", 1)[-1] for u in queue.list_dead_letter_source_queues()]
        page = self._page(
            "queue.html",
            queue=queue,
            stats=stats,
            attributes=sorted(queue.get_queue_attributes(_SETTINGS).items()),
            messages=rows,
            state=state,
            first_page=after is None,
            next_page=f"?state={state}&after={quote(cursor)}" if cursor else None,
            sources=sources,
            queue_names=self.db.queue_names(),
            tasks=self._tasks(queue),
            history_chart=None if drawn is None else chart.svg(*drawn),
            history_off=HISTORY_OFF,
            history_window=window,
            history_windows=[(w[0], w[1]) for w in chart.WINDOWS],
            archived=archived,
            archive_shown=D.CONSOLE_PAGE_SIZE,
            archive_retention=self.db.archive_retention(queue.url),
            **self._banners(params),
        )
        if head:
            page.headers["Content-Length"] = str(len(page.body) + unrendered)
        return page

    def queue_head(self, params: dict[str, str], name: str) -> Response:
        """A queue page's headers: the page rendered without its bodies, whose escaped lengths
        are added to its length (a HEAD of fifty large messages renders none of them)."""
        return self.queue_page(params, name, head=True)

    def tasks_fragment(self, params: dict[str, str], name: str) -> Response:
        queue = self.db.queue(name)
        return self._page("tasks.html", queue=queue, tasks=self._tasks(queue))

    def _tasks(self, queue: Any) -> list[dict[str, Any]]:
        out = []
        for t in self.db.list_message_move_tasks(queue.arn, 10):
            total = t.approximate_number_of_messages_to_move
            done = t.approximate_number_of_messages_moved
            out.append(
                {
                    **dataclasses.asdict(t),
                    "destination": _queue_name(t.destination_arn) or "each message's source queue",
                    "percent": 100 if not total else min(100, round(100 * done / total)),
                }
            )
        return out

    def static(self, params: dict[str, str], file: str) -> Response:
        path = _STATIC / file
        if not path.is_file():
            raise Refused(404, f"No file {file}.")
        kind = mimetypes.guess_type(file)[0] or "application/octet-stream"
        return Response(200, f"{kind}; charset=utf-8", path.read_bytes(), {**_SECURITY_HEADERS, "Cache-Control": "max-age=300"})

    def metrics_text(self, params: dict[str, str]) -> Response:
        return Response(200, METRICS_CONTENT_TYPE, self.metrics.text(), {"Cache-Control": "no-store"})

    # ------------------------------------------------------------ actions

    def _act(self, name: str, done: str, act: Callable[[], Any]) -> Response:
        try:
            act()
        except SQSError as err:
            return self._redirect(f"/console/queues/{name}", error=said(err))
        return self._redirect(f"/console/queues/{name}", notice=done)

    def redrive(self, params: dict[str, str], name: str) -> Response:
        queue = self.db.queue(name)
        to = params.get("to") or None
        rate_text = (params.get("rate") or "").strip()
        # ASCII digits only: str.isdigit() accepts "²", which int() refuses.
        if rate_text and not re.fullmatch(r"[0-9]{1,9}", rate_text):
            return self._redirect(
                f"/console/queues/{name}",
                error=f"The rate {rate_text[:20]!r} is not a whole number of messages per second (digits 0-9, at most nine).",
            )
        rate = int(rate_text) if rate_text else None

        def start() -> None:
            self.db.start_message_move_task(queue.arn, self.db.queue(to).arn if to else None, rate)

        return self._act(name, f"Redrive of {name} started.", start)

    def cancel_redrive(self, params: dict[str, str], name: str) -> Response:
        queue = self.db.queue(name)
        handle = params.get("task_handle", "")
        # The handle alone names a task of any queue: cancel only one of the queue the URL names.
        running = {t.task_handle for t in self.db.list_message_move_tasks(queue.arn) if t.task_handle}
        if handle not in running:
            raise Refused(404, f"No running redrive of {name} has that task handle: nothing was cancelled.")
        return self._act(name, "Redrive cancelled.", lambda: self.db.cancel_message_move_task(handle))

    def _confirmed(self, params: dict[str, str], name: str, what: str) -> None:
        if params.get("confirm", "").strip() != name:
            raise Refused(400, f"To {what} {name}, type its name in the box: nothing was changed.")

    def purge(self, params: dict[str, str], name: str) -> Response:
        queue = self.db.queue(name)
        self._confirmed(params, name, "purge")
        return self._act(name, f"Purged {name}: every message sent before now is gone.", queue.purge_queue)

    def set_archive(self, params: dict[str, str], name: str) -> Response:
        """Turn the queue's archive on (``days``: how long it keeps each deleted message) or off
        (``days`` empty or 0), as ``sqsqlite archive --retention`` does."""
        queue = self.db.queue(name)
        days_text = (params.get("days") or "").strip()
        if days_text and not re.fullmatch(r"[0-9]{1,3}", days_text):
            return self._redirect(
                f"/console/queues/{name}", error=f"The retention {days_text[:20]!r} is not a whole number of days (1 to 366, or 0 for off)."
            )
        days = int(days_text or "0")
        if not days:
            return self._act(
                name,
                f"The archive of {name} is off: what it holds stays until its retention passes.",
                lambda: self.db.set_archive(queue.url, None),
            )
        return self._act(
            name, f"The archive of {name} keeps deleted messages for {days} days.", lambda: self.db.set_archive(queue.url, days * 86_400)
        )

    def delete(self, params: dict[str, str], name: str) -> Response:
        self._confirmed(params, name, "delete")
        self.db.delete_queue(name)
        return self._redirect("/console", notice=f"Deleted queue {name}.")


# What deleted an archived message, as the archive's ``how`` says it.
_HOW = {"delete": "deleted", "batch": "deleted in a batch", "buffered": "deleted by a buffered consumer", "purge": "purged"}


def _attribute_text(a: Any) -> str:
    text = base64.b64encode(a.binary_value).decode() if a.binary_value is not None else a.string_value or ""
    # Attributes count towards a message's size as its body does: shown cut as its preview is.
    return text if len(text) <= D.CONSOLE_BODY_PREVIEW else text[: D.CONSOLE_BODY_PREVIEW] + "…"
