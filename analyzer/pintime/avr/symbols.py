"""What a firmware ELF says about itself: its revision and the functions a user program registers."""

from __future__ import annotations

import re
from pathlib import Path

from pintime.avr.cfg import binutils, code_symbol, disassemble
from pintime.errors import PintimeError

GROUP_SYMBOL = re.compile(r"^pintime_user_(\d+)_(\w+)$")  # firmware/user/pintime.h: function i's group
REVISION_SYMBOL = "pintime_fw_revision"  # firmware/common/frames.c: the revision the RUN frame sends
PROGRAM_SYMBOL = "pintime_user_program"  # firmware/user/pintime.h: the program a user program's RUN sends


def function_names(elf: str | Path) -> dict[int, str]:
    """Index → name of the functions a user program's ELF registers, from its symbol table (avr-nm)."""
    names = {}
    for line in binutils(["avr-nm", str(elf)]).splitlines():
        match = GROUP_SYMBOL.match(line.split()[-1]) if line.split() else None
        if match:
            names[int(match.group(1))] = match.group(2)
    if not names:
        raise PintimeError(f"{elf}: no pintime_user_<i>_<name> symbols: not a PINTIME_FUNCTIONS program")
    return names


def firmware_revision(elf: str | Path) -> int:
    """The revision the ELF's RUN frames send (``pintime_fw_revision``, 4 bytes little-endian in flash)."""
    address, _ = code_symbol(elf, REVISION_SYMBOL)
    dump = binutils(["avr-objdump", "-s", "-j", ".text", f"--start-address={address:#x}",
                     f"--stop-address={address + 4:#x}", str(elf)])
    # " 0122 1ed6 7f0d    ....": address, then up to 16 bytes in groups (split where the address is odd)
    digits = "".join("".join(line[6:41].split()) for line in dump.splitlines() if line.startswith(" "))
    if len(digits) != 8:
        raise PintimeError(f"{elf}: cannot read {REVISION_SYMBOL}")
    return int.from_bytes(bytes.fromhex(digits), "little")


def user_program(elf: str | Path) -> int:
    """The program a user program's RUN frames send (``pintime_user_program``, one byte of its
    initialised data, FORMAT.md §1: 3 = user, 4 = micro)."""
    for line in binutils(["avr-nm", "-S", "--defined-only", str(elf)]).splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[3] == PROGRAM_SYMBOL:
            address = int(fields[0], 16)
            break
    else:
        raise PintimeError(f"{elf}: no {PROGRAM_SYMBOL}: not a PINTIME_FUNCTIONS program")
    dump = binutils(["avr-objdump", "-s", "-j", ".data", f"--start-address={address:#x}",
                     f"--stop-address={address + 1:#x}", str(elf)])
    digits = "".join(line.split()[1][:2] for line in dump.splitlines() if line.startswith(" "))
    if len(digits) != 2:
        raise PintimeError(f"{elf}: cannot read {PROGRAM_SYMBOL}")
    return int(digits, 16)


def user_pulses(elf: str | Path, index: int, name: str) -> int:
    """The pulses M of function ``index``'s group (``pintime_user_<index>_<name>``): two ``out`` each."""
    outs = sum(i.mnemonic == "out" for i in disassemble(elf, f"pintime_user_{index}_{name}"))
    return outs // 2
