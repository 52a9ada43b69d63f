"""The endpoint as an ASGI application: bodies in, answers out, long polls parked on the loop.

``dispatch.py`` does everything SQS-shaped; this module only moves bytes and decides where the
engine runs. An engine call runs on the loop while fewer than INLINE_BELOW requests are being
served, else on a small thread pool. On the loop, the first call of a turn of the loop runs at
once in a transaction of its own; the turn's later calls wait for the end of the turn and run
back to back in one transaction (store.Group), and their answers wait for its commit: under
load, concurrent requests share one lock, BEGIN and COMMIT, and the calls waiting for their
group don't count as being served (docs/howto/server.md has the measurements).

A ReceiveMessage runs through ``sqsqlite.longpoll``'s machine (``LongPolls.receive``), which
parks it on the loop between its claims, shares one claim among the polls woken together, and
hands back what was claimed for a client that left. This module tells it where a claim runs (as
any engine call: inline, grouped or pooled), how its errors are answered, and when the client
leaves (its connection's ``http.disconnect``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

from .. import defaults as D
from ..core.handles import new_request_id
from ..errors import DatabaseError, SQSError
from ..longpoll import AsyncWakeups, LongPolls, Round, Stopping, round_of
from .dispatch import Answer, Call, Dispatcher, Headers, Refused, Request, console_action, console_serves
from .emulator import EmulatorRoutes, health_answer, version
from .emulator import serves as emulator_serves

log = logging.getLogger("sqsqlite.server")

# The largest request body read. A request carries at most 1 MiB of payload (one message or a
# batch), and no encoding grows it more than 4 times: a Binary value's base64 (4 characters for
# 3 bytes) percent-encoded in a form body ('/', '+' and '=' each as %XX); percent-encoding text
# (%XX a byte) and JSON escaping (two \\uXXXX for a 4-byte character) grow it 3 times. Plus room
# for the envelope.
MAX_REQUEST_BYTES = 4 * D.MAX_BATCH_PAYLOAD + 256 * 1024
# A refused oversized body still being sent is read and dropped up to this much (bytes, seconds)
# before the answer, so the client sees the answer rather than a reset connection.
DRAIN_BYTES = 16 * 1024 * 1024
DRAIN_SECONDS = 2.0
# An engine call runs on the loop itself while fewer requests than this are being served: a
# hand-off to a thread costs more than the call then. With more, the pool lets SQLite's C code
# (which releases the GIL) overlap the loop's HTTP and JSON work, and a write that waits for
# another process's lock (workers of one file) waits off the loop. Measured: docs/howto/server.md.
INLINE_BELOW = 3
# A body that stops arriving is answered RequestTimeout once no part of it came for this long
# (seconds): a client that stalls mid-body holds neither a connection nor a stop for ever.
BODY_IDLE_SECONDS = 20.0
# Once a stop begins, a body still arriving may pause this long (seconds) before it is answered
# ServiceUnavailable: a stop waits for the requests being served, not for their senders.
STOP_BODY_IDLE_SECONDS = 1.0
# How often the bodies being read are looked at (seconds): the two pauses above are this precise.
BODY_SWEEP_SECONDS = 0.25


class _TooLarge(Exception):
    def __init__(self, size: int | None):
        self.size = size


class _Busy(Exception):
    """The bodies being received hold the whole budget (App.max_receiving)."""


class _BodyCutOff(Exception):
    def __init__(self, stopping: bool):
        self.stopping = stopping


class App:
    """The ASGI application (HTTP only; no lifespan: the server object starts and stops it)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        wakeups: AsyncWakeups,
        executor: ThreadPoolExecutor | None,
        inline_below: int = INLINE_BELOW,
        grouping: bool = True,
        max_receiving: int = D.MAX_RECEIVING_BYTES,
        lock_wait_seconds: float = D.LOCK_WAIT_SECONDS,
    ):
        self.dispatcher = dispatcher
        # How long an SQS call that may write waits for the database's write lock (_locked).
        self.lock_wait_seconds = lock_wait_seconds
        self.gave_up = 0  # calls answered 503 for it (tests)
        self.wakeups = wakeups
        self.executor = executor  # None: every engine call runs on the loop itself
        self.inline_below = inline_below
        self.grouping = grouping
        self.active = 0  # requests being served now, parked polls and grouped answers not counted
        # Inline engine calls after the first of a turn of the loop wait for the end of the turn,
        # then run one after another in one write transaction (store.Group); their answers wait
        # for its commit.
        self._turn = False
        # (the call, its answer, the call as it runs on the pool: App._engine's ``slow``, whether it writes)
        self._pending: list[tuple[Callable[[], Any], asyncio.Future, Callable[[], Any], bool]] | None = None
        # Every ReceiveMessage's long poll; polls woken in one turn of the loop claim together.
        self.polls = LongPolls(
            wakeups,
            self._engine,
            functools.partial(dispatcher.actions.call, "ChangeMessageVisibilityBatch"),
            together=True,
            resting=_Resting(self),
        )
        # A grouped call's pool run, while it runs (_run_group sends a group's calls there when
        # another program holds the lock): a stop cutting its request off answers what it did.
        self._rerun: dict[asyncio.Future, Future] = {}
        self.requests = 0
        self.server_ms = 0.0
        self.groups = 0  # groups committed, and the calls answered after one (for tests and benchmarks)
        self.grouped = 0
        self.cut_off = 0  # requests a stop cancelled: unanswered, or answered late (_late)
        # Requests reading their body, with the loop's time a part of it last came (_sweep), and
        # those _sweep cancelled for it, with whether a stop had begun.
        self._reading: dict[asyncio.Task, float] = {}
        self._cut: dict[asyncio.Task, bool] = {}
        self._sweeper: asyncio.TimerHandle | None = None
        self.stopping = False
        # Health, readiness and LocalStack's look-up (emulator.py); None: SQS and the console only.
        self.emulator: EmulatorRoutes | None = None
        # The bytes of request bodies being received that count against max_receiving (each
        # body's first D.BODY_FREE_BYTES don't), and the requests refused for it.
        self.max_receiving = max_receiving
        self.receiving = 0
        self.shed = 0

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            return
        self.active += 1
        try:
            await self._serve(scope, receive, send)
        except asyncio.CancelledError:  # cut off by a stop that could wait no longer
            self.cut_off += 1
            raise
        finally:
            self.active -= 1

    async def _serve(self, scope: dict, receive: Callable, send: Callable) -> None:
        started = time.perf_counter()
        headers = Headers([(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]])
        path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1").partition("?")[0]
        method = scope["method"]
        d = self.dispatcher
        for_console = d.console_only or console_serves(path)
        for_emulator = not d.console_only and self.emulator is not None and emulator_serves(path)
        if d.console_only and path == "/health":  # readiness, as serve's: nothing else is asked of it
            await self._respond(send, health_answer(path, "ok", version()), "", started, "Health")
            return
        if d.console_only and path == "/":
            path = "/console"  # alone, the console is the whole site
        if for_console:  # the console's own checks: its credentials, its Host, its forms' size
            early = d.console_refused_before_body(method, path, headers)
            if early is not None:
                await self._respond(send, early, "", started, console_action(path))
                return
        elif for_emulator and self.emulator is not None:  # health takes no body; the look-up the console's rules
            early = self.emulator.refused_before_body(method, path, headers)
            if early is not None:
                await self._respond(send, early, "", started, "Emulator")
                return
        else:
            rid = new_request_id()
            refused = d.refused_before_body(scope["query_string"].decode("latin-1"), headers, rid)
            if refused is not None:
                await self._respond(send, refused, rid, started, d.protocol(headers)[1])
                return
        try:
            body = await self._read_body(method, headers, receive)
        except _Busy:
            self.shed += 1
            rid = new_request_id()
            await self._respond(send, d.body_cut_off(True, headers, rid), rid, started, d.protocol(headers)[1])
            return
        except _TooLarge as big:
            rid = new_request_id()
            await self._respond(send, d.too_large(big.size, headers, rid), rid, started, d.protocol(headers)[1])
            return
        except ValueError as exc:
            rid = new_request_id()
            await self._respond(send, d.bad_request(str(exc), headers, rid), rid, started, None)
            return
        except _BodyCutOff as cut:
            rid = new_request_id()
            await self._respond(send, d.body_cut_off(cut.stopping, headers, rid), rid, started, d.protocol(headers)[1])
            return
        req = Request(method, path, scope["query_string"].decode("latin-1"), headers, body)
        emulator = self.emulator
        if for_emulator and emulator is not None:  # health, LocalStack's paths: their own rules
            rid = new_request_id()
            answer = await self._engine(lambda: emulator.handle(req, rid), pooled=True)
            await self._respond(send, answer, rid, started, "Emulator")
            return
        if for_console:  # the web console and /metrics: their own auth, pages and errors
            answer = await self._engine(lambda: d.console_page(req), pooled=True)
            await self._respond(send, answer, "", started, console_action(path))
            return
        try:
            call = d.parse(req, started)
        except Refused as refused:
            await self._respond(send, refused.answer, refused.request_id, started, refused.action)
            return
        except Exception:  # a request nothing foresaw: SQS's InternalError, never the HTTP server's bare 500
            rid = new_request_id()
            await self._respond(send, d.internal(d.protocol(headers)[0], rid), rid, started, None)
            return
        if call.action == "ReceiveMessage":  # its long poll: rounds of claims, parked on the loop between them
            hand_back = functools.partial(call.actions.call, "ChangeMessageVisibilityBatch")  # in the poll's own scope
            outcome = await self.polls.receive(
                call.request, functools.partial(self._claim, call), functools.partial(_listen, receive), hand_back
            )
            if outcome is None:
                return  # the client left: nobody to answer
            kind, value = outcome
            answer = value if kind == "answer" else d.success(call, value if kind == "done" else {})  # stopped: no messages
        else:
            got = await self._engine(
                functools.partial(d.attempt, call),
                failed=self._group_failed(call),
                gave_up=lambda: d.lock_wait_over(call),
                writes=call.writes,
            )
            answer = d.shaped(call, got)  # outside the lock
        await self._respond(send, answer, call.request_id, started, call.action)

    async def _engine(
        self,
        work: Callable[[], Any],
        pooled: bool = False,
        failed: Callable[[Exception | None], Any] | None = None,
        gave_up: Callable[[], Any] | None = None,
        writes: bool = True,
    ) -> Any:
        """Run one engine call: on the pool, in the turn's group, or inline on the loop.

        An inline call that may be grouped (``failed``: what it answers if its group can't
        commit, given why, or None if it was not an error) and is not the first of its turn of the
        loop runs at the end of the turn, in the turn's group. One that ``writes`` (False: a read,
        or a receive that waits in the call) takes the write lock up front: with a pool, on the
        loop, waiting WAIT_FREE_SECONDS at most, so that the loop (every connection, poll and
        stop) waits out another worker's short transaction, which costs less than a hand-off, but
        not another's long one (an import, a prune, a sqlite3 shell's BEGIN IMMEDIATE): then it
        runs on the pool instead, as ``slow``. There (and on the loop without a pool), with
        ``gave_up``, it waits until lock_wait_seconds from now at most, then answers
        ``gave_up()``, having run nothing (_locked)."""
        slow = self._locked(work, gave_up, failed) if writes and gave_up is not None else work
        if self.executor is not None and (pooled or self.active >= self.inline_below):
            return await self._pooled(slow)
        if failed is not None and self.grouping:
            if self._pending is not None or self._turn:
                return await self._grouped(work, slow, writes, failed)
            self._turn = True  # the first of its turn: alone, answered at once
            asyncio.get_running_loop().call_soon(self._end_turn)
        if self.executor is None:
            return slow()
        if not writes:
            return work()
        try:
            ran, result = self.dispatcher.db.store.call_with_lock(D.WAIT_FREE_SECONDS, work)
        except Exception as exc:  # the lock's taking or its commit failed
            if failed is None:
                raise
            return failed(exc)
        if ran:
            return result
        return await self._pooled(slow)  # nothing ran: run it where it may wait

    async def _grouped(
        self, work: Callable[[], Any], slow: Callable[[], Any], writes: bool, failed: Callable[[Exception | None], Any]
    ) -> Any:
        """An engine call run at the end of its turn of the loop, in the turn's group (_run_group)."""
        loop = asyncio.get_running_loop()
        if self._pending is None:
            self._pending = []
            loop.call_soon(self._run_group)
        done = loop.create_future()
        self._pending.append((work, done, slow, writes))
        self.active -= 1
        try:
            failure, result = await done
        except asyncio.CancelledError:
            # Cut off by a stop. Answered in the same turn, or run again on the pool (_run_group)
            # and already under way there: its outcome is answered, as _pooled's is.
            if done.done() and not done.cancelled():
                failure, result = done.result()
            else:
                ran = self._rerun.pop(done, None)
                if ran is None or ran.cancel():  # never ran: nothing to answer for
                    raise
                failure, result = False, await self._late(ran)
        finally:
            self.active += 1
        return result if failure is False else failed(failure)

    def _group_failed(self, call: Call) -> Callable[[Exception | None], Answer]:
        """What a grouped call answers when its group's commit failed: the database's error,
        as the call made alone would have got it (a full disk: DatabaseError, its text); else
        (an interrupt, a bug) InternalError."""
        d = self.dispatcher

        def answer(failure: Exception | None) -> Answer:
            if isinstance(failure, SQSError):
                return d.error(failure, call.is_json, call.request_id, json_query=call.json_query)
            return d.internal(call.is_json, call.request_id, call.json_query)

        return answer

    def _locked(
        self, work: Callable[[], Any], gave_up: Callable[[], Any], failed: Callable[[Exception | None], Any] | None
    ) -> Callable[[], Any]:
        """``work`` with the write lock taken up front, waiting for it until lock_wait_seconds
        from now at most, else answering ``gave_up()``, having run nothing (Store.call_with_lock);
        a commit that fails is answered as ``failed`` says. The deadline is under the AWS SDKs'
        read timeout: a request still waiting, which may yet commit, is never sent again by an SDK
        that gave up on it, storing a send twice; the SDK retries the 503 instead."""
        deadline = time.monotonic() + self.lock_wait_seconds
        store = self.dispatcher.db.store

        def run() -> Any:
            try:
                ran, result = store.call_with_lock(max(0.0, deadline - time.monotonic()), work)
            except Exception as exc:
                if failed is None:
                    raise
                return failed(exc)
            if ran:
                return result
            self.gave_up += 1
            log.warning("a request could not get the database's write lock within %g s: answered 503", self.lock_wait_seconds)
            return gave_up()

        return run

    async def _pooled(self, work: Callable[[], Any]) -> Any:
        """An engine call on the pool (run_in_executor, keeping the pool's own future)."""
        ran = self.executor.submit(work)  # type: ignore[union-attr]  # only called with a pool
        try:
            return await asyncio.wrap_future(ran)
        except asyncio.CancelledError:
            if ran.cancelled():  # cancelled before it began: nothing ran
                raise
            return await self._late(ran)

    async def _late(self, ran: Future) -> Any:
        """The outcome of an engine call under way on the pool when a stop that could wait no
        longer cancelled its request. A thread can't be stopped, so the call may still commit, and
        a request cut off unanswered (uvicorn's bare 500) would be sent again by the SDKs, storing a
        send twice: it is answered with what it did, late. The stop waits for the pool anyway, and
        counts the request as not finished in time."""
        self.cut_off += 1
        # Python 3.11+ counts a task's cancellations; taken back, they don't cancel its next await.
        uncancel = getattr(asyncio.current_task(), "uncancel", None)
        while True:
            if uncancel is not None:
                uncancel()
            try:
                return await asyncio.wrap_future(ran)
            except asyncio.CancelledError:
                if ran.cancelled():
                    raise

    def _end_turn(self) -> None:
        self._turn = False

    def _run_group(self) -> None:
        """The turn's grouped calls, back to back in one transaction (the writers' lock is held
        for their engine work only, not for the HTTP and JSON work around it), then committed."""
        pending, self._pending = self._pending or [], None
        store = self.dispatcher.db.store
        # (returned, result or exception) of each call; one never run is answered as failed.
        outcomes: list[tuple[bool, Any]] = [(True, None)] * len(pending)
        # False once committed; else why not (None: no error says, an interrupt's group).
        failure: Exception | None | Literal[False] = None
        waiting: list[tuple[Callable[[], Any], asyncio.Future, Callable[[], Any], bool]] = []  # run on the pool instead (as _engine's are)
        try:
            # With a pool, a group that writes takes the lock up front, waiting only briefly: held
            # by another process, its calls run on the pool instead, where they may wait.
            brief = self.executor is not None and any(writes for *_, writes in pending)
            try:
                group = store.lock_group(D.WAIT_FREE_SECONDS) if brief else store.begin_group()
            except Exception as exc:  # the lock's taking failed (a file replaced): none ran, each answers why
                failure = exc
                return
            if group is None:
                waiting, pending, outcomes = pending, [], []
                group = store.begin_group()
            for i, (work, done, _, _) in enumerate(pending):
                if done.cancelled():  # its request was cut off by a stop before its turn: it never runs
                    continue
                try:
                    outcomes[i] = (True, work())
                except Exception as exc:  # a bug: that call's task raises it
                    outcomes[i] = (False, exc)
                except BaseException:  # an interrupt: none of the group's calls happened, and its lock is let go
                    group.broken = True
                    with contextlib.suppress(Exception):  # the DatabaseError saying they were undone
                        store.end_group(group)
                    raise
            try:
                store.end_group(group)
                failure = False
            except Exception as exc:
                # SQLite undid the transaction when one call's statement failed (a full disk):
                # that call's error says why, as the others made alone would have got it.
                failure = group.error if group.broken and group.error is not None else exc
                if isinstance(failure, DatabaseError):
                    log.error("a group of %d engine calls could not be committed: %s: %s", len(pending), type(failure).__name__, failure)
                else:
                    log.exception("a group of %d engine calls could not be committed", len(pending))
        finally:  # whatever happened, no call waits for ever
            self.groups += 1
            self.grouped += len(pending)
            for (_, done, _, _), (returned, value) in zip(pending, outcomes, strict=True):
                if done.done():
                    continue
                if returned:
                    done.set_result((failure, value))
                else:
                    done.set_exception(value)
            for _, done, slow, _ in waiting:
                if done.cancelled():
                    continue
                ran = self._rerun[done] = self.executor.submit(slow)  # type: ignore[union-attr]  # only with a pool
                asyncio.wrap_future(ran).add_done_callback(functools.partial(self._settle, done))

    def _settle(self, done: asyncio.Future, ran: asyncio.Future) -> None:
        """Answer a grouped call (done) with what running it on its own (ran) gave."""
        if done.cancelled():  # cut off by a stop: its request takes ran from _rerun (and answers from _late)
            return
        del self._rerun[done]
        if done.done():
            return
        if ran.exception() is not None:
            done.set_exception(ran.exception())  # type: ignore[arg-type]
        else:
            done.set_result((False, ran.result()))  # no failure: ran and committed on its own

    # ------------------------------------------------------------ long polls

    async def _claim(self, call: Call, request: dict, shared: bool) -> Round:
        """One round of a receive (LongPolls' claim): the action layer's round, run as any engine
        call (_engine: inline, grouped or pooled), its errors worded as SQS's answers: ('answer',
        the Answer). ``shared``: a claim for several woken polls together, never grouped."""
        d = self.dispatcher
        work: Callable[[], Any]
        parks = self.wakeups.parks
        if parks:
            work = functools.partial(call.actions.receive_round, request, shared)
        else:  # an injected clock: the receive waits in the call, moving the clock (no lock up front, never grouped: it may wait)
            work = functools.partial(call.actions.call, "ReceiveMessage", request)
        try:
            got = await self._engine(
                work,
                failed=None if shared or not parks else self._group_failed(call),
                gave_up=lambda: d.lock_wait_over(call),
                writes=parks,
            )
        except Stopping:  # the blocking receive's wait, as the endpoint stops
            return "stopped", None
        except SQSError as err:
            return "answer", d.error(err, call.is_json, call.request_id, json_query=call.json_query)
        except Exception:
            return "answer", d.internal(call.is_json, call.request_id, call.json_query)
        return ("answer", got) if type(got) is Answer else round_of(got)

    # ------------------------------------------------------------ bodies and answers

    async def _read_body(self, method: str, headers: Headers, receive: Callable) -> bytes:
        """The request's body; _TooLarge past the limit, _BodyCutOff when it stalls (or a stop
        begins while it arrives) and _sweep cancels the reading."""
        if method in ("GET", "HEAD"):
            return b""
        task = asyncio.current_task()
        assert task is not None  # uvicorn runs each request in a task
        loop = asyncio.get_running_loop()
        self._reading[task] = loop.time()
        if self._sweeper is None:
            self._sweeper = loop.call_later(BODY_SWEEP_SECONDS, self._sweep)
        try:
            return await self._body_parts(headers, receive, task, loop)
        except asyncio.CancelledError:
            stopping = self._cut.pop(task, None)
            if stopping is None:
                raise  # not ours: a stop that could wait no longer
            if hasattr(task, "uncancel"):  # Python 3.11 on: the task is not being cancelled any more
                task.uncancel()
            raise _BodyCutOff(stopping) from None
        finally:
            del self._reading[task]
            self._cut.pop(task, None)  # a cut the read never saw (its own wait swallowed the cancel)

    def _sweep(self) -> None:
        """Cancel the body reads that waited too long for their next part (BODY_IDLE_SECONDS, or
        STOP_BODY_IDLE_SECONDS once a stop began); runs every BODY_SWEEP_SECONDS while any are read."""
        self._sweeper = None
        if not self._reading:
            return
        loop = asyncio.get_running_loop()
        idle = STOP_BODY_IDLE_SECONDS if self.stopping else BODY_IDLE_SECONDS
        now = loop.time()
        for task, last in self._reading.items():
            if now - last >= idle and task not in self._cut:
                self._cut[task] = self.stopping
                task.cancel()
        self._sweeper = loop.call_later(BODY_SWEEP_SECONDS, self._sweep)

    def stop_reading(self) -> None:
        """A stop begins: bodies still arriving may pause only STOP_BODY_IDLE_SECONDS."""
        self.stopping = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        self._sweep()

    async def _body_parts(self, headers: Headers, receive: Callable, task: asyncio.Task, loop: asyncio.AbstractEventLoop) -> bytes:
        limit = self.dispatcher.max_request_bytes
        length = headers.get("Content-Length")
        if length is not None and length.strip().isdigit() and int(length) > limit:
            if int(length) <= DRAIN_BYTES:
                await _drain(receive)
            raise _TooLarge(int(length))
        chunks: list[bytes] = []
        total = 0
        held = 0  # what this body counts against max_receiving

        def hold(size: int) -> None:
            nonlocal held
            more = max(0, size - D.BODY_FREE_BYTES) - held
            if more > 0:
                if self.receiving + more > self.max_receiving:
                    raise _Busy
                self.receiving += more
                held += more

        try:
            if length is not None and length.strip().isdigit():
                hold(int(length))  # the whole body at once: refused before any of it is read
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    raise ValueError("The client went away before sending the whole body.")
                chunk = message.get("body", b"")
                total += len(chunk)
                if total > limit:
                    await _drain(receive)
                    raise _TooLarge(None if length is None else total)
                hold(total)  # a chunked body, as it grows
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return b"".join(chunks)
                self._reading[task] = loop.time()
        finally:
            self.receiving -= held

    async def _respond(self, send: Callable, answer: Answer, request_id: str, started: float, action: str | None) -> None:
        d = self.dispatcher
        if not request_id:
            request_id = new_request_id()
        await send({"type": "http.response.start", "status": answer.status, "headers": d.head(answer, request_id, started)})
        await send({"type": "http.response.body", "body": answer.body})
        elapsed = (time.perf_counter() - started) * 1000
        self.requests += 1
        self.server_ms += elapsed
        if d.console is not None:  # /metrics' request counts, errors and latencies
            error = answer.headers.get("x-amzn-query-error")
            d.console.observe(action, answer.status, error.partition(";")[0] if error else None, elapsed / 1000)


class _Resting:
    """Entered while a poll is parked: it isn't being served (``App.active``, which INLINE_BELOW reads)."""

    def __init__(self, app: App):
        self.app = app

    def __enter__(self) -> None:
        self.app.active -= 1

    def __exit__(self, *exc: object) -> None:
        self.app.active += 1


async def _listen(receive: Callable, gone: asyncio.Future) -> None:
    """Resolve ``gone`` when the client disconnects (the body is read: nothing else comes)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            if not gone.done():
                gone.set_result(True)
            return


async def _drain(receive: Callable) -> None:
    deadline, dropped = time.monotonic() + DRAIN_SECONDS, 0
    while dropped < DRAIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        try:
            message = await asyncio.wait_for(receive(), left)
        except asyncio.TimeoutError:
            return
        if message["type"] != "http.request":
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return
