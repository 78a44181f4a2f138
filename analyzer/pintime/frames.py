"""Frame decoder for the measurement pin, written from ``firmware/FORMAT.md`` (frame format version 2).

A capture of the measurement pin is a sequence of frames ``QUIET SYNC HEADER SETTLE GROUP``. The decoder
reads edge times in MCU microseconds (or nominal microseconds before clock calibration: every tolerance of
the format is far wider than any clock error), skips to the first QUIET followed by a SYNC, and returns
every valid frame with the indices of its group's edges. Frames that break any rule of FORMAT.md §3 are
counted (by reason) and none of their edges is attributed.

Polarity: the source gives pin polarity (``Edges.polarity``, "after any inversion is undone"); should no
frame decode with it but some with the opposite, the decoder takes that (``FrameDecode.inverted``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from pintime.compiled import kernel
from pintime.errors import PintimeError

FORMAT_VERSION = 2

# FORMAT.md §3 decoder rules, µs
QUIET_MIN_US = 4000.0
SYNC_HIGH_US = (900.0, 1100.0)
SYNC_LOW_US = (400.0, 600.0)
BIT0_HIGH_US = (120.0, 300.0)  # half-open [120, 300)
BIT1_HIGH_US = (300.0, 500.0)
BIT_LOW_US = (120.0, 300.0)
SETTLE_US = (900.0, 1100.0)
GAP_US = (250.0, 500.0)

# FORMAT.md §4: kind number → (name, payload fields as (name, bytes), big-endian)
KINDS: dict[int, tuple[str, tuple[tuple[str, int], ...]]] = {
    0: ("run", (("f_cpu_hz", 4), ("revision", 4), ("program", 1))),
    1: ("cal", (("period_cycles", 4), ("count", 2))),
    2: ("direct", (("rep", 2),)),
    3: ("executing", (("n", 2), ("rep", 2))),
    4: ("differential", (("n", 2), ("rep", 2))),
    5: ("line", (("m", 2), ("rep", 2))),
    6: ("overdet", (("m", 2), ("rep", 2))),
    7: ("end", (("frames", 2),)),
    8: ("table2", (("measurement", 2), ("first_round", 2), ("count", 2))),
    9: ("user", (("function", 1), ("m", 2), ("rep", 2))),
    10: ("table2cut", (("measurement", 2), ("cuts", 1), ("per_cut", 1))),
    12: ("kernel", (("threads", 1), ("ticks", 2), ("rep", 2))),
}
PROGRAMS = {1: "table1", 2: "table2", 3: "user", 4: "micro", 5: "kernel"}
UNGAPPED = ("cal", "kernel")  # kinds whose GROUP's lows are no GAPs (FORMAT.md §4)


@dataclass(frozen=True)
class Frame:
    """One valid frame: its kind, its header fields (FORMAT.md names) and its group's edges."""

    kind: str  # a KINDS name: "run", "cal", "direct", … "table2", "user"
    fields: dict[str, int]
    group_lo: int  # the group's edges are those from index group_lo (into the decoder's input arrays) …
    group_hi: int  # … to group_hi, exclusive: consecutive, in time order
    start: int  # index of the SYNC's rising edge

    @property
    def group(self) -> np.ndarray:
        """The int64 indices of the group's edges (made on each use: a long capture's frames keep two
        integers each, not an index per edge)."""
        return np.arange(self.group_lo, self.group_hi)

    @property
    def pulses(self) -> int:
        """How many pulses the group holds (a rise and a fall each)."""
        return (self.group_hi - self.group_lo) // 2


@dataclass(frozen=True)
class FrameDecode:
    """Result of decoding one capture's measurement channel."""

    frames: list[Frame]
    rejected: int  # frames that broke a rule of FORMAT.md §3 (not counting ``incomplete``)
    incomplete: int  # frames cut off by the end of the capture
    reasons: dict[str, int] = field(default_factory=dict)  # rejection reason → count
    inverted: bool = False  # frames decoded only with the opposite of the given polarity

    def of_kind(self, kind: str) -> list[Frame]:
        """The valid frames of one kind, in capture order."""
        return [f for f in self.frames if f.kind == kind]

    def calibration_train(self) -> Frame | None:
        """The first CAL frame with a train to fit a line to (3 edges or more), None without one."""
        return next((f for f in self.of_kind("cal") if f.fields["count"] >= 3), None)


