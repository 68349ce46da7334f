"""`agentscore eval`: batch scoring of recorded runs from a JSONL file, resumable."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import structlog

from agentscore import errors
from agentscore.adapters import coerce_messages
from agentscore.ci._eval_failures import Breaker, FailureTally, JudgeKeepsFailing
from agentscore.ci._eval_progress import Progress
from agentscore.ci._failing import failing_claims
from agentscore.ci._jsonl import dump_line, read_lines
from agentscore.ci._junit import write_junit
from agentscore.ci._markdown import publish, render_eval
from agentscore.ci._one_line import one_line
from agentscore.ci._results_file import ResultsFileError, read_result_rows
from agentscore.ci._table import render_table
from agentscore.ci.batch import EvalItemResult, run_evals_sync, split_messages
from agentscore.context import run_context
from agentscore.errors import ConfigurationError
from agentscore.judges.base import Judge
from agentscore.judges.check import explain
from agentscore.judges.resolve import resolve_judge
from agentscore.scorers import (
    answer_relevancy,
    completeness,
    context_relevance,
    create_answer_relevancy_scorer,
    create_completeness_scorer,
    create_context_relevance_scorer,
    create_faithfulness_scorer,
    create_hallucination_scorer,
    faithfulness,
    hallucination,
)
from agentscore.scorers.base import Scorer

__all__ = ["EvalOptions", "run_eval_file"]

# Each scorer by name, from the judge and its pass line; context is each record's own.
_SCORERS: dict[str, Callable[[Judge, float], Scorer]] = {
    "faithfulness": lambda judge, threshold: create_faithfulness_scorer(
        judge, get_context=run_context, threshold=threshold
    ),
    "hallucination": lambda judge, threshold: create_hallucination_scorer(
        judge, get_context=run_context, threshold=threshold
    ),
    "answer_relevancy": lambda judge, threshold: create_answer_relevancy_scorer(
        judge, threshold=threshold
    ),
    "context_relevance": lambda judge, threshold: create_context_relevance_scorer(
        judge, get_context=run_context, threshold=threshold
    ),
    "completeness": lambda judge, threshold: create_completeness_scorer(judge, threshold=threshold),
}
_DEFAULT_THRESHOLDS = {
    "faithfulness": faithfulness.DEFAULT_THRESHOLD,
    "hallucination": hallucination.DEFAULT_THRESHOLD,
    "answer_relevancy": answer_relevancy.DEFAULT_THRESHOLD,
    "context_relevance": context_relevance.DEFAULT_THRESHOLD,
    "completeness": completeness.DEFAULT_THRESHOLD,
}
_HEADERS = ["scorer", "mean", "pass rate", "scored", "failed", "no context"]
# Every way a judge can refuse: a 404 model, a 400, a refused key, no connection, a timeout...
_JUDGE_ERRORS = frozenset(
    cls.__name__
    for cls in vars(errors).values()
    if isinstance(cls, type) and issubclass(cls, errors.JudgeError)
)


@dataclass(frozen=True, slots=True)
class EvalOptions:
    data: str
    scorers: list[str]
    judge: str = "local"
    concurrency: int = 8
    out: str | None = None
    fail_under: float | None = None
    # Per scorer; a scorer not named keeps its factory's default.
    thresholds: Mapping[str, float] = field(default_factory=dict)
    max_skip_rate: float = 0.1
    traces: bool = False  # `data` holds traces: score the generations found in them
    junit: str | None = None
    markdown: str | None = None
    # Dollars per million input and output tokens, for the cost in the markdown report.
    judge_price: tuple[float, float] | None = None
    max_consecutive_failures: int = 20
    progress_every: float = 5.0
    # Print the judge requests, tokens and cost the run would spend, and send nothing.
    estimate: bool = False


def run_eval_file(options: EvalOptions) -> int:
    """Exit status: 0 ok, 1 below --fail-under, 2 unusable arguments, input or judge (or the
    judge kept failing), 130 interrupted."""
    problem = _check_options(options)
    if problem:
        print(f"agentscore eval: {problem}", file=sys.stderr)
        return 2
    duplicates: list[tuple[int, str]] = []
    notes: list[str] = []
    nothing_found: str | None = None
    if options.traces:
        from agentscore.ci._eval_traces import read_trace_items

        traces = read_trace_items(Path(options.data))
        items, malformed, notes = traces.items, traces.malformed, traces.notes()
        skipped = traces.skipped
        nothing_found = traces.nothing_found(options.data)
    else:
        items, malformed, duplicates = _read_items(Path(options.data))
        skipped = len(malformed)
    for line, reason in malformed:
        where = f"{options.data}:{line}" if line else options.data
        print(f"agentscore eval: {where}: skipped: {one_line(reason)}", file=sys.stderr)
    for line, reason in duplicates:
        print(f"agentscore eval: {options.data}:{line}: {one_line(reason)}", file=sys.stderr)
    for note in notes:
        print(f"agentscore eval: {options.data}: {one_line(note)}", file=sys.stderr)
    problem = _check_input(options, len(items), skipped, nothing_found)
    if problem:
        print(f"agentscore eval: {problem}", file=sys.stderr)
        return 2
    if options.out:
        _drop_partial_last_line(Path(options.out))
    try:
        done = {row["id"] for row in _saved_rows(options.out)}
    except ResultsFileError as exc:
        print(f"agentscore eval: --out {_unusable(exc)}", file=sys.stderr)
        return 2
    todo = [item for item in items if item["id"] not in done]
    if len(todo) < len(items):
        print(f"resuming: {len(items) - len(todo)} records already scored in {options.out}")

    if options.estimate:
        from agentscore.ci._eval_estimate import print_estimate

        return print_estimate(
            todo, options.judge, lambda judge: _build_scorers(options, judge), options.judge_price
        )
    judge = resolve_judge(options.judge)
    try:
        scorers = _build_scorers(options, judge)
    except ConfigurationError as exc:  # e.g. completeness with --judge local
        print(f"agentscore eval: {exc}", file=sys.stderr)
        return 2
    state = _RunState(
        todo=todo,
        output=_Output(Path(options.out) if options.out else None),
        progress=Progress(len(todo), every=options.progress_every),
        breaker=Breaker(options.max_consecutive_failures),
    )
    started = time.monotonic()
    try:
        with _failures_summarised():
            stopped = _score(state, scorers, options.concurrency)
    except KeyboardInterrupt:
        state.close()
        hint = (
            f"{len(state.rows)} of {len(todo)} records scored and saved in {options.out}; "
            "run the same command again to resume"
            if options.out
            else "nothing was saved; add --out FILE to make a run resumable"
        )
        print(f"\nagentscore eval: interrupted: {hint}", file=sys.stderr)
        return 130
    state.close()

    try:
        rows = _saved_rows(options.out) if options.out else state.rows
    except ResultsFileError as exc:  # the file changed under the run
        print(f"agentscore eval: --out {_unusable(exc)}", file=sys.stderr)
        return 2
    summary = _summarize(rows, scorers)
    print(render_table(_HEADERS, summary.table))
    for failure in state.failures.lines():
        print(f"agentscore eval: {one_line(failure)}", file=sys.stderr)
    for scorer_id, count in summary.no_context.items():
        print(
            f"agentscore eval: {scorer_id}: {count} record(s) had no context and were not "
            "scored (neither passed nor failed); give each record a 'context' or 'documents' "
            "list, or tool results in its output",
            file=sys.stderr,
        )
    _write_reports(options, rows, scorers, summary, time.monotonic() - started)
    if stopped is not None:
        saved = f"saved in {options.out}; rerun to resume" if options.out else "not saved"
        print(
            f"agentscore eval: stopped: {stopped} (first: {one_line(stopped.example)}); "
            f"{len(state.rows)} of {len(todo)} records done, {saved}. Check the judge "
            "(OPENAI_BASE_URL / OPENAI_API_KEY), or use --judge local; "
            "--max-consecutive-failures sets the limit (0: never stop)",
            file=sys.stderr,
        )
        return 2
    if summary.refused:
        print("agentscore eval: every judge request failed:", file=sys.stderr)
        for error_type, message in sorted(summary.refused.items()):
            print(f"  {one_line(explain(error_type, message, options.judge))}", file=sys.stderr)
        print(
            "agentscore eval: nothing was judged; fix the judge (agentscore check tells what "
            "is wrong), or use --judge local",
            file=sys.stderr,
        )
        return 2
    if options.fail_under is not None:
        below = [
            f"{scorer_id} pass rate {'-' if rate is None else f'{rate:.1%}'}"
            for scorer_id, rate in summary.pass_rates.items()
            if rate is None or rate < options.fail_under
        ]
        if below:
            print(
                f"agentscore eval: {', '.join(below)} below --fail-under {options.fail_under:.1%}",
                file=sys.stderr,
            )
            return 1
    return 0


def _build_scorers(options: EvalOptions, judge: Judge) -> list[Scorer]:
    return [
        _SCORERS[name](judge, options.thresholds.get(name, _DEFAULT_THRESHOLDS[name]))
        for name in options.scorers
    ]


def _score(state: _RunState, scorers: list[Scorer], concurrency: int) -> JudgeKeepsFailing | None:
    """Score the records; the breaker's verdict when it stopped the run."""
    stopped: list[JudgeKeepsFailing] = []
    try:
        run_evals_sync(state.todo, scorers, concurrency=concurrency, on_item_complete=state.record)
    except* JudgeKeepsFailing as group:
        stopped += [e for e in group.exceptions if isinstance(e, JudgeKeepsFailing)]
    return stopped[0] if stopped else None


