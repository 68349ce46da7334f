"""`agentscore compare`: two real `eval --out` files, paired by record id."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscore.ci.compare import SHOWN_FLIPS, compare_results, read_results
from agentscore.cli import main
from tests.support.eval_cli import GROUNDED, WRONG, write_jsonl


def scored(tmp_path: Path, name: str, wrong_ids: set[int], total: int = 20) -> Path:
    """A results file of a real local-judge run where the records in `wrong_ids` invent."""
    records = [{**(WRONG if n in wrong_ids else GROUNDED), "id": f"r{n}"} for n in range(total)]
    data = write_jsonl(tmp_path / f"{name}-runs.jsonl", records)
    out = tmp_path / f"{name}.jsonl"
    assert main(["eval", str(data), "--out", str(out), "--scorer", "faithfulness"]) in (0, 1)
    return out


def test_five_records_flipped_to_fail_are_listed_and_fail_max_drop(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = scored(tmp_path, "base", wrong_ids={0})
    new = scored(tmp_path, "new", wrong_ids={0, 3, 7, 11, 15, 19})
    capsys.readouterr()
    report = tmp_path / "compare.md"

    assert main(["compare", str(base), str(new), "--max-drop", "1", "--markdown", str(report)]) == 1
    captured = capsys.readouterr()
    flipped = [
        line.split()[3].rstrip(":") for line in captured.out.splitlines() if "pass -> fail" in line
    ]
    assert sorted(flipped) == sorted(["r3", "r7", "r11", "r15", "r19"])
    out = captured.out
    # Both reasons of each flip, the base one first.
    base_reason = read_results(base)["r3"]["scores"]["faithfulness"]["reason"]
    new_reason = read_results(new)["r3"]["scores"]["faithfulness"]["reason"]
    assert f"  pass -> fail  r3: 1 -> 0\n    base: {base_reason}\n    new:  {new_reason}" in out
    assert "faithfulness  95.0%      70.0%     -25.0 pts" in out
    assert "20 paired records (one record moves the pass rate 5.0 points)" in out
    assert "5 pass->fail, 0 fail->pass: exact McNemar p = 0.0625, could be chance" in out
    assert "pass rate fell beyond --max-drop 1: faithfulness -25.0 points" in captured.err

    markdown = report.read_text()
    assert (
        "| faithfulness | 95.0% | 70.0% | -25.0 pts | 0.950 | 0.700 | -0.250 | 5 | 0 |" in markdown
    )
    assert markdown.count("| pass -> fail |") == 5

    assert main(["compare", str(base), str(new), "--max-drop", "30"]) == 0
    assert main(["compare", str(base), str(new)]) == 0


def test_a_big_enough_shift_is_called_significant_and_improvements_are_not_drops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = scored(tmp_path, "base", wrong_ids=set(range(10)), total=30)
    new = scored(tmp_path, "new", wrong_ids=set(), total=30)
    capsys.readouterr()
    assert main(["compare", str(base), str(new), "--max-drop", "0"]) == 0
    out = capsys.readouterr().out
    assert "0 pass->fail, 10 fail->pass: exact McNemar p = 0.00195, unlikely to be chance" in out
    assert out.count("fail -> pass") == 10


def test_errors_count_as_fails_and_unpaired_records_are_named(tmp_path: Path) -> None:
    entry = {"score": 1.0, "passed": True, "status": "scored", "reason": "fine", "error": None}
    broken = {
        **entry,
        "score": None,
        "passed": None,
        "status": "failed",
        "reason": None,
        "error": {"type": "JudgeTimeoutError", "message": "no answer in 30 s"},
    }
    skipped = {**entry, "passed": None, "status": "no_claims", "score": 0.0}
    base_rows = [
        {"id": "a", "scores": {"faithfulness": entry}},
        {"id": "b", "scores": {"faithfulness": entry}},
        {"id": "c", "scores": {"faithfulness": entry}},
        {"id": "only-base", "scores": {"faithfulness": entry}},
    ]
    new_rows = [
        {"id": "a", "scores": {"faithfulness": broken}},
        {"id": "b", "scores": {"faithfulness": skipped}},
        {"id": "c", "scores": {"faithfulness": entry}},
    ]
    base = write_jsonl(tmp_path / "base.jsonl", base_rows)
    new = write_jsonl(tmp_path / "new.jsonl", new_rows)
    [change] = compare_results(read_results(base), read_results(new))
    assert change.paired == 2  # b had nothing to judge in the new run
    assert [flip.record_id for flip in change.to_fail] == ["a"]
    assert change.to_fail[0].new_reason == "error: JudgeTimeoutError: no answer in 30 s"
    assert change.drop_points == pytest.approx(50.0)


def test_unusable_files_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "a", "scores": {}}])
    runs = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED])  # an input file, not results
    assert main(["compare", str(tmp_path / "missing.jsonl"), str(good)]) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert main(["compare", str(good), str(runs)]) == 2
    assert f"{runs}:1: a record to score, not its result" in capsys.readouterr().err
    assert main(["compare", str(empty), str(good)]) == 2
    assert "no results in" in capsys.readouterr().err
    assert main(["compare", str(good), str(good), "--max-drop", "-1"]) == 2
    assert "--max-drop must be 0 or more" in capsys.readouterr().err


ENTRY = {"score": 1.0, "passed": True, "status": "scored", "reason": "fine", "error": None}


def entry_with(**changes: object) -> dict[str, object]:
    entry = {**ENTRY, **changes}
    return {key: value for key, value in entry.items() if value is not ...}


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        ({"id": "x", "scores": {"faithfulness": entry_with(score="0.9")}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=[1])}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=None)}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=True)}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=float("nan"))}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=10**400)}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(score=...)}}, "score"),
        ({"id": "x", "scores": {"faithfulness": entry_with(status=...)}}, "status"),
        ({"id": "x", "scores": {"faithfulness": entry_with(status=3)}}, "status"),
        ({"id": "x", "scores": {"faithfulness": entry_with(passed="yes")}}, "passed"),
        ({"id": "x", "scores": {"faithfulness": entry_with(error="boom")}}, "error"),
        ({"id": "x", "scores": {"faithfulness": entry_with(reason=["r"])}}, "reason"),
        ({"id": "x", "scores": {"faithfulness": "passed"}}, "faithfulness"),
        ({"id": "x", "scores": ["faithfulness"]}, "scores"),
        ({"id": "x"}, "scores"),
        ({"scores": {"faithfulness": ENTRY}}, "id"),
        ({"id": ["x"], "scores": {"faithfulness": ENTRY}}, "id"),
        ({"id": "x", "error": {"e": 1}, "scores": {}}, "error"),
        ([{"id": "x", "scores": {}}], "object"),
        ("x", "object"),
        (None, "object"),
    ],
)
def test_a_malformed_results_line_is_a_clear_usage_error_naming_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: object, said: str
) -> None:
    good = [{"id": "a", "scores": {"faithfulness": ENTRY}}, {"id": "b", "scores": {}}]
    base = write_jsonl(tmp_path / "base.jsonl", good)
    new = write_jsonl(tmp_path / "new.jsonl", [*good, bad, {"id": "c", "scores": {}}])
    for argv in ([str(base), str(new)], [str(new), str(base), "--max-drop", "0"]):
        assert main(["compare", *argv]) == 2
        err = capsys.readouterr().err
        assert f"agentscore compare: {new}:3: " in err
        assert said in err.split(f"{new}:3: ")[1]
        assert "Traceback" not in err


def test_a_line_that_is_not_json_is_an_error_unless_it_is_the_last_one_cut_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write_jsonl(tmp_path / "good.jsonl", [{"id": "a", "scores": {"faithfulness": ENTRY}}])
    torn = tmp_path / "torn.jsonl"
    torn.write_text(good.read_text() + '{"id": "b", "sco')  # an interrupted run's last line
    assert main(["compare", str(good), str(torn)]) == 0
    middle = tmp_path / "middle.jsonl"
    middle.write_text('{"id": "b", "sco\n' + good.read_text())
    capsys.readouterr()
    assert main(["compare", str(good), str(middle)]) == 2
    assert f"{middle}:1: not valid JSON" in capsys.readouterr().err


def test_compare_help_gives_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "0 " in text and "1 when a scorer's pass rate fell by more than --max-drop" in text
    assert "2 when a file is missing, holds no results or a malformed line" in text
    assert f"at most {SHOWN_FLIPS} flipped records of each kind" in text


def flipped_files(tmp_path: Path, count: int) -> tuple[Path, Path]:
    failing = {**ENTRY, "score": 0.0, "passed": False, "reason": "invented " + "x" * 150}
    base = [{"id": f"r{n}", "scores": {"faithfulness": ENTRY}} for n in range(count)]
    new = [{"id": f"r{n}", "scores": {"faithfulness": failing}} for n in range(count)]
    base += [{"id": f"up{n}", "scores": {"faithfulness": failing}} for n in range(3)]
    new += [{"id": f"up{n}", "scores": {"faithfulness": ENTRY}} for n in range(3)]
    return write_jsonl(tmp_path / "base.jsonl", base), write_jsonl(tmp_path / "new.jsonl", new)


def test_thousands_of_flips_make_a_bounded_report_that_counts_what_it_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = flipped_files(tmp_path, 5000)
    report = tmp_path / "compare.md"
    assert main(["compare", str(base), str(new), "--markdown", str(report), "--max-drop", "1"]) == 1
    out = capsys.readouterr().out

    markdown = report.read_text()
    assert len(markdown) < 40_000
    assert markdown.count("| pass -> fail |") == 50
    assert markdown.count("| fail -> pass |") == 3  # fewer than the cap: all of them
    assert "4950 more pass -> fail records not shown" in markdown
    assert "| faithfulness | 99.9% | 0.1% | -99.9 pts | 0.999 | 0.001 | -0.999 | 5000 | 3 |" in (
        markdown
    )
    assert len(out) < 40_000
    assert out.count("  pass -> fail  ") == 50 and out.count("  fail -> pass  ") == 3
    assert "4950 more pass -> fail records not shown" in out
    assert "5000 pass->fail, 3 fail->pass" in out


def test_a_record_id_or_reason_of_any_text_is_printed_on_its_own_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    failing = {**ENTRY, "score": 0.0, "passed": False, "reason": "bad\nnew: faked\u2028line"}
    odd = "odd\ud800\r\x1b[31m"
    base = write_jsonl(tmp_path / "base.jsonl", [{"id": odd, "scores": {"faithfulness": ENTRY}}])
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": odd, "scores": {"faithfulness": failing}}])
    report = tmp_path / "compare.md"
    assert main(["compare", str(base), str(new), "--markdown", str(report)]) == 0
    out = capsys.readouterr().out
    assert "  pass -> fail  odd\\ud800\\r\\x1b[31m: 1 -> 0\n" in out
    assert "    new:  bad\\nnew: faked\\u2028line\n" in out
    assert "| odd\ufffd<br>\ufffd[31m | pass -> fail |" in report.read_text(encoding="utf-8")


def test_scorer_ids_of_any_text_stay_on_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scorer = "faith\nfulness\ud800"
    failing = {**ENTRY, "score": 0.0, "passed": False}
    base = write_jsonl(tmp_path / "base.jsonl", [{"id": "a", "scores": {scorer: ENTRY}}])
    new = write_jsonl(tmp_path / "new.jsonl", [{"id": "a", "scores": {scorer: failing}}])
    assert main(["compare", str(base), str(new), "--max-drop", "1"]) == 1
    captured = capsys.readouterr()
    assert "\nfaith\\nfulness\\ud800  100.0%" in captured.out
    assert "--max-drop 1: faith\\nfulness\\ud800 -100.0 points" in captured.err
