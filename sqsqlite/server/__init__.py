"""``sqsqlite serve``: an SQS-compatible HTTP endpoint on a sqsqlite file.

boto3, the aws CLI and other SDKs talk to it with ``endpoint_url``; it speaks SQS's JSON 1.0
protocol and the older query protocol, and answers with SQS's shapes and errors.

    from sqsqlite.server import BackgroundServer
    with BackgroundServer("app.db") as s:
        sqs = boto3.client("sqs", endpoint_url=s.url, region_name="us-east-1", ...)
"""

from typing import Any

from .asgi import MAX_REQUEST_BYTES
from .command import serve
from .served import ServedDatabase

__all__ = ["serve", "make_server", "BackgroundServer", "EndpointServer", "ServedDatabase", "MAX_REQUEST_BYTES"]

_ENDPOINT_NAMES = frozenset(("BackgroundServer", "EndpointServer", "make_server"))


def __getattr__(name: str) -> Any:
    # The endpoint needs uvicorn (the server extra): imported on first use, so that without it
    # the serve command still loads and says what to install (python -m sqsqlite.server too).
    if name in _ENDPOINT_NAMES:
        from . import endpoint

        return getattr(endpoint, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
