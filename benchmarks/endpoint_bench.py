"""The endpoint under load, side by side with the emulators teams choose instead, in one run.

    python -m benchmarks.endpoint_bench [--seconds 3] [--rounds 2] [--polls 1000] [--quick] [--no-peers]
    python -m benchmarks.endpoint_bench --profile [--clients 1,64] [--workers 1] [--seconds 3] [--rounds 2]

Every server runs as its own process, started as a user would (``sqsqlite serve --workers N``,
``python -m moto.server``, fauxqs's ``fauxqs`` on Node.js, MiniStack's ``ministack``). fauxqs
and MiniStack are installed from their public packages (npm, PyPI) into benchmarks/.cache/peers
on first use; one that can't be (no Node.js, no network) is skipped with a line saying why. The load generator is one process of asyncio (uvloop when
installed) writing raw JSON 1.0 requests over keep-alive connections (``rawsqs.py``), so it
costs a few microseconds a request and the servers, not the client, set the pace.

1. Throughput: C concurrent clients (1, 4, 16, 64), each repeating SendMessage ->
   ReceiveMessage -> DeleteMessage on one shared queue for --seconds; requests/s and errors.
   Systems and levels are interleaved in --rounds rounds so machine noise hits all alike; each
   figure is the median of its rounds. CPU per request is read from /proc for the server's
   processes and from os.times() for the load generator. Server RSS and threads are read from /proc (the
   parent and its workers) when idle and at the end of the 64-client level.
2. Parked long polls: --polls connections each send ReceiveMessage(WaitTimeSeconds=20) to one
   queue; once they wait, the server's extra RSS and its threads are read, then 100 batches of
   10 messages are sent, one after the other, through one connection. Figures: the time to send
   them all, each poll's wake latency (its answer's arrival minus the start of the send that
   carried its message), polls answered empty or with an error, messages answered twice.
3. Candidate stacks: the same dispatcher behind uvicorn (engine calls adaptive as served, the
   same without grouping a turn's calls into one transaction, always on a thread pool, or always
   inline on the loop), behind aiohttp, and behind granian's RSGI interface (HTTP in Rust, engine
   calls inline on its loop, each its own transaction; no long polls in this adapter), at 1, 16
   and 64 clients.

4. ``--profile``, alone: where a request's CPU goes. One ``serve`` (``--workers 1``: one process
   holds every sample) runs under Python 3.12 or later with ``-X perf``, so perf names its Python
   frames (``py::function:/path/file.py``); a virtual environment for it is made in
   benchmarks/.cache on first use. At each --clients level the same SendMessage ->
   ReceiveMessage -> DeleteMessage load runs once unrecorded, then --rounds times under
   ``perf record --call-graph dwarf`` (DWARF, as these interpreters keep no frame pointers; the
   unwinding ends at the innermost Python frame, which is the frame that matters here). Each
   sample goes to one category by its call chain (``classify``; the mapping is printed): the
   kernel (split by system call and path), SQLite, HTTP, the ASGI layer and server loop, the SQS
   protocol, the engine, the event loop, other. The table gives each as % of samples and as µs
   a request (the server's CPU over the requests served, split by the samples), with a check
   that the samples stand for the CPU time. No perf, or no Python 3.12: skipped with a line.

Results go to benchmarks/results/endpoint_bench.json (``--profile``: endpoint_profile.json).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.harness import commit
from benchmarks.rawsqs import Connection, SQSError

RESULTS = Path(__file__).resolve().parent / "results" / "endpoint_bench.json"
LEVELS = (1, 4, 16, 64)
STACKS = ("uvicorn-adaptive", "uvicorn-ungrouped", "uvicorn-pool", "uvicorn-inline", "aiohttp-pool", "granian-rsgi")


# ---------------------------------------------------------------------- servers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    except OSError:
        kids = []
    for k in kids:
        out += _tree(int(k))
    return out


def _cpu_seconds(pid: int) -> float:
    total = 0.0
    for p in _tree(pid):
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    return total


def idle_cpu_percent(pid: int, seconds: float = 3.0) -> float:
    """The share of one core a process and its workers use while nobody calls them."""
    before = _cpu_seconds(pid)
    time.sleep(seconds)
    return round((_cpu_seconds(pid) - before) / seconds * 100, 2)


def _status(pid: int) -> tuple[int, int]:
    """(RSS bytes, threads) of a process and its descendants."""
    rss = threads = 0
    for p in _tree(pid):
        try:
            text = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        rss += int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) * 1024  # type: ignore[union-attr]
        threads += int(re.search(r"Threads:\s+(\d+)", text).group(1))  # type: ignore[union-attr]
    return rss, threads


class Server:
    def __init__(self, name: str, argv: list[str], url: str, env: dict[str, str] | None = None):
        self.name, self.url = name, url
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 60
        while True:
            try:
                asyncio.run(_ping(url))
                break
            except SQSError as exc:  # 503 while `sqsqlite serve` starts (starting.py): not ready yet
                if exc.status != 503:
                    raise
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise RuntimeError(f"{name} did not start") from None
                time.sleep(0.1)
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.proc.kill()
                    raise RuntimeError(f"{name} did not start") from None
                time.sleep(0.1)

    def status(self) -> tuple[int, int]:
        return _status(self.proc.pid)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def _ping(url: str) -> None:
    c = await Connection(url).open()
    try:
        await c.call("ListQueues", {})
    finally:
        c.close()


def sqsqlite_server(workdir: str, workers: int) -> Server:
    port = _free_port()
    db = os.path.join(workdir, f"w{workers}-{uuid.uuid4().hex[:6]}.db")
    argv = [sys.executable, "-m", "sqsqlite.server", "--db", db, "--port", str(port), "--workers", str(workers)]
    return Server(f"sqsqlite --workers {workers}", argv, f"http://127.0.0.1:{port}")


def moto_server() -> Server:
    port = _free_port()
    return Server("moto_server", [sys.executable, "-m", "moto.server", "-p", str(port)], f"http://127.0.0.1:{port}")


# The peers, pinned to the versions measured; their folders are kept between runs.
PEERS = Path(__file__).resolve().parent / ".cache" / "peers"
FAUXQS = "fauxqs@1.9.2"
MINISTACK = "ministack==1.5.33"


def install_peer(name: str, ready: Path, steps: list[list[str]]) -> bool:
    """Whether ``ready`` exists, running ``steps`` first if it doesn't; a line saying why not."""
    if ready.exists():
        return True
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True, timeout=900)
    except (OSError, subprocess.SubprocessError) as exc:
        reason = (
            exc.stderr.decode(errors="replace").strip().splitlines()[-1:] if isinstance(exc, subprocess.CalledProcessError) else [str(exc)]
        )
        print(f"  {name}: skipped, it could not be installed: {' '.join(reason) or exc}", flush=True)
        return False
    return ready.exists()


