"""The classic micro-benchmarks (program ``micro``, firmware/micro/MICRO.md) from USER frames.

Benchmark i's USER frames hold M pulses, pulse k around k repetitions of its unit (a call, a loop turn, an
interrupt round trip): the slope of each repetition's line fit (paper §4) is that repetition's cost of one
unit. The interrupt entry and return pulses hold one interrupt each: their width less ε — the round trip's
intercept in the same repetition, the paper's constant of every pulse on the pin — is the latency.

Each row carries the datasheet's expectation: for compiled code the instruction set summary's cycles summed
over the ELF's machine code (:mod:`pintime.avr.datasheet`), for the interrupts the datasheet's response time.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from pintime.avr import datasheet
from pintime.avr.chip import DEFAULT_PC_BYTES, interrupt_response_cycles, return_cycles
from pintime.avr.symbols import function_names
from pintime.errors import PintimeError
from pintime.estimate import estimators as est
from pintime.estimate.table1 import pulse_widths_us
from pintime.frames import Frame


@dataclass(frozen=True)
class Benchmark:
    """One benchmark of the firmware, at its index in ``pintime_user_groups`` (micro.c)."""

    symbol: str  # its group is pintime_user_<index>_<symbol>
    label: str
    kind: str  # "call", "loop", "round_trip", "entry", "return"


def _calls() -> list[Benchmark]:
    out = [Benchmark("micro_f_void", "call", "call"), Benchmark("micro_call_void", "call()", "call")]
    for bits in (8, 16, 32):
        out += [Benchmark(f"micro_call_uint{bits}_{n}", f"call(u{bits}×{n})", "call") for n in range(1, 9)]
    return out


BENCHMARKS: tuple[Benchmark, ...] = (
    *_calls(),
    Benchmark("micro_call_ptr", "call() via pointer", "call"),
    Benchmark("loop_for8", "for, 8-bit counter", "loop"),
    Benchmark("loop_for16", "for, 16-bit counter", "loop"),
    Benchmark("loop_while", "while", "loop"),
    Benchmark("loop_dowhile", "do-while", "loop"),
    Benchmark("loop_down", "for, counting down", "loop"),
    Benchmark("irq_round_trip", "interrupt round trip", "round_trip"),
    Benchmark("irq_entry", "interrupt entry", "entry"),
    Benchmark("irq_return", "interrupt return", "return"),
)
POINTER_TARGET = "micro_f_void"  # the function micro_call_ptr reaches through its pointer (micro.c)
WHAT = {  # what one unit of each kind is, for the printed table
    "call": "per call of the wrapper, its own CALL and RET included",
    "loop": "per loop turn",
    "round_trip": "out PIND (INT0 pending), SEI, 2 NOP, CLI, with the interrupt (a lone RETI) taken",
    "entry": "from SEI (INT1 pending) to the handler's first instruction",
    "return": "from the handler's RETI to the next toggle in main",
}

# The datasheet's interrupt timing: the response takes 5 cycles on the ATmega2560's 22-bit PC, 4 on a 2-byte
# PC (PC pushed, I cleared: pintime.avr.chip), the vector is a JMP (3); RETI takes as long as the response
# and the chip runs one instruction after SEI or RETI before a pending interrupt.
VECTOR_JMP_CYCLES = 3


def irq_datasheet_cycles(pc: int) -> dict[str, int]:
    """Per interrupt benchmark, in cycles of the instructions micro_groups.S runs (MICRO.md §4) on a
    ``pc``-byte program counter."""
    response, reti = interrupt_response_cycles(pc), return_cycles(pc)["reti"]
    return {
        # out, sei, nop, the interrupt, nop, cli
        "round_trip": 1 + 1 + 1 + response + VECTOR_JMP_CYCLES + reti + 1 + 1,
        "entry": 1 + 1 + response + VECTOR_JMP_CYCLES,  # sei, the nop, response, the vector's JMP
        "return": reti + 1,  # RETI, then the nop the interrupt came before, then the toggle
    }


@dataclass(frozen=True)
class MicroRow:
    """One benchmark's estimate (µs of the MCU clock) and its datasheet expectation (cycles)."""

    index: int
    benchmark: Benchmark
    estimate: est.Estimate
    f_cpu_hz: int
    datasheet_cycles: int | None  # None: compiled code without the ELF to read it from
    fit: est.LineFit | None  # the line fit (None for entry and return)

    def cycles(self, us: float) -> float:
        """A duration in MCU cycles."""
        return us * self.f_cpu_hz / 1e6

    @property
    def ci95_half_us(self) -> float:
        lo, hi = self.estimate.ci95_us
        return (hi - lo) / 2


def datasheet_cycles(elf: str | Path) -> dict[int, int]:
    """Every benchmark's datasheet expectation in cycles; the compiled ones read from ``elf``, whose
    groups must be the micro firmware's (PintimeError otherwise)."""
    names = function_names(elf)
    expected = {i: b.symbol for i, b in enumerate(BENCHMARKS)}
    if names != expected:
        raise PintimeError(f"{elf}: its groups are not the micro benchmarks this pintime knows")
    code = datasheet.Code.read(elf)
    out = {}
    for i, b in enumerate(BENCHMARKS):
        if b.kind == "call":
            out[i] = datasheet.call_cycles(code, b.symbol, POINTER_TARGET)
        elif b.kind == "loop":
            out[i] = datasheet.loop_turn_cycles(code, f"micro_{b.symbol}")
        else:
            out[i] = irq_datasheet_cycles(code.pc)[b.kind]
    return out


