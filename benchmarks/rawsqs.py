"""A cheap SQS client for load: raw JSON 1.0 requests over asyncio keep-alive connections.

boto3 spends about a millisecond of CPU per call building and signing a request, which would
make the load generator, not the server, the bottleneck. This client writes the few bytes of
each request itself and parses only the status line, headers and JSON body of the answer. The
Authorization header is a fixed placeholder: servers that check no signature (sqsqlite without
credentials, moto_server) read only its region.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlsplit

AUTH = "AWS4-HMAC-SHA256 Credential=testing/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00"


class SQSError(Exception):
    def __init__(self, status: int, body: Any):
        super().__init__(f"{status}: {body}")
        self.status, self.body = status, body


class Connection:
    """One keep-alive HTTP/1.1 connection; one request at a time."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def open(self) -> Connection:
        self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        return self

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def abort(self) -> None:
        """Drop the connection as a client that dies would (no answer read)."""
        if self.writer is not None:
            self.writer.transport.abort()
            self.writer = None

    def write(self, action: str, members: dict) -> None:
        assert self.writer is not None, "open() first"
        body = json.dumps(members).encode()
        head = (
            f"POST / HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"X-Amz-Target: AmazonSQS.{action}\r\nAuthorization: {AUTH}\r\nX-Amz-Date: 20260101T000000Z\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        self.writer.write(head.encode() + body)

    async def read(self) -> dict:
        assert self.reader is not None
        status_line = await self.reader.readline()
        if not status_line:
            raise ConnectionError("the server closed the connection")
        status = int(status_line.split()[1])
        length = 0
        chunked = closing = False
        while True:
            line = await self.reader.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding" and b"chunked" in value.lower():
                chunked = True
            elif name == b"connection" and b"close" in value.lower():
                closing = True
        if chunked:
            parts = []
            while True:
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if size == 0:
                    await self.reader.readline()
                    break
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            data = b"".join(parts)
        else:
            data = await self.reader.readexactly(length) if length else b""
        if closing:  # a server without keep-alive (moto_server): the next call opens a new connection
            self.close()
        answer = json.loads(data) if data else {}
        if status != 200:
            raise SQSError(status, answer)
        return answer

    async def call(self, action: str, members: dict) -> dict:
        if self.writer is None:
            await self.open()
        self.write(action, members)
        return await self.read()
