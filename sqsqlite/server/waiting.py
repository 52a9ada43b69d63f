"""The database as the endpoint uses it: queue URLs that name the endpoint each request came
to, and long polls that park on the event loop (``sqsqlite.longpoll``), not threads."""

from __future__ import annotations

import threading
from typing import Any

from ..core import Database
from ..longpoll import AsyncWakeups


class ServedDatabase(Database):
    """A Database whose URLs name the endpoint each request came to, and whose long polls
    wait through AsyncWakeups."""

    def __init__(self, *args: Any, **kwargs: Any):
        self._request = threading.local()
        self._default_endpoint = ""
        super().__init__(*args, **kwargs)
        self.wakeups: AsyncWakeups = AsyncWakeups(self.store, self.clock)

    @property
    def endpoint(self) -> str:
        return getattr(self._request, "endpoint", None) or self._default_endpoint

    @endpoint.setter
    def endpoint(self, value: str) -> None:
        self._default_endpoint = value

    def begin_request(self, endpoint: str) -> None:
        """Called before an action runs: URLs it returns name ``endpoint``."""
        self._request.endpoint = endpoint

    def end_request(self) -> None:
        self._request.endpoint = None

    def stop_waiting(self) -> None:
        """End every long poll now (shutdown)."""
        self.wakeups.stop()
