"""WAV captures: open with checks, then read in overlapping blocks (memory bounded, any length).

A capture is a 192 kHz stereo recording: left = measurement pin, right = 1 s clock reference. Every check
fails with one line naming the file and what is wrong with it.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import soundfile as sf

from pintime.errors import PintimeError

SAMPLE_RATE_HZ = 192000  # the only rate the edge locators and their tests are built for
CHANNELS = 2  # left = measurement pin, right = clock reference
WAV_MAX_BYTES = (1 << 32) - (1 << 16)  # RIFF size field is 32 bits
_PCM_BITS = {"PCM_U8": 8, "PCM_S8": 8, "PCM_16": 16, "PCM_24": 24, "PCM_32": 32}
_PCM24_FRAME_BYTES = 3 * CHANNELS


@dataclass(frozen=True)
class WavInfo:
    """What the checks found out about a capture."""

    path: Path
    samplerate_hz: int
    frames: int
    subtype: str
    clip_level: float  # |sample| at or above this is clipped (largest positive code of the format)
    pcm24_offset: int | None = None  # a RIFF WAVE of 24-bit PCM: where its samples start (read directly)

    @property
    def duration_s(self) -> float:
        return self.frames / self.samplerate_hz


def open_wav(path: str | Path) -> WavInfo:
    """Check that ``path`` is a complete 192 kHz stereo recording and describe it.

    Raises
    ------
    PintimeError
        Not audio, wrong sample rate, not stereo, empty, or truncated (the data chunk is shorter than its
        header says: libsndfile would silently read only what is there).
    """
    path = Path(path)
    try:
        info = sf.info(os.fsencode(path))  # bytes: any file name, decodable or not
    except (sf.SoundFileError, RuntimeError) as err:
        raise PintimeError(f"{path}: not an audio file libsndfile can read ({err})") from None
    if info.samplerate != SAMPLE_RATE_HZ:
        raise PintimeError(f"{path}: sample rate is {info.samplerate} Hz, pintime needs {SAMPLE_RATE_HZ} Hz")
    if info.channels != CHANNELS:
        kind = "mono" if info.channels == 1 else f"{info.channels}-channel"
        raise PintimeError(f"{path}: {kind} recording; pintime needs stereo "
                           "(left = measurement pin, right = 1 s clock reference)")
    if info.frames == 0:
        raise PintimeError(f"{path}: recording has no samples")
    data = _riff_data(path)
    # a data chunk of unknown size (0xFFFFFFFF: a streamed recording) is never called truncated
    missing = 0 if data is None or data[1] == 0xFFFFFFFF else data[0] + data[1] - path.stat().st_size
    if missing > 0:
        raise PintimeError(f"{path}: truncated file: {missing} bytes of audio data missing at the end")
    bits = _PCM_BITS.get(info.subtype)
    clip_level = 1.0 if bits is None else 1.0 - 2.0 ** (1 - bits)
    pcm24_offset = data[0] if data is not None and info.subtype == "PCM_24" else None
    return WavInfo(path, info.samplerate, info.frames, info.subtype, clip_level, pcm24_offset)


def _riff_data(path: Path) -> tuple[int, int] | None:
    """Byte offset and declared length of a RIFF/WAVE file's ``data`` chunk (None: not RIFF, or none)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] != b"RIFF" or head[8:12] != b"WAVE":
            return None  # another container (RF64, W64, FLAC...): trust libsndfile
        pos = 12
        while pos + 8 <= size:
            f.seek(pos)
            chunk_id, chunk_len = struct.unpack("<4sI", f.read(8))
            if chunk_id == b"data":
                return pos + 8, chunk_len
            pos += 8 + chunk_len + (chunk_len & 1)  # chunks are padded to even length
    return None


@dataclass(frozen=True)
class Block:
    """Samples ``data[i]`` are frames ``first + i``; edges are *owned* by the block in [own_lo, own_hi)."""

    first: int
    data: np.ndarray  # float32 (frames, 2); 24-bit PCM is exact in float32
    own_lo: int
    own_hi: int


