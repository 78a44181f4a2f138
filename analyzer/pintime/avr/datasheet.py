"""What the datasheet says compiled code costs: the cycles of a straight-line function with the calls it
makes, and of one turn of a loop, summed from the instruction set summary's cycle counts
(``cfg.instruction_cycles``; CALL 5, RCALL/ICALL/EICALL 4 on the ATmega2560's 22-bit PC, one less on a
2-byte PC: :mod:`pintime.avr.chip`) over the ELF's machine code.

These are expectations computed without running anything, beside which the micro-benchmarks' measurements
and simavr's truth are printed (``pintime.estimate.micro``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pintime.avr.cfg import Instruction, binutils, instruction_cycles, parse_listing
from pintime.avr.chip import DEFAULT_PC_BYTES, pc_bytes
from pintime.avr.chip import call_cycles as chip_call_cycles
from pintime.errors import PintimeError

_CALLS = {"call", "rcall", "icall", "eicall"}
_INDIRECT_CALLS = {"icall", "eicall"}
_SKIPS = {"cpse", "sbrc", "sbrs", "sbic", "sbis"}
_MAX_STEPS = 10_000  # a straight-line walk this long is a loop


@dataclass(frozen=True)
class Code:
    """The machine code of an ELF's .text, by address, and its function symbols."""

    at: dict[int, Instruction]  # byte address → instruction
    symbols: dict[str, int]  # function name → byte address
    pc: int = DEFAULT_PC_BYTES  # the chip's program counter in bytes

    @staticmethod
    def read(elf: str | Path) -> Code:
        """Disassemble ``elf`` once (avr-objdump, avr-nm)."""
        listing = parse_listing(binutils(["avr-objdump", "-d", "-z", "-j", ".text", str(elf)]))
        symbols = {}
        for line in binutils(["avr-nm", "--defined-only", str(elf)]).splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[1] in "Tt":
                symbols[fields[2]] = int(fields[0], 16)
        return Code({i.address: i for i in listing}, symbols, pc_bytes(elf))

    def address(self, function: str) -> int:
        if function not in self.symbols:
            raise PintimeError(f"no function '{function}' in the ELF")
        return self.symbols[function]

    def instruction(self, address: int) -> Instruction:
        if address not in self.at:
            raise PintimeError(f"no instruction at {address:#x} in the ELF")
        return self.at[address]


def call_cycles(code: Code, function: str, indirect: str | None = None) -> int:
    """Cycles of ``call function`` up to and including its RET: the CALL, then every instruction the
    function runs, the functions it calls (``indirect``: the target of its ICALL/EICALL) included.
    PintimeError unless the function and its callees are straight-line code (jumps allowed)."""
    return chip_call_cycles(code.pc)["call"] + _run(code, code.address(function), indirect)


def _run(code: Code, address: int, indirect: str | None) -> int:
    """Cycles from ``address`` through the RET of the function it is in, straight-line."""
    cycles = 0
    for _ in range(_MAX_STEPS):
        i = code.instruction(address)
        if i.mnemonic in ("ret", "reti"):
            return cycles + instruction_cycles(i, pc=code.pc)
        if i.mnemonic in _CALLS:
            if i.mnemonic in _INDIRECT_CALLS and indirect is None:
                raise PintimeError(f"{i}: an indirect call with no known target")
            target = code.address(indirect) if i.mnemonic in _INDIRECT_CALLS and indirect else i.target()
            cycles += chip_call_cycles(code.pc)[i.mnemonic] + _run(code, target, indirect)
            address = i.next_address
        elif i.mnemonic in ("jmp", "rjmp"):
            cycles += instruction_cycles(i)
            address = i.target()
        elif i.mnemonic.startswith("br") or i.mnemonic in _SKIPS:
            raise PintimeError(f"{i}: a branch in code expected to be straight-line")
        else:
            cycles += instruction_cycles(i)
            address = i.next_address
    raise PintimeError(f"{address:#x}: no RET within {_MAX_STEPS} instructions")


def loop_turn_cycles(code: Code, function: str) -> int:
    """Cycles of one turn of the loop in ``function``: from the target of its backward jump or branch to
    that jump (taken), the forward branches between (the loop's exits) not taken. A jump at the entry
    (into an identical function the compiler merged this one with, or to a rotated loop's test) is
    followed first."""
    address = code.address(function)
    for _ in range(_MAX_STEPS):  # jumps at the entry: into a merged twin, or to a rotated loop's test
        if code.instruction(address).mnemonic not in ("jmp", "rjmp"):
            break
        address = code.instruction(address).target()
    for _ in range(_MAX_STEPS):
        i = code.instruction(address)
        if i.mnemonic in ("ret", "reti"):
            raise PintimeError(f"{function}: no backward jump before its RET: not a loop")
        if (i.mnemonic == "rjmp" or i.mnemonic.startswith("br")) and i.target() <= i.address:
            return _turn(code, i)
        address = i.next_address
    raise PintimeError(f"{function}: no loop found")


def _turn(code: Code, back: Instruction) -> int:
    """Cycles from ``back``'s target to ``back`` (taken), the branches between not taken."""
    cycles, address = 0, back.target()
    while address != back.address:
        i = code.instruction(address)
        if i.mnemonic in _CALLS or i.mnemonic in ("jmp", "rjmp", "ret", "reti"):
            raise PintimeError(f"{i}: a loop body with calls or jumps has no single turn cost here")
        if i.mnemonic in _SKIPS:
            raise PintimeError(f"{i}: a skip in a loop body has no single turn cost here")
        cycles += instruction_cycles(i)  # a branch: not taken (one of the loop's exits)
        address = i.next_address
    return cycles + instruction_cycles(back, taken=True)