def fauxqs_server() -> Server | None:
    """fauxqs (Node.js, fastify, in memory), its logging off as a benchmark would run it."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        print("  fauxqs: skipped, Node.js and npm are not on PATH", flush=True)
        return None
    folder = PEERS / "fauxqs"
    cli = folder / "node_modules" / "fauxqs" / "dist" / "cli.js"
    if not install_peer("fauxqs", cli, [[npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", FAUXQS]]):
        return None
    port = _free_port()
    env = {**os.environ, "FAUXQS_PORT": str(port), "FAUXQS_HOST": "127.0.0.1", "FAUXQS_LOGGER": "false"}
    return Server("fauxqs", [node, str(cli)], f"http://127.0.0.1:{port}", env)


def ministack_server() -> Server | None:
    """MiniStack (Python, hypercorn, in memory), in a virtual environment of its own."""
    folder = PEERS / "ministack"
    command = folder / "bin" / "ministack"
    steps = [[sys.executable, "-m", "venv", str(folder)], [str(folder / "bin" / "python"), "-m", "pip", "install", "-q", MINISTACK]]
    if not install_peer("MiniStack", command, steps):
        return None
    port = _free_port()
    env = {**os.environ, "GATEWAY_PORT": str(port), "BIND_HOST": "127.0.0.1"}
    return Server("MiniStack", [str(command)], f"http://127.0.0.1:{port}", env)


def stack_server(workdir: str, stack: str) -> Server:
    port = _free_port()
    db = os.path.join(workdir, f"{stack}-{uuid.uuid4().hex[:6]}.db")
    argv = [sys.executable, "-m", "benchmarks.endpoint_bench", "--serve-stack", stack, "--db", db, "--port", str(port)]
    return Server(stack, argv, f"http://127.0.0.1:{port}")


# ---------------------------------------------------------------------- the candidate stacks, served


def serve_stack(stack: str, db_path: str, port: int) -> None:
    """Serve sqsqlite's dispatcher behind one candidate stack (a benchmark's server process)."""
    import signal

    from sqsqlite.server.endpoint import make_server

    if stack.startswith("uvicorn-"):
        server = make_server(db_path, port=port, engine_threads=0 if stack == "uvicorn-inline" else 4)
        if stack == "uvicorn-pool":
            server.app.inline_below = 0  # every engine call on the pool
        if stack == "uvicorn-ungrouped":
            server.app.grouping = False  # the adaptive rule, each call its own transaction
        signal.signal(signal.SIGTERM, lambda *a: server.request_stop())
        server.serve()
        return
    if stack == "granian-rsgi":
        os.environ["SQSQLITE_BENCH_DB"] = db_path
        argv = ["-m", "granian", "--interface", "rsgi", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
        argv += ["--loop", "uvloop", "--log-level", "warning", "--no-ws", "--factory", "benchmarks.endpoint_bench:rsgi_app"]
        os.execv(sys.executable, [sys.executable, *argv])
    assert stack == "aiohttp-pool"
    from concurrent.futures import ThreadPoolExecutor

    from aiohttp import web

    from sqsqlite.server.dispatch import Headers, Refused, Request

    server = make_server(db_path, port=port)
    d = server.dispatcher
    pool = ThreadPoolExecutor(4)

    async def handle(request: web.Request) -> web.Response:
        started = time.perf_counter()
        body = await request.read()
        req = Request(
            request.method, request.raw_path.partition("?")[0], request.query_string, Headers(list(request.headers.items())), body
        )
        try:
            call = d.parse(req, started)
        except Refused as refused:
            answer, rid = refused.answer, refused.request_id
        else:
            answer = await asyncio.get_running_loop().run_in_executor(pool, d.answer, call)
            rid = call.request_id
        headers = {k.decode(): v.decode() for k, v in d.head(answer, rid, started) if k.lower() not in (b"content-length", b"content-type")}
        return web.Response(status=answer.status, body=answer.body, headers={**headers, "Content-Type": answer.content_type})

    app = web.Application(client_max_size=4 * 1024 * 1024)
    app.router.add_route("*", "/{tail:.*}", handle)
    server.socket.close()
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


class _RSGIApp:
    """sqsqlite's dispatcher behind granian's RSGI interface: one call reads the body, one
    writes the whole answer; engine calls inline on granian's loop."""

    def __init__(self, db_path: str):
        from sqsqlite.server.endpoint import make_server

        self.server = make_server(db_path, port=0)  # its own socket goes unused: granian listens
        self.attached = False

    async def __rsgi__(self, scope: Any, protocol: Any) -> None:
        from sqsqlite.server.dispatch import Headers, Refused, Request

        if not self.attached:
            self.server.attach(asyncio.get_running_loop())
            self.attached = True
        d = self.server.dispatcher
        started = time.perf_counter()
        body = await protocol()
        req = Request(scope.method, scope.path, scope.query_string, Headers(list(scope.headers.items())), body)
        try:
            call = d.parse(req, started)
        except Refused as refused:
            answer, rid = refused.answer, refused.request_id
        else:
            answer = d.answer(call)
            rid = call.request_id
        protocol.response_bytes(answer.status, [(k.decode(), v.decode()) for k, v in d.head(answer, rid, started)], answer.body)


