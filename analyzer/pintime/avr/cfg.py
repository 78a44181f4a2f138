"""Control-flow graph of one compiled AVR function, with each block's static cycle cost (paper §5.1).

The function is read from the ELF with ``avr-nm`` (its address and size) and ``avr-objdump -d`` (its
instructions). Leaders are the entry, every branch, jump and skip target, and every instruction after a
branch, jump, return or skip; a skip (``cpse``, ``sbrc``, ``sbrs``, ``sbic``, ``sbis``) ends its block and
the instruction it may skip is a block of its own. Each block leaves by one or two *exits* (CFG edges); an
exit carries the block's cycle cost when it leaves that way, so a block whose final branch is taken or
not (1 or 2 cycles) or whose skip skips or not (1, 2 or 3 cycles) has two costs. Timings are those of
the datasheets' instruction set summary; simavr 1.6 charges the same. RET and RETI depend on the program
counter's width (:mod:`pintime.avr.chip`: 3 bytes on the ATmega2560, 2 on the ATmega328P and ATmega32U4).

Per-round visit counts come from simavr: either a PC trace of one call (:func:`visits_from_trace`) or a
per-PC histogram of executions and charged cycles (:func:`visits_from_histogram`).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import numpy as np

from pintime.avr.chip import DEFAULT_PC_BYTES, pc_bytes, return_cycles
from pintime.errors import PintimeError

# Cycles of every instruction avr-gcc emits whose time does not depend on control flow.
_FIXED_CYCLES: dict[str, int] = {
    # one cycle: ALU, register moves, immediates, I/O, flag operations
    **dict.fromkeys(
        "add adc sub subi sbc sbci and andi or ori eor com neg sbr cbr inc dec tst clr ser cp cpc cpi "
        "mov movw ldi in out swap lsl lsr rol ror asr bst bld nop sleep wdr break "
        "sec clc sen cln sez clz sei cli ses cls sev clv set clt seh clh bset bclr".split(), 1),
    # two cycles: word arithmetic, multiplies, data memory, bit set/clear in I/O
    **dict.fromkeys(
        "adiw sbiw mul muls mulsu fmul fmuls fmulsu push pop ld ldd st std lds sts sbi cbi".split(), 2),
    # program memory reads
    "lpm": 3, "elpm": 3,
}
_JUMP_CYCLES = {"rjmp": 2, "jmp": 3}  # unconditional, target in the operand
_INDIRECT = {"ijmp", "eijmp"}  # targets unknown statically
_CALLS = {"rcall", "call", "icall", "eicall"}
_RETURNS = {"ret", "reti"}
_BRANCHES = set(
    "brbc brbs brcc brcs breq brge brhc brhs brid brie brlo brlt brmi brne brpl brsh brtc brts brvc "
    "brvs".split()
)
_SKIPS = {"cpse", "sbrc", "sbrs", "sbic", "sbis"}

_LINE = re.compile(r"^\s*([0-9a-f]+):\t((?:[0-9a-f]{2} )+)\s*\t(\S+)[ \t]*([^;]*)")


@dataclass(frozen=True)
class Instruction:
    """One machine instruction of the function."""

    address: int  # byte address in flash
    size_bytes: int  # 2 or 4
    mnemonic: str
    operands: str

    @property
    def next_address(self) -> int:
        return self.address + self.size_bytes

    def target(self) -> int:
        """Byte address a branch, jump or call goes to (``.+k`` counts from the next instruction)."""
        last = self.operands.split(",")[-1].strip()
        if last.startswith("."):
            return self.next_address + int(last[1:], 0)
        return int(last, 0)

    def __str__(self) -> str:
        return f"{self.address:#x}: {self.mnemonic} {self.operands}".rstrip()


@dataclass(frozen=True)
class Exit:
    """A CFG edge: how a block is left, and what the block costs when it is left this way."""

    index: int  # number of this edge in Cfg.exits
    source: int  # block number
    target: int | None  # block number, None when the function returns
    taken: bool  # the block's final branch/skip/jump transferred control (not a fall-through)
    cycles: int  # cycles of the whole source block on this path


@dataclass(frozen=True)
class Block:
    """A basic block: ``BB<number>``, numbered in address order from the entry (BB0)."""

    number: int
    instructions: tuple[Instruction, ...]
    exits: tuple[Exit, ...]  # one or two

    @property
    def address(self) -> int:
        return self.instructions[0].address

    @property
    def name(self) -> str:
        return f"BB{self.number}"

    @property
    def successors(self) -> tuple[int, ...]:
        return tuple(e.target for e in self.exits if e.target is not None)

    @property
    def cycles_min(self) -> int:
        return min(e.cycles for e in self.exits)

    @property
    def cycles_max(self) -> int:
        return max(e.cycles for e in self.exits)

    @property
    def varies(self) -> bool:
        """Whether the block's cost depends on how it is left (final branch taken or not, skip)."""
        return self.cycles_min != self.cycles_max


