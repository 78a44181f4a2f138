"""The micro-benchmarks through a modelled sound card: a short synthesized capture of program micro
(build/sim/micro.*) validated against simavr's exact edges, as `make reproduce` does for whole runs."""

from __future__ import annotations

import json

import pytest
from pintime.cli import main
from pintime.estimate.micro import BENCHMARKS
from support import SIM, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")


@pytest.mark.parametrize("profile", ["default", "paper"])
def test_short_capture_resolves_every_benchmark(tmp_path, profile):
    """RUN, CAL and a few repetitions (12 s of a 42 s run): every benchmark within a tenth of a cycle of
    its truth, so it rounds to the truth's cycles, and no more outside its 95 % CI than chance allows
    (the expected count + 3 binomial standard deviations)."""
    wav = tmp_path / "micro.wav"
    assert main(["synth", str(SIM / "micro.edges.csv"), "-o", str(wav), "--profile", profile,
                 "--seed", "3", "--duration-s", "12"]) == 0
    out = tmp_path / "v.json"
    code, printed, lines = run_cli(["validate", wav, "--truth", SIM / "micro.json", "--json", out])
    assert code == 0, lines
    result = json.loads(out.read_text())
    rows = result["micro"]
    assert [r["name"] for r in rows] == [b.label for b in BENCHMARKS]
    for r in rows:
        assert r["count"] >= 3
        assert abs(r["mean_cycles"] - r["truth_cycles"]) < 0.1, r["name"]
        assert round(r["mean_cycles"]) == round(r["truth_cycles"])
    c = result["micro_coverage"]
    assert c["total"] == len(BENCHMARKS)
    assert c["outside"] <= c["expected"] + 3 * c["expected_sd"]
    assert "micro coverage" in printed and "Micro-benchmark" in printed
    report = tmp_path / "report.md"
    assert main(["report", str(out), "-o", str(report)]) == 0
    text = report.read_text()
    assert "## Micro-benchmarks" in text and "| interrupt entry | 10 ¹ | 6.000 |" in text
    assert f"{c['outside']} of {len(BENCHMARKS)} outside their 95 % CI" in text
