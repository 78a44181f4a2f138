"""Print the length (s) of the committed example captures: the RUN and CAL frames and the first two
repetitions of table1, then 0.8 ms into the SYNC high of the next RUN frame — cut there so that the analyzer
shows how a recording stopped mid-run decodes (captures/README.md). Computed from simavr's exact edges, so
it follows the firmware: usage ``example_duration.py build/sim/table1``."""

from __future__ import annotations

import json
import sys

from pintime.capture.edgelist import read_edge_list
from pintime.edges import MEASUREMENT_CHANNEL
from pintime.frames import decode_frames
from pintime.soundcard.synth import PREROLL_S

INTO_SYNC_S = 0.8e-3  # into the 1 ms SYNC high (FORMAT.md §3): far from both of its edges
RUN_FRAME = 3  # repetition 2 starts with the fourth RUN frame (the first one comes before the CAL frame)


def main(prefix: str) -> None:
    f_cpu_hz = json.loads(open(f"{prefix}.json").read())["f_cpu_hz"]
    meas = read_edge_list(f"{prefix}.edges.csv").on(MEASUREMENT_CHANNEL)
    time_s = meas.time / f_cpu_hz
    run = decode_frames(time_s * 1e6, meas.polarity).of_kind("run")[RUN_FRAME]
    # the synthesizer's sample 0 is PREROLL_S (and less than a sample) before cycle 0 (soundcard/synth.py)
    print(f"{time_s[run.start] + INTO_SYNC_S + PREROLL_S:.4f}")


if __name__ == "__main__":
    main(sys.argv[1])
