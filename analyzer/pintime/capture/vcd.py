"""VCD files ↔ ``Edges``: simavr's exact pin edges read in the VCD's own integer time unit, and any edges
written as a VCD a logic viewer (GTKWave, PulseView) opens.

Times stay integers of the ``$timescale`` unit (``Edges.unit_s`` = that unit in seconds): float64 holds
them exactly up to 2**53 units (2.5 hours at 1 ps), so every edge-to-edge distance is exact. Converting to
seconds here would round every time by up to 1 ulp of its absolute value.

The reader is a small one for the IEEE 1364 VCD that simavr writes (declarations, then ``#time`` lines and
value changes): it splits the file into whitespace-separated tokens, a few megabytes at a time, and checks
each one, so a damaged file fails with one line instead of being half read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from pintime.edges import FIRST_SIGNAL_CHANNEL, MAX_CHANNEL, MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError

# VCD signals by the FORMAT.md §1 pin their name ends with (the harness writes measurement_PA0,
# reference_PB5, and signal_PA1 … for programs with more signal pins) → channel
SIGNAL_CHANNELS = {b"PA0": MEASUREMENT_CHANNEL, b"PB5": REFERENCE_CHANNEL,
                   **{f"PA{c - FIRST_SIGNAL_CHANNEL + 1}".encode(): c
                      for c in range(FIRST_SIGNAL_CHANNEL, MAX_CHANNEL + 1)}}
# … or by the role it starts with, for the other chips' pins (firmware/BOARDS.md: measurement_PB2 and
# reference_PB1 on an ATmega328P, measurement_PF0 on an ATmega32U4)
ROLE_CHANNELS = {b"measurement": MEASUREMENT_CHANNEL, b"reference": REFERENCE_CHANNEL}
_UNIT_S = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9, "ps": 1e-12, "fs": 1e-15, "as": 1e-18,
           "zs": 1e-21}
_TIMESCALE = re.compile(rb"(1|10|100)(s|ms|us|ns|ps|fs|as|zs)")
_VAR_TYPES = {b"event", b"integer", b"parameter", b"real", b"realtime", b"reg", b"supply0", b"supply1",
              b"time", b"tri", b"triand", b"trior", b"trireg", b"tri0", b"tri1", b"wand", b"wire", b"wor",
              b"string"}
_SKIPPED = {b"$comment", b"$date", b"$version", b"$scope", b"$upscope"}  # declarations that say nothing here
_DUMP = {b"$dumpvars", b"$dumpall", b"$dumpon", b"$dumpoff", b"$end"}  # they frame value changes
_SCALAR, _LEVELS, _VECTOR, _REAL = frozenset(b"01xzXZ"), frozenset(b"01"), frozenset(b"bB"), frozenset(b"rR")
_EXACT_LIMIT = 2**53  # float64 holds every integer time up to this
CHUNK_BYTES = 1 << 22  # read this much at a time: memory is bounded by the edges, not the file


class _Malformed(Exception):
    """Not the VCD syntax this reader knows; the message says where."""


def read_vcd(path: str | Path) -> Edges:
    """Read the measurement and reference pins (and signal pins PA1 …, if any) of a simavr VCD.

    The first value of a signal sets its level; every later change between 0 and 1 is an edge (x/z
    values are not levels and break no edge). Times are the VCD's integer times (see the module doc).

    Raises
    ------
    PintimeError
        Unreadable or malformed VCD, no timescale, times going backwards, or neither pin signal present.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            tokens = _tokens(f)
            scale_s, ids, declared = _declarations(tokens)
            rows = _changes(tokens, ids, declared, path)
    except OSError as err:
        raise PintimeError(f"{path}: not a readable VCD ({err.__class__.__name__}: {err})") from None
    except _Malformed as err:
        raise PintimeError(f"{path}: not a readable VCD ({err})") from None
    if scale_s is None:
        raise PintimeError(f"{path}: VCD has no $timescale")
    if not ids:
        names = ", ".join(pin.decode() for pin in SIGNAL_CHANNELS)
        raise PintimeError(f"{path}: VCD has none of the pin signals {names}")
    if not rows:
        raise PintimeError(f"{path}: VCD has no pin edges")
    data = np.array(rows, dtype=np.int64)
    if np.any(np.diff(data[:, 0]) < 0):
        raise PintimeError(f"{path}: VCD times go backwards")
    return Edges(data[:, 0].astype(np.float64), data[:, 1].astype(np.int8),
                 np.where(data[:, 2] == 1, 1, -1).astype(np.int8), np.zeros(len(data)), scale_s, str(path))


