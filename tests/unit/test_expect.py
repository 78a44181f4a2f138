"""pintime.avr.expect on hand-written instruction lists: the cycles the listing expects, path by path, with
loops by their trip count where a counter register gives it. Cycle costs are the ATmega2560 datasheet's
(pintime.avr.cfg); each expected figure below is counted by hand in its docstring."""

from __future__ import annotations

import pytest
from pintime.avr.cfg import Instruction, build_cfg
from pintime.avr.expect import Expectation, path_cycles, range_text
from pintime.errors import PintimeError


def _code(*lines: tuple[str, str] | tuple[str, str, int]) -> list[Instruction]:
    """Instructions at consecutive addresses: (mnemonic, operands[, size in bytes])."""
    out, address = [], 0
    for line in lines:
        mnemonic, operands, size = (*line, 2) if len(line) == 2 else line
        out.append(Instruction(address, size, mnemonic, operands))
        address += size
    return out


def _expect(*lines) -> Expectation:
    return path_cycles(build_cfg("f", _code(*lines)))


def test_straight_line_is_exact():
    """lds 2 + add 1 + sts 2 + ret 5 = 10."""
    e = _expect(("lds", "r24, 0x0200", 4), ("add", "r24, r24"), ("sts", "0x0200, r24", 4), ("ret", ""))
    assert (e.min_cycles, e.max_cycles, e.exact) == (10, 10, 10) and "straight-line" in e.how


def test_if_else_gives_min_max():
    """Bit clear: sbrs 1, rjmp 2, ret 5 = 8; bit set: sbrs 2 (skips the rjmp), inc 1, nop 1, ret 5 = 9."""
    e = _expect(("sbrs", "r24, 7"), ("rjmp", ".+4"), ("inc", "r24"), ("nop", ""), ("ret", ""))
    assert (e.min_cycles, e.max_cycles, e.exact) == (8, 9, None) and "min–max" in e.how


def test_down_counted_loop_by_its_trip_count():
    """ldi 1; loop 5 passes of (nop 1 + dec 1 + brne 2 taken / 1 not); ret 5: 1 + 4·4 + 3 + 5 = 25."""
    e = _expect(("ldi", "r25, 0x05"), ("nop", ""), ("dec", "r25"), ("brne", ".-6"), ("ret", ""))
    assert (e.min_cycles, e.max_cycles) == (25, 25) and "5 passes" in e.how


def test_up_counted_loop_with_cpi():
    """clr 1; 3 passes of (subi r24, 0xFF = +1: 1, cpi 1, brne 2/1); ret 5: 1 + 2·4 + 3 + 5 = 17."""
    e = _expect(("eor", "r24, r24"), ("subi", "r24, 0xFF"), ("cpi", "r24, 0x03"), ("brne", ".-6"),
                ("ret", ""))
    assert (e.min_cycles, e.max_cycles) == (17, 17) and "3 passes" in e.how


def test_ldi_zero_counts_256_passes():
    """ldi r25, 0 then dec/brne: 256 passes. 1 + 255·3 + 2 + 5 = 773."""
    e = _expect(("ldi", "r25, 0x00"), ("dec", "r25"), ("brne", ".-4"), ("ret", ""))
    assert (e.min_cycles, e.max_cycles) == (773, 773)


def test_nested_loops_multiply():
    """Outer 2 passes, inner 3: inner = 2 × (dec 1 + brne 2) + (dec 1 + brne 1) = 8; an outer pass = ldi 1
    + 8 + dec 1 + brne 2 = 12 (11 the last); ldi 1 + 12 + 11 + ret 5 = 29."""
    e = _expect(("ldi", "r24, 0x02"), ("ldi", "r25, 0x03"), ("dec", "r25"), ("brne", ".-4"),
                ("dec", "r24"), ("brne", ".-10"), ("ret", ""))
    assert (e.min_cycles, e.max_cycles) == (29, 29)
    assert "2 passes" in e.how and "3 passes" in e.how


