"""Expected cycles from the listing, to set beside a measurement (Muller, "Modeling and Analysis:
Measuring": state what you expect, measure, then confront the two; docs/design.md §11).

A function's cycles follow from its CFG (:mod:`pintime.avr.cfg`: the datasheet cost of every block on
each way it is left): exact for straight-line code, a min–max over paths where it branches. Loops are
natural loops (a CFG edge back to a block that dominates its source), collapsed innermost first into one
node that costs its trip count times one pass. The trip count is known when an 8-bit register counts the
passes: set by ``ldi`` (or ``clr``) before the loop, changed by one ``dec``, ``inc`` or ``subi`` in every
pass and written nowhere else in the loop, and tested by the loop's only branch back to its start
(``brne``/``breq`` on that change's flags or on a ``cpi``). Any other loop's trip count is unknown: its
minimum is one pass and its maximum is unknown (None). Calls and indirect jumps are not followed (the CFG
refuses them): such a function has no expectation, and says why.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pintime.avr.cfg import Cfg, Exit, Instruction, function_cfg
from pintime.avr.chip import call_cycles
from pintime.errors import PintimeError

# A listing counts whole cycles: a 95 % CI that misses its range by less than half a cycle still rounds into
# it, and is a measurement's own systematic error (ps of a pin or a card, or the 5 % a CI misses by
# chance), not the model's. Only a CI wholly beyond that is flagged.
TOLERANCE_CYCLES = 0.5
_STEPS = {"dec", "inc", "subi"}
_READ_ONLY_FIRST = {"cp", "cpc", "cpi", "tst", "cpse", "sbrc", "sbrs", "push", "bst"}
_MULTIPLIES = {"mul", "muls", "mulsu", "fmul", "fmuls", "fmulsu"}
_PAIRS = {"movw", "adiw", "sbiw"}
_POINTERS = {"X": (26, 27), "Y": (28, 29), "Z": (30, 31)}
_REGISTER = re.compile(r"^r(\d+)$")

Range = tuple[float, float | None]  # cycles, min and max (None: unknown, unbounded as far as we know)


@dataclass(frozen=True)
class Expectation:
    """What the listing says a measurement should give, in cycles."""

    min_cycles: float | None  # None: the listing tells nothing (``how`` says why)
    max_cycles: float | None  # None: no upper bound known (a loop of unknown trip count)
    how: str  # how it was derived, or why there is none

    @property
    def exact(self) -> float | None:
        """The one expected value when every path costs the same, else None."""
        return self.min_cycles if self.min_cycles is not None and self.max_cycles == self.min_cycles else None

    def outside(self, low: float, high: float) -> bool | None:
        """Whether a measured interval [low, high] in cycles (a 95 % CI) lies wholly outside the expected
        range widened by :data:`TOLERANCE_CYCLES`; None without an expectation."""
        if self.min_cycles is None:
            return None
        top = math.inf if self.max_cycles is None else self.max_cycles
        return high < self.min_cycles - TOLERANCE_CYCLES or low > top + TOLERANCE_CYCLES

    def plus(self, cycles: int, why: str) -> Expectation:
        """The same with a constant added (e.g. the CALL that enters a function)."""
        if self.min_cycles is None:
            return self
        high = None if self.max_cycles is None else self.max_cycles + cycles
        return Expectation(self.min_cycles + cycles, high, f"{self.how}; {why}")

    def to_json(self, low: float, high: float) -> dict[str, object]:
        """``expected_cycles`` (None unless exact), ``expected_min_cycles``, ``expected_max_cycles``,
        ``expected_how`` and ``outside_expectation`` against the measured interval [low, high]."""
        return {"expected_cycles": self.exact, "expected_min_cycles": self.min_cycles,
                "expected_max_cycles": self.max_cycles, "expected_how": self.how,
                "outside_expectation": self.outside(low, high)}


def range_text(low: float | None, high: float | None) -> str:
    """``48``, ``94–110``, ``≥ 20`` or ``—``: an expected range for a table cell."""
    def num(x: float) -> str:
        return f"{x:.0f}" if float(x).is_integer() else f"{x:.3f}"
    if low is None:
        return "—"
    if high is None:
        return f"≥ {num(low)}"
    return num(low) if high == low else f"{num(low)}–{num(high)}"


def expect_call(elf: str | Path, function: str) -> Expectation:
    """Cycles of ``call function`` and the function up to its RET, as a user pulse runs it
    (firmware/user/pintime.h), or an expectation of None saying why the listing cannot tell."""
    try:
        cfg = function_cfg(elf, function)
        call = call_cycles(cfg.pc_bytes)["call"]
        return path_cycles(cfg).plus(call, f"CALL {call}")
    except PintimeError as err:
        return Expectation(None, None, f"not from the listing: {err}")


@dataclass(frozen=True)
class _Edge:
    source: int  # block number (a collapsed loop's header)
    target: int | None  # None: the function returns
    cost: Range
    exit: Exit | None  # the CFG edge, None for a collapsed loop's way out


def path_cycles(cfg: Cfg) -> Expectation:
    """Min and max cycles over the function's paths from entry to RET (RET included, not the CALL)."""
    dom = _dominators(cfg)
    loops: dict[int, set[int]] = defaultdict(set)
    for e in cfg.exits:
        if e.target is not None and e.target in dom[e.source]:  # a back edge: its target dominates it
            loops[e.target] |= _natural_loop(cfg, e.target, e.source)
    edges = [_Edge(e.source, e.target, (e.cycles, e.cycles), e) for e in cfg.exits]
    notes: list[str] = []
    collapsed: set[int] = set()  # blocks of loops already collapsed
    for header, body in sorted(loops.items(), key=lambda kv: len(kv[1])):
        edges = _collapse(cfg, dom, header, body, edges, collapsed, notes)
        collapsed |= body
    reach = _reach(cfg, 0, edges, set(range(len(cfg.blocks))))
    ends = [_add(reach[e.source], e.cost) for e in edges if e.target is None and e.source in reach]
    if not ends:
        raise PintimeError(f"{cfg.function}: no path from its entry returns")
    low, high = _union(ends)
    paths = "straight-line" if all(len(b.exits) == 1 for b in cfg.blocks) else (
        "the same on every path" if high == low else "min–max over paths")
    return Expectation(low, high, "; ".join([f"{cfg.function}: {paths}", *notes]))


