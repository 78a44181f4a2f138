"""Render an exact edge list into the WAV a sound card would record (the model is
:mod:`pintime.soundcard.model`).

Each channel is a sum of steps, one per pin edge. Sample n of a channel is

    y[n] = (hp ∗ x)[n],  x[n] = step_fs · Σₖ aₖ s(n + jₙ − pₖ)

with aₖ = ±1 the edge's polarity (negated for an inverting card), pₖ the edge's position in card samples
(clock ratio, wander, delays: :func:`edge_positions`), jₙ the sample's jitter, s the tabulated low-pass
step response (0 before the edge, 1 once it has settled) and hp the AC-coupling IIR, run over the whole
stream with its state carried from block to block. Only the few dozen samples after each edge need the
table; elsewhere x is the pin level, so rendering costs O(samples + edges · support) and streams in
blocks of ``BLOCK_SAMPLES`` (memory stays bounded however long the capture).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
from scipy import signal
from tqdm import tqdm

from pintime.capture.edgelist import read_edge_list
from pintime.capture.wav import WAV_MAX_BYTES, soundfile_name
from pintime.edges import REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError
from pintime.files import (
    read_json,
    refuse_existing,
    refuse_overwrite,
    sidecar_path,
    version,
    whole_or_nothing,
    write_text,
)
from pintime.ladder import LADDER, PIN_NAMES
from pintime.soundcard.model import (
    TABLE_STEPS_PER_SAMPLE,
    Profile,
    corners_ba,
    coupling_drift_weight,
    coupling_lowpass_ba,
    get_profile,
    lowpass_table,
)

BLOCK_SAMPLES = 1 << 16  # 0.34 s per block: a few MB of float64 per channel
PREROLL_S = 0.05  # recording starts this long (plus a random fraction of a sample) before cycle 0
POSTROLL_S = 0.05  # and stops this long after the last edge has settled
WANDER_STEP_S = 0.01  # the clock ratio's wander is piecewise constant on this grid
WANDER_CROSSOVER_S = 30.0  # white-FM and random-walk-FM parts of the wander have equal Allan dev here
PCM_SUBTYPES = {16: "PCM_16", 24: "PCM_24"}  # the profile's bits → the WAV's samples
# --ladder: each pin's own driver delay on top of the profile's (pins of one port differ by a fraction of a
# ns: output stages alike, ladder resistors and traces not; assumed)
LADDER_PIN_DELAY_S = {0: 0.0, 2: 0.3e-9, 3: -0.2e-9, 4: 0.5e-9}


@dataclass(frozen=True)
class SynthResult:
    """What :func:`synthesize` wrote. ``start_s`` (MCU time of sample 0) is for tests, not the sidecar."""

    wav_path: Path
    sidecar_path: Path
    n_samples: int
    start_s: float
    clipped_samples: int
    render_s: float


def sim_json_path(edges_csv: str | Path) -> Path:
    """The simavr harness's run description next to its edge list (``table1.edges.csv`` → ``table1.json``)."""
    path = Path(edges_csv)
    stem = path.name.removesuffix(".csv").removesuffix(".edges")
    return path.with_name(stem + ".json")


def _read_sim_json(edges_csv: Path) -> dict:
    path = sim_json_path(edges_csv)
    if not path.exists():
        return {}
    sim = read_json(path, "simulation description")
    f_cpu_hz = sim.get("f_cpu_hz")
    if f_cpu_hz is not None and not (type(f_cpu_hz) in (int, float) and 0 < f_cpu_hz < float("inf")):
        raise PintimeError(f"{path}: f_cpu_hz must be a positive number of Hz, got {f_cpu_hz!r}")
    return sim


def wav_max_s(profile: Profile) -> float:
    """The longest recording a WAV holds in the profile's format (4 GiB of frames)."""
    return WAV_MAX_BYTES / _frame_bytes(profile) / profile.samplerate_hz


def _frame_bytes(profile: Profile) -> int:
    return profile.bits // 8 * profile.channels


