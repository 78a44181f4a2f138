"""Recording gaps (``pintime record``'s sidecar): frames a gap cuts are counted as lost, never decoded.

Each capture here is recorded through ``pintime record`` with a fake PortAudio (support.FakeBackend) that
plays the committed example capture with a stretch of samples taken out, and flags an input overflow on the
block after it, as PortAudio does when it discards input: the sidecar's gap list is record's own.
"""

from __future__ import annotations

import json
import shutil
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
from pintime.frames import QUIET_MIN_US
from pintime.locate.stream import capture_edges as locate
from pintime.locate.stream.capture_edges import GAP_GUARD_SAMPLES, CaptureEdges, learn_capture, locate_capture
from pintime.lost_audio import cut_spans
from pintime.pipeline import analyze, load_edges, summary_json
from pintime.validate.edgematch import match_stretches
from support import EXAMPLE_WAV as SOURCE_WAV
from support import SIM, FakeBackend, assert_fails, run_cli

# block 147 starts at 3.136 s, inside repetition 1's 21 ms Executing 210× pulse; block 5 at 0.107 s, in
# the QUIET between the first RUN frame and the CAL frame (2.5 ms after the one, 4.1 ms before the other)
PULSE_LOST = 1000  # samples taken out of an Executing 210× pulse (21 ms): 5.2 ms
PAIRS_LOST = 600  # samples taken out of a Differential 1000× group: 3.1 ms of 1-call/2-call pulse pairs
QUIET_LOST = 200  # samples a gap takes out of a QUIET
IN_THE_TRAIN = (30, 1000)  # 0.640 s, 3 samples before a calibration-train edge: 5.02 train periods lost
TRUTH = SIM / "table1.json"


