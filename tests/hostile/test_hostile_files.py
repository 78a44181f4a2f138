"""Hostile inputs for every reader: each ends in one ``pintime: error:`` line naming the file and exit 2.

Every case is built from a real file (the simavr run in build/sim, a capture in captures/) damaged one way:
empty, truncated, random bytes, another format under the name, wrong types and absurd values in the
fields, JSON of the wrong shape, a directory instead of a file. A small seeded mutational fuzz loop then
checks that damaged files only ever succeed or fail cleanly. Last, every command that writes files refuses
to write over what it reads, and leaves it byte-identical.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from pintime.avr.cfg import cfg_from_description
from pintime.errors import PintimeError
from pintime.files import read_json
from pintime.table2 import visits
from support import BUILD, GUARD_S, SIM, assert_fails, deadline, run_cli
from support import EXAMPLE_WAV as CAPTURE_WAV

EDGES_HEADER = b"cycle,channel,level\n"

pytestmark = pytest.mark.usefixtures("make_sim")


# ---------------------------------------------------------------------------------------------------------
# hostile files, each built from a real one


def _lines(path: Path, n: int) -> bytes:
    with open(path, "rb") as f:
        return b"".join(f.readline() for _ in range(n))


def _wav_with_data_length(data: bytes, length: int) -> bytes:
    """The same WAV whose ``data`` chunk header claims ``length`` bytes."""
    at = data.find(b"data")
    return data[:at + 4] + struct.pack("<I", length) + data[at + 8:]


@pytest.fixture(scope="module")
def real(tmp_path_factory) -> dict[str, bytes]:
    """Small real files: an edge-list head, a VCD head, JSONs, and a 0.25 s stereo WAV from a capture."""
    d = tmp_path_factory.mktemp("real")
    frames, rate = sf.read(CAPTURE_WAV, frames=48000, dtype="int32")
    sf.write(d / "short.wav", frames, rate, subtype="PCM_24")
    second, _ = sf.read(CAPTURE_WAV, frames=192000, dtype="int32")  # past detection's first 0.2 s
    sf.write(d / "swapped.wav", second[:, ::-1], rate, subtype="PCM_24")
    return {
        "csv": _lines(SIM / "table1.edges.csv", 400),
        "vcd": _lines(SIM / "table1.vcd", 800),
        "json": (SIM / "table1.json").read_bytes(),
        "blocks": (SIM / "table2.blocks.json").read_bytes(),
        "visits": _lines(SIM / "table2.visits.csv", 50),
        "wav": (d / "short.wav").read_bytes(),
        "swapped": (d / "swapped.wav").read_bytes(),
    }


def _edge_row(text: str) -> Callable[[dict[str, bytes]], bytes]:
    return lambda r: EDGES_HEADER + text.encode() + b"\n"


CAPTURES: dict[str, Callable[[dict[str, bytes]], bytes]] = {
    "empty.csv": lambda r: b"",
    "header-only.csv": lambda r: EDGES_HEADER,
    "blank-lines.csv": lambda r: EDGES_HEADER + b"\n\n\n",
    "cut-mid-line.csv": lambda r: r["csv"][:1003],
    "cut-mid-header.csv": lambda r: r["csv"][:11],
    "cut-10-lines.csv": lambda r: b"\n".join(r["csv"].split(b"\n")[:10]),
    "random.csv": lambda r: EDGES_HEADER + np.random.default_rng(1).bytes(4000),
    "non-utf8.csv": lambda r: EDGES_HEADER + b"8697,0,1\n\xff\xfe\xfd,0,0\n",
    "bom.csv": lambda r: b"\xef\xbb\xbf" + r["csv"],
    "json-named.csv": lambda r: r["json"],
    "string.csv": _edge_row("abc,0,1"),
    "float.csv": _edge_row("8697.5,0,1"),
    "negative.csv": _edge_row("-5,0,1"),
    "nan.csv": _edge_row("nan,0,1"),
    "inf.csv": _edge_row("inf,0,1"),
    "1e308.csv": _edge_row("1e308,0,1"),
    "2pow64.csv": _edge_row(f"{2**64},0,1"),
    "1e30-cycle.csv": _edge_row("1" + "0" * 30 + ",0,1"),
    "int64-max.csv": _edge_row(f"1,1,1\n2,1,0\n3,1,1\n{2**63 - 1},0,1"),
    "2pow53-plus-1.csv": _edge_row(f"1,1,1\n2,1,0\n3,1,1\n{2**53 + 1},0,1"),
    "channel-2.csv": _edge_row("8697,2,1"),
    "channel-9.csv": _edge_row("8697,9,1"),
    "level-7.csv": _edge_row("8697,0,7"),
    "short-row.csv": _edge_row("8697,0,1\n9697,0"),
    "long-row.csv": _edge_row("8697,0,1,5"),
    "backwards.csv": _edge_row("9697,0,1\n8697,0,0"),
    "same-level.csv": _edge_row("8697,0,1\n9697,0,1"),
    "few-edges.csv": lambda r: r["csv"][:r["csv"].find(b"\n", 500) + 1],
    "empty.vcd": lambda r: b"",
    "cut-in-header.vcd": lambda r: r["vcd"][:100],
    "header-only.vcd": lambda r: r["vcd"][:r["vcd"].find(b"#0")],
    "random.vcd": lambda r: b"$" + np.random.default_rng(2).bytes(4000),
    "non-utf8.vcd": lambda r: r["vcd"][:400] + b"\xff\xfe\n" + r["vcd"][400:],
    "unknown-var.vcd": lambda r: r["vcd"].replace(b"$var wire 1 \"", b"$var gadget 1 \"", 1),
    "bad-timescale.vcd": lambda r: r["vcd"].replace(b"1 ps", b"1 fortnight", 1),
    "no-timescale.vcd": lambda r: r["vcd"].replace(b"$timescale 1 ps $end", b"", 1),
    # neither a pin of FORMAT.md §1 nor a role (measurement_…, reference_…) the harness names pins by
    "no-pins.vcd": lambda r: r["vcd"].replace(b"measurement_PA0", b"gpio_PC7").replace(b"reference_PB5",
                                                                                      b"gpio_PC6"),
    "huge-time.vcd": lambda r: r["vcd"] + b"#" + b"9" * 30 + b"\n1!\n",
    "backwards.vcd": lambda r: r["vcd"] + b"#5\n1!\n#6\n0!\n",
    "wav-named.csv": lambda r: r["wav"][:20000],
    "cut-20-bytes.wav": lambda r: r["wav"][:20],
    "cut-header.wav": lambda r: r["wav"][:44],
    "cut-half.wav": lambda r: r["wav"][:len(r["wav"]) // 2],
    "billions-of-frames.wav": lambda r: _wav_with_data_length(r["wav"], 0xFFFFFFF0),
    "random-after-header.wav": lambda r: r["wav"][:44] + np.random.default_rng(3).bytes(len(r["wav"]) - 44),
    "riff-random.wav": lambda r: b"RIFF\x00\x10\x00\x00WAVE" + np.random.default_rng(4).bytes(3000),
    "csv-named.wav": lambda r: r["csv"],
    "swapped-channels.wav": lambda r: r["swapped"],
}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, real) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("hostile")
    paths = {}
    for name, build in CAPTURES.items():
        paths[name] = d / name
        paths[name].write_bytes(build(real))
    (d / "directory.csv").mkdir()
    paths["directory.csv"] = d / "directory.csv"
    paths["missing.csv"] = d / "missing.csv"
    return paths


CAPTURE_NAMES = [*CAPTURES, "directory.csv", "missing.csv"]


@pytest.mark.parametrize("name", CAPTURE_NAMES)
def test_analyze_hostile_capture(hostile, name):
    assert_fails(["analyze", hostile[name]], hostile[name])


@pytest.mark.parametrize("name", CAPTURE_NAMES)
def test_edges_hostile_capture(hostile, name, tmp_path):
    out = tmp_path / "edges.csv"
    assert_fails(["edges", hostile[name], "--csv", out], hostile[name])
    assert not out.exists(), "a failed command left a partial output"


# a few real edges are a valid (short) edge list to render
SHORT_BUT_VALID = ("cut-10-lines.csv", "few-edges.csv")


@pytest.mark.parametrize("name", [n for n in CAPTURE_NAMES
                                  if n.endswith(".csv") and n not in SHORT_BUT_VALID])
def test_synth_hostile_edge_list(hostile, name, tmp_path):
    out = tmp_path / "out.wav"
    assert_fails(["synth", hostile[name], "-o", out, "--f-cpu-hz", "1e6"], hostile[name])
    assert not out.exists()


@pytest.mark.parametrize("name", ["empty.csv", "random.csv", "cut-half.wav", "unknown-var.vcd",
                                  "directory.csv", "missing.csv", "string.csv"])
def test_validate_hostile_capture(hostile, name):
    assert_fails(["validate", hostile[name], "--truth", SIM / "table1.json"], hostile[name])


def test_errors_reach_a_real_stderr_as_one_line(hostile):
    """Outside pytest's capture too: a warning printed by numpy (here loadtxt's) would be a second line."""
    proc = subprocess.run([sys.executable, "-m", "pintime.cli", "analyze", str(hostile["header-only.csv"])],
                          check=False, capture_output=True, text=True, timeout=GUARD_S)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert proc.stderr.startswith(f"pintime: error: {hostile['header-only.csv']}"), proc.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_capture(hostile, tmp_path):
    path = tmp_path / "locked.edges.csv"
    path.write_bytes(EDGES_HEADER + b"8697,0,1\n")
    path.chmod(0)
    assert_fails(["analyze", path], path)


@pytest.mark.parametrize("subtype, value", [("FLOAT", np.nan), ("DOUBLE", 1e308)])
def test_wav_with_non_finite_samples(tmp_path, subtype, value):
    """NaN samples reached the locators, which reported NaN noise and CRLB and lost edges, exit 0."""
    frames, rate = sf.read(CAPTURE_WAV, frames=192000, dtype="float64")
    frames[150000:150010] = value  # after the first 0.2 s, where edge detection starts
    path = tmp_path / "damaged.wav"
    sf.write(path, frames, rate, subtype=subtype)
    assert "frame 150000" in assert_fails(["edges", path, "--csv", tmp_path / "e.csv"], path)


@pytest.mark.parametrize("sidecar", [b"", b"[" * 100000, b"[]", b'{"source_edges": 5}', b"\xff"])
def test_hostile_wav_sidecar_is_ignored(tmp_path, sidecar):
    """A WAV's sidecar is informational: damaged, it is passed over and the missing visits are named."""
    (tmp_path / "c.wav").write_bytes(b"RIFF")
    (tmp_path / "c.json").write_bytes(sidecar)
    with pytest.raises(PintimeError, match="no visits file"):
        visits.locate(tmp_path / "c.wav", None)


