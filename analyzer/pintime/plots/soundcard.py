"""Plots of the sound-card model (``pintime synth --plot DIR``): a rendered edge, a drooping pulse.

The samples come from the real renderer (:func:`pintime.soundcard.synth.synthesize` on a tiny edge list, so
noise, jitter and clock offset are those of the profile); the continuous curve is the model's noise-free
:func:`pintime.soundcard.model.step_response` at the same place.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import soundfile as sf

from pintime.plots import save_figure
from pintime.soundcard.model import PROFILES, SHARP, WIDE, Profile, step_response
from pintime.soundcard.synth import synthesize

F_CPU_HZ = 16_000_000
EDGE_CYCLE = 3_200_007  # 0.2000004 s: not a whole number of samples
PULSE_START_CYCLE, PULSE_END_CYCLE = 4_800_000, 12_800_000  # a 0.5 s pulse, to show the droop


def _render(profile: Profile, rows: list[tuple[int, int, int]], workdir: Path, name: str):
    """Render ``rows`` (cycle, channel, level) and return (left-channel samples, capture start in s)."""
    csv = workdir / f"{name}.edges.csv"
    csv.write_text("cycle,channel,level\n" + "".join(f"{c},{ch},{lv}\n" for c, ch, lv in rows))
    result = synthesize(csv, workdir / f"{name}-capture.wav", profile, seed=1, f_cpu_hz=F_CPU_HZ)
    samples, _ = sf.read(result.wav_path, dtype="float64", always_2d=True)
    return samples[:, 0], result.start_s


def _variant(profile: Profile, kind: str) -> Profile:
    """``profile`` with the decimation filter of the given kind (from the built-in profile using it)."""
    donor = PROFILES["default"] if kind == SHARP.name else PROFILES["wide-filter"]
    if profile.decimation == donor.decimation:
        return profile
    return replace(profile, name=f"{profile.name}+{kind}", decimation=donor.decimation,
                   modulator_oversampling=donor.modulator_oversampling)


def _time_axis(n: int, start_s: float, profile: Profile, edge_s: float) -> np.ndarray:
    """Sample instants in card seconds, relative to the edge (clock offset applied, wander ignored)."""
    return np.arange(n) / (profile.samplerate_hz * (1 + profile.clock_ppm * 1e-6)) - (edge_s - start_s)


def write_plots(directory: Path, profile: Profile) -> list[Path]:
    """Write ``edge-sharp.png``, ``edge-wide.png`` and ``droop.png`` for ``profile`` into ``directory``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory.mkdir(parents=True, exist_ok=True)
    sign = (-1 if profile.inverted else 1) * profile.step_fs
    written = []
    with tempfile.TemporaryDirectory() as tmp:
        for kind in (SHARP.name, WIDE.name):
            card = _variant(profile, kind)
            samples, start_s = _render(card, [(EDGE_CYCLE, 0, 1)], Path(tmp), kind)
            edge_s = EDGE_CYCLE / F_CPU_HZ
            t = _time_axis(len(samples), start_s, card, edge_s)
            mid_s = t[np.argmax(np.abs(np.diff(samples)))]  # the steepest part of the rendered step
            fig, axes = plt.subplots(2, 1, figsize=(9, 7))
            fs = card.samplerate_hz
            for ax, half_s in zip(axes, (60 * 1e6 / fs, 6 * 1e6 / fs), strict=True):
                half_s *= 1e-6
                fine = np.linspace(mid_s - half_s, mid_s + half_s, 4000)
                shown = np.abs(t - mid_s) <= half_s
                curve = sign * step_response(card, fine) + card.dc_offset_fs
                ax.plot(fine * 1e6, curve, lw=1, label="model (continuous, noise-free, no hum)")
                ax.plot(t[shown] * 1e6, samples[shown], "o", ms=3.5,
                        label=f"rendered samples ({fs / 1000:g} kHz)")
                ax.axvline(0, color="grey", lw=0.8, ls=":")
                ax.set_xlabel("time after the pin edge (µs)")
                ax.set_ylabel("level (full scale = 1)")
                ax.grid(alpha=0.3)
            axes[0].set_title(f"{card.name}: one rising edge through the {kind} decimation filter "
                              f"({card.decimation.passband_fs}-{card.decimation.stopband_fs} fs)")
            axes[0].legend(loc="center left")
            axes[1].set_title("zoom on the transition (the dotted line is the true edge instant)")
            fig.tight_layout()
            written.append(directory / f"edge-{kind}.png")
            save_figure(fig, written[-1], 110)
            plt.close(fig)

        rows = [(PULSE_START_CYCLE, 0, 1), (PULSE_END_CYCLE, 0, 0)]
        samples, start_s = _render(profile, rows, Path(tmp), "droop")
        t = _time_axis(len(samples), start_s, profile, 0.0)
        fig, ax = plt.subplots(figsize=(9, 4))
        ax.plot(t * 1e3, samples, lw=0.8)
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("level (full scale = 1)")
        corners = ", ".join(f"{f:g} Hz" for f in profile.ac_coupling_hz)
        digital = f" + digital {profile.digital_highpass_hz:g} Hz" if profile.digital_highpass_hz else ""
        ax.set_title(f"{profile.name}: a 500 ms pulse through AC coupling ({corners}{digital}) droops")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        written.append(directory / "droop.png")
        save_figure(fig, written[-1], 110)
        plt.close(fig)
    return written
