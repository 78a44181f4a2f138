"""The paper's Table 2 (§5.1, §6.2): times of a function's basic blocks from whole-call pulse widths.

Each measurement (1000 rounds in the paper) is one overdetermined system ``N · t = T`` (eq. 9–10): a row per
round, a column per block with the number of times it ran, and the pulse width as right-hand side. The
systematic error ε of every pulse (paper eq. 6) is a column of ones. Columns that cannot be told apart are
merged into named unknowns (:mod:`pintime.table2.blocksystem`); each measurement is solved by least squares
(with the paper's outlier rule of §4.1: a round far off the first fit is dropped and the system solved
again), and each unknown is reported as the mean over measurements with its Student-t 95 % confidence
interval, as in the paper.

Two models are fitted side by side:

- **block model** (the paper's): unknowns are block times. A block whose final branch is taken or not costs
  1 cycle more or less; on a CFG where that choice is itself a linear function of the block counts, the
  combinations absorb it and the model is still exact;
- **exit model** (beyond the paper): unknowns are the costs of CFG edges — a block together with the way it
  is left — so every unknown is an integer combination of integer cycle costs.

Truth (simavr): each unknown's value is the least-squares solution of the same system on the exact pulse
widths in cycles, which equals the unknown's combination of exit costs and ε (from the CFG) whenever the
model is exact — ``truth_residual_cycles`` says whether it is.

Expectation (:mod:`pintime.avr.expect`): each unknown's value as the listing predicts it — every round's
pulse width predicted from the datasheet cost of each CFG exit it took, plus the pulse's own instructions
(:func:`pulse_epsilon_cycles`), and solved as the measurement is. An exit-model unknown is an integer
combination of exit costs; a block-model unknown stands for whatever its count column means on these
rounds (a block's own cost, or that and the branch costs its count carries), which only the rounds' paths
tell. Each row is flagged when its 95 % CI lies wholly outside its expectation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pintime.avr.cfg import Cfg, exit_names
from pintime.avr.chip import call_cycles
from pintime.avr.expect import Expectation
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.frames import Frame
from pintime.printed import fixed, ns
from pintime.table2.ahead import sim_rounds
from pintime.table2.blocksystem import (
    EPSILON,
    Fit,
    Memo,
    Reduction,
    computed,
    r_factor,
    rank,
    reduce_columns,
    solve,
)
from pintime.table2.cuts import Resolved, format_resolved, resolve, resolved_json
from pintime.table2.visits import (
    FrameKey,
    Rounds,
    frame_key,
    locate,
    match,
    rounds_of,
    with_widths,
)


def pulse_epsilon_cycles(cfg: Cfg) -> int:
    """Inside a pulse besides adpcm_coder itself (firmware/table2/adpcm_pulse.S): the rising `out` (1) and
    the CALL (5 on the ATmega2560, 4 on a 2-byte program counter)."""
    return 1 + call_cycles(cfg.pc_bytes)["call"]


def expected_how(t: Table2) -> str:
    """How the listing's expectation of an unknown is made (the pulse's ε: :func:`pulse_epsilon_cycles`)."""
    return (f"the listing's exit costs along each round's path + ε = rising out 1 + CALL "
            f"{t.listing_cycles[EPSILON] - 1}, solved as the measurement is")


EXACT_CYCLES = 1e-6  # RMS residual of the exact widths below which a model's truth is exact (float rounding)
# Moreno & Fischmeister, Table 2 (their compiler's blocks of adpcm_coder at 1 MHz): label, µs, ± 95 % CI
PAPER_TABLE2: list[tuple[str, float, float]] = [
    ("BB0 et al.", 52.01, 0.044),
    ("BB1 et al.", 98.98, 0.003),
    ("BB2", 7.997, 0.005),
    ("BB4", 6.994, 0.006),
    ("BB6", 4.998, 0.003),
    ("BB8", 3.000, 0.004),
    ("BB18", 9.987, 0.016),
]


@dataclass(frozen=True)
class Unknown:
    """One merged unknown: what it stands for, its estimate over measurements and its truth."""

    label: str  # "BB3 et al."
    formula: str  # "BB1 + BB3 + 3·BB7 − BB34"
    members: list[tuple[str, str]]  # (column, coefficient as text)
    estimate: est.Estimate  # µs
    truth_cycles: float
    expected_cycles: float  # from the listing (see the module)


@dataclass(frozen=True)
class Model:
    """One model's reduced system, fitted per measurement."""

    kind: str  # "block" or "exit"
    reduction: Reduction
    unknowns: list[Unknown]
    measurements: np.ndarray  # the measurements solved
    values_us: np.ndarray  # measurements × unknowns
    residual_rms_us: np.ndarray  # per measurement
    condition: np.ndarray  # per measurement
    skipped: list[int]  # measurements whose basis columns were rank-deficient
    outliers: int  # rounds rejected by the paper's outlier rule (§4.1), over all measurements
    truth_residual_cycles: float  # RMS of the exact widths' residual: 0 when the model is exact


