"""Recording gaps (``pintime record``'s sidecar): frames a gap cuts are counted as lost, never decoded.

Each capture here is recorded through ``pintime record`` with a fake PortAudio (tests/test_record.py) that
plays the committed example capture with a stretch of samples taken out, and flags an input overflow on the
block after it, as PortAudio does when it discards input: the sidecar's gap list is record's own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime import record as rec
from pintime.capture.gaps import read_gaps
from pintime.capture.wav import open_wav
from pintime.clock import calibrate
from pintime.edges import REFERENCE_CHANNEL, Edges
from pintime.errors import PintimeError
from pintime.locate import capture_edges as locate
from pintime.locate.capture_edges import GAP_GUARD_SAMPLES, CaptureEdges, learn_capture, locate_capture
from pintime.pipeline import analyze, load_edges, summary_json
from pintime.validate.edgecheck import match_stretches
from test_hostile import assert_fails, run_cli
from test_record import FakeBackend

ROOT = Path(__file__).resolve().parents[1]
SOURCE_WAV = ROOT / "captures" / "table1-default.wav"
# block 147 starts at 3.136 s, inside repetition 1's 21 ms Executing 210× pulse; block 5 at 0.107 s, in
# the QUIET between the first RUN frame and the CAL frame (2.5 ms after the one, 4.1 ms before the other)
IN_A_PULSE = (147, 1000)  # (block, samples lost): 5.2 ms taken out of the pulse
IN_A_QUIET = (5, 200)
IN_THE_TRAIN = (30, 1000)  # 0.640 s, 3 samples before a calibration-train edge: 5.02 train periods lost
IN_DIFFERENTIAL_PAIRS = (100, 600)  # 2.133 s: 3.1 ms of 1-call/2-call pulse pairs, alike but for the headers
TRUTH = ROOT / "build" / "sim" / "table1.json"


def record_with_gap(directory: Path, block: int, lost: int) -> Path:
    samples, _ = sf.read(SOURCE_WAV, dtype="int32")
    at = block * rec.BLOCK_FRAMES
    samples = np.concatenate([samples[:at], samples[at + lost:]])
    backend = FakeBackend(samples, overflow_blocks=[block])
    result = rec.record(directory / "gap.wav", len(samples) / rec.SAMPLE_RATE_HZ, backend=backend)
    assert [g.frame for g in result.gaps] == [at]
    return result.wav_path


@pytest.fixture(scope="module")
def uncut() -> dict:
    return summary_json(analyze(SOURCE_WAV))


@pytest.fixture(scope="module")
def cut_pulse(tmp_path_factory) -> Path:
    return record_with_gap(tmp_path_factory.mktemp("pulse"), *IN_A_PULSE)


def _rows(result: dict) -> dict[str, tuple[int, float]]:
    return {r["label"]: (r["count"], r["mean_us"]) for r in result["table1"]}


def test_a_frame_cut_by_a_gap_is_lost_not_decoded(cut_pulse, uncut):
    """The Executing 210× frame the gap cuts is counted as lost to it; every other estimate is the uncut
    capture's (the clock gives the stretch after the gap an offset of its own)."""
    a = analyze(cut_pulse)
    result = summary_json(a)
    assert result["recording_gaps"]["frames_cut"] == 1 and result["recording_gaps"]["count"] == 1
    assert result["frames"]["decoded"] == uncut["frames"]["decoded"] - 1
    rows, before = _rows(result), _rows(uncut)
    assert rows["Executing 210×"][0] == before["Executing 210×"][0] - 1
    for label, (_, mean_us) in rows.items():
        assert mean_us == pytest.approx(before[label][1], abs=1e-5), label
    code, printed, _ = run_cli(["analyze", cut_pulse])
    assert code == 0 and f"1 cut by 1 recording gap(s) listed in {cut_pulse.with_suffix('.json')}" in printed


def test_the_same_file_without_its_gap_list_is_wrong(cut_pulse, uncut, tmp_path):
    """Why the gap list matters: without it the cut pulse is decoded 5.2 ms short, and the reference edges
    after the gap pull the clock 0.16 % off, silently."""
    bare = tmp_path / "bare.wav"
    bare.symlink_to(cut_pulse)
    rows, before = _rows(summary_json(analyze(bare))), _rows(uncut)
    assert rows["Executing 210×"][0] == before["Executing 210×"][0]
    assert abs(rows["Executing 210×"][1] - before["Executing 210×"][1]) > 1.0


