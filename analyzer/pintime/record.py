"""Record a capture from a real sound card: both channels at 192 kHz, 24-bit, streamed to a WAV.

PortAudio (through the ``sounddevice`` package) calls :meth:`_Capture.callback` from its own thread with
each block of int32 samples (a 24-bit ADC's code sits in the top 24 bits). The callback only copies the
block into a bounded queue; the caller's thread writes the queue to the WAV (``PCM_24`` keeps exactly those
24 bits), so memory stays bounded however long the recording. Nothing is ever invented: a block PortAudio
reports as overflowed (input discarded before it) or one the queue had no room for is a *gap*, counted,
placed at its frame in the file, reported on stderr and written to the sidecar.

The sound library is a parameter (``backend``: anything with sounddevice's ``query_devices``,
``query_hostapis``, ``check_input_settings``, ``InputStream`` and ``PortAudioError``), so the whole path
runs without hardware in the tests, and ``pintime`` works on machines without PortAudio.
"""

from __future__ import annotations

import json
import queue
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import soundfile as sf
from tqdm import tqdm

from pintime.capture.gaps import Gap
from pintime.capture.wav import WAV_MAX_BYTES, iter_blocks, open_wav, soundfile_name
from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL
from pintime.errors import PintimeError
from pintime.files import refuse_existing, sidecar_path, version, write_text
from pintime.locate.detect.detect import edge_threshold
from pintime.signals import stop_signals_call

SAMPLE_RATE_HZ = 192000  # what pintime records at (the analyzer reads any standard rate)
CHANNELS = 2  # left = measurement pin, right = clock reference
BLOCK_FRAMES = 4096  # frames per PortAudio callback: 21 ms
MAX_QUEUED_S = 10.0  # the writer may fall this far behind (disk stall) before blocks are dropped: 15 MB
POLL_S = 0.2  # the writer wakes up this often (Ctrl-C, stalled device)
STALL_S = 5.0  # no block for this long: the device has stopped delivering
LIVE_GAP_WARNINGS = 10  # gaps announced as they happen; all of them are in the summary and the sidecar
REFERENCE_CHECK_S = 2.0  # the reference toggles every 0.5 s (FORMAT.md §1): 2 s without an edge = missing
INT32_FULL_SCALE = 2.0**31  # int32 sample / this = soundfile's float value of the same 24-bit code
CHECK_BLOCK_FRAMES = 1 << 20  # the written file is read back in blocks this long to check its levels
# Too quiet: measurement-channel peak-to-peak below 0.01 FS (−40 dBFS). The README's divider gives ≈0.1 FS
# steps. An edge's Cramér–Rao bound is ≈ T·σ/A (docs/design.md §10): with a line input's −90…−100 dBFS noise
# floor, A = 0.01 FS gives 16…5 ns, already a quarter of a 16 MHz cycle (62.5 ns) on a noisy card; and a
# level 20 dB under the wiring's design means a wrong input, gain or connection.
QUIET_PP_FS = 0.01
INPUT_OVERFLOW = "input overflow: PortAudio discarded input"  # the gap's cause in the sidecar

# called with the WAV being written and its frames so far; returns why the recording should end, or None
Watch = Callable[[sf.SoundFile, int], "str | None"]


def load_backend() -> ModuleType:
    """The ``sounddevice`` module, imported only when a recording is asked for."""
    try:
        import sounddevice
    except OSError:  # the package is there, the PortAudio library is not
        raise PintimeError(f"pintime record needs PortAudio: {portaudio_install(sys.platform)}") from None
    except ImportError:
        raise PintimeError("pintime record needs the sounddevice package: pip install sounddevice") from None
    return sounddevice


def portaudio_install(platform: str) -> str:
    """How to get the PortAudio library on ``platform`` (``sys.platform``): sounddevice's wheels bring
    their own on Windows and macOS, Linux takes the system's."""
    if platform.startswith("linux"):
        return ("install the system's libportaudio2 (Debian, Ubuntu: sudo apt-get install libportaudio2; "
                "Fedora: sudo dnf install portaudio)")
    return "sounddevice's wheel brings it: pip install --force-reinstall sounddevice"


@dataclass(frozen=True)
class Device:
    """A sound device that can record."""

    index: int
    name: str
    host_api: str
    max_input_channels: int
    default_samplerate_hz: float


def _device(backend: Any, info: dict) -> Device:
    return Device(int(info["index"]), str(info["name"]), str(backend.query_hostapis(info["hostapi"])["name"]),
                  int(info["max_input_channels"]), float(info["default_samplerate"]))