@dataclass(frozen=True)
class Table2:
    function: str
    us_per_cycle: float
    epsilon_cycles: int  # exact pulse width − the visits' static cycles (constant; checked)
    rounds: int
    block: Model
    exit: Model
    capture_epsilon: est.Estimate | None  # ε of the capture's pulses, µs (see capture_epsilon)
    same_span: bool  # block and exit count columns span the same space: both models fit identically
    resolved: Resolved | None  # every exit from the cut measurements (pintime.table2.cuts), if any
    resolved_note: str | None  # why there is none (no cut copies in the firmware, cut frames lost, …)
    listing_cycles: dict[str, int]  # each CFG exit's cost in the listing, and the pulse's ε, by column name
    fitted: Rounds | None = None  # the rounds the models were fitted to (for the count method's model)


def epsilon_cycles(cfg: Cfg, exit_counts: np.ndarray, width_cycles: np.ndarray) -> int:
    """ε in cycles: exact pulse width − the rounds' static cost; PintimeError unless the same for all."""
    cost = np.asarray(exit_counts) @ np.array([e.cycles for e in cfg.exits], dtype=np.int64)
    eps = np.unique(np.asarray(width_cycles) - cost)
    if len(eps) != 1:
        raise PintimeError(f"visits do not explain the pulse widths: width − block cycles takes the values "
                           f"{eps[:5].tolist()} (visits from another build or run?)")
    return int(eps[0])


def fit_model(kind: str, counts: np.ndarray, names: list[str], rounds: Rounds,
              expected_widths: np.ndarray, memo: Memo = computed) -> Model:
    """Reduce ``counts`` (+ the ε column) and solve every measurement (eq. 10); truth from exact widths,
    expectation from the widths the listing predicts (cycles per round); what the counts alone give is
    taken from ``memo``."""
    columns = np.column_stack([counts, np.ones(len(counts), dtype=np.int64)])
    reduction = memo(f"{kind} reduction", lambda: reduce_columns(columns, [*names, EPSILON]))
    fits: list[Fit] = []
    solved: list[int] = []
    skipped: list[int] = []
    for m in np.unique(rounds.measurement).tolist():
        rows = rounds.measurement == m
        try:
            fits.append(solve(columns[rows], rounds.width_us[rows], reduction,
                              est.OUTLIER_FACTOR, est.OUTLIER_FLOOR_US))
            solved.append(m)
        except PintimeError:
            skipped.append(m)
    if not fits:
        raise PintimeError(f"{kind} model: no measurement has enough varied rounds to solve")
    values = np.array([f.values for f in fits])
    truth, truth_residual, expected = memo(f"{kind} truth", lambda: _truth(
        columns[:, list(reduction.basis)].astype(np.float64), rounds.width_cycles, expected_widths))
    unknowns = [Unknown(reduction.label(u), reduction.formula(u),
                        [(n, str(c)) for n, c in reduction.members(u)],
                        est.summarize(values[:, u]), float(truth[u]), float(expected[u]))
                for u in range(len(reduction.basis))]
    return Model(kind, reduction, unknowns, np.array(solved), values,
                 np.array([f.residual_rms for f in fits]), np.array([f.condition for f in fits]),
                 skipped, int(sum(f.outliers for f in fits)), truth_residual)