def wander_phase(times_s: np.ndarray, adev_1s: float, rng: np.random.Generator) -> np.ndarray:
    """Accumulated time error (s) of the card clock at ``times_s`` (≥ 0) from its wander.

    The fractional frequency y of the clock ratio is piecewise constant on a WANDER_STEP_S grid: white FM
    (Allan deviation ``adev_1s`` at 1 s, falling as τ^-1/2) dominates below WANDER_CROSSOVER_S, random-walk
    FM (slow drift such as temperature, rising as τ^1/2) above: a crude stand-in for a real oscillator's
    flicker floor. The phase is the exact integral of y, so it is piecewise linear.
    """
    if adev_1s == 0 or len(times_s) == 0:
        return np.zeros(len(times_s))
    n = int(np.ceil(np.max(times_s) / WANDER_STEP_S)) + 1
    white = rng.standard_normal(n) * adev_1s * np.sqrt(1.0 / WANDER_STEP_S)
    # random walk of step σ: Allan variance ≈ σ²τ/(3Δ); equal to adev_1s²/τ_c at τ_c
    walk_step = adev_1s * np.sqrt(3 * WANDER_STEP_S) / WANDER_CROSSOVER_S
    walk = np.cumsum(rng.standard_normal(n)) * walk_step
    phase = np.concatenate([[0.0], np.cumsum((white + walk) * WANDER_STEP_S)])
    return np.interp(times_s, np.arange(n + 1) * WANDER_STEP_S, phase)


def edge_positions(times_s: np.ndarray, polarity: np.ndarray, channel: np.ndarray, profile: Profile,
                   start_s: float, wander_s: np.ndarray) -> np.ndarray:
    """Position of each edge's driver-ramp start in card samples (sample n is taken at position n).

    The card's sample counter advances at fs·(1 + ppm·1e-6) per second of MCU time, plus the wander.
    """
    delay_s = np.where(polarity > 0, profile.rise_delay_s, profile.fall_delay_s) + profile.latency_s
    delay_s = delay_s + np.where(channel == REFERENCE_CHANNEL, profile.right_delay_s, 0.0)
    rate = profile.samplerate_hz * (1 + profile.clock_ppm * 1e-6)
    return (times_s - start_s + delay_s) * rate + wander_s * profile.samplerate_hz


def _polyphase(values: np.ndarray, width: int) -> np.ndarray:
    """``out[r, j] = values[r + STEPS·j]`` for rows r = 0 … STEPS (0 past the end): the table per sample.

    An edge at fractional offset f0 = base − p ∈ (0, 1] has its W samples at x = f0 + j, i.e. on one pair of
    neighbouring rows, so interpolating a whole edge is two contiguous row gathers.
    """
    padded = np.zeros((width + 1) * TABLE_STEPS_PER_SAMPLE + 1)
    padded[: len(values)] = values
    rows = np.arange(TABLE_STEPS_PER_SAMPLE + 1)[:, None] + TABLE_STEPS_PER_SAMPLE * np.arange(width)
    return padded[rows]


class _Coupling:
    """The shaped coupling (model.py item 8) streamed block by block: the input less the weighted outputs of
    its low-passes, each with its state carried; the first weight drifts as a sinusoid of the sample
    index (phase ``phase``), the last takes up the difference."""

    def __init__(self, profile: Profile, phase: float):
        self.lowpass = [(b, a, np.zeros(1)) for b, a in coupling_lowpass_ba(profile)]
        self.weights = np.asarray(profile.coupling_weights, dtype=float)
        self.drift = coupling_drift_weight(profile)
        self.omega = 2 * np.pi / (profile.coupling_drift_period_s * profile.samplerate_hz)
        self.phase = phase

    def apply(self, y: np.ndarray, n0: int) -> np.ndarray:
        """Samples n0 … n0+len(y)−1 through the coupling (consecutive blocks)."""
        if not self.lowpass:
            return y
        move = self.drift * np.sin(self.omega * (n0 + np.arange(len(y))) + self.phase) if self.drift else 0.0
        out = y.copy()
        for i, (b, a, zi) in enumerate(self.lowpass):
            low, zi = signal.lfilter(b, a, y, zi=zi)
            self.lowpass[i] = (b, a, zi)
            w = self.weights[i] + (move if i == 0 else -move if i == len(self.lowpass) - 1 else 0.0)
            out -= w * low
        return out