def test_edge_list_beyond_float_precision(tmp_path):
    """A real run shifted past 2**53 cycles: float64 times would round odd cycles and change every estimate
    by up to a cycle, silently; refused instead."""
    path = tmp_path / "late.edges.csv"
    with open(SIM / "table1.edges.csv", "rb") as src, open(path, "wb") as dst:
        dst.write(src.readline())
        for line in src:
            cycle, rest = line.split(b",", 1)
            dst.write(b"%d,%s" % (int(cycle) + 2**53, rest))
    assert "2**53" in assert_fails(["analyze", path], path)


# ---------------------------------------------------------------------------------------------------------
# JSON inputs: the simavr truth (validate), the run summary beside an edge list (synth), validate results
# (report)

JSONS: dict[str, bytes] = {
    "empty": b"",
    "not-json": b"cycle,channel,level\n1,0,1\n",
    "non-utf8": b'{"f_cpu_hz": "\xff\xfe"}',
    "list": b"[1000000, 1, \"table1\"]",
    "string": b"\"table1\"",
    "null": b"null",
    "empty-object": b"{}",
    "deep": b"[" * 100000 + b"]" * 100000,
}
TRUTHS: dict[str, dict] = {  # a real truth with one field damaged
    "revision-string": {"revision": "abc"},
    "revision-float": {"revision": 3.5},
    "revision-null": {"revision": None},
    "f_cpu-string": {"f_cpu_hz": "1 MHz"},
    "f_cpu-negative": {"f_cpu_hz": -1000000},
    "f_cpu-nan": {"f_cpu_hz": float("nan")},
    "f_cpu-inf": {"f_cpu_hz": float("inf")},
    "f_cpu-2pow64": {"f_cpu_hz": 2**64},
    "program-list": {"program": ["table1"]},
    "program-unknown": {"program": "table9"},
}


