"""simavr VCD captures → ``Edges``: exact pin edges, in the VCD's own integer time unit.

Times stay integers of the ``$timescale`` unit (``Edges.unit_s`` = that unit in seconds): float64 holds
them exactly up to 2**53 units (2.5 hours at 1 ps), so every edge-to-edge distance is exact. Converting to
seconds here would round every time by up to 1 ulp of its absolute value.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import numpy as np
from vcd.reader import ScalarChange, TokenKind, VCDParseError, tokenize

from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError

# VCD signals by the FORMAT.md §1 pin their name ends with (the harness writes measurement_PA0,
# reference_PB5) → channel
SIGNAL_CHANNELS = {"PA0": MEASUREMENT_CHANNEL, "PB5": REFERENCE_CHANNEL}
_UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15, "as": 1e-18,
           "zs": 1e-21}


def read_vcd(path: str | Path) -> Edges:
    """Read the measurement and reference pins of a simavr VCD.

    The first value of a signal sets its level; every later change between 0 and 1 is an edge (x/z
    values are not levels and break no edge). Times are the VCD's integer times (see the module doc).

    Raises
    ------
    PintimeError
        Unreadable or malformed VCD, no timescale, times going backwards, or neither pin signal present.
    """
    path = Path(path)
    scale_s = None
    ids: dict[str, int] = {}
    now = 0
    level: dict[str, str] = {}
    rows: list[tuple[int, int, int]] = []  # (time in VCD units, channel, new level)
    try:
        with open(path, "rb") as f:
            for token in tokenize(f):
                # hot path: value changes read ``token.data`` directly (the typed properties check types)
                kind = token.kind
                if kind is TokenKind.CHANGE_TIME:
                    now = cast(int, token.data)
                    if now > 2**53:
                        raise PintimeError(f"{path}: VCD too long to keep its times exact (#{now})")
                elif kind is TokenKind.CHANGE_SCALAR or kind is TokenKind.CHANGE_VECTOR:
                    change = cast(ScalarChange, token.data)
                    id_code, value = change.id_code, str(change.value).lower()
                    if id_code in ids and value in ("0", "1"):
                        if id_code in level and level[id_code] != value:
                            rows.append((now, ids[id_code], int(value)))
                        level[id_code] = value
                elif kind is TokenKind.TIMESCALE:
                    scale_s = token.timescale.magnitude * _UNIT_S[token.timescale.unit.value]
                elif kind is TokenKind.VAR and token.var.size == 1:
                    pin = token.var.reference.rsplit("_", 1)[-1]
                    if pin in SIGNAL_CHANNELS:
                        ids[token.var.id_code] = SIGNAL_CHANNELS[pin]
    except (OSError, VCDParseError, UnicodeDecodeError, ValueError, KeyError) as err:
        raise PintimeError(f"{path}: not a readable VCD ({err.__class__.__name__}: {err})") from None
    if scale_s is None:
        raise PintimeError(f"{path}: VCD has no $timescale")
    if not ids:
        names = ", ".join(SIGNAL_CHANNELS)
        raise PintimeError(f"{path}: VCD has none of the pin signals {names}")
    if not rows:
        raise PintimeError(f"{path}: VCD has no pin edges")
    data = np.array(rows, dtype=np.int64)
    if np.any(np.diff(data[:, 0]) < 0):
        raise PintimeError(f"{path}: VCD times go backwards")
    return Edges(data[:, 0].astype(np.float64), data[:, 1].astype(np.int8),
                 np.where(data[:, 2] == 1, 1, -1).astype(np.int8), np.zeros(len(data)), scale_s, str(path))
