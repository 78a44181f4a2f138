"""``--method count`` (edges on whole samples, Beilner's slow-clock model) on synthesized captures, against
simavr's truth: the same estimators on the exact edge list (every repetition of an exact run is the same,
so its mean is the truth whatever the number of repetitions)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pintime.cli import main
from pintime.pipeline import analyze, summary_json
from support import BUILD, SIM, run_cli

pytestmark = pytest.mark.usefixtures("make_sim")
ELF = BUILD / "firmware" / "user_example.elf"


def _synth(tmp_path, program: str, seed: int, *extra: str):
    wav = tmp_path / f"{program}-{seed}{''.join(extra).replace('-', '')}.wav"
    assert main(["synth", str(SIM / f"{program}.edges.csv"), "-o", str(wav), "--seed", str(seed),
                 *extra]) == 0
    return wav


@pytest.fixture(scope="module")
def table1_count(tmp_path_factory):
    wav = _synth(tmp_path_factory.mktemp("count"), "table1", 3, "--duration-s", "30")
    return summary_json(analyze(wav, "count")), summary_json(analyze(SIM / "table1.edges.csv"))


def _se(row: dict) -> float:
    lo, hi = row["model_ci95_us"]
    return (hi - lo) / 2 / 1.959963984540054


def test_every_table1_estimate_within_its_model_uncertainty(table1_count):
    found, exact = table1_count
    assert found["method"] == "count"
    slow = found["slow_clock"]
    assert slow["phases"]["uniform"] and slow["phases"]["edges"] >= 50
    assert slow["tick_us"] == pytest.approx(1e6 / 192000, rel=1e-4)  # a sample, in MCU µs (+23 ppm card)
    truth = {(r["technique"], r["n"]): r["mean_us"] for r in exact["table1"]}
    assert len(slow["table1"]) == len(truth) == 11
    for row in slow["table1"]:
        error = row["mean_us"] - truth[(row["technique"], row["n"])]
        assert abs(error) < 4 * _se(row), (row["label"], error, _se(row))
        assert row["count"] >= 14
    line20 = next(r for r in slow["table1"] if r["label"] == "Line fitting 1×–20×")
    lo, hi = line20["model_ci95_us"]
    assert lo < 100.0 < hi and hi - lo < 0.1  # 100 cycles at 1 MHz, to a fiftieth of a sample
    for key in ("t_e", "t_i", "epsilon"):
        m = slow["overdetermined"][key]
        assert abs(m["mean_us"] - exact["overdetermined"][key]["mean_us"]) < 4 * _se(m)


def test_one_pulse_rows_spread_as_beilners_variance(table1_count):
    """Direct and Executing N× have one pulse per repetition: the spread over repetitions is the count's
    variance f (1 − f) ticks², with f the fractional part of the width in ticks."""
    slow = table1_count[0]["slow_clock"]
    for row in slow["table1"]:
        if row["technique"] in ("direct", "executing"):
            assert row["std_ratio"] == pytest.approx(1.0, abs=0.15), row
            assert not row["differs"]


def test_locked_card_clock_is_found_and_said_loudly(tmp_path):
    wav = _synth(tmp_path, "table1", 4, "--duration-s", "30", "--locked-clock")
    out = tmp_path / "locked.json"
    code, printed, lines = run_cli(["analyze", wav, "--method", "count", "--json", out])
    assert code == 0, lines
    assert "WARNING: the edges' sample phases are NOT uniform" in printed
    phases = json.loads(out.read_text())["slow_clock"]["phases"]
    assert not phases["uniform"] and phases["p_value"] < 1e-6
    free = summary_json(analyze(_synth(tmp_path, "table1", 4, "--duration-s", "30"), "template"))
    assert "slow_clock" not in free  # the model belongs to the count method only


def test_user_functions_by_counting_samples(tmp_path):
    wav = _synth(tmp_path, "user_example", 2)
    result = summary_json(analyze(wav, "count", elf=ELF))
    rows = {r["name"]: r for r in result["slow_clock"]["user"]}
    assert set(rows) == {"mac16", "crc8_step", "crc8_branchy"}
    for name, cycles in (("mac16", 48), ("crc8_step", 93)):  # simavr: tests/sim/test_user_program.py
        assert abs(rows[name]["mean_us"] - cycles) < 4 * _se(rows[name])
        assert np.isclose(rows[name]["mean_us"], next(u for u in result["user"] if u["name"] == name)
                          ["time"]["mean_us"])


def test_table2_unknowns_by_counting_samples(tmp_path):
    """Table 2 from whole-sample edges: every block-model unknown (ε apart) within 4 model SE of its simavr
    cycles, the model beside each."""
    wav = _synth(tmp_path, "table2", 5, "--duration-s", "40")
    result = summary_json(analyze(wav, "count"))
    model = {r["label"]: r for r in result["slow_clock"]["table2"]}
    assert len(model) == len(result["table2"]) >= 5
    for row in result["table2"]:
        m = model[row["label"]]
        assert m["mean_us"] == pytest.approx(row["mean_us"]) and m["model_std_us"] > 0
        if "ε" not in row["label"]:  # ε holds the modelled pin's fall-minus-rise asymmetry too
            assert abs(m["mean_us"] - row["truth_cycles"]) < 4 * _se(m), row["label"]