class _Channel:
    """Streaming renderer of one channel: edges at known positions → AC-coupled samples, block by block.

    x[n] = Σₖ aₖ ([n > pₖ] + d(n + jₙ − pₖ)) with d(x) = s(x) − [x > 0] the step's deviation from an ideal
    step (zero outside 0 < x < support): the pin level plus a correction on the W samples after each edge.
    Jitter enters to first order through the slope of the table cell the sample falls in,
    d(x + j) ≈ d(x) + d′(x)·j (the next term, d″j²/2, is below 1e-7 of the step for 300 ps of jitter).
    """

    def __init__(self, positions: np.ndarray, polarity: np.ndarray, profile: Profile,
                 weight: np.ndarray | None = None, drift_phase: float = 0.0):
        order = np.argsort(positions, kind="stable")
        self.pos = positions[order]
        self.polarity = polarity[order].astype(np.int64)  # pin polarity: picks the rise or fall table
        self.weight = np.ones(len(order)) if weight is None else weight[order]  # step per edge, in steps
        tables = {+1: lowpass_table(profile, 1), -1: lowpass_table(profile, -1)}
        self.support = max(t.support_samples for t in tables.values())
        self.width = int(np.ceil(self.support)) + 1  # samples after an edge that need the table
        # per polarity (index 0: rising, 1: falling), signed: a falling edge is −1 · its step response
        self.deviation = np.stack([pol * _polyphase(tables[pol].values - 1.0, self.width) for pol in (1, -1)])
        self.table_index = (self.polarity < 0).astype(np.int64)
        self.base = np.floor(self.pos).astype(np.int64) + 1  # first sample after each edge
        self.level = 0.0  # pin level (in steps, from the start) of the edges before the current block
        self.gain = (-1 if profile.inverted else 1) * profile.step_fs
        b, a = corners_ba(profile)
        self.hp = (b, a, np.zeros(max(len(a), len(b)) - 1))
        self.coupling = _Coupling(profile, drift_phase)
        self.coupling_level = _Coupling(profile, drift_phase)  # the ADC's input level's own state
        # a nonlinear input (model.py item 9) bends the ADC's input level, the pin level after the coupling
        self.nonlinearity = profile.nonlinearity
        self.hp_level = (b, a, self.hp[2].copy()) if any(profile.nonlinearity) else None  # its own state
        self.jump = np.zeros(len(order))  # each edge's jump in the bend (FS)
        self.bend_before = 0.0  # the bend of the last sample of the previous block

    def render(self, n0: int, n: int, jitter: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """Samples n0 … n0+n−1 (consecutive blocks; ``jitter`` in samples, or None) and, for a nonlinear
        input, the ADC's input level: the pin level after the coupling, without the filters' ringing."""
        lo, hi = np.searchsorted(self.base, [n0, n0 + n])
        levels = self.level + np.concatenate([[0], np.cumsum(self.polarity[lo:hi] * self.weight[lo:hi])])
        runs = np.diff(np.concatenate([[0], self.base[lo:hi] - n0, [n]]))
        x = np.repeat(levels * self.gain, runs)  # the pin level, sample by sample
        self.level = float(levels[-1])
        level = None
        if self.hp_level is not None:
            b, a, zi = self.hp_level
            level, zi = signal.lfilter(b, a, x, zi=zi)
            self.hp_level = (b, a, zi)
            level = self.coupling_level.apply(level, n0)
        lo, hi = np.searchsorted(self.base, [n0 - self.width, n0 + n])
        x += self._deviation(lo, hi, n0, n, jitter, self.weight) * self.gain
        b, a, zi = self.hp
        y, zi = signal.lfilter(b, a, x, zi=zi)
        self.hp = (b, a, zi)
        return self.coupling.apply(y, n0), level

    def bend(self, v: np.ndarray, n0: int, jitter: np.ndarray | None) -> np.ndarray:
        """What the input's bend a₂v² + a₃v³ adds to samples n0 … of this channel, ``v`` the ADC's input
        level on them (FS; consecutive blocks). It acts before the decimation filter (model.py item 9):
        between edges on the slowly drooping level, sample by sample; at an edge on the step's height, a
        jump the filter spreads as the edge's own step response. (The bend of the sub-microsecond
        transition itself would move the edge by its change of area: below 0.01 ns, left out.)"""
        a2, a3 = self.nonlinearity
        out = (a2 + a3 * v) * v * v
        n = len(v)
        lo, hi = np.searchsorted(self.base, [n0, n0 + n])
        at = self.base[lo:hi] - n0
        before = np.concatenate([[self.bend_before], out[:-1]])
        first = np.concatenate([[True], np.diff(at) > 0])  # edges sharing a sample share its jump
        self.jump[lo:hi] = np.where(first, out[at] - before[at], 0.0)
        self.bend_before = float(out[-1])
        lo = int(np.searchsorted(self.base, n0 - self.width))
        # the deviation tables are signed by polarity: the polarity's sign times the jump gives the jump
        return out + self._deviation(lo, hi, n0, n, jitter, self.jump * self.polarity)

    def _deviation(self, lo: int, hi: int, n0: int, n: int, jitter: np.ndarray | None,
                   weight: np.ndarray) -> np.ndarray:
        """Σₖ wₖ aₖ d(n + jₙ − pₖ) for the edges lo … hi−1, on samples n0 … n0+n−1.

        Whole windows are accumulated into a buffer padded by W on both sides; the part outside the block
        is dropped (the neighbouring block computes it again).
        """
        w = self.width
        k = (self.base[lo:hi] - self.pos[lo:hi]) * TABLE_STEPS_PER_SAMPLE  # f0 in table steps, (0, STEPS]
        row = np.minimum(k.astype(np.int64), TABLE_STEPS_PER_SAMPLE - 1)
        frac = (k - row)[:, None]  # position inside the table cell, the same for all W samples of an edge
        which = self.table_index[lo:hi]
        scale = weight[lo:hi, None]
        below = self.deviation[which, row] * scale
        cell = self.deviation[which, row + 1] * scale - below
        idx = (self.base[lo:hi] - (n0 - w))[:, None] + np.arange(w)
        if jitter is not None:  # each sample's own offset, in table steps
            steps = np.concatenate([np.zeros(w), jitter * TABLE_STEPS_PER_SAMPLE, np.zeros(w)])
            frac = frac + steps[idx]
        below += cell * frac
        out = np.bincount(idx.ravel(), weights=below.ravel(), minlength=n + 2 * w)
        return out[w : w + n]


def _ladder_wiring(channel: np.ndarray, profile: Profile,
                   source: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The ladder (:data:`pintime.ladder.LADDER`): which edges are on its pins, the audio channel each lands
    on, its step in the profile's steps (weight / the channel's total weight, so that both pins high give
    the level one pin gives on the profile's divider) and its pin's own driver delay (s)."""
    if profile.channels != 2:
        raise PintimeError("a resistor ladder needs a stereo card (two pins per channel)")
    wiring = {pin: (c, w / sum(pw for _, pw in pair)) for c, pair in enumerate(LADDER) for pin, w in pair}
    keep = np.isin(channel, list(wiring))
    if not keep.any():
        raise PintimeError(f"{source}: no edge on the ladder's pins ({', '.join(PIN_NAMES.values())})")
    pins = channel[keep]
    return (keep, np.array([wiring[p][0] for p in pins]), np.array([wiring[p][1] for p in pins]),
            np.array([LADDER_PIN_DELAY_S[p] for p in pins]))


def _output(y: np.ndarray, profile: Profile, rng_dither: np.random.Generator) -> tuple[np.ndarray, int]:
    """Clip at full scale and quantize to the profile's bits; int32 with the code in the top bits (soundfile
    keeps those of a 16- or 24-bit file)."""
    full_scale_code = 1 << (profile.bits - 1)
    code = y  # y is this block's own array: scale, dither, round and clip in place
    code *= full_scale_code
    if profile.dither:  # TPDF: sum of two uniform ±½ LSB
        code += rng_dither.random(code.shape, dtype=np.float32)
        code -= rng_dither.random(code.shape, dtype=np.float32)
    np.rint(code, out=code)
    clipped = int(np.count_nonzero(code < -full_scale_code) + np.count_nonzero(code > full_scale_code - 1))
    np.clip(code, -full_scale_code, full_scale_code - 1, out=code)
    return code.astype(np.int32) << (32 - profile.bits), clipped


class _Hum:
    """Mains hum: the fundamental and odd harmonics at ``profile.hum_dbfs``, each with a random phase.

    Each harmonic is Im(A·e^{i(ωn/fs + φ)}); a block is the phasor at its first sample times a table of
    e^{iωk/fs}, k < BLOCK_SAMPLES, computed once (no sine per sample, no accumulated phase error).
    """

    def __init__(self, profile: Profile, rng: np.random.Generator):
        levels_dbfs = profile.hum_dbfs if profile.hum_hz else ()
        self.phase = rng.uniform(0, 2 * np.pi, len(levels_dbfs))
        self.amplitude = [10 ** (level / 20) for level in levels_dbfs]
        self.omega = [2 * np.pi * (profile.hum_hz or 0.0) * (2 * i + 1) / profile.samplerate_hz
                      for i in range(len(levels_dbfs))]
        self.tables = [np.exp(1j * w * np.arange(BLOCK_SAMPLES)) for w in self.omega]

    def block(self, n0: int, n: int) -> np.ndarray | float:
        """Hum on samples n0 … n0+n−1 (0.0 when the profile has none)."""
        out: np.ndarray | float = 0.0
        for w, amp, phi, table in zip(self.omega, self.amplitude, self.phase, self.tables, strict=True):
            out = out + (amp * np.exp(1j * (w * n0 + phi)) * table[:n]).imag
        return out


def _check_paths(edges_csv: Path, wav_path: Path, force: bool) -> None:
    if not edges_csv.is_file():
        raise PintimeError(f"{edges_csv}: edge list not found")
    refuse_overwrite([wav_path, sidecar_path(wav_path)], [edges_csv, sim_json_path(edges_csv)])
    if wav_path.suffix.lower() != ".wav":
        raise PintimeError(f"{wav_path}: the output must be a .wav file")
    if sidecar_path(wav_path).is_dir():  # found out before the long render, not after
        raise PintimeError(f"{sidecar_path(wav_path)}: the sidecar of {wav_path} would be a folder")
    refuse_existing([wav_path, sidecar_path(wav_path)], force)


def _check_numbers(seed: int, f_cpu_hz: float | None, duration_s: float | None, sim_json: Path,
                   profile: Profile) -> float:
    """Validate the numeric arguments; returns F_CPU."""
    if not (isinstance(seed, int | np.integer) and seed >= 0):
        raise PintimeError(f"seed must be a non-negative integer, got {seed!r}")
    fs = profile.samplerate_hz
    if duration_s is not None and not (np.isfinite(duration_s) and duration_s * fs >= 1):
        raise PintimeError(f"the duration must be at least one sample ({1e6 / fs:.3g} µs), "
                           f"got {duration_s} s")
    if duration_s is not None and duration_s > wav_max_s(profile):
        raise PintimeError(f"the duration {duration_s:g} s is longer than a WAV can hold "
                           f"({wav_max_s(profile):.0f} s)")
    if f_cpu_hz is None:
        raise PintimeError(f"F_CPU unknown: give --f-cpu-hz or put f_cpu_hz in {sim_json}")
    if not (np.isfinite(float(f_cpu_hz)) and float(f_cpu_hz) > 0):
        raise PintimeError(f"F_CPU must be a positive number of Hz, got {f_cpu_hz}")
    return float(f_cpu_hz)


def _write_wav(wav_path: Path, channels: list[_Channel], n_samples: int, profile: Profile,
               rngs: dict[str, np.random.Generator], progress: bool) -> int:
    """Stream the channels into ``wav_path`` block by block; returns the number of clipped samples."""
    hum = _Hum(profile, rngs["hum"])
    noise_rms = 0.0 if profile.noise_dbfs is None else 10 ** (profile.noise_dbfs / 20)
    jitter_samples = profile.jitter_rms_s * profile.samplerate_hz
    clipped = 0
    wav = sf.SoundFile(soundfile_name(wav_path), "w", samplerate=profile.samplerate_hz,
                       channels=len(channels), subtype=PCM_SUBTYPES[profile.bits], format="WAV")
    with wav as out, tqdm(total=n_samples, unit="sample", unit_scale=True, disable=not progress,
                          desc="synth") as bar:
        for n0 in range(0, n_samples, BLOCK_SAMPLES):
            n = min(BLOCK_SAMPLES, n_samples - n0)
            jitter = None  # one sample clock for both channels
            if jitter_samples:
                jitter = rngs["jitter"].standard_normal(n, dtype=np.float32) * np.float32(jitter_samples)
            common = hum.block(n0, n) + profile.dc_offset_fs
            block = np.empty((n, len(channels)), dtype=np.int32)
            ys, levels = zip(*(channel.render(n0, n, jitter) for channel in channels), strict=True)
            if profile.crosstalk_db is not None and len(ys) == 2:  # both share the high-pass: leak after it
                leak = 10 ** (profile.crosstalk_db / 20)
                ys = (ys[0] + leak * ys[1], ys[1] + leak * ys[0])
                if levels[0] is not None:
                    levels = (levels[0] + leak * levels[1], levels[1] + leak * levels[0])
            for c, (y, level) in enumerate(zip(ys, levels, strict=True)):
                y += common
                if noise_rms:
                    y += rngs["noise"].standard_normal(n, dtype=np.float32) * np.float32(noise_rms)
                if level is not None:  # the input stage's bend, before the decimation filter (model.py 9)
                    y += channels[c].bend(level + common, n0, jitter)
                block[:, c], clips = _output(y, profile, rngs["dither"])
                clipped += clips
            out.write(block)
            bar.update(n)
    return clipped


def synthesize(edges_csv: str | Path, wav_path: str | Path, profile: Profile | str = "default",
               seed: int = 0, f_cpu_hz: float | None = None, duration_s: float | None = None,
               progress: bool = False, force: bool = False, ladder: bool = False) -> SynthResult:
    """Render the edge list ``edges_csv`` (simavr harness CSV, MCU cycles) into the WAV the profile's card
    records (192 kHz, 24-bit, stereo unless the profile says otherwise, as
    :func:`pintime.soundcard.formats.with_format` makes it).

    Left = measurement pin (channel 0), right = clock reference (channel 1); a mono profile records the
    pin alone. Writes ``wav_path`` and its
    sidecar (:func:`sidecar_path`): source, firmware revision, profile, seed, pintime version — nothing an
    analyzer could use to cheat, and nothing it needs (the analyzer works without the sidecar).

    Parameters
    ----------
    edges_csv : path of the edge list; F_CPU comes from ``f_cpu_hz`` or else the sibling simulation JSON
        (:func:`sim_json_path`, key ``f_cpu_hz``), whose ``revision`` goes into the sidecar.
    wav_path : output WAV; must not be the edge list or the simulation JSON (nor have them as sidecar).
    profile : a :class:`~pintime.soundcard.model.Profile` or the name of one in ``PROFILES``.
    seed : non-negative integer; the same seed gives a byte-identical file.
    f_cpu_hz : the MCU clock the edge list's cycles count.
    duration_s : length of the recording (it starts PREROLL_S before cycle 0); default: until every edge
        has settled, plus POSTROLL_S. Edges after the end are simply not recorded.
    progress : show a progress bar (tqdm) on stderr.
    force : replace an existing ``wav_path`` and sidecar (else refused, as ``pintime record`` does).
    ladder : record the four signal pins PA0 … PA3 through the resistor ladder of :mod:`pintime.ladder`
        (two per channel, weights 2 : 1, each pin with its own driver delay) instead of PA0 and the
        reference.

    Raises
    ------
    PintimeError
        On bad arguments, an unreadable edge list, unknown F_CPU, an over-long capture, or an existing
        output without ``force``.
    """
    started = time.perf_counter()
    profile = get_profile(profile) if isinstance(profile, str) else profile
    edges_csv, wav_path = Path(edges_csv), Path(wav_path)
    _check_paths(edges_csv, wav_path, force)
    sim = _read_sim_json(edges_csv)
    f_cpu_hz = _check_numbers(seed, f_cpu_hz if f_cpu_hz is not None else sim.get("f_cpu_hz"), duration_s,
                              sim_json_path(edges_csv), profile)
    edges, column, weight, pin_delay_s = _recorded_edges(edges_csv, profile, ladder)
    names = ("start", "wander", "jitter", "noise", "hum", "dither", "coupling")  # one stream per effect
    rngs = dict(zip(names, (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(7)),
                    strict=True))
    drift_phase = float(rngs["coupling"].uniform(0, 2 * np.pi))
    start_s, positions = _card_positions(edges, column, pin_delay_s, f_cpu_hz, profile, rngs, edges_csv)
    channels = [_Channel(positions[column == c], edges.polarity[column == c], profile, weight[column == c],
                         drift_phase) for c in range(profile.channels)]
    n_samples = _n_samples(positions[column < profile.channels], channels[0].support, duration_s, profile)
    clipped = _write_capture(wav_path, channels, n_samples, profile, rngs, progress)
    _write_sidecar(wav_path, edges_csv, sim, profile, seed, ladder)
    return SynthResult(wav_path, sidecar_path(wav_path), n_samples, start_s, clipped,
                       time.perf_counter() - started)


def _recorded_edges(edges_csv: Path, profile: Profile,
                    ladder: bool) -> tuple[Edges, np.ndarray, np.ndarray, np.ndarray]:
    """The edge list's edges the card records, the audio channel each lands on, its step (in the profile's
    steps) and its pin's own delay (s): every edge as it is, or a ladder's pins (:func:`_ladder_wiring`)."""
    edges = read_edge_list(edges_csv)
    if ladder:
        keep, column, weight, pin_delay_s = _ladder_wiring(edges.channel, profile, edges_csv)
        return (Edges(edges.time[keep], edges.channel[keep], edges.polarity[keep], edges.sigma[keep],
                      edges.unit_s, edges.source), column, weight, pin_delay_s)
    if not np.any(edges.channel < profile.channels):
        raise PintimeError(f"{edges_csv}: no edge on the pins a {profile.channels}-channel profile records "
                           f"(channels 0 … {profile.channels - 1})")
    return edges, edges.channel, np.ones(len(edges.time)), np.zeros(len(edges.time))


def _card_positions(edges: Edges, column: np.ndarray, pin_delay_s: np.ndarray, f_cpu_hz: float,
                    profile: Profile, rngs: dict[str, np.random.Generator],
                    source: Path) -> tuple[float, np.ndarray]:
    """MCU time of sample 0 (PREROLL_S before the first edge or cycle 0, less a random fraction of a
    sample) and each edge's position in card samples (:func:`edge_positions`, with the clock's wander);
    refused when the edges span more than a WAV holds."""
    times_s = edges.time / f_cpu_hz + pin_delay_s
    start_s = min(0.0, float(times_s[0])) - PREROLL_S - rngs["start"].random() / profile.samplerate_hz
    if times_s[-1] - start_s > wav_max_s(profile):  # found out before the wander is drawn over the whole span
        raise PintimeError(f"{source}: edges span {times_s[-1] - start_s:.3g} s at {f_cpu_hz:g} Hz, "
                           "longer than a WAV can hold (4 GiB)")
    wander_s = wander_phase(times_s - start_s, profile.wander_adev_1s, rngs["wander"])
    return start_s, edge_positions(times_s, edges.polarity, column, profile, start_s, wander_s)


def _n_samples(recorded: np.ndarray, support: float, duration_s: float | None, profile: Profile) -> int:
    """The capture's length in samples: ``duration_s``, or until the last ``recorded`` edge position has
    settled (``support`` samples) plus POSTROLL_S; refused past a WAV's 4 GiB."""
    fs = profile.samplerate_hz
    if duration_s is None:
        n_samples = int(np.ceil(recorded.max() + support + POSTROLL_S * fs))
    else:
        n_samples = round(duration_s * fs)
    if n_samples * _frame_bytes(profile) > WAV_MAX_BYTES:
        raise PintimeError(f"capture of {n_samples / fs:.0f} s exceeds the 4 GiB WAV limit")
    return n_samples


