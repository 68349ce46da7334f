"""The agent's latency at a steady request rate: no scoring, in process, serve (sidecar).

Scoring in process (`Evals.submit`, a span processor) against `agentscore serve` as a
sidecar on the same machine, each against no scoring in the same run.

Every part runs in its own process: the OTLP receiver (benchmarks/_receiver.py, answers
200, the backend), the `agentscore serve` sidecar (faithfulness with the local judge,
evaluations to the receiver), and one agent process per measurement
(benchmarks/_latency_agent.py), which starts requests at Poisson arrivals (open loop; each
round's arrivals are the same in every arm) and times each from its scheduled start.
The arms:

- no scoring: spans to the receiver; nothing is scored anywhere;
- in process: the same, plus `Evals.submit` of each answer inside the request
  (faithfulness, local judge, on agentscore's background runner in the agent's interpreter);
  "in process, 0 ms" is the same with the runner's `handover_linger` 0, the hand-over as it
  was; "in process, no pauses" with its `gil_slice` infinite: the scoring loop never hands
  the GIL back on its own, as before; "in process, 0.1 ms slice" with a `gil_slice` of
  0.1 ms;
- span processor: a `ScoringSpanProcessor` with the same scorer on the agent's provider;
- serve (sidecar): spans to `agentscore serve`, which scores them in its own process, as
  docs/deploy.md's sidecar recipe runs it: niced by 10, passing every request on to the
  receiver (`--forward`). After each of its arms the sidecar is given time to score what it
  was sent (so its backlog never runs into the next arm); "sidecar CPU/req" is its CPU
  time over the arm and that wait, per request, in ms (its idle work included: the same
  figure for the no-scoring arm is printed under the table).

Arms run one after the other in rounds (A B C D E, then E D C B A, ...) so drift hits all
alike; a round's arrivals are the same in every arm, so rounds pair up, and "+p99 90%
interval" resamples paired rounds (benchmarks/_percentiles.py): the p99 of a few thousand
Poisson requests moves by 1 to 2 ms between runs here, and a difference means what its
interval says. "CPU/req" is the agent process's CPU time per request (scoring included), in ms.
Every row's +p50, +p90 and +p99 are against the "no scoring" arm of the same run.
With `--load N`, N busy processes spin during a second pass ("loaded"); the first pass is
"quiet" only if nothing else runs on the machine: the load average is printed per arm.

`--after-ms` adds that much Python work to every request after the submit (rendering and
writing the answer, in a real handler), the stretch a scoring thread woken at submit
competes with for the GIL. `--pin` gives the agent process core 0 alone and puts everything
else on core 1 (a machine with a core to spare beside the agent's). `--quick` is a short
run (a few minutes): no scoring, in process and serve (sidecar), 2 rounds of 5 s;
`--arms` and `--seconds` given with it win. `--gc-freeze` has every
agent call `gc.freeze()` once set up, as a latency-tuned agent does: the process-wide
pauses of full collections (80 to 150 ms, a handful per arm) then stop deciding each arm's
p99. `--exporter agentscore` gives every
agent `agentscore.telemetry.otlp.OtlpSpanExporter` instead of the SDK's OTLP/HTTP exporter.

Usage: python benchmarks/serve_latency.py [--quick] [--rate R] [--seconds S] [--rounds N]
                                          [--load N] [--after-ms MS] [--gc-freeze]
                                          [--loaded-only] [--exporter sdk|agentscore] [--pin]
                                          [--arms NAME ...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from _machine import print_machine
from _percentiles import added_interval, pct

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from serve import Service, cpu_seconds, receiver, service  # noqa: E402

SIDECAR = "serve (sidecar)"
ARMS = {  # name: (agent arm, where its spans go, extra arguments)
    "no scoring": ("none", "receiver", ()),
    "in process": ("submit", "receiver", ()),
    "in process, 0 ms": ("submit", "receiver", ("--linger", "0")),
    "in process, no pauses": ("submit", "receiver", ("--gil-slice", "inf")),
    "in process, 0.1 ms slice": ("submit", "receiver", ("--gil-slice", "0.0001")),
    "span processor": ("processor", "receiver", ()),
    SIDECAR: ("none", "serve", ()),
}
QUICK_ARMS = ["no scoring", "in process", SIDECAR]
# docs/deploy.md's sidecar recipe runs `agentscore serve` under `nice -n 10`.
SIDECAR_NICENESS = 10
# Seconds the sidecar gets, after its arm, to score what it was sent.
SIDECAR_CATCH_UP = 120.0


def measure(
    arm: str, traces: str, extra: tuple[str, ...], args: argparse.Namespace, seed: int
) -> dict[str, object]:
    command = [sys.executable, str(HERE / "_latency_agent.py"), "--arm", arm, *extra]
    command += ["--seed", str(seed)]
    command += ["--traces", traces, "--rate", str(args.rate), "--seconds", str(args.seconds)]
    command += ["--after-ms", str(args.after_ms), "--exporter", args.exporter]
    if args.gc_freeze:
        command.append("--gc-freeze")
    environment = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    pin: Callable[[], None] | None = None
    if args.pin:
        # The agent gets core 0 to itself; everything else (this script, the receiver, the
        # sidecar, busy processes) shares core 1.
        pin = pin_to_core_0
    done = subprocess.run(
        command, capture_output=True, text=True, env=environment, check=True, preexec_fn=pin
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def pin_to_core_0() -> None:
    os.sched_setaffinity(0, {0})


def spin() -> None:
    while True:
        pass


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    workers = [multiprocessing.Process(target=spin, daemon=True) for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        yield
    finally:
        for worker in workers:
            worker.terminate()
            worker.join()


def one_pass(label: str, receiver_url: str, sidecar: Service, args: argparse.Namespace) -> None:
    urls = {"receiver": receiver_url, "serve": sidecar.url}
    order = [name for name in ARMS if name in args.arms]
    rounds: dict[str, list[list[int]]] = {name: [] for name in order}
    loads: dict[str, list[float]] = {name: [] for name in order}
    scored: dict[str, int] = dict.fromkeys(order, 0)
    cpu: dict[str, list[float]] = {name: [] for name in order}
    sidecar_cpu: dict[str, list[float]] = {name: [] for name in order}
    full_gc: dict[str, list[float]] = {name: [] for name in order}
    for round_ in range(args.rounds):
        for name in order if round_ % 2 == 0 else reversed(order):
            arm, sink, extra = ARMS[name]
            sidecar_before = cpu_seconds(sidecar.pid)
            result = measure(arm, f"{urls[sink]}/v1/traces", extra, args, seed=round_)
            if sink == "serve":
                caught_up(sidecar)
            values = result["latencies_us"]
            assert isinstance(values, list)
            rounds[name].append(values)
            scored[name] += int(str(result["scored"]))
            loads[name].append(os.getloadavg()[0])
            cpu[name].append(float(str(result["cpu_ms_per_request"])))
            requests = int(str(result["requests"]))
            sidecar_cpu[name].append((cpu_seconds(sidecar.pid) - sidecar_before) * 1000 / requests)
            pauses = result["full_gc_ms"]
            assert isinstance(pauses, list)
            full_gc[name] += pauses
    served = httpx.get(f"{sidecar.url}/healthz").json()
    latencies = {name: [v for values in kept for v in values] for name, kept in rounds.items()}
    base = latencies["no scoring"]
    print(
        f"\n{label}: {args.rate:g} requests/s, {args.rounds} x {args.seconds:g} s per arm, "
        f"{args.after_ms:g} ms of work after submit"
        + (", gc.freeze() in every agent" if args.gc_freeze else "")
        + f", {args.exporter} span exporter"
    )
    width = max(map(len, latencies)) + 2
    head = f"{'ms':<{width}}{'p50':>8}{'p90':>8}{'p99':>8}{'+p50':>8}{'+p90':>8}{'+p99':>8}"
    print(
        f"{head}{'+p99 90% interval':>20}{'requests':>10}{'CPU/req':>9}"
        f"{'sidecar CPU/req':>17}{'load 1m':>9}  full GCs (max ms)"
    )
    for name, values in latencies.items():
        added = [pct(values, q) - pct(base, q) for q in (0.5, 0.9, 0.99)]
        low, high = added_interval(rounds["no scoring"], rounds[name], 0.99)
        sidecar_column = f"{min(sidecar_cpu[name]):.2f}" if ARMS[name][1] == "serve" else "-"
        print(
            f"{name:<{width}}"
            f"{pct(values, 0.5):>8.2f}{pct(values, 0.9):>8.2f}{pct(values, 0.99):>8.2f}"
            f"{added[0]:>+8.2f}{added[1]:>+8.2f}{added[2]:>+8.2f}"
            f"{f'{low:+.2f} to {high:+.2f}':>20}{len(values):>10}"
            f"{min(cpu[name]):>9.2f}{sidecar_column:>17}{max(loads[name]):>9.2f}"
            f"  {len(full_gc[name])} ({max(full_gc[name], default=0):.0f})"
        )
    idle = min(sidecar_cpu["no scoring"])
    print(f"(the sidecar's CPU while idle, during no scoring: {idle:.2f} ms per request)")
    # Every scorer must have been scoring during its arm, or the comparison says nothing.
    in_agents = ", ".join(f"{name} {scored[name]}" for name in order if ARMS[name][0] != "none")
    print(
        f"scored: {in_agents or 'nothing in the agents'};"
        f" sidecar {served['scored']} so far ({served['pending_jobs']} jobs still queued,"
        f" {served['forward_failures']} failed forwards)"
    )


def caught_up(sidecar: Service) -> None:
    """Waits until the sidecar has scored what it was sent, or SIDECAR_CATCH_UP passed."""
    deadline = time.monotonic() + SIDECAR_CATCH_UP
    while time.monotonic() < deadline:
        if httpx.get(f"{sidecar.url}/healthz").json()["pending_jobs"] == 0:
            return
        time.sleep(0.2)
    print(f"(the sidecar still had jobs queued {SIDECAR_CATCH_UP:g} s after its arm)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a short run of a few minutes: {', '.join(QUICK_ARMS)}; 5 s per arm and round",
    )
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--seconds", type=float, help="per arm and round (10; --quick: 5)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--load", type=int, default=0, help="busy processes for a loaded pass")
    parser.add_argument(
        "--after-ms", type=float, default=0.0, help="Python work in each request after submit"
    )
    parser.add_argument(
        "--gc-freeze",
        action="store_true",
        help="every agent calls gc.freeze() once set up (full GC pauses then stop deciding p99)",
    )
    parser.add_argument(
        "--exporter",
        choices=("sdk", "agentscore"),
        default="sdk",
        help="every agent's span exporter: the SDK's OTLP/HTTP one or agentscore's",
    )
    parser.add_argument(
        "--arms", nargs="+", choices=list(ARMS), help="no scoring always runs (default: all)"
    )
    parser.add_argument("--loaded-only", action="store_true", help="skip the quiet pass")
    parser.add_argument(
        "--pin",
        action="store_true",
        help="the agent on core 0, every other process on core 1 (a core to spare)",
    )
    args = parser.parse_args()
    if args.loaded_only and not args.load:
        parser.error("--loaded-only needs --load N")
    if args.seconds is None:
        args.seconds = 5.0 if args.quick else 10.0
    if args.arms is None:
        args.arms = QUICK_ARMS if args.quick else list(ARMS)
    args.arms = ["no scoring", *(arm for arm in args.arms if arm != "no scoring")]
    if args.pin:
        os.sched_setaffinity(0, {1})  # inherited by the receiver, the service and the load
    print_machine()
    with tempfile.TemporaryDirectory() as directory, receiver() as receiver_url:
        env = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}
        forward = ("--forward", f"{receiver_url}/v1/traces")
        niceness = SIDECAR_NICENESS
        with service(Path(directory), receiver_url, env, *forward, niceness=niceness) as sidecar:
            if not args.loaded_only:
                one_pass("as found", receiver_url, sidecar, args)
            if args.load:
                with cpu_load(args.load):
                    one_pass(f"loaded (+{args.load} busy processes)", receiver_url, sidecar, args)
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
