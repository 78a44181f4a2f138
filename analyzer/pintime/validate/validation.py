"""The result of ``pintime validate``: a capture's estimates beside their simavr truth, and its JSON.

:func:`pintime.validate.compare.compare` builds a :class:`Validation`; ``pintime validate`` prints it and
writes :meth:`Validation.to_json`: the capture's ``analyze`` JSON with the truth, the errors and the CI
verdicts added to each estimate, then ``table2_coverage``, ``truth`` and the per-edge ``edges``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pintime.estimate.estimators import Coverage, coverage
from pintime.validate.edgecheck import EdgeErrors
from pintime.validate.laddercheck import PinCheck

FLOAT_US = 1e-9  # float rounding of an exact fit: a resolved exit this close to its truth is within any CI


def within(error_us: float, ci95_half_us: float) -> bool:
    """Whether an estimate ``error_us`` from its truth lies within its 95 % CI (float rounding of an exact
    fit counts as within)."""
    return abs(error_us) <= ci95_half_us + FLOAT_US


@dataclass(frozen=True)
class Compared:
    """An estimate over repetitions beside its truth: the same estimator on the exact edges."""

    mean_us: float  # the capture's estimate: the mean over its repetitions
    std_us: float | None  # their standard deviation; None for a single repetition
    count: int  # repetitions
    truth_us: float | None  # the same estimate on the exact edges; None where they have no such estimate
    shared_sigma_us: float = 0.0  # 1σ of the errors its repetitions share (learned template, rounding)
    ci95_half_us: float | None = None  # half-width of its 95 % CI (None: no CI, as for one repetition)

    @property
    def error_us(self) -> float | None:
        """The estimate less its truth (None without a truth)."""
        return None if self.truth_us is None else self.mean_us - self.truth_us

    @property
    def error_se(self) -> float | None:
        """The error in standard errors: of the mean of ``count`` repetitions, and of the learned template's
        shared error beside it (None without a truth or a standard error)."""
        if self.std_us is None or self.count < 2:
            return None
        se = float(np.hypot(self.std_us / self.count ** 0.5, self.shared_sigma_us))
        error = self.error_us
        return None if error is None or not se else error / se

    @property
    def within_ci95(self) -> bool | None:
        """Whether the truth lies within the 95 % CI, whose Student's t knows how few repetitions there are
        (``error_se`` does not: with two, −6 may be inside); float rounding counts as within; None without
        a truth or a CI."""
        error = self.error_us
        if error is None or self.ci95_half_us is None:
            return None
        return within(error, self.ci95_half_us)

    def to_json(self) -> dict[str, Any]:
        """The keys added to the estimate's ``analyze`` JSON."""
        return {"truth_us": self.truth_us, "error_us": self.error_us, "error_se": self.error_se,
                "within_ci95": self.within_ci95}


@dataclass(frozen=True, kw_only=True)
class CyclesCompared(Compared):
    """An estimate beside its truth, in MCU cycles too."""

    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    truth_cycles: float | None  # ``truth_us`` in cycles

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "truth_cycles": self.truth_cycles}


@dataclass(frozen=True)
class Table1Row:
    """A Table 1 technique's estimate of the reference routine beside its truth."""

    label: str  # the technique as Table 1 names it ("Differential 55×")
    estimate: Compared


@dataclass(frozen=True)
class Overdetermined:
    """The overdetermined system's three unknowns beside their truth."""

    t_e: Compared  # the routine's execution time
    t_i: Compared  # the instrumentation's
    epsilon: Compared  # the pin's ε


@dataclass(frozen=True)
class UserFunction:
    """A user function's line fit (firmware/pintime.h) beside the same fit on the exact edges."""

    name: str  # the function's name (from the ELF), or its number
    time: CyclesCompared  # time per call: the slope
    intercept: CyclesCompared  # the intercept ε


@dataclass(frozen=True)
class KernelFigure:
    """A kernel figure (pintime.estimate.kernel) beside the same figure on the exact edges."""

    name: str  # "scheduler per thread", "context switch", "overhead N=4", …
    estimate: CyclesCompared
    truth_percent: float | None = None  # overhead rows: the exact edges' overhead in % of the tick

    def to_json(self) -> dict[str, Any]:
        """The keys added to the figure's ``analyze`` JSON row."""
        extra = {} if self.truth_percent is None else {"truth_percent": self.truth_percent}
        return {**self.estimate.to_json(), **extra}


