"""``sqsqlite serve``: an SQS-compatible HTTP endpoint on a sqsqlite file.

boto3, the aws CLI and other SDKs talk to it with ``endpoint_url``; it speaks SQS's JSON 1.0
protocol and the older query protocol, and answers with SQS's shapes and errors.

    from sqsqlite.server import BackgroundServer
    with BackgroundServer("app.db") as s:
        sqs = boto3.client("sqs", endpoint_url=s.url, region_name="us-east-1", ...)
"""

from .asgi import MAX_REQUEST_BYTES
from .command import serve
from .endpoint import BackgroundServer, EndpointServer, make_server
from .waiting import ServedDatabase

__all__ = ["serve", "make_server", "BackgroundServer", "EndpointServer", "ServedDatabase", "MAX_REQUEST_BYTES"]