def iter_blocks(info: WavInfo, block_frames: int, pad_frames: int,
                start_frame: int = 0, stop_frame: int | None = None) -> Iterator[Block]:
    """Read frames [start_frame, stop_frame) in blocks of ``block_frames`` with ``pad_frames`` on each side.

    Each block carries the padding from its neighbours so that anything within ``pad_frames`` of its owned
    range is visible in it: an edge owned by one block is never cut by a block boundary. The file is read
    once, sequentially; memory use is ``block_frames + 2 pad_frames`` frames.
    """
    stop = info.frames if stop_frame is None else min(stop_frame, info.frames)
    offset = info.pcm24_offset
    with sf.SoundFile(os.fsencode(info.path)) if offset is None else _Pcm24File(info, offset) as f:
        read_lo = max(0, start_frame - pad_frames)
        f.seek(read_lo)
        buf = np.empty((0, CHANNELS), dtype=np.float32)
        buf_first = read_lo
        own_lo = start_frame
        read_hi = read_lo
        while own_lo < stop:
            own_hi = min(own_lo + block_frames, stop)
            want_hi = min(own_hi + pad_frames, info.frames)
            if want_hi > read_hi:
                kept = len(buf)
                buf = np.concatenate([buf, np.empty((want_hi - read_hi, CHANNELS), dtype=np.float32)])
                got = len(f.read(out=buf[kept:]))  # read in place: no copy of the new samples
                if got != want_hi - read_hi:
                    raise PintimeError(f"{info.path}: truncated file: audio ends at frame "
                                       f"{read_hi + got} of {info.frames}")
                if info.subtype not in _PCM_BITS:  # a float WAV can hold NaN/inf (or doubles beyond float32)
                    _refuse_non_finite(info, buf[kept:], read_hi)
                read_hi = want_hi
            yield Block(buf_first, buf, own_lo, own_hi)
            keep_from = max(buf_first, own_hi - pad_frames)
            buf = buf[keep_from - buf_first:]
            buf_first = keep_from
            own_lo = own_hi


class _Pcm24File:
    """The frames of a RIFF WAVE of 24-bit PCM (what pintime records and synthesizes) as float32, read like
    ``soundfile.SoundFile`` reads them, to the very same values, 8× faster."""

    def __init__(self, info: WavInfo, offset: int) -> None:
        self.file = open(info.path, "rb")
        self.offset = offset

    def __enter__(self) -> _Pcm24File:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def seek(self, frame: int) -> None:
        self.file.seek(self.offset + frame * _PCM24_FRAME_BYTES)

    def read(self, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (frames, channels) with the next frames; the part of it they filled."""
        raw = np.frombuffer(self.file.read(len(out) * _PCM24_FRAME_BYTES), dtype=np.uint8)
        got = len(raw) // _PCM24_FRAME_BYTES
        _pcm24_kernel(raw[:got * _PCM24_FRAME_BYTES], out[:got].reshape(-1))
        return out[:got]


@numba.njit(cache=True, nogil=True)
def _pcm24_kernel(raw, out):  # pragma: no cover (compiled)
    """Little-endian signed 24-bit codes ``raw`` (3 bytes each) to ``out`` as ``code / 2²³``: exact in
    float32, as libsndfile's normalized reading gives them."""
    for k in range(len(out)):
        code = np.int32(raw[3 * k]) | (np.int32(raw[3 * k + 1]) << 8) | (np.int32(raw[3 * k + 2]) << 16)
        if code >= 1 << 23:
            code -= 1 << 24
        out[k] = np.float32(code) * np.float32(2.0 ** -23)


def _refuse_non_finite(info: WavInfo, new: np.ndarray, first: int) -> None:
    """PintimeError naming the first frame of ``new`` (frame ``first`` onwards) holding NaN or inf."""
    finite = np.isfinite(new).all(axis=1)
    if not finite.all():
        raise PintimeError(f"{info.path}: sample at frame {first + int(np.argmin(finite))} "
                           "is not a finite number (damaged float recording)")
