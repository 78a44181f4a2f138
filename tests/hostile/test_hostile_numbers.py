"""Numbers a hostile capture could make wrong with exit status 0 (issue 41, items 1-4): a reference from
another take, lost audio where no check looked, an ELF of another program. Each ends in a refusal, a
reported discontinuity, or a true statement of what was not checked."""

from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.avr.symbols import firmware_revision
from pintime.edges import MEASUREMENT_CHANNEL, REFERENCE_CHANNEL, Edges
from pintime.locate.stream.capture_edges import gap_guard_s, locate_capture
from pintime.lost_audio import reconcile
from pintime.soundcard import model as sc
from pintime.soundcard.formats import with_format
from pintime.soundcard.synth import synthesize
from support import BUILD, CAPTURES, EXAMPLE_WAV, ROOT, SIM, assert_fails, make_build, run_cli

TAKES = ("default", "wide-filter", "noisy")  # the committed 192 kHz stereo takes, three cards' clocks
F_CPU = 1_000_000
SHORT_S = 3.3  # RUN, the calibration train, the first Table 1 frames and 6 reference edges


@pytest.fixture(scope="module")
def takes() -> dict[str, tuple[np.ndarray, int]]:
    """The first SHORT_S of each committed stereo take."""
    out = {}
    for take in TAKES:
        audio, rate = sf.read(CAPTURES / f"table1-{take}.wav", dtype="int32", frames=int(SHORT_S * 192000))
        out[take] = audio, rate
    return out


# --- 1: a reference channel from another recording --------------------------------------------------------


@pytest.mark.parametrize(("pin", "reference"), list(itertools.permutations(TAKES, 2)))
def test_a_reference_from_another_take_is_refused(tmp_path, takes, pin, reference):
    """The pin of one take with the 1 s reference of another: two card clocks (tens of ppm apart), so
    the calibration train, timed on the pin's own clock, disagrees with the reference by as much. Before,
    every number was off by that many ppm with exit 0 (Differential 1000× 100.0071 ± 0.0001 µs)."""
    (a, rate), (b, _) = takes[pin], takes[reference]
    wav = tmp_path / f"{pin}-pin-{reference}-reference.wav"
    sf.write(wav, np.column_stack([a[:, 0], b[:, 1]]), rate, subtype="PCM_24")
    line = assert_fails(["analyze", wav], wav)
    assert "calibration train" in line and "another take" in line and "--reference none" in line


def test_the_same_take_short_is_not_refused(tmp_path, takes):
    """The check's other side: each take's own two channels agree (to 0.01 ppm), short as above."""
    for take in TAKES:
        audio, rate = takes[take]
        wav = tmp_path / f"{take}.wav"
        sf.write(wav, audio, rate, subtype="PCM_24")
        code, printed, lines = run_cli(["analyze", wav])
        checked = re.search(r"^calibration: +train after calibration [+-]\d+\.\d{4} ± \d+\.\d{4} ppm",
                            printed, re.M)
        assert code == 0 and checked, (printed, lines)


# --- 2: lost audio where the reference does not look ----------------------------------------------------


def _cut(edges: Edges, at_s: float, lost_s: float) -> Edges:
    """``edges`` as if the audio in [at_s, at_s + lost_s) were lost: those in it gone, later ones early."""
    keep = (edges.time < at_s) | (edges.time >= at_s + lost_s)
    time = np.where(edges.time >= at_s, edges.time - lost_s, edges.time)[keep]
    return Edges(time, edges.channel[keep], edges.polarity[keep], edges.sigma[keep], edges.unit_s,
                 edges.source)


@pytest.fixture(scope="module")
def located():
    """The example capture's located edges, its sample rate and the locator's guard."""
    found = locate_capture(EXAMPLE_WAV, None, False, 0, "default", steps=False)
    rate = found.info.samplerate_hz
    return found.edges, rate, gap_guard_s(rate, found.template)


def _cut_positions(edges: Edges) -> np.ndarray:
    """Midpoints of measurement-channel intervals: those before the first reference edge and after the
    last (where only the frames look) but every 5th, every 60th between."""
    pin, ref = edges.on(MEASUREMENT_CHANNEL).time, edges.on(REFERENCE_CHANNEL).time
    mid = 0.5 * (pin[1:] + pin[:-1])
    outside = (mid < ref[0]) | (mid > ref[-1])
    return np.concatenate([mid[outside][::5], mid[~outside][::60]])


@pytest.mark.parametrize("lost_samples", [1, 3])
def test_a_cut_anywhere_is_found_or_said_unchecked(located, lost_samples):
    """Cuts at every position of a short capture (3 or 1 samples lost, edges moved as a cut moves them):
    each is found, placed around the cut, or lies where the report says nothing was checked. Before, a cut
    after the last reference edge in a technique of 2 repetitions went unreported, with the claim that
    99.3 % of the capture was checked."""
    edges, rate, guard = located
    missed = []
    for at in _cut_positions(edges):
        kept, lost = reconcile(_cut(edges, at, lost_samples / rate), np.zeros(0), rate, guard)
        found = any(g.start_s - guard <= at <= g.end_s + guard for g in lost.detected)
        unchecked = any(a <= at <= b for a, b in lost.unchecked_s)
        if not (found or unchecked):
            missed.append(float(at))
    assert not missed, f"{len(missed)} cuts neither found nor said unchecked, first at {missed[:5]} s"


