"""The database as the endpoint uses it: queue URLs that name the endpoint each request came
to, in the server's URL style, the account and region each request names, and long polls that
park on the event loop (``sqsqlite.longpoll``), not threads."""

from __future__ import annotations

import threading
from typing import Any

from .. import defaults as D
from .. import validation as V
from ..core import Database
from ..core.context import Context
from ..longpoll import AsyncWakeups
from . import urls


class ServedDatabase(Database):
    """A Database whose URLs name the endpoint each request came to, in the server's URL style,
    whose queues are those of each request's account and region (the database's own, its
    defaults, outside a request), and whose long polls wait through AsyncWakeups."""

    def __init__(self, *args: Any, url_style: str = D.DEFAULT_URL_STYLE, **kwargs: Any):
        self._request = threading.local()
        self._default_endpoint = ""
        self.url_style = url_style
        super().__init__(*args, **kwargs)
        self.wakeups: AsyncWakeups = AsyncWakeups(self.store, self.clock)

    @property
    def context(self) -> Context:
        """The request's: its account, region and sender (Database.context outside a request)."""
        return getattr(self._request, "context", None) or self._default_context

    @context.setter
    def context(self, value: Context) -> None:
        self._default_context = value

    @property
    def endpoint(self) -> str:
        return getattr(self._request, "endpoint", None) or self._default_endpoint

    @endpoint.setter
    def endpoint(self, value: str) -> None:
        self._default_endpoint = value

    @property
    def account_id(self) -> str:
        return getattr(self._request, "account_id", None) or self.default_account_id

    @account_id.setter
    def account_id(self, value: str) -> None:
        self.default_account_id = value

    @property
    def region(self) -> str:
        return getattr(self._request, "region", None) or self.default_region

    @region.setter
    def region(self, value: str) -> None:
        self.default_region = value

    @property
    def sender_id(self) -> str:
        """The account that sends: the request's signer's (whichever account's queue it reaches)."""
        return getattr(self._request, "sender_id", None) or self.default_sender_id

    @sender_id.setter
    def sender_id(self, value: str) -> None:
        self.default_sender_id = value

    def queue_url(self, name: str) -> str:
        return urls.queue_url(self.url_style, self.endpoint, self.account_id, self.region, name)

    def for_queue_url(self, name_or_url: Any) -> tuple[Database, str]:
        """This database and the queue's name: the dispatcher has read the account and region the
        URL names already (with the request's), and this database is theirs for the request."""
        return self, V.queue_name_from_url(name_or_url)

    def begin_request(self, endpoint: str, account_id: str | None = None, region: str | None = None, sender_id: str | None = None) -> None:
        """Called before an action runs: URLs it returns name ``endpoint``, its queues are
        ``account_id``'s in ``region``, and ``sender_id`` sends (each checked already; None: the
        database's default)."""
        request = self._request
        request.endpoint, request.account_id, request.region, request.sender_id = endpoint, account_id, region, sender_id
        # The default account and region's requests share the database's own Context, and so
        # the action layer's queues keep theirs; any other's gets its own for the request.
        default, account, region, sender = self._default_context, self.account_id, self.region, self.sender_id
        same = account == default.account_id and region == default.region and sender == default.sender_id
        request.context = None if same else default.acting_as(account, region, sender)

    def end_request(self) -> None:
        request = self._request
        request.endpoint = request.account_id = request.region = request.sender_id = request.context = None

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.wakeups.stop()
