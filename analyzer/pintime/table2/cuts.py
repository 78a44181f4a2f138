"""Table 2's merged unknowns resolved into single CFG exits by cut measurements (paper §5.1; TABLE2.md §6).

The whole-call rounds of Table 2 determine only 11 combinations of adpcm_coder's 51 exit costs (the "et al."
unknowns). The paper separates merged blocks by measuring again up to a chosen block; the table2 firmware
does it on copies of the same machine code, each stopping where execution first reaches its cut block
(:mod:`pintime.avr.cutcopies`). A reached cut pulse is one more row of the count system: the exits taken
before the cut (the exit *into* the cut block included, the cut block's own cost not), with its own
systematic error ε_cut in place of the whole call's ε. Columns: every exit, ε, ε_cut; rows: the full rounds
and the reached cut pulses of one measurement, solved by least squares (with the paper's outlier rule, as
:func:`pintime.table2.table.fit_model`), the mean over measurements with its Student-t 95 % CI.

What stays merged is found from the data (:func:`pintime.table2.blocksystem.reduce_columns` on all rows), not
assumed. On adpcm_coder three combinations do, and no first-arrival cut can split them:

- a fixed-trip loop (gcc's shift loops BB7, 3 trips, and BB29, 4 trips): a first arrival lies before or after
  the whole loop, so every row holds its back edge a fixed number of times per exit, and only
  ``not-taken + k·taken`` is measured;
- the function's last block with ε: it ends every full pulse, and no cut pulse runs it.

Each is split by a stated constraint, reported as such (never as a measured value):

- *datasheet*: when a merged unknown is exactly the two exits of one block, its taken exit costs its
  instruction's extra cycles more than its not-taken one (1 for a branch; :mod:`pintime.avr.cfg`'s timing);
- *listing*: when it is one exit with ε, ε = ε_cut − ``CUT_EXTRA_CYCLES`` − the hold (FORMAT.md §7: the cut
  path has the ICALL, RJMP, JMP, the hold and LDS where the call has the CALL; the pin's own error is the
  same for both).

Anything else that stays merged is reported unresolved, with its combination.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pintime.avr.cfg import Cfg, exit_names
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.table2.blocksystem import (
    EPSILON,
    Memo,
    Reduction,
    computed,
    r_factor,
    rank,
    reduce_columns,
    solve,
)
from pintime.table2.visits import CutRuns, Rounds

EPSILON_CUT = "ε_cut"
CUT_HOLD_US = 2000  # FORMAT.md §7: a reached cut waits this long before its falling edge
# ε_cut − ε on the table2 firmware without the hold, FORMAT.md §7: (1 + 4 + 2 + 3 + 2 + 2) − (1 + 5)
CUT_EXTRA_CYCLES = 8
MEASURED = "measured"


@dataclass(frozen=True)
class Column:
    """One exit (or ε, ε_cut): its estimate over measurements, its truth, and how it was obtained."""

    name: str  # "BB1→BB3", "ε", "ε_cut"
    estimate: est.Estimate | None  # µs; None when unresolved
    truth_cycles: int
    how: str  # MEASURED, "datasheet: …", "listing: …" or "unresolved: …"


@dataclass(frozen=True)
class Resolved:
    """The combined system (rounds + cut pulses) and every column it resolves."""

    columns: list[Column]
    reduction: Reduction
    measurements: list[int]  # solved
    skipped: list[int]  # measurements whose system was rank-deficient (e.g. their cut frame was lost)
    outliers: int  # rows rejected by the outlier rule, over all measurements
    cut_pulses: int  # cut pulses of the capture matched to the simulation
    unreached: int  # of them, runs whose round never reached the cut block (dropped)
    needed_cuts: list[int]  # cut blocks whose rows raise the rank of the combined system
    cut_blocks: list[int]  # cut blocks with at least one reached pulse


def column_names(cfg: Cfg) -> list[str]:
    """The exits' names (``BB1→BB3``, ``BB35→ret``), then ε and ε_cut."""
    return [*exit_names(cfg), EPSILON, EPSILON_CUT]


