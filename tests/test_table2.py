"""Table 2 (issue 5, items 4–6): the count-matrix system of adpcm_coder's blocks and CFG exits.

The reduction of count columns (identical ones merged, dependent ones written in an independent basis) is
checked against a slow exact implementation (pairwise comparison, Fraction Gauss–Jordan) on hand-made
matrices. End to end, small table2 runs are simulated (`make sim PROGRAMS=table2` into a temporary
BUILD) and analysed from their exact edge lists: every unknown of both models must equal its simavr truth,
and that truth must be the unknown's combination of the CFG's cycle costs (+ ε from the pulse widths).
"""

from __future__ import annotations

import json
import shutil
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from pintime.avr.cfg import cfg_from_description, describe, function_cfg
from pintime.capture.edgelist import read_edge_list
from pintime.cli import main
from pintime.errors import PintimeError
from pintime.estimate.estimators import bonferroni_factor
from pintime.frames import decode_frames
from pintime.pipeline import analyze
from pintime.table2.blocksystem import EPSILON, identical_groups, reduce_columns
from pintime.validate.compare import table2_coverage
from pintime.validate.validation import ResolvedExit, Table2Unknown
from simbuild import make_build

ROOT = Path(__file__).resolve().parents[1]
BUILDS = {"1MHz": (1_000_000, 3, 200), "16MHz": (16_000_000, 2, 150)}  # F_CPU, measurements, rounds


# --- the reduction, against a slow exact implementation -------------------------------------------------

def _rank(rows: list[list[Fraction]]) -> int:
    """Exact rank by Gaussian elimination on Fractions."""
    m = [list(r) for r in rows]
    rank = 0
    for col in range(len(m[0]) if m else 0):
        pivot = next((r for r in range(rank, len(m)) if m[r][col] != 0), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        for r in range(len(m)):
            if r != rank and m[r][col] != 0:
                f = m[r][col] / m[rank][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[rank], strict=True)]
        rank += 1
    return rank