@contextmanager
def _failures_summarised() -> Iterator[None]:
    """Silence the per-record `scorer_failed` warning while a run counts failures itself:
    10,000 failing records would otherwise print 20,000 lines."""
    processors = structlog.get_config()["processors"]

    def drop(_logger: object, _method: str, event: MutableMapping[str, Any]) -> Any:
        if event.get("event") == "scorer_failed":
            raise structlog.DropEvent
        return event

    structlog.configure(processors=[drop, *processors])
    try:
        yield
    finally:
        structlog.configure(processors=processors)


def _write_reports(
    options: EvalOptions,
    rows: list[dict[str, Any]],
    scorers: list[Scorer],
    summary: _Summary,
    seconds: float,
) -> None:
    if options.junit:
        write_junit(Path(options.junit), rows, [scorer.id for scorer in scorers], seconds)
    if options.markdown or os.environ.get("GITHUB_STEP_SUMMARY"):
        text = render_eval(
            title=options.data,
            headers=_HEADERS,
            summary=summary.table,
            rows=rows,
            higher_is_better={scorer.id: scorer.higher_is_better for scorer in scorers},
            judge=options.judge,
            price=options.judge_price,
        )
        publish(text, options.markdown)


def _check_options(options: EvalOptions) -> str | None:
    unknown = [name for name in options.scorers if name not in _SCORERS]
    if unknown or not options.scorers:
        return f"unknown scorer(s) {unknown}; choose from {sorted(_SCORERS)}"
    path = Path(options.data)
    if path.is_dir():
        return f"cannot read {options.data!r}: it is a directory; give a JSONL file"
    if not path.is_file():
        return f"cannot read {options.data!r}: no such file"
    if options.concurrency < 1:
        return "--concurrency must be at least 1"
    if options.max_consecutive_failures < 0:
        return "--max-consecutive-failures must be 0 (never stop) or more"
    if options.progress_every <= 0:
        return "--progress-every must be a positive number of seconds"
    for name, value in options.thresholds.items():
        if name not in _SCORERS:
            return f"--threshold names an unknown scorer {name!r}; choose from {sorted(_SCORERS)}"
        if not 0 <= value <= 1:
            return f"--threshold {name}={value:g} must lie in [0, 1]"
    if options.fail_under is not None and not 0 <= options.fail_under <= 1:
        return f"--fail-under {options.fail_under:g} must lie in [0, 1] (a pass rate)"
    if not 0 <= options.max_skip_rate <= 1:
        return f"--max-skip-rate {options.max_skip_rate:g} must lie in [0, 1]"
    if (
        options.judge != "local"
        and not options.estimate  # an estimate sends nothing
        and not (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))
    ):
        return (
            f"the judge {options.judge!r} needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local "
            "OpenAI-compatible server); use --judge local to score offline"
        )
    return None


