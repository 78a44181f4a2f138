"""Four signals on one stereo card: the kernel's pins PA0 … PA3 through the resistor ladder
(`pintime synth --ladder`, default profile, 192 kHz), RUN, CAL and two repetitions of the five
configurations. The truth is simavr's exact edges of each pin; the analyzer never reads the synthesizer's
ladder weights, gains or pin delays: it learns each channel's step sizes from the capture.
"""

from __future__ import annotations

import csv
import json

import pytest
from pintime.cli import main
from pintime.ladder import PIN_NAMES
from support import SIM, kernel_capture

REPS_IN_CAPTURE = 2


@pytest.fixture(scope="module")
def capture(make_sim, tmp_path_factory):
    """A ladder WAV that ends 150 ms after the second repetition's last KERNEL frame (N = 16 included:
    the chains of 3.3-sample insertion pulses)."""
    wav = tmp_path_factory.mktemp("ladder") / "kernel-ladder.wav"
    return kernel_capture(make_sim, wav, REPS_IN_CAPTURE, "--ladder", "--seed", "1")


@pytest.fixture(scope="module")
def validated(capture, tmp_path_factory):
    out = tmp_path_factory.mktemp("ladder-json") / "v.json"
    assert main(["validate", str(capture), "--ladder", "--truth", str(SIM / "kernel.json"),
                 "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_every_exact_edge_is_attributed_to_its_pin(validated):
    checks = {c["pin"]: c for c in validated["ladder_check"]}
    assert sorted(checks) == sorted(PIN_NAMES.values())
    for pin, c in checks.items():
        assert c["exact"] > 0, pin
        assert c["matched"] == c["exact"] == c["attributed"], c
        assert c["wrong_pin"] == c["missing"] == c["extra"] == 0, c
    assert validated["ladder"]["unattributed"] == 0
    assert validated["ladder"]["pin_edges"] == sum(c["exact"] for c in checks.values())


def test_kernel_figures_to_the_cycle(validated):
    """Scheduler, insertion (the 3.3-sample pulses), context switch and overhead: every figure rounds to
    simavr's cycles, and the scheduler's within its 95 % CI."""
    rows = {r["name"]: r for r in validated["kernel"]}
    assert {"insertion", "context switch"} <= set(rows)
    for name, r in rows.items():
        assert abs(r["mean_cycles"] - r["truth_cycles"]) < 0.01, name
        if name.startswith("scheduler"):
            assert abs(r["mean_us"] - r["truth_us"]) <= r["ci95_half_us"], name


def test_edges_gives_each_edge_its_pin(capture, tmp_path):
    out = tmp_path / "pins.csv"
    assert main(["edges", str(capture), "--ladder", "--csv", str(out)]) == 0
    with out.open() as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["time_s", "channel", "polarity", "sigma_s", "pin"]
    assert {r["pin"] for r in rows} == set(PIN_NAMES.values())
    assert all(PIN_NAMES[int(r["channel"])] == r["pin"] for r in rows)


def test_without_ladder_the_right_channel_is_refused_as_a_reference(capture, capsys):
    assert main(["analyze", str(capture)]) == 2
    err = capsys.readouterr().err
    assert "not a 1 s clock reference" in err and "--ladder" in err and err.count("\n") == 1
