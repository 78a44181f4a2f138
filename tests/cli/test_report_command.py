"""`pintime report`: the Markdown report assembled from `pintime validate --json` results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pintime.cli import main
from pintime.estimate.table1 import PAPER_TABLE1


@pytest.fixture(scope="module")
def validation(tmp_path_factory, make_sim) -> Path:
    """`pintime validate` of the exact table1 edge list, with figures."""
    out = tmp_path_factory.mktemp("report")
    result = out / "table1-exact.json"
    assert main(["validate", str(make_sim / "table1.edges.csv"), "--truth", str(make_sim / "table1.json"),
                 "--json", str(result), "--plots", str(out / "figures" / "table1-exact")]) == 0
    return result


def test_report_shows_paper_truth_and_estimates(validation, tmp_path, capsys):
    report = tmp_path / "report.md"
    assert main(["report", str(validation), "-o", str(report), "--figures", str(validation.parent)]) == 0
    assert capsys.readouterr().out.strip() == f"report: {report}"
    text = report.read_text()
    result = json.loads(validation.read_text())
    assert result["method"] == "exact"
    lines = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    for _, _, label, paper_mean, _ in PAPER_TABLE1:
        row = next(r for r in result["table1"] if r["label"] == label)
        assert f"{paper_mean:.3f}" in lines[label]  # the paper's value beside ours
        assert lines[label].count(f"{row['truth_us']:.4f}") == 2  # truth column and the exact capture
    assert "| Overdetermined T_i | — | 37.0000 | 37.0000" in text
    pngs = sorted(validation.parent.rglob("*.png"))
    assert pngs and all(f"![{p.stem}](" in text for p in pngs)


def test_report_refuses_bad_input(tmp_path, capsys):
    junk = tmp_path / "junk.json"
    junk.write_text('{"clock": 1}')
    assert main(["report", str(junk), "-o", str(tmp_path / "r.md")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a `pintime validate --json` result" in err
    assert main(["report", str(junk), "-o", str(junk)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err
    assert junk.read_text() == '{"clock": 1}'
