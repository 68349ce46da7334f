"""agentscore's faithfulness scorer next to deepeval's and ragas', side by side in one run.

One local OpenAI-compatible judge (`benchmarks/_judge_server.py`, its own process, fixed
latency per request) answers every library's prompts with valid structured replies and the
same deterministic verdicts. The same 50 HaluEval knowledge-QA cases
(`benchmarks/halueval_qa_cases.py`) are scored, at the same concurrency, by:

- agentscore, default (one judge call per case), in this process;
- agentscore, a second pass over the same cases with the same judge (its response cache);
- agentscore, stepwise (extract, analyze, reason: Mastra's flow), with a fresh judge;
- deepeval's FaithfulnessMetric and ragas' Faithfulness, each in a subprocess of a separate
  venv (`.cache/peers-venv`, created on first use with the pinned versions below), so the
  library's own dependencies stay clean.

Figures per library, from the judge's counters:
- requests per case and prompt characters per case (the characters of all message contents
  sent: system prompt, instructions, examples, data, and a schema when a library puts it in
  the prompt; request body bytes, which also count the JSON schema a library sends in
  `response_format`, are reported beside them);
- sequential round trips on the critical path, measured: every request carries its case's id
  (an httpx event hook adds a header, the same hook for every library), the judge records
  each request's start and end, and the longest chain of requests where each starts after the
  previous one ended is the number of round trips that case had to wait for in sequence;
- wall time for the 50 cases (first case started to last case done, measured in the process
  that runs the library, after one warm-up case that is not counted), median of `--repeat`
  runs, and the ratios against agentscore's default mode.

Then the four-scorer set per generation (faithfulness, hallucination, answer relevancy,
completeness) on the same cases: agentscore with the four sharing one judge request (the
pipeline's `score_generation`) and each alone; deepeval's FaithfulnessMetric,
HallucinationMetric, AnswerRelevancyMetric and GEval (completeness, evaluation steps given);
ragas' Faithfulness, AnswerRelevancy (its question generations and embedding requests, which
the judge server answers and counts) and DomainSpecificRubrics (completeness); ragas has no
hallucination metric, so it is 1 - faithfulness at no cost. Requests, prompt and completion
tokens per generation (the judge's count: characters / 4, one rule for all), round trips,
wall time.

The run fails (exit 1) if any library scored fewer than all cases, a prompt went
unrecognised, or a request count varied between repeats.

Usage: python benchmarks/peers.py [--latency 0.2] [--concurrency 8] [--repeat 3]
       [--cases 50] [--rebuild-venv]
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import anyio  # noqa: E402
import httpx  # noqa: E402
from openai import AsyncOpenAI  # noqa: E402

from agentscore.judges import OpenAIJudge  # noqa: E402
from agentscore.pipeline.generation import Generation, Scoring, score_generation  # noqa: E402
from agentscore.result import ScoreResult  # noqa: E402
from agentscore.run import ScorerRun  # noqa: E402
from agentscore.scorers import (  # noqa: E402
    Scorer,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
)
from benchmarks.halueval_qa_cases import Case, load_cases  # noqa: E402

PEERS_VENV = ROOT / ".cache" / "peers-venv"
PEERS_WORK = ROOT / ".cache" / "peers-work"
SERVER = ROOT / "benchmarks" / "_judge_server.py"
# Verified to install and run together here (Python 3.11). deepeval and ragas alone resolve
# to langchain-community 0.4.2, which dropped the module ragas 0.4.3 imports
# (chat_models.vertexai), and to instructor 1.3.2 (2024); instructor is pinned to a current
# release and openai below 3, which langchain-openai requires.
PEER_PINS = (
    "deepeval==4.3.1",
    "ragas==0.4.3",
    "langchain-community==0.4.1",
    "instructor==1.17.0",
    "openai==2.54.0",
)
MODEL = "gpt-4o-mini"  # only a name: deepeval looks it up to decide on structured outputs

RUN: contextvars.ContextVar[str] = contextvars.ContextVar("bench_run", default="")
CASE: contextvars.ContextVar[str] = contextvars.ContextVar("bench_case", default="")


# -- the peers venv ------------------------------------------------------------------------


def ensure_peers_venv(rebuild: bool) -> tuple[str, float]:
    """(how the venv was had, seconds it took to create); creates it when pins changed."""
    stamp = PEERS_VENV / ".peers-pins.json"
    python = PEERS_VENV / "bin" / "python"
    if not rebuild and stamp.exists() and python.exists():
        data = json.loads(stamp.read_text())
        if data.get("pins") == list(PEER_PINS):
            return "reused", float(data["seconds"])
    if PEERS_VENV.exists():
        subprocess.run(["rm", "-rf", str(PEERS_VENV)], check=True)
    print(f"creating {PEERS_VENV.relative_to(ROOT)} with {' '.join(PEER_PINS)} ...", flush=True)
    started = time.perf_counter()
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(PEERS_VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True)
    subprocess.run([*pip, *PEER_PINS], check=True)
    seconds = time.perf_counter() - started
    stamp.write_text(json.dumps({"pins": list(PEER_PINS), "seconds": seconds}))
    return "created", seconds


# -- the judge server ----------------------------------------------------------------------


class JudgeProcess:
    def __init__(self, latency: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-u", str(SERVER), "--latency", str(latency)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            self.close()
            raise SystemExit(f"judge server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{line[1]}"

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(f"{self.url}/stats", timeout=10) as response:
            data: dict[str, Any] = json.load(response)
            return data

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()


# -- agentscore, in this process -----------------------------------------------------------


def tagged_client(base_url: str) -> AsyncOpenAI:
    async def tag(request: httpx.Request) -> None:
        request.headers["X-Bench-Run"] = RUN.get()
        if CASE.get():
            request.headers["X-Bench-Case"] = CASE.get()

    http = httpx.AsyncClient(
        event_hooks={"request": [tag]},
        limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100),
        timeout=60.0,
    )
    return AsyncOpenAI(api_key="agentscore", base_url=base_url, max_retries=0, http_client=http)


def new_judge(base_url: str) -> OpenAIJudge:
    return OpenAIJudge(MODEL, client=tagged_client(base_url), max_retries=0)


@dataclass
class Pass:
    wall_s: float
    scores: list[Any]
    case_seconds: list[float]
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    cache_hits: int = 0


async def agentscore_pass(
    judge: OpenAIJudge, cases: list[Case], run_name: str, limit: int, *, stepwise: bool
) -> Pass:
    RUN.set(run_name)
    limiter = anyio.CapacityLimiter(limit)
    scores: list[float | None] = [None] * len(cases)
    seconds = [0.0] * len(cases)
    outcome = Pass(0.0, scores, seconds)

    async def one(index: int, case: Case) -> None:
        async with limiter:
            CASE.set(str(case.id))
            scorer = create_faithfulness_scorer(
                judge, context=list(case.context), stepwise=stepwise
            )
            started = time.perf_counter()
            result = await scorer.run(ScorerRun(input=case.question, output=case.output))
            seconds[index] = time.perf_counter() - started
            outcome.calls += result.judge_usage.calls
            outcome.cache_hits += result.judge_usage.cache_hits
            if result.status == "failed" or result.score is None:
                outcome.errors.append(f"case {case.id}: {result.error}")
            else:
                scores[index] = result.score

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index, case in enumerate(cases):
            group.start_soon(one, index, case)
    outcome.wall_s = time.perf_counter() - started
    return outcome


async def run_agentscore(
    base_url: str, cases: list[Case], limit: int, repeat: int
) -> dict[str, list[Pass]]:
    passes: dict[str, list[Pass]] = {"agentscore": [], "agentscore-stepwise": []}
    await agentscore_pass(new_judge(base_url), cases[:1], "warmup", 1, stepwise=False)
    await agentscore_pass(new_judge(base_url), cases[:1], "warmup", 1, stepwise=True)
    judge = new_judge(base_url)
    for number in range(1, repeat + 1):
        judge = new_judge(base_url)  # a fresh cache for every measured first pass
        passes["agentscore"].append(
            await agentscore_pass(judge, cases, f"agentscore/r{number}", limit, stepwise=False)
        )
    # The second pass: the same judge, the same cases, served from its response cache.
    passes["agentscore-cache"] = [
        await agentscore_pass(judge, cases, "agentscore-cache/r1", limit, stepwise=False)
    ]
    for number in range(1, repeat + 1):
        passes["agentscore-stepwise"].append(
            await agentscore_pass(
                new_judge(base_url), cases, f"agentscore-stepwise/r{number}", limit, stepwise=True
            )
        )
    return passes


# -- the four-scorer set: faithfulness, hallucination, answer relevancy, completeness -------

SET = ("faithfulness", "hallucination", "answer relevancy", "completeness")


def set_scorers(judge: OpenAIJudge, case: Case) -> list[Scorer]:
    context = list(case.context)
    return [
        create_faithfulness_scorer(judge, context=context),
        create_hallucination_scorer(judge, context=context),
        create_answer_relevancy_scorer(judge),
        create_completeness_scorer(judge),
    ]


async def agentscore_set_pass(
    judge: OpenAIJudge, cases: list[Case], run_name: str, limit: int, *, together: bool
) -> Pass:
    """The set on each case: in one shared request (`together`), or each scorer alone."""
    RUN.set(run_name)
    limiter = anyio.CapacityLimiter(limit)
    outcome = Pass(0.0, [None] * len(cases), [0.0] * len(cases))

    async def one(index: int, case: Case) -> None:
        async with limiter:
            CASE.set(str(case.id))
            scorers = set_scorers(judge, case)
            run = ScorerRun(input=case.question, output=case.output)
            started = time.perf_counter()
            results: list[ScoreResult] = []
            if together:
                results = await score_generation(Generation.of(scorers), run, Scoring())
            else:
                async with anyio.create_task_group() as group:
                    for scorer in scorers:
                        group.start_soon(_append, results, scorer, run)
                results.sort(key=lambda r: [s.id for s in scorers].index(r.scorer_id))
            outcome.case_seconds[index] = time.perf_counter() - started
            outcome.calls += sum(result.judge_usage.calls for result in results)
            failed = [r for r in results if r.status == "failed" or r.score is None]
            if failed:
                outcome.errors.append(f"case {case.id}: {[str(r.error) for r in failed]}")
            else:
                outcome.scores[index] = [r.score for r in results]

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for index, case in enumerate(cases):
            group.start_soon(one, index, case)
    outcome.wall_s = time.perf_counter() - started
    return outcome


async def _append(results: list[ScoreResult], scorer: Scorer, run: ScorerRun) -> None:
    results.append(await scorer.run(run))


async def run_agentscore_set(
    base_url: str, cases: list[Case], limit: int, repeat: int
) -> dict[str, list[Pass]]:
    passes: dict[str, list[Pass]] = {"agentscore-set": [], "agentscore-set-alone": []}
    for together in (True, False):
        await agentscore_set_pass(new_judge(base_url), cases[:1], "warmup", 1, together=together)
    for number in range(1, repeat + 1):
        for name, together in (("agentscore-set", True), ("agentscore-set-alone", False)):
            judge = new_judge(base_url)  # a fresh cache: every request is paid for
            passes[name].append(
                await agentscore_set_pass(
                    judge, cases, f"{name}/r{number}", limit, together=together
                )
            )
    return passes


def set_table(rows: list[Row], base: Row) -> str:
    header = (
        "| library | requests/generation | prompt tokens/generation | completion tokens/"
        "generation | round trips (critical path) | wall time | requests vs agentscore | "
        "tokens vs agentscore | wall time vs agentscore |"
    )
    lines = [header, "|" + " --- |" * 9]
    base_tokens = base.prompt_tokens + base.completion_tokens
    for row in rows:
        trips = f"{row.round_trips:.2f}" + (
            f" (max {row.round_trips_max})" if row.round_trips_max != row.round_trips else ""
        )
        lines.append(
            f"| {row.name} | {row.requests:.2f} | {row.prompt_tokens:,.0f} | "
            f"{row.completion_tokens:,.0f} | {trips} | {row.wall_s:.2f} s | "
            f"{_ratio(row.requests, base.requests)} | "
            f"{_ratio(row.prompt_tokens + row.completion_tokens, base_tokens)} | "
            f"{_ratio(row.wall_s, base.wall_s)} |"
        )
    return "\n".join(lines)


def set_means(row: Row) -> str:
    columns = list(zip(*(scores for scores in row.scores if scores is not None), strict=True))
    return ", ".join(
        f"{name} {statistics.mean(column):.3f}" for name, column in zip(SET, columns, strict=True)
    )


# -- the peers, in the peers venv ----------------------------------------------------------


def run_peer(library: str, base_url: str, cases_file: Path, limit: int, repeat: int) -> list[Pass]:
    command = [str(PEERS_VENV / "bin" / "python"), str(ROOT / "benchmarks" / "_peer_runner.py")]
    command += [library, "--base-url", base_url, "--cases", str(cases_file), "--model", MODEL]
    command += ["--concurrency", str(limit), "--repeat", str(repeat)]
    env = {**os.environ, "OPENAI_API_KEY": "unused", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        command, cwd=PEERS_WORK, env=env, capture_output=True, text=True, timeout=600
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{library} runner failed with exit code {done.returncode}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return [
        Pass(item["wall_s"], item["scores"], item["case_seconds"], item["errors"])
        for item in report["passes"]
    ]


# -- figures -------------------------------------------------------------------------------


def critical_path(intervals: list[list[float]]) -> int:
    """The longest chain of requests in which each started after the previous one ended."""
    ordered = sorted(intervals)
    depth: list[int] = []
    for index, (start, _end) in enumerate(ordered):
        before = [depth[j] for j in range(index) if ordered[j][1] <= start]
        depth.append(1 + max(before, default=0))
    return max(depth, default=0)


@dataclass
class Row:
    name: str
    cases: int
    requests: float
    prompt_chars: float
    body_bytes: float
    round_trips: float
    round_trips_max: int
    wall_s: float
    walls: list[float]
    case_p50_s: float
    scores: list[Any]
    kinds: dict[str, int]
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0


def summarise(name: str, passes: list[Pass], stats: dict[str, Any], count: int) -> Row:
    problems: list[str] = []
    first: dict[str, Any] | None = None
    for number, one_pass in enumerate(passes, start=1):
        valid = sum(1 for score in one_pass.scores if score is not None)
        if valid < count or one_pass.errors:
            problems.append(f"pass {number}: {valid}/{count} scores; errors: {one_pass.errors[:3]}")
        run = stats.get(f"{name}/r{number}") or {
            "requests": 0,
            "prompt_chars": 0,
            "body_bytes": 0,
            "cases": {},
            "unrecognised": 0,
            "schema_mismatch": 0,
        }
        if run.get("unrecognised"):
            problems.append(f"pass {number}: {run['unrecognised']} requests were not recognised")
        if run.get("schema_mismatch"):
            problems.append(f"pass {number}: {run['schema_mismatch']} replies missed the schema")
        if first is None:
            first = run
        elif run["requests"] != first["requests"]:
            problems.append(
                f"requests varied between passes: {first['requests']} vs {run['requests']}"
            )
    if problems:
        raise SystemExit(f"{name} FAILED:\n  " + "\n  ".join(problems))
    assert first is not None
    depths = [critical_path(first["cases"].get(str(i), [])) for i in range(count)]
    walls = [one_pass.wall_s for one_pass in passes]
    return Row(
        name=name,
        cases=count,
        requests=first["requests"] / count,
        prompt_chars=first["prompt_chars"] / count,
        body_bytes=first["body_bytes"] / count,
        round_trips=statistics.mean(depths),
        round_trips_max=max(depths),
        wall_s=statistics.median(walls),
        walls=walls,
        case_p50_s=statistics.median(passes[0].case_seconds),
        scores=passes[0].scores,
        kinds=dict(first.get("kinds", {})),
        prompt_tokens=first.get("prompt_tokens", 0) / count,
        completion_tokens=first.get("completion_tokens", 0) / count,
    )


def _ratio(value: float, base: float) -> str:
    if base == 0:
        return "-"
    return f"{value / base:.2f}x"


def table(rows: list[Row], base: Row) -> str:
    header = (
        "| library | requests/case | prompt chars/case | request bytes/case | "
        "round trips (critical path) | wall time, 50 cases | requests vs agentscore | "
        "prompt chars vs agentscore | wall time vs agentscore | scores = agentscore's |"
    )
    lines = [header, "|" + " --- |" * 10]
    for row in rows:
        agree = sum(1 for a, b in zip(row.scores, base.scores, strict=True) if a == b)
        trips = f"{row.round_trips:.2f}" + (
            f" (max {row.round_trips_max})" if row.round_trips_max != row.round_trips else ""
        )
        lines.append(
            f"| {row.name} | {row.requests:.2f} | {row.prompt_chars:,.0f} | "
            f"{row.body_bytes:,.0f} | {trips} | {row.wall_s:.2f} s | "
            f"{_ratio(row.requests, base.requests)} | "
            f"{_ratio(row.prompt_chars, base.prompt_chars)} | {_ratio(row.wall_s, base.wall_s)} | "
            f"{agree}/{row.cases} |"
        )
    return "\n".join(lines)


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({model}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}"
    )


def peer_versions() -> dict[str, str]:
    code = (
        "import json; from importlib.metadata import version as v; "
        "print(json.dumps({n: v(n) for n in "
        "['deepeval', 'ragas', 'instructor', 'openai', 'langchain-community', 'pydantic']}))"
    )
    out = subprocess.run(
        [str(PEERS_VENV / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    versions: dict[str, str] = json.loads(out.stdout)
    return versions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--latency", type=float, default=0.2, help="judge seconds per request")
    parser.add_argument("--concurrency", type=int, default=8, help="cases in flight")
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3, help="measured passes per library")
    parser.add_argument("--rebuild-venv", action="store_true")
    args = parser.parse_args()

    total_started = time.perf_counter()
    venv_state, venv_seconds = ensure_peers_venv(args.rebuild_venv)
    cases = load_cases(args.cases)
    PEERS_WORK.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", suffix=".json", dir=PEERS_WORK, delete=False, encoding="utf-8"
    ) as handle:
        json.dump([case.to_json() for case in cases], handle)
        cases_file = Path(handle.name)

    server = JudgeProcess(args.latency)
    try:
        base_url = f"{server.url}/v1"
        passes = asyncio.run(run_agentscore(base_url, cases, args.concurrency, args.repeat))
        for library in ("deepeval", "ragas"):
            passes[library] = run_peer(library, base_url, cases_file, args.concurrency, args.repeat)
        passes.update(
            asyncio.run(run_agentscore_set(base_url, cases, args.concurrency, args.repeat))
        )
        for library in ("deepeval-set", "ragas-set"):
            passes[library] = run_peer(library, base_url, cases_file, args.concurrency, args.repeat)
        stats = server.stats()
    finally:
        server.close()
        cases_file.unlink(missing_ok=True)

    order = ["agentscore", "agentscore-stepwise", "agentscore-cache", "deepeval", "ragas"]
    rows = {name: summarise(name, passes[name], stats, len(cases)) for name in order}
    base = rows["agentscore"]
    cache_pass = passes["agentscore-cache"][0]
    if cache_pass.calls or stats.get("agentscore-cache/r1", {}).get("requests", 0):
        raise SystemExit(f"the cache pass sent {cache_pass.calls} judge requests; expected 0")

    versions = {"agentscore": version("agentscore"), **peer_versions()}
    print()
    print(
        f"Peers: faithfulness on {len(cases)} HaluEval QA cases, judge latency "
        f"{args.latency * 1000:.0f} ms per request, {args.concurrency} cases in flight, "
        f"median wall time of {args.repeat} passes (one warm-up case first, not counted)"
    )
    print(f"Machine: {machine()}")
    print("Versions: " + ", ".join(f"{name} {value}" for name, value in versions.items()))
    print(f"Peers venv: {venv_state} (creating it took {venv_seconds:.0f} s)")
    print()
    print(table([rows[name] for name in order], base))
    print()
    print(
        f"agentscore cache pass: {cache_pass.calls} judge requests, "
        f"{cache_pass.cache_hits} cache hits for {len(cases)} cases."
    )
    for name in order:
        row = rows[name]
        walls = ", ".join(f"{wall:.2f}" for wall in row.walls)
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(row.kinds.items()))
        print(
            f"{name}: wall times {walls} s; median case latency {row.case_p50_s * 1000:.0f} ms; "
            f"requests by prompt: {kinds or 'none'}"
        )
    mean_scores = {
        name: statistics.mean(s for s in rows[name].scores if s is not None) for name in order
    }
    print("mean score: " + ", ".join(f"{name} {value:.3f}" for name, value in mean_scores.items()))
    print(f"total run time {time.perf_counter() - total_started:.0f} s")

    targets = [
        ("requests <= half of deepeval's", base.requests <= rows["deepeval"].requests / 2),
        (
            "prompt chars <= half of deepeval's",
            base.prompt_chars <= rows["deepeval"].prompt_chars / 2,
        ),
        (
            "lowest wall time of the three",
            base.wall_s < min(rows["deepeval"].wall_s, rows["ragas"].wall_s),
        ),
    ]
    print("targets: " + "; ".join(f"{text}: {'met' if ok else 'NOT met'}" for text, ok in targets))

    set_order = ["agentscore-set", "agentscore-set-alone", "deepeval-set", "ragas-set"]
    set_rows = {name: summarise(name, passes[name], stats, len(cases)) for name in set_order}
    print()
    print(
        f"The four-scorer set per generation ({', '.join(SET)}), same cases, judge and "
        "concurrency; tokens as the judge counts them (characters / 4, the same rule for all)"
    )
    print()
    print(set_table([set_rows[name] for name in set_order], set_rows["agentscore-set"]))
    print()
    for name in set_order:
        row = set_rows[name]
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(row.kinds.items()))
        print(f"{name}: mean scores {set_means(row)}; requests by prompt: {kinds}")


if __name__ == "__main__":
    main()
