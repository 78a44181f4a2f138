"""The ``Edges`` type: what every source (WAV, VCD, edge list) yields and everything downstream consumes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MEASUREMENT_CHANNEL = 0  # measurement pin, left audio channel
REFERENCE_CHANNEL = 1  # 1 s clock reference, right audio channel
# More signal pins (program kernel: PA1 … PA3), simavr's channels 2 … MAX_CHANNEL: pin PAk is channel k + 1
FIRST_SIGNAL_CHANNEL = 2
MAX_CHANNEL = 8


@dataclass(frozen=True)
class Edges:
    """Pin edges of one capture, sorted by time.

    ``time`` and ``sigma`` share one time base: seconds of the capture clock when ``unit_s`` is 1.0 (WAV,
    VCD), or MCU cycles when the source gives cycles (edge list, ``unit_s`` then 1/f_cpu if known, else
    ``None``). Clock calibration turns either into MCU time; nothing downstream needs the source.
    """

    time: np.ndarray  # float64, edge instants in the source time base
    channel: np.ndarray  # int8, MEASUREMENT_CHANNEL, REFERENCE_CHANNEL or a signal pin's (2 … MAX_CHANNEL)
    polarity: np.ndarray  # int8, +1 rising, -1 falling (pin level, after any inversion is undone)
    sigma: np.ndarray  # float64, 1-sigma uncertainty of each time, same base (0 for exact sources)
    unit_s: float | None  # seconds per time unit, nominal
    source: str  # what the edges came from, for messages

    def __post_init__(self) -> None:
        n = len(self.time)
        if not (len(self.channel) == len(self.polarity) == len(self.sigma) == n):
            raise ValueError("Edges arrays differ in length")

    def on(self, channel: int) -> Edges:
        """The edges of one channel."""
        keep = self.channel == channel
        return Edges(self.time[keep], self.channel[keep], self.polarity[keep], self.sigma[keep],
                     self.unit_s, self.source)
