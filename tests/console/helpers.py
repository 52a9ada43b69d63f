"""What the console's tests share: a database with something in every state, and an HTTP client
that shows redirects rather than following them."""

from __future__ import annotations

import base64
import http.client
import re
from typing import NamedTuple
from urllib.parse import urlencode, urlsplit

import sqsqlite

POISON = 3  # messages that end in the dead-letter queue


def populate(db: sqsqlite.Database, clock: sqsqlite.ManualClock | None = None) -> None:
    """orders (visible, in flight, delayed), its dead-letter queue orders-dlq holding POISON
    messages that failed three receives, and an idle queue emails."""
    dlq = db.create_queue("orders-dlq")
    orders = db.create_queue("orders", visibility_timeout=60, RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 2})
    db.create_queue("emails")
    for i in range(POISON):
        orders.send_message(f'{{"order": {100 + i}, "note": "<b>bad</b>"}}', message_attributes={"customer": f"c-{i}"})
    for _ in range(3):  # two failed receives each; the third moves them to the dead-letter queue
        orders.receive_message(max_number_of_messages=10, visibility_timeout=0)
    if clock is not None:
        clock.advance(95)  # so the ages differ
    for i in range(4):
        orders.send_message(
            f'{{"order": {i}}}', message_attributes={"priority": "high", "attempt": {"DataType": "Number", "StringValue": "1"}}
        )
    orders.receive_message(max_number_of_messages=2, visibility_timeout=300)  # two in flight
    if clock is not None:
        clock.advance(40)
    orders.send_message('{"order": "later"}', delay_seconds=600)  # one delayed


class Answer(NamedTuple):
    status: int
    headers: dict[str, str]
    text: str


class Browserless:
    """Plain HTTP to a console: GET and POST, redirects shown, credentials and Host settable."""

    def __init__(self, url: str, *, user: str | None = None, password: str | None = None, host: str | None = None):
        parts = urlsplit(url)
        self.netloc = parts.netloc
        self.headers: dict[str, str] = {}
        if user is not None:
            self.headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        if host is not None:
            self.headers["Host"] = host

    def request(self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None) -> Answer:
        conn = http.client.HTTPConnection(self.netloc, timeout=30)
        try:
            conn.request(method, path, body=body or None, headers={**self.headers, **(headers or {})})
            r = conn.getresponse()
            return Answer(r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode("utf-8"))
        finally:
            conn.close()

    def get(self, path: str) -> Answer:
        return self.request("GET", path)

    def post(self, path: str, form: dict[str, str]) -> Answer:
        return self.request("POST", path, urlencode(form).encode(), {"Content-Type": "application/x-www-form-urlencoded"})

    def token(self) -> str:
        """The form token the console puts in its pages."""
        match = re.search(r'name="token" value="([^"]+)"', self.get("/console/queues/orders").text)
        assert match, "no form on the queue page"
        return match.group(1)

    def act(self, path: str, **form: str) -> Answer:
        """POST a console form, with the token its page carries."""
        return self.post(path, {"token": self.token(), **form})
