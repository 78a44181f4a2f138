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


def nearest_index(sorted_t: np.ndarray, t: np.ndarray) -> np.ndarray:
    """For each of ``t``, the index of the nearest of ``sorted_t`` (at least two, ascending; a tie goes to
    the later one)."""
    k = np.clip(np.searchsorted(sorted_t, t), 1, len(sorted_t) - 1)
    return np.where(np.abs(t - sorted_t[k - 1]) < np.abs(t - sorted_t[k]), k - 1, k)


REFERENCE_HALF_PERIOD_S = (0.45, 0.55)  # the 1 s reference's half period, s of the card's clock (any ppm)
REGULAR_FRACTION = 0.9  # of its spacings a whole number of half periods to within 1 %: lost audio is rare


def is_reference(time_s: np.ndarray) -> bool:
    """Whether one channel's edge times (capture seconds) are the 1 s clock reference: three or more, their
    typical spacing half a second, and nearly all of them whole half periods apart (another signal on that
    channel, e.g. a resistor ladder's second pair of pins, would show thousands of "jumps")."""
    if len(time_s) < 3:
        return False
    spacing = np.diff(time_s)
    half_s = float(np.median(spacing))
    if not REFERENCE_HALF_PERIOD_S[0] <= half_s <= REFERENCE_HALF_PERIOD_S[1]:
        return False
    whole = np.maximum(np.rint(spacing / half_s), 1.0)
    return float(np.mean(np.abs(spacing / half_s - whole) < 0.01)) >= REGULAR_FRACTION
