"""WAV captures: open with checks, then read in overlapping blocks (memory bounded, any length).

A capture is a recording at a standard sample rate (44.1 to 192 kHz) of the measurement pin on one channel
and, optionally, the 1 s clock reference on another: by default channel 0 (left) is the pin and channel 1
(right) the reference when there is one. PCM of 16, 24 or 32 bits or float samples; any number of
channels. Every check fails with one line naming the file and what is wrong with it.
"""

from __future__ import annotations

import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

import numpy as np
import soundfile as sf

from pintime.compiled import kernel
from pintime.errors import PintimeError

STANDARD_RATES_HZ = (44100, 48000, 88200, 96000, 176400, 192000)  # what the edge locator is checked at
DEFAULT_REFERENCE: Final = "default"  # channel 1 when the file has two channels or more, none when it is mono
Channels = tuple[int, int | None | Literal["default"]]  # (measurement pin, reference): WAV channel numbers
DEFAULT_CHANNELS: Channels = (0, DEFAULT_REFERENCE)
WAV_MAX_BYTES = (1 << 32) - (1 << 16)  # RIFF size field is 32 bits
_PCM_BITS = {"PCM_16": 16, "PCM_24": 24, "PCM_32": 32}
_FLOAT_SUBTYPES = ("FLOAT", "DOUBLE")
_EIGHT_BIT_SUBTYPES = ("PCM_U8", "PCM_S8", "ULAW", "ALAW")
_WAVE_FORMAT_PCM, _WAVE_FORMAT_EXTENSIBLE = 1, 0xFFFE
# what a recording whose header was never finished (its recorder killed) needs
_REWRITE = "rewrite its header, e.g. sox --ignore-length in.wav out.wav"
_KSDATAFORMAT_PCM = bytes.fromhex("0100000000001000800000aa00389b71")  # the SubFormat GUID of integer PCM


@dataclass(frozen=True)
class WavInfo:
    """What the checks found out about a capture, and which of its channels are the pin and the reference.

    A block's samples (:class:`Block`) hold the channels :attr:`columns` names, in that order: column 0 is
    the measurement pin, column 1 (if any) the clock reference.
    """

    path: Path
    samplerate_hz: int
    frames: int
    subtype: str
    clip_level: float  # |sample| at or above this is clipped (largest positive code of the format)
    channels: int  # in the file
    measurement_channel: int
    reference_channel: int | None  # None: no reference recorded (or none to be used)
    pcm_layout: tuple[int, int] | None = None  # plain 16/24-bit PCM: (data offset, bytes per sample)

    @property
    def clips_at(self) -> float:
        """|sample| at or above which a sample is clipped: the format's largest code; float samples hold
        any level (above 1.0 too), so none."""
        return np.inf if self.subtype in _FLOAT_SUBTYPES else self.clip_level

    @property
    def duration_s(self) -> float:
        return self.frames / self.samplerate_hz

    @property
    def columns(self) -> tuple[int, ...]:
        """The file's channels a block holds: the measurement pin, then the reference if there is one."""
        ref = self.reference_channel
        return (self.measurement_channel,) if ref is None else (self.measurement_channel, ref)

    def channel_name(self, column: int) -> str:
        """How messages name the file channel behind block column ``column``: left/right of a stereo file,
        mono, or its 0-based number."""
        channel = self.columns[column]
        if self.channels == 2:
            return ("left", "right")[channel]
        return "mono" if self.channels == 1 else f"#{channel}"


def soundfile_name(path: str | Path) -> str | bytes:
    """``path`` as libsndfile is given it: bytes on POSIX, where they open any file name, decodable or
    not; text on Windows, which soundfile opens by its wide-character name (bytes would be read in the
    ANSI code page there, and a name outside it not found)."""
    return str(path) if sys.platform == "win32" else os.fsencode(path)