def test_data_dependent_branch_inside_a_counted_loop():
    """4 passes; bit clear: sbrs 1, rjmp 2, lsr 1, dec 1, brne 2 = 7; bit set: sbrs 2, lsl 1, lsl 1, lsr 1,
    dec 1, brne 2 = 8; the last pass 1 less. Min ldi 1 + 3·7 + 6 + ret 5 = 33, max 1 + 3·8 + 7 + 5 = 37."""
    e = _expect(("ldi", "r25, 0x04"),
                ("sbrs", "r24, 0"), ("rjmp", ".+4"), ("lsl", "r23"), ("lsl", "r23"),
                ("lsr", "r24"), ("dec", "r25"), ("brne", ".-14"), ("ret", ""))
    assert (e.min_cycles, e.max_cycles, e.exact) == (33, 37, None) and "4 passes" in e.how


def test_unknown_trip_count_leaves_the_maximum_open():
    """The counter comes from memory (not a constant the listing shows): min one pass, max unknown."""
    e = _expect(("lds", "r25, 0x0200", 4), ("dec", "r25"), ("brne", ".-4"), ("ret", ""))
    # one pass: lds 2 + dec 1 + brne 1 + ret 5
    assert (e.min_cycles, e.max_cycles, e.exact) == (9, None, None) and "trip count unknown" in e.how


def test_counter_written_inside_the_loop_is_not_trusted():
    """A second write of the counter in the loop (here a mov) makes the trip count unknown, never wrong."""
    e = _expect(("ldi", "r25, 0x05"), ("mov", "r25, r24"), ("dec", "r25"), ("brne", ".-6"), ("ret", ""))
    assert e.max_cycles is None and "r25 is not changed by exactly one" in e.how


def test_break_out_of_a_counted_loop_spans_first_to_last_pass():
    """3 passes at most; each pass: sbrc 1/2 over rjmp-out; taken out: rjmp 2 to ret.
    Pass that stays: sbrc 2 (skip the 1-word rjmp) + dec 1 + brne 2 = 5 (last 4); break in pass 1:
    ldi 1 + sbrc 1 + rjmp 2 + ret 5 = 9; break in pass 3: 1 + 2·5 + 1 + 2 + 5 = 19; no break: 1 + 5 + 5 + 4 +
    ret 5 = 20."""
    e = _expect(("ldi", "r25, 0x03"), ("sbrc", "r24, 0"), ("rjmp", ".+4"), ("dec", "r25"),
                ("brne", ".-8"), ("ret", ""))
    assert (e.min_cycles, e.max_cycles) == (9, 20)


def test_outside_needs_the_whole_interval_out_by_half_a_cycle():
    e = Expectation(94, 110, "x")
    assert not e.outside(101.8, 102.1) and not e.outside(90, 94) and not e.outside(110, 120)
    assert e.outside(110.51, 111) and e.outside(80, 93.49)
    assert not e.outside(93.9999999, 93.9999999) and not e.outside(110.4, 110.45)  # still rounds into it
    assert not Expectation(20, None, "x").outside(1e6, 1e6) and Expectation(20, None, "x").outside(1, 2)
    assert Expectation(None, None, "why").outside(0, 1) is None


@pytest.mark.parametrize("low,high,text", [(48, 48, "48"), (94, 110, "94–110"), (20, None, "≥ 20"),
                                           (None, None, "—"), (9.5, 9.5, "9.500")])
def test_range_text(low, high, text):
    assert range_text(low, high) == text


def test_irreducible_cycle_is_refused():
    """A cycle entered at two places (no block dominates the other) is no natural loop: refused, not
    counted as straight code."""
    code = [("sbrs", "r24, 0"), ("rjmp", ".+2"), ("inc", "r25"), ("dec", "r25"), ("brne", ".-6"),
            ("ret", "")]
    with pytest.raises(PintimeError, match="not a natural loop"):
        _expect(*code)