@dataclass(frozen=True)
class MicroBenchmark:
    """A micro-benchmark (program micro) beside the same estimate on the exact edges: simavr's truth."""

    name: str
    mean_us: float  # the mean over the repetitions
    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    ci95_half_us: float  # half-width of its 95 % CI (0 on exact edges)
    ci95_half_cycles: float  # the same in cycles
    count: int  # repetitions
    truth_us: float  # simavr's: the same estimate on the exact edges
    truth_cycles: float
    datasheet_cycles: int | None  # the chip's expectation (None: compiled code, no ELF)
    simavr_differs: str | None  # why simavr is known to differ from the datasheet here (None: it does not)

    @property
    def error_us(self) -> float:
        """The estimate less its truth."""
        return self.mean_us - self.truth_us

    @property
    def within_ci95(self) -> bool:
        """Whether the truth lies within the 95 % CI (float rounding of an exact fit counts as within)."""
        return within(self.error_us, self.ci95_half_us)

    def to_json(self) -> dict[str, Any]:
        """The keys added to the row's ``analyze`` JSON: the truth is simavr's in every row."""
        return {"truth_us": self.truth_us, "truth_cycles": self.truth_cycles, "error_us": self.error_us,
                "within_ci95": self.within_ci95, "truth_source": "simavr",
                "simavr_differs_from_datasheet": self.simavr_differs}


@dataclass(frozen=True)
class Table2Unknown:
    """An unknown of Table 2 (block, CFG edge or resolved exit) beside its exact cost from the CFG."""

    label: str  # the unknown's label, or the resolved exit's name
    mean_us: float  # the mean over the measurements
    mean_cycles: float  # ``mean_us`` in cycles of the MCU clock
    ci95_half_us: float  # half-width of its 95 % CI
    count: int  # measurements
    truth_us: float  # its exact cost from the CFG (+ ε), in µs of the capture's MCU clock
    judged: bool  # False where it holds ε: the capture's own pin error adds to simavr's, no CI verdict

    @property
    def error_us(self) -> float:
        """The estimate less its truth."""
        return self.mean_us - self.truth_us

    @property
    def within_ci95(self) -> bool | None:
        """Whether the truth lies within the 95 % CI (float rounding of an exact fit counts as within);
        None where not judged."""
        return within(self.error_us, self.ci95_half_us) if self.judged else None

    def to_json(self) -> dict[str, Any]:
        """The keys added to the unknown's ``analyze`` JSON."""
        return {"truth_us": self.truth_us, "error_us": self.error_us, "within_ci95": self.within_ci95}


@dataclass(frozen=True)
class ResolvedExit:
    """A CFG exit (or ε, ε_cut) as the cut measurements resolve it (pintime.table2.cuts), beside its truth."""

    name: str  # "BB1→BB3", "ε", "ε_cut"
    how: str  # measured, or the constraint that gives it, or why it is unresolved
    truth_cycles: int  # its exact cost from the CFG
    estimate: Table2Unknown | None  # None: unresolved

    @property
    def rounds_to_truth(self) -> bool | None:
        """Whether the estimate rounds to the truth's whole cycles (None: unresolved)."""
        return None if self.estimate is None else round(self.estimate.mean_cycles) == self.truth_cycles

    def to_json(self) -> dict[str, Any]:
        """The keys added to the column's ``analyze`` JSON (none when unresolved)."""
        e = self.estimate
        return {} if e is None else {"error_us": e.error_us, "within_ci95": e.within_ci95,
                                     "rounds_to_truth": self.rounds_to_truth}


@dataclass(frozen=True)
class JointCoverage:
    """The judged estimates against their joint 95 % CIs (each widened by the Bonferroni factor)."""

    outside: int  # estimates outside their widened CI
    total: int  # estimates judged
    factor: float  # the widest Bonferroni factor applied (1 without estimates)


