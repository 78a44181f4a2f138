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

from pintime.capture.wav import open_wav, open_written
from pintime.edges import Edges
from pintime.errors import PintimeError
from pintime.files import read_json, sidecar_path


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
    samplerate_hz: int  # the WAV's own: gap frames to seconds
    edges_dropped: int = 0  # located edges within the locator's guard of a gap

    @property
    def times_s(self) -> np.ndarray:
        """Each gap's time in the file (capture clock, s from its first sample), ascending."""
        return np.sort(np.array([g.frame for g in self.gaps], dtype=np.float64)) / self.samplerate_hz


def read_gaps(wav: str | Path, frames: int | None = None) -> RecordingGaps | None:
    """The gaps listed beside the WAV ``wav`` (``CAPTURE.json``), or None without a recording's sidecar;
    ``frames``: the recording's length (default: the file's, :func:`open_wav`; a recording still written
    gives the frames written so far).

    A sidecar without a ``gaps`` list is another tool's (``pintime synth`` writes one): no gaps known.
    The sidecar is looked for beside the file itself and, when ``wav`` is a link, beside the link too; two
    recording sidecars that list different gaps are refused. A gap listed twice is one gap.

    Raises
    ------
    PintimeError
        A sidecar that cannot be read as a JSON object (whether the recording has gaps is then unknown),
        a ``gaps`` list of the wrong shape, two that disagree, or a gap beyond the recording's end (another
        take's sidecar).
    """
    found = {}
    for sidecar in (sidecar_path(Path(wav).resolve()), sidecar_path(wav)):
        if sidecar.exists() and sidecar.resolve() not in found:
            found[sidecar.resolve()] = _listed_gaps(sidecar)
    listed = {s: gaps for s, gaps in found.items() if gaps is not None}
    if len(set(map(tuple, listed.values()))) > 1:
        raise PintimeError(f"{wav}: its sidecars {' and '.join(map(str, listed))} list different recording "
                           "gaps")
    if not listed:
        return None
    sidecar, gaps = next(iter(listed.items()))
    info = open_wav(wav) if frames is None else open_written(wav, frames)
    beyond = [g.frame for g in gaps if g.frame > info.frames]
    if beyond:
        raise PintimeError(f"{sidecar}: lists a recording gap at frame {beyond[0]}, beyond the end of {wav} "
                           f"({info.frames} frames): the sidecar of another recording?")
    return RecordingGaps(sidecar, gaps, info.samplerate_hz) if gaps else None


def _listed_gaps(sidecar: Path) -> list[Gap] | None:
    """The gaps a sidecar lists, each once (None: not a recording's sidecar)."""
    data = read_json(sidecar, "capture's sidecar, where recording gaps are listed,")
    if "gaps" not in data:
        return None
    entries = data["gaps"]
    if not isinstance(entries, list) or not all(_is_gap(g) for g in entries):
        raise PintimeError(f"{sidecar}: 'gaps' must be a list of {{frame, frames_lost, cause}} as "
                           "pintime record writes it (frame ≥ 0, frames_lost > 0 or null)")
    return list(dict.fromkeys(Gap(g["frame"], g["frames_lost"], g["cause"]) for g in entries))


def _is_gap(entry: object) -> bool:
    """A gap as :mod:`pintime.record` writes it: a frame ≥ 0, frames lost (a positive integer or null: not
    reported), a cause."""
    return (isinstance(entry, dict) and type(entry.get("frame")) is int and entry["frame"] >= 0
            and "frames_lost" in entry
            and (entry["frames_lost"] is None
                 or (type(entry["frames_lost"]) is int and entry["frames_lost"] > 0))
            and isinstance(entry.get("cause"), str))


def near_gaps(time_s: np.ndarray, gaps: RecordingGaps, guard_s: float) -> np.ndarray:
    """Which of the times ``time_s`` (capture seconds) lie within ``guard_s`` of a gap (the edge locator's
    reach, :func:`pintime.locate.stream.capture_edges.gap_guard_s`)."""
    t = gaps.times_s  # at least one: RecordingGaps lists some
    after = np.minimum(np.searchsorted(t, time_s), len(t) - 1)  # the first gap after each time, or last
    before = np.maximum(after - 1, 0)
    return (np.abs(time_s - t[after]) <= guard_s) | (np.abs(time_s - t[before]) <= guard_s)


def drop_near_gaps(edges: Edges, gaps: RecordingGaps, guard_s: float) -> tuple[Edges, RecordingGaps]:
    """``edges`` (capture seconds) without those within ``guard_s`` of a gap; the count goes into the gaps."""
    keep = ~near_gaps(edges.time, gaps, guard_s)
    kept = Edges(edges.time[keep], edges.channel[keep], edges.polarity[keep], edges.sigma[keep],
                 edges.unit_s, edges.source)
    return kept, replace(gaps, edges_dropped=int(np.count_nonzero(~keep)))
