"""Clock calibration (pintime.clock) of the simavr run: exact to the cycle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from pintime.capture.edgelist import read_edge_list
from pintime.clock import calibrate, calibration_train_ppm
from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL
from pintime.frames import decode_frames
from support import SIM

pytestmark = pytest.mark.usefixtures("make_sim")


def test_simavr_run_calibrates_exactly():
    truth = json.loads((SIM / "table1.json").read_text())
    edges = read_edge_list(SIM / "table1.edges.csv")
    c = calibrate(edges)
    # reference edge k is exactly k · F_CPU/2 cycles after edge 0 (FORMAT.md §1)
    assert c.units_per_mcu_s == pytest.approx(truth["f_cpu_hz"], rel=1e-14)
    assert c.fit.n_edges == int(np.count_nonzero(edges.channel == REFERENCE_CHANNEL))
    assert c.residual_rms_us < 1e-6 and abs(c.fit.fall_offset) < 1e-6
    meas = edges.on(MEASUREMENT_CHANNEL)
    d = decode_frames(c.to_us(meas.time), meas.polarity)
    cal = d.of_kind("cal")[0]
    ppm, sigma, halves_ppm = calibration_train_ppm(c.to_us(meas.time[cal.group]), meas.polarity[cal.group],
                                                   cal.fields["period_cycles"], truth["f_cpu_hz"])
    assert abs(ppm) < 1e-6 and sigma < 1e-6 and abs(halves_ppm) < 1e-6
