"""Hostile clients against `sqsqlite serve` and `sqsqlite console`: memory, descriptors, and a
bystander's latency.

    python -m benchmarks.hostile                          # both servers, every probe, ~2 minutes
    python -m benchmarks.hostile --only serve --probes slow-uploads --connections 200

Each server runs as its own process (`python -m sqsqlite.server`, `sqsqlite console`) on a
fresh file, sampled every 50 ms from /proc: resident memory (RSS), open descriptors, threads.
Probes, one after the other, each --seconds long, then a pause of --settle seconds:

- slow-uploads: --connections clients each announce a 4 MiB body and send it in 64 KiB pieces
  spread over the probe (a body the endpoint must not hold whole for each of them);
- unsigned-uploads: the same with no Authorization, to a server started with keys;
- idle-keepalive: --connections clients each make one request, then hold the connection idle;
- header-trickle: --connections / 2 clients send a request's headers a byte every 0.5 s;
- burst: --burst connections opened at once, each asking one request, counted answered
  within 10 s.

Meanwhile a bystander asks, every 50 ms on a connection of its own, what a user would: ListQueues
(serve, signed with botocore) or the console's queue list page (console). The floor, measured in
the same run: the bystander's latency and the server's RSS with nobody else connected.
Reported: RSS before / peak / after (MiB), descriptors and threads at peak and after, the
bystander's median and worst latency during the probe and the ratio to the floor, and how the
hostile clients ended (answered with which status, or closed unanswered).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from benchmarks.harness import percentile
from sqsqlite.testing import wait_until_ready

HERE = Path(__file__).resolve().parent
MIB = 1024 * 1024
UPLOAD = 4 * MIB
PIECE = 64 * 1024
ACCESS, SECRET = "AKIDHOSTILE", "hostile-secret"
PROBES = ("slow-uploads", "unsigned-uploads", "idle-keepalive", "header-trickle", "burst")


# ------------------------------------------------------------------ the server under test


class Target:
    """A server process: its URL, and samples of its RSS, descriptors and threads."""

    def __init__(self, kind: str, db: str, keyed: bool):
        self.kind, self.keyed = kind, keyed
        env = {**os.environ}
        keys = ["--access-key", ACCESS, "--secret-key", SECRET] if keyed else []
        if kind == "serve":
            argv = [sys.executable, "-m", "sqsqlite.server", "--db", db, "--port", "0", *keys]
        else:
            argv = [sys.executable, str(Path(sys.executable).with_name("sqsqlite")), "console", "--db", db, "--port", "0", *keys]
        self.proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, env=env)
        line = self.proc.stderr.readline()  # type: ignore[union-attr]
        m = re.search(r"(http://[\d.]+:\d+)", line)
        if not m:
            self.proc.kill()
            raise RuntimeError(f"{kind} did not start: {line}")
        self.url = m.group(1)
        self.host, port = self.url.removeprefix("http://").split(":")
        self.port = int(port)
        try:  # serving, not merely listening: serve answers /health 503 while it starts
            wait_until_ready(self.url, timeout=60, process=self.proc)
        except (RuntimeError, TimeoutError):
            self.proc.kill()
            raise
        self.samples: list[tuple[float, float, int, int]] = []  # (time, RSS MiB, descriptors, threads)
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            with contextlib.suppress(OSError, ValueError):
                self.samples.append((time.monotonic(), *self.now()))

    def now(self) -> tuple[float, int, int]:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
        threads = int(re.search(r"Threads:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
        return rss, len(os.listdir(f"/proc/{self.proc.pid}/fd")), threads

    def between(self, start: float, end: float) -> list[tuple[float, float, int, int]]:
        return [s for s in self.samples if start <= s[0] <= end]

    def stop(self) -> None:
        self._stop.set()
        self.proc.terminate()
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# ------------------------------------------------------------------ the bystander


class Bystander:
    """A process of its own (so that the hostile clients' work in this one does not delay it) asking
    one normal request every 50 ms on a kept connection; each answer's time (seconds) is read back."""

    def __init__(self, target: Target):
        argv = [sys.executable, "-m", "benchmarks.hostile", "--bystander", target.kind, target.url, "1" if target.keyed else "0"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=HERE.parent)
        self.times: list[tuple[float, float]] = []  # (when, latency)
        self.failures = 0
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def wait_for_answers(self, since: float, count: int, timeout: float = 60.0) -> None:
        """Wait until ``count`` requests begun after ``since`` have their answers: the bystander's
        process imports boto3 before its first request, and a loaded machine slows each one, so
        the floor is counted in answers, not read off a clock."""
        deadline = time.monotonic() + timeout
        while sum(when >= since for when, _ in self.times) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bystander got fewer than {count} answers within {timeout:.0f} s")
            time.sleep(0.02)

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            when, latency = line.split()
            if latency == "failed":
                self.failures += 1
            else:
                self.times.append((float(when), float(latency)))

    def between(self, start: float, end: float) -> list[float]:
        return [t for w, t in self.times if start <= w <= end]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)
        self._thread.join(30)