def rsgi_app() -> _RSGIApp:
    """granian's factory for the granian-rsgi candidate (the database from the environment)."""
    return _RSGIApp(os.environ["SQSQLITE_BENCH_DB"])


# ---------------------------------------------------------------------- load


async def _client(url: str, queue_url: str, stop_at: float, counts: dict) -> None:
    c = await Connection(url).open()
    try:
        while time.perf_counter() < stop_at:
            try:
                await c.call("SendMessage", {"QueueUrl": queue_url, "MessageBody": "x" * 200})
                got = await c.call("ReceiveMessage", {"QueueUrl": queue_url, "MaxNumberOfMessages": 1})
                counts["requests"] += 2
                for m in got.get("Messages", []):
                    await c.call("DeleteMessage", {"QueueUrl": queue_url, "ReceiptHandle": m["ReceiptHandle"]})
                    counts["requests"] += 1
            except Exception:
                counts["errors"] += 1
                c.close()
                c = await Connection(url).open()
    finally:
        c.close()


async def _throughput(url: str, queue_url: str, clients: int, seconds: float) -> dict:
    counts = {"requests": 0, "errors": 0}
    start = time.perf_counter()
    await asyncio.gather(*(_client(url, queue_url, start + seconds, counts) for _ in range(clients)))
    took = time.perf_counter() - start
    return {"rps": counts["requests"] / took, "errors": counts["errors"], "seconds": took}


async def _create(url: str, name: str) -> str:
    c = await Connection(url).open()
    try:
        return (await c.call("CreateQueue", {"QueueName": name}))["QueueUrl"]
    finally:
        c.close()


