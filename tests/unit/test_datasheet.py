"""pintime.avr.datasheet on hand-made machine code: calls followed, loop turns found, branches refused."""

from __future__ import annotations

import pytest
from pintime.avr.cfg import Instruction
from pintime.avr.datasheet import Code, call_cycles, loop_turn_cycles
from pintime.errors import PintimeError


def _code(functions: dict[str, list[tuple[str, str]]]) -> Code:
    """Functions laid out one after the other from 0x100, 2-byte instructions (4 for call/jmp/lds)."""
    at, symbols, address = {}, {}, 0x100
    for name, body in functions.items():
        symbols[name] = address
        for mnemonic, operands in body:
            size = 4 if mnemonic in ("call", "jmp", "lds") else 2
            at[address] = Instruction(address, size, mnemonic, operands)
            address += size
    return Code(at, symbols)


def test_call_follows_callees_and_indirect_target():
    code = _code({"callee": [("ret", "")],
                  "wrapper": [("ldi", "r24, 0x01"), ("push", "r16"), ("call", "0x100"), ("pop", "r16"),
                              ("ret", "")],
                  "via_pointer": [("lds", "r30, 0x0200"), ("lds", "r31, 0x0201"), ("eicall", ""),
                                  ("ret", "")]})
    assert call_cycles(code, "callee") == 5 + 5
    assert call_cycles(code, "wrapper") == 5 + 1 + 2 + (5 + 5) + 2 + 5
    assert call_cycles(code, "via_pointer", "callee") == 5 + 2 + 2 + (4 + 5) + 5
    with pytest.raises(PintimeError, match="indirect call with no known target"):
        call_cycles(code, "via_pointer")


def test_a_branch_is_not_straight_line():
    code = _code({"f": [("cpi", "r24, 0x01"), ("breq", ".+2"), ("nop", ""), ("ret", "")]})
    with pytest.raises(PintimeError, match="straight-line"):
        call_cycles(code, "f")


def test_loop_turn_through_an_entry_jump():
    """A rotated loop: the entry jumps to the test; one turn = body + test + the backward branch taken."""
    code = _code({"loop": [("rjmp", ".+2"), ("subi", "r25, 0xFF"), ("cp", "r25, r24"), ("brcs", ".-6"),
                           ("ret", "")],
                  "twin": [("jmp", "0x100")]})
    assert loop_turn_cycles(code, "loop") == 1 + 1 + 2
    assert loop_turn_cycles(code, "twin") == 1 + 1 + 2  # a function merged into its identical twin


def test_no_loop():
    with pytest.raises(PintimeError, match="not a loop"):
        loop_turn_cycles(_code({"f": [("nop", ""), ("ret", "")]}), "f")
