"""Makes the screenshots docs/howto/console.md shows: a database with a little of everything, served,
and photographed by the same headless chromium the browser tests drive.

    python -m tests.console.screenshots docs
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import sqsqlite
from sqsqlite.server import BackgroundServer

from . import browser

VIEWPORT = {"width": 1200, "height": 720}


def build(path: str) -> None:
    with sqsqlite.connect(path) as db:
        dlq = db.create_queue("orders-dlq")
        orders = db.create_queue("orders", visibility_timeout=60, RedrivePolicy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": 3})
        emails = db.create_queue("emails", delay_seconds=30)
        db.create_queue("payments.fifo", FifoQueue="true", ContentBasedDeduplication="true")
        for i in range(12):
            body = json.dumps({"order": 4000 + i, "sku": "KB-104", "qty": 0, "error": "quantity must be positive"})
            orders.send_message(body, message_attributes={"source": "checkout", "attempt": {"DataType": "Number", "StringValue": "3"}})
        for _ in range(4):
            orders.receive_message(max_number_of_messages=10, visibility_timeout=0)
            orders.receive_message(max_number_of_messages=10, visibility_timeout=0)
        for i in range(0, 1480, 10):
            orders.send_message_batch(
                [{"Id": str(j), "MessageBody": json.dumps({"order": 5000 + i + j, "sku": "MUG-2", "qty": 1 + j % 3})} for j in range(10)]
            )
        orders.receive_message(max_number_of_messages=10, visibility_timeout=600)
        for i in range(40):
            emails.send_message(json.dumps({"to": f"user{i}@example.com", "template": "receipt"}))


def build_history(path: str) -> sqsqlite.ManualClock:
    """An hour of traffic on one queue, a minute at a time on a manual clock: arrivals rising,
    then consumers catching up and draining the backlog."""
    clock = sqsqlite.ManualClock(1_800_000_000_000)
    with sqsqlite.connect(path, clock=clock) as db:
        db.set_history_retention(14 * 86_400)
        q = db.create_queue("orders")
        for minute in range(60):
            sends = 30 + minute if minute < 35 else 40
            takes = 20 if minute < 30 else 75
            for start in range(0, sends, 10):
                q.send_message_batch([{"Id": str(j), "MessageBody": "order"} for j in range(min(10, sends - start))])
            left = takes
            while left > 0:
                got = q.receive_message(max_number_of_messages=min(10, left))
                if not got:
                    break
                q.delete_message_batch([{"Id": str(j), "ReceiptHandle": m.receipt_handle} for j, m in enumerate(got)])
                left -= len(got)
            clock.advance(60)
    return clock


def main(out: str) -> None:
    if browser.missing():
        sys.exit(browser.missing())
    folder = Path(out).resolve()
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # so the page's header names the file as one would: shop.db
        path = "shop.db"
        build(path)
        with BackgroundServer(path) as server, browser.chromium() as chromium:
            page = chromium.new_page(viewport={**VIEWPORT, "height": 330})  # the list is short
            page.goto(server.url + "/console")
            page.wait_for_selector("#updated:not(:empty)")
            page.screenshot(path=str(folder / "console-queues.png"))
            page.set_viewport_size(VIEWPORT)
            page.goto(server.url + "/console/queues/orders?state=in-flight")
            page.screenshot(path=str(folder / "console-messages.png"))
            page.goto(server.url + "/console/queues/orders-dlq")
            page.fill("#redrive-rate", "2")
            page.click("#start-redrive")
            time.sleep(2.5)  # a few moved, the progress bar part-way
            page.reload()
            page.screenshot(path=str(folder / "console-dead-letters.png"))
        history_path = "history.db"
        clock = build_history(history_path)
        with BackgroundServer(history_path, clock=clock) as server, browser.chromium() as chromium:
            page = chromium.new_page(viewport=VIEWPORT)
            page.goto(server.url + "/console/queues/orders")
            page.locator("#history").screenshot(path=str(folder / "console-history.png"))
        os.chdir(here)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs")
