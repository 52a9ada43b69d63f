"""The database as the endpoint uses it: queue URLs in the server's URL style, a view of it for
each request's scope (the endpoint it came to, the account and region it names, its sender),
and long polls that park on the event loop (``sqsqlite.longpoll``), not threads."""

from __future__ import annotations

import copy
from typing import Any, NamedTuple

from .. import defaults as D
from .. import validation as V
from ..core import Database
from ..longpoll import AsyncWakeups
from . import urls


class Scope(NamedTuple):
    """Whom and where a request acts for: the endpoint its URLs name (http://<its Host>), the
    account and region whose queues it reaches, the account that sends (each checked already;
    None: the database's own)."""

    endpoint: str
    account_id: str | None = None
    region: str | None = None
    sender_id: str | None = None


class ServedDatabase(Database):
    """A Database whose URLs are in the server's URL style and whose long polls wait through
    AsyncWakeups; ``for_request`` gives the view a request acts on. Outside a request (the
    console, the emulator's paths) it is its own account's and region's, at its own endpoint."""

    def __init__(self, *args: Any, url_style: str = D.DEFAULT_URL_STYLE, **kwargs: Any):
        self.url_style = url_style
        super().__init__(*args, **kwargs)
        self.wakeups: AsyncWakeups = AsyncWakeups(self.store, self.clock)

    def for_request(self, scope: Scope) -> ServedDatabase:
        """This database as a request of ``scope`` sees it: the same file, connections, clock and
        wake-ups; URLs naming the request's endpoint; the queues of its account and region, its
        sender sending. Closing it closes nothing (as scoped's views)."""
        view = copy.copy(self)
        view.owns_file = False
        view.endpoint = scope.endpoint
        view.account_id, view.region = scope.account_id or self.account_id, scope.region or self.region
        view.sender_id = scope.sender_id or self.sender_id
        if (view.account_id, view.region, view.sender_id) != (self.account_id, self.region, self.sender_id):
            view.context = self.context.acting_as(view.account_id, view.region, view.sender_id)
        return view

    def queue_url(self, name: str) -> str:
        return urls.queue_url(self.url_style, self.endpoint, self.account_id, self.region, name)

    def for_queue_url(self, name_or_url: Any) -> tuple[Database, str]:
        """This database and the queue's name: the dispatcher has read the account and region the
        URL names already (with the request's), and this view is theirs (for_request)."""
        return self, V.queue_name_from_url(name_or_url)

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.wakeups.stop()
