"""``sqsqlite.aio.client("app.db")``: a drop-in for aiobotocore's SQS client on a local file.

Code written for ``session.create_client("sqs", ...)`` runs unchanged on it: every method of
``sqsqlite.client``'s ``SQSClient`` as a coroutine, with the same arguments, response dicts and
exception classes (``client.exceptions``), because each call runs the sync client's own code.

Where the work runs:

- The calls of a message or a batch of ten (sends, deletes, visibility changes, a receive's
  claims on the system clock: INLINE_METHODS) run on the event loop's own thread, where they
  take tens of microseconds, a fraction of a hand-off to a thread and back; unless another connection holds
  the writers' lock (or SQLite's) for longer than AIO_WAIT_FREE_SECONDS (each such call takes the
  lock before it begins: Store.call_with_lock): then it runs on the client's thread pool (ENGINE_THREADS), where it may wait for the
  lock. So does every other call (creating or listing queues, reading attributes, a purge: work
  that grows with the file), and every call under ``synchronous="FULL"``, whose commits fsync,
  or with ``inline=False``. A call on the loop doesn't suspend its task, so one that follows
  others on the loop for INLINE_SLICE_SECONDS first gives the loop a turn.
- A receive runs through ``sqsqlite.longpoll``'s machine, the endpoint's own: a claim that comes
  back empty does not keep its thread (the engine's round returns ``Wait``), and the poll waits on the
  loop as a future in its queue's line until a commit in this process, a peer's datagram or the
  ``data_version`` watcher (another process's commit) wakes it, or its time is up. A thousand
  parked polls hold no thread, so the send that wakes them always finds one.
- A receive cancelled after its claim committed (``asyncio.wait_for``'s timeout,
  ``task.cancel()``, a shutdown) has the messages it claimed handed back, visible again at once,
  as the endpoint's are for a client that left, then the cancellation goes on.

With an injected clock (a ``ManualClock``) nothing parks: the engine's own wait runs on the
pool and moves the clock by the poll's wait instead of sleeping, so a long poll that finds
nothing returns at once, the clock moved on (the rule of ``sqsqlite.testing``'s fixtures).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from . import defaults as D
from .action_table import BY_METHOD, TABLE, Action
from .client import (
    ACTION_OF,
    EXCEPTIONS,
    PAGINATED,
    SQSClient,
    described,
    keywords_only,
    method_name,
    operation_not_pageable,
    receive_round,
    response_metadata,
)
from .core import Database
from .errors import InvalidParameterValue, SQSError
from .longpoll import AsyncWakeups, Left, LongPolls, Peers, Round, Stopping, round_of

log = logging.getLogger("sqsqlite.aio")

# Threads that run engine calls, per client. SQLite serialises writes, so more threads buy
# little; a few let a read or a send go on while one call waits for another process's lock.
# Parked long polls take none.
ENGINE_THREADS = 4
# A call on the loop does not suspend its task, so a task making them one after another would
# keep every other task and timer waiting (and a wait_for from timing out): such a call first
# gives the loop a turn once calls on it have held it this long (seconds) since it last had one.
INLINE_SLICE_SECONDS = 0.001
# Per loop, however many clients and tasks share it: [when its calls last gave it a turn].
_TURNS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, list[float]] = weakref.WeakKeyDictionary()
CLOSED = "this sqsqlite.aio client is closed"
# What runs on the loop's thread when the lock is free (the module's docstring): a message's or
# a batch's work, bounded. receive_message's claims too, where polls park (the system clock).
INLINE_METHODS = frozenset(
    map(
        method_name,
        (
            "SendMessage",
            "SendMessageBatch",
            "DeleteMessage",
            "DeleteMessageBatch",
            "ChangeMessageVisibility",
            "ChangeMessageVisibilityBatch",
        ),
    )
)


class AsyncSQSClient:
    """aiobotocore's SQS client's methods, each a coroutine running ``SQSClient``'s, on the loop or a pool."""

    def __init__(self, path: str | None = None, *, threads: int = ENGINE_THREADS, inline: bool | None = None, **options: Any):
        if type(threads) is not int or threads < 1:
            raise InvalidParameterValue(f"Invalid threads {threads!r}: use a whole number of engine threads, 1 or more.")
        if inline is not None and type(inline) is not bool:
            raise InvalidParameterValue(f"Invalid inline {inline!r}: use True, False or None (on the loop unless commits fsync).")
        self._path, self._options, self._inline_option = path, options, inline
        self._inline = False  # decided when the file opens (its synchronous setting)
        self._turn = [0.0]  # _TURNS' entry for the loop this client serves, once bound
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="sqsqlite-aio")
        self._sync: SQSClient | None = None
        self._opening: asyncio.Future | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        # One future a receive's round whose claim was handed to the pool (and, when cancelled,
        # its give-back): close() waits for them before it stops the pool and closes the file.
        self._rounds: set[asyncio.Future] = set()
        self._binding = threading.Lock()  # two loops binding at once: one wins, the other is refused
        self.exceptions = EXCEPTIONS  # one set for every client, the sync client's
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # no loop to hold up: open the file now, so bad options raise here
            self._opened(_open(path, **options))

    def _opened(self, db: Database) -> SQSClient:
        self._store = db.store
        inline = self._inline_option
        self._inline = db.store.synchronous in ("NORMAL", "OFF") if inline is None else inline
        wakeups = db.wakeups
        assert isinstance(wakeups, AsyncWakeups)  # _open's
        sync = SQSClient(db)
        change = sync.change_message_visibility_batch
        self._polls = LongPolls(wakeups, self._to_the_end, lambda request: change(**request))
        self._sync = sync
        return sync

    # ------------------------------------------------------------ what the client is

    @property
    def sync(self) -> SQSClient:
        """The ``sqsqlite.client`` every call runs (opened by the first call or ``async with``)."""
        if self._sync is None:
            raise RuntimeError("this sqsqlite.aio client is not open yet: use it in `async with`, or await one of its calls first")
        return self._sync

    @property
    def db(self) -> Database:
        return self.sync.db

    @property
    def meta(self) -> Any:
        return self.sync.meta

    @property
    def wakeups(self) -> AsyncWakeups:
        """How this client's long polls wait (``parked(queue)`` counts the polls parked now)."""
        wakeups = self.db.wakeups
        assert isinstance(wakeups, AsyncWakeups)  # _open's
        return wakeups

    async def open(self) -> AsyncSQSClient:
        """Open the file (created and migrated on first use) on the pool, once; bind the loop."""
        if self._closed:
            raise RuntimeError(CLOSED)
        if self._sync is None:
            if self._opening is None:
                self._opening = asyncio.ensure_future(self._in_pool(_open, self._path, **self._options))
            db = await asyncio.shield(self._opening)
            if self._sync is None:
                self._opened(db)
        self._bind(asyncio.get_running_loop())
        return self

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        """Parked polls live on one loop. A client whose loop has closed (asyncio.run ended)
        moves to the next; one still used on another running loop is refused."""
        if self._loop is loop:
            return
        with self._binding:
            self._bind_now(loop)

    def _bind_now(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._loop is loop:
            return
        if self._loop is not None and not self._loop.is_closed():
            raise RuntimeError("this sqsqlite.aio client serves another event loop: make one client per loop")
        wakeups = self.wakeups
        peers = wakeups.peers
        if peers is None:
            try:
                peers = Peers(self.db.path)  # wake-ups to and from `sqsqlite serve` and other clients of the file
            except OSError:  # no usable wake-up directory: the data_version watcher sees their commits
                peers = None
        wakeups.attach(loop, peers)
        self._turn = _TURNS.setdefault(loop, [0.0])
        self._loop = loop

    async def _ready(self) -> SQSClient:
        if self._closed:
            raise RuntimeError(CLOSED)
        if self._sync is None or self._loop is not asyncio.get_running_loop():
            await self.open()
        return self.sync

    async def _in_pool(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.wrap_future(self._executor.submit(fn, *args, **kwargs))

    async def call(self, name: str, kwargs: dict[str, Any]) -> dict:
        """The sync client's method ``name`` with ``kwargs``: on the loop's thread if it is one of
        INLINE_METHODS and the lock is free, else on the pool."""
        sync = await self._ready()
        method = getattr(sync, name)
        if self._inline and name in INLINE_METHODS:
            ran, response = await self._on_loop_in_turn(BY_METHOD[name].name, method, **kwargs)
            if ran:
                return response
            if self._closed:  # while the loop had its turn
                raise RuntimeError(CLOSED)
        return await self._in_pool(method, **kwargs)

    async def _take_turns(self) -> None:
        """Give the loop a turn if calls on it have held it INLINE_SLICE_SECONDS. Of the tasks
        that gave it up together, the first back starts the next slice; the others make a call
        each within it, then give the loop up again."""
        turn = self._turn
        if time.perf_counter() - turn[0] >= INLINE_SLICE_SECONDS:
            left = time.perf_counter()
            await asyncio.sleep(0)  # cancelled here, nothing has run
            if turn[0] < left:
                turn[0] = time.perf_counter()

    async def _on_loop_in_turn(self, action: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """_on_loop once the loop has had its turn (_take_turns); (False, None) without running fn
        if the client closed meanwhile."""
        await self._take_turns()
        if self._closed:
            return False, None
        return self._on_loop(action, fn, *args, **kwargs)

    def _on_loop(self, action: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
        """(True, fn's result) run here, on the loop's thread; (False, None) if another connection
        held the writers' lock longer than AIO_WAIT_FREE_SECONDS, fn never run. The lock's taking
        and the commit come outside fn: their error is raised as fn's own would be (as boto3 does)."""
        try:
            return self._store.call_with_lock(D.AIO_WAIT_FREE_SECONDS, functools.partial(fn, *args, **kwargs))
        except SQSError as err:
            if isinstance(err, EXCEPTIONS.ClientError):  # fn's own, raised as the client raises it
                raise
            raise EXCEPTIONS.from_error(err, action) from None

    # ------------------------------------------------------------ the SQS actions
    # One coroutine an action, as aiobotocore's: made below the class from action_table.TABLE,
    # each running the sync client's method of its name (call), with that method's docstring
    # and signature. ReceiveMessage's is its own (_receive_message), with the long polls. A type
    # checker can't see coroutines made so: it sees these declarations, typed as SQSClient's
    # methods but awaited for the response (tests/unit/test_typed_methods.py holds both classes'
    # declarations to the table).
    if TYPE_CHECKING:

        async def create_queue(self, *, QueueName: str, Attributes: dict[str, Any] = ..., tags: dict[str, Any] = ...) -> dict[str, Any]: ...
        async def delete_queue(self, *, QueueUrl: str) -> dict[str, Any]: ...
        async def list_queues(self, *, QueueNamePrefix: str = ..., NextToken: str = ..., MaxResults: int = ...) -> dict[str, Any]: ...
        async def get_queue_url(self, *, QueueName: str, QueueOwnerAWSAccountId: str = ...) -> dict[str, Any]: ...
        async def get_queue_attributes(self, *, QueueUrl: str, AttributeNames: list[Any] | tuple[Any, ...] = ...) -> dict[str, Any]: ...
        async def set_queue_attributes(self, *, QueueUrl: str, Attributes: dict[str, Any]) -> dict[str, Any]: ...
        async def send_message(
            self,
            *,
            QueueUrl: str,
            MessageBody: str,
            DelaySeconds: int = ...,
            MessageAttributes: dict[str, Any] = ...,
            MessageSystemAttributes: dict[str, Any] = ...,
            MessageDeduplicationId: str = ...,
            MessageGroupId: str = ...,
        ) -> dict[str, Any]: ...
        async def send_message_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        async def receive_message(
            self,
            *,
            QueueUrl: str,
            AttributeNames: list[Any] | tuple[Any, ...] = ...,
            MessageSystemAttributeNames: list[Any] | tuple[Any, ...] = ...,
            MessageAttributeNames: list[Any] | tuple[Any, ...] = ...,
            MaxNumberOfMessages: int = ...,
            VisibilityTimeout: int = ...,
            WaitTimeSeconds: int = ...,
            ReceiveRequestAttemptId: str = ...,
        ) -> dict[str, Any]: ...
        async def delete_message(self, *, QueueUrl: str, ReceiptHandle: str) -> dict[str, Any]: ...
        async def delete_message_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        async def change_message_visibility(self, *, QueueUrl: str, ReceiptHandle: str, VisibilityTimeout: int) -> dict[str, Any]: ...
        async def change_message_visibility_batch(self, *, QueueUrl: str, Entries: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        async def purge_queue(self, *, QueueUrl: str) -> dict[str, Any]: ...
        async def list_dead_letter_source_queues(self, *, QueueUrl: str, NextToken: str = ..., MaxResults: int = ...) -> dict[str, Any]: ...
        async def start_message_move_task(
            self, *, SourceArn: str, DestinationArn: str = ..., MaxNumberOfMessagesPerSecond: int = ...
        ) -> dict[str, Any]: ...
        async def list_message_move_tasks(self, *, SourceArn: str, MaxResults: int = ...) -> dict[str, Any]: ...
        async def cancel_message_move_task(self, *, TaskHandle: str) -> dict[str, Any]: ...
        async def add_permission(
            self, *, QueueUrl: str, Label: str, AWSAccountIds: list[Any] | tuple[Any, ...], Actions: list[Any] | tuple[Any, ...]
        ) -> dict[str, Any]: ...
        async def remove_permission(self, *, QueueUrl: str, Label: str) -> dict[str, Any]: ...
        async def tag_queue(self, *, QueueUrl: str, Tags: dict[str, Any]) -> dict[str, Any]: ...
        async def untag_queue(self, *, QueueUrl: str, TagKeys: list[Any] | tuple[Any, ...]) -> dict[str, Any]: ...
        async def list_queue_tags(self, *, QueueUrl: str) -> dict[str, Any]: ...

    # ------------------------------------------------------------ long polls

    async def _receive_message(self, *args: Any, **kwargs: Any) -> dict:
        """The SQS ReceiveMessage action (client.SQSClient.receive_message's members); a wait
        with nothing to claim parks on the loop."""
        if args:
            raise keywords_only("receive_message")
        sync = await self._ready()
        outcome = await self._polls.receive(kwargs, functools.partial(self._claim, sync))
        assert outcome is not None  # its caller leaves by cancelling it: Left
        kind, value = outcome
        if kind == "done":
            return value
        return {"ResponseMetadata": response_metadata(200)}  # closing: no messages, as at the poll's deadline

    async def _claim(self, sync: SQSClient, request: dict, shared: bool) -> Round:
        """One round of a receive, on the loop or the pool (LongPolls' claim). Cancelled once
        its claim may have run on the pool, it waits for the claim and raises Left with its
        outcome, whose messages the poll hands back before the cancellation goes on."""
        if self._inline and self.wakeups.parks:
            # (Where a clock is injected nothing parks: the claim's wait moves the clock, and a
            # call rerun on the pool after it would wait the whole poll again.) A call on the loop
            # ends before any await: nothing to give back if cancelled.
            claimed, outcome = await self._on_loop_in_turn("ReceiveMessage", self._claim_now, sync, request)
            if claimed:
                return outcome
        if self._closed:  # closing (the loop's turn included): the pool takes no more claims
            return "stopped", None
        ran = self._executor.submit(self._claim_now, sync, request)
        done = asyncio.get_running_loop().create_future()
        self._rounds.add(done)
        try:
            return await asyncio.wrap_future(ran)
        except asyncio.CancelledError as cancelled:
            if ran.cancel() or ran.cancelled():  # never began: nothing was claimed
                raise
            try:
                outcome = await _finished(ran)
            except Exception:  # the claim failed: nothing was claimed
                raise asyncio.CancelledError() from None
            raise Left(outcome, cancelled) from None
        finally:
            self._rounds.discard(done)
            done.set_result(None)

    def _claim_now(self, sync: SQSClient, request: dict) -> Round:
        try:
            if not self.wakeups.parks:  # an injected clock: the receive waits in the call, moving the clock
                return "done", sync.receive_message(**request)
            return round_of(receive_round(sync, request))
        except Stopping:  # the blocking receive's wait, as the client closes
            return "stopped", None

    async def _to_the_end(self, work: Callable[[], Any]) -> Any:
        """work (a hand-back) on the pool, or on a thread of its own once the pool has shut down
        (the client closed meanwhile), waited for however often the caller is cancelled
        meanwhile; close() waits for it before it closes the file."""
        try:
            ran = self._executor.submit(work)
        except RuntimeError:
            ran = _in_thread(work)
        done = asyncio.get_running_loop().create_future()
        self._rounds.add(done)
        try:
            return await _finished(ran)
        finally:
            self._rounds.discard(done)
            done.set_result(None)

    # ------------------------------------------------------------ pagination, waiters, closing

    def can_paginate(self, operation_name: str) -> bool:
        return operation_name in PAGINATED

    def get_paginator(self, operation_name: str) -> Any:
        """aiobotocore's own AioPaginator when aiobotocore is installed (``async for page in
        paginator.paginate(...)``, ``await ...build_full_result()``, ``search()``, MaxItems
        resume tokens); else the sync client's paginator, each page fetched on the pool."""
        if operation_name not in PAGINATED:
            raise operation_not_pageable(operation_name)
        method = getattr(self, operation_name)
        try:
            import botocore.session
            from aiobotocore.paginate import AioPaginator
        except ImportError:
            return Paginator(self, operation_name)
        session = botocore.session.get_session()
        action = session.get_service_model("sqs").operation_model(ACTION_OF[operation_name])
        config = session.get_paginator_model("sqs").get_paginator(action.name)
        return AioPaginator(method, config, action)

    @property
    def waiter_names(self) -> list[str]:
        return []

    def get_waiter(self, waiter_name: str):
        raise ValueError(f"Waiter does not exist: {waiter_name}")

    async def close(self) -> None:
        """End parked polls (they answer with no messages), wait for the calls under way, stop
        the pool and close the file; off the loop."""
        if self._closed:
            return
        self._closed = True
        if self._sync is None and self._opening is not None:  # opening now (or failed to): closed below all the same
            with contextlib.suppress(Exception):
                db = await asyncio.shield(self._opening)
                if self._sync is None:
                    self._opened(db)
        sync = self._sync
        if sync is not None:
            wakeups = self.wakeups
            wakeups.stop()
            if self._loop is asyncio.get_running_loop():
                # Claims under way finish, and a cancelled receive gives back what it claimed,
                # while the pool and the file are still open (tasks cancelled just before the
                # close, not awaited, get here after it began).
                while self._rounds:
                    await _finished_all(set(self._rounds))
                await wakeups.detach()
            elif wakeups.peers is not None:  # its loop has gone: only the socket is left
                wakeups.peers.close()
                wakeups.peers = None
        # Off the loop: the pool waits for the calls under way, and closing may commit (buffers).
        await _finished(_in_thread(self._shut, sync))

    def _shut(self, sync: SQSClient | None) -> None:
        self._executor.shutdown(wait=True)
        if sync is not None:
            sync.close()

    async def __aenter__(self) -> AsyncSQSClient:
        try:
            return await self.open()
        except BaseException:
            if self._loop is None:  # never served a loop: __aexit__ won't run, so its pool ends here
                await self.close()
            raise

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


def _coroutine(action: Action) -> Callable[..., Awaitable[dict]]:
    method = action.method

    async def call(self: AsyncSQSClient, *args: Any, **kwargs: Any) -> dict:
        if args:
            raise keywords_only(method)
        return await self.call(method, kwargs)

    return described(call, action, AsyncSQSClient)


def _long_poll(action: Action) -> Callable[..., Awaitable[dict]]:
    """AsyncSQSClient._receive_message, under the action's method name (its own docstring)."""
    receive: Any = vars(AsyncSQSClient)["_receive_message"]
    receive.__name__, receive.__qualname__ = action.method, f"{AsyncSQSClient.__name__}.{action.method}"
    return receive


for _action in TABLE:
    setattr(AsyncSQSClient, _action.method, _long_poll(_action) if _action.name == "ReceiveMessage" else _coroutine(_action))


class Paginator:
    """Without aiobotocore: the sync client's paginator (botocore's own, when botocore is
    installed), its pages fetched on the client's pool; ``async for`` and awaitables."""

    def __init__(self, client: AsyncSQSClient, operation_name: str):
        self._client, self._operation = client, operation_name
        self.result_keys = [PAGINATED[operation_name]]

    def paginate(self, **kwargs: Any) -> PageIterator:
        return PageIterator(self._client, self._operation, kwargs)


class PageIterator:
    def __init__(self, client: AsyncSQSClient, operation_name: str, kwargs: dict):
        self._client, self._operation, self._kwargs = client, operation_name, kwargs
        self._pages: Any = None

    @property
    def resume_token(self) -> Any:
        return getattr(self._pages, "resume_token", None)

    async def _sync_pages(self) -> Any:
        sync = await self._client._ready()
        self._pages = sync.get_paginator(self._operation).paginate(**self._kwargs)
        return self._pages

    async def __aiter__(self) -> AsyncIterator[dict]:
        pages = iter(await self._sync_pages())
        while True:
            page = await self._client._in_pool(next, pages, None)
            if page is None:
                return
            yield page

    async def build_full_result(self) -> dict:
        return await self._client._in_pool((await self._sync_pages()).build_full_result)

    async def search(self, expression: str) -> AsyncIterator[Any]:
        import jmespath

        compiled = jmespath.compile(expression)
        async for page in self:
            found = compiled.search(page)
            if isinstance(found, list):
                for item in found:
                    yield item
            else:
                yield found


async def _finished(ran: Future) -> Any:
    """ran's result (or its exception), waited for however often the caller is cancelled
    meanwhile: ran goes on (a thread can't be stopped), and the caller, which is being
    cancelled, raises CancelledError itself once it has done what ran's outcome calls for."""
    while True:
        try:
            return await asyncio.shield(asyncio.wrap_future(ran))
        except asyncio.CancelledError:
            if ran.cancelled():
                raise


async def _finished_all(rounds: set[asyncio.Future]) -> None:
    """Wait for every one of rounds, however often the caller (a close()) is cancelled meanwhile."""
    while True:
        try:
            await asyncio.shield(asyncio.gather(*rounds))
            return
        except asyncio.CancelledError:
            if all(r.done() for r in rounds):
                raise


def _in_thread(fn: Callable[..., Any], *args: Any) -> Future:
    """fn(*args) on a thread of its own, where the pool can't take it (it is shutting down)."""
    ran: Future = Future()

    def run() -> None:
        try:
            ran.set_result(fn(*args))
        except BaseException as exc:
            ran.set_exception(exc)

    threading.Thread(target=run, name="sqsqlite-aio-close", daemon=True).start()
    return ran


def _open(path: str | None, **options: Any) -> Database:
    """The file, its long polls parked on the loop (AsyncWakeups) rather than holding a thread."""
    db = Database(path, **options)
    db.wakeups = AsyncWakeups(db.store, db.clock)
    return db


def client(path: str | None = None, **options: Any) -> AsyncSQSClient:
    """An aiobotocore-compatible SQS client on a sqsqlite file: ``async with
    sqsqlite.aio.client("app.db") as sqs``. ``connect``'s options apply, and ``threads``: the
    engine threads (default 4); ``inline``: whether a message's calls run on the loop's thread
    while the lock is free (default None: unless the file's commits fsync, synchronous FULL)."""
    return AsyncSQSClient(path, **options)
