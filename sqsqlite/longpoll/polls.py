"""One long poll, from its first claim to its answer: the rounds, the parking between them, the
claims woken polls make together, and the hand-back of what was claimed for a caller who left.

The endpoint (``server/asgi.py``) and ``sqsqlite.aio`` each make one :class:`LongPolls` and run
every ReceiveMessage through :meth:`LongPolls.receive`. What differs between them is handed in:
where a claim runs (on the loop, on a pool) and how its errors are worded (``claim``); where
other engine work runs (``engine``); how a visibility change is made (``change_visibility``:
the action layer, the sync client); how a caller leaves (the endpoint's connection closing:
``leaves``; an aio task cancelled while its claim ran on the pool: the claim raises
:class:`Left`). The SQS members of the request are read and rewritten by the action layer's
receive helpers (``actions.py``), never here.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any

from .. import defaults as D
from ..actions import hand_back_request, receive_again, receive_count, receive_response, receive_share, received
from ..clock import ticks
from ..core import Wait
from .wakeups import AsyncWakeups, Stopping

log = logging.getLogger("sqsqlite.longpoll")

# One round's outcome: ("done", the receive's response), ("park", the engine's Wait: what to
# park on), ("stopped", None: the endpoint stops or the client closes), or a kind of the caller's own (the endpoint's ("answer",
# an error's answer)), which ends the poll as it is.
Round = tuple[str, Any]
# claim(request, shared): one round of the receive ``request`` (round_of the engine's), run where
# the caller runs claims (an engine thread, the loop's); shared: a claim for several woken polls.
Claim = Callable[[dict, bool], Awaitable[Round]]


def round_of(got: Any) -> Round:
    """A claim round's outcome as the poll takes it: the engine's round (Actions.receive_round)
    returned the response ("done"), or Wait, which the poll parks on ("park")."""
    return ("park", got) if type(got) is Wait else ("done", got)


class Left(Exception):
    """Raised by a claim whose caller left while it ran (an aio task cancelled while its claim
    ran on the pool, which can't be stopped): ``outcome`` is the claim's round, whose messages
    are handed back before ``cancelled`` goes on."""

    def __init__(self, outcome: Round, cancelled: BaseException):
        super().__init__("the caller left")
        self.outcome, self.cancelled = outcome, cancelled


class LongPolls:
    """The long polls of one database on one event loop."""

    def __init__(
        self,
        wakeups: AsyncWakeups,
        engine: Callable[[Callable[[], Any]], Awaitable[Any]],
        change_visibility: Callable[[dict], Any],
        *,
        together: bool = False,
        resting: AbstractContextManager[None] | None = None,
    ):
        self.wakeups = wakeups
        self.engine = engine  # runs a hand-back, wherever the caller runs engine work
        self.change_visibility = change_visibility  # a ChangeMessageVisibilityBatch request -> its response
        # Whether polls woken in one turn of the loop claim together (the endpoint: a send of 10
        # messages to 10 parked polls costs one write transaction, not ten).
        self.together = together
        self.resting = resting or contextlib.nullcontext()  # entered while a poll is parked (the endpoint's: it isn't being served)
        self._groups: dict[tuple, list[tuple[int, asyncio.Future]]] = {}
        self._tasks: set[asyncio.Future] = set()

    async def receive(
        self,
        request: dict,
        claim: Claim,
        leaves: Callable[[asyncio.Future], Awaitable[None]] | None = None,
        change_visibility: Callable[[dict], Any] | None = None,
    ) -> Round | None:
        """The receive ``request`` to its end: its last round ("done", "stopped" or the caller's
        own kind), or None when its caller left (``leaves(gone)`` resolved ``gone``) and what was
        claimed for it was handed back (by ``change_visibility``, where the poll's own account
        and region must be named, else the machine's). Parks between rounds, never past the
        poll's end."""
        change = change_visibility or self.change_visibility
        wakeups = self.wakeups
        clock = wakeups.clock
        tick = ticks(clock)
        queue = ""  # the queue's name as the engine parks its polls, once a round parked
        ends: int | None = None  # the poll's end on ticks (clock.ticks), once its first round parked
        gone: asyncio.Future | None = None
        listener: asyncio.Future | None = None
        woken = nudged = False
        try:
            while True:
                asked = request
                if ends is not None:  # a later round waits no longer than what is left of the first's
                    asked = receive_again(request, max(0, -(-(ends - tick()) // 1000)))
                kind: str = "done"
                value: Any = {}
                if woken and self.together:  # one claim for every poll of the queue woken in this turn of the loop
                    kind, value = await self._claim_together(asked, queue, claim, change)
                if not value:  # not woken, or the shared claim left none for it: its own claim (which may park)
                    try:
                        kind, value = await claim(asked, False)
                    except Left as left:
                        kind, value = left.outcome
                        if kind == "done" and received(value):
                            await self.hand_back(request, received(value), change)
                        raise left.cancelled from None
                    except asyncio.CancelledError:
                        if woken:  # cancelled before its claim ran: else the message waits for the next poll's deadline
                            wakeups.hand_on(queue, counted=not nudged)
                        raise
                if nudged and kind == "done" and len(received(value)) >= receive_count(request):
                    wakeups.pass_baton(queue)  # woken for a commit nobody counted, and full: more may be left
                nudged = False
                if kind != "park":
                    if gone is not None and kind == "done" and received(value):
                        # Let the loop read a connection that dropped while the claim ran (its
                        # close is an I/O event, then the listener's wake-up) before answering.
                        for _ in range(3):
                            await asyncio.sleep(0)
                        if gone.done():
                            await self.hand_back(request, received(value), change)
                            return None
                    return kind, value
                park: Wait = value
                queue = park.queue
                if ends is None:  # the first round's deadline is the engine's (WaitTimeSeconds, or the queue's)
                    ends = tick() + park.deadline - clock.now_ms()
                if leaves is not None and gone is None:
                    gone = asyncio.get_running_loop().create_future()
                    listener = asyncio.ensure_future(leaves(gone))
                with self.resting:
                    state = await wakeups.park(queue, park.mark, min(park.until, clock.now_ms() + ends - tick()), gone, front=woken)
                if state == "gone":
                    return None
                woken, nudged = state in ("woken", "nudged"), state == "nudged"
        except Stopping:  # the poll ends with no messages, as at its deadline
            return "stopped", None
        finally:
            if listener is not None:
                listener.cancel()

    async def _claim_together(self, request: dict, queue: str, claim: Claim, change: Callable[[dict], Any]) -> Round:
        """A woken poll's claim, made as one claim with the other polls of its queue (same
        request but for the count) woken in the same turn of the loop; the messages are shared
        out in the order the polls were woken. ("done", {}) for a receive that claims alone
        (actions.receive_share: FIFO queues, receive attempt ids)."""
        share = receive_share(request, queue)
        if share is None:
            return "done", {}
        want, key = share
        loop = asyncio.get_running_loop()
        mine: asyncio.Future = loop.create_future()
        group = self._groups.get(key)
        if group is None:
            group = self._groups[key] = []
            loop.call_soon(lambda: self._tasks.add(asyncio.ensure_future(self._claim_group(key, request, claim, change))))
        group.append((want, mine))
        return await mine

    async def _claim_group(self, key: tuple, request: dict, claim: Claim, change: Callable[[dict], Any]) -> None:
        members = self._groups.pop(key, [])
        try:
            while members:
                chunk, total = [], 0
                while members and total + members[0][0] <= D.MAX_MESSAGES.high:
                    want, fut = members.pop(0)
                    chunk.append((want, fut))
                    total += want
                kind, value = await claim(receive_again(request, 0, total), True)
                messages = received(value) if kind == "done" else []
                for want, fut in chunk:
                    if fut.done():
                        continue  # its poll ended meanwhile (shutdown): it takes no share
                    share, messages = messages[:want], messages[want:]
                    fut.set_result(("done", receive_response(share)))
                if messages:  # a member left meanwhile: nobody to hand these to
                    await self.hand_back(request, messages, change)
        finally:
            for _, fut in members:
                if not fut.done():
                    fut.set_result(("done", {}))
            self._tasks.discard(asyncio.current_task())

    async def hand_back(self, request: dict, messages: list[dict], change_visibility: Callable[[dict], Any] | None = None) -> None:
        """Messages claimed for a poll whose caller left: visible again now, not at their
        visibility timeout (their receive count keeps the attempt, as SQS's does for an answer
        that was lost)."""
        change = hand_back_request(request, messages)
        try:  # the queue deleted meanwhile, say, or the engine's own part (the lock, the commit)
            await self.engine(lambda: (change_visibility or self.change_visibility)(change))
        except Exception as exc:
            log.warning(
                "messages claimed for a receive whose caller left could not be handed back (%s); they return at their visibility timeout",
                exc,
            )