def open_wav(path: str | Path, measurement_channel: int = 0,
             reference_channel: int | None | Literal["default"] = DEFAULT_REFERENCE) -> WavInfo:
    """Check that ``path`` is a complete recording pintime can time edges in and describe it.

    ``measurement_channel`` and ``reference_channel`` are 0-based channel numbers of the file (the
    reference None: none); :data:`DEFAULT_REFERENCE` is channel 1 of a file with two channels or more.

    Raises
    ------
    PintimeError
        Not audio, a sample rate that is not a standard one, 8-bit or compressed samples, no such channel,
        empty, or truncated (the data chunk is shorter than its header says: libsndfile would silently
        read only what is there).
    """
    path = Path(path)
    info, reference = _format(path, measurement_channel, reference_channel)
    chunks = _riff_chunks(path)
    data = chunks.get(b"data")
    if info.frames == 0:
        follow = 0 if data is None else path.stat().st_size - data[0]
        raise PintimeError(f"{path}: recording has no samples" + (
            f" by its header, yet {follow} bytes of data follow it: a recording never closed (a recorder "
            f"killed?); {_REWRITE}"
            if follow > 0 else ""))
    # a data chunk of unknown size (0xFFFFFFFF: a streamed recording) is never called truncated
    missing = 0 if data is None or data[1] == 0xFFFFFFFF else data[0] + data[1] - path.stat().st_size
    if missing > 0:
        raise PintimeError(f"{path}: truncated file: {missing} bytes of audio data missing at the end; if "
                           f"its recorder was killed, its header was never finished: {_REWRITE}")
    unread = 0 if data is None or data[1] == 0xFFFFFFFF else _unread_after_data(path, data)
    if data is not None and unread > 0:
        more_s = unread / (data[1] / info.frames) / info.samplerate
        raise PintimeError(f"{path}: its header declares {info.frames / info.samplerate:.3f} s of audio, yet "
                           f"{unread} bytes that are no RIFF chunk follow its data ({more_s:.3f} s more "
                           f"audio?): a header left stale, by a recorder killed or a file appended to; "
                           f"{_REWRITE}")
    return _described(path, info, chunks, measurement_channel, reference, info.frames)


def open_written(path: str | Path, frames: int, measurement_channel: int = 0,
                 reference_channel: int | None | Literal["default"] = DEFAULT_REFERENCE) -> WavInfo:
    """The first ``frames`` frames of a WAV its recorder is still writing and has flushed that far
    (:func:`pintime.record.record`), described as :func:`open_wav` describes a whole file: the same checks
    of its format and channels, none of its header against the file's length (the writer moves both)."""
    path = Path(path)
    info, reference = _format(path, measurement_channel, reference_channel)
    return _described(path, info, _riff_chunks(path), measurement_channel, reference, frames)


def _format(path: Path, measurement_channel: int, reference_channel: int | None | Literal["default"]
            ) -> tuple[sf._SoundFileInfo, int | None]:
    """libsndfile's description of ``path``, refused unless pintime can time edges in its samples, and the
    reference channel (the default resolved), both channels checked."""
    try:
        info = sf.info(soundfile_name(path))
    except (sf.SoundFileError, RuntimeError) as err:
        raise PintimeError(f"{path}: not an audio file libsndfile can read ({err})") from None
    if info.samplerate not in STANDARD_RATES_HZ:
        raise PintimeError(f"{path}: sample rate is {info.samplerate} Hz; pintime reads the standard rates "
                           f"{', '.join(str(r) for r in STANDARD_RATES_HZ)} Hz")
    if info.subtype in _EIGHT_BIT_SUBTYPES:
        raise PintimeError(f"{path}: 8-bit samples ({info.subtype}) are too coarse to time edges: "
                           "record 16-bit or more")
    if info.subtype not in _PCM_BITS and info.subtype not in _FLOAT_SUBTYPES:
        raise PintimeError(f"{path}: {info.subtype} samples; pintime needs PCM (16, 24 or 32 bit) or float")
    if reference_channel == DEFAULT_REFERENCE:
        reference_channel = 1 if info.channels >= 2 else None
    _check_channels(path, info.channels, measurement_channel, reference_channel)
    return info, reference_channel


def _described(path: Path, info: sf._SoundFileInfo, chunks: dict[bytes, tuple[int, int]],
               measurement_channel: int, reference_channel: int | None, frames: int) -> WavInfo:
    """The :class:`WavInfo` of ``frames`` frames of a checked file."""
    bits = _PCM_BITS.get(info.subtype)
    clip_level = 1.0 if bits is None else 1.0 - 2.0 ** (1 - bits)
    layout = _plain_pcm(path, chunks, info.channels, bits)
    return WavInfo(path, info.samplerate, frames, info.subtype, clip_level, info.channels,
                   measurement_channel, reference_channel, layout)


def _check_channels(path: Path, channels: int, measurement: int, reference: int | None) -> None:
    """PintimeError unless both channels exist in a file of ``channels`` and differ."""
    for role, channel in (("measurement pin", measurement), ("clock reference", reference)):
        if channel is not None and not 0 <= channel < channels:
            raise PintimeError(f"{path}: no channel {channel} for the {role}: the file has {channels} "
                               f"channel{'s' if channels > 1 else ''} (numbered from 0)")
    if measurement == reference:
        raise PintimeError(f"{path}: channel {measurement} cannot be both the measurement pin and the "
                           "clock reference")


