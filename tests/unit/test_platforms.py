"""What differs on Windows and macOS, on this Linux machine by monkeypatching what the package asks the
platform: names POSIX has and Windows lacks (SIGHUP, os.fchmod), how libsndfile is given a file name,
the output's encoding, where PortAudio comes from (docs/install.md)."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf
from pintime import record as rec
from pintime.capture import wav
from pintime.capture.wav import iter_blocks, open_wav, soundfile_name
from pintime.cli import reconfigure_output
from pintime.errors import PintimeError
from pintime.files import write_text
from pintime.stopsignals import stop_signals


def test_every_command_loads_where_there_is_no_sighup_nor_fchmod(tmp_path):
    """Windows' signal module has no SIGHUP and its os no fchmod (before Python 3.13): every subcommand's
    module still imports (``--help`` loads them all) and a result file is still written. None of them
    imports sounddevice or matplotlib, which only recording and plots need."""
    script = ("import os, signal, sys\n"
              "del signal.SIGHUP, os.fchmod\n"
              "from pintime.cli import build_parser\n"
              "from pintime.files import write_text\n"
              "build_parser()\n"
              "assert not {'sounddevice', 'matplotlib'} & set(sys.modules), sorted(sys.modules)\n"
              "write_text(sys.argv[1], 'ok')\n")
    done = subprocess.run([sys.executable, "-c", script, "result.txt"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "result.txt").read_text() == "ok"


def test_a_result_gets_the_umasks_mode_without_fchmod(tmp_path, monkeypatch):
    monkeypatch.delattr(os, "fchmod")
    old_umask = os.umask(0o022)
    try:
        write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(old_umask)
    assert (tmp_path / "r.json").stat().st_mode & 0o777 == 0o644


def test_result_files_have_lf_line_ends_where_text_mode_writes_crlf(tmp_path, monkeypatch):
    """Windows' text mode writes every ``\\n`` as CR LF: a result (CSV, JSON, VCD) is the same bytes
    there as here."""
    real_open = io.open

    def windows_open(file, mode="r", buffering=-1, encoding=None, errors=None, newline=None, **kwargs):
        crlf = "\r\n" if newline is None and "b" not in mode else newline
        return real_open(file, mode, buffering, encoding, errors, crlf, **kwargs)

    monkeypatch.setattr(io, "open", windows_open)
    (tmp_path / "plain.txt").write_text("a\nb\n")
    assert (tmp_path / "plain.txt").read_bytes() == b"a\r\nb\r\n"  # the stand-in translates
    write_text(tmp_path / "r.csv", "a\nb\n")
    assert (tmp_path / "r.csv").read_bytes() == b"a\nb\n"


def test_the_recorder_catches_the_stop_signals_the_platform_has(monkeypatch):
    assert stop_signals() == [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]
    monkeypatch.delattr(signal, "SIGHUP")  # Windows
    monkeypatch.setattr(signal, "SIGBREAK", signal.SIGUSR1, raising=False)  # stands in for Ctrl-Break
    assert stop_signals() == [signal.SIGINT, signal.SIGTERM, signal.SIGUSR1]


def test_libsndfile_gets_bytes_on_posix_and_text_on_windows(tmp_path, monkeypatch):
    """On POSIX any file name opens as its bytes, undecodable ones too; Windows names are text, opened
    through soundfile's wide-character call (bytes would go through the ANSI code page). Only pintime's
    view of the platform is Windows here: soundfile itself has no wide-character call on Linux."""
    undecodable = tmp_path / os.fsdecode(b"caf\xe9.wav")
    assert soundfile_name(undecodable) == os.fsencode(undecodable)
    monkeypatch.setattr(wav, "sys", SimpleNamespace(platform="win32"))
    named = tmp_path / "mesure σ.wav"
    samples = np.random.default_rng(1).uniform(-0.5, 0.5, (4800, 2)).astype(np.float32)
    sf.write(str(named), samples, 48000, subtype="FLOAT")  # read by libsndfile, not pintime's PCM reader
    assert soundfile_name(named) == str(named)
    info = open_wav(named)
    assert (info.samplerate_hz, info.channels, info.frames) == (48000, 2, 4800)
    (block,) = iter_blocks(info, 8192, 0)
    np.testing.assert_array_equal(block.data, samples)


def _streams(monkeypatch, encoding: str) -> tuple[io.BytesIO, io.BytesIO]:
    out, err = io.BytesIO(), io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(out, encoding=encoding))
    monkeypatch.setattr(sys, "stderr", io.TextIOWrapper(err, encoding=encoding))
    return out, err


def test_output_redirected_on_windows_is_utf8_whatever_the_code_page(monkeypatch):
    """A redirected stream on Windows is in the ANSI code page (cp1252), which has no σ or ε: pintime's
    output is UTF-8 there instead of a UnicodeEncodeError."""
    out, err = _streams(monkeypatch, "cp1252")
    reconfigure_output("win32")
    print("σ ε µ")
    print("σ", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    assert out.getvalue().decode("utf-8") == "σ ε µ\n" and err.getvalue().decode("utf-8") == "σ\n"


def test_output_on_posix_keeps_its_locales_encoding(monkeypatch):
    _streams(monkeypatch, "latin-1")
    reconfigure_output("linux")
    assert sys.stdout.encoding == "latin-1" and sys.stdout.errors == "surrogateescape"


@pytest.mark.parametrize(("platform", "advice"), [
    ("linux", "install the system's libportaudio2 (Debian, Ubuntu: sudo apt-get install libportaudio2; "
              "Fedora: sudo dnf install portaudio)"),
    ("win32", "sounddevice's wheel brings it: pip install --force-reinstall sounddevice"),
    ("darwin", "sounddevice's wheel brings it: pip install --force-reinstall sounddevice"),
])
def test_without_portaudio_the_error_says_how_to_get_it_on_each_platform(tmp_path, monkeypatch, platform,
                                                                          advice):
    (tmp_path / "sounddevice.py").write_text("raise OSError('PortAudio library not found')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sounddevice", raising=False)
    monkeypatch.setattr(rec, "sys", SimpleNamespace(platform=platform))
    with pytest.raises(PintimeError) as caught:
        rec.load_backend()
    assert str(caught.value) == f"pintime record needs PortAudio: {advice}"


def test_without_sounddevice_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sounddevice", None)  # import raises ImportError
    with pytest.raises(PintimeError, match="^pintime record needs the sounddevice package: "
                       "pip install sounddevice$"):
        rec.load_backend()


@pytest.mark.parametrize(("default_hz", "risk"), [(44100.0, True), (192000.0, False)])
def test_a_core_audio_device_at_another_rate_may_be_resampled(default_hz, risk):
    """macOS (PortAudio's Core Audio) converts to the asked rate from the device's current one, which the
    device reports as its default rate (the whole warning: tests/cli/test_record_command.py)."""
    device = rec.Device(1, "Scarlett 2i2 USB", "Core Audio", 2, default_hz)
    assert (rec.resampling_risk(device) is not None) == risk
