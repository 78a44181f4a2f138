"""pintime.printed: a column's numbers in one unit with one number of decimals."""

from __future__ import annotations

import math

from pintime.printed import fixed, ns


def test_fixed_decimals_never_an_exponent_nor_a_false_zero():
    assert fixed(1119.0) == "1119.0000"
    assert fixed(0.00066) == "0.0007"  # rounded to the last decimal
    assert fixed(0.00004) == "<0.0001"  # not zero, too small for the last decimal
    assert fixed(-0.00004) == "-<0.0001"
    assert fixed(0.0) == "0.0000"
    assert fixed(2.5, 2) == "2.50"


def test_a_value_not_known_is_a_dash():
    assert fixed(None) == "—" and fixed(math.nan) == "—" and ns(None) == "—"


def test_microseconds_shown_in_nanoseconds():
    assert ns(1.64e-05) == "0.0164" and ns(0.0002) == "0.2000" and ns(0.00229, 2) == "2.29"