class ScaledTimes:
    """Edge times in µs, ``time · us_per_unit`` of source times, each product made when it is read: bit for
    bit the whole product's values, without a second array as long as a long capture's edges."""

    def __init__(self, time: np.ndarray, us_per_unit: float = 1.0) -> None:
        self.time, self.us_per_unit = np.asarray(time, dtype=np.float64), float(us_per_unit)

    def __len__(self) -> int:
        return len(self.time)

    def __getitem__(self, k: Any) -> Any:
        return self.time[k] * self.us_per_unit

    def part(self, lo: int, hi: int) -> ScaledTimes:
        """Edges ``lo`` … ``hi − 1``, still unmultiplied."""
        return ScaledTimes(self.time[lo:hi], self.us_per_unit)

    def searchsorted(self, values_us: np.ndarray) -> list[int]:
        """For each value, the first index whose time is at or after it (the products compared, as
        ``np.searchsorted`` of the whole product would)."""
        out = []
        for v in np.asarray(values_us, dtype=np.float64).tolist():
            k = int(np.searchsorted(self.time, v / self.us_per_unit))
            while k > 0 and self[k - 1] >= v:
                k -= 1
            while k < len(self) and self[k] < v:
                k += 1
            out.append(k)
        return out


def crc16_ccitt_false(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: polynomial 0x1021, initial value 0xFFFF, no reflection, no final xor."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def group_edge_count(kind: str, fields: dict[str, int]) -> int:
    """Number of GROUP edges a header announces (FORMAT.md §4)."""
    if kind in ("run", "end"):
        return 0
    if kind in ("direct", "executing"):
        return 2
    if kind == "cal":
        return fields["count"]
    if kind == "differential":
        return 4 * fields["n"]
    if kind == "table2":
        return 2 * fields["count"]
    if kind == "table2cut":
        return 2 * fields["cuts"] * fields["per_cut"]
    if kind == "kernel":
        return 2 + 2 * fields["ticks"]
    return 2 * fields["m"]  # line, overdet, user


def header_edge_count(kind: str) -> int:
    """Edges from a frame's SYNC rise to its last header bit's fall (FORMAT.md §3–§4): the SYNC's two and
    two per bit of the kind byte, the payload and the CRC."""
    return _HEADER_EDGES[kind]


_HEADER_EDGES = {name: 2 + 2 * 8 * (3 + sum(size for _, size in layout)) for name, layout in KINDS.values()}


def frame_end(frame: Frame) -> int:
    """Index of a frame's last edge: its group's last, or its header's last bit's fall without a group."""
    if frame.group_hi > frame.group_lo:
        return frame.group_hi - 1
    return frame.start + header_edge_count(frame.kind) - 1


def decode_frames(time_us: np.ndarray | ScaledTimes, polarity: np.ndarray,
                  start_us: float | None = 0.0) -> FrameDecode:
    """Decode every frame of the measurement channel.

    Parameters
    ----------
    time_us : array of float, or ScaledTimes
        Edge times of the measurement channel, non-decreasing, in MCU µs (or nominal µs).
    polarity : array of int
        +1 for a rising edge, -1 for a falling edge.
    start_us : float or None
        Start of the capture in the same time base: the pin is taken to stay at the level before the
        first edge from ``start_us`` on, so a first frame at the very start of a capture is found. None
        when unknown: decoding then starts at the first observed QUIET.

    Returns
    -------
    FrameDecode
        Valid frames in capture order, and counts of rejected and incomplete frames.
    """
    time_us = time_us if isinstance(time_us, ScaledTimes) else ScaledTimes(time_us)
    polarity = np.asarray(polarity)
    if time_us.time.shape != polarity.shape or time_us.time.ndim != 1:
        raise ValueError("time_us and polarity must be 1-D arrays of equal length")
    if _decreasing(time_us.time):
        raise ValueError("edge times must be non-decreasing")
    result = _decode(time_us, polarity, start_us)
    if not result.frames:
        flipped = _decode(time_us, -polarity, start_us)
        if flipped.frames:
            return FrameDecode(flipped.frames, flipped.rejected, flipped.incomplete, flipped.reasons, True)
    return result


def _frame_starts(time_us: ScaledTimes, polarity: np.ndarray, start_us: float | None) -> np.ndarray:
    """Indices of rising edges that directly follow a QUIET (a low of at least QUIET_MIN_US)."""
    starts = _quiet_rises(time_us.time, time_us.us_per_unit, polarity, QUIET_MIN_US)
    if (start_us is not None and len(time_us) and polarity[0] > 0
            and time_us[0] - start_us >= QUIET_MIN_US):
        starts = np.concatenate(([0], starts))
    return starts


@kernel
def _quiet_rises(time, us_per_unit, polarity, quiet_min_us):  # pragma: no cover (compiled)
    """Indices of the rising edges after a low of at least ``quiet_min_us`` (times ``time · us_per_unit``;
    no per-edge temporaries: a long capture's edges are many)."""
    count = 0
    for k in range(1, len(time)):
        if (polarity[k - 1] < 0 and polarity[k] > 0
                and time[k] * us_per_unit - time[k - 1] * us_per_unit >= quiet_min_us):
            count += 1
    out = np.empty(count, dtype=np.int64)
    count = 0
    for k in range(1, len(time)):
        if (polarity[k - 1] < 0 and polarity[k] > 0
                and time[k] * us_per_unit - time[k - 1] * us_per_unit >= quiet_min_us):
            out[count] = k
            count += 1
    return out


@kernel
def _decreasing(time):  # pragma: no cover (compiled)
    """Whether any time is before the one preceding it."""
    for k in range(1, len(time)):
        if time[k] < time[k - 1]:
            return True
    return False


def _decode(time_us: ScaledTimes, polarity: np.ndarray, start_us: float | None) -> FrameDecode:
    starts = _frame_starts(time_us, polarity, start_us)
    frames: list[Frame] = []
    reasons: Counter[str] = Counter()
    incomplete = 0
    synced = False
    for i, s in enumerate(starts):
        last_segment = i + 1 == len(starts)
        end = len(time_us) - 1 if last_segment else starts[i + 1] - 1  # last edge before the next QUIET
        if not synced:  # skip to the first QUIET + SYNC
            synced = _is_sync(time_us, polarity, s, end)
            if not synced:
                continue
        outcome = _decode_segment(time_us, polarity, s, end, last_segment)
        if isinstance(outcome, Frame):
            frames.append(outcome)
        elif outcome == "incomplete":
            incomplete += 1
        else:
            reasons[outcome] += 1
    return FrameDecode(frames, sum(reasons.values()), incomplete, dict(reasons))


def cut_trains(time_us: ScaledTimes, polarity: np.ndarray) -> list[Frame]:
    """The calibration trains whose CAL frame did not decode because its group holds another number of
    edges than its header announces (audio lost or inserted inside the train): each CAL header read after
    a QUIET and a SYNC, as a frame over the edges from its group's first to the next QUIET. Never decoded
    as a frame: only a clock fitted with the lost audio cut out (:func:`pintime.clock.calibrate_from_train`)
    uses one."""
    starts = _frame_starts(time_us, polarity, 0.0)
    out = []
    for i, s in enumerate(starts):
        end = len(time_us) - 1 if i + 1 == len(starts) else int(starts[i + 1]) - 1
        if not _is_sync(time_us, polarity, s, end):
            continue
        bits, settle_end = _header_bits(time_us, s + 2, end)
        if settle_end is None or settle_end > end:
            continue
        header = _header(bits)
        if isinstance(header, tuple) and header[0] == "cal" and end + 1 - settle_end != header[1]["count"]:
            out.append(Frame("cal", header[1], settle_end, end + 1, int(s)))
    return out


def _inside(value: float, bounds: tuple[float, float]) -> bool:
    return bounds[0] <= value <= bounds[1]


def _is_sync(time_us: ScaledTimes, polarity: np.ndarray, s: int, end: int) -> bool:
    """True if edges s, s+1, s+2 are a SYNC's high and low (FORMAT.md §3)."""
    if s + 2 > end or polarity[s + 1] > 0 or polarity[s + 2] < 0:
        return False
    return (_inside(time_us[s + 1] - time_us[s], SYNC_HIGH_US)
            and _inside(time_us[s + 2] - time_us[s + 1], SYNC_LOW_US))


def _decode_segment(time_us: ScaledTimes, polarity: np.ndarray, s: int, end: int,
                    last_segment: bool) -> Frame | str:
    """Decode the edges s … end (inclusive) as one frame; a Frame, "incomplete" or a rejection reason."""
    seg_pol = polarity[s:end + 1]
    if np.any(seg_pol[1:] == seg_pol[:-1]):
        return "edges out of order"
    if last_segment and seg_pol[-1] > 0:
        return "incomplete"  # the capture ends with the pin high
    if not _is_sync(time_us, polarity, s, end):
        return "incomplete" if last_segment and end < s + 2 else "sync"
    bits, settle_end = _header_bits(time_us, s + 2, end)
    if settle_end is None:
        return "incomplete" if last_segment and bits == "end" else "bit timing"
    header = _header(bits)
    if isinstance(header, str):
        # a header ended by the end of the capture, not by a SETTLE or QUIET, may just be cut short
        return "incomplete" if last_segment and settle_end > end else header
    kind, fields = header
    lo = min(settle_end, end + 1)
    count, expected = end + 1 - lo, group_edge_count(kind, fields)
    if count != expected:
        return "incomplete" if last_segment and count < expected else "group edge count"
    if kind not in UNGAPPED and count > 2:
        gaps = time_us[lo + 2:end + 1:2] - time_us[lo + 1:end:2]
        if not np.all((gaps >= GAP_US[0]) & (gaps <= GAP_US[1])):
            return "group gap"
    return Frame(kind, fields, int(lo), int(end + 1), int(s))


def _header_bits(time_us: ScaledTimes, r: int, end: int) -> tuple[list[int] | str, int | None]:
    """Read header bits from rising edge r on.

    Returns the bits and the index of the first group edge (``end + 1`` when the header's last low
    runs into the next QUIET or the end of the capture), or (reason, None) on a timing violation.
    Bit k is the high from edge r + 2k and the low after it; the header ends at the first bit whose
    high is neither a 0 nor a 1, whose low is a SETTLE or not a bit's low, or which has no low.
    """
    t = time_us[r:end + 1]
    high = t[1::2] - t[:-1:2]  # one per bit whose high has ended (its falling edge is at most `end`)
    low = t[2::2] - t[1:-1:2]  # one per bit whose low has ended: the last bit may have none
    zero = (high >= BIT0_HIGH_US[0]) & (high < BIT0_HIGH_US[1])
    bad_high = ~zero & ~((high >= BIT1_HIGH_US[0]) & (high <= BIT1_HIGH_US[1]))
    settle = np.zeros(len(high), dtype=bool)
    settle[:len(low)] = (low >= SETTLE_US[0]) & (low <= SETTLE_US[1])
    bit_low = np.zeros(len(high), dtype=bool)
    bit_low[:len(low)] = (low >= BIT_LOW_US[0]) & (low <= BIT_LOW_US[1])
    stop = bad_high | settle | ~bit_low
    if not stop.any():
        return "end", None  # edges ran out inside a bit (only possible at the end of a capture)
    k = int(np.argmax(stop))
    bits = np.where(zero[:k + 1], 0, 1).tolist()
    if bad_high[k]:
        return "bit", None
    if k == len(low):
        return bits, end + 1  # low runs into the next QUIET (or the capture's end): empty group
    if settle[k]:
        return bits, r + 2 + 2 * k
    return "bit", None


def _header(bits: list[int] | str) -> tuple[str, dict[str, int]] | str:
    """Check a header's bits (length, CRC, version, kind, payload length); (kind, fields) or a reason."""
    if isinstance(bits, str) or len(bits) % 8 or len(bits) < 24:
        return "header length"
    data = np.packbits(np.array(bits, dtype=np.uint8)).tobytes()
    if crc16_ccitt_false(data[:-2]) != int.from_bytes(data[-2:], "big"):
        return "crc"
    version, number = data[0] >> 4, data[0] & 0x0F
    if version != FORMAT_VERSION:
        return f"version {version}"
    if number not in KINDS:
        return "unknown kind"
    kind, layout = KINDS[number]
    payload = data[1:-2]
    if len(payload) != sum(size for _, size in layout):
        return "header length"
    fields: dict[str, int] = {}
    offset = 0
    for name, size in layout:
        fields[name] = int.from_bytes(payload[offset:offset + size], "big")
        offset += size
    return kind, fields


def decode_between_gaps(time_us: ScaledTimes, polarity: np.ndarray,
                        gaps_us: np.ndarray) -> tuple[FrameDecode, int]:
    """Decode each gap-free stretch of the measurement channel on its own; (all frames, frames cut by gaps).

    ``gaps_us`` are the gaps' times in the edges' time base, ascending (none: one stretch, exactly
    :func:`decode_frames` from time 0). A stretch after a gap starts at it: the pin is known
    to be at its level from the gap on, no longer. A gap cuts a frame when the stretch before it ends in an
    incomplete frame, or the stretch after it does not start with a rising edge after a QUIET since the gap;
    when both, it cuts two if the edges after it are proven not to be the first frame's rest
    (:func:`_cuts_two`), else one. Frames wholly inside the lost audio are among those the END frame counts
    as missing.
    """
    bounds = [0, *time_us.searchsorted(gaps_us), len(time_us)]
    starts_us = [0.0, *gaps_us]
    stretches = [decode_frames(time_us.part(a, b), polarity[a:b], start_us=s) if b > a else None
                 for a, b, s in zip(bounds[:-1], bounds[1:], starts_us, strict=True)]
    inverted = {d.inverted for d in stretches if d is not None and d.frames}
    if len(inverted) > 1:
        raise PintimeError("frames decode with opposite pin polarities on either side of a recording gap")
    sign = -1 if True in inverted else 1
    lost = 0
    level = sign * polarity
    for i, gap_us in enumerate(gaps_us):
        before, first = stretches[i], bounds[i + 1]
        cut_before = before is not None and before.incomplete > 0
        cut_after = stretches[i + 1] is not None and (level[first] < 0
                                                      or time_us[first] - gap_us < QUIET_MIN_US)
        two = (before is not None and cut_before and cut_after
               and _cuts_two(time_us[bounds[i]:bounds[i + 2]], level[bounds[i]:bounds[i + 2]],
                             first - bounds[i], (starts_us[i], gap_us), before))
        lost += 2 if two else int(cut_before or cut_after)
    frames = [replace(f, group_lo=f.group_lo + a, group_hi=f.group_hi + a, start=f.start + a)
              for a, d in zip(bounds[:-1], stretches, strict=True) if d is not None for f in d.frames]
    reasons: dict[str, int] = {}
    for d in stretches:
        for reason, n in (d.reasons if d is not None else {}).items():
            reasons[reason] = reasons.get(reason, 0) + n
    last = stretches[-1]
    return FrameDecode(frames, sum(reasons.values()), 0 if last is None else last.incomplete, reasons,
                       sign < 0), lost


def _cuts_two(time_us: np.ndarray, level: np.ndarray, first: int, starts_us: tuple[float, float],
              before: FrameDecode) -> bool:
    """Whether a gap that cuts the frame the stretch before it ends in also cuts the next one.

    ``time_us`` and ``level`` (pin level after each edge: polarity, inversion undone) hold the stretches
    before and after the gap, the latter from ``first`` on; ``starts_us`` are where each starts and
    ``before`` is the first's decoding. The edges after the gap up to their first QUIET (the tail) are
    another frame's when they begin a valid frame once a QUIET is assumed before them (that frame lost only
    its QUIET to the gap), or when, read as the cut frame's rest, they make its group longer than its
    header announces (with one edge inserted at the gap where the level repeats across it: the fewest
    the lost audio held). Otherwise (the cut frame's header is lost, or it lacks at least as many edges as
    the tail holds) the tail may be its rest: one frame.
    """
    t, p = time_us[first:], level[first:]
    quiet = np.flatnonzero((p[1:] > 0) & (p[:-1] < 0) & (np.diff(t) >= QUIET_MIN_US)) + 1
    end = first + (int(quiet[0]) if len(quiet) else len(t))
    own = decode_frames(t, p, start_us=t[0] - QUIET_MIN_US)
    if not own.inverted and own.frames and own.frames[0].start == 0:
        return True
    time_j, level_j = time_us[:end], level[:end]
    if level[first - 1] == level[first]:
        time_j = np.insert(time_j, first, starts_us[1])
        level_j = np.insert(level_j, first, -level[first])
    joined = decode_frames(time_j, level_j, start_us=starts_us[0])
    return joined.reasons.get("group edge count", 0) > before.reasons.get("group edge count", 0)
