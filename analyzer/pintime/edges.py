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
    """Pin edges of one capture, channel-major: sorted by channel, each channel's by time.

    Channel-major, so that one channel's edges (:meth:`on`) are views, not copies: a long capture's
    measurement channel holds nearly all of its edges. Arrays given in another order (time order, as a
    VCD lists them) are put in this one (stably: simultaneous edges of a channel keep their order);
    :meth:`time_order` gives the order across channels for writing them out.

    ``time`` and ``sigma`` share one time base: seconds of the capture clock when ``unit_s`` is 1.0 (WAV,
    VCD), or MCU cycles when the source gives cycles (edge list, ``unit_s`` then 1/f_cpu if known, else
    ``None``). Clock calibration turns either into MCU time; nothing downstream needs the source.
    """

    time: np.ndarray  # float64, edge instants in the source time base
    channel: np.ndarray  # int8, MEASUREMENT_CHANNEL, REFERENCE_CHANNEL or a signal pin's (2 … MAX_CHANNEL)
    polarity: np.ndarray  # int8, +1 rising, -1 falling (pin level, after any inversion is undone)
    sigma: np.ndarray  # 1-sigma uncertainty of each time, same base (0 for exact sources); float32 when
    # located (7 digits, far finer than any σ is known to: a long capture's edges are many), else float64
    unit_s: float | None  # seconds per time unit, nominal
    source: str  # what the edges came from, for messages

    def __post_init__(self) -> None:
        n = len(self.time)
        if not (len(self.channel) == len(self.polarity) == len(self.sigma) == n):
            raise ValueError("Edges arrays differ in length")
        if n > 1 and np.any(self.channel[1:] < self.channel[:-1]):
            order = np.argsort(self.channel, kind="stable")
            for name in ("time", "channel", "polarity", "sigma"):
                object.__setattr__(self, name, getattr(self, name)[order])

    def on(self, channel: int) -> Edges:
        """The edges of one channel (views of these arrays)."""
        # the bounds in the channels' own type: other values would make numpy convert the whole array
        lo, hi = np.searchsorted(self.channel, np.array([channel, channel + 1], dtype=self.channel.dtype))
        return Edges(self.time[lo:hi], self.channel[lo:hi], self.polarity[lo:hi], self.sigma[lo:hi],
                     self.unit_s, self.source)

    def time_order(self) -> np.ndarray:
        """The indices of the edges in time order across channels (simultaneous ones by channel)."""
        return np.lexsort((self.channel, self.time))
