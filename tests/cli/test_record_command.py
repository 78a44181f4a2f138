"""``pintime record`` without hardware: a fake PortAudio plays a synthesized capture into the recorder.

The fake calls the stream callback the way PortAudio does (int32 blocks, the 24-bit code in the top bits,
status flags), but synchronously inside ``start()``, so what reaches the queue is deterministic.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest
import soundfile as sf
from pintime import cli
from pintime import record as rec
from pintime.errors import PintimeError
from support import EXAMPLE_WAV as SOURCE_WAV
from support import FakeBackend

FS = 192000
SECONDS = 4.0  # the RUN and CAL frames and the first Table 1 frames; 8 reference edges
FULL_SCALE = 0x7FFFFF00  # largest positive 24-bit code, left-justified in int32


@pytest.fixture(scope="module")
def source() -> np.ndarray:
    """The first 4.5 s of a synthesized capture as PortAudio delivers it (int32, 24 bits left-justified)."""
    samples, rate = sf.read(SOURCE_WAV, frames=int(4.5 * FS), dtype="int32")
    assert rate == FS and not np.any(samples & 0xFF)
    return samples


def record(tmp_path, samples, name="rec.wav", **kwargs):
    warnings: list[str] = []
    backend = FakeBackend(samples, **kwargs)
    result = rec.record(tmp_path / name, SECONDS, backend=backend, warn=warnings.append)
    assert backend.closed
    return result, warnings + rec.warnings_after(result)


def test_recording_is_the_stream_bit_for_bit_and_decodes_like_it(tmp_path, source, capsys):
    result, warnings = record(tmp_path, source)
    assert warnings == []
    n = round(SECONDS * FS)
    info = sf.info(result.wav_path)
    assert (info.samplerate, info.channels, info.subtype, info.frames) == (FS, 2, "PCM_24", n)
    recorded, _ = sf.read(result.wav_path, dtype="int32")
    np.testing.assert_array_equal(recorded, source[:n])
    sidecar = json.loads(result.sidecar_path.read_text())
    assert sidecar["device"] == "HDA Intel PCH: ALC892 Analog (hw:0,0)" and sidecar["host_api"] == "ALSA"
    assert (sidecar["samplerate_hz"], sidecar["frames"], sidecar["seconds"]) == (FS, n, n / FS)
    assert sidecar["overflows"] == 0 and sidecar["gaps"] == []
    assert sidecar["reference_found"] is True and sidecar["clipped_samples"] == 0

    original = tmp_path / "source.wav"
    sf.write(original, source[:n], FS, subtype="PCM_24")
    decoded = []
    for wav in (original, result.wav_path):
        assert cli.main(["analyze", str(wav), "--json", str(wav.with_suffix(".analysis.json"))]) == 0
        decoded.append(json.loads(wav.with_suffix(".analysis.json").read_text()))
    assert decoded[0]["frames"]["decoded"] >= 10 and decoded[0]["frames"]["rejected"] == 0
    for key in ("run", "clock", "frames", "table1"):
        assert decoded[1][key] == decoded[0][key]


def test_overflow_is_placed_counted_and_reported(tmp_path, source, monkeypatch, capsys):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source, overflow_blocks=[5]))
    out = tmp_path / "over.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", str(SECONDS)]) == 1
    err = capsys.readouterr().err
    assert "frames lost at 0.107 s: input overflow: PortAudio discarded input" in err
    assert "THIS RECORDING HAS 1 GAP(S)" in err
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["overflows"] == 1
    assert sidecar["gaps"] == [{"frame": 5 * rec.BLOCK_FRAMES, "frames_lost": None,
                                "cause": "input overflow: PortAudio discarded input",
                                "time_s": 5 * rec.BLOCK_FRAMES / FS}]


def test_blocks_the_writer_has_no_room_for_are_counted_exactly(tmp_path, source, monkeypatch):
    monkeypatch.setattr(rec, "MAX_QUEUED_S", 3 * rec.BLOCK_FRAMES / FS)  # room for 3 blocks
    monkeypatch.setattr(rec, "STALL_S", 0.3)
    result, warnings = record(tmp_path, source)  # the fake delivers every block before any is written
    assert result.stalled and result.frames == 3 * rec.BLOCK_FRAMES
    n_blocks = -(-len(source) // rec.BLOCK_FRAMES)
    assert n_blocks > 4 and result.gaps == [  # consecutive dropped blocks are one gap
        rec.Gap(result.frames, len(source) - result.frames, "the writer fell behind: blocks dropped")]
    assert [w for w in warnings if w.startswith("frames lost at 0.064 s: the writer fell behind")]
    assert [w for w in warnings if w.startswith(f"THIS RECORDING HAS 1 GAP(S): {len(source) - result.frames} "
                                                "frames dropped")]


def test_clipped_stream_warns(tmp_path, source):
    clipped = source.copy()
    clipped[1000:1010, 0] = FULL_SCALE
    clipped[2000:2003, 1] = -FULL_SCALE - 0x100  # the most negative code
    result, warnings = record(tmp_path, clipped)
    assert result.clipped_samples == 13
    assert [w for w in warnings if "13 samples clipped at full scale" in w]


def test_quiet_measurement_and_missing_reference_warn(tmp_path, source):
    rng = np.random.default_rng(0)
    quiet = source.copy()
    quiet[:, 0] = (source[:, 0] >> 16) << 8  # 48 dB down: the left channel's ≈1 FS becomes ≈0.004 FS
    quiet[:, 1] = rng.integers(-200, 200, len(source)) << 8  # no reference, only noise
    result, warnings = record(tmp_path, quiet)
    assert result.reference_found is False
    assert [w for w in warnings if "no clock-reference edges on the right channel in the first 2 s" in w]
    assert [w for w in warnings if "measurement channel (left) too quiet: peak-to-peak -4" in w]


def test_device_without_192khz_is_refused(tmp_path, source):
    with pytest.raises(PintimeError, match=r"USB Audio CODEC \(hw:1,0\) \(ALSA\) cannot record 2 channels at "
                       r"192000 Hz: Error opening InputStream: Invalid sample rate"):
        rec.record(tmp_path / "r.wav", 1.0, device="usb", backend=FakeBackend(source))
    assert not (tmp_path / "r.wav").exists()


def test_sound_server_device_warns_that_it_may_resample(tmp_path, source):
    warnings: list[str] = []
    rec.record(tmp_path / "r.wav", 0.1, device="3", backend=FakeBackend(source), warn=warnings.append)
    assert len(warnings) == 1 and warnings[0].startswith("pulse (ALSA) may be resampling")


def test_busy_device_is_a_clear_error_and_leaves_no_file(tmp_path, source):
    backend = FakeBackend(source)
    backend.busy = True
    with pytest.raises(PintimeError, match=r"\(hw:0,0\): Error opening InputStream: Device unavailable"):
        rec.record(tmp_path / "r.wav", 1.0, backend=backend)
    assert list(tmp_path.iterdir()) == []


def test_unknown_device(tmp_path, source):
    with pytest.raises(PintimeError, match="input device 'claro': No input device matching 'claro'"):
        rec.record(tmp_path / "r.wav", 1.0, device="claro", backend=FakeBackend(source))


def test_existing_output_needs_force(tmp_path, source, monkeypatch, capsys):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source))
    out = tmp_path / "r.wav"
    out.write_bytes(b"precious")
    assert cli.main(["record", "-o", str(out), "--seconds", "0.1"]) == 2
    assert "r.wav: exists; refusing to overwrite it (--force to replace it)" in capsys.readouterr().err
    assert out.read_bytes() == b"precious"
    assert cli.main(["record", "-o", str(out), "--seconds", "0.1", "--force"]) == 0
    assert sf.info(out).frames == round(0.1 * FS)


@pytest.fixture
def sigint(request):
    """SIGINT set to the given handler for the test (whatever the test run inherited: ``nohup make test &``
    starts it ignored), then restored."""
    previous = signal.signal(signal.SIGINT, request.param)
    yield request.param
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("sigint", [signal.default_int_handler], indirect=True, ids=["default"])
def test_ctrl_c_leaves_a_complete_file(tmp_path, source, monkeypatch, capsys, sigint):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source, interrupt_after_block=9))
    out = tmp_path / "r.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", "100"]) == 0
    assert "(stopped by Ctrl-C)" in capsys.readouterr().out
    recorded, _ = sf.read(out, dtype="int32")
    np.testing.assert_array_equal(recorded, source[:10 * rec.BLOCK_FRAMES])
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["interrupted"] is True and sidecar["frames"] == 10 * rec.BLOCK_FRAMES
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored


@pytest.mark.parametrize("sigint", [signal.SIG_IGN], indirect=True, ids=["ignored"])
def test_an_ignored_sigint_stays_ignored(tmp_path, source, monkeypatch, capsys, sigint):
    """Started with SIGINT ignored (a background job), record does not stop on one: here the fake stream
    stops delivering after the SIGINT, so the recording ends as stalled, not as interrupted."""
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source, interrupt_after_block=9))
    monkeypatch.setattr(rec, "STALL_S", 0.5)
    out = tmp_path / "r.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", "100"]) == 1  # a stall is reported
    assert "(stopped by Ctrl-C)" not in capsys.readouterr().out
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert (sidecar["interrupted"], sidecar["stalled"]) == (False, True)
    assert sidecar["frames"] == 10 * rec.BLOCK_FRAMES
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_list_devices(source, monkeypatch, capsys):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source))
    assert cli.main(["record", "--list-devices"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "  0  HDA Intel PCH: ALC892 Analog (hw:0,0)  [ALSA]  2 in, default 44100 Hz, 192 kHz stereo: yes",
        "  2  USB Audio CODEC (hw:1,0)  [ALSA]  2 in, default 48000 Hz, 192 kHz stereo: no",
        "  3  pulse  [ALSA]  32 in, default 44100 Hz, 192 kHz stereo: yes",
    ]


@pytest.mark.parametrize("argv, message", [
    (["-o", "y.wav", "--seconds", "1", "--force"], "y.json: is a folder"),
    (["--seconds", "1"], "give -o CAPTURE.wav and --seconds N"),
    (["-o", "x.wav", "--seconds", "ten"], "--seconds must be a number, got 'ten'"),
    (["-o", "x.wav", "--seconds", "0"], "the duration must be at least one sample"),
    (["-o", "x.flac", "--seconds", "1"], "x.flac: the output must be a .wav file"),
])
def test_bad_arguments(tmp_path, source, monkeypatch, capsys, argv, message):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "y.json").mkdir()
    assert cli.main(["record", *argv]) == 2
    assert message in capsys.readouterr().err


def test_many_gaps_are_announced_ten_times_and_all_counted(tmp_path, source):
    result, warnings = record(tmp_path, source, overflow_blocks=range(1, 41, 2))
    assert result.overflows == 20
    live = [w for w in warnings if w.startswith("frames lost at")]
    assert len(live) == rec.LIVE_GAP_WARNINGS and live[-1].endswith("further gaps only in the summary")
    summary = "THIS RECORDING HAS 20 GAP(S): 0 frames dropped + 20 PortAudio gap(s) of unknown length"
    assert [w for w in warnings if w.startswith(summary)]


def test_real_portaudio_through_an_alsa_file_device(tmp_path, source):
    """The real sounddevice and PortAudio, reading the source from an ALSA ``file`` plugin (no sound card)."""
    pytest.importorskip("sounddevice", exc_type=OSError)
    raw = tmp_path / "in.raw"
    source.astype("<i4").tofile(raw)
    device = ('type file; slave.pcm "null"; file "/dev/null"; infile "' + str(raw) + '"; format "raw"; '
              'hint { show on description "pintime test input" }')
    (tmp_path / ".asoundrc").write_text("pcm.pintimetest { " + device + " }\n")
    env = dict(os.environ, HOME=str(tmp_path))
    pintime = [sys.executable, "-m", "pintime.cli", "record"]
    listed = subprocess.run([*pintime, "--list-devices"], env=env, capture_output=True, text=True)
    if "pintimetest" not in listed.stdout:
        pytest.skip("PortAudio has no ALSA host API here")
    assert "pintimetest  [ALSA]" in listed.stdout and "192 kHz stereo: yes" in listed.stdout
    out = tmp_path / "real.wav"
    done = subprocess.run([*pintime, "-o", str(out), "--seconds", "1", "--device", "pintimetest"], env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "pintimetest (ALSA) may be resampling" in done.stderr  # a plugin, not a hw: device
    recorded, rate = sf.read(out, dtype="int32")
    assert rate == FS
    np.testing.assert_array_equal(recorded, source[:FS])


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGHUP])
def test_a_kill_or_hangup_leaves_a_complete_file_and_sidecar(tmp_path, source, monkeypatch, capsys,
                                                              stop_signal, request):
    if signal.getsignal(stop_signal) is signal.SIG_IGN:  # the suite run under nohup: record would leave it so
        signal.signal(stop_signal, signal.SIG_DFL)
        request.addfinalizer(lambda: signal.signal(stop_signal, signal.SIG_IGN))
    previous = signal.getsignal(stop_signal)
    monkeypatch.setattr(rec, "load_backend",
                        lambda: FakeBackend(source, overflow_blocks=[4], interrupt_after_block=9,
                                            stop_signal=stop_signal))
    out = tmp_path / "r.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", "100"]) == 1  # the gap is reported
    assert f"(stopped by {stop_signal.name})" in capsys.readouterr().out
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert (sidecar["finished"], sidecar["stopped_by"]) == (True, stop_signal.name)
    assert [g["frame"] for g in sidecar["gaps"]] == [4 * rec.BLOCK_FRAMES]
    assert sf.info(out).frames == sidecar["frames"] == 10 * rec.BLOCK_FRAMES
    assert signal.getsignal(stop_signal) is previous  # restored


def test_where_there_is_no_sighup_a_kill_still_stops_the_recording(tmp_path, source, monkeypatch, capsys):
    """Windows has no SIGHUP: the other stop signals are caught all the same."""
    monkeypatch.delattr(signal, "SIGHUP")
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source, interrupt_after_block=9,
                                                                 stop_signal=signal.SIGTERM))
    out = tmp_path / "r.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", "100"]) == 0
    assert "(stopped by SIGTERM)" in capsys.readouterr().out
    assert sf.info(out).frames == 10 * rec.BLOCK_FRAMES


def test_a_core_audio_device_at_another_rate_warns_that_it_may_resample(tmp_path, source):
    backend = FakeBackend(source)
    backend.HOSTAPIS = ("Core Audio",)
    warnings: list[str] = []
    rec.record(tmp_path / "r.wav", 0.1, device="0", backend=backend, warn=warnings.append)
    assert warnings == ["HDA Intel PCH: ALC892 Analog (hw:0,0) (Core Audio) may be resampling: macOS "
                        "converts the card's current 44100 Hz (set the device to 192000 Hz in Audio MIDI "
                        "Setup first); the edges then carry the converter's filter (and nothing above half "
                        "the card's real rate): prefer the card's own device"]


def test_a_crash_over_an_old_take_leaves_the_new_gap_list(tmp_path, source, monkeypatch):
    """`record --force` over an earlier take that crashes before it ends: the sidecar beside the new WAV is
    the new one (written before any audio, again at each gap), never the old take's "no gaps"."""
    out = tmp_path / "r.wav"
    out.write_bytes(b"old")
    out.with_suffix(".json").write_text(json.dumps({"gaps": [], "finished": True}))

    def crash(result):
        raise RuntimeError("killed")

    monkeypatch.setattr(rec, "_check_levels", crash)
    with pytest.raises(RuntimeError):
        rec.record(out, 1.0, force=True, backend=FakeBackend(source, overflow_blocks=[3]))
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["finished"] is False and [g["frame"] for g in sidecar["gaps"]] == [3 * rec.BLOCK_FRAMES]


def test_a_full_disk_is_one_line_and_the_sidecar_says_where_it_ended(tmp_path, source, monkeypatch, capsys):
    monkeypatch.setattr(rec, "load_backend", lambda: FakeBackend(source))
    real_write, calls = sf.SoundFile.write, []

    def fill_up(self, data):
        calls.append(len(data))
        if len(calls) > 5:
            raise sf.LibsndfileError(0, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(sf.SoundFile, "write", fill_up)
    out = tmp_path / "r.wav"
    assert cli.main(["record", "-o", str(out), "--seconds", "3"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "cannot write" in err[0] and "its sidecar says so" in err[0]
    sidecar = json.loads(out.with_suffix(".json").read_text())
    assert sidecar["frames"] == 5 * rec.BLOCK_FRAMES and sidecar["write_error"] and not sidecar["finished"]
