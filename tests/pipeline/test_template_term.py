"""The learned template's shared error in the analysis: in every CI of a capture located with a template
learned from its train, said to be missing when the template was learned without one, absent for exact
edges; and rounding's, on a 16-bit recording quieter than one LSB."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import scipy.special
import soundfile as sf
from pintime import pipeline
from pintime.estimate.estimators import CI_LEVEL
from pintime.locate.shape.quantization import DRAWS as ROUNDING_DRAWS
from pintime.locate.shape.template_error import DRAWS
from pintime.locate.stream.capture_edges import locate_capture
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format, with_level
from pintime.soundcard.synth import synthesize
from support import EXAMPLE_WAV, run_cli


def test_every_estimate_of_a_located_capture_holds_the_template_term():
    a = pipeline.analyze(EXAMPLE_WAV)
    assert a.template_draws == DRAWS and a.rounding_lsb is None  # 24 bits: no rounding shared
    t_reps = scipy.special.stdtrit(2 - 1, (1 + CI_LEVEL) / 2)
    t_draws = scipy.special.stdtrit(DRAWS, (1 + CI_LEVEL) / 2)
    for row in a.result.rows:
        e = row.estimate
        assert 0 < e.template_sigma_us < 1e-3  # a few ps to ns at the profile's own level
        reps_half = t_reps * e.std_us / np.sqrt(e.count)
        half = (e.ci95_us[1] - e.ci95_us[0]) / 2
        assert half == pytest.approx(np.hypot(reps_half, t_draws * e.template_sigma_us))
    code, out, _ = run_cli(["analyze", str(EXAMPLE_WAV)])
    assert code == 0 and re.search(rf"^edge shape: +its error is in every CI: σ up to \d+\.\d{{4}} ns "
                                   rf"\(.+\), from {DRAWS} draws of it$", out, re.M), out


def test_exact_edges_have_no_template_term(make_sim):
    a = pipeline.analyze(make_sim / "table1.edges.csv")
    assert a.template_draws == 0 and all(r.estimate.template_sigma_us == 0 for r in a.result.rows)
    code, out, _ = run_cli(["analyze", str(make_sim / "table1.edges.csv")])
    assert code == 0 and "edge shape" not in out


def test_a_template_learned_without_a_train_says_its_error_is_not_in_the_cis(tmp_path):
    """The example capture with its calibration train silenced: the template is learned blind from the
    other edges, nothing draws its error, and the output says so."""
    train = locate_capture(EXAMPLE_WAV).train
    assert train is not None
    data, rate = sf.read(EXAMPLE_WAV, dtype="int32")
    start = int(train.first_samples) - 200
    stop = int(train.first_samples + train.edges * train.period_samples) + 200
    data[start:stop, 0] = np.median(data[:start, 0])
    silenced = tmp_path / "no-train.wav"
    sf.write(silenced, data, rate, subtype="PCM_24")
    a = pipeline.analyze(silenced)
    assert a.template_draws == 0 and all(r.estimate.template_sigma_us == 0 for r in a.result.rows)
    code, out, _ = run_cli(["analyze", str(silenced)])
    assert code == 0
    assert "The learned edge shape's error is NOT in these CIs (learned without a calibration train" in out


def test_rounding_below_one_lsb_is_in_every_ci(make_sim, tmp_path):
    """The first 8 s of table1 through `wide-filter` at 48 kHz 16-bit mono and README's level: its analog
    noise is a tenth of an LSB, the pin's levels round alike in every repetition, and the Differential rows
    read 7–11 ns off with a CI of ± 3.4 ns before (docs/results.md, "Quantization without dither"). Now the
    rounding's draws are in every CI and the output says so; the same render at 24 bits has none."""
    truth = {r.label: r.estimate.mean_us for r in pipeline.analyze(make_sim / "table1.edges.csv").result.rows}
    card = with_level(with_format(sc.PROFILES["wide-filter"], 48000, 16, 1), "readme")
    wav = synthesize(make_sim / "table1.edges.csv", tmp_path / "w16.wav", card, 1, duration_s=8).wav_path
    a = pipeline.analyze(wav)
    assert a.rounding_lsb is not None and a.rounding_lsb[1] < 0.3 and 1000 < a.rounding_lsb[0] < 1200
    t_draws = scipy.special.stdtrit(ROUNDING_DRAWS, (1 + CI_LEVEL) / 2)
    for row in a.result.rows:
        e = row.estimate
        if row.label.startswith("Differential"):
            assert e.quantization_sigma_us > 2e-3  # a few ns: more than the template's noise draws give
            assert e.ci95_us[0] <= truth[row.label] <= e.ci95_us[1]
        half = (e.ci95_us[1] - e.ci95_us[0]) / 2
        assert half >= t_draws * e.quantization_sigma_us
    code, out, _ = run_cli(["analyze", str(wav), "--json", str(tmp_path / "w16.out.json")])
    assert code == 0 and re.search(r"^rounding: +quieter than one LSB \(0\.\d\d LSB of noise beneath steps "
                                   r"of \d+ LSB\), in every CI: σ up to \d+\.\d{4} ns", out, re.M), out
    assert json.loads((tmp_path / "w16.out.json").read_text())["rounding_in_ci"]["draws"] == ROUNDING_DRAWS
    wav24 = synthesize(make_sim / "table1.edges.csv", tmp_path / "w24.wav", with_format(card, bits=24), 1,
                       duration_s=8).wav_path
    a24 = pipeline.analyze(wav24)
    assert a24.rounding_lsb is None and all(r.estimate.quantization_sigma_us == 0 for r in a24.result.rows)
