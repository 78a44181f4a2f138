"""Did a change help? Two ``pintime analyze --json`` results of one program compared estimate by estimate.

Each result's comparable estimates come from one function per program (:data:`ROWS`, keyed by the JSON's
``run.program``): a name, the mean and the half-width of its 95 % CI, in µs. The change is NEW − OLD. Two
captures are independent measurements, so the change's 95 % CI half-width is the two half-widths added in
quadrature, √(h_old² + h_new²) (each half-width is 1.96 σ of its estimate; the sum of two independent
errors has the summed variance). In % the change and its half-width are divided by OLD's mean (taken as
exact: first order). The verdict is "slower" when the whole CI of the change lies above zero, "faster"
when it lies below, else "no change the CIs can see"; an estimate without a CI (one repetition) gets none.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from pintime.errors import PintimeError

FASTER, SLOWER, NO_CHANGE, NO_CI = "faster", "slower", "no change the CIs can see", "no CI (one repetition)"


@dataclass(frozen=True)
class Row:
    """One comparable estimate of a result: its name, mean and 95 % CI half-width (None: no CI), in µs,
    and its repetitions."""

    name: str
    mean_us: float
    half_us: float | None
    count: int


def _half(ci: list | None) -> float | None:
    """Half the width of a ``[low, high]`` CI; None when either end is missing (one repetition)."""
    if ci is None or any(x is None for x in ci):
        return None
    return (ci[1] - ci[0]) / 2


def _estimate(name: str, e: dict[str, Any], count: int | None = None) -> Row:
    """A row from an estimate in the ``mean_us`` / ``ci95_us`` / ``count`` form (docs/design.md §6)."""
    return Row(name, e["mean_us"], _half(e.get("ci95_us")), e["count"] if count is None else count)


def table1_rows(result: dict[str, Any]) -> list[Row]:
    """Table 1's techniques, then the overdetermined system's T_e, T_i and ε."""
    rows = [_estimate(r["label"], r) for r in result["table1"]]
    over = result.get("overdetermined")
    if over is not None:
        rows += [_estimate(f"overdetermined {k}", over[k]) for k in ("t_e", "t_i", "epsilon")]
    return rows


def table2_rows(result: dict[str, Any]) -> list[Row]:
    """Table 2's unknowns: the block model's, then the exit model's."""
    return ([_estimate(r["label"], r) for r in result["table2"]]
            + [_estimate(f"exit {r['label']}", r) for r in result["table2_exits"]])


def user_rows(result: dict[str, Any]) -> list[Row]:
    """Each measured function's time per call (the line fit's slope)."""
    return [_estimate(r["name"], r["time"], r["reps"]) for r in result["user"]]


def micro_rows(result: dict[str, Any]) -> list[Row]:
    """Each micro-benchmark's estimate."""
    return [_estimate(r["name"], r) for r in result["micro"]]


def kernel_rows(result: dict[str, Any]) -> list[Row]:
    """Each kernel figure (its thread count in the name where it has one)."""
    return [Row(r["name"] if r.get("threads") is None else f"{r['name']} N={r['threads']}", r["mean_us"],
                r["ci95_half_us"], r["count"]) for r in result["kernel"]]


# run.program → the function that lists that program's comparable estimates
ROWS: dict[str, Callable[[dict[str, Any]], list[Row]]] = {
    "table1": table1_rows, "table2": table2_rows, "user": user_rows, "micro": micro_rows,
    "kernel": kernel_rows}


@dataclass(frozen=True)
class Change:
    """One estimate in both results: NEW − OLD in cycles and %, each with its 95 % CI half-width."""

    name: str
    old_cycles: float
    new_cycles: float
    change_cycles: float
    change_ci95_half_cycles: float | None
    change_percent: float
    change_ci95_half_percent: float | None
    verdict: str


def _change(old: Row, new: Row, cycles_per_us: float) -> Change:
    delta = (new.mean_us - old.mean_us) * cycles_per_us
    half = (None if old.half_us is None or new.half_us is None
            else math.hypot(old.half_us, new.half_us) * cycles_per_us)
    old_cycles = old.mean_us * cycles_per_us
    percent = 100 * delta / old_cycles if old_cycles else math.nan
    half_percent = None if half is None or not old_cycles else 100 * half / abs(old_cycles)
    verdict = (NO_CI if half is None else SLOWER if delta - half > 0 else FASTER if delta + half < 0
               else NO_CHANGE)
    return Change(old.name, old_cycles, new.mean_us * cycles_per_us, delta, half, percent, half_percent,
                  verdict)


