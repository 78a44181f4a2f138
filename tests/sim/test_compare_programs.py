"""``pintime compare`` reads every program's ``analyze --json``: a result compared with itself gives one
row per estimate the JSON holds, each unchanged (simavr's exact edges of `make sim`'s runs)."""

from __future__ import annotations

import json

import pytest
from pintime.cli import main
from support import SIM, assert_fails

pytestmark = pytest.mark.usefixtures("make_sim")

EXTRA = {"table2": ["--visits", str(SIM / "table2.visits.csv")]}


def estimates(result: dict) -> int:
    """How many estimates the program's part of the JSON holds (docs/design.md §6)."""
    program = result["run"]["program"]
    if program == "table1":
        return len(result["table1"]) + 3 * ("overdetermined" in result)  # T_e, T_i, ε
    if program == "table2":
        return len(result["table2"]) + len(result["table2_exits"])
    return len(result[program])


@pytest.mark.parametrize("program", ["table1", "user_example", "micro", "kernel", "table2"])
def test_a_result_compared_with_itself_is_unchanged(tmp_path, capsys, program):
    result = tmp_path / "result.json"
    assert main(["analyze", str(SIM / f"{program}.edges.csv"), *EXTRA.get(program, []),
                 "--json", str(result)]) == 0
    out = tmp_path / "compare.json"
    assert main(["compare", str(result), str(result), "--json", str(out)]) == 0
    c = json.loads(out.read_text())
    assert len(c["changes"]) == estimates(json.loads(result.read_text())) > 0
    assert len({r["name"] for r in c["changes"]}) == len(c["changes"])  # names tell the rows apart
    for row in c["changes"]:
        assert row["change_cycles"] == 0 and row["verdict"] in ("no change the CIs can see",
                                                                "no CI (one repetition)"), row
    capsys.readouterr()


def test_not_an_analyze_result_is_refused(tmp_path):
    truth = SIM / "table1.json"  # simavr's run summary: JSON, but no analyze result
    assert_fails(["compare", truth, truth], "not a `pintime analyze --json` result")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert_fails(["compare", bad, truth], "bad.json: the analyze result is not JSON")