def _check_input(
    options: EvalOptions, readable: int, skipped: int, nothing_found: str | None
) -> str | None:
    if not readable and nothing_found:
        return nothing_found
    if not readable:
        found = f"{skipped} lines skipped" if skipped else "the file is empty"
        return (
            f"no readable records in {options.data!r} ({found}); expected JSONL: one JSON "
            "object per line with input and output, or messages"
        )
    rate = skipped / (readable + skipped)
    if rate > options.max_skip_rate:
        return (
            f"{skipped} of {readable + skipped} records skipped ({rate:.0%}), more than "
            f"--max-skip-rate {options.max_skip_rate:.0%}"
        )
    return None


def _read_items(
    path: Path,
) -> tuple[list[dict[str, Any]], list[tuple[int, str]], list[tuple[int, str]]]:
    """The records, the lines skipped and why, and the duplicate ids."""
    items: list[dict[str, Any]] = []
    numbers: list[int] = []
    malformed: list[tuple[int, str]] = []
    for line in read_lines(path):
        try:
            item = _item(json.loads(line.text), line.number)
        except json.JSONDecodeError as exc:
            malformed.append((line.number, f"not valid JSON ({exc.msg})"))
            continue
        except (TypeError, ValueError, RecursionError) as exc:
            malformed.append((line.number, str(exc) or type(exc).__name__))
            continue
        items.append(item)
        numbers.append(line.number)
    return items, malformed, _number_repeats(items, numbers)