def _truth_dir(tmp_path: Path, text: bytes) -> Path:
    """``t.json`` with the real exact edge list beside it (a link: the edges are not under test)."""
    (tmp_path / "t.edges.csv").symlink_to(SIM / "table1.edges.csv")
    (tmp_path / "t.json").write_bytes(text)
    return tmp_path / "t.json"


@pytest.mark.parametrize("name", JSONS)
def test_validate_hostile_truth_shape(tmp_path, name):
    truth = _truth_dir(tmp_path, JSONS[name])
    assert_fails(["validate", SIM / "table1.edges.csv", "--truth", truth], truth)


@pytest.mark.parametrize("name", TRUTHS)
def test_validate_hostile_truth_fields(tmp_path, name):
    data = json.loads((SIM / "table1.json").read_text()) | TRUTHS[name]
    truth = _truth_dir(tmp_path, json.dumps(data).encode())
    assert_fails(["validate", SIM / "table1.edges.csv", "--truth", truth], truth)


def test_validate_truth_without_edge_list(tmp_path):
    (tmp_path / "t.json").write_bytes((SIM / "table1.json").read_bytes())
    assert_fails(["validate", SIM / "table1.edges.csv", "--truth", tmp_path / "t.json"], tmp_path / "t.json")


def test_validate_truth_is_a_directory(tmp_path):
    (tmp_path / "t.json").mkdir()
    assert_fails(["validate", SIM / "table1.edges.csv", "--truth", tmp_path / "t.json"], tmp_path / "t.json")


