"""Compile pintime's kernels for this state of its sources, once, at install (``make deps``): a first
analysis would otherwise spend about a minute on it (docs/results.md, "Speed").

The kernels are compiled for the argument types they are called with, and a card's 192 kHz 24-bit stereo
capture takes other ones than a laptop's 48 kHz 16-bit mono (whose close edges are fitted jointly), so both
example captures are analysed. A stamp in numba's cache folder for these sources (``pintime/compiled.py``)
marks it done; any edit of the sources names another folder. Usage: ``compile_kernels.py captures/*.wav``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numba
import pintime.compiled  # noqa: F401  (sets numba's cache folder for these sources)

STAMP = "compiled-by-deps"


def main(captures: list[str]) -> None:
    stamp = Path(numba.config.CACHE_DIR) / STAMP  # type: ignore[attr-defined]
    if stamp.exists():
        return
    print("deps: compiling pintime's kernels (once per version of its sources: about a minute)", flush=True)
    from pintime import pipeline  # (only then: its imports take a while)
    from pintime.errors import PintimeError

    done = []
    for capture in captures:  # a saving only: a capture missing or refused leaves its kernels to later
        try:
            pipeline.analyze(capture)
            done.append(capture)
        except (OSError, PintimeError) as err:
            print(f"deps: kernels not compiled with {capture} ({err}): a first analysis will", flush=True)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(f"kernels compiled by analysing {', '.join(done) or 'nothing'}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