def build_micro(frames: list[Frame], time: np.ndarray, us_per_unit: float, f_cpu_hz: int,
                expected: dict[int, int] | None = None) -> list[MicroRow]:
    """One row per benchmark decoded, from the valid USER frames of a micro capture; ``expected``: the
    datasheet cycles (:func:`datasheet_cycles`), else only the interrupts' are known (the ATmega2560's)."""
    widths: dict[int, dict[int, np.ndarray]] = defaultdict(dict)  # benchmark → rep → pulse widths
    for frame in frames:
        if frame.kind == "user":
            f = frame.fields
            if f["function"] >= len(BENCHMARKS) or f["m"] < 2:
                raise PintimeError(f"USER frame of benchmark {f['function']} with m = {f['m']}: not a "
                                   f"micro capture of this pintime's {len(BENCHMARKS)} benchmarks")
            widths[f["function"]][f["rep"]] = pulse_widths_us(time, frame.group, us_per_unit)
    fits = {i: _fit(w) for i, w in widths.items() if BENCHMARKS[i].kind not in ("entry", "return")}
    round_trip = next(i for i, b in enumerate(BENCHMARKS) if b.kind == "round_trip")
    rows = []
    for i in sorted(widths):
        b = BENCHMARKS[i]
        ds = (expected or {}).get(i, irq_datasheet_cycles(DEFAULT_PC_BYTES).get(b.kind))
        if i in fits:
            _, fit = fits[i]
            rows.append(MicroRow(i, b, fit.slope, f_cpu_hz, ds, fit))
        elif round_trip in fits:  # entry, return: width − ε of the same repetition
            reps, fit = fits[round_trip]
            epsilon = dict(zip(reps, (r.intercept_us for r in fit.reps), strict=True))
            latency = [float(np.mean(w)) - epsilon[rep]
                       for rep, w in sorted(widths[i].items()) if rep in epsilon]
            if latency:
                rows.append(MicroRow(i, b, est.summarize(np.array(latency)), f_cpu_hz, ds, None))
    return rows


def _fit(by_rep: dict[int, np.ndarray]) -> tuple[list[int], est.LineFit]:
    """The repetitions (sorted) and their line fits."""
    reps = sorted(by_rep)
    return reps, est.line_fit(np.array([by_rep[r] for r in reps]))


def micro_json(rows: list[MicroRow]) -> dict[str, Any]:
    """The ``micro`` rows: per benchmark its estimate in µs and cycles and the datasheet's cycles."""
    def num(x: float) -> float | None:
        return None if np.isnan(x) else float(x)
    out = []
    for r in rows:
        e, per_cycle = r.estimate, r.f_cpu_hz / 1e6
        out.append({"index": r.index, "name": r.benchmark.label, "kind": r.benchmark.kind,
                    "symbol": r.benchmark.symbol, "mean_us": e.mean_us, "std_us": num(e.std_us),
                    "template_sigma_us": e.template_sigma_us,
                    "quantization_sigma_us": e.quantization_sigma_us,
                    "ci95_us": [num(x) for x in e.ci95_us], "ci95_half_us": num(r.ci95_half_us),
                    "count": e.count, "mean_cycles": e.mean_us * per_cycle,
                    "ci95_half_cycles": num(r.ci95_half_us * per_cycle),
                    "datasheet_cycles": r.datasheet_cycles,
                    "outliers": None if r.fit is None else r.fit.outliers})
    return {"micro": out}


def format_micro(rows: list[MicroRow]) -> str:
    """Each benchmark in cycles ± 95 % CI and µs beside the datasheet (`pintime validate` adds the truth)."""
    if not rows:
        return "no USER frame of a micro benchmark decoded"
    head = f"{'Benchmark':<22} {'cycles':>10} {'± 95 % CI':>10} {'µs':>10} {'datasheet':>9} {'reps':>5}"
    lines = ["Micro-benchmarks, line fitting 1×–M× (paper §4); cycles of the MCU clock:", head,
             "-" * len(head)]
    for r in rows:
        e = r.estimate
        ds = "—" if r.datasheet_cycles is None else str(r.datasheet_cycles)
        lines.append(f"{r.benchmark.label:<22} {r.cycles(e.mean_us):>10.3f} "
                     f"{r.cycles(r.ci95_half_us):>10.3f} "
                     f"{e.mean_us:>10.4f} {ds:>9} {e.count:>5}")
    lines += [f"  {kind}: {WHAT[kind]}" for kind in dict.fromkeys(r.benchmark.kind for r in rows)]
    if any(r.datasheet_cycles is None for r in rows):
        lines.append("datasheet — : compiled code; give the firmware's ELF (--elf) to read its cycles")
    return "\n".join(lines)