@dataclass(frozen=True)
class Table2Coverage:
    """Table 2's estimates outside their 95 % CI, against the count chance predicts."""

    block: Coverage  # the block model's ε-free unknowns
    resolved: Coverage  # the exits resolved by the cut measurements
    combined: Coverage  # both together
    joint: JointCoverage  # both together, against their joint CIs

    def to_json(self) -> dict[str, Any]:
        """``table2_coverage``."""
        return {"table2": asdict(self.block), "table2_resolved": asdict(self.resolved),
                "all": asdict(self.combined), "joint": asdict(self.joint)}


@dataclass(frozen=True)
class Validation:
    """A capture's estimates beside their simavr truth (``pintime validate``)."""

    summary: dict[str, Any]  # the capture's analysis, as ``pintime analyze --json`` writes it (not changed)
    truth: str  # the simavr truth JSON compared against
    routine_us: float  # the reference routine's true cost (ref100, 100 cycles), µs
    table1: tuple[Table1Row, ...] = ()
    overdetermined: Overdetermined | None = None  # None unless both the capture and the exact edges have it
    user: tuple[UserFunction, ...] = ()
    table2: tuple[Table2Unknown, ...] | None = None  # the block model; None: not a table2 capture
    table2_exits: tuple[Table2Unknown, ...] | None = None  # the exit model; None: not a table2 capture
    resolved: tuple[ResolvedExit, ...] = ()  # every column of the cut measurements' system
    coverage: Table2Coverage | None = None  # None: not a table2 capture
    # per edge locator (or why it was not compared); empty: exact edges
    edges: Mapping[str, EdgeErrors | str] = field(default_factory=dict)
    kernel: tuple[KernelFigure, ...] = ()  # kernel programs: every figure beside its truth
    micro: tuple[MicroBenchmark, ...] = ()  # program micro: each benchmark beside simavr's truth
    micro_coverage: Coverage | None = None  # None: not a micro capture
    ladder: tuple[PinCheck, ...] = ()  # a resistor-ladder capture: each pin's attribution against simavr

    @property
    def kernel_coverage(self) -> Coverage:
        """The kernel figures whose truth lies outside their 95 % CI, against chance (those with a CI)."""
        inside = [k.estimate.within_ci95 for k in self.kernel if k.estimate.within_ci95 is not None]
        return coverage(np.array(inside, dtype=bool))

    def to_json(self) -> dict[str, Any]:
        """The ``pintime validate --json`` result: ``summary`` with each comparison's keys added to its
        estimate, then ``table2_coverage``, ``truth`` and ``edges``."""
        out = copy.deepcopy(self.summary)
        for row, t1 in zip(out["table1"], self.table1, strict=True):
            row.update(t1.estimate.to_json(), routine_us=self.routine_us)
        for row, figure in zip(out.get("kernel", []), self.kernel, strict=True):
            row.update(figure.to_json())
        for row, fn in zip(out.get("user", []), self.user, strict=True):
            row["time"].update(fn.time.to_json())
            row["intercept"].update(fn.intercept.to_json())
        for key, unknowns in (("table2", self.table2), ("table2_exits", self.table2_exits)):
            for row, u in zip(out.get(key, []), unknowns or (), strict=True):
                row.update(u.to_json())
        for row, c in zip(out.get("table2_resolved", {}).get("columns", []), self.resolved, strict=True):
            row.update(c.to_json())
        if self.coverage is not None:
            out["table2_coverage"] = self.coverage.to_json()
        if self.kernel:
            out["kernel_coverage"] = asdict(self.kernel_coverage)
        for row, m in zip(out.get("micro", []), self.micro, strict=True):
            row.update(m.to_json())
        if self.micro_coverage is not None:
            out["micro_coverage"] = asdict(self.micro_coverage)
        if (o := self.overdetermined) is not None:
            for name, estimate in (("t_e", o.t_e), ("t_i", o.t_i), ("epsilon", o.epsilon)):
                out["overdetermined"][name].update(estimate.to_json())
        out["truth"] = self.truth
        out["edges"] = {method: {"not_compared": e} if isinstance(e, str) else e.to_json()
                        for method, e in self.edges.items()}
        if self.ladder:
            out["ladder_check"] = [c.to_json() for c in self.ladder]
        return out
