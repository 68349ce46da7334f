"""`agentscore compare`: two real `eval --out` files, paired by record id."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentscore.ci.compare import compare_results, read_results
from agentscore.cli import main
from tests.test_cli import GROUNDED, WRONG, write_jsonl


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
    assert main(["compare", str(good), str(runs)]) == 2
    assert "no results in" in capsys.readouterr().err
    assert main(["compare", str(good), str(good), "--max-drop", "-1"]) == 2
    assert "--max-drop must be 0 or more" in capsys.readouterr().err