def _solve(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Exact solution of the square system a x = b (Gauss–Jordan)."""
    n = len(a)
    m = [list(row) + [v] for row, v in zip(a, b, strict=True)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[pivot] = m[pivot], m[col]
        m[col] = [v / m[col][col] for v in m[col]]
        for r in range(n):
            if r != col:
                f = m[r][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [row[-1] for row in m]


def slow_reduce(counts: np.ndarray) -> tuple[list[list[int]], list[int], list[list[Fraction]]]:
    """Groups, basis and coefficients as blocksystem.reduce_columns defines them, the slow exact way."""
    cols = [[Fraction(int(v)) for v in counts[:, c]] for c in range(counts.shape[1])]
    groups: list[list[int]] = []
    for c, col in enumerate(cols):
        for g in groups:
            if cols[g[0]] == col:
                g.append(c)
                break
        else:
            groups.append([c])
    basis: list[int] = []
    for g in sorted((g for g in groups if any(cols[g[0]])), key=lambda g: (-len(g), g[0])):
        trial = [*basis, g[0]]
        if _rank([[cols[k][r] for k in trial] for r in range(len(cols[0]))]) > len(basis):
            basis.append(g[0])
    basis.sort()
    gram = [[sum(x * y for x, y in zip(cols[i], cols[j], strict=True)) for j in basis] for i in basis]
    coefficients = []
    for col in cols:
        x = _solve(gram, [sum(a * b for a, b in zip(cols[i], col, strict=True)) for i in basis])
        fitted = [sum(x[u] * cols[k][r] for u, k in enumerate(basis)) for r in range(len(col))]
        assert fitted == col  # every column is an exact combination of the basis
        coefficients.append(x)
    return [g for g in groups if any(cols[g[0]])], basis, coefficients


def _planted(rng: np.random.Generator, rounds: int) -> np.ndarray:
    """A count matrix with the shapes of a CFG: once-per-call, a loop and its test, if/else pairs, a
    3-iteration inner loop, a half column (exact coefficient 1/2), a never-run block, a second block run
    once per iteration, and ε."""
    body = rng.integers(0, 12, rounds)
    neg = rng.binomial(body, 0.4)
    rare = rng.binomial(body, 0.1)
    even = 2 * rng.integers(0, 4, rounds)
    ones = np.ones(rounds, dtype=np.int64)
    return np.column_stack([ones, body + 1, ones, body, neg, body - neg, 3 * body, rare, neg,
                            even, even // 2, np.zeros(rounds, dtype=np.int64), body, ones])


NAMES = ["BB0", "BB1", "BB2", "BB3", "BB4", "BB5", "BB6", "BB7", "BB8", "BB9", "BB10", "BB11", "BB12",
         EPSILON]


def test_planted_matrix_reduces_as_named():
    r = reduce_columns(_planted(np.random.default_rng(5), 60), NAMES)
    labels = [r.label(u) for u in range(len(r.basis))]
    assert labels == ["BB0 et al. + ε", "BB3 et al.", "BB4 et al.", "BB7", "BB9 et al."]
    assert r.formula(0) == "BB0 + BB1 + BB2 + ε"
    assert r.formula(1) == "BB1 + BB3 + BB5 + 3·BB6 + BB12"
    assert r.formula(2) == "BB4 − BB5 + BB8"
    assert r.formula(4) == "BB9 + 1/2·BB10"
    assert [r.names[c] for c in r.unused] == ["BB11"]
    merged = [[r.names[c] for c in g] for g in r.groups if len(g) > 1]
    assert merged == [["BB0", "BB2", EPSILON], ["BB3", "BB12"], ["BB4", "BB8"]]
    # the value of an unknown is its members' costs combined: costs 1, 2, 4, … make every member visible
    costs = 2.0 ** np.arange(len(NAMES))
    assert r.value(costs)[4] == costs[9] + costs[10] / 2


@pytest.mark.parametrize("seed", range(6))
def test_reduction_matches_slow_exact_reduction(seed):
    rng = np.random.default_rng(seed)
    counts = _planted(rng, int(rng.integers(15, 40)))
    counts = counts[:, rng.permutation(counts.shape[1])]  # any column order
    names = [f"c{k}" for k in range(counts.shape[1])]
    r = reduce_columns(counts, names)
    groups, basis, coefficients = slow_reduce(counts)
    assert [list(g) for g in r.groups] == groups
    assert [g for g in identical_groups(counts)] == [g for g in slow_identical(counts)]
    assert list(r.basis) == basis
    assert [list(row) for row in r.coefficients] == coefficients


def slow_identical(counts: np.ndarray) -> list[list[int]]:
    """Identical columns by pairwise comparison, groups by first column."""
    seen: list[list[int]] = []
    for c in range(counts.shape[1]):
        match = [g for g in seen if (counts[:, g[0]] == counts[:, c]).all()]
        if match:
            match[0].append(c)
        else:
            seen.append([c])
    return seen


def test_full_rank_matrix_keeps_every_column():
    counts = np.random.default_rng(1).integers(0, 9, (30, 5))
    r = reduce_columns(counts, list("abcde"))
    assert r.basis == (0, 1, 2, 3, 4) and r.groups == ((0,), (1,), (2,), (3,), (4,))
    np.testing.assert_array_equal(r.matrix, np.eye(5))


def test_nearly_dependent_column_is_refused():
    """A column within float tolerance of a multiple of another but not equal to it: an error, never a
    wrong name (float64 cannot even hold c, which int64 holds exactly)."""
    rng = np.random.default_rng(2)
    a = rng.integers(1, 1000, 50)
    c = 10**16 * a + rng.integers(0, 2, 50)
    with pytest.raises(PintimeError, match="not exactly a combination"):
        reduce_columns(np.column_stack([a, c]), ["a", "c"])


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
    t2 = a.table2
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


def test_table2_coverage_counts_each_part_and_skips_epsilon():
    def row(error_us=0.0, judged=True):  # a CI half-width of 1 µs over 100 measurements
        return Table2Unknown("u", error_us, 0.0, 1.0, 100, 0.0, judged)
    rows = [row(9.0, judged=False), row(0.5), row(1.2)]
    columns = [ResolvedExit(f"BB{i}→BB{i + 1}", "measured", 0, u)
               for i, u in enumerate([row(3.5), row(), row(9.0, judged=False), None])]
    assert [u.within_ci95 for u in rows] == [None, True, False]
    cover = table2_coverage(rows, columns)
    assert [(c.outside, c.total) for c in (cover.block, cover.resolved, cover.combined)] == [
        (1, 2), (1, 2), (2, 4)]
    assert cover.combined.expected == pytest.approx(0.2)
    # jointly, four CIs at 95 % each widen by t₉₉(1 − 0.05/8)/t₉₉(0.975) ≈ 1.28: 1.2 is inside, 3.5 is not
    assert cover.joint.factor == pytest.approx(1.28, abs=0.01)
    assert (cover.joint.outside, cover.joint.total) == (1, 4)


def test_lost_frame_rounds_are_matched_by_label(sim, tmp_path):
    """A capture without one TABLE2 frame: the other rounds still find their visits by (measurement,
    round)."""
    edges = read_edge_list(f"{sim}.edges.csv")
    f_cpu_hz = json.loads(Path(f"{sim}.json").read_text())["f_cpu_hz"]
    meas = np.flatnonzero(edges.channel == 0)
    frames = decode_frames(edges.time[meas] * 1e6 / f_cpu_hz, edges.polarity[meas]).of_kind("table2")
    cut = frames[1]
    drop = meas[cut.start:cut.group[-1] + 1]
    rows = Path(f"{sim}.edges.csv").read_text().splitlines()
    kept = [row for k, row in enumerate(rows[1:]) if k not in set(drop.tolist())]
    capture = tmp_path / "cut.edges.csv"
    capture.write_text("\n".join([rows[0], *kept]) + "\n")
    a = analyze(capture, visits=f"{sim}.visits.csv")
    assert a.table2.rounds == sum(f.fields["count"] for f in frames) - cut.fields["count"]
    truth = np.array([u.truth_cycles for u in a.table2.exit.unknowns])
    np.testing.assert_allclose(a.table2.exit.values_us / a.table2.us_per_cycle,
                               np.broadcast_to(truth, a.table2.exit.values_us.shape), atol=1e-6)


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
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("how,message", [
    ("row dropped", "visited pulses"),
    ("count changed", "do not"),
    ("header", "header"),
    ("truncated row", "malformed visits"),
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
    t2 = analyze(wav, "template").table2
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
    from pintime.locate.capture_edges import locate_capture
    from pintime.validate.edgecheck import errors_of, match

    wav = tmp_path / "excerpt.wav"
    assert main(["synth", f"{sim}.edges.csv", "-o", str(wav), "--profile", "paper", "--seed", "1",
                 "--duration-s", "6"]) == 0
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


def _toy_cfg():
    """A loop in which BB1 and BB2 both branch to BB3 or BB4 at different costs (1 and 2 cycles more to
    BB4): rounds taking BB1→BB3, BB2→BB4 or BB1→BB4, BB2→BB3 run the same blocks but cost differently."""
    from pintime.avr.cfg import Block, Cfg, Exit

    edges = {0: [(6, 10)], 1: [(3, 3), (4, 4)], 2: [(3, 5), (4, 7)], 3: [(5, 2)], 4: [(5, 3)], 5: [(6, 1)],
             6: [(1, 2), (7, 3)], 7: [(2, 2), (8, 3)], 8: [(None, 5)]}
    blocks, index = [], 0
    for source, outs in edges.items():
        exits = tuple(Exit(index + k, source, target, k == 1, cycles)
                      for k, (target, cycles) in enumerate(outs))
        index += len(exits)
        blocks.append(Block(source, (), exits))
    return Cfg("toy", 0, 0, tuple(blocks))


def test_exit_model_is_exact_where_the_block_model_cannot_be():
    """On the toy CFG the exit counts leave the span of the block counts: the block model keeps a residual
    on exact widths (its truth is only a least-squares value), the exit model recovers whole cycles."""
    from pintime.table2.table import build_table2, format_table2
    from pintime.table2.visits import Rounds

    cfg = _toy_cfg()
    rng = np.random.default_rng(4)
    exit_of = {(e.source, e.target): e.index for e in cfg.exits}
    rows = []
    for _ in range(600):
        exits = np.zeros(len(cfg.exits), dtype=np.int64)
        block, steps = 0, 0
        while block is not None:
            options = cfg.blocks[block].successors
            target = None if not options else (options[-1] if block == 7 and steps > 40
                                               else options[rng.integers(len(options))])
            exits[exit_of[(block, target)]] += 1
            block, steps = target, steps + 1
        rows.append(exits)
    exit_counts = np.array(rows)
    block_counts = np.array([exit_counts[:, [e.index for e in b.exits]].sum(axis=1) for b in cfg.blocks]).T
    width_cycles = exit_counts @ np.array([e.cycles for e in cfg.exits]) + 6
    t2 = build_table2(cfg, Rounds(np.repeat(np.arange(3), 200), width_cycles * 1.0, block_counts, exit_counts,
                                  width_cycles), 1.0)
    assert not t2.same_span
    assert t2.block.truth_residual_cycles > 0.1 and np.all(t2.block.residual_rms_us > 0.1)
    assert t2.exit.truth_residual_cycles < 1e-9
    truth = np.array([u.truth_cycles for u in t2.exit.unknowns])
    np.testing.assert_allclose(truth, np.round(truth), atol=1e-9)
    np.testing.assert_allclose(t2.exit.values_us, np.broadcast_to(truth, t2.exit.values_us.shape), atol=1e-9)
    assert t2.capture_epsilon.mean_us == pytest.approx(6, abs=1e-9)  # from the exact (exit) model
    assert "cannot be exact" in format_table2(t2)
