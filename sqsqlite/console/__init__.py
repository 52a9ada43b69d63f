"""The web console (``/console``) and Prometheus metrics (``/metrics``) over a Database.

Served by ``sqsqlite serve`` beside the SQS protocols, or alone by ``sqsqlite console``. Pages are
rendered on the server (Jinja2) with a little JavaScript served from the package: nothing from
the network, no build step. It reads through the engine's public API only (``Database.stats``,
``Queue.peek_previews``, the move-task methods) and never receives a message.

Both need the ``console`` extra (Jinja2, prometheus_client); without it ``for_endpoint`` returns
a stand-in that answers those two paths with the command that installs it, and the endpoint
serves SQS as before.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import ipaddress
from collections.abc import Collection
from typing import Any, NamedTuple

from ..command_options import install_extra

PATHS = ("/console", "/metrics")
EXTRA = "console"
CREDENTIALS_REQUIRED = "The endpoint's credentials are required: user name the access key, password the secret key."
BASIC_REALM = {"WWW-Authenticate": 'Basic realm="sqsqlite", charset="UTF-8"'}


class Response(NamedTuple):
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


def serves(path: str) -> bool:
    """Whether a request path is the console's or the metrics' (the rest is SQS's)."""
    return path in PATHS or path.startswith("/console/")


def is_loopback(host: Any) -> bool:
    """Whether a server listening on ``host`` is reachable from this machine only (the
    console then also checks that requests name a loopback host, against DNS rebinding)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(str(host).strip("[]")).is_loopback
    except ValueError:
        return False


def has_credentials(headers: Any, credentials: bytes) -> bool:
    """Whether a request carries ``credentials`` (access key:secret key) as HTTP basic ones."""
    scheme, _, value = (headers.get("Authorization") or "").partition(" ")
    try:
        given = base64.b64decode(value.strip(), validate=True) if scheme.lower() == "basic" else b""
    except (binascii.Error, ValueError):
        given = b""
    return hmac.compare_digest(given, credentials)


# localhost, and the names under .localhost (RFC 6761), never leave this machine: no resolver of
# anyone else's can point them at a page of its own, as a hostile one could any other name
# (host.docker.internal, say, where Docker Desktop does not answer for it: --allow-host it).
_LOCAL_NAMES = ("localhost",)


def names_this_machine(host: str, allowed: Collection[str] = ()) -> bool:
    """Whether a Host header (a name or an address, perhaps a port) names this machine so that no
    page of another site can have sent it: a loopback address, a local name, or one of
    ``allowed`` (--allow-host). A page whose own name a DNS rebinding pointed at 127.0.0.1 sends
    that name; an address can't be rebound."""
    host = host.strip().lower()
    if host.startswith("["):
        name = host[1 : host.find("]")]
    elif host.count(":") == 1:
        name = host.rsplit(":", 1)[0]
    else:
        name = host  # a bare IPv6 address, or a name without a port
    name = name.rstrip(".")  # the fully qualified spelling of the same name
    if name in allowed or name in _LOCAL_NAMES or name.endswith(".localhost"):
        return True
    # A name under an allowed one is its owner's too: the standard and domain style queue URLs
    # (sqs.<region>.NAME, <region>.queue.NAME) that a server reached by NAME hands out.
    if any(name.endswith("." + a) for a in allowed):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return (mapped or address).is_loopback


def exposure_warning(host: str, keyed: bool) -> str | None:
    """What to tell whoever starts a server on ``host`` without keys, when that is off this
    machine: anyone who can reach it may use it, and a web page may too after a DNS rebinding
    (the names of this machine are checked on loopback only)."""
    if keyed or is_loopback(host):
        return None
    return (
        f"warning: listening on {host} with no --access-key/--secret-key: anyone who can reach it can use every queue "
        "and the console, and so can a web page whose name a DNS rebinding points at this machine"
    )


def action(path: str) -> str:
    """The action a console or metrics request counts under in /metrics."""
    return "Metrics" if path == "/metrics" else "Console"


class Missing:
    """What answers /console and /metrics when the console extra is not installed."""

    def __init__(self, missing: str):
        self.missing = missing

    def handle(self, method: str, path: str, query: str, headers: Any, body: bytes) -> Response:
        text = f"The console and /metrics need {self.missing}, which is not installed: {install_extra(EXTRA)}.\n"
        return Response(501, "text/plain; charset=utf-8", text.encode(), {})

    def observe(self, action: str | None, status: int, code: str | None, seconds: float) -> None:
        pass


def for_endpoint(db: Any, **options: Any) -> Any:
    """The console for an endpoint on ``db``: a Console, or a Missing without the extra."""
    try:
        from .app import Console
    except ImportError as exc:
        return Missing(exc.name or str(exc))
    return Console(db, **options)


__all__ = ["PATHS", "EXTRA", "Response", "Missing", "action", "serves", "for_endpoint", "names_this_machine", "exposure_warning"]