def test_the_example_capture_says_what_it_did_not_check(located):
    """Its coverage is a true statement: the stretch before the first frame's train is unchecked, and the
    fraction checked is what the unchecked spans leave."""
    edges, rate, guard = located
    _, lost = reconcile(edges, np.zeros(0), rate, guard)
    unchecked = float(np.sum(lost.unchecked_s[:, 1] - lost.unchecked_s[:, 0]))
    assert len(lost.unchecked_s) and 0 < unchecked < 0.05 * lost.span_s
    assert lost.checked_fraction == pytest.approx(1 - unchecked / lost.span_s)


def test_a_cut_after_the_last_reference_edge_is_reported(tmp_path):
    """The issue's case: 3 samples deleted at 6.112 s of the example capture, no sidecar, in Differential
    1000×'s second repetition after the last reference edge. Reported, and the frame it cut is not used."""
    audio, rate = sf.read(EXAMPLE_WAV, dtype="int32")
    at = int(6.112 * rate)
    wav = tmp_path / "cut.wav"
    sf.write(wav, np.concatenate([audio[:at], audio[at + 3:]]), rate, subtype="PCM_24")
    code, printed, lines = run_cli(["analyze", wav])
    assert code == 0 and _cut_found(printed, rate), printed
    differential = next(line for line in printed.splitlines() if line.startswith("Differential 1000×"))
    assert differential.split()[-1] == "1", differential  # one repetition left, the cut one dropped
    warning = next(line for line in printed.splitlines() if line.startswith("warning:"))
    code, verbose, _ = run_cli(["analyze", wav, "-v"])  # the same row with how it was checked
    assert code == 0 and "(checked: " not in warning
    assert any(line.startswith(warning) and "(checked: the reference's phase and the frames' timing" in line
               for line in verbose.splitlines()), verbose
    code, quiet, _ = run_cli(["analyze", wav, "-q"])  # the tables alone
    assert code == 0 and quiet.startswith("Technique") and "warning:" not in quiet
    code, _, lines = run_cli(["edges", wav, "--csv", tmp_path / "edges.csv"])
    assert code == 0 and _cut_found("\n".join(lines), rate), lines


def _cut_found(printed: str, rate_hz: int) -> bool:
    """The 3-sample cut at 6.112 s reported, its size within a tenth of a sample of the samples lost."""
    found = re.search(r"audio found in the data[^+]*: \+([0-9.]+) µs.* between 6\.11", printed)
    return bool(found) and abs(float(found[1]) * 1e-6 - 3 / rate_hz) < 0.1 / rate_hz


# --- 3: a periodic signal with one lost sample -------------------------------------------------------------


def test_a_periodic_signal_with_one_lost_sample(tmp_path):
    """A 1 kHz square wave, 3 s, mono at 192 kHz, one sample deleted at 1.5 s: one phase jump, there, and
    the edges before it where the clean file has them (within their σ). Before, the period was folded
    across the jump: edges before any cut moved 142 ns RMS (max 1 µs), σ 14 ns claimed."""
    source = tmp_path / "square.edges.csv"
    source.write_text("cycle,channel,level\n" + "".join(f"{1000 + k * 500},0,{1 - k % 2}\n"
                                                        for k in range(6000)))
    card = with_format(sc.PROFILES["default"], 192000, 24, 1)
    clean = synthesize(source, tmp_path / "clean.wav", card, 1, F_CPU).wav_path
    audio, rate = sf.read(clean, dtype="int32")
    at = int(1.5 * rate) + 17
    cut = tmp_path / "cut.wav"
    sf.write(cut, np.concatenate([audio[:at], audio[at + 1:]]), rate, subtype="PCM_24")
    rows = {}
    for name, wav in (("clean", clean), ("cut", cut)):
        code, _, lines = run_cli(["edges", wav, "--csv", tmp_path / f"{name}.csv"])
        assert code == 0, lines
        rows[name] = np.loadtxt(tmp_path / f"{name}.csv", delimiter=",", skiprows=1), lines
    said = next(line for line in rows["cut"][1] if "periodic signal's phase" in line)
    assert "jumps 1 time(s)" in said and "between 1.49" in said, said
    before = rows["clean"][0][:, 0] < at / rate - 0.01
    moved = rows["cut"][0][:np.count_nonzero(before), 0] - rows["clean"][0][before, 0]
    sigma = rows["cut"][0][:np.count_nonzero(before), 3]
    assert np.sqrt(np.mean(moved ** 2)) < 3 * np.median(sigma) and np.median(sigma) < 1e-9, (moved, sigma)


# --- 4: --elf of another program ------------------------------------------------------------------------


