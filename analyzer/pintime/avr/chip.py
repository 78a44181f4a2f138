"""What of an AVR's timing depends on the chip an ELF was built for: the program counter's width.

A CALL, RCALL, ICALL or interrupt pushes the return address, a RET or RETI pops it: 3 bytes on a chip with
more than 128 KiB of flash (ATmega2560, avr-gcc's avr6), 2 on the others (ATmega328P, ATmega32U4: avr5),
one cycle per byte (datasheets' instruction set summaries; simavr 1.6 charges the same). The width is read
from the ELF header's machine flags, which avr-gcc sets from -mmcu.
"""

from __future__ import annotations

from pathlib import Path

from pintime.errors import PintimeError

DEFAULT_PC_BYTES = 3  # the ATmega2560 of the Mega, pintime's first board
_MACH_MASK = 0x7F  # EF_AVR_MACH: the architecture number in e_flags
_THREE_BYTE_PC = {6, 106, 107}  # avr6, avrxmega6, avrxmega7
_E_FLAGS_OFFSET = 36  # in a 32-bit ELF header
_EM_AVR = 83


def pc_bytes(elf: str | Path) -> int:
    """Bytes of the program counter of the chip ``elf`` was built for (2 or 3); PintimeError if it is no
    AVR ELF."""
    try:
        header = Path(elf).read_bytes()[:_E_FLAGS_OFFSET + 4]
    except OSError as err:
        raise PintimeError(f"cannot read {elf}: {err.strerror}") from None
    if len(header) < _E_FLAGS_OFFSET + 4 or header[:4] != b"\x7fELF" or header[18] != _EM_AVR:
        raise PintimeError(f"{elf} is not an AVR ELF file")
    flags = int.from_bytes(header[_E_FLAGS_OFFSET:_E_FLAGS_OFFSET + 4], "little")
    return 3 if (flags & _MACH_MASK) in _THREE_BYTE_PC else 2


def call_cycles(pc: int) -> dict[str, int]:
    """Cycles of each call instruction on a ``pc``-byte program counter."""
    return {"call": pc + 2, "rcall": pc + 1, "icall": pc + 1, "eicall": pc + 1}


def return_cycles(pc: int) -> dict[str, int]:
    """Cycles of RET and RETI on a ``pc``-byte program counter."""
    return {"ret": pc + 2, "reti": pc + 2}


def interrupt_response_cycles(pc: int) -> int:
    """Cycles from a pending interrupt's acceptance to its vector's first instruction (PC pushed, I
    cleared), without the vector's JMP."""
    return pc + 2
