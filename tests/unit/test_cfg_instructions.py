"""pintime.avr.cfg on hand-written instruction lists: skips, the simavr skip bug, unknown instructions."""

from __future__ import annotations

import pytest
from pintime.avr.cfg import (
    Instruction,
    build_cfg,
    simavr_skip_bug_sites,
)
from pintime.errors import PintimeError


def _instruction(address: int, mnemonic: str, operands: str = "", size_bytes: int = 2) -> Instruction:
    return Instruction(address, size_bytes, mnemonic, operands)


def test_skip_over_two_word_instruction_costs_three_cycles():
    cfg = build_cfg("f", [
        _instruction(0, "sbrc", "r24, 0"),
        _instruction(2, "lds", "r25, 0x0200", 4),
        _instruction(6, "ret"),
    ])
    assert [b.address for b in cfg.blocks] == [0, 2, 6]
    assert [(e.target, e.taken, e.cycles) for e in cfg.blocks[0].exits] == [(1, False, 1), (2, True, 3)]
    assert cfg.blocks[0].varies and not cfg.blocks[1].varies


def test_skip_bug_site_found():
    cfg = build_cfg("f", [
        _instruction(0, "sbrs", "r24, 0"),
        _instruction(2, "adiw", "r24, 0x1c"),
        _instruction(4, "ret"),
    ])
    assert [i.address for i in simavr_skip_bug_sites(cfg)] == [0]


def test_unknown_mnemonic_and_calls_fail_loudly():
    with pytest.raises(PintimeError, match="no cycle count"):
        build_cfg("f", [_instruction(0, "des", "1"), _instruction(2, "ret")])
    with pytest.raises(PintimeError, match="calls other code"):
        build_cfg("f", [_instruction(0, "rcall", ".+0"), _instruction(2, "ret")])
