"""pintime.avr.chip: the program counter's width from an ELF header's machine flags, and what it costs."""

from __future__ import annotations

import pytest
from pintime.avr.chip import call_cycles, interrupt_response_cycles, pc_bytes, return_cycles
from pintime.errors import PintimeError


def _elf_header(machine: int, mach_flags: int) -> bytes:
    """A 32-bit little-endian ELF header (52 bytes) with e_machine and e_flags set."""
    header = bytearray(52)
    header[:4] = b"\x7fELF"
    header[4], header[5] = 1, 1  # ELFCLASS32, little-endian
    header[18:20] = machine.to_bytes(2, "little")
    header[36:40] = mach_flags.to_bytes(4, "little")
    return bytes(header)


@pytest.mark.parametrize(("mach", "pc"), [(6, 3), (5, 2), (0x80 | 6, 3), (0x80 | 5, 2), (107, 3), (25, 2)])
def test_pc_width_from_the_architecture(tmp_path, mach, pc):
    """avr6 (ATmega2560) and the large xmegas: 3 bytes; avr5 (ATmega328P, ATmega32U4), avr25: 2; the
    EF_AVR_LINKRELAX_PREPARED bit (0x80) does not change it."""
    elf = tmp_path / "a.elf"
    elf.write_bytes(_elf_header(83, mach))
    assert pc_bytes(elf) == pc


@pytest.mark.parametrize("data", [b"", b"\x7fELF", b"MZ" + bytes(60), _elf_header(62, 6)])
def test_no_avr_elf_is_refused(tmp_path, data):
    elf = tmp_path / "x.elf"
    elf.write_bytes(data)
    with pytest.raises(PintimeError, match="not an AVR ELF"):
        pc_bytes(elf)


def test_missing_file_is_one_error(tmp_path):
    with pytest.raises(PintimeError, match="cannot read"):
        pc_bytes(tmp_path / "none.elf")


def test_cycles_per_width():
    """The datasheets' instruction set summaries: one cycle per return-address byte pushed or popped."""
    assert call_cycles(3) == {"call": 5, "rcall": 4, "icall": 4, "eicall": 4}
    assert call_cycles(2) == {"call": 4, "rcall": 3, "icall": 3, "eicall": 3}
    assert return_cycles(3) == {"ret": 5, "reti": 5} and return_cycles(2) == {"ret": 4, "reti": 4}
    assert interrupt_response_cycles(3) == 5 and interrupt_response_cycles(2) == 4
