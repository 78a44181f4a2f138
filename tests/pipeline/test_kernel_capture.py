"""A kernel capture through the modelled sound card (pintime synth, 192 kHz stereo: the measurement pin and
the clock reference): RUN, CAL and two repetitions of the five configurations, about 4.6 s of audio.

The truth is simavr's exact edges (validate); the card's pin asymmetry comes from the profile, which the
analyzer never reads: it measures it on the calibration train.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from pintime.cli import main
from pintime.soundcard.model import get_profile
from support import SIM, kernel_capture, run_json

REPS_IN_CAPTURE = 2
SCHEDULER_ROWS = 7  # fixed part, per thread, N = 1, 2, 4, 8, 16


@pytest.fixture(scope="module")
def capture(make_sim, tmp_path_factory):
    """A default-profile WAV that ends 150 ms after the second repetition's last KERNEL frame."""
    wav = tmp_path_factory.mktemp("kernel") / "kernel-default.wav"
    return kernel_capture(make_sim, wav, REPS_IN_CAPTURE, "--profile", "default", "--seed", "3")


@pytest.fixture(scope="module")
def validated(capture, tmp_path_factory):
    out = tmp_path_factory.mktemp("kernel-json") / "v.json"
    assert main(["validate", str(capture), "--truth", str(SIM / "kernel.json"), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def test_scheduler_figures_within_their_ci(validated):
    rows = validated["kernel"]
    assert len(rows) == SCHEDULER_ROWS  # no insertion or switch pin on a stereo card with a reference
    assert all(r["count"] == REPS_IN_CAPTURE for r in rows)
    for r in rows:
        assert abs(r["mean_us"] - r["truth_us"]) <= r["ci95_half_us"], r["name"]
    per_thread = next(r for r in rows if r["name"] == "scheduler per thread")
    assert round(per_thread["mean_cycles"]) == round(per_thread["truth_cycles"])
    assert per_thread["ci95_half_cycles"] < 0.01  # resolved far below a cycle


def test_pin_asymmetry_measured_on_the_train(validated):
    """The correction the ticks get is the card's fall-minus-rise asymmetry, found from the train alone."""
    fit = validated["kernel_fit"]
    expected_us = get_profile("default").asymmetry_s() * 1e6
    assert fit["fall_minus_rise_us"] == pytest.approx(expected_us, abs=4 * fit["fall_minus_rise_sigma_us"])


def test_analyze_prints_the_scheduler_only(capture, capsys, tmp_path):
    out = run_json(capsys, tmp_path, "analyze", str(capture))
    assert [r["name"] for r in out["kernel"]][:2] == ["scheduler fixed part", "scheduler per thread"]
    assert main(["analyze", str(capture)]) == 0
    text = capsys.readouterr().out
    assert "no insertion (PA1) or switch (PA2) pulses" in text
    assert np.isfinite(out["kernel_fit"]["fall_minus_rise_us"])