def throughput(servers: list[Server], levels: tuple[int, ...], seconds: float, rounds: int) -> dict:
    out: dict[str, Any] = {s.name: {"levels": {}, "idle_rss_mib": None, "idle_threads": None} for s in servers}
    queues = {s.name: asyncio.run(_create(s.url, f"load-{uuid.uuid4().hex[:6]}")) for s in servers}
    for s in servers:
        rss, threads = s.status()
        out[s.name]["idle_rss_mib"], out[s.name]["idle_threads"] = round(rss / 2**20, 1), threads
        out[s.name]["idle_cpu_percent"] = idle_cpu_percent(s.proc.pid)
    samples: dict[tuple[str, int], list[dict]] = {}
    for r in range(rounds):
        for clients in levels:
            for s in servers if r % 2 == 0 else reversed(servers):
                server_cpu, own = _cpu_seconds(s.proc.pid), os.times()
                res = asyncio.run(_throughput(s.url, queues[s.name], clients, seconds))
                served = res["rps"] * res["seconds"]
                # CPU per request: the server's processes, and this load generator's.
                res["server_cpu_us"] = (_cpu_seconds(s.proc.pid) - server_cpu) / max(1, served) * 1e6
                after = os.times()
                res["client_cpu_us"] = (after.user - own.user + after.system - own.system) / max(1, served) * 1e6
                if clients == max(levels):
                    rss, threads = s.status()
                    res["rss_mib"], res["threads"] = round(rss / 2**20, 1), threads
                samples.setdefault((s.name, clients), []).append(res)
                print(f"  round {r + 1} {s.name:24} {clients:3} clients: {res['rps']:8.0f} req/s, {res['errors']} errors", flush=True)
    for (name, clients), runs in samples.items():
        level = {
            "rps": round(statistics.median(x["rps"] for x in runs)),
            "errors": sum(x["errors"] for x in runs),
            "runs": [round(x["rps"]) for x in runs],
            "server_cpu_us_per_request": round(statistics.median(x["server_cpu_us"] for x in runs)),
            "client_cpu_us_per_request": round(statistics.median(x["client_cpu_us"] for x in runs)),
        }
        if "rss_mib" in runs[-1]:
            level["rss_mib"], level["threads"] = runs[-1]["rss_mib"], runs[-1]["threads"]
        out[name]["levels"][str(clients)] = level
    return out


# ---------------------------------------------------------------------- parked long polls


async def _parked(server: Server, polls: int, batches: int, per_batch: int) -> dict:
    url = server.url
    queue_url = await _create(url, f"parked-{uuid.uuid4().hex[:6]}")
    idle_rss, idle_threads = server.status()
    conns = []
    for _ in range(polls):
        conns.append(await Connection(url).open())
    answers: dict[int, tuple[float, dict | Exception]] = {}

    async def poll(i: int, c: Connection) -> None:
        try:
            got: dict | Exception = await c.call("ReceiveMessage", {"QueueUrl": queue_url, "WaitTimeSeconds": 20, "VisibilityTimeout": 600})
        except Exception as exc:
            got = exc
        answers[i] = (time.perf_counter(), got)

    tasks = [asyncio.ensure_future(poll(i, c)) for i, c in enumerate(conns)]
    await asyncio.sleep(2.0)  # every request is in and waiting (the server is idle once they are)
    for _ in range(50):
        rss, threads = server.status()
        await asyncio.sleep(0.05)
    rss, threads = server.status()
    parked_cpu = await asyncio.get_running_loop().run_in_executor(None, idle_cpu_percent, server.proc.pid, 2.0)
    sender = await Connection(url).open()
    sent_at: dict[str, float] = {}
    start = time.perf_counter()
    errors = 0
    for b in range(batches):
        t = time.perf_counter()
        entries = [{"Id": str(i), "MessageBody": f"{b}-{i}"} for i in range(per_batch)]
        for e in entries:
            sent_at[e["MessageBody"]] = t
        try:
            await sender.call("SendMessageBatch", {"QueueUrl": queue_url, "Entries": entries})
        except Exception:
            errors += 1
    send_seconds = time.perf_counter() - start
    await asyncio.wait(tasks, timeout=25)
    sender.close()
    for c in conns:
        c.close()
    lat, empty, failed, seen, twice = [], 0, 0, set(), 0
    for arrived, got in answers.values():
        if isinstance(got, Exception):
            failed += 1
            continue
        msgs = got.get("Messages", [])
        if not msgs:
            empty += 1
        for m in msgs:
            twice += m["Body"] in seen
            seen.add(m["Body"])
            lat.append((arrived - sent_at[m["Body"]]) * 1000)
    lat.sort()

    def pct(p: float) -> float | None:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))], 1) if lat else None

    return {
        "polls": polls,
        "messages": batches * per_batch,
        "idle_rss_mib": round(idle_rss / 2**20, 1),
        "parked_rss_mib": round(rss / 2**20, 1),
        "extra_rss_mib": round((rss - idle_rss) / 2**20, 1),
        "idle_threads": idle_threads,
        "parked_threads": threads,
        "parked_cpu_percent": parked_cpu,
        "send_seconds": round(send_seconds, 3),
        "wake_ms_p50": pct(0.5),
        "wake_ms_p99": pct(0.99),
        "wake_ms_max": round(lat[-1], 1) if lat else None,
        "answered_with_message": len(lat),
        "answered_empty": empty,
        "errors": failed + errors,
        "answered_twice": twice,
        "unanswered": polls - len(answers),
    }


# ---------------------------------------------------------------------- where a request's time goes (--profile)

PROFILE_RESULTS = Path(__file__).resolve().parent / "results" / "endpoint_profile.json"
PROFILE_HZ = 999
CATEGORIES = ("kernel", "SQLite", "HTTP", "ASGI/server loop", "SQS protocol", "engine", "event loop", "other")

