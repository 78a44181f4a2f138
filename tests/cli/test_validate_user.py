"""``pintime validate`` on user programs (firmware/user/pintime.h): each function's time per call and ε
against the same line fit on simavr's exact edges, named from the ELF, as Table 1 rows are validated.

Truth here is simavr's (build/sim/user_example.*); tests/sim/test_user_program.py checks that those exact
slopes are the per-instruction cycle counts (mac16 48, crc8_step 93 cycles per call, CALL and RET included);
crc8_branchy's time depends on its data, so only the exact edges' own fit is its truth.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pintime.cli import main
from support import BUILD, ROOT, SIM, assert_fails, run_cli

ELF = BUILD / "firmware" / "user_example.elf"
TRUTH = SIM / "user_example.json"
FUNCTIONS = ["mac16", "crc8_step", "crc8_branchy"]  # PINTIME_FUNCTIONS order in user_example.c
EXPECTED_CYCLES = {"mac16": 48, "crc8_step": 93}  # the same on every call

pytestmark = pytest.mark.usefixtures("make_sim")


def _validate(tmp_path: Path, *argv: object) -> tuple[dict, str]:
    out = tmp_path / "v.json"
    code, printed, lines = run_cli(["validate", *argv, "--truth", TRUTH, "--json", out])
    assert code == 0, lines
    return json.loads(out.read_text()), printed


def test_exact_edges_are_their_own_truth(tmp_path, monkeypatch):
    """Names from the truth's ELF (its path is relative to the project, as `make sim` wrote it)."""
    monkeypatch.chdir(ROOT)
    result, printed = _validate(tmp_path, SIM / "user_example.edges.csv")
    assert [r["name"] for r in result["user"]] == FUNCTIONS
    for r in result["user"]:
        assert r["time"]["error_us"] == pytest.approx(0, abs=1e-9)
        if r["name"] in EXPECTED_CYCLES:
            assert r["time"]["truth_cycles"] == pytest.approx(EXPECTED_CYCLES[r["name"]], abs=1e-9)
            assert r["intercept"]["truth_cycles"] == pytest.approx(1, abs=1e-9)  # ε, FORMAT.md §5
    assert printed.startswith("Function") and "Technique" not in printed
    assert "mac16 per call" in printed and "crc8_step ε" in printed
    assert "(mac16: 48.000000 cycles per call, truth 48.000000, expected 48)" in printed
    assert "expected 94–110)" in printed and "OUTSIDE" not in printed


def test_synthesized_capture_against_the_truth(tmp_path):
    """A sound-card capture (default profile, template edges): every time per call within 3 ns of the
    exact one, and the error stated against it."""
    wav = tmp_path / "user.wav"
    assert main(["synth", str(SIM / "user_example.edges.csv"), "-o", str(wav), "--profile", "default",
                 "--seed", "5", "--duration-s", "5.5"]) == 0
    result, printed = _validate(tmp_path, wav, "--elf", ELF)
    assert [r["name"] for r in result["user"]] == FUNCTIONS
    for r in result["user"]:
        t = r["time"]
        assert t["error_us"] == pytest.approx(t["mean_us"] - t["truth_us"]) and r["reps"] >= 5
        assert r["outside_expectation"] is False  # inside what the listing expects
        if r["name"] in EXPECTED_CYCLES:
            assert t["truth_cycles"] == pytest.approx(EXPECTED_CYCLES[r["name"]], abs=1e-9)
            assert abs(t["error_us"]) < 0.003
        # crc8_branchy: the capture holds fewer repetitions than the exact run, each on other data, so its
        # mean differs from the exact run's by sampling (≈ 0.26 cycles std per repetition), not 3 ns
    assert set(result["edges"]) and "edges [template]" in printed  # per-edge errors of a WAV, as for table1


def test_truth_of_another_program_is_refused(tmp_path):
    line = assert_fails(["validate", SIM / "table1.edges.csv", "--truth", TRUTH], SIM / "table1.edges.csv")
    assert "user_example" in line and "table1" in line


def test_truth_elf_missing_is_named(tmp_path):
    """The truth names its ELF; gone, validate says so instead of naming the functions by number."""
    truth = json.loads(TRUTH.read_text()) | {"elf": str(tmp_path / "gone.elf")}
    (tmp_path / "t.json").write_text(json.dumps(truth))
    (tmp_path / "t.edges.csv").symlink_to(SIM / "user_example.edges.csv")
    argv = ["validate", tmp_path / "t.edges.csv", "--truth", tmp_path / "t.json"]
    assert_fails(argv, tmp_path / "gone.elf")


def test_report_shows_the_functions(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    _validate(tmp_path, SIM / "user_example.edges.csv")
    code, _, lines = run_cli(["report", tmp_path / "v.json", "-o", tmp_path / "r.md"])
    assert code == 0, lines
    text = (tmp_path / "r.md").read_text()
    assert "## Your functions" in text and "| mac16 | 48 | 48.0000 | 48.0000 (0) |" in text
    assert "| crc8_branchy | 94–110 |" in text