SIM_JSONS = {name: text for name, text in JSONS.items() if name != "empty-object"} | {
    name: json.dumps({"f_cpu_hz": value}).encode() for name, value in [
        ("f_cpu-string", "1 MHz"), ("f_cpu-bool", True), ("f_cpu-zero", 0), ("f_cpu-negative", -1),
        ("f_cpu-nan", float("nan")), ("f_cpu-inf", float("inf")), ("f_cpu-tiny", 1e-300),
        ("f_cpu-list", [1000000]), ("f_cpu-2pow64-string", str(2**64))]}


@pytest.mark.parametrize("name", SIM_JSONS)
def test_synth_hostile_sim_json(tmp_path, real, name):
    """The run summary beside the edge list gives F_CPU: any damage is named."""
    (tmp_path / "r.edges.csv").write_bytes(real["csv"])
    (tmp_path / "r.json").write_bytes(SIM_JSONS[name])
    assert_fails(["synth", tmp_path / "r.edges.csv", "-o", tmp_path / "out.wav"], tmp_path / "r.")
    assert not (tmp_path / "out.wav").exists()


@pytest.mark.parametrize("option, value", [("--duration-s", "1e308"), ("--duration-s", "1e300"),
                                           ("--duration-s", "nan"), ("--f-cpu-hz", "inf"),
                                           ("--seed", "1.5"), ("--seed", "-1")])
def test_synth_hostile_numbers(tmp_path, real, option, value):
    (tmp_path / "r.edges.csv").write_bytes(real["csv"])
    code, _, lines = run_cli(["synth", tmp_path / "r.edges.csv", "-o", tmp_path / "o.wav",
                              "--f-cpu-hz", "1e6", option, value])
    assert code == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), lines
    assert len(lines[0]) < 200, lines  # not a 300-digit number
    assert not (tmp_path / "o.wav").exists()


def _validate_result() -> dict:
    """A real-shaped `pintime validate --json` result (of the exact edges: no WAV needed)."""
    return {"capture": "x.wav", "method": "template", "truth": "t.json", "edges": {}, "table1": [
        {"label": "Direct", "technique": "direct", "n": 1, "mean_us": 100.0, "std_us": 1.0, "truth_us": 100.0,
         "paper_mean_us": 100.0, "paper_std_us": 1.0, "count": 10}],
        "clock": {"ppm": 1.0, "ppm_sigma": 0.1}, "run": {"program": "table1", "f_cpu_hz": 1000000,
                                                         "revision": "da6f3a6a"},
        "frames": {"decoded": 1, "rejected": 0, "incomplete": 0, "missing": 0}}