# The innermost Python frame's file decides a sample that neither the kernel, SQLite nor a
# C extension below claims. First match wins, so the narrow rules come before the wide ones.
# endpoint.py holds both the server's start and stop and the wrapper that gives uvicorn's
# protocol one write an answer: the wrapper is framing. served.py is the engine's Database
# with the server's queue URLs; longpoll parks the engine's waits on the loop.
FILE_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("sqsqlite/server/endpoint.py:_WholeAnswers", "HTTP"),
    ("sqsqlite/server/endpoint.py:_OneWrite", "HTTP"),
    ("sqsqlite/server/protocol.py", "HTTP"),
    ("/uvicorn/protocols/", "HTTP"),
    ("/httptools/", "HTTP"),
    ("/h11/", "HTTP"),
    ("sqsqlite/server/wire.py", "SQS protocol"),
    ("sqsqlite/server/dispatch.py", "SQS protocol"),
    ("sqsqlite/server/sigv4.py", "SQS protocol"),
    ("sqsqlite/validation.py", "SQS protocol"),
    ("sqsqlite/batches.py", "SQS protocol"),
    ("sqsqlite/actions.py", "SQS protocol"),
    ("sqsqlite/action_table.py", "SQS protocol"),
    ("sqsqlite/errors.py", "SQS protocol"),
    ("sqsqlite/queue_urls.py", "SQS protocol"),
    ("/json/", "SQS protocol"),
    ("/xml/", "SQS protocol"),
    ("/base64.py", "SQS protocol"),
    ("/hashlib.py", "SQS protocol"),
    ("sqsqlite/core/", "engine"),
    ("sqsqlite/longpoll/", "engine"),
    ("sqsqlite/server/served.py", "engine"),
    ("sqsqlite/server/", "ASGI/server loop"),  # asgi.py, endpoint.py, urls.py, emulator.py, starting.py
    ("sqsqlite/", "engine"),  # store, lock, tx, statements, queries, dbfile, clock, checkpoint
    ("/sqlite3/", "SQLite"),
    ("/uvicorn/", "ASGI/server loop"),
    ("/starlette/", "ASGI/server loop"),
    ("/uvloop/", "event loop"),
    ("/asyncio/", "event loop"),
    ("/concurrent/futures/", "event loop"),
    ("/threading.py", "event loop"),
    ("/selectors.py", "event loop"),
)
# C code that claims a sample for itself (searched from the leaf up, before any Python frame):
# libpython and libc in between are the interpreter working for whoever called them.
DSO_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("/libsqlite3", "SQLite"),
    ("/_sqlite3.", "SQLite"),
    ("/httptools/", "HTTP"),
    ("/uvloop/", "event loop"),
    ("/_asyncio.", "event loop"),
    ("/_json.", "SQS protocol"),
)
# A kernel sample's path, by the system call it is in or the kernel frames it passes.
SOCKET_CALLS = {"sendto", "recvfrom", "sendmsg", "recvmsg", "accept", "accept4", "shutdown", "setsockopt", "getsockopt", "getpeername"}
FILE_CALLS = {"fdatasync", "fsync", "pwrite64", "pread64", "write", "read", "fcntl", "flock", "lseek", "openat", "close"}
FILE_CALLS |= {"newfstatat", "fstat", "unlink", "ftruncate", "rename"}
MEMORY_CALLS = {"mmap", "munmap", "brk", "madvise", "mprotect", "mremap"}
KERNEL_PARTS = (
    "socket send/recv",
    "wake-ups (epoll, futex)",
    "WAL and file (write, fsync, locks)",
    "memory (page faults, mmap)",
    "interrupts, scheduling",
    "other system calls",
)

_FRAME = re.compile(r"^\s*[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$")


def perf_samples(text: str) -> list[list[tuple[str, str]]]:
    """``perf script``'s output as samples, each its call chain from the leaf up: (symbol, dso)."""
    samples: list[list[tuple[str, str]]] = []
    chain: list[tuple[str, str]] | None = None
    for line in text.splitlines():
        if not line.strip():
            chain = None
        elif not line[0].isspace():
            chain = []
            samples.append(chain)
        elif chain is not None and (m := _FRAME.match(line)):
            chain.append((re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)), m.group(2)))
    return samples


def _kernel_part(chain: list[tuple[str, str]]) -> str:
    kernel = [sym for sym, dso in chain if dso == "[kernel.kallsyms]"]
    calls = [m.group(1) for sym in kernel if (m := re.match(r"__(?:x64|ia32|do)_sys_(\w+)", sym))]
    call = calls[-1] if calls else ""
    if call in ("futex", "epoll_wait", "epoll_pwait", "epoll_ctl") or any(s.startswith(("futex_", "ep_")) for s in kernel):
        return "wake-ups (epoll, futex)"
    if call in SOCKET_CALLS or any(s.startswith(("tcp_", "sock_", "inet_", "unix_", "__sys_accept")) for s in kernel):
        return "socket send/recv"
    if call in FILE_CALLS or any(s.startswith(("ext4_", "jbd2", "posix_lock", "flock")) for s in kernel):
        return "WAL and file (write, fsync, locks)"
    if call in MEMORY_CALLS or any("page_fault" in s for s in kernel):
        return "memory (page faults, mmap)"
    if not call:
        return "interrupts, scheduling"
    return "other system calls"