def input_devices(backend: Any) -> list[Device]:
    """Every device with at least one input channel."""
    return [_device(backend, backend.query_devices(i)) for i, info in enumerate(backend.query_devices())
            if info["max_input_channels"] > 0]


def find_device(backend: Any, spec: str | None) -> Device:
    """The input device ``spec`` names (its index, or words of its name and host API); None: the default."""
    key: int | str | None = int(spec) if spec is not None and spec.strip().isdigit() else spec
    try:
        return _device(backend, backend.query_devices(key, "input"))
    except (ValueError, backend.PortAudioError) as err:
        what = "no default input device" if spec is None else f"input device {spec!r}"
        first_line = str(err).splitlines()[0]
        raise PintimeError(f"{what}: {first_line} (see pintime record --list-devices)") from None


def supports_capture(backend: Any, device: Device) -> str | None:
    """None if ``device`` records 2 channels at 192 kHz as int32; else PortAudio's reason."""
    try:
        backend.check_input_settings(device=device.index, channels=CHANNELS, dtype="int32",
                                     samplerate=SAMPLE_RATE_HZ)
    except (ValueError, backend.PortAudioError) as err:
        return str(err).splitlines()[0]
    return None


def resampling_risk(device: Device) -> str | None:
    """Why ``device`` may be resampling (PortAudio then accepts 192 kHz without the card running at it)."""
    if device.host_api == "ALSA" and "(hw:" not in device.name:
        return "an ALSA plugin or sound server (PulseAudio, PipeWire) converts the card's own rate"
    if device.host_api in ("MME", "Windows DirectSound"):
        return "the Windows shared mixer converts every stream to its own rate"
    if device.host_api == "Core Audio" and device.default_samplerate_hz != SAMPLE_RATE_HZ:
        return (f"macOS converts the card's current {device.default_samplerate_hz:.0f} Hz (set the device to "
                f"{SAMPLE_RATE_HZ} Hz in Audio MIDI Setup first)")
    return None


class _Capture:
    """The PortAudio side: copies each block into a bounded queue and notes every gap."""

    def __init__(self, max_blocks: int):
        self.blocks: queue.Queue[np.ndarray] = queue.Queue(max_blocks)
        self.position = 0  # file frame of the next queued block's first frame
        self.gaps: list[Gap] = []

    def callback(self, indata: np.ndarray, frames: int, time_info: Any, status: Any) -> None:
        if status.input_overflow:
            self.gaps.append(Gap(self.position, None, INPUT_OVERFLOW))
        if status.input_underflow:
            self.gaps.append(Gap(self.position, None, "input underflow: PortAudio padded with silence"))
        try:
            self.blocks.put_nowait(indata.copy())
        except queue.Full:
            cause = "the writer fell behind: blocks dropped"
            last = self.gaps[-1] if self.gaps else None
            if last is not None and last.frame == self.position and last.cause == cause:  # the same gap grows
                self.gaps[-1] = Gap(self.position, (last.frames_lost or 0) + frames, cause)
            else:
                self.gaps.append(Gap(self.position, frames, cause))
            return
        self.position += frames


class _ReferenceCheck:
    """Collects the right channel's first REFERENCE_CHECK_S and tells whether it holds an edge."""

    def __init__(self) -> None:
        self.needed = round(REFERENCE_CHECK_S * SAMPLE_RATE_HZ)
        self.parts: list[np.ndarray] = []
        self.have = 0
        self.found: bool | None = None  # None: not checked yet (or the recording was too short)

    def feed(self, block: np.ndarray) -> bool:
        """Add a block; True once, when the check has just been made."""
        if self.found is not None:
            return False
        take = block[: self.needed - self.have, REFERENCE_CHANNEL].astype(np.float64) / INT32_FULL_SCALE
        self.parts.append(take)
        self.have += len(take)
        if self.have < self.needed:
            return False
        self.found = edge_threshold(np.concatenate(self.parts), None) is not None
        self.parts = []
        return True


@dataclass
class RecordResult:
    """What :func:`record` wrote and found."""

    wav_path: Path
    sidecar_path: Path
    device: Device
    frames: int
    interrupted: bool = False
    stopped_by: str | None = None  # the signal that stopped it: "SIGINT" (Ctrl-C), "SIGTERM", "SIGHUP"…
    stalled: bool = False
    gaps: list[Gap] = field(default_factory=list)
    reference_found: bool | None = None
    clipped_samples: int = 0
    peak_to_peak_fs: tuple[float, float] = (0.0, 0.0)
    finished: bool = False  # False in the sidecar while recording: a take killed outright says so
    write_error: str | None = None  # the WAV could not be written on (a full disk): it ends there
    ended_by: str | None = None  # what the ``watch`` of :func:`record` said when it ended the recording

    @property
    def seconds(self) -> float:
        return self.frames / SAMPLE_RATE_HZ

    @property
    def overflows(self) -> int:
        return sum(g.cause == INPUT_OVERFLOW for g in self.gaps)