@dataclass(frozen=True)
class Cfg:
    """The CFG of one function."""

    function: str
    address: int  # byte address of the entry
    size_bytes: int
    blocks: tuple[Block, ...]
    pc_bytes: int = DEFAULT_PC_BYTES  # the chip's program counter (pintime.avr.chip)

    @property
    def exits(self) -> tuple[Exit, ...]:
        return tuple(e for b in self.blocks for e in b.exits)

    @property
    def instructions(self) -> tuple[Instruction, ...]:
        return tuple(i for b in self.blocks for i in b.instructions)

    @property
    def leaders(self) -> np.ndarray:
        """Byte addresses of the blocks' first instructions, ascending (index = block number)."""
        return np.array([b.address for b in self.blocks], dtype=np.int64)


def exit_names(cfg: Cfg) -> list[str]:
    """``BB1→BB3`` for each CFG edge (``→ret`` when the function returns)."""
    return [f"BB{e.source}→{'ret' if e.target is None else f'BB{e.target}'}" for e in cfg.exits]


def instruction_cycles(instruction: Instruction, taken: bool = False, skipped_size_bytes: int = 2,
                       pc: int = DEFAULT_PC_BYTES) -> int:
    """Cycles of one instruction on a ``pc``-byte program counter; ``taken``: the branch is taken / the skip
    skips.

    Raises :class:`PintimeError` for an instruction whose time is not known statically here.
    """
    m = instruction.mnemonic
    if m in _FIXED_CYCLES:
        return _FIXED_CYCLES[m]
    if m in _JUMP_CYCLES:
        return _JUMP_CYCLES[m]
    if m in _RETURNS:
        return return_cycles(pc)[m]
    if m in _BRANCHES:
        return 2 if taken else 1
    if m in _SKIPS:
        return 1 + skipped_size_bytes // 2 if taken else 1
    if m in _CALLS:
        raise PintimeError(f"{instruction} calls other code: its time is not part of this CFG")
    if m in _INDIRECT:
        raise PintimeError(f"{instruction} is an indirect jump: its targets are not known statically")
    raise PintimeError(f"{instruction}: no cycle count known for '{m}'")


def disassemble(elf: str | Path, function: str) -> list[Instruction]:
    """The instructions of ``function`` in ``elf`` (via ``avr-nm`` and ``avr-objdump``)."""
    address, size = code_symbol(elf, function)
    instructions = parse_listing(binutils(["avr-objdump", "-d", "-z", f"--start-address={address:#x}",
                                           f"--stop-address={address + size:#x}", str(elf)]))
    covered = sum(i.size_bytes for i in instructions)
    if covered != size:
        raise PintimeError(f"{function}: disassembly covers {covered} of its {size} bytes")
    return instructions


def parse_listing(listing: str) -> list[Instruction]:
    """The instructions of an ``avr-objdump -d`` listing, in its order."""
    instructions = []
    for line in listing.splitlines():
        match = _LINE.match(line)
        if match:
            addr, raw, mnemonic, operands = match.groups()
            instructions.append(Instruction(int(addr, 16), len(raw.split()), mnemonic, operands.strip()))
    return instructions