def _number_repeats(items: list[dict[str, Any]], numbers: list[int]) -> list[tuple[int, str]]:
    """Give each record after the first of its id a new id (`a#2`, `a#3`...), so that each
    keeps its own line in the results and a resume knows which are done. A new id is never
    one the file gives another record, and depends on the file alone, so a resume gives the
    same. Returns a note for each record renamed, by line."""
    taken = {item["id"] for item in items}
    first_line: dict[str, int] = {}
    last_suffix: Counter[str] = Counter()
    duplicates: list[tuple[int, str]] = []
    for item, number in zip(items, numbers, strict=True):
        record_id = item["id"]
        if record_id not in first_line:
            first_line[record_id] = number
            continue
        suffix = max(last_suffix[record_id], 1) + 1
        while f"{record_id}#{suffix}" in taken:
            suffix += 1
        last_suffix[record_id] = suffix
        item["id"] = f"{record_id}#{suffix}"
        taken.add(item["id"])
        duplicates.append(
            (
                number,
                f"duplicate id {record_id!r} (first on line {first_line[record_id]}); "
                f"recorded as {item['id']!r}",
            )
        )
    return duplicates


def _item(record: object, line: int) -> dict[str, Any]:
    """A record as `run_evals` takes it. `messages` (a whole conversation) is split at the
    last user message into input and output."""
    if not isinstance(record, Mapping):
        raise ValueError("a record must be a JSON object")
    record = split_messages(record)
    if "input" not in record or "output" not in record:
        raise ValueError("a record needs 'input' and 'output' (or 'messages')")
    context = record.get("context")
    if context is not None and not (
        isinstance(context, str)
        or (isinstance(context, list) and all(isinstance(c, str) for c in context))
    ):
        raise ValueError("'context' must be a string or a list of strings")
    documents = record.get("documents")
    if documents is not None and not (
        isinstance(documents, list) and all(isinstance(d, str) for d in documents)
    ):
        raise ValueError("'documents' must be a list of strings")
    coerce_messages(record["output"])  # reject unusable shapes here, with the line number
    return {**record, "id": str(record.get("id") or f"line-{line}")}


def _drop_partial_last_line(path: Path) -> None:
    """An interrupted run can leave half a line; cut it so new lines start clean."""
    if not path.is_file():
        return
    with path.open("rb+") as file:
        data = file.read()
        if data and not data.endswith(b"\n"):
            file.truncate(data.rfind(b"\n") + 1)


def _saved_rows(out: str | None) -> list[dict[str, Any]]:
    """One row per record id, the last line of each winning (as in `agentscore compare`):
    a file concatenated, or appended to by an older version, counts each record once."""
    path = Path(out) if out else None
    if path is None or not path.is_file():
        return []
    return list({row["id"]: row for row in read_result_rows(path)}.values())


def _unusable(exc: ResultsFileError) -> str:
    return (
        f"{exc.path}:{exc.line}: {one_line(exc.problem)}; give a results file this command "
        "wrote, or a new file name"
    )