def _riff_chunks(path: Path) -> dict[bytes, tuple[int, int]]:
    """Byte offset and declared length of each chunk of a RIFF or RF64 WAVE file (none: another container).

    In an RF64 file the data chunk's 32-bit length is a placeholder; its real length is the ``ds64``
    chunk's 64-bit data size, which is what is returned for it."""
    size = path.stat().st_size
    chunks: dict[bytes, tuple[int, int]] = {}
    data_size_64 = None
    with open(path, "rb") as f:
        head = f.read(12)
        if len(head) < 12 or head[:4] not in (b"RIFF", b"RF64") or head[8:12] != b"WAVE":
            return chunks  # another container (W64, FLAC...): trust libsndfile
        pos = 12
        while pos + 8 <= size:
            f.seek(pos)
            chunk_id, chunk_len = struct.unpack("<4sI", f.read(8))
            if chunk_id == b"ds64" and chunk_len >= 16:
                data_size_64 = struct.unpack("<QQ", f.read(16))[1]  # RIFF size, then data size
            if chunk_id == b"data" and head[:4] == b"RF64" and data_size_64 is not None:
                chunk_len = data_size_64
            chunks.setdefault(chunk_id, (pos + 8, chunk_len))
            if chunk_id == b"data":
                break
            pos += 8 + chunk_len + (chunk_len & 1)  # chunks are padded to even length
    return chunks


def _unread_after_data(path: Path, data: tuple[int, int]) -> int:
    """How many bytes after the ``data`` chunk (offset, length) are no RIFF chunk (a 4-character ASCII id
    and a length within the file): 0 when what follows is chunks (LIST, id3…) or nothing, else the count
    from the first that is not: audio a stale header leaves out."""
    size = path.stat().st_size
    pos = data[0] + data[1] + (data[1] & 1)
    with open(path, "rb") as f:
        while pos + 8 <= size:
            f.seek(pos)
            chunk_id, chunk_len = struct.unpack("<4sI", f.read(8))
            if not all(0x20 <= c < 0x7F for c in chunk_id) or pos + 8 + chunk_len > size:
                return size - pos
            pos += 8 + chunk_len + (chunk_len & 1)
    rest = size - pos
    return rest if rest > 1 else 0  # a last pad byte, present or not, is none


def _plain_pcm(path: Path, chunks: dict[bytes, tuple[int, int]], channels: int,
               bits: int | None) -> tuple[int, int] | None:
    """(data offset, bytes per sample) when the file's samples are interleaved little-endian 16- or 24-bit
    integers filling their containers (:class:`_PcmFile` reads them); None for anything else (libsndfile)."""
    if bits not in (16, 24) or b"fmt " not in chunks or b"data" not in chunks:
        return None
    offset, length = chunks[b"fmt "]
    with open(path, "rb") as f:
        f.seek(offset)
        fmt = f.read(min(length, 40))
    if len(fmt) < 16:
        return None
    tag, n_channels, _, _, block_align, container_bits = struct.unpack("<HHIIHH", fmt[:16])
    if tag == _WAVE_FORMAT_EXTENSIBLE:
        if len(fmt) < 40:
            return None
        valid_bits = struct.unpack("<H", fmt[18:20])[0]
        if fmt[24:40] != _KSDATAFORMAT_PCM or valid_bits != container_bits:
            return None
    elif tag != _WAVE_FORMAT_PCM:
        return None
    sample_bytes = bits // 8
    if container_bits != bits or n_channels != channels or block_align != sample_bytes * channels:
        return None
    return chunks[b"data"][0], sample_bytes


@dataclass(frozen=True)
class Block:
    """Samples ``data[i]`` are frames ``first + i``; edges are *owned* by the block in [own_lo, own_hi)."""

    first: int
    data: np.ndarray  # float32 (frames, len(WavInfo.columns)); 24-bit PCM is exact in float32
    own_lo: int
    own_hi: int