def binutils(command: list[str]) -> str:
    """Stdout of an avr-binutils command; a missing tool or a failure is a PintimeError."""
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout
    except FileNotFoundError as err:
        raise PintimeError(f"{command[0]} not found: install binutils-avr (`make deps`)") from err
    except subprocess.CalledProcessError as err:
        why = (err.stderr.strip().splitlines() or [f"exit status {err.returncode}"])[-1]
        raise PintimeError(f"{command[-1]}: not an AVR ELF {command[0]} can read ({why})") from err


def code_symbol(elf: str | Path, name: str) -> tuple[int, int]:
    """Byte address and size of a symbol in flash, a function or a constant (``avr-nm -S``). A C++
    ``void name(void)`` (an Arduino sketch's, firmware/user/pintime.h) is found by its mangled name too."""
    names = {name, f"_Z{len(name)}{name}v"}
    for line in binutils(["avr-nm", "-S", "--defined-only", str(elf)]).splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] in names and fields[2] in "Tt":
            return int(fields[0], 16), int(fields[1], 16)
    raise PintimeError(f"{elf}: no '{name}' with a size in its symbol table (code or flash constants)")


def function_cfg(elf: str | Path, function: str) -> Cfg:
    """Disassemble ``function`` from ``elf`` and build its CFG (see :func:`build_cfg`) for the ELF's chip."""
    return build_cfg(function, disassemble(elf, function), pc_bytes(elf))


def build_cfg(function: str, instructions: list[Instruction], pc: int = DEFAULT_PC_BYTES) -> Cfg:
    """Split ``instructions`` (one function, in address order) into basic blocks with their exits, timed on
    a ``pc``-byte program counter."""
    if not instructions:
        raise PintimeError(f"{function}: no instructions")
    start, end = instructions[0].address, instructions[-1].next_address
    by_address = {i.address: i for i in instructions}
    leaders = {start}
    for i in instructions:
        m = i.mnemonic
        if m in _BRANCHES or m in _JUMP_CYCLES:
            target = i.target()
            if target not in by_address:
                raise PintimeError(f"{function}: {i} leaves the function (to {target:#x})")
            leaders.update((target, i.next_address))
        elif m in _SKIPS:
            skipped = by_address.get(i.next_address)
            if skipped is None:
                raise PintimeError(f"{function}: {i} is the last instruction")
            leaders.update((i.next_address, skipped.next_address))
        elif m in _RETURNS:
            leaders.add(i.next_address)
        else:
            instruction_cycles(i)  # every other instruction must have a known, fixed time
    ordered = sorted(a for a in leaders if a < end)
    number = {a: n for n, a in enumerate(ordered)}
    bounds = ordered + [end]
    blocks = []
    exit_index = 0
    for n in range(len(ordered)):
        body = tuple(i for i in instructions if bounds[n] <= i.address < bounds[n + 1])
        exits = tuple(Exit(exit_index + k, *e)
                      for k, e in enumerate(_exits(function, n, body, number, by_address, end, pc)))
        exit_index += len(exits)
        blocks.append(Block(n, body, exits))
    return Cfg(function, start, end - start, tuple(blocks), pc)


def _exits(function: str, n: int, body: tuple[Instruction, ...], number: dict[int, int],
           by_address: dict[int, Instruction], end: int, pc: int) -> list[tuple[int, int | None, bool, int]]:
    """(source, target, taken, cycles) of each way block ``n`` can be left."""
    last = body[-1]
    base = sum(instruction_cycles(i) for i in body[:-1])
    m = last.mnemonic

    def fall_through() -> int:
        if last.next_address >= end:
            raise PintimeError(f"{function}: execution runs off the end after {last}")
        return number[last.next_address]

    if m in _RETURNS:
        return [(n, None, False, base + return_cycles(pc)[m])]
    if m in _JUMP_CYCLES:
        return [(n, number[last.target()], True, base + _JUMP_CYCLES[m])]
    if m in _BRANCHES:
        taken, not_taken = number[last.target()], fall_through()
        if taken == not_taken:
            raise PintimeError(f"{function}: {last} goes to the next instruction either way; "
                               "a PC trace cannot tell its two costs apart")
        return [(n, not_taken, False, base + 1), (n, taken, True, base + 2)]
    if m in _SKIPS:
        skipped = by_address[last.next_address]
        return [(n, fall_through(), False, base + 1),
                (n, number[skipped.next_address], True,
                 base + instruction_cycles(last, taken=True, skipped_size_bytes=skipped.size_bytes))]
    return [(n, fall_through(), False, base + instruction_cycles(last))]