def _truth(basis: np.ndarray, width_cycles: np.ndarray,
           expected_widths: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """The unknowns from the exact widths (the same least-squares system on all rounds; an exact model
    leaves residual 0), that residual's RMS, and the unknowns from the widths the listing predicts."""
    truth = np.linalg.lstsq(basis, width_cycles.astype(np.float64), rcond=None)[0]
    truth_residual = float(np.sqrt(np.mean((width_cycles - basis @ truth) ** 2)))
    expected = np.linalg.lstsq(basis, expected_widths.astype(np.float64), rcond=None)[0]
    return truth, truth_residual, np.where(np.abs(expected - np.round(expected)) < EXACT_CYCLES,
                                           np.round(expected), expected)


def capture_epsilon(model: Model, epsilon_cycles: int, us_per_cycle: float) -> est.Estimate | None:
    """The capture's own ε (µs, per measurement, summarized): the unknown holding ε minus the simavr truth
    of its blocks. It differs from simavr's ε when the capture times rising and falling edges differently
    (a systematic error every pulse shares, paper eq. 6); None if no unknown holds ε alone."""
    eps_row = model.reduction.coefficients[model.reduction.names.index(EPSILON)]
    holders = [u for u, coef in enumerate(eps_row) if coef]
    if len(holders) != 1:
        return None
    u, coef = holders[0], float(eps_row[holders[0]])
    blocks_us = (model.unknowns[u].truth_cycles - coef * epsilon_cycles) * us_per_cycle
    return est.summarize((model.values_us[:, u] - blocks_us) / coef)


def build_table2(cfg: Cfg, rounds: Rounds, us_per_cycle: float, memo: Memo = computed) -> Table2:
    """Both models of Table 2 from matched rounds (see :class:`Rounds`); what their counts alone give is
    taken from ``memo``."""
    if len(rounds.width_us) == 0:
        raise PintimeError("no TABLE2 round in the capture")
    eps = epsilon_cycles(cfg, rounds.exit_counts, rounds.width_cycles)
    costs = np.array([e.cycles for e in cfg.exits], dtype=np.int64)
    expected = rounds.exit_counts @ costs + pulse_epsilon_cycles(cfg)  # the listing's pulse widths
    block = fit_model("block", rounds.block_counts, [b.name for b in cfg.blocks], rounds, expected, memo)
    exit_ = fit_model("exit", rounds.exit_counts, exit_names(cfg), rounds, expected, memo)
    n = len(rounds.width_us)  # the rank of both models' columns side by side, never joined (≈ 70 MB)
    joint_rank = memo("rank", lambda: rank(r_factor(
        (rounds.block_counts, rounds.exit_counts, np.ones((n, 1), dtype=np.int64))), n))
    same_span = joint_rank == len(block.unknowns) == len(exit_.unknowns)
    exact = block if block.truth_residual_cycles < EXACT_CYCLES else exit_  # ε against an exact truth
    resolved: Resolved | None = None
    note: str | None = "the firmware has no cut copies (TABLE2.md §6)"
    if rounds.cuts is not None:
        try:
            resolved, note = resolve(cfg, rounds, us_per_cycle, memo), None
        except PintimeError as err:
            note = str(err)
    listing = {name: e.cycles for name, e in zip(exit_names(cfg), cfg.exits, strict=True)}
    return Table2(cfg.function, us_per_cycle, eps, len(rounds.width_us), block, exit_,
                  capture_epsilon(exact, eps, us_per_cycle), same_span, resolved, note,
                  listing | {EPSILON: pulse_epsilon_cycles(cfg)}, rounds)


@dataclass(frozen=True)
class Joined:
    """Rounds joined to a capture's frames (its TABLE2 and TABLE2CUT frames), with what their counts alone
    give (reductions, rank tests, exact truths), by name."""

    cfg: Cfg
    rounds: Rounds
    frames: list[Frame]
    kept: dict[str, Any]


def table2_from_capture(capture: Path, visits: str | Path | None, run: dict[str, int], frames: list[Frame],
                        time: np.ndarray, us_per_unit: float, joined: dict[Any, Joined] | None = None
                        ) -> Table2:
    """Table 2 of a capture: its TABLE2 pulse widths (``time`` in the source base, ``us_per_unit`` from
    the clock calibration) joined with the simavr visits of the same firmware (``visits``: the file, or
    None to look beside the capture's edges, :func:`pintime.table2.visits.locate`).

    ``joined``: the rounds the estimations of one analysis have joined so far, by the frames they came from
    (a dict the caller keeps; its rounds are those of its capture and visits only): the result and each draw
    of a shared error join the same frames, and only their widths differ (reading the visits and reducing
    the counts were 70 % of a 984 s run's 18 estimations); the draws' frames, the first of the capture's,
    take their rows of the result's rounds (the visits are read once)."""
    ours = [f for f in frames if f.kind in ("table2", "table2cut")]
    key = tuple(map(frame_key, ours))
    if joined is not None and key in joined:
        found = joined[key]
    else:
        found = _joined_before(joined or {}, set(key)) or Joined(
            *_matched(locate(capture, visits), run, frames, time, us_per_unit), ours, {})
        if joined is not None:
            joined[key] = found
    rounds, kept = with_widths(found.rounds, frames, time, us_per_unit), found.kept

    def memo(name: str, make: Callable[[], Any]) -> Any:  # what these rounds' counts alone give, kept
        if name not in kept:
            kept[name] = make()
        return kept[name]

    return build_table2(found.cfg, rounds, 1e6 / run["f_cpu_hz"], memo)


def _joined_before(joined: dict[Any, Joined], part: set[FrameKey]) -> Joined | None:
    """These frames' rounds taken from rounds joined before to frames among which they all are (None: none
    are; nor where they hold no TABLE2 frame, which :func:`pintime.table2.visits.match` refuses)."""
    if not any(kind == "table2" for kind, _, _ in part):
        return None
    for known in joined.values():
        if part <= set(map(frame_key, known.frames)):
            frames = [f for f in known.frames if frame_key(f) in part]
            return Joined(known.cfg, rounds_of(known.rounds, known.frames, part), frames, {})
    return None


def _matched(visits: Path, run: dict[str, int], frames: list[Frame], time: np.ndarray, us_per_unit: float
             ) -> tuple[Cfg, Rounds]:
    """The CFG and the capture's rounds joined with the simavr run's (:func:`table2_from_capture`); the
    run's every round is let go on return, before the systems are solved (≈ 95 MB on a 984 s run)."""
    sim = sim_rounds(visits)
    if sim.revision != run["revision"] or sim.f_cpu_hz != run["f_cpu_hz"]:
        raise PintimeError(f"{sim.path}: visits from firmware {sim.revision:08x} at {sim.f_cpu_hz} Hz, the "
                           f"capture is {run['revision']:08x} at {run['f_cpu_hz']} Hz")
    return sim.cfg, match(sim, frames, time, us_per_unit)


def _half(e: est.Estimate) -> float:
    return (e.ci95_us[1] - e.ci95_us[0]) / 2


def _cycles(x: float) -> str:
    """Truth in cycles: whole when it is (exact model), else with decimals (a least-squares value)."""
    return f"{round(x)}" if abs(x - round(x)) < EXACT_CYCLES else f"{x:.3f}"


def expectation(u: Unknown, how: str = "") -> Expectation:
    """What the listing expects of an unknown (one value: see the module), made as ``how`` says."""
    return Expectation(u.expected_cycles, u.expected_cycles, how)


def outside(u: Unknown, us_per_cycle: float) -> bool | None:
    """Whether the unknown's 95 % CI lies wholly outside its expectation."""
    low, high = u.estimate.ci95_us
    return expectation(u).outside(low / us_per_cycle, high / us_per_cycle)


def _rows(model: Model, us_per_cycle: float, how: str) -> list[dict[str, Any]]:
    return [{"label": u.label, "blocks": [n for n, _ in u.members],
             "coefficients": [c for _, c in u.members], "formula": u.formula,
             "mean_us": u.estimate.mean_us, "std_us": u.estimate.std_us,
             "template_sigma_us": u.estimate.template_sigma_us,
             "quantization_sigma_us": u.estimate.quantization_sigma_us,
             "ci95_us": list(u.estimate.ci95_us), "ci95_half_us": _half(u.estimate),
             "count": u.estimate.count, "mean_cycles": u.estimate.mean_us / us_per_cycle,
             "truth_cycles": u.truth_cycles}
            | expectation(u, how).to_json(*(x / us_per_cycle for x in u.estimate.ci95_us))
            for u in model.unknowns]


def _fit_json(model: Model) -> dict[str, Any]:
    return {"unknowns": len(model.unknowns), "measurements": len(model.measurements),
            "skipped_measurements": model.skipped, "outlier_rounds": model.outliers,
            "outlier_factor": est.OUTLIER_FACTOR,
            "residual_rms_us_mean": float(np.mean(model.residual_rms_us)),
            "condition_median": float(np.median(model.condition)),
            "condition_max": float(np.max(model.condition)),
            "truth_residual_cycles": model.truth_residual_cycles,
            "unused_columns": [model.reduction.names[c] for c in model.reduction.unused]}


def table2_json(t: Table2) -> dict[str, Any]:
    """``table2`` (block model rows, docs/design.md §6), ``table2_exits`` (exit model) and ``table2_fit``."""
    return {"table2": _rows(t.block, t.us_per_cycle, expected_how(t)),
            "table2_exits": _rows(t.exit, t.us_per_cycle, expected_how(t)),
            "table2_fit": {"function": t.function, "rounds": t.rounds, "us_per_cycle": t.us_per_cycle,
                           "epsilon_cycles": t.epsilon_cycles,
                           "capture_epsilon_us": None if t.capture_epsilon is None else {
                               "mean_us": t.capture_epsilon.mean_us,
                               "ci95_us": list(t.capture_epsilon.ci95_us)},
                           "same_span": t.same_span,
                           "block": _fit_json(t.block), "exit": _fit_json(t.exit)},
            "table2_resolved": ({"note": t.resolved_note} if t.resolved is None
                                else _resolved_json(t, t.resolved))}


def _resolved_json(t: Table2, resolved: Resolved) -> dict[str, Any]:
    """``table2_resolved``, each column with the listing's cycles beside it (none for ε_cut, whose cut path
    holds a delay loop this model does not follow) and the flag."""
    out = resolved_json(resolved, t.us_per_cycle)
    for row, column in zip(out["columns"], resolved.columns, strict=True):
        cycles = t.listing_cycles.get(column.name)
        if cycles is not None:
            e = Expectation(cycles, cycles, "this exit's cost in the listing" if column.name != EPSILON
                            else f"the pulse's rising out 1 + CALL {cycles - 1}")
            if column.estimate is None:  # unresolved: nothing measured to flag
                row |= e.to_json(np.nan, np.nan) | {"outside_expectation": None}
            else:
                row |= e.to_json(*(x / t.us_per_cycle for x in column.estimate.ci95_us))
    return out


def _model_lines(model: Model, us_per_cycle: float, title: str, how: str) -> list[str]:
    head = (f"{'Basic Block' if model.kind == 'block' else 'CFG edge':<22} {'Execution time (µs)':>19} "
            f"{'± 95 % CI (ns)':>14} {'truth (µs)':>11} {'cycles':>10} {'truth':>8} {'expected':>9}  "
            "stands for")
    lines = [title, head, "-" * len(head)]
    for u in model.unknowns:
        e = u.estimate
        truth_us = u.truth_cycles * us_per_cycle
        flag = "  ✗ OUTSIDE the expectation" if outside(u, us_per_cycle) else ""
        lines.append(f"{u.label:<22} {e.mean_us:>19.4f} {ns(_half(e)):>14} {truth_us:>11.4f} "
                     f"{e.mean_us / us_per_cycle:>10.4f} {_cycles(u.truth_cycles):>8} "
                     f"{_cycles(u.expected_cycles):>9}  {u.formula}{flag}")
    missed = sum(bool(outside(u, us_per_cycle)) for u in model.unknowns)
    lines.append(f"  expected: {how}; {missed} of {len(model.unknowns)} 95 % CIs wholly outside it")
    if model.reduction.unused:
        lines.append(f"  never ran (undetermined): "
                     f"{', '.join(model.reduction.names[c] for c in model.reduction.unused)}")
    return lines


def _fit_line(model: Model) -> str:
    """How the model's least squares went: its size, outliers, residuals, conditioning."""
    skipped = f", {len(model.skipped)} skipped (rank-deficient)" if model.skipped else ""
    return (f"  {model.kind} model: {len(model.unknowns)} unknowns, {len(model.measurements)} measurements"
            f"{skipped}, {model.outliers} outlier round(s) rejected (> {est.OUTLIER_FACTOR:g}× median "
            f"|residual|); residual RMS {ns(float(np.mean(model.residual_rms_us)))} ns per pulse (mean over "
            f"measurements); condition number median {np.median(model.condition):.3g}, "
            f"max {np.max(model.condition):.3g}; exact widths leave {fixed(model.truth_residual_cycles)} "
            "cycles RMS")


def table2_details(t: Table2) -> list[str]:
    """The block and exit models' fits (``analyze -v``)."""
    return [_fit_line(t.block), _fit_line(t.exit)]


def format_table2(t: Table2) -> str:
    """Table 2 in the paper's layout (block model), the exit model beside it, and the paper's rows."""
    per = t.rounds / max(len(np.unique(t.block.measurements)), 1)
    lines = _model_lines(t.block, t.us_per_cycle,
                         f"Table 2: {t.function} basic blocks, {t.rounds} rounds "
                         f"(≈{per:.0f} per measurement); ± = 95 % CI over measurements; truth from simavr "
                         f"(ε = {t.epsilon_cycles} cycles per pulse)", expected_how(t))
    if t.capture_epsilon is not None:
        e = t.capture_epsilon
        lines.append(f"  ε of this capture: {e.mean_us:.4f} µs ± {ns(_half(e))} ns (the unknown holding ε "
                     f"minus its blocks' simavr truth); simavr's pin ε: {t.epsilon_cycles} cycles = "
                     f"{t.epsilon_cycles * t.us_per_cycle:.4f} µs; a difference is the capture's own "
                     "systematic error (e.g. rising vs falling edge timing)")
    lines += [""] + _model_lines(t.exit, t.us_per_cycle,
                                 "Exit model (beyond the paper): unknowns are CFG edges, each a whole number "
                                 "of cycles", expected_how(t))
    if t.same_span:
        lines.append("  Here every exit count is a combination of block counts: both models span the same "
                     "columns and fit identically; the block model's unknowns absorb the taken-branch costs.")
    else:
        lines.append("  Here the exits taken are not determined by the block counts: the block model cannot "
                     "be exact (its truth is only a least-squares value); the exit model's unknowns are.")
    lines += [""] + ([format_resolved(t.resolved, t.us_per_cycle)] if t.resolved is not None
                     else [f"Cut measurements: none ({t.resolved_note})"])
    family = [u.estimate for u in t.block.unknowns]
    family += [c.estimate for c in (t.resolved.columns if t.resolved is not None else []) if c.estimate]
    count = min(e.count for e in family)
    if count >= 2:  # one measurement has no CI to widen
        lines += ["", f"Joint 95 % CI: for all {len(family)} estimates of the block model and the resolved "
                  f"exits to hold at once, widen each ± ×{est.bonferroni_factor(count, len(family)):.2f} "
                  "(Bonferroni; each ± alone is a 95 % CI)"]
    lines += ["", "Paper's Table 2 (their compiler's blocks, 1 MHz): "
              + "; ".join(f"{n} {m:g} ± {c:g} µs" for n, m, c in PAPER_TABLE2)]
    return "\n".join(lines)
