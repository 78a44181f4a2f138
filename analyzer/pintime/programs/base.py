"""The interface every program of the firmware implements: what it estimates from a capture's decoded
frames, its JSON and its printed table, how its estimates are checked against simavr's truth, and what the
count method's slow-clock model and ``pintime plan`` take from it.

The pipeline finds a capture's program by its RUN frame (:mod:`pintime.programs.registry`) and asks it alone;
nothing else tests which program a capture holds.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.estimate.estimators import Estimate
from pintime.estimate.slowclock import SlowClock
from pintime.frames import PROGRAMS, Frame, FrameDecode, ScaledTimes
from pintime.programs.truth import Check

# an estimate linear in one repetition's pulse widths (pintime plan): label, technique, its frames' key
# (as pintime.cli.plan.frame_spans_us has them), design, each repetition's edges (µs from its first), estimate
LinearEstimate = tuple[str, str, tuple[str, int], np.ndarray, np.ndarray, Estimate]


@dataclass(frozen=True)
class Inputs:
    """What a program's estimates are made from besides the frames and the edge times they index."""

    path: Path  # the capture
    run: dict[str, int]  # its RUN frame's fields
    us_per_unit: float  # the calibrated clock: edge time base → MCU µs
    edges: Edges  # every channel's edges (the kernel reads its signal pins)
    decode: FrameDecode  # every frame decoded
    time_us: ScaledTimes  # the measurement channel's edge times in MCU µs
    polarity: np.ndarray  # its edges' polarity, an inverted pin undone
    visits: str | Path | None = None  # table2: simavr's per-pulse visits (None: beside the capture)
    elf: str | Path | None = None  # user, micro: the ELF of the firmware that made it (same_firmware)
    unattributed_s: np.ndarray | None = None  # a ladder capture's edges no pin could be given
    # what the estimations of one analysis share (Table 2's joined rounds), kept by the program
    cache: dict[Any, Any] = field(default_factory=dict)

    @property
    def f_cpu_hz(self) -> int:
        """The MCU clock the RUN frame gives."""
        return self.run["f_cpu_hz"]


def same_firmware(elf: str | Path, run: dict[str, int], capture: Path, frames: list[Frame]) -> str | Path:
    """``elf`` if it is the firmware that made the capture, else a PintimeError: another build's functions
    may be numbered otherwise, and their times would be swapped. Its revision must be the RUN frame's, its
    program (``pintime_user_program``) the RUN frame's, and, for a user program, every USER frame's
    function one it registers with as many pulses as its group makes, and (the whole run recorded) every
    function it registers measured. The revision is a checksum of the program's sources (Makefile): a build
    of the same sources with other make variables (USER_M) or a firmware without it (0) shares it."""
    from pintime.avr.symbols import firmware_revision, function_names, user_program, user_pulses

    revision = firmware_revision(elf)
    give = "give the ELF of the firmware that made the capture"
    if revision != run["revision"]:
        raise PintimeError(f"{elf}: firmware {revision:08x}, but {capture} was made by firmware "
                           f"{run['revision']:08x}: {give}")
    program = user_program(elf)
    if program != run["program"]:
        raise PintimeError(f"{elf}: the firmware of program {PROGRAMS.get(program, program)}, but {capture} "
                           f"was made by program {PROGRAMS[run['program']]}: {give}")
    if PROGRAMS[program] != "user":  # micro's groups are its benchmarks (estimate.micro.datasheet_cycles)
        return elf
    names = function_names(elf)
    measured = {(f.fields["function"], f.fields["m"]) for f in frames if f.kind == "user"}
    for function, m in sorted(measured):
        if function not in names or user_pulses(elf, function, names[function]) != m:
            raise PintimeError(f"{elf}: registers no function {function} of {m} pulses, which {capture} "
                               f"measures (another user program's ELF?): {give}")
    unmeasured = sorted(set(names) - {function for function, _ in measured})
    if unmeasured and any(f.kind == "end" for f in frames):  # the whole run was recorded
        raise PintimeError(f"{elf}: registers function {unmeasured[0]} ({names[unmeasured[0]]}), which the "
                           f"whole run in {capture} never measures (another user program's ELF?): {give}")
    return elf


class Program(ABC):
    """One program of the firmware; a subclass per program, registered by its RUN frame name
    (:mod:`pintime.programs.registry`)."""

    name: ClassVar[str]  # frames.PROGRAMS' name of its RUN frame's program id
    elf_use: ClassVar[str | None] = None  # what its ELF (--elf) gives it; None: it takes none
    reads_visits: ClassVar[bool] = False  # whether it joins simavr's per-pulse visits (--visits)

    @abstractmethod
    def estimate(self, inputs: Inputs, time: np.ndarray, frames: list[Frame]) -> Any:
        """The program's result from the measurement channel's edge times ``time`` (source time base) and
        ``frames`` (all of the capture's, or those of its first edges). The pipeline calls it again on each
        draw of the errors all repetitions share, and widens every Estimate in it by their spread
        (:mod:`pintime.estimate.shared`)."""

    @abstractmethod
    def to_json(self, result: Any) -> dict[str, Any]:
        """The result's keys of the ``analyze`` JSON (docs/design.md §6)."""

    @abstractmethod
    def format(self, result: Any) -> str:
        """The result as ``pintime analyze`` prints it."""

    def details(self, result: Any) -> list[str]:
        """The diagnostics ``pintime analyze -v`` prints below the table (none here)."""
        return []

    @abstractmethod
    def check(self, result: Any, out: dict[str, Any], exact_out: dict[str, Any], f_cpu_hz: int) -> Check:
        """The estimates of ``out`` (the capture's ``analyze`` JSON; ``result`` the program's result behind
        it) beside their truth: those of ``exact_out``, the same analysis of simavr's exact edges, unless
        the program knows the truth otherwise."""

    def with_slow_clock(self, slow: SlowClock, result: Any) -> SlowClock:
        """``slow`` with the count method's model beside each of the result's estimates (none here)."""
        return slow

    def released(self, result: Any) -> Any:
        """The result as the analysis keeps it, once every model has been made from it."""
        return result

    def linear_estimates(self, result: Any) -> list[LinearEstimate]:
        """Its estimates linear in one repetition's pulse widths, which ``pintime plan`` plans from their
        design (none here)."""
        return []

    def spread_estimates(self, result: Any, frames: list[Frame], time_us: np.ndarray
                         ) -> tuple[float, list[tuple[str, str, Estimate]]]:
        """The MCU time of one repetition (µs) and the estimates (label, technique, estimate) that
        ``pintime plan`` plans from their measured spread alone (none here)."""
        return float("nan"), []