def simavr_skip_bug_sites(cfg: Cfg) -> list[Instruction]:
    """Skips followed by ``adiw``/``sbiw`` with an immediate whose low nibble is ≥ 0xC.

    simavr 1.6 skips one word too far there (docs/design.md §9), so its run of such code is wrong.
    """
    instructions = cfg.instructions
    return [skip for skip, nxt in pairwise(instructions)
            if skip.mnemonic in _SKIPS and nxt.mnemonic in {"adiw", "sbiw"}
            and int(nxt.operands.split(",")[-1], 0) & 0xF >= 0xC]


@dataclass(frozen=True)
class Visits:
    """How often one call (or one round) ran each block and left it by each exit."""

    block_counts: np.ndarray  # int64 per block number
    exit_counts: np.ndarray  # int64 per Exit.index

    def cycles(self, cfg: Cfg) -> int:
        """Static cost of these visits: Σ over exits of count × the block's cost on that exit."""
        return int(self.exit_counts @ np.array([e.cycles for e in cfg.exits], dtype=np.int64))


def visits_from_trace(cfg: Cfg, pcs: np.ndarray) -> Visits:
    """Visits of one call from the byte addresses it executed, in order (all instructions, or leaders).

    The trace must start at the entry, follow CFG edges and end in a returning block.
    """
    pcs = np.asarray(pcs, dtype=np.int64)
    leaders = cfg.leaders
    where = np.searchsorted(leaders, pcs)
    is_leader = (where < len(leaders)) & (leaders[np.minimum(where, len(leaders) - 1)] == pcs)
    sequence = where[is_leader]
    if len(sequence) == 0 or sequence[0] != 0:
        raise PintimeError(f"{cfg.function}: trace does not start at the entry")
    edge_of = {(e.source, e.target): e.index for e in cfg.exits}
    steps: list[tuple[int, int | None]] = [*pairwise(sequence.tolist()), (int(sequence[-1]), None)]
    exit_counts = np.zeros(len(cfg.exits), dtype=np.int64)
    for step in steps:
        index = edge_of.get(step)
        if index is None:
            raise PintimeError(f"{cfg.function}: trace goes BB{step[0]} → "
                               f"{'return' if step[1] is None else f'BB{step[1]}'}, not a CFG edge")
        exit_counts[index] += 1
    return Visits(np.bincount(sequence, minlength=len(cfg.blocks)).astype(np.int64), exit_counts)


def watch_addresses(cfg: Cfg) -> list[int]:
    """Byte addresses whose execution counts and cycles determine all visits: every leader, and the last
    instruction of every block with two exits (its cycles tell how often it was taken)."""
    last = [b.instructions[-1].address for b in cfg.blocks if len(b.exits) == 2]
    return sorted(set(cfg.leaders.tolist()) | set(last))


def visits_from_histogram(cfg: Cfg, pcs: np.ndarray, counts: np.ndarray, cycles: np.ndarray) -> Visits:
    """Visits from a per-PC histogram of one round, e.g. the simavr harness's ``pc,count,cycles`` rows:
    instruction byte address, executions, cycles charged. Addresses not listed ran 0 times.

    A two-exit block is left by its taken exit ``(cycles − count · not-taken cost) / (extra cost)`` times,
    from its last instruction's entry.
    """
    blocks, exits = visits_from_histograms(cfg, pcs, np.asarray(counts)[None, :], np.asarray(cycles)[None, :])
    return Visits(blocks[0], exits[0])


