"""Table 2: the count-matrix system of adpcm_coder's blocks and CFG exits, end to end.

Small table2 runs are simulated (`make sim PROGRAMS=table2` into a temporary
BUILD) and analysed from their exact edge lists: every unknown of both models must equal its simavr truth,
and that truth must be the unknown's combination of the CFG's cycle costs (+ ε from the pulse widths).
"""

from __future__ import annotations

import json
import os
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from pintime.avr.cfg import cfg_from_description, describe, function_cfg
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from pintime.estimate.estimators import bonferroni_factor
from pintime.frames import decode_frames
from pintime.pipeline import analyze
from pintime.table2.blocksystem import EPSILON
from support import make_build

BUILDS = {"1MHz": (1_000_000, 3, 200), "16MHz": (16_000_000, 2, 150)}  # F_CPU, measurements, rounds


# --- end to end on small simavr runs ---------------------------------------------------------------------

@pytest.fixture(scope="module", params=list(BUILDS))
def sim(request, tmp_path_factory) -> Path:
    """A small table2 run: build/sim/table2.* in a temporary BUILD; returns the prefix."""
    f_cpu_hz, measurements, rounds = BUILDS[request.param]
    build = make_build(tmp_path_factory.mktemp(f"t2_{request.param}"), "sim", F_CPU=f_cpu_hz,
                       MEASUREMENTS=measurements, ROUNDS=rounds, PROGRAMS="table2")
    return build / "sim" / "table2"


def _exact_truth(t2, model, cfg) -> list[Fraction]:
    """Each unknown's combination of the CFG's exit costs and ε, in exact arithmetic (exit model)."""
    costs = [Fraction(e.cycles) for e in cfg.exits] + [Fraction(t2.epsilon_cycles)]
    return [sum((c * costs[k] for k, c in enumerate(col)), Fraction(0))
            for col in zip(*model.reduction.coefficients, strict=True)]


def test_exact_edges_give_every_unknown_its_truth(sim):
    a = analyze(Path(f"{sim}.edges.csv"))
    t2 = a.result
    cfg = function_cfg(json.loads(Path(f"{sim}.json").read_text())["elf"], "adpcm_coder")
    assert t2.epsilon_cycles == 6  # TABLE2.md §3: rising `out` + CALL
    _, measurements, rounds = next(v for v in BUILDS.values() if v[0] == a.run["f_cpu_hz"])
    assert t2.rounds == measurements * rounds
    for model in (t2.block, t2.exit):
        assert len(model.measurements) == measurements and not model.skipped
        assert model.truth_residual_cycles < 1e-9  # both models explain every exact width
        truth = np.array([u.truth_cycles for u in model.unknowns])
        np.testing.assert_allclose(truth, np.round(truth), atol=1e-9)  # whole cycles
        # every measurement's estimate is the truth, in µs and in cycles
        np.testing.assert_allclose(model.values_us, np.broadcast_to(truth * t2.us_per_cycle,
                                                                    model.values_us.shape), atol=1e-9)
        np.testing.assert_allclose(model.values_us / t2.us_per_cycle, np.broadcast_to(
            truth, model.values_us.shape), atol=1e-6)
        assert np.all(model.residual_rms_us < 1e-9)
    # exit model: the truth is exactly the unknown's integer combination of the CFG's exit costs and ε
    exact = _exact_truth(t2, t2.exit, cfg)
    assert all(x.denominator == 1 for x in exact)
    assert [float(x) for x in exact] == [round(u.truth_cycles) for u in t2.exit.unknowns]
    assert all(c.denominator == 1 for row in t2.exit.reduction.coefficients for c in row)
    # TABLE2.md §5: on adpcm_coder every exit count is a combination of block counts
    assert t2.same_span and len(t2.block.unknowns) == len(t2.exit.unknowns) == 11
    # the once-per-call group holds ε, as in the paper's "BB0 et al."
    assert t2.block.unknowns[0].label == "BB0 et al. + ε"
    assert EPSILON in [n for n, _ in t2.block.unknowns[0].members]