REPORT_FIELDS: dict[str, Callable[[dict], None]] = {
    "no-capture": lambda r: r.pop("capture"),
    "capture-number": lambda r: r.update(capture=5),
    "table1-dict": lambda r: r.update(table1={"Direct": 1}),
    "table1-row-missing-mean": lambda r: r["table1"][0].pop("mean_us"),
    "mean-string": lambda r: r["table1"][0].update(mean_us="fast"),
    "clock-list": lambda r: r.update(clock=[1.0]),
    "no-run": lambda r: r.pop("run"),
    "edges-list": lambda r: r.update(edges=[1, 2]),
    "edges-row-missing": lambda r: r.update(edges={"template": {"rms_ns": 1.0}}),
    "table2-string": lambda r: r.update(table2="BB0"),
}


@pytest.mark.parametrize("name", JSONS)
def test_report_hostile_shape(tmp_path, name):
    (tmp_path / "r.json").write_bytes(JSONS[name])
    assert_fails(["report", tmp_path / "r.json", "-o", tmp_path / "report.md"], tmp_path / "r.json")
    assert not (tmp_path / "report.md").exists()


def test_report_of_the_real_shape_works(tmp_path):
    """The damaged results below are damaged: the undamaged one makes a report."""
    (tmp_path / "r.json").write_text(json.dumps(_validate_result()))
    assert run_cli(["report", tmp_path / "r.json", "-o", tmp_path / "report.md"])[0] == 0


@pytest.mark.parametrize("name", REPORT_FIELDS)
def test_report_hostile_fields(tmp_path, name):
    result = _validate_result()
    REPORT_FIELDS[name](result)
    (tmp_path / "ok.json").write_text(json.dumps(_validate_result()))
    (tmp_path / "r.json").write_text(json.dumps(result))
    assert_fails(["report", tmp_path / "ok.json", tmp_path / "r.json", "-o", tmp_path / "report.md"],
                 tmp_path / "r.json")
    assert not (tmp_path / "report.md").exists()


def test_report_result_is_a_directory(tmp_path):
    (tmp_path / "r.json").mkdir()
    assert_fails(["report", tmp_path / "r.json", "-o", tmp_path / "report.md"], tmp_path / "r.json")


# ---------------------------------------------------------------------------------------------------------
# table2 sidecars: PREFIX.visits.csv with PREFIX.json, PREFIX.blocks.json and PREFIX.edges.csv beside it


def _code(i: int, field: int, value: float) -> Callable[[dict], None]:
    return lambda d: d["code"][i].__setitem__(field, value)


def _blocks(edit: Callable[[dict], None]) -> bytes:
    data = json.loads((SIM / "table2.blocks.json").read_text())
    edit(data)
    return json.dumps(data).encode()