def _check_request(path: Path, seconds: float, force: bool) -> int:
    """Validate the output path and duration; returns the number of frames to record."""
    if path.suffix.lower() != ".wav":
        raise PintimeError(f"{path}: the output must be a .wav file")
    refuse_existing([path, sidecar_path(path)], force)
    if not (np.isfinite(seconds) and seconds * SAMPLE_RATE_HZ >= 1):
        raise PintimeError(f"the duration must be at least one sample (5.2 µs), got {seconds} s")
    frames = round(seconds * SAMPLE_RATE_HZ)
    if frames * CHANNELS * 3 > WAV_MAX_BYTES:
        raise PintimeError(f"a {seconds:.0f} s recording exceeds the 4 GiB WAV limit")
    return frames


def record(path: str | Path, seconds: float, device: str | None = None, force: bool = False,
           backend: Any = None, progress: bool = False,
           warn: Callable[[str], None] = lambda msg: None, watch: Watch | None = None) -> RecordResult:
    """Record ``seconds`` of both channels of ``device`` into ``path`` (192 kHz, PCM_24) and its sidecar.

    Stops early, with a complete file, on Ctrl-C (SIGINT is handled, not raised) or when the device stops
    delivering (``stalled``). ``warn`` receives each warning (one line) as soon as it is known: a possibly
    resampling device, a gap, a missing clock reference (after REFERENCE_CHECK_S); clipping and a too quiet
    signal once the file is written. ``watch`` (``pintime measure``) is called in the writing thread after
    each block written and at each poll of an empty queue; a reason it returns ends the recording
    (``ended_by``) as ``seconds`` running out would.

    Raises
    ------
    PintimeError
        Bad path or duration, an existing output without ``force``, no PortAudio, an unknown device, or
        one that cannot record 2 channels at 192 kHz.
    """
    path = Path(path)
    n_total = _check_request(path, seconds, force)
    backend = load_backend() if backend is None else backend
    dev = _recording_device(backend, device, warn)
    capture = _Capture(max(1, round(MAX_QUEUED_S * SAMPLE_RATE_HZ / BLOCK_FRAMES)))
    stream = _open_stream(backend, dev, capture)
    started_utc = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out = _open_wav(path, stream)
    result = RecordResult(path, sidecar_path(path), dev, 0)

    def save() -> None:  # the sidecar, whole or not at all, first and again at every gap
        _write_sidecar(result, seconds, started_utc)

    try:
        save()  # before any audio: an earlier take's sidecar never stays beside this WAV
    except PintimeError:
        out.close()
        stream.close()
        raise
    failure = None
    with out, tqdm(total=n_total, unit="frame", unit_scale=True, disable=not progress, desc="record") as bar:
        try:
            _stream_to(out, stream, capture, result, n_total, bar, warn, save, watch)
        except backend.PortAudioError as err:
            failure = f"{dev.name}: {str(err).splitlines()[0]}"
    _finish(result, capture, n_total, failure, warn, save)
    return result


def _recording_device(backend: Any, device: str | None, warn: Callable[[str], None]) -> Device:
    """The input device ``device`` names, refused unless it records 2 channels at 192 kHz; ``warn`` told
    when it may be resampling."""
    dev = find_device(backend, device)
    reason = supports_capture(backend, dev)
    if reason is not None:
        raise PintimeError(f"{dev.name} ({dev.host_api}) cannot record 2 channels at {SAMPLE_RATE_HZ} Hz: "
                           f"{reason}; pick another device (pintime record --list-devices)")
    risk = resampling_risk(dev)
    if risk is not None:
        warn(f"{dev.name} ({dev.host_api}) may be resampling: {risk}; the edges then carry the converter's "
             "filter (and nothing above half the card's real rate): prefer the card's own device")
    return dev