def test_cli_json_validate_and_plots(sim, tmp_path, capsys):
    assert main(["analyze", f"{sim}.edges.csv", "--json", str(tmp_path / "a.json"),
                 "--plots", str(tmp_path / "plots")]) == 0
    printed = capsys.readouterr().out
    assert "Basic Block" in printed and "Execution time (µs)" in printed and "Paper's Table 2" in printed
    analysis = json.loads((tmp_path / "a.json").read_text())
    resolved = analysis["table2_resolved"]["columns"]
    family = len(analysis["table2"]) + sum("mean_us" in c for c in resolved)
    factor = bonferroni_factor(min(c["count"] for c in resolved if "mean_us" in c), family)
    assert f"Joint 95 % CI: for all {family} estimates" in printed and f"×{factor:.2f}" in printed
    rows = json.loads((tmp_path / "a.json").read_text())["table2"]
    assert rows[0]["blocks"][0] == "BB0" and {"mean_us", "ci95_us"} <= rows[0].keys()
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == ["table2_estimates.png",
                                                                      "table2_residuals.png"]
    assert main(["validate", f"{sim}.edges.csv", "--truth", f"{sim}.json", "--json",
                 str(tmp_path / "v.json")]) == 0
    out = json.loads((tmp_path / "v.json").read_text())
    for row in out["table2"] + out["table2_exits"]:
        assert abs(row["error_us"]) < 1e-9 and row["truth_us"] == pytest.approx(row["mean_us"], abs=1e-9)
        assert row["within_ci95"] is (None if EPSILON in row["blocks"] else True)
    # exact edges: nothing misses its CI; counted: the ε-free unknowns and the resolved exits (not ε, ε_cut)
    cover = out["table2_coverage"]
    resolved = [c for c in out["table2_resolved"]["columns"]
                if "mean_us" in c and c["name"] not in ("ε", "ε_cut")]
    assert cover["table2"]["total"] == len(out["table2"]) - 1
    assert cover["table2_resolved"]["total"] == len(resolved)
    assert cover["all"] == {"outside": 0, "total": len(out["table2"]) - 1 + len(resolved),
                            "expected": pytest.approx(0.05 * cover["all"]["total"]),
                            "expected_sd": pytest.approx((0.05 * 0.95 * cover["all"]["total"]) ** 0.5)}
    assert cover["joint"]["outside"] == 0 and cover["joint"]["total"] == cover["all"]["total"]
    assert "Table 2 coverage: 0 of " in capsys.readouterr().out
    assert main(["report", str(tmp_path / "v.json"), "-o", str(tmp_path / "report.md")]) == 0
    assert (f"- table2.edges · exact: 0 of {cover['all']['total']} (ε-free unknowns and resolved exits) "
            "outside their 95 % CI") in (tmp_path / "report.md").read_text()


def test_lost_frame_rounds_are_matched_by_label(sim, tmp_path):
    """A capture without one TABLE2 frame: the other rounds still find their visits by (measurement,
    round)."""
    edges = read_edge_list(f"{sim}.edges.csv")
    f_cpu_hz = json.loads(Path(f"{sim}.json").read_text())["f_cpu_hz"]
    meas = np.flatnonzero(edges.channel == 0)
    frames = decode_frames(edges.time[meas] * 1e6 / f_cpu_hz, edges.polarity[meas]).of_kind("table2")
    cut = frames[1]
    drop = {f"{int(edges.time[i])},0," for i in meas[cut.start:cut.group[-1] + 1]}  # cycle, channel
    rows = Path(f"{sim}.edges.csv").read_text().splitlines()
    kept = [row for row in rows[1:] if row[:row.rindex(",") + 1] not in drop]
    capture = tmp_path / "cut.edges.csv"
    capture.write_text("\n".join([rows[0], *kept]) + "\n")
    a = analyze(capture, visits=f"{sim}.visits.csv")
    assert a.result.rounds == sum(f.fields["count"] for f in frames) - cut.fields["count"]
    truth = np.array([u.truth_cycles for u in a.result.exit.unknowns])
    np.testing.assert_allclose(a.result.exit.values_us / a.result.us_per_cycle,
                               np.broadcast_to(truth, a.result.exit.values_us.shape), atol=1e-6)