def iter_blocks(info: WavInfo, block_frames: int, pad_frames: int,
                start_frame: int = 0, stop_frame: int | None = None) -> Iterator[Block]:
    """Read frames [start_frame, stop_frame) in blocks of ``block_frames`` with ``pad_frames`` on each side.

    Each block carries the padding from its neighbours so that anything within ``pad_frames`` of its owned
    range is visible in it: an edge owned by one block is never cut by a block boundary. The file is read
    once, sequentially; memory use is ``block_frames + 2 pad_frames`` frames of the channels
    ``info.columns`` names (the others are skipped).
    """
    stop = info.frames if stop_frame is None else min(stop_frame, info.frames)
    width = len(info.columns)
    with _PcmFile(info) if info.pcm_layout is not None else _SoundFile(info) as f:
        read_lo = max(0, start_frame - pad_frames)
        f.seek(read_lo)
        buf = np.empty((0, width), dtype=np.float32)
        buf_first = read_lo
        own_lo = start_frame
        read_hi = read_lo
        while own_lo < stop:
            own_hi = min(own_lo + block_frames, stop)
            want_hi = min(own_hi + pad_frames, info.frames)
            if want_hi > read_hi:
                kept = len(buf)
                buf = np.concatenate([buf, np.empty((want_hi - read_hi, width), dtype=np.float32)])
                got = len(f.read(out=buf[kept:]))
                if got != want_hi - read_hi:
                    raise PintimeError(f"{info.path}: truncated file: audio ends at frame "
                                       f"{read_hi + got} of {info.frames}")
                if info.subtype in _FLOAT_SUBTYPES:  # can hold NaN/inf (or doubles beyond float32)
                    _refuse_non_finite(info, buf[kept:], read_hi)
                read_hi = want_hi
            yield Block(buf_first, buf, own_lo, own_hi)
            keep_from = max(buf_first, own_hi - pad_frames)
            buf = buf[keep_from - buf_first:]
            buf_first = keep_from
            own_lo = own_hi


class _SoundFile:
    """The frames of any file libsndfile reads, as float32, of the channels ``info.columns`` names."""

    def __init__(self, info: WavInfo) -> None:
        self.file = sf.SoundFile(soundfile_name(info.path))
        self.columns = list(info.columns)
        # all of the file's channels in their order (stereo, mono): read in place, no copy of the samples
        self.in_place = self.columns == list(range(info.channels))

    def __enter__(self) -> _SoundFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def seek(self, frame: int) -> None:
        self.file.seek(frame)

    def read(self, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (frames, columns) with the next frames; the part of it they filled."""
        if self.in_place:
            return self.file.read(out=out)
        frames = self.file.read(len(out), dtype="float32", always_2d=True)
        out[:len(frames)] = frames[:, self.columns]
        return out[:len(frames)]


class _PcmFile:
    """The frames of a RIFF WAVE of plain 16- or 24-bit PCM (what pintime records and synthesizes, what
    most cards record) as float32, read like ``soundfile.SoundFile`` reads them, to the very same values,
    several times faster; only the channels ``info.columns`` names are converted."""

    def __init__(self, info: WavInfo) -> None:
        assert info.pcm_layout is not None
        self.file = open(info.path, "rb")
        self.offset, self.sample_bytes = info.pcm_layout
        self.frame_bytes = self.sample_bytes * info.channels
        self.columns = np.array(info.columns, dtype=np.int64)
        self.raw = np.empty(0, dtype=np.uint8)  # the file's bytes of one read, reused from read to read

    def __enter__(self) -> _PcmFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def seek(self, frame: int) -> None:
        self.file.seek(self.offset + frame * self.frame_bytes)

    def read(self, out: np.ndarray) -> np.ndarray:
        """Fill ``out`` (frames, columns) with the next frames; the part of it they filled."""
        want = len(out) * self.frame_bytes
        if len(self.raw) < want:
            self.raw = np.empty(want, dtype=np.uint8)
        got = self.file.readinto(self.raw[:want].data) // self.frame_bytes  # no new bytes per read
        _pcm_kernel(self.raw, self.frame_bytes, self.sample_bytes, self.columns, out[:got])
        return out[:got]


@kernel
def _pcm_kernel(raw, frame_bytes, sample_bytes, columns, out):  # pragma: no cover (compiled)
    """Little-endian signed codes of ``sample_bytes`` bytes (2 or 3) of the channels ``columns`` of each
    frame of ``raw`` to ``out`` as ``code / 2^(bits−1)``: exact in float32, as libsndfile's normalized
    reading gives them."""
    bits = 8 * sample_bytes
    scale = np.float32(2.0 ** (1 - bits))
    for f in range(out.shape[0]):
        for j in range(len(columns)):
            b = f * frame_bytes + sample_bytes * columns[j]
            code = np.int32(raw[b]) | (np.int32(raw[b + 1]) << 8)
            if sample_bytes == 3:
                code |= np.int32(raw[b + 2]) << 16
            if code >= 1 << (bits - 1):
                code -= 1 << bits
            out[f, j] = np.float32(code) * scale


def _refuse_non_finite(info: WavInfo, new: np.ndarray, first: int) -> None:
    """PintimeError naming the first frame of ``new`` (frame ``first`` onwards) holding NaN or inf."""
    finite = np.isfinite(new).all(axis=1)
    if not finite.all():
        raise PintimeError(f"{info.path}: sample at frame {first + int(np.argmin(finite))} "
                           "is not a finite number (damaged float recording)")
