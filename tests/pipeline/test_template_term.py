"""The learned template's shared error in the analysis: in every CI of a capture located with a template
learned from its train, said to be missing when the template was learned without one, absent for exact
edges."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.special
import soundfile as sf
from pintime import pipeline
from pintime.estimate.estimators import CI_LEVEL
from pintime.locate.capture_edges import locate_capture
from pintime.locate.train import DRAWS
from support import EXAMPLE_WAV, run_cli


def test_every_estimate_of_a_located_capture_holds_the_template_term():
    a = pipeline.analyze(EXAMPLE_WAV)
    assert a.template_draws == DRAWS
    t_reps = scipy.special.stdtrit(2 - 1, (1 + CI_LEVEL) / 2)
    t_draws = scipy.special.stdtrit(DRAWS, (1 + CI_LEVEL) / 2)
    for row in a.table.rows:
        e = row.estimate
        assert 0 < e.template_sigma_us < 1e-3  # a few ps to ns at the profile's own level
        reps_half = t_reps * e.std_us / np.sqrt(e.count)
        half = (e.ci95_us[1] - e.ci95_us[0]) / 2
        assert half == pytest.approx(np.hypot(reps_half, t_draws * e.template_sigma_us))
    code, out, _ = run_cli(["analyze", str(EXAMPLE_WAV)])
    assert code == 0 and "The CIs hold the learned edge shape's error" in out and f"{DRAWS} draws" in out


def test_exact_edges_have_no_template_term(make_sim):
    a = pipeline.analyze(make_sim / "table1.edges.csv")
    assert a.template_draws == 0 and all(r.estimate.template_sigma_us == 0 for r in a.table.rows)
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
    assert a.template_draws == 0 and all(r.estimate.template_sigma_us == 0 for r in a.table.rows)
    code, out, _ = run_cli(["analyze", str(silenced)])
    assert code == 0
    assert "The learned edge shape's error is NOT in these CIs (learned without a calibration train" in out
