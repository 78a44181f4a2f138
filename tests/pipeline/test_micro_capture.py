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


def test_pulses_too_short_for_the_locator_are_rejected_not_guessed(tmp_path):
    """The inflection locator cannot separate the interrupt entry and return pulses' edges (6–7 µs, about
    one sample at 192 kHz): their frames are rejected and counted, those two rows are absent, every other
    row is still estimated, and the report shows — in their cells beside the template capture's."""
    wav = tmp_path / "micro.wav"
    assert main(["synth", str(SIM / "micro.edges.csv"), "-o", str(wav), "--profile", "paper",
                 "--seed", "3", "--duration-s", "12"]) == 0
    results = []
    for method in ("template", "inflection"):
        out = tmp_path / f"{method}.json"
        code, _, lines = run_cli(["validate", wav, "--truth", SIM / "micro.json", "--method", method,
                                  "--json", out])
        assert code == 0, lines
        results.append(out)
    inflection = json.loads(results[1].read_text())
    kinds = {r["kind"] for r in inflection["micro"]}
    assert "entry" not in kinds and "return" not in kinds and len(inflection["micro"]) == len(BENCHMARKS) - 2
    assert inflection["frames"]["rejected"] > 0
    report = tmp_path / "report.md"
    assert main(["report", *map(str, results), "-o", str(report)]) == 0
    entry = next(line for line in report.read_text().splitlines() if line.startswith("| interrupt entry |"))
    assert entry.endswith(" | — |") and "6.000 ±" in entry