def _open_wav(path: Path, stream: Any) -> sf.SoundFile:
    """``path`` opened for writing (192 kHz, 2 channels, PCM_24), its folder made; ``stream`` closed if it
    cannot be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return sf.SoundFile(soundfile_name(path), "w", samplerate=SAMPLE_RATE_HZ, channels=CHANNELS,
                            subtype="PCM_24", format="WAV")
    except (OSError, sf.LibsndfileError) as err:
        stream.close()
        raise PintimeError(f"{path}: cannot write ({err})") from None


def _finish(result: RecordResult, capture: _Capture, n_total: int, failure: str | None,
            warn: Callable[[str], None], save: Callable[[], None]) -> None:
    """The end of a recording: a device's ``failure`` before any audio is the error, after some a warning;
    the gaps inside the file kept; a write error raised once the sidecar says where the file ends."""
    path = result.wav_path
    if failure is not None:
        if result.frames == 0:
            path.unlink()
            raise PintimeError(failure)
        warn(failure)
        result.stalled = True  # the file holds what came before the error
    # a gap at the file's end counts only if the recording was cut short (later blocks were not wanted)
    result.gaps = [g for g in capture.gaps if g.frame < result.frames
                   or (g.frame == result.frames < n_total)]
    if result.write_error is not None:
        save()
        raise PintimeError(f"{path}: cannot write ({result.write_error}) after {result.seconds:.3f} s; the "
                           "file holds those, and its sidecar says so")
    if result.frames:
        _check_levels(result)
    result.finished = True
    save()


def _open_stream(backend: Any, device: Device, capture: _Capture) -> Any:
    """An input stream of ``device`` feeding ``capture``, not started yet."""
    try:
        stream = backend.InputStream(device=device.index, samplerate=SAMPLE_RATE_HZ, channels=CHANNELS,
                                     dtype="int32", blocksize=BLOCK_FRAMES, callback=capture.callback)
    except backend.PortAudioError as err:
        raise PintimeError(f"{device.name}: {str(err).splitlines()[0]}") from None
    if stream.samplerate != SAMPLE_RATE_HZ:
        stream.close()
        raise PintimeError(f"{device.name}: opened at {stream.samplerate} Hz, not {SAMPLE_RATE_HZ}")
    return stream


class _Writer:
    """Writes the queue's blocks into the WAV, at most ``n_total`` frames: counts them, checks the clock
    reference, announces each new gap and rewrites the sidecar (``save``) when one appears."""

    def __init__(self, out: sf.SoundFile, capture: _Capture, result: RecordResult, n_total: int, bar: tqdm,
                 warn: Callable[[str], None], save: Callable[[], None]):
        self.out, self.capture, self.result, self.n_total = out, capture, result, n_total
        self.bar, self.warn, self.save = bar, warn, save
        self.reference = _ReferenceCheck()
        self.reported = 0  # gaps of capture.gaps already announced

    def write(self, block: np.ndarray) -> None:
        """Write a block (a write error is noted in ``result.write_error``, the block not counted)."""
        block = block[: self.n_total - self.result.frames]
        try:
            self.out.write(block)
        except (sf.LibsndfileError, OSError) as err:
            self.result.write_error = str(err).splitlines()[0]
            return
        self.result.frames += len(block)
        self.bar.update(len(block))
        if self.reference.feed(block) and not self.reference.found:
            self.warn(f"no clock-reference edges on the right channel in the first {REFERENCE_CHECK_S:.0f} "
                      "s: check the D11 (PB5) wiring and that the firmware runs")
        self._new_gaps()

    def _new_gaps(self) -> None:
        """Announce the gaps that appeared since the last block (the first LIVE_GAP_WARNINGS); save them."""
        new_gaps = self.capture.gaps[self.reported:]  # a snapshot: the callback thread may append meanwhile
        self.reported += len(new_gaps)
        for i, gap in enumerate(new_gaps, start=self.reported - len(new_gaps)):
            if gap.frame < self.n_total and i < LIVE_GAP_WARNINGS:  # not the blocks arriving after the end
                self.warn(f"frames lost at {gap.frame / SAMPLE_RATE_HZ:.3f} s: {gap.cause}"
                          + ("; further gaps only in the summary" if i == LIVE_GAP_WARNINGS - 1 else ""))
        if new_gaps:
            self.result.gaps = [g for g in self.capture.gaps[:self.reported] if g.frame < self.n_total]
            self.save()


def _stream_to(out: sf.SoundFile, stream: Any, capture: _Capture, result: RecordResult, n_total: int,
               bar: tqdm, warn: Callable[[str], None], save: Callable[[], None], watch: Watch | None) -> None:
    """Run the stream until ``n_total`` frames are written, a stop signal, a stall or a write error; then
    drain the queue. ``save`` rewrites the sidecar (its gap list) whenever a gap appears. A stop signal
    only ends the loop (:mod:`pintime.signals`): a KeyboardInterrupt raised between taking a block
    from the queue and counting it would lose or miscount it, and a kill would leave no final sidecar."""
    writer = _Writer(out, capture, result, n_total, bar, warn, save)

    def stop(signal_name: str) -> None:  # the recording ends as after Ctrl-C, complete with its sidecar
        result.interrupted, result.stopped_by = True, signal_name

    started = time.monotonic()  # the stall clock runs from before the stream starts
    with stop_signals_call(stop):
        try:
            stream.start()
            _write_while_recording(writer, watch, started)
        finally:
            stream.close()
    _drain(writer)
    result.reference_found = writer.reference.found


def _write_while_recording(writer: _Writer, watch: Watch | None, last_block: float) -> None:
    """Write blocks as they come until ``n_total`` frames, a stop signal, a write error, a stall (no block
    for STALL_S since ``last_block``, then since the last one) or a reason from ``watch``."""
    result, blocks = writer.result, writer.capture.blocks
    while result.frames < writer.n_total and not result.interrupted and result.write_error is None:
        try:
            writer.write(blocks.get(timeout=POLL_S))
            last_block = time.monotonic()
        except queue.Empty:
            if time.monotonic() - last_block > STALL_S:
                result.stalled = True
                break
        result.ended_by = None if watch is None else watch(writer.out, result.frames)
        if result.ended_by is not None:
            break


def _drain(writer: _Writer) -> None:
    """Write the blocks recorded when the stream stopped, up to ``n_total`` frames or a write error."""
    result = writer.result
    while result.frames < writer.n_total and result.write_error is None:
        try:
            writer.write(writer.capture.blocks.get_nowait())
        except queue.Empty:
            break


def _check_levels(result: RecordResult) -> None:
    """Clipped samples and peak-to-peak per channel of the written file, by the analyzer's own criteria."""
    info = open_wav(result.wav_path)
    clipped = 0
    lo = np.full(CHANNELS, np.inf)
    hi = np.full(CHANNELS, -np.inf)
    for block in iter_blocks(info, CHECK_BLOCK_FRAMES, 0):
        clipped += int(np.count_nonzero(np.abs(block.data) >= info.clip_level))
        lo = np.minimum(lo, block.data.min(axis=0))
        hi = np.maximum(hi, block.data.max(axis=0))
    result.clipped_samples = clipped
    result.peak_to_peak_fs = (float(hi[0] - lo[0]), float(hi[1] - lo[1]))


