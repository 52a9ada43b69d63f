"""The soak runner: ``python -m tests.reliability.soak --seconds 600`` (from the repository root).

Starts P producer and C consumer processes (:mod:`tests.reliability.worker`) on one database,
SIGKILLs a random worker at random moments and starts a fresh incarnation in its place, then
stops the producers, lets the consumers drain the queue, stops everything and runs
:mod:`tests.reliability.checker` over the logs and the database. Prints the figures and exits
0 only if every invariant held. ``--check DIR`` re-checks a kept work directory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import sqsqlite

from .checker import Report, check
from .worker import Log

ROOT = Path(__file__).resolve().parents[2]  # so `-m tests.reliability.worker` imports


@dataclass
class Options:
    seconds: float = 600
    producers: int = 2
    consumers: int = 3
    visibility: int = 1
    max_receive_count: int = 3
    kill_interval: tuple[float, float] = (0.5, 2.0)
    self_kill_rate: float = 0.0005
    gap_kill_rate: float = 0.003
    poison_rate: float = 0.02
    pace: float = 0.15
    seed: int | None = None
    workdir: str | None = None
    keep: bool = False
    drain_seconds: float = 180


class Worker:
    def __init__(self, role: str, index: int):
        self.role, self.index, self.incarnation = role, index, 0
        self.proc: subprocess.Popen | None = None
        self.name = ""

    def start(self, opts: Options, workdir: str, rng: random.Random) -> None:
        self.incarnation += 1
        self.name = f"{self.role[0]}{self.index}.{self.incarnation}"
        cmd = [
            sys.executable,
            "-m",
            "tests.reliability.worker",
            self.role,
            "--id",
            self.name,
            "--workdir",
            workdir,
            "--visibility",
            str(opts.visibility),
            "--poison-rate",
            str(opts.poison_rate),
            "--pace",
            str(opts.pace),
            "--self-kill-rate",
            str(opts.self_kill_rate),
            "--gap-kill-rate",
            str(opts.gap_kill_rate),
            "--seed",
            str(rng.randrange(2**31)),
        ]
        err = open(os.path.join(workdir, "logs", f"{self.name}.stderr"), "wb")
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        err.close()


def run(opts: Options, out=sys.stdout) -> Report:
    seed = opts.seed if opts.seed is not None else random.randrange(2**31)
    rng = random.Random(seed)
    workdir = opts.workdir or tempfile.mkdtemp(prefix="sqsqlite-soak-")
    os.makedirs(os.path.join(workdir, "logs"), exist_ok=True)
    print(f"soak: {opts.seconds:.0f} s, seed {seed}, work directory {workdir}", file=out, flush=True)
    with open(os.path.join(workdir, "meta.json"), "w") as f:
        json.dump(
            {
                "seconds": opts.seconds,
                "producers": opts.producers,
                "consumers": opts.consumers,
                "max_receive_count": opts.max_receive_count,
                "seed": seed,
            },
            f,
        )
    db = sqsqlite.connect(os.path.join(workdir, "soak.db"))
    dlq = db.create_queue("soak-dlq")
    db.create_queue(
        "soak",
        visibility_timeout=opts.visibility,
        redrive_policy={"deadLetterTargetArn": dlq.arn, "maxReceiveCount": opts.max_receive_count},
    )
    log = Log(os.path.join(workdir, "logs", "parent.log"))
    workers = [Worker("producer", i) for i in range(opts.producers)] + [Worker("consumer", i) for i in range(opts.consumers)]
    for w in workers:
        w.start(opts, workdir, rng)

    def reap(restart: bool) -> None:
        """Start a new incarnation of every worker that died (killed itself or crashed)."""
        for w in workers:
            if w.proc is None or w.proc.poll() is None:
                continue
            rc = w.proc.returncode
            if rc not in (0, -signal.SIGKILL):
                stderr = Path(workdir, "logs", f"{w.name}.stderr").read_text(errors="replace")
                log.write("crash", worker=w.name, rc=rc, stderr=stderr)
            if restart and rc != 0:  # 0: it saw a stop file and finished
                w.start(opts, workdir, rng)
                log.write("restart", worker=w.name)
            else:
                w.proc = None

    started = time.monotonic()
    deadline = started + opts.seconds
    try:
        while time.monotonic() < deadline:
            pause_until = time.monotonic() + rng.uniform(*opts.kill_interval)
            while time.monotonic() < min(pause_until, deadline):
                time.sleep(0.05)
                reap(restart=True)
            if time.monotonic() >= deadline:
                break
            victim = rng.choice([w for w in workers if w.proc is not None and w.proc.poll() is None] or [None])
            if victim is not None:
                log.write("kill", worker=victim.name)
                victim.proc.send_signal(signal.SIGKILL)
                victim.proc.wait()
                victim.start(opts, workdir, rng)
                log.write("restart", worker=victim.name)
        elapsed_kill_phase = time.monotonic() - started
        # Stop the producers, let the consumers drain (poison messages need maxReceiveCount
        # visibility timeouts to reach the dead-letter queue), then stop everything.
        Path(workdir, "stop-producers").touch()
        producers = [w for w in workers if w.role == "producer"]
        _wait_all(producers, 30, log)
        drain_end = time.monotonic() + opts.drain_seconds
        src = db.queue("soak")
        while time.monotonic() < drain_end:
            reap(restart=True)
            counts = src.get_queue_attributes(["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])
            if all(v == "0" for v in counts.values()):
                break
            time.sleep(0.2)
        Path(workdir, "stop").touch()
        _wait_all(workers, 30, log)
        reap(restart=False)
    finally:
        for w in workers:
            if w.proc is not None and w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
        db.close()
    report = check(workdir)
    report.seconds = elapsed_kill_phase
    for line in report.lines():
        print(line, file=out, flush=True)
    if report.ok and not opts.keep and opts.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        print(f"logs and database kept in {workdir}", file=out)
    return report


def _wait_all(workers, timeout: float, log: Log) -> None:
    end = time.monotonic() + timeout
    for w in workers:
        if w.proc is None:
            continue
        try:
            w.proc.wait(max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.write("kill", worker=w.name)  # stuck at shutdown: that is a kill too
            w.proc.kill()
            w.proc.wait()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.reliability.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=600, help="how long to run and kill (default 600)")
    ap.add_argument("--producers", type=int, default=2)
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--visibility", type=int, default=1, help="visibility timeout in seconds (default 1)")
    ap.add_argument("--max-receive-count", type=int, default=3)
    ap.add_argument("--seed", type=int)
    ap.add_argument("--workdir", help="keep the database and logs here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory even if the run passes")
    ap.add_argument("--check", metavar="DIR", help="only re-check a kept work directory")
    args = ap.parse_args(argv)
    if args.check:
        report = check(args.check)
        print("\n".join(report.lines()))
        return 0 if report.ok else 1
    opts = Options(
        seconds=args.seconds,
        producers=args.producers,
        consumers=args.consumers,
        visibility=args.visibility,
        max_receive_count=args.max_receive_count,
        seed=args.seed,
        workdir=args.workdir,
        keep=args.keep,
    )
    return 0 if run(opts).ok else 1


if __name__ == "__main__":
    sys.exit(main())
