"""`agentscore eval` with text that breaks naive line and markup handling: Unicode line
separators, lone surrogates, carriage returns, HTML and repeated ids. None of them may make a
record vanish from the results, the reports or the gate, or crash a run or its resume."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from junitparser import JUnitXml

from agentscore.ci._markdown import cell
from agentscore.cli import main
from tests.support.eval_cli import GROUNDED, WRONG, write_jsonl

# Every character `str.splitlines` ends a line at, and so every one a naive reader splits on.
LINE_BREAKS = "\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"


def rows_in(out: Path) -> list[dict[str, Any]]:
    """The results file read as JSONL is defined: lines end at "\\n" only."""
    return [json.loads(line) for line in out.read_text(encoding="utf-8").split("\n") if line]


def junit_tests(path: Path) -> dict[str, int]:
    return {suite.name: len(list(suite)) for suite in JUnitXml.fromfile(str(path))}


def claims_of(row: dict[str, Any], scorer: str = "faithfulness") -> str:
    return " ".join(claim["claim"] for claim in row["scores"][scorer]["failing_claims"])


@pytest.mark.parametrize("separator", ["\u0085", "\u2028", "\u2029"])
def test_a_failing_answer_holding_a_unicode_line_separator_keeps_failing_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], separator: str
) -> None:
    invented = {**WRONG, "output": f"Python was first{separator}released in 2005."}
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, invented, {**GROUNDED, "id": "g2"}])
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    argv = ["eval", str(data), "--scorer", "faithfulness", "--fail-under", "1.0"]

    assert main([*argv, "--out", str(out), "--junit", str(junit)]) == 1
    assert "faithfulness pass rate 66.7% below --fail-under 100.0%" in capsys.readouterr().err
    rows = {row["id"]: row for row in rows_in(out)}
    assert sorted(rows) == ["g2", "grounded", "wrong"]
    assert separator in claims_of(rows["wrong"])  # the character itself reached the results
    assert separator not in out.read_text(encoding="utf-8")  # written as a JSON escape
    assert junit_tests(junit) == {"faithfulness": 3}

    # Resumes find every record done, append nothing and keep failing the gate.
    for _ in range(2):
        assert main([*argv, "--out", str(out), "--junit", str(junit)]) == 1
        assert "resuming: 3 records already scored" in capsys.readouterr().out
        assert len(rows_in(out)) == 3
        assert junit_tests(junit) == {"faithfulness": 3}


def test_a_results_file_holding_raw_line_separators_is_read_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Files written before the separators were escaped hold them raw: still one record a line."""
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    argv = ["eval", str(data), "--scorer", "faithfulness", "--fail-under", "1.0", "--out", str(out)]
    assert main(argv) == 1
    rows = rows_in(out)
    rows[1]["scores"]["faithfulness"]["reason"] = "invented\u2028\u2029\x85 a year"
    out.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    capsys.readouterr()

    assert main([*argv, "--junit", str(junit)]) == 1
    assert "resuming: 2 records already scored" in capsys.readouterr().out
    assert len(rows_in(out)) == 2
    assert junit_tests(junit) == {"faithfulness": 2}


def test_a_lone_surrogate_in_an_id_is_written_safely_everywhere_and_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # json.dumps writes the escape `"\ud800"`, which JSON decodes to a lone surrogate.
    odd = {**WRONG, "id": "odd-\ud800-\udfff", "output": "Python was first released in 2005."}
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, odd])
    out, junit, report = (tmp_path / name for name in ("r.jsonl", "r.xml", "r.md"))
    argv = ["eval", str(data), "--scorer", "faithfulness", "--fail-under", "1.0", "--out", str(out)]
    argv += ["--junit", str(junit), "--markdown", str(report)]

    assert main(argv) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert sorted(row["id"] for row in rows_in(out)) == ["grounded", "odd-\ud800-\udfff"]
    assert junit_tests(junit) == {"faithfulness": 2}
    names = [case.name for suite in JUnitXml.fromfile(str(junit)) for case in suite]
    assert sorted(names) == ["grounded", "odd-\ufffd-\ufffd"]
    assert "| odd-\ufffd-\ufffd | 0 |" in report.read_text(encoding="utf-8")

    assert main(argv) == 1
    assert "resuming: 2 records already scored" in capsys.readouterr().out
    assert len(rows_in(out)) == 2