def test_a_gap_in_a_quiet_loses_no_frame(tmp_path, uncut):
    result = summary_json(analyze(record_with_gap(tmp_path, *IN_A_QUIET)))
    assert result["recording_gaps"]["frames_cut"] == 0 and result["recording_gaps"]["edges_dropped"] == 0
    assert result["frames"]["decoded"] == uncut["frames"]["decoded"]
    rows, before = _rows(result), _rows(uncut)
    for label, (count, mean_us) in rows.items():
        assert (count, mean_us) == (before[label][0], pytest.approx(before[label][1], abs=1e-6)), label


@pytest.mark.parametrize("block, lost, cut", [(162, 2000, 2), (162, 1000, 2), (*IN_DIFFERENTIAL_PAIRS, 1)])
def test_a_gap_cutting_two_frames_counts_both(tmp_path, uncut, block, lost, cut):
    """Block 162 starts 1.5 ms before the end of a DIFFERENTIAL 210× frame: 2000 samples lost take its last
    pulses (an odd number of edges), the QUIET, the next frame's SYNC and first header bits; 1000 take the
    QUIET only in part, so the next frame is all there but its QUIET is not. Both frames are lost to the
    gap either way. 600 samples out of a DIFFERENTIAL 1000× group cut that one frame only."""
    result = summary_json(analyze(record_with_gap(tmp_path, block, lost)))
    assert result["recording_gaps"]["frames_cut"] == cut
    assert result["frames"]["decoded"] == uncut["frames"]["decoded"] - cut
    assert [result["frames"][k] for k in ("rejected", "incomplete")] == \
        [uncut["frames"][k] for k in ("rejected", "incomplete")]


def test_a_gap_in_the_calibration_train(tmp_path, uncut, monkeypatch):
    """The template is learned from the train's longest part between gaps, and from no window that sees
    the gap's jump (the edge 3 samples after it once moved Direct by 3.6e-3 µs). The estimates are then the
    uncut capture's with its template learned from the same train edges (measured: within 5e-8 µs); the
    shorter train alone moves them by up to 4e-5 µs (Direct), which is inherent to learning from it."""
    block, lost = IN_THE_TRAIN
    wav = record_with_gap(tmp_path, block, lost)
    gap = block * rec.BLOCK_FRAMES
    _, fit, _, (train_pos, *_), _ = learn_capture(open_wav(wav))
    assert fit is not None and train_pos[0] - gap > GAP_GUARD_SAMPLES  # clear of the gap
    cut = _rows(summary_json(analyze(wav)))
    lo, hi = train_pos[[0, -1]] + lost  # the same train edges in the uncut capture
    longest_train = locate._longest_train

    def same_train(pos, sign, stretch):
        idx = longest_train(pos, sign, stretch)
        return idx[(pos[idx] >= lo) & (pos[idx] <= hi)]

    monkeypatch.setattr(locate, "_longest_train", same_train)
    same = _rows(summary_json(analyze(SOURCE_WAV)))
    before = _rows(uncut)
    for label, (count, mean_us) in cut.items():
        assert count == same[label][0] and abs(mean_us - same[label][1]) < 1e-6, label
        assert abs(mean_us - before[label][1]) < 1e-4, label


def test_edges_and_validate_say_so(cut_pulse, tmp_path):
    code, _, lines = run_cli(["edges", cut_pulse, "--csv", tmp_path / "e.csv"])
    assert code == 0 and any(line.startswith("1 recording gap(s) listed in") for line in lines), lines
    out = tmp_path / "v.json"
    code, printed, lines = run_cli(["validate", cut_pulse, "--truth", TRUTH, "--json", out])
    if code == 2 and "revision" in lines[0]:
        pytest.skip("build/sim/table1 is not the firmware of the committed captures")
    assert code == 0, lines
    assert ("recording gaps: 1, 1 frame(s) cut by them, not decoded; per-edge errors stretch by stretch"
            in printed)
    result = json.loads(out.read_text())
    assert all(r["truth_us"] is not None for r in result["table1"])
    template = result["edges"]["template"]
    # the gap falls 12 ms before the cut pulse's end: no edge beside it, none lost with the audio
    assert (template["stretches"], template["beside_gaps"]) == (2, 0)
    assert template["matched"] == template["located"]
    assert "per stretch between recording gaps" in template["calibration"]


@pytest.fixture(scope="module")
def truth_edges() -> Edges:
    if not TRUTH.exists():
        pytest.skip("no simavr truth (make sim)")
    return load_edges(TRUTH.with_name("table1.edges.csv"))


@pytest.fixture(scope="module")
def uncut_located() -> CaptureEdges:
    return locate_capture(SOURCE_WAV, "template")