def system(rounds: Rounds, cuts: CutRuns) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(count rows, measured widths µs, exact widths cycles, measurement) of the full rounds and the reached
    cut pulses, in that order."""
    reached = cuts.take(cuts.reached)
    assert reached.width_us is not None
    n, exits = rounds.exit_counts.shape
    counts = np.zeros((n + len(reached.width_cycles), exits + 2), dtype=np.int64)  # filled in place
    counts[:n, :exits], counts[n:, :exits] = rounds.exit_counts, reached.exit_counts
    counts[:n, exits], counts[n:, exits + 1] = 1, 1  # ε, ε_cut
    return (counts, np.concatenate([rounds.width_us, reached.width_us]),
            np.concatenate([rounds.width_cycles, reached.width_cycles]),
            np.concatenate([rounds.measurement, reached.measurement]))


def truth_cycles(cfg: Cfg, counts: np.ndarray, width_cycles: np.ndarray) -> np.ndarray:
    """Per column: the exits' static costs (:mod:`pintime.avr.cfg`), ε and ε_cut from the exact widths
    (PintimeError unless each is one constant)."""
    exits = np.array([e.cycles for e in cfg.exits], dtype=np.int64)
    rest = width_cycles - counts[:, :-2] @ exits  # each row's width less its exits' cycles (no row copies)
    eps = []
    for column in (-2, -1):
        values = np.unique(rest[counts[:, column] == 1])
        if len(values) != 1:
            raise PintimeError(f"cut system: exact width − exits' cycles takes the values "
                               f"{values[:5].tolist()} for the {'full' if column == -2 else 'cut'} pulses "
                               "(visits of another run?)")
        eps.append(int(values[0]))
    return np.concatenate([exits, eps])


def constraints(cfg: Cfg, reduction: Reduction, us_per_cycle: float) -> tuple[list[tuple[np.ndarray, int]],
                                                                              dict[int, str]]:
    """Constraints (coefficients over the columns, right-hand side in cycles) that split the merged
    unknowns this module knows how to split (module docstring), and the reason per merged unknown."""
    extra = CUT_EXTRA_CYCLES + round(CUT_HOLD_US / us_per_cycle)
    names = list(reduction.names)
    rows: list[tuple[np.ndarray, int]] = []
    reasons: dict[int, str] = {}
    epsilon_cut_alone = any(reduction.members(u) == [(EPSILON_CUT, 1)] for u in range(len(reduction.basis)))
    for u in range(len(reduction.basis)):
        members = {name for name, _ in reduction.members(u)}
        if len(members) < 2:
            continue
        block = next((b for b in cfg.blocks if len(b.exits) == 2
                      and members == {names[e.index] for e in b.exits}), None)
        coef = np.zeros(len(names))
        if block is not None:
            stay, jump = block.exits
            coef[jump.index], coef[stay.index] = 1, -1
            rows.append((coef, jump.cycles - stay.cycles))
            reasons[u] = (f"datasheet: taken = fall-through + {jump.cycles - stay.cycles} cycle(s) "
                          f"({block.name}: fixed-trip loop, no first-arrival cut splits them)")
        elif len(members) == 2 and EPSILON in members and epsilon_cut_alone:
            coef[names.index(EPSILON)], coef[names.index(EPSILON_CUT)] = 1, -1
            rows.append((coef, -extra))
            reasons[u] = (f"listing: ε = ε_cut − {extra} cycles (the return block ends every full pulse, "
                          "no cut pulse runs it)")
        else:
            reasons[u] = f"unresolved: only {reduction.formula(u)} is measured"
    return rows, reasons


def _determined(matrix: np.ndarray) -> np.ndarray:
    """Per column, whether the rows of ``matrix`` determine it (its unit vector lies in their span)."""
    _, singular, vt = np.linalg.svd(matrix)
    rank = int(np.sum(singular > singular[0] * max(matrix.shape) * np.finfo(float).eps))
    null = vt[rank:]
    return np.all(np.abs(null) < 1e-9, axis=0) if len(null) else np.ones(matrix.shape[1], dtype=bool)


def needed_cuts(counts: np.ndarray, cut_of_row: np.ndarray, cut_blocks: list[int]) -> list[int]:
    """The cut blocks whose rows raise the rank of the combined system (the others add nothing). Each set
    of rows is replaced by its QR factor R (same row space), so each test is small."""
    factors = {c: r_factor(counts, np.flatnonzero(cut_of_row == c)) for c in [-1, *cut_blocks]}
    full = rank(np.vstack(list(factors.values())), len(counts))
    return [c for c in cut_blocks
            if rank(np.vstack([f for k, f in factors.items() if k != c]), len(counts)) < full]


def resolve(cfg: Cfg, rounds: Rounds, us_per_cycle: float, memo: Memo = computed) -> Resolved:
    """Every exit's cost, ε and ε_cut from the full rounds and the cut pulses (module docstring); what
    the counts alone give is taken from ``memo``."""
    cuts = rounds.cuts
    if cuts is None or cuts.width_us is None:
        raise PintimeError("no cut pulses: the firmware has no cut copies")
    if not cuts.reached.any():
        raise PintimeError("no TABLE2CUT pulse decoded that reached its cut: the merged unknowns stay merged")
    counts, width_us, width_cycles, measurement = system(rounds, cuts)
    names = column_names(cfg)
    truth = memo("cut truth", lambda: truth_cycles(cfg, counts, width_cycles))
    reduction = memo("cut reduction", lambda: reduce_columns(counts, names))
    extra, reasons = constraints(cfg, reduction, us_per_cycle)
    lhs = np.vstack([reduction.matrix.T, *[coef for coef, _ in extra]])
    determined = memo("cut determined", lambda: _determined(lhs))
    values, solved, skipped, outliers = [], [], [], 0
    for m in np.unique(measurement).tolist():
        rows = measurement == m
        try:
            fit = solve(counts[rows], width_us[rows], reduction, est.OUTLIER_FACTOR, est.OUTLIER_FLOOR_US)
        except PintimeError:
            skipped.append(m)
            continue
        rhs = np.concatenate([fit.values, [k * us_per_cycle for _, k in extra]])
        values.append(np.linalg.lstsq(lhs, rhs, rcond=None)[0])
        solved.append(m)
        outliers += fit.outliers
    if not values:
        raise PintimeError("cut system: no measurement has the full rounds and reached cuts to solve it")
    per_measurement = np.array(values)
    how = {c: MEASURED for c in range(len(names))}
    for u, reason in reasons.items():
        for name, _ in reduction.members(u):
            how[names.index(name)] = reason
    columns = [Column(name, est.summarize(per_measurement[:, c]) if determined[c] else None, int(truth[c]),
                      how[c] if determined[c] or how[c] != MEASURED else "unresolved")
               for c, name in enumerate(names)]
    cut_of_row = np.concatenate([np.full(len(rounds.width_us), -1), cuts.cut[cuts.reached]])
    cut_blocks = sorted(set(cuts.cut[cuts.reached].tolist()))
    needed = memo("needed cuts", lambda: needed_cuts(counts, cut_of_row, cut_blocks))
    return Resolved(columns, reduction, solved, skipped, outliers, len(cuts.key),
                    int(np.count_nonzero(~cuts.reached)), needed, cut_blocks)


def _half(e: est.Estimate) -> float:
    return (e.ci95_us[1] - e.ci95_us[0]) / 2


def format_resolved(r: Resolved, us_per_cycle: float) -> str:
    """The per-exit table (Basic Block | cycles | µs ± 95 % CI | simavr truth) and how each was obtained."""
    head = f"{'Basic block exit':<18} {'cycles':>9} {'µs ± 95 % CI':>22} {'truth':>6}  how"
    lines = ["Resolved by cut measurements (paper §5.1): each CFG exit = its block's cycles left that way",
             head, "-" * len(head)]
    for c in r.columns:
        if c.estimate is None:
            lines.append(f"{c.name:<18} {'—':>9} {'—':>22} {c.truth_cycles:>6}  {c.how}")
            continue
        e = c.estimate
        lines.append(f"{c.name:<18} {e.mean_us / us_per_cycle:>9.3f} {e.mean_us:>11.4f} ± {_half(e):<8.4f} "
                     f"{c.truth_cycles:>6}  {'' if c.how == MEASURED else c.how}")
    resolved = sum(c.estimate is not None and c.how == MEASURED for c in r.columns)
    lines.append(f"  {resolved} of {len(r.columns)} columns measured, "
                 f"{sum(c.estimate is not None and c.how != MEASURED for c in r.columns)} by a stated "
                 f"constraint, {sum(c.estimate is None for c in r.columns)} unresolved; "
                 f"{len(r.measurements)} measurements"
                 f"{f', {len(r.skipped)} skipped (rank-deficient: cut frame lost?)' if r.skipped else ''}; "
                 f"{r.cut_pulses} cut pulses, {r.unreached} never reached their block (dropped); "
                 f"{r.outliers} outlier row(s) rejected; cuts that raise the rank: {len(r.needed_cuts)} of "
                 f"{len(r.cut_blocks)} cut blocks")
    return "\n".join(lines)


def resolved_json(r: Resolved, us_per_cycle: float) -> dict[str, Any]:
    """``table2_resolved``: one row per column, and the fit's counts."""
    return {"columns": [{"name": c.name, "how": c.how, "truth_cycles": c.truth_cycles,
                         **({} if c.estimate is None else {
                             "mean_us": c.estimate.mean_us, "std_us": c.estimate.std_us,
                             "ci95_us": list(c.estimate.ci95_us), "ci95_half_us": _half(c.estimate),
                             "count": c.estimate.count, "mean_cycles": c.estimate.mean_us / us_per_cycle})}
                        for c in r.columns],
            "measurements": len(r.measurements), "skipped_measurements": r.skipped,
            "outlier_rows": r.outliers, "cut_pulses": r.cut_pulses, "unreached_cut_pulses": r.unreached,
            "needed_cuts": [f"BB{c}" for c in r.needed_cuts], "cut_blocks": [f"BB{c}" for c in r.cut_blocks],
            "unknowns": len(r.reduction.basis)}