def run_of(result: dict[str, Any], what: str) -> dict[str, Any]:
    """``result``'s run (program, F_CPU), or a PintimeError: not an analyze result."""
    run = result.get("run")
    if not isinstance(run, dict) or run.get("program") not in ROWS or "f_cpu_hz" not in run:
        raise PintimeError(f"{what}: not a `pintime analyze --json` result (no run.program, run.f_cpu_hz)")
    return run


def refuse_different(old: dict[str, Any], new: dict[str, Any], names: tuple[str, str]) -> None:
    """A PintimeError naming what differs when the two results are not of one program at one clock."""
    runs = run_of(old, names[0]), run_of(new, names[1])
    for key, what in (("program", "program"), ("f_cpu_hz", "clock (F_CPU, Hz)")):
        if runs[0][key] != runs[1][key]:
            raise PintimeError(f"{names[0]} and {names[1]} differ in {what}: {runs[0][key]} vs "
                               f"{runs[1][key]}; only results of one program at one clock compare")


@dataclass(frozen=True)
class Comparison:
    """Every estimate both results hold, and the names only one of them holds."""

    program: str
    f_cpu_hz: int
    changes: list[Change]
    only_old: list[str]
    only_new: list[str]


def compare(old: dict[str, Any], new: dict[str, Any], names: tuple[str, str] = ("OLD", "NEW")) -> Comparison:
    """NEW against OLD, row by row (``names`` name the two in errors)."""
    refuse_different(old, new, names)
    program, f_cpu_hz = old["run"]["program"], old["run"]["f_cpu_hz"]
    try:
        rows = [{r.name: r for r in ROWS[program](x)} for x in (old, new)]
    except (KeyError, TypeError) as err:
        raise PintimeError(f"{names[0]} or {names[1]}: a {program} result without its estimates ({err})") \
            from None
    changes = [_change(row, rows[1][name], f_cpu_hz / 1e6) for name, row in rows[0].items()
               if name in rows[1]]
    return Comparison(program, f_cpu_hz, changes, [n for n in rows[0] if n not in rows[1]],
                      [n for n in rows[1] if n not in rows[0]])


def _pm(value: float, half: float | None, digits: int) -> str:
    return f"{value:+.{digits}f} ± " + ("—" if half is None else f"{half:.2g}")


def format_comparison(c: Comparison) -> str:
    """One line per estimate: OLD and NEW cycles, the change ± 95 % CI in cycles and %, the verdict."""
    head = (f"{'Estimate':<26} {'old (cycles)':>13} {'new (cycles)':>13} {'change (cycles)':>22} "
            f"{'change (%)':>18}  verdict")
    lines = [f"program {c.program}, F_CPU {c.f_cpu_hz} Hz; change = new − old ± 95 % CI "
             "(both CIs in quadrature)", head, "-" * len(head)]
    for ch in c.changes:
        lines.append(f"{ch.name:<26} {ch.old_cycles:>13.3f} {ch.new_cycles:>13.3f} "
                     f"{_pm(ch.change_cycles, ch.change_ci95_half_cycles, 3):>22} "
                     f"{_pm(ch.change_percent, ch.change_ci95_half_percent, 2):>18}  {ch.verdict}")
    for where, names in (("old", c.only_old), ("new", c.only_new)):
        if names:
            lines.append(f"only in the {where} result (not compared): {', '.join(names)}")
    return "\n".join(lines)


def comparison_json(c: Comparison) -> dict[str, Any]:
    """The comparison as JSON: program, clock, one object per estimate, the names not compared."""
    return {"program": c.program, "f_cpu_hz": c.f_cpu_hz, "rule": "change = new - old; 95 % CI half-width "
            "= sqrt(h_old^2 + h_new^2); % of old's mean",
            "changes": [asdict(ch) for ch in c.changes], "only_old": c.only_old, "only_new": c.only_new}