@pytest.mark.parametrize("block, lost", [IN_A_PULSE, IN_DIFFERENTIAL_PAIRS])
def test_each_stretch_is_placed_on_the_exact_edges(truth_edges, uncut_located, tmp_path, block, lost):
    """Per-edge errors of a gapped capture: every located edge of the stretch after the gap (whose lost
    audio record does not know) matches the exact edge its twin in the uncut capture matches, and its
    error about the stretch's own time map is the uncut one's but for the maps' difference near the gap
    (the 20 ms map is least determined at a stretch's end); a misplaced stretch would be off by ≥ 1 µs."""
    uncut = uncut_located
    try:
        m_uncut = match_stretches(uncut.edges, truth_edges, None)
    except PintimeError:
        pytest.skip("build/sim/table1 is not the firmware of the committed captures")
    wav = record_with_gap(tmp_path, block, lost)
    gaps = read_gaps(wav)
    cut = locate_capture(wav, "template")
    m_cut = match_stretches(cut.edges, truth_edges, gaps)
    gap_s = block * rec.BLOCK_FRAMES / rec.SAMPLE_RATE_HZ
    time_cut = cut.edges.time[m_cut.idx]
    twin_s = time_cut + np.where(time_cut > gap_s, lost / rec.SAMPLE_RATE_HZ, 0.0)  # its uncut time
    common, i_uncut, i_cut = np.intersect1d(m_uncut.jdx, m_cut.jdx, return_indices=True)
    assert len(common) == len(m_cut.jdx)  # no exact edge matched twice
    assert np.allclose(uncut.edges.time[m_uncut.idx[i_uncut]], twin_s[i_cut], rtol=0, atol=1e-12)
    t_uncut = uncut.edges.time[m_uncut.idx]
    lost_edges = np.count_nonzero((t_uncut >= gap_s) & (t_uncut < gap_s + lost / rec.SAMPLE_RATE_HZ))
    assert len(m_cut.idx) + m_cut.beside_gaps + lost_edges == len(m_uncut.idx)
    assert set(m_cut.stretch.tolist()) == {0, 1}
    diff_ns = np.abs(m_cut.err[i_cut] - m_uncut.err[i_uncut]) * 1e9
    near = np.abs(twin_s[i_cut] - gap_s) < 0.05
    assert diff_ns[near].max() < 2.0 and diff_ns[~near].max() < 0.02


@pytest.mark.parametrize("sidecar", [b"{", b"[]", b'{"gaps": 5}', b'{"gaps": [3]}',
                                     b'{"gaps": [{"frame": -1, "frames_lost": null, "cause": "x"}]}',
                                     b'{"gaps": [{"frame": 1.5, "frames_lost": null, "cause": "x"}]}',
                                     b'{"gaps": [{"frame": 1, "cause": "x"}]}'])
def test_a_damaged_gap_list_is_refused(tmp_path, sidecar):
    """Whether the recording has gaps is then unknown: refused, naming the sidecar, before the WAV is read."""
    wav = tmp_path / "c.wav"
    wav.symlink_to(SOURCE_WAV)
    (tmp_path / "c.json").write_bytes(sidecar)
    assert_fails(["analyze", wav], tmp_path / "c.json")


def test_clock_gives_each_stretch_between_gaps_its_own_offset():
    """A reference wave whose edges after a gap lost 0.3217 s (and one edge with them): the rate and the
    fall offset are recovered within their uncertainty. As one stretch it is refused: the spacing across
    the gap is no whole number of half seconds."""
    rng = np.random.default_rng(4)
    k = np.arange(41)
    polarity = np.where(k % 2 == 0, 1, -1).astype(np.int8)
    time = 0.3 + k * 0.5 * (1 + 31e-6) + 2e-6 * (polarity < 0) + rng.normal(0, 20e-9, len(k))
    gap_s = time[20] + 0.1
    keep = k != 21  # an edge inside the lost audio
    time = np.where(k > 20, time - 0.3217, time)[keep]
    edges = Edges(time, np.full(len(time), REFERENCE_CHANNEL, np.int8), polarity[keep],
                  np.full(len(time), 20e-9), 1.0, "test")
    c = calibrate(edges, np.array([gap_s]))
    assert abs(c.rate_ppm - 31) < 4 * c.rate_ppm_sigma and c.rate_ppm_sigma < 0.1
    assert abs(c.fit.fall_offset - 2e-6) < 4 * c.fit.fall_offset_sigma
    with pytest.raises(PintimeError, match="not evenly spaced"):
        calibrate(edges)