def test_failure_lines_on_stderr_hold_one_record_each_whatever_its_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    monkeypatch.setenv("OPENAI_API_KEY", "sk-unused-for-this-test-123456")
    monkeypatch.setenv("OPENAI_MAX_RETRIES", "0")
    data = write_jsonl(tmp_path / "runs.jsonl", [{**GROUNDED, "id": "x\ud800\nfake line\x1b[2J"}])
    argv = ["eval", str(data), "--judge", "m", "--scorer", "faithfulness"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    [failure] = [line for line in err.split("\n") if " failed with " in line]
    assert "(first: x\\ud800\\nfake line\\x1b[2J faithfulness: " in failure
    assert not any(line.startswith("fake line") for line in err.split("\n"))


def test_markdown_cells_hold_any_text_on_one_row_without_raw_html() -> None:
    hostile = f"a|b\\c <img src=x onerror=alert(1)> &amp; {LINE_BREAKS} \x00\x1b\x7f\x9b \ud800"
    shown = cell(hostile)
    assert len(shown.splitlines()) == 1
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]", shown)
    assert re.sub("<br>", "", shown).count("<") == 0 and ">" not in re.sub("<br>", "", shown)
    assert "&lt;img src=x onerror=alert(1)&gt;" in shown and "&amp;amp;" in shown
    assert re.findall(r"(?<!\\)\|", shown) == []  # every pipe escaped
    assert shown.count("<br>") == len(LINE_BREAKS)
    assert cell("a\r\nb") == "a<br>b"  # one break, as every renderer reads it


def test_the_markdown_report_keeps_one_row_per_record_whatever_its_text(tmp_path: Path) -> None:
    ids = ["cr\rid", "pipe|id", "<b>bold</b>&id", "nl\nid", "sep\u2028id", "\ud800"]
    answer = "Python was first released in 2005. <script>alert(1)</script>"
    records = [{**WRONG, "id": record_id, "output": answer} for record_id in ids]
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, *records])
    report = tmp_path / "report.md"
    argv = ["eval", str(data), "--scorer", "faithfulness", "--markdown", str(report)]
    assert main(argv) == 0

    text = report.read_text(encoding="utf-8")
    assert "\r" not in text and "<script>" not in text and "<b>" not in text
    assert "&lt;script&gt;" in text and "&lt;b&gt;bold&lt;/b&gt;&amp;id" in text
    worst = text.split("### Worst records: faithfulness (6 failing)")[1].strip().split("\n")
    table = [line for line in worst if line.startswith("|")]
    assert len(table) == 2 + 5  # header, rule and the five worst records
    for line in table:
        assert line.endswith(" |")
        assert len(re.findall(r"(?<!\\)\|", line)) == 4  # three cells, no pipe from the text


@pytest.mark.parametrize(
    "ids",
    [
        ["dup", "dup", "dup#2"],
        ["dup#2", "dup", "dup"],
        ["a", "a", "a#2", "a#3", "a", "a#2"],
        ["line-3", "x", None, None],  # a default `line-N` id meets an explicit one
    ],
)
def test_duplicate_ids_become_unique_ids_that_a_resume_recognises(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ids: list[str | None]
) -> None:
    records = []
    for record_id in ids:
        record: dict[str, Any] = {**GROUNDED}
        del record["id"]
        records.append(record if record_id is None else {**record, "id": record_id})
    data = write_jsonl(tmp_path / "runs.jsonl", records)
    out = tmp_path / "results.jsonl"
    argv = ["eval", str(data), "--out", str(out), "--scorer", "faithfulness"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    written = [row["id"] for row in rows_in(out)]
    assert len(written) == len(ids) and len(set(written)) == len(ids)
    # The first record of an id keeps it; each later one is named on stderr with its new id.
    given = [f"line-{n}" if rid is None else rid for n, rid in enumerate(ids, start=1)]
    repeated = {n for n, rid in enumerate(given, start=1) if rid in given[: n - 1]}
    found = re.findall(
        r":(\d+): duplicate id '([^']*)' \(first on line \d+\); recorded as '([^']*)'", err
    )
    assert {int(line) for line, _, _ in found} == repeated
    assert {new for _, _, new in found} == set(written) - set(given)
    assert set(written) == {rid for n, rid in enumerate(given, start=1) if n not in repeated} | {
        new for _, _, new in found
    }

    assert main(argv) == 0
    assert f"resuming: {len(ids)} records already scored" in capsys.readouterr().out
    assert sorted(row["id"] for row in rows_in(out)) == sorted(written)


def test_a_record_repeated_in_the_results_file_counts_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Resumes before the line fix appended a record again each time: the last line wins."""
    data = write_jsonl(tmp_path / "runs.jsonl", [GROUNDED, WRONG])
    out, junit = tmp_path / "results.jsonl", tmp_path / "report.xml"
    argv = ["eval", str(data), "--scorer", "faithfulness", "--out", str(out)]
    assert main(argv) == 0
    wrong = next(line for line in out.read_text().split("\n") if '"id": "wrong"' in line)
    with out.open("a") as file:
        file.write(f"{wrong}\n{wrong}\n")
    capsys.readouterr()

    assert main([*argv, "--junit", str(junit), "--fail-under", "0.5"]) == 0
    assert "faithfulness  0.500  50.0%      2       0" in capsys.readouterr().out
    assert junit_tests(junit) == {"faithfulness": 2}
