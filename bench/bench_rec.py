#!/usr/bin/env python3
"""Benchmark: round-trip latency added by `mcptape rec`, against direct and a bare relay.

N sequential `tools/call` round trips (calc's `echo`) from a raw JSON-lines client (no SDK,
so client overhead stays out), three ways in the same run, interleaved in rounds:

    direct   client -> calc_server.py
    relay    client -> a bare Python relay (one poll loop, one reused buffer; records nothing) -> server
    relay-c  client -> the same relay in C, when a C compiler is on the machine -> server
    relay-c-tee  the C relay also teeing every chunk, framed, into a socket that a SCHED_IDLE
             child drains with rec's 5 ms naps and throws away: rec's mechanism, minus Python
             and minus the writer's work
    rec      client -> mcptape rec -> server

A relay is the floor any proxy pays (two extra pipe hops per round trip): the Python one is
the floor for a proxy written in Python, the C one the floor of the machine, the teeing C one
the floor of any recorder that hands its copy to another process. Reported: p50/p99 per mode,
the latency each adds vs direct (p50, p99) and rec's ratio to each relay's, for a
tiny, a 1 KB and a ~5 MB message. Each figure is the median over rounds; a nice-19 spinner per core
keeps the CPUs out of idle states whose wake-up latency would otherwise swamp microseconds.
After each rec round the next round waits until rec's tape writer has caught up (see settle);
how long that took is reported too (`writer catch-up`), and the writer's CPU per round trip
measured in-process (writer_cpu_us).

    python bench/bench_rec.py [--calls 2000] [--rounds 7] [--sizes tiny,1k,5m] [--json FILE] [--baseline DIR]

`--baseline DIR` adds a mode `rec-base`: `mcptape rec` of another checkout (say `git archive main |
tar -x -C DIR`), interleaved with this one in the same rounds, for a before/after of a change to rec.

`run()` returns the results as a dict, for a bench runner collecting bench/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench._common import spinning  # noqa: E402

CALC = ROOT / "fixtures" / "servers" / "calc_server.py"
SIZES = {"tiny": 1, "1k": 1000, "5m": 5_000_000}
# Fewer calls for big messages: each one moves megabytes through three processes.
CALLS_FOR = {"tiny": 1.0, "1k": 1.0, "5m": 0.01}
# The client's read size: below malloc's mmap threshold, so the instrument itself stays cheap
# (a 1 MiB os.read is an mmap/munmap per call; see mcptape/record/relay.py ChunkReader).
CLIENT_READ = 64 << 10
# rec's writer reads the tee 64 KiB at a time and writes the tape after each read (~20 1 KB
# round trips, a few ms of work): a tape unchanged this long means the writer is idle.
SETTLE_QUIET = 0.1


# --------------------------------------------------------------------------------------------
# the bare relays (this file runs itself as one; the C one is compiled when a compiler is here)


def relay_main(command: list[str]) -> int:
    """The leanest Python relay: one poll loop, reads into one reused buffer, records nothing."""
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert proc.stdin is not None and proc.stdout is not None
    to_server, from_server = proc.stdin.fileno(), proc.stdout.fileno()
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    poller = select.poll()
    poller.register(0, select.POLLIN)
    poller.register(from_server, select.POLLIN)
    dest = {0: to_server, from_server: 1}
    while True:
        for fd, _ in poller.poll():
            n = os.readv(fd, (buf,))
            if not n:
                proc.stdin.close()
                return proc.wait(10)
            out = view[:n]
            while out:
                out = out[os.write(dest[fd], out) :]


C_RELAY = r"""
#define _GNU_SOURCE /* SCHED_IDLE */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static char buf[1 << 20];
static int tee_fd = -1;
static int pump(int src, int dst, unsigned char tag) {
    ssize_t n = read(src, buf, sizeof buf);
    if (n <= 0) return 0;
    for (char *p = buf, *end = buf + n; p < end;) { ssize_t w = write(dst, p, end - p); if (w < 0) return 0; p += w; }
    if (tee_fd >= 0) {  /* rec's tee: a (tag, length) head and the chunk, non-blocking, never waited for */
        unsigned char head[5] = {tag, n & 255, (n >> 8) & 255, (n >> 16) & 255, (n >> 24) & 255};
        struct iovec iov[2] = {{head, 5}, {buf, (size_t)n}};
        if (writev(tee_fd, iov, 2) < 0) { /* full: dropped, this is a floor, not a recorder */ }
    }
    return 1;
}
static void drain(int fd) {  /* rec's writer without the work: read, nap 5 ms, SCHED_IDLE */
    static char sink[1 << 16];
    struct sched_param idle = {0};
    setpgid(0, 0);
    sched_setscheduler(0, SCHED_IDLE, &idle);
    for (;;) {
        ssize_t n = read(fd, sink, sizeof sink);
        if (n <= 0) _exit(0);
        if (n < (ssize_t)sizeof sink) { struct timespec nap = {0, 5000000}; nanosleep(&nap, 0); }
    }
}
int main(int argc, char **argv) {
    int in[2], out[2], pair[2];
    if (argc < 2) return 2;
    if (getenv("RELAY_TEE") && socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0) {
        int size = 1 << 20;
        setsockopt(pair[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
        if (fork() == 0) { close(pair[0]); close(0); close(1); drain(pair[1]); }
        close(pair[1]);
        tee_fd = pair[0];
        fcntl(tee_fd, F_SETFL, O_NONBLOCK);
    }
    if (pipe(in) || pipe(out)) return 2;
    pid_t pid = fork();
    if (pid == 0) { dup2(in[0], 0); dup2(out[1], 1); close(in[1]); close(out[0]); execvp(argv[1], argv + 1); _exit(127); }
    close(in[0]); close(out[1]);
    struct pollfd fds[2] = {{0, POLLIN, 0}, {out[0], POLLIN, 0}};
    for (;;) {
        if (poll(fds, 2, -1) < 0) continue;
        if (fds[0].revents && !pump(0, in[1], 1)) { close(in[1]); fds[0].fd = -1; }
        if (fds[1].revents && !pump(out[0], 1, 2)) break;
    }
    int status; waitpid(pid, &status, 0); return 0;
}
"""


def build_c_relay(where: Path) -> Path | None:
    """The same relay in C (poll, read, write): the floor without any interpreter; None without cc."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        return None
    source, binary = where / "relay.c", where / "relay"
    source.write_text(C_RELAY, encoding="utf-8")
    done = subprocess.run([cc, "-O2", "-o", str(binary), str(source)], capture_output=True, text=True)
    if done.returncode != 0:
        print(f"bench_rec: the C relay did not build, its rows are left out:\n{done.stderr}", file=sys.stderr)
        return None
    return binary


# --------------------------------------------------------------------------------------------
# the client


class Session:
    """A raw JSON-lines client on one long-lived process; times each round trip."""

    def __init__(self, command: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            bufsize=0,
            cwd=ROOT,
            env=env,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.w = self.proc.stdin.fileno()
        self.r = self.proc.stdout.fileno()
        self.next_id = 0
        self.rest = b""
        self.round_trip(
            b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
            b'"capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}\n'
        )
        os.write(self.w, b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')

    def call_line(self, text: str) -> bytes:
        self.next_id += 1
        msg = {
            "jsonrpc": "2.0",
            "id": self.next_id,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": text}},
        }
        return json.dumps(msg, separators=(",", ":")).encode() + b"\n"

    def round_trip(self, line: bytes) -> int:
        """Send one line, read one answer line; nanoseconds from first byte out to last byte in."""
        t0 = time.perf_counter_ns()
        view = memoryview(line)
        while view:
            view = view[os.write(self.w, view) :]
        while True:
            chunk = os.read(self.r, CLIENT_READ)
            if not chunk:
                raise RuntimeError("the server closed its output")
            nl = chunk.find(b"\n")
            if nl >= 0:
                t1 = time.perf_counter_ns()
                self.rest = chunk[nl + 1 :]
                return t1 - t0

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            # rec exits once its tape writer has caught up: waiting keeps a writer still busy with
            # a backlog (5 MB messages) from running on into the benchmarks that come next.
            self.proc.wait(300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


def settle(tape: Path, limit: float = 120.0) -> float:
    """Wait until rec's tape writer has caught up (the tape unchanged for SETTLE_QUIET seconds);
    the seconds it kept writing.

    On a continuous stream of 1 KB round trips rec's writer falls behind (it redacts and parses
    every line, at the lowest priority, on cores the wire is using) and works its backlog off
    after the round. Left to run into the next mode's round it slowed that round (here: direct
    +5 µs p50 right after a rec round), the baseline included, which made rec look cheaper.
    """
    t0 = time.monotonic()
    last: tuple[int, int] | None = None
    quiet_since = t0
    while time.monotonic() - t0 < limit:
        st = tape.stat()
        now = time.monotonic()
        if (st.st_size, st.st_mtime_ns) != last:
            last, quiet_since = (st.st_size, st.st_mtime_ns), now
        elif now - quiet_since >= SETTLE_QUIET:
            break
        time.sleep(0.01)
    return max(0.0, quiet_since - t0)


def writer_cpu_us(calls: int = 5000, reps: int = 7) -> dict[str, float]:
    """CPU µs rec's tape writer spends per round trip, in-process: TapeRecorder fed the tee's
    frames of `calls` echo round trips (the bench client's request with a progress token, calc's
    answer), flushed every 16 frames as after a busy read; best of `reps`. What a continuous
    session must stay under for the writer to keep up."""
    from mcptape.publish.outlet import Outlet
    from mcptape.record.relay import TAG_C2S, TAG_S2C
    from mcptape.record.writer import TapeRecorder
    from mcptape.redact.redactor import make_redactor
    from mcptape.tape.format import TapeWriter, make_header

    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-writer-") as tmp:
        for size_name in ("tiny", "1k"):
            text = "x" * SIZES[size_name]
            frames: list[tuple[int, bytes]] = []
            for i in range(calls):
                params = {"name": "echo", "arguments": {"text": text}, "_meta": {"progressToken": i}}
                request = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}
                answer = {"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": text}]}}
                frames.append((TAG_C2S, json.dumps(request, separators=(",", ":")).encode() + b"\n"))
                frames.append((TAG_S2C, json.dumps(answer, separators=(",", ":")).encode() + b"\n"))
            best = float("inf")
            for rep in range(reps):
                writer = TapeWriter(Path(tmp) / f"{size_name}-{rep}.tape.jsonl", make_header("bench"))
                recorder = TapeRecorder(writer, outlet=Outlet(make_redactor()))
                t0 = time.process_time()
                for i, (tag, payload) in enumerate(frames):
                    recorder.frame(tag, payload)
                    if i % 16 == 15:
                        recorder._flush()
                recorder._flush()
                best = min(best, time.process_time() - t0)
                writer.close()
            out[size_name] = best / calls * 1e6
    return out


def pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1000.0  # µs


# Runs `python -m mcptape` from the checkout in argv[1] rather than the installed one (an editable
# install's finder would otherwise win over sys.path).
BASELINE_LAUNCHER = (
    "import runpy, sys; d = sys.argv.pop(1); "
    "sys.meta_path[:] = [f for f in sys.meta_path if 'editable' not in getattr(f, '__module__', '')]; "
    "sys.path.insert(0, d); sys.argv[0] = 'mcptape'; runpy.run_module('mcptape', run_name='__main__', alter_sys=True)"
)


def run(
    calls: int = 2000, rounds: int = 7, sizes: list[str] | None = None, spin: bool = True, baseline: str | None = None
) -> dict[str, Any]:
    sizes = sizes or list(SIZES)
    tmp = Path(tempfile.mkdtemp(prefix="bench-rec-"))
    server = [sys.executable, str(CALC)]
    tapes = {"rec": tmp / "bench.tape.jsonl"}
    commands = {
        "direct": server,
        "relay": [sys.executable, str(Path(__file__).resolve()), "--relay", "--", *server],
        "rec": [
            sys.executable,
            "-m",
            "mcptape",
            "rec",
            "--out",
            str(tapes["rec"]),
            "--",
            *server,
        ],
    }
    if baseline is not None:
        tapes["rec-base"] = tmp / "base.tape.jsonl"
        commands["rec-base"] = [sys.executable, "-c", BASELINE_LAUNCHER, baseline, "rec", "--out",
                                str(tapes["rec-base"]), "--", *server]
    c_relay = build_c_relay(tmp)
    if c_relay is not None:
        commands["relay-c"] = [str(c_relay), *server]
        commands["relay-c-tee"] = [str(c_relay), *server]
    envs: dict[str, dict[str, str] | None] = {m: None for m in commands}
    if "relay-c-tee" in commands:
        envs["relay-c-tee"] = {**os.environ, "RELAY_TEE": "1"}
    results: dict[str, Any] = {
        "calls": calls,
        "rounds": rounds,
        "cpus": os.cpu_count(),
        "spinner": spin,
        "sizes": {},
    }
    with spinning(spin):
        for size_name in sizes:
            n = max(5, int(calls * CALLS_FOR[size_name]))
            per_round: dict[str, list[tuple[float, float]]] = {m: [] for m in commands}
            catch_up: dict[str, list[float]] = {m: [] for m in tapes}
            sessions = {m: Session(c, envs[m]) for m, c in commands.items()}
            try:
                text = "x" * SIZES[size_name]
                for s in sessions.values():  # warm-up: caches, allocator, branch predictors
                    for _ in range(max(3, n // 10)):
                        s.round_trip(s.call_line(text))
                for tape in tapes.values():
                    settle(tape)
                order = list(commands)
                for _ in range(rounds):
                    random.shuffle(order)
                    for mode in order:
                        s = sessions[mode]
                        lines = [s.call_line(text) for _ in range(n)]
                        times = [s.round_trip(line) for line in lines]
                        per_round[mode].append((pct(times, 0.50), pct(times, 0.99)))
                        if mode in tapes:
                            catch_up[mode].append(settle(tapes[mode]))
            finally:
                for s in sessions.values():
                    s.close()
            row: dict[str, Any] = {"calls_per_round": n}
            for mode, waits in catch_up.items():
                # How long the writer kept writing after a round: how far behind a continuous
                # session it falls.
                row[f"{mode}_writer_catch_up_s"] = statistics.median(waits)
            for mode, stats in per_round.items():
                row[mode] = {
                    "p50_us": statistics.median(p for p, _ in stats),
                    "p99_us": statistics.median(q for _, q in stats),
                }
            for mode in (m for m in commands if m != "direct"):
                row[f"{mode}_added_p50_us"] = statistics.median(
                    a[0] - d[0] for a, d in zip(per_round[mode], per_round["direct"], strict=True)
                )
                row[f"{mode}_added_p99_us"] = statistics.median(
                    a[1] - d[1] for a, d in zip(per_round[mode], per_round["direct"], strict=True)
                )
            for floor_mode in ("relay", "relay-c", "relay-c-tee"):
                floor = row.get(f"{floor_mode}_added_p50_us")
                for mode in [m for m in ("rec", "rec-base") if m in commands]:
                    # Below zero either figure is noise (5 MB: 20 calls a round), not a ratio.
                    added = row[f"{mode}_added_p50_us"]
                    ok = floor is not None and floor > 0 and added > 0
                    row[f"{mode}_vs_{floor_mode}_p50"] = added / floor if ok else None
            results["sizes"][size_name] = row
    results["writer_cpu_us_per_round_trip"] = writer_cpu_us(calls=max(500, calls))
    return results


def print_table(results: dict[str, Any]) -> None:
    print(
        f"mcptape rec round-trip latency, µs (median of {results['rounds']} interleaved rounds; "
        f"{results['cpus']} CPUs; spinner {'on' if results['spinner'] else 'off'})"
    )
    floors = (("relay", 9), ("relay-c", 10), ("relay-c-tee", 12))
    for name, row in results["sizes"].items():
        modes = [m for m in ("direct", "relay", "relay-c", "relay-c-tee", "rec-base", "rec") if m in row]
        print(f"\n{name} message, {row['calls_per_round']} calls per mode per round")
        head = "".join(f" {'/ ' + f:>{w}}" for f, w in floors)
        print(f"  {'mode':<11} {'p50':>9} {'p99':>9} {'+p50':>9} {'+p99':>9}{head}")
        for m in modes:
            line = f"  {m:<11} {row[m]['p50_us']:>9.1f} {row[m]['p99_us']:>9.1f}"
            if m != "direct":
                line += f" {row[f'{m}_added_p50_us']:>9.1f} {row[f'{m}_added_p99_us']:>9.1f}"
                for floor, width in floors:
                    ratio = row.get(f"{m}_vs_{floor}_p50")
                    line += f" {(f'{ratio:.2f}x' if ratio else '-'):>{width}}"
            print(line)
        for m in ("rec-base", "rec"):
            if f"{m}_writer_catch_up_s" in row:
                print(f"  {m}'s writer caught up {row[f'{m}_writer_catch_up_s']:.2f} s after a round (median)")
    cpu = results.get("writer_cpu_us_per_round_trip", {})
    if cpu:
        print("\nrec's tape writer, CPU per round trip in-process: " + ", ".join(f"{k} {v:.0f} µs" for k, v in cpu.items()))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--relay"]:
        return relay_main(argv[2:] if argv[1:2] == ["--"] else argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="round trips per mode per round (tiny/1k)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default=",".join(SIZES), help="comma-separated: " + ",".join(SIZES))
    parser.add_argument("--no-spin", action="store_true", help="measure without the idle-state spinner")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    parser.add_argument("--baseline", metavar="DIR", help="also time `mcptape rec` of the checkout in DIR (mode rec-base)")
    args = parser.parse_args(argv)
    results = run(args.calls, args.rounds, [s for s in args.sizes.split(",") if s], spin=not args.no_spin,
                  baseline=args.baseline)
    print_table(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
