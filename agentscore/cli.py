"""The `agentscore` command: `demo`, `eval`, `compare`, `check` and `serve`."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="agentscore", description="Live faithfulness and hallucination scoring for agents."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser(
        "demo",
        help="run a support agent with live scorers (offline by default)",
        description="Offline unless OPENAI_API_KEY, --model or --judge say otherwise.",
    )
    demo.add_argument("--model", help="agent model on an OpenAI-compatible endpoint")
    demo.add_argument("--judge", help="'local' (default offline) or a judge model name")
    demo.add_argument(
        "--reasons",
        action="store_true",
        help="also show each claim with its verdict and the judge's reason",
    )

    evaluate = commands.add_parser(
        "eval",
        help="score recorded runs and conversations from a JSONL file, or stored traces",
        description="Exit status: 0 done; 1 when a scorer's pass rate is below --fail-under; "
        "2 for unusable arguments, input, --out file (a malformed line is named by file and "
        "line) or judge; 130 interrupted.",
    )
    evaluate.add_argument(
        "data",
        nargs="?",
        help="JSONL: one record per line, a run (input, output or messages, context) or a "
        "conversation (turns: [{input, output}, ...])",
    )
    evaluate.add_argument(
        "--traces",
        metavar="FILE",
        help="score stored traces instead (OTLP/JSON lines, or agentscore's JSONL export): "
        "their generations, each trace, and the traces sharing a conversation id",
    )
    evaluate.add_argument(
        "--scorer",
        "--scorers",
        dest="scorer",
        default="faithfulness,hallucination",
        help="comma-separated scorers: built-in names (faithfulness, hallucination, "
        "answer_relevancy, context_relevance, completeness (an LLM --judge); traces: "
        "tool_efficiency, task_completion; conversations: knowledge_retention, "
        "conversation_completeness) and your own as MODULE:ATTR (an Evals, a list of "
        "scorers or one), of any level",
    )
    evaluate.add_argument("--judge", default="local", help="'local' or a judge model name")
    evaluate.add_argument("--concurrency", type=int, default=8)
    evaluate.add_argument("--out", help="results JSONL; rerunning with it skips scored records")
    evaluate.add_argument(
        "--fail-under",
        type=float,
        metavar="RATE",
        help="exit 1 if a scorer's pass rate is below RATE, in [0, 1] (a CI gate); errors "
        "count as failures",
    )
    evaluate.add_argument(
        "--threshold",
        action="append",
        default=[],
        type=_threshold,
        metavar="SCORER=VALUE",
        help="pass line of one scorer, repeatable: faithfulness passes at or above it "
        "(default 0.8), hallucination at or below it (default 0.2)",
    )
    evaluate.add_argument(
        "--max-skip-rate",
        type=float,
        default=0.1,
        metavar="RATE",
        help="exit 2 if more than this share of the lines cannot be read (default 0.1)",
    )
    evaluate.add_argument(
        "--junit",
        metavar="FILE",
        help="write JUnit XML: one test case per target (record, turn, trace or "
        "conversation) and scorer",
    )
    evaluate.add_argument(
        "--markdown",
        metavar="FILE",
        help="write a markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)",
    )
    evaluate.add_argument(
        "--judge-price",
        type=_price,
        metavar="IN,OUT",
        help="dollars per million input and output tokens, for the cost in the markdown report",
    )
    evaluate.add_argument(
        "--estimate",
        action="store_true",
        help="print the judge requests, input and output tokens and cost the run would "
        "spend (cost from --judge-price or AGENTSCORE_JUDGE_PRICES), and send nothing",
    )
    evaluate.add_argument(
        "--max-consecutive-failures",
        type=int,
        default=20,
        metavar="N",
        help="stop with exit 2 after N scores in a row failed with the same judge error "
        "(unreachable, timeout, rate limit, 5xx, auth); 0 never stops (default 20)",
    )
    evaluate.add_argument(
        "--progress-every",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="when stderr is not a terminal, a progress line this often (default 5)",
    )

    compare = commands.add_parser(
        "compare",
        help="compare two `eval --out` results files: pass rates, means, flipped records",
        description="Pairs two `agentscore eval --out` results files by record id; lists at "
        "most 50 flipped records of each kind per scorer, and counts the rest. Exit status: "
        "0 done; 1 when a scorer's pass rate fell by more than --max-drop; 2 when a file is "
        "missing, holds no results or a malformed line (named by file and line), or an "
        "option is unusable.",
    )
    compare.add_argument("base", help="results JSONL of the reference run")
    compare.add_argument("new", help="results JSONL of the run to check")
    compare.add_argument(
        "--max-drop",
        type=float,
        metavar="POINTS",
        help="exit 1 if a scorer's pass rate fell by more than POINTS percentage points",
    )
    compare.add_argument(
        "--markdown",
        metavar="FILE",
        help="write the comparison as markdown (also appended to $GITHUB_STEP_SUMMARY)",
    )

    from agentscore.judges.check import CHECK_TIMEOUT

    check = commands.add_parser(
        "check",
        help="send each judge of your scorers one small request and report any problem",
        description="Exit 0 when every judge answered, 2 when one did not (a misspelled "
        "model, a refused key, an endpoint that cannot be reached or does not answer). The "
        "judges are asked at once, so the check ends within --timeout.",
    )
    check.add_argument("--scorers", required=True, help="MODULE:ATTR, an Evals or scorer list")
    check.add_argument(
        "--timeout",
        type=_positive_seconds,
        default=CHECK_TIMEOUT,
        metavar="SECONDS",
        help=f"deadline of the whole check: a judge that has not answered by then is "
        f"reported as not answering (default {CHECK_TIMEOUT:g} s)",
    )

    from agentscore.serve.command import add_serve_command, serve_command

    add_serve_command(commands)
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve_command(args)
    if args.command == "check":
        return _check(args.scorers, args.timeout)
    if args.command == "demo":
        from agentscore.demo import run_demo

        return run_demo(model=args.model, judge=args.judge, reasons=args.reasons)
    if args.command == "compare":
        from agentscore.ci.compare import run_compare

        return run_compare(args.base, args.new, max_drop=args.max_drop, markdown=args.markdown)
    from agentscore.ci import EvalOptions, run_eval_file

    if (args.data is None) == (args.traces is None):
        parser.error("eval takes a runs file or --traces FILE (one of them)")
    return run_eval_file(
        EvalOptions(
            data=args.traces or args.data,
            traces=args.traces is not None,
            scorers=[name.strip() for name in args.scorer.split(",") if name.strip()],
            judge=args.judge,
            concurrency=args.concurrency,
            out=args.out,
            fail_under=args.fail_under,
            thresholds=dict(args.threshold),
            max_skip_rate=args.max_skip_rate,
            junit=args.junit,
            markdown=args.markdown,
            judge_price=args.judge_price,
            max_consecutive_failures=args.max_consecutive_failures,
            progress_every=args.progress_every,
            estimate=args.estimate,
        )
    )


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds: {text!r}")
    return value


def _check(spec: str, timeout: float) -> int:
    from agentscore.errors import ConfigurationError
    from agentscore.serve.service import load_evals

    try:
        checks = load_evals(spec).check(timeout=timeout)
    except (ConfigurationError, ImportError, AttributeError) as exc:
        print(f"agentscore check: {exc}", file=sys.stderr)
        return 2
    for found in checks:
        where = f" at {found.endpoint}" if found.endpoint else " (offline)"
        print(f"{'ok' if found.ok else 'PROBLEM':<8}{found.model}{where}")
        if not found.ok:
            print(f"        {found.problem}")
    return 0 if all(found.ok for found in checks) else 2


def _threshold(text: str) -> tuple[str, float]:
    # One value for both scorers would loosen hallucination (lower is better) as it
    # tightens faithfulness, so each scorer is named.
    name, sep, value = text.partition("=")
    try:
        if not sep:
            raise ValueError
        return name.strip(), float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected SCORER=VALUE, e.g. faithfulness=0.8 or hallucination=0.2"
        ) from None


def _price(text: str) -> tuple[float, float]:
    prices = text.split(",")
    try:
        if len(prices) != 2 or any(float(p) < 0 for p in prices):
            raise ValueError
        return float(prices[0]), float(prices[1])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected IN,OUT dollars per million tokens, e.g. 0.15,0.6"
        ) from None


if __name__ == "__main__":
    sys.exit(main())