def vcd_text(edges: Edges, comment: str) -> str:
    """``edges`` as a VCD, 1 ps timescale, one wire per channel named as the harness names its pins.

    Times are rounded to whole picoseconds (far below any located edge's σ, which a VCD cannot carry:
    ``comment`` should say where it is). Each wire starts at time 0 at the level before its first edge.
    pintime reads the file back as exact edges of the same times.
    """
    scale_ps = (edges.unit_s or 0.0) / 1e-12
    if scale_ps <= 0:
        raise PintimeError(f"{edges.source}: edge times have no known unit in seconds, cannot write a VCD")
    names = {code: pin.decode() for pin, code in SIGNAL_CHANNELS.items()}
    role = {MEASUREMENT_CHANNEL: "measurement", REFERENCE_CHANNEL: "reference"}
    wires = {ch: (chr(ord("!") + i), f"{role.get(ch, 'signal')}_{names[ch]}")
             for i, ch in enumerate(sorted(set(edges.channel.tolist())))}
    lines = ["$comment", f"  {comment}", "$end", "$timescale 1ps $end", "$scope module pintime $end"]
    lines += [f"$var wire 1 {ident} {name} $end" for ident, name in wires.values()]
    lines += ["$upscope $end", "$enddefinitions $end", "#0", "$dumpvars"]
    for ch, (ident, _) in wires.items():
        first = edges.polarity[edges.channel == ch][0]
        lines.append(f"{0 if first > 0 else 1}{ident}")
    lines.append("$end")
    order = edges.time_order()
    times_ps = np.rint(edges.time[order] * scale_ps).astype(np.int64)
    if len(times_ps) and times_ps[0] < 0:
        raise PintimeError(f"{edges.source}: an edge before time 0 cannot be written as a VCD")
    last = 0
    for t, ch, pol in zip(times_ps.tolist(), edges.channel[order].tolist(), edges.polarity[order].tolist(),
                          strict=True):
        if t != last:
            lines.append(f"#{t}")
            last = t
        lines.append(f"{1 if pol > 0 else 0}{wires[ch][0]}")
    return "\n".join(lines) + "\n"


def _tokens(f: BinaryIO) -> Iterator[bytes]:
    """The file's whitespace-separated tokens, read ``CHUNK_BYTES`` at a time."""
    rest = b""
    while chunk := f.read(CHUNK_BYTES):
        words = (rest + chunk).split()
        rest = b"" if chunk[-1:].isspace() or not words else words.pop()  # the last may go on in the next
        yield from words
    yield from rest.split()


def _until_end(tokens: Iterator[bytes], keyword: bytes) -> list[bytes]:
    """The tokens of a ``keyword … $end`` section."""
    words: list[bytes] = []
    for token in tokens:
        if token == b"$end":
            return words
        words.append(token)
    raise _Malformed(f"{_shown(keyword)} without $end")