def _console_auth() -> dict:
    import base64

    return {"Authorization": "Basic " + base64.b64encode(f"{ACCESS}:{SECRET}".encode()).decode()}


def bystander(kind: str, url: str, keyed: bool) -> None:
    """The bystander's own process: one request every 50 ms, "<monotonic start> <seconds>" a line."""
    if kind == "serve":
        import boto3
        from botocore.config import Config

        sqs = boto3.client(
            "sqs",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id=ACCESS,
            aws_secret_access_key=SECRET,
            config=Config(retries={"total_max_attempts": 1}, connect_timeout=10, read_timeout=10),
        )

        def ask() -> None:
            sqs.list_queues()

    else:
        request = urllib.request.Request(url + "/console", headers=_console_auth() if keyed else {})

        def ask() -> None:
            with urllib.request.urlopen(request, timeout=10) as answer:
                answer.read()

    try:
        while True:
            began = time.monotonic()
            try:
                ask()
                print(f"{began} {time.monotonic() - began}", flush=True)
            except Exception:
                print(f"{began} failed", flush=True)
            time.sleep(max(0.0, 0.05 - (time.monotonic() - began)))
    except BrokenPipeError:  # the benchmark stopped reading: done
        return


# ------------------------------------------------------------------ hostile clients


async def _status(reader: asyncio.StreamReader) -> str:
    """How a hostile connection ended: the status the server answered, or 'closed'."""
    try:
        line = await reader.readline()
    except (ConnectionError, OSError):
        return "reset"
    return line.split(b" ")[1].decode() if line.startswith(b"HTTP/") else "closed"


def _request_head(target: Target, length: int, signed: bool) -> bytes:
    if target.kind == "serve":
        head = f"POST / HTTP/1.1\r\nHost: {target.host}:{target.port}\r\nContent-Type: application/x-amz-json-1.0\r\n"
        head += "X-Amz-Target: AmazonSQS.ListQueues\r\n"
        if signed:  # shaped as a signature (its value is checked only once the body is in)
            day = time.strftime("%Y%m%d", time.gmtime())
            head += f"X-Amz-Date: {time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}\r\n"
            head += f"Authorization: AWS4-HMAC-SHA256 Credential={ACCESS}/{day}/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature={'0' * 64}\r\n"
    else:
        head = f"POST /console/queues/hostile/purge HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n"
        head += "Content-Type: application/x-www-form-urlencoded\r\n"
    return (head + f"Content-Length: {length}\r\n\r\n").encode()


async def slow_upload(target: Target, seconds: float, signed: bool, ends: list[str]) -> None:
    try:
        reader, writer = await asyncio.open_connection(target.host, target.port)
    except OSError:
        ends.append("refused")
        return
    answer = asyncio.ensure_future(_status(reader))
    try:
        writer.write(_request_head(target, UPLOAD, signed))
        pieces = UPLOAD // PIECE
        gap = seconds / pieces
        piece = b"x" * PIECE
        for _ in range(pieces):
            if answer.done() or writer.is_closing():
                break
            writer.write(piece)
            try:
                await asyncio.wait_for(writer.drain(), gap + 5)
            except (OSError, asyncio.TimeoutError):
                break
            await asyncio.sleep(gap)
        ends.append(await asyncio.wait_for(answer, 10))
    except (OSError, asyncio.TimeoutError):
        ends.append("unanswered")
    finally:
        answer.cancel()
        writer.close()