@dataclass(slots=True)
class _RunState:
    """What one run keeps as records finish: rows, failures, progress and the breaker."""

    todo: list[dict[str, Any]]
    output: _Output
    progress: Progress
    breaker: Breaker
    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: FailureTally = field(default_factory=FailureTally)

    def record(self, result: EvalItemResult) -> None:
        record_id = self.todo[result.index]["id"]
        row = _row(record_id, result)
        if not self.output.write(row):
            return
        self.rows.append(row)
        self.progress.advance()
        if result.error is not None:
            self.failures.add(result.error.partition(":")[0], record_id, result.error)
        for scorer_id, score in result.scorer_results.items():
            where = f"{record_id} {scorer_id}"
            if score.error is None:
                self.breaker.observe(None, where)
                continue
            self.failures.add(score.error.type, where, score.error.message)
            self.breaker.observe(score.error.type, f"{where}: {score.error.message}")

    def close(self) -> None:
        self.output.close()
        self.progress.close()


def _row(record_id: str, result: EvalItemResult) -> dict[str, Any]:
    return {
        "id": record_id,
        "error": result.error,
        "scores": {
            scorer_id: {
                "score": score.score,
                "passed": score.passed,
                "label": score.label,
                "status": score.status.value,
                "reason": score.reason,
                "error": None if score.error is None else score.error.model_dump(),
                "failing_claims": failing_claims(score),
                "judge_calls": score.judge_usage.calls,
                "input_tokens": score.judge_usage.input_tokens,
                "output_tokens": score.judge_usage.output_tokens,
            }
            for scorer_id, score in result.scorer_results.items()
        },
    }


class _Output:
    """The results file. After an interruption the scoring thread may still finish items; a
    closed output ignores them, so the file only holds whole lines."""

    def __init__(self, path: Path | None) -> None:
        self._lock = threading.Lock()
        self._file: TextIO | None = path.open("a", encoding="utf-8") if path else None
        self._closed = False

    def write(self, row: dict[str, Any]) -> bool:
        with self._lock:
            if self._closed:
                return False
            if self._file is not None:
                self._file.write(dump_line(row))
                self._file.flush()
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            if self._file is not None:
                self._file.close()


@dataclass(slots=True)
class _Summary:
    table: list[list[str]]
    pass_rates: dict[str, float | None]
    refused: dict[str, str]  # error type -> one message, when every judge request failed
    no_context: dict[str, int]  # scorers with records they had no context for


def _summarize(rows: list[dict[str, Any]], scorers: list[Scorer]) -> _Summary:
    """Like `batch.summarize`: a record that errored before scoring counts as failed for
    every scorer, and failures count against the pass rate; a record with no context is
    counted apart, outside the mean and the pass rate."""
    table, rates, failed_entries, no_context = [], {}, [], {}
    item_errors = sum(1 for row in rows if row.get("error"))
    for scorer in scorers:
        entries = [row["scores"][scorer.id] for row in rows if scorer.id in row.get("scores", {})]
        scores = [e["score"] for e in entries if e.get("status") == "scored"]
        verdicts = [bool(e["passed"]) for e in entries if e.get("passed") is not None]
        failures = [e for e in entries if e.get("status") == "failed"]
        missing = sum(1 for e in entries if e.get("status") == "no_context")
        failed_entries += [e.get("error") or {} for e in failures]
        failed = len(failures) + item_errors
        judged = len(verdicts) + failed
        rate = sum(verdicts) / judged if judged else None
        rates[scorer.id] = rate
        table.append(
            [
                scorer.id,
                f"{sum(scores) / len(scores):.3f}" if scores else "-",
                f"{rate:.1%}" if rate is not None else "-",
                str(len(scores)),
                str(failed),
                str(missing),
            ]
        )
        if missing:
            no_context[scorer.id] = missing
    # Runs that needed no judge (no claims) neither count as refused nor as judged.
    judged = sum(
        1
        for row in rows
        for entry in row.get("scores", {}).values()
        if entry.get("status") in ("scored", "failed")
    )
    refused = {
        error.get("type", ""): str(error.get("message", ""))
        for error in failed_entries
        if error.get("type") in _JUDGE_ERRORS
    }
    everything_refused = judged and len(failed_entries) == judged
    all_judge_errors = all(error.get("type") in _JUDGE_ERRORS for error in failed_entries)
    refused_all = refused if everything_refused and all_judge_errors else {}
    return _Summary(table, rates, refused_all, no_context)