@pytest.mark.usefixtures("make_sim")
@pytest.mark.parametrize(("capture", "elf", "said"), [
    ("user_example", "micro", "was made by firmware"),
    ("micro", "user_example", "was made by firmware"),
])
def test_the_elf_of_another_program_is_refused(capture, elf, said):
    """Each program carries its own revision (a checksum of its sources), which the RUN frame sends. Before,
    every program of a build carried one, and a user_example capture with micro's ELF named its functions
    micro_f_void … and flagged a false "✗ OUTSIDE the expectation"."""
    line = assert_fails(["analyze", SIM / f"{capture}.edges.csv", "--elf", BUILD / "firmware" / f"{elf}.elf"],
                        f"{elf}.elf")
    assert said in line


@pytest.mark.usefixtures("make_sim")
def test_the_elf_of_a_user_program_with_one_function_changed_is_refused(tmp_path):
    """Two user programs with the same functions, counts and M, one function's body changed: their sources
    differ, so do their revisions (before, they shared one and the ELF passed)."""
    source = (ROOT / "firmware/user/user_example.c").read_text()
    changed = tmp_path / "changed.c"
    opening = "void mac16(void)\n{"
    changed.write_text(source.replace(opening, opening + '\n\t__asm__ volatile("nop");', 1))
    assert changed.read_text() != source
    build = make_build(tmp_path / "build", "user", USER_SRC=changed)
    elf = build / "firmware" / "user.elf"
    line = assert_fails(["analyze", SIM / "user_example.edges.csv", "--elf", elf], elf)
    assert "was made by firmware" in line


@pytest.mark.usefixtures("make_sim")
def test_the_elf_of_another_user_program_is_refused(tmp_path):
    """Two user programs of one revision (the same sources, another USER_M) and program id: the ELF's
    registered groups (their pulses M) must be those the capture's USER frames measure."""
    build = make_build(tmp_path / "build", "user", USER_SRC=ROOT / "firmware/user/user_example.c", USER_M=10)
    elf = build / "firmware" / "user.elf"
    line = assert_fails(["analyze", SIM / "user_example.edges.csv", "--elf", elf], elf)
    assert "registers no function 0 of 20 pulses" in line


@pytest.mark.usefixtures("make_sim")
def test_the_elf_of_a_user_program_with_one_function_more_is_refused(tmp_path):
    """Its groups 0-2 are the capture's, a fourth the whole run (its END frame decoded) never measures. Its
    sources differ, so its revision does (refused for that); with the capture's revision patched in (as
    builds without the Makefile share revision 0) the groups tell."""
    source = (ROOT / "firmware/user/user_example.c").read_text()
    more = tmp_path / "more.c"
    registered = "PINTIME_FUNCTIONS(mac16, crc8_step, crc8_branchy"
    more.write_text(source.replace(registered + ");", "void extra(void) {}\n" + registered + ", extra);"))
    build = make_build(tmp_path / "build", "user", USER_SRC=more)
    elf = build / "firmware" / "user.elf"
    capture = SIM / "user_example.edges.csv"
    assert "was made by firmware" in assert_fails(["analyze", capture, "--elf", elf], elf)
    patched = tmp_path / "patched.elf"
    own = firmware_revision(elf).to_bytes(4, "little")
    theirs = firmware_revision(BUILD / "firmware" / "user_example.elf").to_bytes(4, "little")
    assert elf.read_bytes().count(own) == 1
    patched.write_bytes(elf.read_bytes().replace(own, theirs))
    line = assert_fails(["analyze", SIM / "user_example.edges.csv", "--elf", patched], patched)
    assert "registers function 3 (extra), which the whole run" in line


# --- 12: the truth's relative ELF ------------------------------------------------------------------------


@pytest.mark.usefixtures("make_sim")
def test_validate_finds_the_truths_elf_from_another_directory(tmp_path, monkeypatch):
    """The truth names its ELF relative to where the harness ran (the repository root): found from the
    truth's folder upwards, not from the current directory."""
    monkeypatch.chdir(tmp_path)
    code, printed, lines = run_cli(["validate", SIM / "user_example.edges.csv",
                                    "--truth", SIM / "user_example.json"])
    assert code == 0 and "mac16" in printed, lines


@pytest.mark.usefixtures("make_sim")
def test_validate_with_a_copied_truth_names_the_program_mismatch(tmp_path, monkeypatch):
    """A micro truth beside a user_example capture, from elsewhere: the program mismatch is what is
    said, not a missing ELF."""
    for name in ("micro.json", "micro.edges.csv"):
        shutil.copy(SIM / name, tmp_path / name)
    (tmp_path / "build").symlink_to(BUILD)  # the truth's relative ELF, beside it as in the repository
    monkeypatch.chdir(Path("/"))
    line = assert_fails(["validate", SIM / "user_example.edges.csv", "--truth", tmp_path / "micro.json"],
                        "user_example.edges.csv")
    said = ("differs from the truth's micro", "program micro", "made by firmware")
    assert any(words in line for words in said)