def _write_capture(wav_path: Path, channels: list[_Channel], n_samples: int, profile: Profile,
                   rngs: dict[str, np.random.Generator], progress: bool) -> int:
    """The WAV rendered whole or not at all (its folder made first); returns the clipped samples."""
    try:
        wav_path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PintimeError(f"{wav_path}: cannot write its folder ({err.strerror or err})") from None
    with whole_or_nothing(wav_path) as part:  # a run cut short leaves the old capture or none, never a part
        try:
            return _write_wav(part, channels, n_samples, profile, rngs, progress)
        except sf.LibsndfileError as err:
            raise PintimeError(f"{wav_path}: cannot write ({err})") from None


def _write_sidecar(wav_path: Path, edges_csv: Path, sim: dict, profile: Profile, seed: int,
                   ladder: bool) -> None:
    """The synthetic capture's sidecar: where it came from, nothing the analyzer could use."""
    write_text(sidecar_path(wav_path), json.dumps({
        "what": "pintime synthetic capture (informational: the analyzer never reads this file)",
        "source_edges": str(edges_csv),
        "firmware_revision": sim.get("revision"),
        "profile": profile.name,
        "seed": int(seed),
        **({"ladder": True} if ladder else {}),
        "pintime_version": version(),
    }, indent=2) + "\n")
