"""What hostile inputs and replies cost the judges: time and peak memory per case.

- The local judge on JSON tool results that used to be quadratic (a flat list of 100,000
  numbers, nesting 10,000 deep, 900 deep and 900 wide) and on 200 numeric claims against
  130,000 numbers. Each case runs in a fresh process, so its peak RSS is its own.
- OpenAIJudge fed 2 MB replies (rejected: JudgeReplyTooLargeError) and 60 KB replies
  (accepted and cached, up to the cache's byte bound), 300 runs each, through the scripted
  endpoint and the real openai client: RSS growth over the runs.

Usage: python benchmarks/judge_limits.py
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_LOCAL_CASE = """
import json, resource, sys, time
from agentscore.scorers import create_hallucination_scorer
context, answer = json.loads(sys.stdin.read())
scorer = create_hallucination_scorer("local", context=[context])
started = time.perf_counter()
result = scorer.run_sync({"output": answer})
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps([result.status.value, result.score, seconds, peak]))
"""

_REPLY_CASE = """
import gc, json, resource, sys
from agentscore.judges import OpenAIJudge
from agentscore.scorers import create_faithfulness_scorer
from agentscore.testing import ScriptedEndpoint, chat_completion

reason_chars, runs = int(sys.argv[1]), int(sys.argv[2])

def reply(body):
    claims = [{"claim": "Python was created by Guido van Rossum.", "verdict": "yes",
               "reason": "r" * reason_chars}]
    return chat_completion({"claims": claims})

def rss_mb():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20

endpoint = ScriptedEndpoint(reply)
judge = OpenAIJudge("judge-model", client=endpoint.client())
scorer = create_faithfulness_scorer(judge, context=["Python was created by Guido van Rossum."])
kept = []  # results are kept, as agent.scores keeps them
scorer.run_sync({"output": "Python was created by Guido van Rossum. Warm-up."})
gc.collect()
start = rss_mb()
for n in range(runs):
    kept.append(scorer.run_sync({"output": f"Python was created by Guido van Rossum. Run {n}."}))
gc.collect()
errors = sorted({r.error.type for r in kept if r.error})
cache = judge._cache
print(json.dumps([start, rss_mb(), errors, len(cache), cache.nbytes]))
"""


def _local(name: str, context: str, answer: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOCAL_CASE],
        input=json.dumps([context, answer]),
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    status, score, seconds, peak = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"  {name:34} {len(context):>8,} chars  {status:7} score {score}  "
        f"{seconds:6.2f} s  peak RSS {peak:5.0f} MB"
    )


def _replies(reason_chars: int, runs: int) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _REPLY_CASE, str(reason_chars), str(runs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    start, end, errors, entries, nbytes = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"  {runs} runs, replies of {reason_chars / 1000:,.0f} KB: RSS {start:.0f} -> {end:.0f} MB "
        f"(+{end - start:.0f}); errors {errors or 'none'}; cache {entries} entries, "
        f"{nbytes / 2**20:.1f} MB"
    )


def main() -> None:
    answer = "The result is 0. The result is 7."
    print("local judge, one JSON tool result as context:")
    _local("flat list, 100,000 numbers", json.dumps([0] * 100_000), answer)
    _local("nested lists, 10,000 deep", "[" * 10_000 + "0" + "]" * 10_000, answer)
    _local("nested objects, 10,000 deep", '{"a": ' * 10_000 + "0" + "}" * 10_000, answer)
    wide = '{"a": ' * 900 + "[" + ",".join(["0"] * 900) + "]" + "}" * 900
    _local("900 deep, 900 wide", wide, answer)
    records = json.dumps([{"id": n, "status": "ok"} for n in range(12_000)])
    _local("12,000 records", records, answer)
    # The reason quotes the evidence's field as written: found by walking the tool result
    # again, up to the evidence; here the last record, the walk's worst case.
    _local("12,000 records, claim on the last", records, "Record 11999 has status ok.")
    numeric = " ".join(f"Item {n} has value {n * 7} and code {n * 13}." for n in range(200))
    _local("200 numeric claims, 130,000 numbers", json.dumps([0] * 130_000), numeric)
    _local("200 numeric claims, 50,000 numbers", json.dumps(list(range(50_000))), numeric)
    print("OpenAIJudge replies (scripted endpoint, real openai client):")
    _replies(2_000_000, 300)
    _replies(60_000, 300)


if __name__ == "__main__":
    main()
