"""The committed example WAVs (captures/) through `pintime analyze`: the WAV edge locator, frames, plots."""

from __future__ import annotations

import pytest
from pintime.cli import main
from pintime.estimate.table1 import PAPER_TABLE1
from support import CAPTURES, run_json


@pytest.mark.parametrize("profile,method", [("default", "template"), ("noisy", "inflection")])
def test_wav_captures_go_through_the_same_pipeline(capsys, tmp_path, profile, method):
    """The committed example WAVs (captures/README.md: RUN, CAL, two repetitions, then the start of the next
    frame's SYNC) via the WAV edge locator: every whole frame decodes and the cut one is incomplete,
    whatever the edge method and the card (the noisy card inverts)."""
    result = run_json(capsys, tmp_path, "analyze", str(CAPTURES / f"table1-{profile}.wav"),
                      "--method", method)
    assert result["frames"] | {"reasons": None} == {"decoded": 28, "rejected": 0, "incomplete": 1,
                                                      "missing": None, "reasons": None,
                                                      "polarity_inverted": False}
    assert [r["count"] for r in result["table1"]] == [2] * len(PAPER_TABLE1)
    line20 = next(r for r in result["table1"] if r["technique"] == "line_fit" and r["n"] == 20)
    assert abs(line20["mean_us"] - 100) < (0.001 if method == "template" else 0.1)


def test_wav_plots_include_the_captured_edge(capsys, tmp_path):
    """`analyze --plots` on a WAV adds the paper's Fig. 6 (one captured edge, each method's time)."""
    assert main(["analyze", str(CAPTURES / "table1-default.wav"), "--plots", str(tmp_path)]) == 0
    capsys.readouterr()
    assert {p.name for p in tmp_path.glob("*.png")} == {"fig2_line_fit.png", "fig3_outlier.png",
                                                        "fig6_edge.png", "fig7_executing_error.png"}