_INSTALLED = re.compile(r"/(?:site-packages|dist-packages|lib/python3\.\d+)/")


def _python_category(frame: str) -> tuple[str, str]:
    qualname, _, path = frame[len("py::") :].partition(":")
    where = path.replace("\\", "/")
    # An installed module by its path from its package's root: the venv (and the standard
    # library) may lie under a folder named sqsqlite, as a clone's benchmarks/.cache does.
    where = "/" + _INSTALLED.split(where)[-1] if _INSTALLED.search(where) else where
    for pattern, category in FILE_CATEGORIES:
        file, _, prefix = pattern.partition(":")
        if file in where and qualname.startswith(prefix):
            return category, f"{qualname} ({Path(where).name})"
    return "other", f"{qualname} ({Path(where).name})"


def classify(chain: list[tuple[str, str]]) -> tuple[str, str]:
    """A sample's category and, within it, what it was in: a kernel path, a function, a file."""
    if not chain:
        return "other", "no call chain"
    if chain[0][1] == "[kernel.kallsyms]":
        return "kernel", _kernel_part(chain)
    if any(sym.startswith("gc_collect") for sym, _ in chain):
        return "other", "the interpreter's cyclic GC"
    for sym, dso in chain:
        if sym.startswith("py::"):
            return _python_category(sym)
        for pattern, category in DSO_CATEGORIES:
            if pattern in dso:
                return category, f"{sym} ({Path(dso).name})"
    return "other", f"{chain[0][0]} ({Path(chain[0][1]).name}), no Python frame"


def profile_python() -> Path | None:
    """A Python 3.12 or later (its perf trampolines name Python frames to perf), with sqsqlite
    and its server installed: a virtual environment in benchmarks/.cache, made on first use."""
    root = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(root.glob("3.1[2-9]*/bin/python"), key=lambda p: [int(x) for x in re.findall(r"\d+", p.parent.parent.name)])
    base = Path(sys.executable) if sys.version_info >= (3, 12) else (found[0] if found else None)
    if base is None:
        print("  profile: skipped, no Python 3.12 or later here (this one, nor under $PYENV_ROOT/versions)", flush=True)
        return None
    folder = PEERS.parent / f"profile-py{base.parent.parent.name if base in found else 'self'}"
    python = folder / "bin" / "python"
    repo = Path(__file__).resolve().parent.parent
    steps = [[str(base), "-m", "venv", str(folder)], [str(python), "-m", "pip", "install", "-q", "-e", f"{repo}[server]"]]
    return python if install_peer(f"profile's Python ({base})", python, steps) else None


def perf_ready() -> bool:
    """Whether perf is here and may record a process; a line saying why not."""
    perf = shutil.which("perf")
    if perf is None:
        print("  profile: skipped, perf is not on PATH (linux-perf / linux-tools)", flush=True)
        return False
    with tempfile.TemporaryDirectory() as d:
        run = subprocess.run([perf, "record", "-q", "-o", os.path.join(d, "t"), "--", "true"], capture_output=True, text=True)
    if run.returncode != 0:
        last = (run.stderr.strip().splitlines() or ["no message"])[-1]
        print(f"  profile: skipped, perf cannot record here: {last}", flush=True)
        return False
    return True


def _profiled_run(server: Server, queue_url: str, clients: int, seconds: float, data: str) -> dict:
    pids = _tree(server.proc.pid)
    argv = ["perf", "record", "-q", "-F", str(PROFILE_HZ), "--call-graph", "dwarf,16384", "-o", data, "-p", ",".join(map(str, pids))]
    before = _cpu_seconds(server.proc.pid)
    perf = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)  # perf attached before the load starts
    load_before = _cpu_seconds(server.proc.pid)
    res = asyncio.run(_throughput(server.url, queue_url, clients, seconds))
    load_cpu = _cpu_seconds(server.proc.pid) - load_before
    perf.send_signal(signal.SIGINT)
    perf.wait(60)
    recorded_cpu = _cpu_seconds(server.proc.pid) - before
    text = subprocess.run(["perf", "script", "-i", data], capture_output=True, text=True).stdout
    samples = perf_samples(text)
    requests = res["rps"] * res["seconds"]
    cpu_us = load_cpu / max(1, requests) * 1e6
    counts: dict[str, int] = {}
    parts: dict[str, dict[str, int]] = {}
    for chain in samples:
        category, part = classify(chain)
        counts[category] = counts.get(category, 0) + 1
        parts.setdefault(category, {})
        parts[category][part] = parts[category].get(part, 0) + 1
    n = max(1, len(samples))
    return {
        "clients": clients,
        "requests": round(requests),
        "rps": round(res["rps"]),
        "errors": res["errors"],
        "server_cpu_us_per_request": round(cpu_us, 1),
        "samples": len(samples),
        # perf's samples at its rate against the CPU /proc counts while it recorded: near 1.0 when
        # the samples stand for the CPU time.
        "samples_over_cpu": round(len(samples) / PROFILE_HZ / max(1e-9, recorded_cpu), 2),
        "categories": {
            c: {"percent": round(100 * counts.get(c, 0) / n, 1), "us": round(cpu_us * counts.get(c, 0) / n, 1)} for c in CATEGORIES
        },
        "kernel": {k: round(100 * parts.get("kernel", {}).get(k, 0) / n, 1) for k in KERNEL_PARTS},
        "top": {
            c: [[part, round(100 * k / n, 2)] for part, k in sorted(parts.get(c, {}).items(), key=lambda kv: -kv[1])[:8]]
            for c in CATEGORIES
        },
    }