def _dominators(cfg: Cfg) -> list[set[int]]:
    """Per block, the blocks on every path from the entry to it (itself included)."""
    n = len(cfg.blocks)
    preds: list[list[int]] = [[] for _ in range(n)]
    for e in cfg.exits:
        if e.target is not None:
            preds[e.target].append(e.source)
    dom = [{0}] + [set(range(n)) for _ in range(n - 1)]
    changed = True
    while changed:
        changed = False
        for b in range(1, n):
            new = {b} | (set.intersection(*(dom[p] for p in preds[b])) if preds[b] else set())
            if new != dom[b]:
                dom[b], changed = new, True
    return dom


def _natural_loop(cfg: Cfg, header: int, latch: int) -> set[int]:
    """The header and every block that reaches ``latch`` without passing through the header."""
    preds: dict[int, list[int]] = defaultdict(list)
    for e in cfg.exits:
        if e.target is not None:
            preds[e.target].append(e.source)
    body, stack = {header, latch}, ([] if latch == header else [latch])
    while stack:
        for p in preds[stack.pop()]:
            if p not in body:
                body.add(p)
                stack.append(p)
    return body


def _add(a: Range, b: Range) -> Range:
    return a[0] + b[0], None if a[1] is None or b[1] is None else a[1] + b[1]


def _union(ranges: list[Range]) -> Range:
    highs = [r[1] for r in ranges]
    return min(r[0] for r in ranges), None if None in highs else max(h for h in highs if h is not None)


def _reach(cfg: Cfg, start: int, edges: list[_Edge], inside: set[int]) -> dict[int, Range]:
    """Cycles of the paths from ``start`` to the entry of every node of ``inside`` it reaches, edges back
    to ``start`` left out; PintimeError when what remains still has a cycle (not a natural loop)."""
    out: dict[int, list[tuple[int, Range]]] = defaultdict(list)  # node → (next node, cost)
    for e in edges:
        if e.source in inside and e.target is not None and e.target in inside and e.target != start:
            out[e.source].append((e.target, e.cost))
    seen, stack = {start}, [start]
    while stack:
        for t, _ in out[stack.pop()]:
            if t not in seen:
                seen.add(t)
                stack.append(t)
    pending: dict[int, int] = defaultdict(int)
    for n in seen:
        for t, _ in out[n]:
            pending[t] += 1
    best: dict[int, Range] = {start: (0, 0)}
    ready, done = [start], 0
    while ready:
        n = ready.pop()
        done += 1
        for t, cost in out[n]:
            best[t] = _union([_add(best[n], cost)] + ([best[t]] if t in best else []))
            pending[t] -= 1
            if pending[t] == 0:
                ready.append(t)
    if done != len(seen):
        raise PintimeError(f"{cfg.function}: a cycle that is not a natural loop (irreducible control flow)")
    return best


def _collapse(cfg: Cfg, dom: list[set[int]], header: int, body: set[int], edges: list[_Edge],
              collapsed: set[int], notes: list[str]) -> list[_Edge]:
    """``edges`` with the loop ``body`` replaced by its header, left by the loop's exits at their cost
    over all passes."""
    if any(e.source not in body and e.target in body and e.target != header for e in edges):
        raise PintimeError(f"{cfg.function}: a loop entered other than at its start (irreducible)")
    reach = _reach(cfg, header, edges, body)
    back = [e for e in edges if e.source in body and e.target == header and e.source in reach]
    one_pass = _union([_add(reach[e.source], e.cost) for e in back])
    trips, why = _trip_count(cfg, dom, header, body, back, edges, collapsed)
    where = f"loop at {cfg.blocks[header].address:#x}"
    notes.append(f"{where}: {trips} passes ({why})" if trips else f"{where}: trip count unknown ({why})")
    out = [e for e in edges if e.source not in body]
    for e in edges:
        if e.source in body and e.target not in body and e.source in reach:
            last = _add(reach[e.source], e.cost)
            if trips is None:
                cost: Range = (last[0], None)
            elif e.exit is not None and len(back) == 1 and e.exit.source == back[0].source:
                cost = _add(_scale(one_pass, trips - 1), last)  # the count's own exit: after the last pass
            else:  # any other way out (a break) may be taken in any pass
                cost = (last[0], _add(_scale(one_pass, trips - 1), last)[1])
            out.append(_Edge(header, e.target, cost, None))
    return out


