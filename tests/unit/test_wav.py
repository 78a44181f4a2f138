"""Bad WAV captures give one clear line and exit status 2 (``pintime edges``), never a traceback."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.capture.wav import iter_blocks, open_wav
from pintime.cli import main
from pintime.errors import PintimeError
from pintime.soundcard import model as sc
from pintime.soundcard.synth import synthesize

FS = sc.SAMPLE_RATE_HZ


def run_edges(capsys, path: Path) -> str:
    """Run ``pintime edges`` expecting failure; the single stderr line."""
    assert main(["edges", str(path), "--csv", str(path.with_suffix(".csv"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pintime: error: ")
    return err[0]


def noise(seconds: float, channels: int = 2, level: float = 1e-5) -> np.ndarray:
    return np.random.default_rng(0).normal(0, level, (int(seconds * FS), channels)).squeeze()


def test_not_audio(capsys, tmp_path):
    path = tmp_path / "notes.wav"
    path.write_text("these are my notes, not a recording\n" * 20)
    assert "not a capture" in run_edges(capsys, path)


def test_garbage_riff(capsys, tmp_path):
    path = tmp_path / "garbage.wav"
    path.write_bytes(b"RIFF\x00\x10\x00\x00WAVEjunk" + bytes(range(256)) * 4)
    assert "not an audio file" in run_edges(capsys, path)


def test_wrong_sample_rate(capsys, tmp_path):
    path = tmp_path / "cd.wav"
    sf.write(path, noise(0.2), 22050, subtype="PCM_24")
    assert "sample rate is 22050 Hz" in run_edges(capsys, path)


def test_mono(capsys, tmp_path):
    path = tmp_path / "mono.wav"
    sf.write(path, noise(0.2, channels=1), FS, subtype="PCM_24")
    assert "no edges on the measurement (mono) channel" in run_edges(capsys, path)  # read: mono is fine


def test_silence(capsys, tmp_path):
    path = tmp_path / "silence.wav"
    sf.write(path, noise(1.0), FS, subtype="PCM_24")
    assert "no edges on the measurement (left) channel" in run_edges(capsys, path)


def excerpt(tmp_path: Path, cycles: int) -> Path:
    """A short simavr edge list (cycle,channel,level) of a few pulses on both channels."""
    path = tmp_path / "few.edges.csv"
    rows = []
    for k in range(40):
        rows += [(10_000 + 3_000 * k, 0, 1), (10_000 + 3_000 * k + 1_001, 0, 0)]
    rows += [(cycles, 1, 1)]
    path.write_text("cycle,channel,level\n" + "".join(f"{c},{ch},{lv}\n" for c, ch, lv in sorted(rows)))
    return path


def test_a_header_never_finished_is_named(capsys, tmp_path):
    """A recorder killed before it wrote its sizes: the header says no samples (RIFF and data sizes 0),
    yet the data follow; the message says so and how to rewrite the header."""
    path = tmp_path / "unclosed.wav"
    sf.write(path, noise(0.2), FS, subtype="PCM_24")
    data = bytearray(path.read_bytes())
    at = data.index(b"data")
    data[4:8] = data[at + 4:at + 8] = bytes(4)
    path.write_bytes(bytes(data))
    message = run_edges(capsys, path)
    assert "no samples by its header, yet" in message and "never closed" in message
    assert "sox --ignore-length" in message


def test_truncated(capsys, tmp_path):
    edges = excerpt(tmp_path, 60_000)
    wav = synthesize(edges, tmp_path / "full.wav", "default", 1, f_cpu_hz=1e6).wav_path
    data = wav.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[:len(data) * 2 // 3])
    assert "truncated file" in run_edges(capsys, cut)


def test_clipped(capsys, tmp_path):
    edges = excerpt(tmp_path, 60_000)
    loud = replace(sc.PROFILES["default"], name="loud", attenuator_ratio=0.6)  # step 1.06 FS: clips
    wav = synthesize(edges, tmp_path / "loud.wav", loud, 1, f_cpu_hz=1e6).wav_path
    line = run_edges(capsys, wav)
    assert "clipped signal at 0.0" in line and "left channel" in line


def test_blocks_carry_the_file_samples_with_padding(tmp_path):
    """Every block holds exactly the file's frames around its owned range (the values libsndfile reads: the
    24-bit reader must agree to the bit); owned ranges tile the request."""
    path = tmp_path / "blocks.wav"
    x = noise(0.1, level=0.1)
    x[:3] = [[-1.0, 1.0 - 2.0 ** -23], [2.0 ** -23, -(2.0 ** -23)], [0.0, -0.5]]  # 24-bit codes' extremes
    sf.write(path, x, FS, subtype="PCM_24")
    exact = sf.read(path, dtype="float32")[0]
    info = open_wav(path)
    owned = []
    for block in iter_blocks(info, block_frames=5000, pad_frames=300, start_frame=1234, stop_frame=17000):
        lo, hi = block.first, block.first + len(block.data)
        assert lo <= max(0, block.own_lo - 300) and hi >= min(info.frames, block.own_hi + 300)
        np.testing.assert_array_equal(block.data, exact[lo:hi])
        owned.append((block.own_lo, block.own_hi))
    assert owned[0][0] == 1234 and owned[-1][1] == 17000
    assert all(a[1] == b[0] for a, b in zip(owned, owned[1:], strict=False))


def test_rf64_is_read_and_its_64_bit_size_checked(tmp_path):
    """An RF64 WAVE (what recorders write past 4 GiB) reads as libsndfile reads it; one whose ds64 chunk
    claims 10 GB more audio than the file holds is refused as truncated, not read short."""
    samples = np.random.default_rng(0).normal(0, 0.1, (4800, 2)).astype(np.float32)
    good = tmp_path / "big.wav"
    sf.write(good, samples, 48000, subtype="PCM_24", format="RF64")
    info = open_wav(good)
    blocks = iter_blocks(info, 1000, 0)
    read = np.concatenate([b.data[b.own_lo - b.first:b.own_hi - b.first] for b in blocks])
    np.testing.assert_array_equal(read, sf.read(good, dtype="float32")[0])
    raw = bytearray(good.read_bytes())
    at = raw.index(b"ds64") + 16  # after the chunk header and the RIFF size: the data size
    raw[at:at + 8] = (int.from_bytes(raw[at:at + 8], "little") + 10**10).to_bytes(8, "little")
    bad = tmp_path / "claims.wav"
    bad.write_bytes(bytes(raw))
    with pytest.raises(PintimeError, match="truncated file: 10000000000 bytes of audio data missing"):
        open_wav(bad)
