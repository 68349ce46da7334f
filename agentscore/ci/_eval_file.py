"""`agentscore eval`: batch scoring of recorded runs from a JSONL file, resumable."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO

import structlog

from agentscore import errors
from agentscore.ci._eval_failures import Breaker, FailureTally, JudgeKeepsFailing
from agentscore.ci._eval_progress import Progress
from agentscore.ci._eval_records import missing_in_records, read_record_targets
from agentscore.ci._eval_scorers import (
    NAMED,
    choose_scorers,
    estimated_scorers,
    unknown_names,
)
from agentscore.ci._eval_targets import LEVELS, EvalTarget, levels_of
from agentscore.ci._failing import due, failing_claims
from agentscore.ci._jsonl import dump_line
from agentscore.ci._junit import write_junit
from agentscore.ci._markdown import publish, render_eval
from agentscore.ci._one_line import one_line
from agentscore.ci._results_file import ResultsFileError, read_result_rows
from agentscore.ci._table import render_table
from agentscore.ci.batch import EvalItemResult, score_targets_sync
from agentscore.errors import ConfigurationError
from agentscore.judges.check import explain
from agentscore.run import Level
from agentscore.scorers.base import Scorer

__all__ = ["EvalOptions", "run_eval_file"]

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
    # Built-in names and `MODULE:ATTR` (an Evals, a list of scorers or one), of any level.
    scorers: list[str]
    judge: str = "local"
    concurrency: int = 8
    out: str | None = None
    fail_under: float | None = None
    # Per built-in scorer; a scorer not named keeps its factory's default.
    thresholds: Mapping[str, float] = field(default_factory=dict)
    max_skip_rate: float = 0.1
    traces: bool = False  # `data` holds traces: score their generations, traces, conversations
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
    try:
        scorers = choose_scorers(options.scorers, options.judge, options.thresholds)
    except ConfigurationError as exc:  # e.g. completeness with --judge local
        print(f"agentscore eval: {one_line(exc)}", file=sys.stderr)
        return 2
    levels = levels_of(scorers)
    if options.traces:
        from agentscore.ci._eval_traces import read_trace_items

        traces = read_trace_items(Path(options.data), levels)
        targets, malformed, renamed = traces.targets, traces.malformed, traces.renamed
        notes, readable, skipped = traces.notes(), len(traces.targets), traces.skipped
        missing: Callable[[Level], str] = partial(traces.missing, data=options.data)
    else:
        records = read_record_targets(Path(options.data), levels)
        targets, malformed, renamed = records.targets, records.malformed, records.renamed
        notes, readable, skipped = [], records.records, len(records.malformed)
        missing = partial(missing_in_records, data=options.data)
    for line, reason in malformed:
        where = f"{options.data}:{line}" if line else options.data
        print(f"agentscore eval: {where}: skipped: {one_line(reason)}", file=sys.stderr)
    for line, reason in renamed:
        where = f"{options.data}:{line}" if line else options.data
        print(f"agentscore eval: {where}: {one_line(reason)}", file=sys.stderr)
    for note in notes:
        print(f"agentscore eval: {options.data}: {one_line(note)}", file=sys.stderr)
    found = {level for target in targets for level in target.runs}
    absent = [missing(level) for level in LEVELS if level in levels and level not in found]
    if options.traces and not targets:
        for reason in absent:
            print(f"agentscore eval: {one_line(reason)}", file=sys.stderr)
        return 2
    problem = _check_input(options, readable, skipped)
    if problem:
        print(f"agentscore eval: {problem}", file=sys.stderr)
        return 2
    for reason in absent:
        print(f"agentscore eval: {one_line(reason)}", file=sys.stderr)
    if not targets:
        return 2
    if options.out:
        _drop_partial_last_line(Path(options.out))
    try:
        done = {row["id"] for row in _saved_rows(options.out)}
    except ResultsFileError as exc:
        print(f"agentscore eval: --out {_unusable(exc)}", file=sys.stderr)
        return 2
    todo = [target for target in targets if target.id not in done]
    if len(todo) < len(targets):
        print(f"resuming: {len(targets) - len(todo)} records already scored in {options.out}")

    if options.estimate:
        from agentscore.ci._eval_estimate import print_estimate

        return print_estimate(
            [target.runs for target in todo],
            options.judge,
            lambda judge: estimated_scorers(options.scorers, judge, options.thresholds),
            options.judge_price,
        )
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


def _score(state: _RunState, scorers: list[Scorer], concurrency: int) -> JudgeKeepsFailing | None:
    """Score the records; the breaker's verdict when it stopped the run."""
    stopped: list[JudgeKeepsFailing] = []
    try:
        score_targets_sync(
            [target.runs for target in state.todo],
            scorers,
            concurrency=concurrency,
            on_item_complete=state.record,
        )
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
        levels = {scorer.id: scorer.level for scorer in scorers}
        write_junit(Path(options.junit), rows, levels, seconds)
    if options.markdown or os.environ.get("GITHUB_STEP_SUMMARY"):
        text = render_eval(
            title=options.data,
            headers=_HEADERS,
            summary=summary.table,
            rows=rows,
            scorers=[(scorer.id, scorer.level, scorer.higher_is_better) for scorer in scorers],
            judge=options.judge,
            price=options.judge_price,
        )
        publish(text, options.markdown)


def _check_options(options: EvalOptions) -> str | None:
    unknown = unknown_names(options.scorers)
    if unknown or not options.scorers:
        return (
            f"unknown scorer(s) {unknown}; choose from {sorted(NAMED)}, or give your own "
            "as MODULE:ATTR (an Evals, a list of scorers or one scorer)"
        )
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
        if name not in NAMED:
            return (
                f"--threshold names an unknown scorer {name!r}; choose from {sorted(NAMED)} "
                "(a scorer of your own keeps the threshold it was made with)"
            )
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


def _check_input(options: EvalOptions, readable: int, skipped: int) -> str | None:
    if not readable:
        found = f"{skipped} lines skipped" if skipped else "the file is empty"
        return (
            f"no readable records in {options.data!r} ({found}); expected JSONL: one JSON "
            "object per line with input and output, or messages, or turns (a conversation)"
        )
    rate = skipped / (readable + skipped)
    if rate > options.max_skip_rate:
        return (
            f"{skipped} of {readable + skipped} records skipped ({rate:.0%}), more than "
            f"--max-skip-rate {options.max_skip_rate:.0%}"
        )
    return None


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

    todo: list[EvalTarget]
    output: _Output
    progress: Progress
    breaker: Breaker
    rows: list[dict[str, Any]] = field(default_factory=list)
    failures: FailureTally = field(default_factory=FailureTally)

    def record(self, result: EvalItemResult) -> None:
        target = self.todo[result.index]
        record_id = target.id
        row = _row(target, result)
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


def _row(target: EvalTarget, result: EvalItemResult) -> dict[str, Any]:
    return {
        "id": target.id,
        "level": target.level,
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
    every scorer of its level, and failures count against the pass rate; a record with no
    context is counted apart, outside the mean and the pass rate."""
    table, rates, failed_entries, no_context = [], {}, [], {}
    for scorer in scorers:
        item_errors = sum(
            1 for row in rows if row.get("error") and due(row, scorer.id, scorer.level)
        )
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
