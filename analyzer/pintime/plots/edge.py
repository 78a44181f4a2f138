"""Fig. 6 of the paper from our data: one captured edge, its samples, and where each method puts it."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from pintime.capture.wav import open_wav  # noqa: E402
from pintime.errors import PintimeError  # noqa: E402
from pintime.locate.locators.fit import FIT_HALF_SAMPLES, TemplateTable  # noqa: E402
from pintime.locate.locators.methods import METHODS, SIMPLE_HALF, locate_single  # noqa: E402
from pintime.locate.shape.template import Template  # noqa: E402
from pintime.locate.stream import capture_edges as locate  # noqa: E402
from pintime.plots import save_figure  # noqa: E402

SHOW_HALF = 10  # samples either side of the edge in the figure
COLOURS = {"template": "tab:green", "inflection": "tab:red", "threshold": "tab:orange", "count": "tab:purple"}


def fig6_edge(capture: str | Path, out: Path) -> Path:
    """Plot the first calibration-train edge of the WAV ``capture`` with the time each method gives it.

    The learned template (fitted to the edge) is drawn through the samples; the inflection method's
    parabola crossing and the threshold crossing are shown against it, as in the paper's Fig. 6.
    """
    info = open_wav(capture)
    template, _, noise, train_data, _ = locate.learn_capture(info)
    if not train_data or not isinstance(template, Template):
        raise PintimeError(f"{capture}: no calibration train to draw Fig. 6 from")
    pos, sign, y_simple, _ = (part[:1] for part in train_data)
    table = TemplateTable.build(template)
    fs = info.samplerate_hz
    centre = SIMPLE_HALF
    y_fit = y_simple[:, centre - FIT_HALF_SAMPLES:centre + FIT_HALF_SAMPLES + 1]
    times = {m: locate_single(m, table, noise[0], y_simple, y_fit)[0][0] for m in METHODS}
    shown = np.arange(-SHOW_HALF, SHOW_HALF + 1)
    samples = y_simple[0, centre + shown]
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(shown, samples, "o", color="k", label="samples (192 kHz)")
    # the template through the samples: amplitude, offset and slope by least squares at its fitted time
    fine = np.linspace(-SHOW_HALF, SHOW_HALF, 801)
    g, _ = template.evaluate(shown - times["template"])
    basis = np.stack([g, np.ones_like(g), shown / SHOW_HALF], axis=1)
    amp, a, b = np.linalg.lstsq(basis, samples, rcond=None)[0]
    ax.plot(fine, amp * template.evaluate(fine - times["template"])[0] + a + b * fine / SHOW_HALF,
            color=COLOURS["template"], lw=1, label="learned template, fitted")
    for method, t in times.items():
        offset_ns = (t - times["template"]) / fs * 1e9
        ax.axvline(t, color=COLOURS[method], ls="--", lw=1.2, label=f"{method}: {offset_ns:+.1f} ns")
    ax.set_xlabel(f"samples from sample {int(pos[0])} (1 sample = {1e6 / fs:.3f} µs)")
    ax.set_ylabel("level (full scale)")
    ax.set_title("Fig. 6: one captured edge and its located time per method")
    ax.legend(fontsize=8)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "fig6_edge.png"
    fig.tight_layout()
    save_figure(fig, path, 120)
    plt.close(fig)
    return path