def _print_profile(clients: int, runs: list[dict]) -> None:
    print(
        f"\n{clients} client(s): "
        + "; ".join(
            f"run {i + 1}: {r['rps']} req/s, {r['server_cpu_us_per_request']} µs CPU a request, "
            f"{r['samples']} samples = {r['samples_over_cpu']}x CPU"
            for i, r in enumerate(runs)
        )
    )
    print(f"  {'category':38}" + "".join(f"{'run ' + str(i + 1) + ' %':>9}" for i in range(len(runs))) + f"{'µs a request':>14}")
    for c in CATEGORIES:
        us = statistics.mean(r["categories"][c]["us"] for r in runs)
        print(f"  {c:38}" + "".join(f"{r['categories'][c]['percent']:9.1f}" for r in runs) + f"{us:14.1f}")
        if c == "kernel":
            for k in KERNEL_PARTS:
                print(f"    {k:36}" + "".join(f"{r['kernel'][k]:9.1f}" for r in runs))
    spread = max(abs(a["categories"][c]["percent"] - b["categories"][c]["percent"]) for c in CATEGORIES for a in runs for b in runs)
    print(f"  largest difference between runs: {spread:.1f} points")
    print("  other, its largest items (% of all samples, run 1): " + "; ".join(f"{p} {v}" for p, v in runs[0]["top"]["other"][:6]))


def profile(levels: tuple[int, ...], seconds: float, rounds: int, workers: int, out: Path) -> dict:
    """Record `serve` under N clients with perf and split its CPU by what it was doing."""
    if not perf_ready():
        return {}
    python = profile_python()
    if python is None:
        return {}
    print("mapping used (the innermost Python frame's file, first match; C code claims its own samples):")
    for pattern, category in (*DSO_CATEGORIES, *FILE_CATEGORIES):
        print(f"  {pattern:44} -> {category}")
    workdir = tempfile.mkdtemp(prefix="endpoint-profile-")
    version = subprocess.run([str(python), "-c", "import platform; print(platform.python_version())"], capture_output=True, text=True)
    result: dict[str, Any] = {
        "benchmark": "endpoint_bench --profile",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg()},
        "method": {
            "server": f"python -X perf -m sqsqlite.server --workers {workers} (Python {version.stdout.strip()})",
            "perf": f"perf record -F {PROFILE_HZ} --call-graph dwarf,16384 -p <server's processes>, during the load only",
            "seconds": seconds,
            "rounds": rounds,
        },
        "mapping": {"c_code": dict(DSO_CATEGORIES), "python_files": dict(FILE_CATEGORIES)},
        "levels": {},
    }
    port = _free_port()
    db = os.path.join(workdir, "profile.db")
    env = {**os.environ, "PYTHONPERFSUPPORT": "1"}  # -X perf, inherited by the workers too
    argv = [str(python), "-m", "sqsqlite.server", "--db", db, "--port", str(port), "--workers", str(workers)]
    server = Server(f"sqsqlite --workers {workers}", argv, f"http://127.0.0.1:{port}", env)
    try:
        queue_url = asyncio.run(_create(server.url, "profile"))
        asyncio.run(_throughput(server.url, queue_url, max(levels), 1.0))  # warm: every code path compiled and mapped once
        for clients in levels:
            # The same load unrecorded (the trampolines still on): what recording costs the server.
            before = _cpu_seconds(server.proc.pid)
            plain = asyncio.run(_throughput(server.url, queue_url, clients, seconds))
            plain_cpu_us = (_cpu_seconds(server.proc.pid) - before) / max(1, plain["rps"] * plain["seconds"]) * 1e6
            runs = [_profiled_run(server, queue_url, clients, seconds, os.path.join(workdir, f"{clients}-{r}.data")) for r in range(rounds)]
            unrecorded = {"rps": round(plain["rps"]), "server_cpu_us_per_request": round(plain_cpu_us, 1)}
            result["levels"][str(clients)] = {"unrecorded": unrecorded, "runs": runs}
            _print_profile(clients, runs)
            print(f"  unrecorded, same load: {unrecorded['rps']} req/s, {unrecorded['server_cpu_us_per_request']} µs CPU a request")
    finally:
        pids = _tree(server.proc.pid)
        server.stop()
        for pid in pids:
            Path(f"/tmp/perf-{pid}.map").unlink(missing_ok=True)
        shutil.rmtree(workdir, ignore_errors=True)
    result["machine"]["load_after"] = os.getloadavg()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