def visits_from_histograms(cfg: Cfg, pcs: np.ndarray, counts: np.ndarray,
                           cycles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`visits_from_histogram` for many rounds at once: ``counts`` and ``cycles`` are rounds × PCs
    (one column per address of ``pcs``); returns block counts (rounds × blocks) and exit counts (rounds ×
    exits), int64."""
    pcs = np.asarray(pcs, dtype=np.int64)
    counts, cycles = np.asarray(counts, dtype=np.int64), np.asarray(cycles, dtype=np.int64)
    if counts.shape != cycles.shape or counts.ndim != 2 or counts.shape[1] != len(pcs):
        raise ValueError("counts and cycles must be rounds × len(pcs)")
    if len(set(pcs.tolist())) != len(pcs):
        raise PintimeError(f"{cfg.function}: histogram lists an address twice")
    column = {int(pc): k for k, pc in enumerate(pcs)}
    zero = np.zeros(counts.shape[0], dtype=np.int64)

    def of(address: int, table: np.ndarray) -> np.ndarray:
        k = column.get(address)
        return zero if k is None else table[:, k]

    block_counts = np.column_stack([of(b.address, counts) for b in cfg.blocks])
    exit_counts = np.zeros((counts.shape[0], len(cfg.exits)), dtype=np.int64)
    for block in cfg.blocks:
        n = block_counts[:, block.number]
        if len(block.exits) == 1:
            exit_counts[:, block.exits[0].index] = n
            continue
        stay, jump = block.exits
        last = block.instructions[-1]
        n_last, cycles_last = of(last.address, counts), of(last.address, cycles)
        if np.any(n_last != n):
            raise PintimeError(f"{cfg.function}: {block.name} ran {n.tolist()} times, "
                               f"its last instruction {n_last.tolist()}")
        # the last instruction costs instruction_cycles(last) when not taken, plus the difference when taken
        taken, remainder = np.divmod(cycles_last - n * instruction_cycles(last), jump.cycles - stay.cycles)
        if np.any(remainder) or np.any((taken < 0) | (taken > n)):
            raise PintimeError(f"{cfg.function}: histogram of {last} does not fit its timing")
        exit_counts[:, stay.index], exit_counts[:, jump.index] = n - taken, taken
    return block_counts, exit_counts


def describe(cfg: Cfg) -> dict:
    """The CFG as plain data (the JSON of ``pintime cfg --json``); :func:`cfg_from_description` reads it.
    ``pc_bytes`` is written only where it is not the default 3 (older files hold none)."""
    chip = {} if cfg.pc_bytes == DEFAULT_PC_BYTES else {"pc_bytes": cfg.pc_bytes}
    return chip | {
        "function": cfg.function,
        "address": cfg.address,
        "size_bytes": cfg.size_bytes,
        "blocks": [{
            "name": b.name,
            "address": b.address,
            "instructions": len(b.instructions),
            "cycles_min": b.cycles_min,
            "cycles_max": b.cycles_max,
            "exits": [{"index": e.index, "target": None if e.target is None else f"BB{e.target}",
                       "taken": e.taken, "cycles": e.cycles} for e in b.exits],
        } for b in cfg.blocks],
        "watch": watch_addresses(cfg),
        "simavr_skip_bug_sites": [i.address for i in simavr_skip_bug_sites(cfg)],
        "code": [[i.address, i.size_bytes, i.mnemonic, i.operands] for i in cfg.instructions],
    }


def cfg_from_description(data: dict, source: str = "CFG JSON") -> Cfg:
    """Rebuild the :class:`Cfg` a :func:`describe` JSON was made from (no binutils needed), checking that
    its blocks and exit costs are those recorded; PintimeError on anything else. A ``cuts`` member (the cut
    copies, :mod:`pintime.avr.cutcopies`) is not part of the CFG and is left to that module."""
    try:
        code = [Instruction(int(a), int(n), str(m), str(o)) for a, n, m, o in data["code"]]
        cfg = build_cfg(str(data["function"]), code, int(data.get("pc_bytes", DEFAULT_PC_BYTES)))
    except PintimeError as err:
        raise PintimeError(f"{source}: {err}") from None
    except (KeyError, TypeError, ValueError, OverflowError) as err:  # OverflowError: int(Infinity)
        raise PintimeError(f"{source}: not a `pintime cfg --json` file with its code ({err!r}); "
                           "regenerate it with this pintime") from None
    if describe(cfg) != {key: value for key, value in data.items() if key != "cuts"}:
        raise PintimeError(f"{source}: its blocks or cycle costs do not match its own code (edited file?)")
    return cfg