def _scale(r: Range, k: int) -> Range:
    return r[0] * k, None if r[1] is None else r[1] * k


def _trip_count(cfg: Cfg, dom: list[set[int]], header: int, body: set[int], back: list[_Edge],
                edges: list[_Edge], collapsed: set[int]) -> tuple[int | None, str]:
    """How often the loop's header runs per entry, when a counter register tells (see the module), with
    how it was found; else None and why not."""
    if len(back) != 1 or back[0].exit is None:
        return None, "more than one way back to its start"
    latch = cfg.blocks[back[0].exit.source]
    branch = latch.instructions[-1]
    leave = [e for e in latch.exits if e is not back[0].exit]
    if len(leave) != 1 or leave[0].target in body or branch.mnemonic not in ("brne", "breq"):
        return None, f"its way back ({branch.mnemonic}) is not a count test that leaves the loop"
    if (branch.mnemonic == "brne") != back[0].exit.taken:
        return None, f"its {branch.mnemonic} loops while a count is equal, not until it is"
    test = latch.instructions[-2] if len(latch.instructions) >= 2 else None
    if test is None or test.mnemonic not in _STEPS | {"cpi"}:
        return None, "no cpi, dec, inc or subi right before its back branch"
    register, end = _register(test, 0), (_immediate(test) if test.mnemonic == "cpi" else 0)
    writes = [(b, k, i) for b in sorted(body) for k, i in enumerate(cfg.blocks[b].instructions)
              if register in _written(i)]
    if len(writes) != 1 or writes[0][2].mnemonic not in _STEPS:
        return None, f"r{register} is not changed by exactly one dec/inc/subi in the loop"
    block, k, step_instruction = writes[0]
    inner = block in collapsed or block not in dom[latch.number]
    if inner or (block == latch.number and k > len(latch.instructions) - 2):
        return None, f"r{register}'s {step_instruction.mnemonic} does not run once per pass before the test"
    m = step_instruction.mnemonic
    step = -1 if m == "dec" else 1 if m == "inc" else -_immediate(step_instruction)
    start = _initial_value(cfg, header, body, register, edges, collapsed)
    if start is None:
        return None, f"r{register}'s value on entry is not a constant the listing shows"
    for n in range(1, 257):
        if (start + n * step) % 256 == end:
            return n, f"r{register} from {start}, {step:+d} per pass, until {end}"
    return None, f"r{register} never reaches {end}"


def _initial_value(cfg: Cfg, header: int, body: set[int], register: int, edges: list[_Edge],
                   collapsed: set[int]) -> int | None:
    """The constant ``register`` holds when the loop is entered (its one way in from outside), or None."""
    into = [e for e in edges if e.target == header and e.source not in body]
    if len(into) != 1 or into[0].exit is None:
        return None
    block, seen = into[0].source, set()
    while block not in seen and block not in collapsed:
        seen.add(block)
        for i in reversed(cfg.blocks[block].instructions):
            if register in _written(i):
                if i.mnemonic == "ldi":
                    return _immediate(i) & 0xFF
                operands = [o.strip() for o in i.operands.split(",")]
                return 0 if i.mnemonic in ("clr", "eor", "sub") and len(set(operands)) == 1 else None
        preds = [e.source for e in cfg.exits if e.target == block]
        if len(preds) != 1:
            return None
        block = preds[0]
    return None


def _register(i: Instruction, k: int) -> int:
    match = _REGISTER.match(i.operands.split(",")[k].strip())
    if match is None:
        raise PintimeError(f"{i}: operand {k} is not a register")
    return int(match.group(1))


def _immediate(i: Instruction) -> int:
    return int(i.operands.split(",")[-1].strip(), 0)


def _written(i: Instruction) -> set[int]:
    """Registers ``i`` may write (more rather than fewer: a missed write would make a count wrong)."""
    operands = [o.strip() for o in i.operands.split(",")]
    written: set[int] = set()
    for o in operands:  # X+, -Y, Z+: the pointer pair changes
        name = o.strip("+-")
        if name in _POINTERS and o != name:
            written.update(_POINTERS[name])
    m = i.mnemonic
    if m in _MULTIPLIES or (m in ("lpm", "elpm") and not i.operands):
        return written | {0, 1}
    match = _REGISTER.match(operands[0])
    if match is None or m in _READ_ONLY_FIRST:
        return written
    first = int(match.group(1))
    return written | ({first, first + 1} if m in _PAIRS else {first})