def warnings_after(result: RecordResult) -> list[str]:
    """The warnings known only once the file is written (clipping, level, gaps in total)."""
    found = []
    if result.clipped_samples:
        found.append(f"{result.clipped_samples} samples clipped at full scale: lower the input gain "
                     "(the analyzer refuses edges on clipped samples)")
    pp = result.peak_to_peak_fs[MEASUREMENT_CHANNEL]
    if result.frames and pp < QUIET_PP_FS:
        pp_dbfs = 20 * np.log10(max(pp, 1e-12))
        found.append(f"measurement channel (left) too quiet: peak-to-peak {pp_dbfs:.1f} dBFS "
                     f"< {20 * np.log10(QUIET_PP_FS):.0f} dBFS: check the D22 (PA0) wiring, the input "
                     "(line in, not mic) and its gain")
    if result.gaps:
        lost = sum(g.frames_lost or 0 for g in result.gaps)
        unknown = sum(g.frames_lost is None for g in result.gaps)
        found.append(f"THIS RECORDING HAS {len(result.gaps)} GAP(S): {lost} frames dropped"
                     + (f" + {unknown} PortAudio gap(s) of unknown length" if unknown else "")
                     + f"; times across a gap are wrong (listed in {result.sidecar_path})")
    return found


def _write_sidecar(result: RecordResult, seconds_requested: float, started_utc: str) -> None:
    write_text(result.sidecar_path, json.dumps({
        "what": "pintime recording from a sound card (the analyzer reads its gaps)",
        "finished": result.finished,
        "write_error": result.write_error,
        "device": result.device.name,
        "host_api": result.device.host_api,
        "samplerate_hz": SAMPLE_RATE_HZ,
        "started_utc": started_utc,
        "seconds_requested": seconds_requested,
        "seconds": result.seconds,
        "frames": result.frames,
        "interrupted": result.interrupted,
        "stopped_by": result.stopped_by,
        "stalled": result.stalled,
        "ended_by": result.ended_by,
        "overflows": result.overflows,
        "gaps": [asdict(g) | {"time_s": g.frame / SAMPLE_RATE_HZ} for g in result.gaps],
        "reference_found": result.reference_found,
        "clipped_samples": result.clipped_samples,
        "peak_to_peak_fs": {"left": result.peak_to_peak_fs[0], "right": result.peak_to_peak_fs[1]},
        "pintime_version": version(),
    }, indent=2) + "\n")