def _declarations(tokens: Iterator[bytes]) -> tuple[float | None, dict[bytes, int], set[bytes]]:
    """Timescale (s per unit), the pin signals' identifiers → channel, and every declared identifier."""
    scale_s: float | None = None
    ids: dict[bytes, int] = {}
    declared: set[bytes] = set()
    for token in tokens:
        if token == b"$enddefinitions":
            _until_end(tokens, token)
            return scale_s, ids, declared
        if token == b"$timescale":
            text = b"".join(_until_end(tokens, token))
            match = _TIMESCALE.fullmatch(text)
            if match is None:
                raise _Malformed(f"bad $timescale '{_shown(text)}'")
            scale_s = int(match[1]) * _UNIT_S[match[2].decode()]
        elif token == b"$var":
            words = _until_end(tokens, token)
            if len(words) < 4 or words[0] not in _VAR_TYPES or not words[1].isdigit():
                raise _Malformed(f"bad $var '{_shown(b' '.join(words))}'")
            declared.add(words[2])
            role, _, pin = words[3].rpartition(b"_")
            channel = SIGNAL_CHANNELS.get(pin, ROLE_CHANNELS.get(role))
            if int(words[1]) == 1 and channel is not None:
                if channel in ids.values() and words[2] not in ids:  # e.g. a ddr_PA0 elsewhere
                    raise _Malformed(f"two signals end in _{pin.decode()} ('{_shown(words[3])}' and one "
                                     "before it): which one is the pin is ambiguous")
                ids[words[2]] = channel
        elif token in _SKIPPED:
            _until_end(tokens, token)
        else:
            raise _Malformed(f"unexpected '{_shown(token)}' among the declarations")
    raise _Malformed("no $enddefinitions")


def _changes(tokens: Iterator[bytes], ids: dict[bytes, int], declared: set[bytes],
             path: Path) -> list[tuple[int, int, int]]:
    """(time, channel, new level) of every 0↔1 change of a pin signal after its first level."""
    now = 0
    level: dict[bytes, int] = {}
    rows = []
    for token in tokens:
        head = token[0]
        if head == 0x23:  # '#': a time
            now = _time(token, path)
            continue
        if head in _SCALAR:  # the common case, kept inline
            ident, new = token[1:], (head - 0x30 if head in _LEVELS else None)
        else:
            change = _other_change(token, tokens)
            if change is None:
                continue
            ident, new = change
        if ident not in declared:
            raise _Malformed(f"change of an undeclared signal '{_shown(ident)}'")
        if ident in ids and new in (0, 1):
            if level.get(ident, new) != new:
                rows.append((now, ids[ident], new))
            level[ident] = new
    return rows


def _time(token: bytes, path: Path) -> int:
    """The time a ``#…`` token sets, refused past what float64 holds exactly."""
    if not token[1:].isdigit():
        raise _Malformed(f"bad time '{_shown(token)}'")
    now = int(token[1:])
    if now > _EXACT_LIMIT:
        raise PintimeError(f"{path}: VCD too long to keep its times exact (#{now})")
    return now


def _other_change(token: bytes, tokens: Iterator[bytes]) -> tuple[bytes, int | None] | None:
    """A vector or real value change (its identifier is the next token) as (identifier, level or None
    when it is not a level); None for the keywords that frame value changes and for comments."""
    head = token[0]
    if head in _VECTOR:
        ident, bits = next(tokens, b""), token[1:]
        if not bits or bits.lower().strip(b"01xz"):  # strip leaves what is none of these
            raise _Malformed(f"bad vector value '{_shown(token)}'")
        return ident, None if bits.strip(b"01") else int(bits, 2)  # b001 is the level 1
    if head in _REAL:
        ident = next(tokens, b"")  # a real value is never a level
        _check_real(token[1:])
        return ident, None
    if token in _DUMP:
        return None
    if token == b"$comment":
        _until_end(tokens, token)
        return None
    raise _Malformed(f"unexpected '{_shown(token)}'")


def _check_real(value: bytes) -> None:
    try:
        float(value)
    except ValueError:
        raise _Malformed(f"bad real value '{_shown(value)}'") from None


def _shown(text: bytes) -> str:
    """``text`` for a one-line message: printable ASCII, escapes for the rest, at most 40 bytes."""
    return repr(text[:40])[2:-1]