async def idle_keepalive(target: Target, seconds: float, ends: list[str]) -> None:
    try:
        reader, writer = await asyncio.open_connection(target.host, target.port)
    except OSError:
        ends.append("refused")
        return
    path = "/metrics" if target.kind == "console" else "/?Action=ListQueues"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\n\r\n".encode())
    try:
        status = await asyncio.wait_for(_status(reader), 10)
        await asyncio.sleep(seconds)  # held open, idle
        ends.append(status)
    except (OSError, asyncio.TimeoutError):
        ends.append("unanswered")
    finally:
        writer.close()


async def header_trickle(target: Target, seconds: float, ends: list[str]) -> None:
    try:
        reader, writer = await asyncio.open_connection(target.host, target.port)
    except OSError:
        ends.append("refused")
        return
    head = f"GET /metrics HTTP/1.1\r\nHost: {target.host}\r\nX-Trickle: " + "a" * 1000
    began = time.monotonic()
    try:
        for byte in head.encode():
            if time.monotonic() - began > seconds or writer.is_closing():
                break
            writer.write(bytes([byte]))
            await writer.drain()
            await asyncio.sleep(0.5)
        ends.append("held")
    except OSError:
        ends.append("closed")
    finally:
        writer.close()


async def burst_one(target: Target, ends: list[str]) -> None:
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(target.host, target.port), 10)
    except (OSError, asyncio.TimeoutError):
        ends.append("unanswered")
        return
    path = "/metrics" if target.kind == "console" else "/?Action=ListQueues"
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {target.host}:{target.port}\r\nConnection: close\r\n\r\n".encode())
    try:
        ends.append(await asyncio.wait_for(_status(reader), 10))
    except (OSError, asyncio.TimeoutError):
        ends.append("unanswered")
    finally:
        writer.close()