# ---------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--polls", type=int, default=1000)
    p.add_argument("--quick", action="store_true", help="1 second, 1 round, 200 polls: a smoke run")
    p.add_argument("--stacks-only", action="store_true", help="only part 3, the candidate stacks (written only with --out)")
    p.add_argument("--no-peers", action="store_true", help="leave out fauxqs and MiniStack (moto stays)")
    p.add_argument("--profile", action="store_true", help="only part 4: where a request's CPU goes, recorded with perf")
    p.add_argument("--clients", default="1,64", help="--profile's client counts, comma-separated (default 1,64)")
    p.add_argument("--workers", type=int, default=1, help="--profile's `serve --workers` (default 1: one process holds every sample)")
    p.add_argument("--out", help="where the JSON goes (default benchmarks/results/endpoint_bench.json, endpoint_profile.json)")
    p.add_argument("--serve-stack", help=argparse.SUPPRESS)
    p.add_argument("--db", help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.serve_stack:
        serve_stack(a.serve_stack, a.db, a.port)
        return {}
    if a.quick:
        a.seconds, a.rounds, a.polls = 1.0, 1, 200
    if a.profile:
        levels = tuple(int(c) for c in a.clients.split(","))
        return profile(levels, a.seconds, a.rounds, a.workers, Path(a.out or PROFILE_RESULTS))
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    workdir = tempfile.mkdtemp(prefix="endpoint-bench-")
    result: dict[str, Any] = {
        "benchmark": "endpoint_bench",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": commit(),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "load_before": os.getloadavg()},
        "method": {"seconds": a.seconds, "rounds": a.rounds, "levels": list(LEVELS), "polls": a.polls},
    }
    servers: list[Server] = []
    try:
        if not a.stacks_only:
            _peers_and_polls(result, workdir, a)
        print("candidate stacks", flush=True)
        servers = [stack_server(workdir, st) for st in STACKS]
        result["stacks"] = throughput(servers, (1, 16, 64), a.seconds, a.rounds)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    result["machine"]["load_after"] = os.getloadavg()
    if a.out or not a.stacks_only:  # the stacks alone never replace the whole run's results
        out = Path(a.out or RESULTS)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("throughput", "stacks") if k in result}, indent=1))
    return result


def _peers_and_polls(result: dict[str, Any], workdir: str, a: argparse.Namespace) -> None:
    """Parts 1 and 2, into ``result``: sqsqlite's servers and the peers, their throughput, then
    parked long polls."""
    servers: list[Server] = []
    try:
        print("throughput", flush=True)
        servers = [sqsqlite_server(workdir, 1), sqsqlite_server(workdir, 2), moto_server()]
        if not a.no_peers:
            servers += [s for s in (fauxqs_server(), ministack_server()) if s is not None]
        result["throughput"] = throughput(servers, LEVELS, a.seconds, a.rounds)
        moto = result["throughput"]["moto_server"]["levels"]
        for name in ("sqsqlite --workers 1", "sqsqlite --workers 2"):
            mine = result["throughput"][name]["levels"]
            result["throughput"][name]["vs_moto"] = {k: round(mine[k]["rps"] / max(1, moto[k]["rps"]), 1) for k in mine}
            result["throughput"][name]["rise_1_to_64"] = round(mine["64"]["rps"] / max(1, mine["1"]["rps"]), 2)
            if "fauxqs" in result["throughput"]:  # the fastest peer: requests, and server CPU a request
                fq = result["throughput"]["fauxqs"]["levels"]
                result["throughput"][name]["vs_fauxqs"] = {
                    k: {
                        "rps": round(mine[k]["rps"] / max(1, fq[k]["rps"]), 2),
                        "server_cpu": round(mine[k]["server_cpu_us_per_request"] / max(1, fq[k]["server_cpu_us_per_request"]), 2),
                    }
                    for k in mine
                }
        print("parked long polls", flush=True)
        result["long_polls"] = {}
        for s in servers:
            result["long_polls"][s.name] = asyncio.run(_parked(s, a.polls, a.polls // 10, 10))
            print(f"  {s.name}: {result['long_polls'][s.name]}", flush=True)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main(sys.argv[1:])
