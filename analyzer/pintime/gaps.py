"""Recording gaps: audio a recording lost, as ``pintime record`` lists it in the capture's sidecar.

A gap is where the file's samples jump: the audio before file frame ``frame`` was lost, by an unknown
amount when PortAudio reports an overflow. Times across a gap are wrong, so nothing is measured across one:
edges close enough to a gap for their location to see the jump are dropped, the clock calibration gives
each gap-free stretch its own offset (:func:`pintime.clock.calibrate`), and frames are decoded stretch by
stretch, so a frame a gap cuts is counted as lost to it, never decoded.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.frames import QUIET_MIN_US, FrameDecode, decode_frames
from pintime.train import TEMPLATE_HALF_SAMPLES
from pintime.userfiles import read_json, sidecar_path
from pintime.wav import SAMPLE_RATE_HZ

# An edge's location uses samples up to the template's half-support on either side (its own window, or
# its neighbours' in a joint fit): edges this close to a gap may see the jump, and are dropped with it.
GUARD_S = 2 * TEMPLATE_HALF_SAMPLES / SAMPLE_RATE_HZ


@dataclass(frozen=True)
class Gap:
    """Frames missing from the recording just before file frame ``frame``."""

    frame: int
    frames_lost: int | None  # None: PortAudio does not say how many
    cause: str


@dataclass(frozen=True)
class RecordingGaps:
    """The gaps a capture's sidecar lists, and what they cost the analysis."""

    sidecar: Path
    gaps: list[Gap]
    edges_dropped: int = 0  # located edges within GUARD_S of a gap

    @property
    def times_s(self) -> np.ndarray:
        """Each gap's time in the file (capture clock, s from its first sample), ascending."""
        return np.sort(np.array([g.frame for g in self.gaps], dtype=np.float64)) / SAMPLE_RATE_HZ


def read_gaps(wav: str | Path) -> RecordingGaps | None:
    """The gaps listed beside the WAV ``wav`` (``CAPTURE.json``), or None without a recording's sidecar.

    A sidecar without a ``gaps`` list is another tool's (``pintime synth`` writes one): no gaps known.

    Raises
    ------
    PintimeError
        A sidecar that cannot be read as a JSON object (whether the recording has gaps is then unknown),
        or a ``gaps`` list of the wrong shape.
    """
    sidecar = sidecar_path(wav)
    if not sidecar.exists():
        return None
    data = read_json(sidecar, "capture's sidecar, where recording gaps are listed,")
    if "gaps" not in data:
        return None
    entries = data["gaps"]
    if not isinstance(entries, list) or not all(_is_gap(g) for g in entries):
        raise PintimeError(f"{sidecar}: 'gaps' must be a list of {{frame, frames_lost, cause}} as "
                           "pintime record writes it")
    gaps = [Gap(g["frame"], g["frames_lost"], g["cause"]) for g in entries]
    return RecordingGaps(sidecar, gaps) if gaps else None


def _is_gap(entry: object) -> bool:
    """A gap as :func:`pintime.record` writes it: a frame ≥ 0, frames lost (an integer or null), a cause."""
    return (isinstance(entry, dict) and type(entry.get("frame")) is int and entry["frame"] >= 0
            and "frames_lost" in entry and (entry["frames_lost"] is None or type(entry["frames_lost"]) is int)
            and isinstance(entry.get("cause"), str))


def near_gaps(time_s: np.ndarray, gaps: RecordingGaps) -> np.ndarray:
    """Which of the times ``time_s`` (capture seconds) lie within GUARD_S of a gap."""
    t = gaps.times_s  # at least one: RecordingGaps lists some
    after = np.minimum(np.searchsorted(t, time_s), len(t) - 1)  # the first gap after each time, or last
    before = np.maximum(after - 1, 0)
    return (np.abs(time_s - t[after]) <= GUARD_S) | (np.abs(time_s - t[before]) <= GUARD_S)


def drop_near_gaps(edges: Edges, gaps: RecordingGaps) -> tuple[Edges, RecordingGaps]:
    """``edges`` (capture seconds) without those within GUARD_S of a gap; the count goes into the gaps."""
    keep = ~near_gaps(edges.time, gaps)
    kept = Edges(edges.time[keep], edges.channel[keep], edges.polarity[keep], edges.sigma[keep],
                 edges.unit_s, edges.source)
    return kept, replace(gaps, edges_dropped=int(np.count_nonzero(~keep)))


def decode_between_gaps(time_us: np.ndarray, polarity: np.ndarray,
                        gaps_us: np.ndarray) -> tuple[FrameDecode, int]:
    """Decode each gap-free stretch of the measurement channel on its own; (all frames, frames cut by gaps).

    ``gaps_us`` are the gaps' times in the edges' time base, ascending (none: one stretch, exactly
    :func:`pintime.frames.decode_frames` from time 0). A stretch after a gap starts at it: the pin is known
    to be at its level from the gap on, no longer. A gap cuts a frame when the stretch before it ends in an
    incomplete frame, or the stretch after it does not start with a rising edge after a QUIET since the gap;
    when both, it cuts two if the edges after it are proven not to be the first frame's rest
    (:func:`_cuts_two`), else one. Frames wholly inside the lost audio are among those the END frame counts
    as missing.
    """
    bounds = [0, *np.searchsorted(time_us, gaps_us), len(time_us)]
    starts_us = [0.0, *gaps_us]
    stretches = [decode_frames(time_us[a:b], polarity[a:b], start_us=s) if b > a else None
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
    frames = [replace(f, group=f.group + a, start=f.start + a)
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