SIDECARS: dict[str, tuple[str, Callable[[dict[str, bytes]], bytes]]] = {
    "visits-empty": ("visits.csv", lambda r: b""),
    "visits-header-only": ("visits.csv", lambda r: r["visits"].split(b"\n")[0] + b"\n"),
    "visits-cut-mid-line": ("visits.csv", lambda r: r["visits"][:len(r["visits"]) // 2]),
    "visits-random": ("visits.csv", lambda r: np.random.default_rng(5).bytes(3000)),
    "visits-non-utf8": ("visits.csv", lambda r: r["visits"][:300] + b"\xff" + r["visits"][300:]),
    "visits-bad-address": ("visits.csv", lambda r: r["visits"].replace(b"count_0x514", b"count_0xZZ", 1)),
    "visits-string": ("visits.csv", lambda r: r["visits"].replace(b"\n0,", b"\nzero,", 1)),
    "visits-2pow64": ("visits.csv", lambda r: r["visits"].replace(b"\n0,", b"\n%d," % 2**64, 1)),
    "visits-negative-pulse": ("visits.csv", lambda r: r["visits"].replace(b"\n0,", b"\n-3,", 1)),
    "visits-csv-of-edges": ("visits.csv", lambda r: r["csv"]),
    "blocks-empty": ("blocks.json", lambda r: b""),
    "blocks-list": ("blocks.json", lambda r: b"[]"),
    "blocks-no-code": ("blocks.json", lambda r: _blocks(lambda d: d.pop("code"))),
    "blocks-code-short": ("blocks.json", lambda r: _blocks(lambda d: d["code"][0].pop())),
    "blocks-code-inf": ("blocks.json", lambda r: _blocks(_code(0, 0, float("inf")))),
    "blocks-code-nan": ("blocks.json", lambda r: _blocks(_code(0, 1, float("nan")))),
    "blocks-code-1e308": ("blocks.json", lambda r: _blocks(_code(0, 0, 1e308))),
    "blocks-code-empty": ("blocks.json", lambda r: _blocks(lambda d: d.__setitem__("code", []))),
    "blocks-edited-cost": ("blocks.json",
                           lambda r: _blocks(lambda d: d["blocks"][0].__setitem__("cycles_min", 1))),
    "run-empty": ("json", lambda r: b""),
    "run-list": ("json", lambda r: b"[1000000]"),
    "run-no-f_cpu": ("json", lambda r: b'{"revision": 1}'),
    "run-f_cpu-inf": ("json", lambda r: b'{"revision": 1, "f_cpu_hz": Infinity}'),
    "run-f_cpu-nan": ("json", lambda r: b'{"revision": 1, "f_cpu_hz": NaN}'),
    "run-f_cpu-zero": ("json", lambda r: b'{"revision": 1, "f_cpu_hz": 0}'),
    "run-f_cpu-negative": ("json", lambda r: b'{"revision": 1, "f_cpu_hz": -1000000}'),
    "run-revision-string": ("json", lambda r: b'{"revision": "abc", "f_cpu_hz": 1000000}'),
    "edges-empty": ("edges.csv", lambda r: b""),
    "edges-random": ("edges.csv", lambda r: EDGES_HEADER + np.random.default_rng(6).bytes(3000)),
    "edges-cut": ("edges.csv", lambda r: r["csv"][:1003]),
}


@pytest.mark.parametrize("name", SIDECARS)
def test_hostile_table2_sidecars(tmp_path, real, name):
    """``analyze --visits``: the visits file and the three files read beside it (links to the real run)."""
    which, build = SIDECARS[name]
    for part in ("visits.csv", "blocks.json", "json", "edges.csv"):
        path = tmp_path / f"v.{part}"
        if part == which:
            path.write_bytes(build(real))
        else:
            path.symlink_to(SIM / f"table2.{part}")
    capture = tmp_path / "capture.edges.csv"  # a table2 capture too short to solve: the sidecars fail first
    capture.write_bytes(_lines(SIM / "table2.edges.csv", 60000))
    line = assert_fails(["analyze", capture, "--visits", tmp_path / "v.visits.csv"], tmp_path / "v.")
    assert str(tmp_path / f"v.{which}") in line


def test_visits_file_missing(tmp_path):
    capture = tmp_path / "capture.edges.csv"
    capture.write_bytes(_lines(SIM / "table2.edges.csv", 60000))
    assert_fails(["analyze", capture, "--visits", tmp_path / "v.visits.csv"], tmp_path / "v.visits.csv")


# ---------------------------------------------------------------------------------------------------------
# cfg: the ELF is read by avr-binutils


@pytest.mark.parametrize("content", [b"", b"\x7fELF" + bytes(60), b"not an elf\n", None])
def test_cfg_hostile_elf(tmp_path, real, content):
    elf = tmp_path / "f.elf"
    if content is None:
        elf.mkdir()
    else:
        elf.write_bytes(content)
    assert_fails(["cfg", elf], elf)


@pytest.mark.parametrize("content", [b"", b"\x7fELF" + bytes(60), b"not an elf\n", None, "missing"])
def test_analyze_user_hostile_elf(tmp_path, content):
    """``analyze --elf`` names a user program's functions from its ELF: read before the capture."""
    elf = tmp_path / "f.elf"
    if content is None:
        elf.mkdir()
    elif content != "missing":
        elf.write_bytes(content)
    assert_fails(["analyze", SIM / "user_example.edges.csv", "--elf", elf], elf)


# ---------------------------------------------------------------------------------------------------------
# a seeded mutational fuzz loop over small real files


def _mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """One of: flip bytes, cut, duplicate a span, delete a span, insert random bytes."""
    b = bytearray(data)
    kind = rng.integers(5)
    at = int(rng.integers(len(b)))
    span = int(rng.integers(1, 64))
    if kind == 0:
        for i in rng.integers(len(b), size=span // 8 + 1):
            b[i] ^= 1 << int(rng.integers(8))
    elif kind == 1:
        del b[at:]
    elif kind == 2:
        b[at:at] = b[at:at + span]
    elif kind == 3:
        del b[at:at + span]
    else:
        b[at:at] = rng.bytes(span)
    return bytes(b)


def _fuzz(tmp_path: Path, seed_data: bytes, suffix: str, count: int, argv: Callable[[Path], list]) -> None:
    rng = np.random.default_rng(sum(seed_data[:64]) + count)
    outcomes = {0: 0, 2: 0}
    for k in range(count):
        path = tmp_path / f"m{k}{suffix}"
        path.write_bytes(_mutate(seed_data, rng))
        code, _, lines = run_cli(argv(path))
        assert code in (0, 2), (path, code, lines)
        if code == 2:
            assert len(lines) == 1 and lines[0].startswith("pintime: error: "), (path, lines)
        outcomes[code] += 1
        path.unlink()
    assert outcomes[2] > 0  # the mutations did reach the readers' checks


def test_fuzz_edge_list(tmp_path, real):
    _fuzz(tmp_path, real["csv"], ".csv", 200, lambda p: ["analyze", p])


def test_fuzz_vcd(tmp_path, real):
    _fuzz(tmp_path, real["vcd"], ".vcd", 200, lambda p: ["edges", p, "--csv", p.with_suffix(".out")])


def test_fuzz_wav_header(tmp_path, real):
    """Mutations of the WAV's first 200 bytes (its RIFF chunk headers); the audio after them intact."""
    head, rest = real["wav"][:200], real["wav"][200:]

    def argv(p: Path) -> list:
        p.write_bytes(p.read_bytes() + rest)
        return ["edges", p, "--csv", p.with_suffix(".out")]
    _fuzz(tmp_path, head, ".wav", 40, argv)


def test_fuzz_validate_result(tmp_path):
    _fuzz(tmp_path, json.dumps(_validate_result(), indent=1).encode(), ".json", 200,
          lambda p: ["report", p, "-o", p.with_suffix(".md")])


def test_fuzz_cfg_json(tmp_path):
    """The CFG JSON of a table2 run (read beside its visits): only a clean PintimeError or the same CFG."""
    original = (SIM / "table2.blocks.json").read_bytes()
    rng = np.random.default_rng(7)
    path = tmp_path / "v.blocks.json"
    failures = 0
    for _ in range(200):
        path.write_bytes(_mutate(original, rng))
        try:
            with deadline(GUARD_S):
                cfg_from_description(read_json(path, "CFG JSON"), str(path))
        except PintimeError as err:
            assert "\n" not in str(err) and str(path) in str(err), err
            failures += 1
    assert failures > 0


# ---------------------------------------------------------------------------------------------------------
# nothing the user gave is ever overwritten


def _inputs(tmp_path: Path) -> dict[str, Path]:
    """Private copies of a table1 run: capture, truth + its edges, and a validate result."""
    (tmp_path / "t.edges.csv").write_bytes((SIM / "table1.edges.csv").read_bytes())
    (tmp_path / "t.json").write_bytes((SIM / "table1.json").read_bytes())
    (tmp_path / "r.json").write_text(json.dumps(_validate_result()))
    (tmp_path / "link").symlink_to(tmp_path / "t.edges.csv")
    (tmp_path / "truth-link").symlink_to(tmp_path / "t.json")
    os.link(tmp_path / "t.edges.csv", tmp_path / "hard-link")
    os.link(tmp_path / "t.edges.csv", tmp_path / "hard.wav")
    return {"edges": tmp_path / "t.edges.csv", "truth": tmp_path / "t.json", "result": tmp_path / "r.json"}


OVERWRITES: dict[str, Callable[[dict[str, Path]], list]] = {
    "analyze --json capture": lambda p: ["analyze", p["edges"], "--json", p["edges"]],
    "analyze --json symlink": lambda p: ["analyze", p["edges"], "--json", p["edges"].parent / "link"],
    "analyze --json relative": lambda p: ["analyze", p["edges"], "--json",
                                          p["edges"].parent / ".." / p["edges"].parent.name / "t.edges.csv"],
    "analyze --json hard link": lambda p: ["analyze", p["edges"], "--json", p["edges"].parent / "hard-link"],
    "analyze --plots capture": lambda p: ["analyze", p["edges"], "--plots", p["edges"]],
    "validate --json capture": lambda p: ["validate", p["edges"], "--truth", p["truth"],
                                          "--json", p["edges"]],
    "validate --json truth": lambda p: ["validate", p["edges"], "--truth", p["truth"], "--json", p["truth"]],
    "validate --json truth link": lambda p: ["validate", p["edges"], "--truth", p["truth"], "--json",
                                             p["edges"].parent / "truth-link"],
    "validate --plots truth": lambda p: ["validate", p["edges"], "--truth", p["truth"],
                                         "--plots", p["truth"]],
    "edges --csv capture": lambda p: ["edges", p["edges"], "--csv", p["edges"].parent / "link"],
    "synth -o edges": lambda p: ["synth", p["edges"], "-o", p["edges"]],
    "synth -o link": lambda p: ["synth", p["edges"], "-o", p["edges"].parent / "link"],
    "synth -o hard link": lambda p: ["synth", p["edges"], "-o", p["edges"].parent / "hard.wav"],
    "synth sidecar = run json": lambda p: ["synth", p["edges"], "-o", p["truth"].with_suffix(".wav")],
    "report -o result": lambda p: ["report", p["result"], "-o", p["result"]],
    "report -o result link": lambda p: ["report", p["result"], "-o", p["edges"].parent / "r-link"],
}


@pytest.mark.parametrize("name", OVERWRITES)
def test_never_overwrites_an_input(tmp_path, name):
    paths = _inputs(tmp_path)
    (tmp_path / "r-link").symlink_to(paths["result"])
    before = {k: p.read_bytes() for k, p in paths.items()}
    code, _, lines = run_cli(OVERWRITES[name](paths))
    assert code == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), (code, lines)
    assert {k: p.read_bytes() for k, p in paths.items()} == before


@pytest.mark.parametrize("where", ["folder.wav", "file/x.wav", "sidecar-folder.wav"])
def test_synth_unwritable_output(tmp_path, real, where):
    """Found out before rendering: no WAV is left behind without its sidecar."""
    (tmp_path / "r.edges.csv").write_bytes(real["csv"])
    (tmp_path / "folder.wav").mkdir()
    (tmp_path / "sidecar-folder.json").mkdir()
    (tmp_path / "file").write_text("x")
    out = tmp_path / where
    assert_fails(["synth", tmp_path / "r.edges.csv", "-o", out, "--f-cpu-hz", "1e6"], out)
    assert not (tmp_path / "sidecar-folder.wav").exists()


@pytest.mark.parametrize("output", ["v.visits.csv", "v.json", "v.blocks.json", "v.edges.csv"])
def test_analyze_never_overwrites_table2_sidecars(tmp_path, output):
    """The files read beside a table2 capture (found by name, not given) are inputs too."""
    capture = tmp_path / "v.edges.csv"
    capture.write_bytes(_lines(SIM / "table2.edges.csv", 100))
    for part in ("visits.csv", "json", "blocks.json"):
        (tmp_path / f"v.{part}").write_bytes(_lines(SIM / f"table2.{part}", 100))
    before = {p: p.read_bytes() for p in tmp_path.iterdir()}
    code, _, lines = run_cli(["analyze", capture, "--json", tmp_path / output])
    assert code == 2 and len(lines) == 1 and "refusing to overwrite" in lines[0], (code, lines)
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before


@pytest.mark.parametrize("option", ["--json", "--watch"])
def test_cfg_never_overwrites_the_elf(tmp_path, option):
    elf = tmp_path / "table2.elf"
    source = BUILD / "firmware" / "table2.elf"
    elf.write_bytes(source.read_bytes())
    code, _, lines = run_cli(["cfg", elf, option, elf])
    assert code == 2 and len(lines) == 1 and lines[0].startswith("pintime: error: "), (code, lines)
    assert elf.read_bytes() == source.read_bytes()


@pytest.mark.parametrize("option, where", [("--json", "dir"), ("--json", "file/o.json"),
                                           ("--json", "no/such/o.json"), ("--plots", "file")])
def test_unwritable_output_is_one_line(tmp_path, option, where):
    """An output that cannot be written is named, after the work, without a traceback."""
    capture = tmp_path / "c.edges.csv"
    capture.write_bytes((SIM / "table1.edges.csv").read_bytes())
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    out = tmp_path / where
    code, _, lines = run_cli(["analyze", capture, option, out])
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"pintime: error: {out}"), (code, lines)
