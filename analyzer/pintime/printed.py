"""How the printed tables show a number: in a fixed unit with a fixed number of decimals per column, so a
column never mixes ``1.64e-05`` with ``0.0002`` (docs/design.md §6). The JSON keeps every value whole."""

from __future__ import annotations

import math

SPREAD_DECIMALS = 4  # a spread (std. deviation, CI half-width): ns to 0.1 ps, cycles to 0.0001


def fixed(value: float | None, decimals: int = SPREAD_DECIMALS) -> str:
    """``value`` with ``decimals`` decimals; one not zero but too small for the last decimal as
    ``<0.0001`` (never a zero it is not), one not known (None, NaN) as ``—``."""
    if value is None or math.isnan(value):
        return "—"
    text = f"{value:.{decimals}f}"
    if value != 0 and float(text) == 0:
        return f"{'-' if value < 0 else ''}<{10.0 ** -decimals:.{decimals}f}"
    return text


def ns(value_us: float | None, decimals: int = SPREAD_DECIMALS) -> str:
    """A time of µs shown in ns (:func:`fixed`)."""
    return fixed(None if value_us is None else value_us * 1e3, decimals)
