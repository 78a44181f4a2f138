"""Compile pintime's kernels for this state of its sources, once, at install (``make deps``): a first
analysis would otherwise spend about a minute on it (docs/results.md, "Speed").

The kernels are compiled for the argument types they are called with, and a card's 192 kHz 24-bit stereo
capture takes other ones than a laptop's 48 kHz 16-bit mono (whose close edges are fitted jointly), so both
example captures are analysed; and the 16-bit one again at an eighth of its level, quieter than one LSB,
for the rounding model's kernels (:mod:`pintime.locate.shape.quantization`: 3 s more on such a first capture).
A stamp in numba's cache folder for these sources (``pintime/compiled.py``) marks it done; any edit of the
sources names another folder. Usage: ``compile_kernels.py captures/*.wav``.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numba
import numpy as np
import pintime.compiled  # noqa: F401  (sets numba's cache folder for these sources)
import soundfile as sf

STAMP = "compiled-by-deps"
QUIETER = 8  # the 16-bit example's noise (≈ 0.7 LSB) over this is below the rounding model's 0.6 LSB


def main(captures: list[str]) -> None:
    stamp = Path(numba.config.CACHE_DIR) / STAMP  # type: ignore[attr-defined]
    if stamp.exists():
        return
    print("deps: compiling pintime's kernels (once per version of its sources: about a minute)", flush=True)
    from pintime import pipeline  # (only then: its imports take a while)
    from pintime.errors import PintimeError

    done = []
    with tempfile.TemporaryDirectory() as scratch:
        for capture in captures:  # a saving only: a capture missing or refused leaves its kernels to later
            try:
                pipeline.analyze(capture)
                done.append(capture)
                for quiet in _quieter(Path(capture), Path(scratch)):
                    pipeline.analyze(quiet)
                    done.append(f"{capture} at 1/{QUIETER} of its level")
            except (OSError, RuntimeError, PintimeError) as err:  # RuntimeError: soundfile's
                print(f"deps: kernels not compiled with {capture} ({err}): a first analysis will", flush=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(f"kernels compiled by analysing {', '.join(done) or 'nothing'}\n")


def _quieter(capture: Path, scratch: Path) -> list[Path]:
    """A 16-bit ``capture`` at an eighth of its level (its noise then below one LSB) in ``scratch``; none
    for a 24-bit one (its noise is many LSBs at any level)."""
    if sf.info(str(capture)).subtype != "PCM_16":
        return []
    samples, rate_hz = sf.read(str(capture), dtype="int16")
    quiet = scratch / f"quiet-{capture.name}"
    sf.write(str(quiet), np.round(samples / QUIETER).astype(np.int16), rate_hz, subtype="PCM_16")
    return [quiet]


if __name__ == "__main__":
    main(sys.argv[1:])