async def attack(target: Target, probe: str, connections: int, seconds: float, burst: int) -> list[str]:
    ends: list[str] = []
    if probe in ("slow-uploads", "unsigned-uploads"):
        tasks = [slow_upload(target, seconds, signed=probe == "slow-uploads" and target.keyed, ends=ends) for _ in range(connections)]
    elif probe == "idle-keepalive":
        tasks = [idle_keepalive(target, seconds, ends) for _ in range(connections)]
    elif probe == "header-trickle":
        tasks = [header_trickle(target, seconds, ends) for _ in range(connections // 2)]
    else:
        tasks = [burst_one(target, ends) for _ in range(burst)]
    await asyncio.gather(*tasks)
    return ends


# ------------------------------------------------------------------ one run


def _mib(value: float) -> float:
    return round(value, 1)


def measure(
    kind: str, probes: tuple[str, ...], connections: int, seconds: float, settle: float, burst: int, floor_seconds: float = 4.0
) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for keyed in (False, True):
            chosen = [p for p in probes if (p == "unsigned-uploads") == keyed]
            if not chosen:
                continue
            target = Target(kind, str(Path(tmp) / f"{kind}-{keyed}.db"), keyed)
            try:
                if kind == "serve":
                    import boto3

                    boto3.client(
                        "sqs", endpoint_url=target.url, region_name="us-east-1", aws_access_key_id=ACCESS, aws_secret_access_key=SECRET
                    ).create_queue(QueueName="hostile")
                bystander = Bystander(target)
                bystander.wait_for_answers(since=0.0, count=1)  # its process has started
                floor_start = time.monotonic()
                time.sleep(floor_seconds)  # the floor: nobody else connected
                bystander.wait_for_answers(since=floor_start, count=3)
                floor_end = time.monotonic()
                for probe in chosen:
                    idle = target.between(floor_start, floor_end) or [(0, *target.now())]
                    floor = bystander.between(floor_start, floor_end)
                    began = time.monotonic()
                    ends = asyncio.run(attack(target, probe, connections, seconds, burst))
                    ended = time.monotonic()
                    time.sleep(settle)
                    during = target.between(began, ended) or [(ended, *target.now())]  # a probe quicker than a sample
                    after = target.now()
                    lat = bystander.between(began, ended)
                    counted: dict[str, int] = {}
                    for e in ends:
                        counted[e] = counted.get(e, 0) + 1
                    row = {
                        "server": kind,
                        "probe": probe,
                        "clients": len(ends),
                        "rss_idle_mib": _mib(statistics.median(s[1] for s in idle)),
                        "rss_peak_mib": _mib(max(s[1] for s in during)),
                        "rss_after_mib": _mib(after[0]),
                        "fds_idle": int(statistics.median(s[2] for s in idle)),
                        "fds_peak": max(s[2] for s in during),
                        "fds_after": after[1],
                        "threads_peak": max(s[3] for s in during),
                        "threads_after": after[2],
                        "bystander_floor_ms": round(statistics.median(floor) * 1000, 1) if floor else None,
                        "bystander_median_ms": round(statistics.median(lat) * 1000, 1) if lat else None,
                        "bystander_p95_ms": round(percentile(lat, 0.95) * 1000, 1) if lat else None,
                        "bystander_max_ms": round(max(lat) * 1000, 1) if lat else None,
                        "bystander_over_50ms": sum(t > 0.05 for t in lat),
                        "bystander_floor_p95_ms": round(percentile(floor, 0.95) * 1000, 1) if floor else None,
                        "bystander_floor_over_50ms": f"{sum(t > 0.05 for t in floor)} of {len(floor)}",
                        "bystander_asked": len(lat),
                        "bystander_failed": bystander.failures,
                        "ends": counted,
                        "seconds": round(ended - began, 1),
                    }
                    row["rss_added_mib"] = _mib(row["rss_peak_mib"] - row["rss_idle_mib"])
                    if row["bystander_floor_ms"] and row["bystander_median_ms"]:
                        row["bystander_ratio"] = round(row["bystander_median_ms"] / row["bystander_floor_ms"], 2)
                    rows.append(row)
                    print(_line(row), flush=True)
                bystander.stop()
            finally:
                target.stop()
    return rows


def _line(r: dict) -> str:
    return (
        f"{r['server']:8} {r['probe']:17} clients {r['clients']:5}  RSS idle {r['rss_idle_mib']:6.1f} peak {r['rss_peak_mib']:6.1f} "
        f"(+{r['rss_added_mib']:.1f}) after {r['rss_after_mib']:6.1f} MiB  fds {r['fds_idle']}/{r['fds_peak']}/{r['fds_after']}  "
        f"threads {r['threads_peak']}/{r['threads_after']}  bystander median {r['bystander_floor_ms']} -> {r['bystander_median_ms']} "
        f"p95 {r['bystander_floor_p95_ms']} -> {r['bystander_p95_ms']} (max {r['bystander_max_ms']}) ms, over 50 ms "
        f"{r['bystander_floor_over_50ms']} -> {r['bystander_over_50ms']} of {r['bystander_asked']}, "
        f"{r['bystander_failed']} failed  ends {r['ends']}"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--bystander"]:
        bystander(argv[1], argv[2], argv[3] == "1")
        return 0
    p = argparse.ArgumentParser(prog="python -m benchmarks.hostile", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", choices=("serve", "console"), help="one server only")
    p.add_argument("--probes", nargs="+", choices=PROBES, default=list(PROBES))
    p.add_argument("--connections", type=int, default=200)
    p.add_argument("--burst", type=int, default=2000)
    p.add_argument("--seconds", type=float, default=6.0, help="each probe's length")
    p.add_argument("--settle", type=float, default=4.0, help="the pause after each probe before 'after' is read")
    p.add_argument("--floor", type=float, default=4.0, help="how long the floor is measured, nobody else connected")
    p.add_argument("--out", default=str(HERE / "results" / "hostile.json"))
    args = p.parse_args(argv)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    from benchmarks.harness import commit

    rows = []
    for kind in (args.only,) if args.only else ("serve", "console"):
        rows += measure(kind, tuple(args.probes), args.connections, args.seconds, args.settle, args.burst, args.floor)
    result = {
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit(),
        "load_average": os.getloadavg(),
        "cpus": os.cpu_count(),
        "settings": vars(args),
        "rows": rows,
    }
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
