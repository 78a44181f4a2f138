"""A clipped recording, refused by one rule: a PCM sample at or beyond the format's full scale
(:attr:`WavInfo.clips_at`; a float recording's never are) is clipped, and clipping ruins edge timing."""

from __future__ import annotations

import numpy as np

from pintime.capture.wav import WavInfo
from pintime.errors import PintimeError


def clipped_error(info: WavInfo, channel: int, frame: int) -> PintimeError:
    """The refusal of a recording whose ``channel`` clips at ``frame``."""
    return PintimeError(f"{info.path}: clipped signal at {frame / info.samplerate_hz:.6f} s on the "
                        f"{info.channel_name(channel)} channel: lower the recording level (clipping ruins "
                        "edge timing)")


def refuse_clipped(info: WavInfo, channel: int, x: np.ndarray, first_frame: int) -> None:
    """Raise :func:`clipped_error` where a sample of ``x`` (``channel``'s samples from ``first_frame``, as
    recorded) clips."""
    at = np.flatnonzero(np.abs(x) >= info.clips_at)
    if len(at):
        raise clipped_error(info, channel, first_frame + int(at[0]))