def _copy_run(sim: Path, tmp: Path) -> Path:
    for suffix in (".json", ".edges.csv", ".visits.csv", ".blocks.json"):
        shutil.copy(f"{sim}{suffix}", tmp / f"table2{suffix}")
    return tmp / "table2"


def _damage_visits(prefix: Path, how: str) -> None:
    path = Path(f"{prefix}.visits.csv")
    lines = path.read_text().splitlines()
    if how == "row dropped":
        lines = lines[:-1]
    elif how == "count changed":
        fields = lines[5].split(",")
        fields[3] = str(int(fields[3]) + 1)  # the entry block's count: ran once more than the pulse allows
        lines[5] = ",".join(fields)
    elif how == "header":
        lines[0] = lines[0].replace("count_", "n_", 1)
    elif how == "truncated row":
        lines[7] = lines[7].rsplit(",", 3)[0]
    elif how == "row twice":  # one pulse's row in place of another's: as many rows, one pulse twice
        lines[9] = lines[8]
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("how,message", [
    ("row dropped", "visited pulses"),
    ("count changed", "do not"),
    ("header", "header"),
    ("truncated row", "malformed visits"),
    ("row twice", "listed twice"),
])
def test_damaged_visits_file_is_a_clear_error(sim, tmp_path, capsys, how, message):
    prefix = _copy_run(sim, tmp_path)
    _damage_visits(prefix, how)
    assert main(["analyze", f"{prefix}.edges.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err


def test_missing_or_mismatched_visits_are_clear_errors(sim, tmp_path, capsys):
    prefix = _copy_run(sim, tmp_path)
    Path(f"{prefix}.visits.csv").unlink()
    assert main(["analyze", f"{prefix}.edges.csv"]) == 2
    assert "no visits file" in capsys.readouterr().err
    assert main(["analyze", f"{prefix}.edges.csv", "--visits", str(tmp_path / "none.visits.csv")]) == 2
    assert "visits file not found" in capsys.readouterr().err
    data = json.loads(Path(f"{sim}.json").read_text())
    data["revision"] += 1  # visits of another firmware build than the capture's
    shutil.copy(f"{sim}.visits.csv", tmp_path / "table2.visits.csv")
    Path(f"{prefix}.json").write_text(json.dumps(data))
    assert main(["analyze", f"{sim}.edges.csv", "--visits", f"{prefix}.visits.csv"]) == 2
    assert "visits from firmware" in capsys.readouterr().err


def test_edited_cfg_json_is_refused(sim, tmp_path, capsys):
    prefix = _copy_run(sim, tmp_path)
    blocks = json.loads(Path(f"{prefix}.blocks.json").read_text())
    blocks["blocks"][3]["exits"][0]["cycles"] += 1
    Path(f"{prefix}.blocks.json").write_text(json.dumps(blocks))
    assert main(["analyze", f"{prefix}.edges.csv"]) == 2
    assert "do not match its own code" in capsys.readouterr().err


def test_cfg_json_reads_back_to_the_same_cfg(sim):
    cfg = function_cfg(json.loads(Path(f"{sim}.json").read_text())["elf"], "adpcm_coder")
    assert cfg_from_description(json.loads(json.dumps(describe(cfg)))) == cfg
    assert cfg_from_description(json.loads(Path(f"{sim}.blocks.json").read_text())) == cfg


@pytest.mark.parametrize("profile", ["default", "paper"])
def test_synthesized_capture_rounds_to_the_true_cycles(sim, tmp_path, profile):
    """A sound-card capture of the run (pintime synth, template edges): every unknown of both models
    rounds to its true whole number of cycles, with CIs within the paper's widest (±0.044 µs); the visits
    are found through the capture's sidecar."""
    wav = tmp_path / f"table2-{profile}.wav"
    assert main(["synth", f"{sim}.edges.csv", "-o", str(wav), "--profile", profile, "--seed", "3"]) == 0
    t2 = analyze(wav, "template").result
    for model in (t2.block, t2.exit):
        cycles = np.array([u.estimate.mean_us for u in model.unknowns]) / t2.us_per_cycle
        truth = np.array([u.truth_cycles for u in model.unknowns])
        np.testing.assert_array_equal(np.round(cycles), np.round(truth))
        assert max((u.estimate.ci95_us[1] - u.estimate.ci95_us[0]) / 2 for u in model.unknowns) <= 0.044
    assert t2.capture_epsilon is not None
    assert round(t2.capture_epsilon.mean_us / t2.us_per_cycle) == t2.epsilon_cycles


def test_validate_per_edge_errors_on_a_table2_excerpt(sim, tmp_path):
    """`pintime validate` matches every located edge of a table2 capture excerpt to its exact edge: the
    long adpcm_coder pulses (high for longer than a QUIET at 1 MHz) must not make the locator think the
    capture inverted, nor must the sparse reference square wave (1 Hz) upset the time map."""
    from pintime.locate.stream.capture_edges import locate_capture
    from pintime.validate.edgecheck import errors_of
    from pintime.validate.edgematch import match

    wav = tmp_path / "excerpt.wav"
    assert main(["synth", f"{sim}.edges.csv", "-o", str(wav), "--profile", "paper", "--seed", "1",
                 "--duration-s", "7.75"]) == 0
    result = locate_capture(wav, "template")
    assert result.inverted is False
    exact = read_edge_list(f"{sim}.edges.csv")
    err = errors_of(result, exact)
    assert err.matched == err.located > 1000
    # a wrong match would be ≥ 1 µs off; the CRLB is ~0.05-0.1 ns and the time map leaves the clock's
    # wander (~0.1-0.3 ns over 20 ms knots)
    assert 0 < err.rms_ns < 1.0, err
    # the reported uncertainties are honest on a card whose clock wanders (the paper profile's does)
    sigma_ns = np.sqrt(np.mean(result.edges.sigma ** 2)) * 1e9
    assert 0.5 < err.rms_ns / sigma_ns < 2.0, (err.rms_ns, sigma_ns)
    # pulses of a few samples (16 MHz: 30 µs = 5.8 samples): both edges found, in order, fitted jointly;
    # their width errors (free of the clock's wander) are near the CRLB
    idx, e = match(result.edges, exact)
    t, pol, ch = result.edges.time[idx], result.edges.polarity[idx], result.edges.channel[idx]
    e = e - np.where(pol > 0, e[pol > 0].mean(), e[pol < 0].mean())
    short = np.flatnonzero((ch[:-1] == 0) & (ch[1:] == 0) & (pol[:-1] > 0) & (pol[1:] < 0)
                           & (np.diff(t) < 10 / 192e3))
    if json.loads(Path(f"{sim}.json").read_text())["f_cpu_hz"] == 16_000_000:
        assert len(short) > 10
    if len(short):
        width_rms_s = np.sqrt(np.mean((e[short + 1] - e[short]) ** 2) / 2)
        crlb_s = np.sqrt(np.mean(result.crlb_s[idx][np.r_[short, short + 1]] ** 2))
        assert width_rms_s < 2 * crlb_s, (width_rms_s, crlb_s)


def test_a_mismeasured_pulse_is_rejected_as_an_outlier(sim):
    """The paper's outlier rule (§4.1) on eq. 10: one pulse 1 µs too wide (e.g. a mislocated edge) is
    dropped from its measurement, and every unknown is exact again."""
    from pintime.table2.table import build_table2
    from pintime.table2.visits import Rounds, load_sim_rounds

    s = load_sim_rounds(Path(f"{sim}.visits.csv"))
    us_per_cycle = 1e6 / s.f_cpu_hz
    width_us = s.width_cycles * us_per_cycle
    width_us[17] += 1.0
    t2 = build_table2(s.cfg, Rounds(s.key // 65536, width_us, s.block_counts, s.exit_counts, s.width_cycles),
                      us_per_cycle)
    for model in (t2.block, t2.exit):
        assert model.outliers == 1
        truth = np.array([u.truth_cycles for u in model.unknowns])
        np.testing.assert_allclose(model.values_us / us_per_cycle,
                                   np.broadcast_to(truth, model.values_us.shape), atol=1e-6)




def test_rounds_joined_once_give_what_joining_again_gives(sim):
    """The estimations of one analysis (the result, each draw of a shared error) join the capture's pulses
    with simavr's rounds once and keep what the counts alone give: on other edge times, the same Table 2
    as joining and reducing afresh."""
    from pintime.table2.table import table2_from_capture

    capture = Path(f"{sim}.edges.csv")
    summary = json.loads(Path(f"{sim}.json").read_text())
    run = {"revision": summary["revision"], "f_cpu_hz": summary["f_cpu_hz"]}
    edges = read_edge_list(capture)
    time_us = edges.time[edges.channel == 0] * (1e6 / run["f_cpu_hz"])
    frames = decode_frames(time_us, edges.polarity[edges.channel == 0]).frames
    joined: dict = {}
    first = table2_from_capture(capture, None, run, frames, time_us, 1.0, joined)
    moved = time_us + np.random.default_rng(1).normal(0.0, 1e-3, len(time_us))  # a draw's shifts
    kept = table2_from_capture(capture, None, run, frames, moved, 1.0, joined)
    fresh = table2_from_capture(capture, None, run, frames, moved, 1.0)
    assert len(joined) == 1
    for a, b in ((kept.block, fresh.block), (kept.exit, fresh.exit)):
        np.testing.assert_array_equal(a.values_us, b.values_us)
        assert a.reduction == b.reduction and [u.truth_cycles for u in a.unknowns] == \
            [u.truth_cycles for u in b.unknowns]
    assert not np.array_equal(kept.block.values_us, first.block.values_us)
    assert kept.same_span == fresh.same_span and kept.resolved_note == fresh.resolved_note


def test_the_first_frames_take_their_rows_of_the_rounds_joined_before(sim):
    """The draws' frames, the capture's first, take their rows of the rounds the result joined (the visits
    read once): the same rounds as joining them afresh."""
    from pintime.table2.visits import frame_key, load_sim_rounds, match, rounds_of

    summary = json.loads(Path(f"{sim}.json").read_text())
    edges = read_edge_list(Path(f"{sim}.edges.csv"))
    time_us = edges.time[edges.channel == 0] * (1e6 / summary["f_cpu_hz"])
    frames = decode_frames(time_us, edges.polarity[edges.channel == 0]).frames
    ours = [f for f in frames if f.kind in ("table2", "table2cut")]
    part = ours[:len(ours) // 2]
    sim_rounds = load_sim_rounds(Path(f"{sim}.visits.csv"))
    taken = rounds_of(match(sim_rounds, frames, time_us, 1.0), ours, set(map(frame_key, part)))
    fresh = match(sim_rounds, part, time_us, 1.0)
    assert {f.kind for f in part} == {"table2", "table2cut"} and fresh.cuts is not None
    for name in ("measurement", "block_counts", "exit_counts", "width_cycles"):
        np.testing.assert_array_equal(getattr(taken, name), getattr(fresh, name))
    for name in ("key", "cut", "reached", "exit_counts", "width_cycles"):
        np.testing.assert_array_equal(getattr(taken.cuts, name), getattr(fresh.cuts, name))


def test_visits_read_ahead_are_taken_once_and_only_unchanged(sim, tmp_path, monkeypatch):
    """pintime measure's read-ahead (table2.ahead): the analysis takes what was read, once; a file changed
    since is read again."""
    from pintime.table2 import ahead

    reads = []
    monkeypatch.setattr(ahead, "load_sim_rounds", lambda path: reads.append(path) or object())
    visits = tmp_path / "t.visits.csv"
    shutil.copy(f"{sim}.visits.csv", visits)
    ahead.read_ahead(visits)
    assert ahead.sim_rounds(visits) is not ahead.sim_rounds(visits) and len(reads) == 2  # taken once
    ahead.read_ahead(visits)
    os.utime(visits, ns=(0, 0))  # changed since
    ahead.sim_rounds(visits)
    assert len(reads) == 4