def _block_times_s(uncut_analysis) -> np.ndarray:
    """Capture time of every block boundary of a recording of the example (where a fake overflow can be)."""
    return np.arange(open_wav(SOURCE_WAV).frames // rec.BLOCK_FRAMES) * rec.BLOCK_FRAMES / rec.SAMPLE_RATE_HZ


def _meas_edges_s(a) -> tuple[np.ndarray, np.ndarray]:
    meas = a.edges.on(0)
    return meas.time, meas.polarity


def block_in_a_quiet(a, lost: int) -> int:
    """The first block boundary inside a QUIET (FORMAT.md §3: low ≥ QUIET_MIN_US) whose lost samples leave
    a QUIET after the gap and no edge within the locator's guard of it: a gap that cuts no frame."""
    time, polarity = _meas_edges_s(a)
    lost_s, guard_s = lost / rec.SAMPLE_RATE_HZ, GAP_GUARD_SAMPLES / rec.SAMPLE_RATE_HZ + 1e-4
    for b, t in enumerate(_block_times_s(a)):
        after = np.searchsorted(time, t)
        if 0 < after < len(time) and polarity[after - 1] < 0 and polarity[after] > 0 \
                and t - time[after - 1] > guard_s and time[after] - lost_s - t > QUIET_MIN_US * 1e-6 + 2e-4:
            return b
    raise AssertionError("no block boundary in a QUIET of the example capture")


def block_inside_group(a, kind: str, n: int, lost: int) -> int:
    """The first block boundary inside the group of a frame of ``kind`` with ``n`` executions, whose lost
    samples end inside that group too, clear of its first and last edge by the locator's guard, and both
    ends of the lost audio ten samples from any edge (no edge is cut in two)."""
    time, _ = _meas_edges_s(a)
    guard_s, clear_s = GAP_GUARD_SAMPLES / rec.SAMPLE_RATE_HZ, 10 / rec.SAMPLE_RATE_HZ
    spans = [(time[f.group[0]], time[f.group[-1]]) for f in a.decode.frames if f.kind == kind
             and f.fields.get("n") == n]
    for b, t in enumerate(_block_times_s(a)):
        end = t + lost / rec.SAMPLE_RATE_HZ
        if any(lo + guard_s < t and end < hi - guard_s for lo, hi in spans) \
                and np.min(np.abs(time - t)) > clear_s and np.min(np.abs(time - end)) > clear_s:
            return b
    raise AssertionError(f"no block boundary inside a {kind} {n}× group of the example capture")


def block_cutting_two_frames(a) -> tuple[int, int]:
    """A block boundary 0.5 ms before the last edge of a frame (a pulse longer than 1 ms: the gap takes its
    last edge only) whose next frame's SYNC starts 6 to 9 ms after it: 1000 samples lost (5.2 ms) end in the
    QUIET between them but leave less than a QUIET, 2000 (10.4 ms) take the next frame's SYNC and first
    header bits. Returns the block and how many samples to trim off the recording's start (less than a
    block: the 50 ms before the run) to put a boundary there."""
    time, _ = _meas_edges_s(a)
    frames = a.decode.frames
    starts = np.array([time[f.start] for f in frames])
    for k in range(len(frames) - 1):
        group = time[frames[k].group]
        if len(group) >= 2 and group[-1] - group[-2] > 1e-3:  # the gap takes the group's last edge only
            t = group[-1] - 0.5e-3
            if 6e-3 < starts[k + 1] - t < 9e-3 and t > 0.1:
                at = int(round(t * rec.SAMPLE_RATE_HZ))
                return at // rec.BLOCK_FRAMES, at % rec.BLOCK_FRAMES
    raise AssertionError("no frame with a QUIET before the next in the example capture")


def record_with_gap(directory: Path, block: int, lost: int, trim: int = 0) -> Path:
    samples, _ = sf.read(SOURCE_WAV, dtype="int32")
    samples = samples[trim:]
    at = block * rec.BLOCK_FRAMES
    samples = np.concatenate([samples[:at], samples[at + lost:]])
    backend = FakeBackend(samples, overflow_blocks=[block])
    result = rec.record(directory / "gap.wav", len(samples) / rec.SAMPLE_RATE_HZ, backend=backend)
    assert [g.frame for g in result.gaps] == [at]
    return result.wav_path


@pytest.fixture(scope="module")
def uncut_analysis():
    return analyze(SOURCE_WAV)


@pytest.fixture(scope="module")
def uncut(uncut_analysis) -> dict:
    return summary_json(uncut_analysis)


@pytest.fixture(scope="module")
def cut_pulse(tmp_path_factory, uncut_analysis) -> Path:
    block = block_inside_group(uncut_analysis, "executing", 210, PULSE_LOST)
    return record_with_gap(tmp_path_factory.mktemp("pulse"), block, PULSE_LOST)


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


def test_the_same_file_without_its_gap_list_finds_the_gap_in_the_data(cut_pulse, uncut, tmp_path):
    """Without its gap list (a copy of the recording, its sidecar left behind) the lost 5.2 ms show as a
    jump of the reference's phase (pintime.lost_audio): the edges between the two reference edges around
    it are dropped, so the cut pulse is not decoded 5.2 ms short, and each side gets its own clock offset.
    (Without that, the pulse read 5.2 ms short and the clock 0.16 % off, silently.)"""
    bare = tmp_path / "bare.wav"
    shutil.copyfile(cut_pulse, bare)
    result = summary_json(analyze(bare))
    [found] = result["recording_gaps"]["found_in_data"]
    assert found["lost_us"] == pytest.approx(PULSE_LOST / rec.SAMPLE_RATE_HZ * 1e6, abs=0.01)
    assert not found["listed"] and result["recording_gaps"]["frames_cut"] >= 1
    rows, before = _rows(result), _rows(uncut)
    for label, (count, mean_us) in rows.items():
        assert count <= before[label][0] and mean_us == pytest.approx(before[label][1], abs=1e-4), label


def test_a_listed_gap_is_also_found_in_the_data(cut_pulse):
    found = summary_json(analyze(cut_pulse))["recording_gaps"]["found_in_data"]
    assert [g["listed"] for g in found] == [True]


def test_a_link_to_the_recording_finds_its_gap_list(cut_pulse, tmp_path):
    link = tmp_path / "link.wav"
    link.symlink_to(cut_pulse)
    gaps = read_gaps(link)
    assert gaps is not None and gaps.sidecar == cut_pulse.with_suffix(".json").resolve()


def test_a_gap_in_a_quiet_loses_no_frame(tmp_path, uncut, uncut_analysis):
    block = block_in_a_quiet(uncut_analysis, QUIET_LOST)
    result = summary_json(analyze(record_with_gap(tmp_path, block, QUIET_LOST)))
    assert result["recording_gaps"]["frames_cut"] == 0 and result["recording_gaps"]["edges_dropped"] == 0
    assert result["frames"]["decoded"] == uncut["frames"]["decoded"]
    rows, before = _rows(result), _rows(uncut)
    for label, (count, mean_us) in rows.items():
        assert (count, mean_us) == (before[label][0], pytest.approx(before[label][1], abs=1e-6)), label


@pytest.mark.parametrize("block, lost, cut", [(None, 2000, 2), (None, 1000, 2), ("pairs", PAIRS_LOST, 1)])
def test_a_gap_cutting_two_frames_counts_both(tmp_path, uncut, uncut_analysis, block, lost, cut):
    """A gap at most 3 ms before the end of a frame (:func:`block_cutting_two_frames`): 2000 samples lost
    take its last pulses, the QUIET, the next frame's SYNC and first header bits; 1000 take the QUIET only
    in part, so the next frame is all there but its QUIET is not. Both frames are lost to the gap either
    way. 600 samples out of a DIFFERENTIAL 1000× group cut that one frame only."""
    block, trim = (block_cutting_two_frames(uncut_analysis) if block is None
                   else (block_inside_group(uncut_analysis, "differential", 1000, lost), 0))
    result = summary_json(analyze(record_with_gap(tmp_path, block, lost, trim)))
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


@pytest.mark.usefixtures("make_sim")
def test_edges_and_validate_say_so(cut_pulse, tmp_path):
    code, _, lines = run_cli(["edges", cut_pulse, "--csv", tmp_path / "e.csv"])
    assert code == 0 and any(line.startswith("1 recording gap(s) listed in") for line in lines), lines
    out = tmp_path / "v.json"
    code, printed, lines = run_cli(["validate", cut_pulse, "--truth", TRUTH, "--json", out])
    if code == 2 and "revision" in lines[0]:
        pytest.skip("build/sim/table1 is not the firmware of the committed captures")
    assert code == 0, lines
    assert ("recording gaps: 1 listed, 1 found in the data, 1 frame(s) cut by them, not decoded; per-edge "
            "errors stretch by stretch"
            in printed)
    result = json.loads(out.read_text())
    assert all(r["truth_us"] is not None for r in result["table1"])
    template = result["edges"]["template"]
    # the gap falls 12 ms before the cut pulse's end: no edge beside it, none lost with the audio
    assert (template["stretches"], template["beside_gaps"]) == (2, 0)
    assert template["matched"] == template["located"]
    assert "per stretch between recording gaps" in template["calibration"]


@pytest.fixture(scope="module")
def truth_edges(make_sim) -> Edges:
    return load_edges(TRUTH.with_name("table1.edges.csv"))


@pytest.fixture(scope="module")
def uncut_located() -> CaptureEdges:
    return locate_capture(SOURCE_WAV, "template")


@pytest.mark.parametrize("kind, n, lost", [("executing", 210, PULSE_LOST),
                                           ("differential", 1000, PAIRS_LOST)])
def test_each_stretch_is_placed_on_the_exact_edges(truth_edges, uncut_located, uncut_analysis, tmp_path, kind,
                                                   n, lost):
    """Per-edge errors of a gapped capture: every located edge of the stretch after the gap (whose lost
    audio record does not know) matches the exact edge its twin in the uncut capture matches, and its
    error about the stretch's own time map is the uncut one's but for the maps' difference near the gap
    (the 20 ms map is least determined at a stretch's end); a misplaced stretch would be off by ≥ 1 µs."""
    uncut = uncut_located
    try:
        m_uncut = match_stretches(uncut.edges, truth_edges, None)
    except PintimeError:
        pytest.skip("build/sim/table1 is not the firmware of the committed captures")
    block = block_inside_group(uncut_analysis, kind, n, lost)
    wav = record_with_gap(tmp_path, block, lost)
    gaps = read_gaps(wav)
    cut = locate_capture(wav, "template")
    m_cut = match_stretches(cut.edges, truth_edges, cut_spans(gaps.times_s, None),
                            GAP_GUARD_SAMPLES / rec.SAMPLE_RATE_HZ)
    gap_s = block * rec.BLOCK_FRAMES / rec.SAMPLE_RATE_HZ
    time_cut = cut.edges.time[m_cut.idx]
    twin_s = time_cut + np.where(time_cut > gap_s, lost / rec.SAMPLE_RATE_HZ, 0.0)  # its uncut time
    common, i_uncut, i_cut = np.intersect1d(m_uncut.jdx, m_cut.jdx, return_indices=True)
    assert len(common) == len(m_cut.jdx)  # no exact edge matched twice
    # the same edge times but for one common offset: the AC coupling learned from the cut capture's quiet
    # samples (pintime.locate.coupling.highpass) differs a little, and so does the template's origin (23 ps,
    # 0.14 σ) and, on a few edges, its shape (its modulator ripple: 4 ps, 0.02 σ, on one edge of 14757)
    d = uncut.edges.time[m_uncut.idx[i_uncut]] - twin_s[i_cut]
    assert abs(np.median(d)) < 0.2 * np.median(cut.edges.sigma)
    assert np.allclose(d - np.median(d), 0.0, rtol=0, atol=0.05 * np.median(cut.edges.sigma))
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
