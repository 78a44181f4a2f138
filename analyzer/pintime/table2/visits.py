"""Per-round block visits of a table2 run (simavr harness ``--watch``), matched to a capture's pulses.

The harness run that produced the exact edges ``PREFIX.edges.csv`` also writes ``PREFIX.visits.csv``
(firmware/table2/TABLE2.md §4): one row per pulse in which a watched address ran — the pulse's number ``p``
(its edges are the measurement pin's edges 2p and 2p + 1), its rising-edge cycle, its exact width in cycles,
then per watched address its executions and cycles inside the pulse. ``PREFIX.blocks.json`` is the CFG
(``pintime cfg --json``) and ``PREFIX.json`` the run summary (F_CPU, firmware revision).

Pulses are labelled (measurement, round) by decoding the TABLE2 frames of the exact edges; a capture's
pulses get the same labels from its own frames, so the two are joined on the label, whatever edges or
frames the capture lost. As in the paper (§5.1), the counts come from a simulated run of the same inputs;
only the times come from the capture.

The pulses of TABLE2CUT frames (a cut copy of the function run until it first reaches its cut block,
firmware/table2/TABLE2.md §6) are labelled (measurement, pulse i of the frame) the same way; their visits are
the blocks run before the cut (the harness maps the copies' addresses to the function's), and each copy's
patched word, watched on its own, tells whether the cut was reached.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

import numpy as np

from pintime.avr.cfg import Cfg, cfg_from_description, visits_from_histograms, watch_addresses
from pintime.avr.cutcopies import CutCopies, copies_from_description
from pintime.capture.edgelist import read_edge_list
from pintime.edges import MEASUREMENT_CHANNEL
from pintime.errors import PintimeError
from pintime.estimate.table1 import pulse_widths_us
from pintime.files import read_json, refuse_special
from pintime.frames import Frame, decode_frames

SUFFIX = ".visits.csv"
_FIXED = ["pulse", "rise_cycle", "width_cycles"]
CHUNK_ROWS = 8192  # visits rows read at a time


@dataclass(frozen=True)
class CutRuns:
    """Pulses of TABLE2CUT frames: per pulse its cut block, whether the cut was reached, the exits taken
    before it (all of the call's when not reached) and its exact width; ``key`` (simulation) or
    ``measurement`` and ``width_us`` (a capture's)."""

    key: np.ndarray  # measurement · 65536 + pulse index in its frame
    cut: np.ndarray  # block number
    reached: np.ndarray  # bool
    exit_counts: np.ndarray  # pulses × exits
    width_cycles: np.ndarray
    width_us: np.ndarray | None = None  # measured, MCU µs (a capture's pulses only)

    @property
    def measurement(self) -> np.ndarray:
        return self.key // 65536

    def take(self, where: np.ndarray) -> CutRuns:
        return CutRuns(self.key[where], self.cut[where], self.reached[where], self.exit_counts[where],
                       self.width_cycles[where], None if self.width_us is None else self.width_us[where])


@dataclass(frozen=True)
class Rounds:
    """Every round used: its measurement, its pulse width from the capture and its simavr visits."""

    measurement: np.ndarray  # int per round
    width_us: np.ndarray  # measured pulse width, MCU µs
    block_counts: np.ndarray  # rounds × blocks
    exit_counts: np.ndarray  # rounds × exits
    width_cycles: np.ndarray  # exact simavr pulse width (truth)
    cuts: CutRuns | None = None  # the capture's cut pulses (None: the run has no cut copies)


@dataclass(frozen=True)
class SimRounds:
    """The simavr run's rounds, labelled and sorted by ``key = measurement · 65536 + round``."""

    cfg: Cfg
    f_cpu_hz: int
    revision: int
    key: np.ndarray
    block_counts: np.ndarray  # rounds × blocks
    exit_counts: np.ndarray  # rounds × exits
    width_cycles: np.ndarray
    path: Path
    cuts: CutRuns | None  # None: the build has no cut copies


def _key(measurement: np.ndarray, round_: np.ndarray) -> np.ndarray:
    return np.asarray(measurement, dtype=np.int64) * 65536 + np.asarray(round_, dtype=np.int64)


def locate(capture: Path, explicit: str | Path | None) -> Path:
    """The visits file: ``explicit``, else ``PREFIX.visits.csv`` beside the capture's edges (an edge list or
    VCD ``PREFIX.edges.csv``/``PREFIX.vcd``; a synthesized WAV: its sidecar's ``source_edges``)."""
    if explicit is not None:
        path = Path(explicit)
        if not path.exists():
            raise PintimeError(f"{path}: visits file not found")
        return path
    sources = [capture]
    sidecar = capture.with_suffix(".json")
    if capture.suffix.lower() == ".wav" and sidecar.exists():
        refuse_special(sidecar, "a capture's sidecar")  # a FIFO waits for a writer: read, it hangs
        try:
            sources.append(Path(json.loads(sidecar.read_text(encoding="utf-8"))["source_edges"]))
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            pass
    candidates = []
    for s in sources:
        stem = s.name
        for suffix in (".edges.csv", ".vcd", ".wav", ".csv"):
            stem = stem.removesuffix(suffix)
        candidates.append(s.with_name(stem + SUFFIX))
    for c in candidates:
        if c.exists():
            return c
    raise PintimeError(f"{capture}: no visits file ({', '.join(map(str, candidates))}); give --visits FILE "
                       "(written by the simavr harness with --watch: `make sim`)")


def run_files(visits_path: Path) -> tuple[Path, Path, Path]:
    """(run summary JSON, CFG JSON, exact edge list) of the harness run that wrote ``PREFIX.visits.csv``."""
    if not visits_path.name.endswith(SUFFIX):
        raise PintimeError(f"{visits_path}: a visits file is named PREFIX{SUFFIX}")
    prefix = visits_path.name.removesuffix(SUFFIX)
    return (visits_path.with_name(prefix + ".json"), visits_path.with_name(prefix + ".blocks.json"),
            visits_path.with_name(prefix + ".edges.csv"))


Chunk = tuple[np.ndarray, int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def visits_chunks(path: Path) -> Iterator[Chunk]:
    """A visits file CHUNK_ROWS rows at a time: (watched pcs, the file's rows, and of the chunk: pulse,
    width_cycles, counts rows × pcs, cycles rows × pcs). A 984 s run's 118 500 rows × 187 fields had been
    read at once (177 MB as int64) beside what was built from them."""
    try:
        with open(path, encoding="ascii") as f:
            header = f.readline().strip().split(",")
            pcs = _watched(header, path)
            n_rows = sum(1 for line in f if line.strip())
            if n_rows == 0:
                raise PintimeError(f"{path}: visits file has no rows")
            f.seek(0)
            f.readline()
            done = 0
            while done < n_rows:
                rows = _chunk(f, len(header), path)
                done += len(rows)
                yield pcs, n_rows, rows[:, 0], rows[:, 2], rows[:, 3::2], rows[:, 4::2]
    except OSError as err:
        raise PintimeError(f"{path}: cannot read visits ({err.strerror or err})") from None
    except (ValueError, UnicodeDecodeError) as err:
        raise PintimeError(f"{path}: malformed visits file ({err})") from None


def _watched(header: list[str], path: Path) -> np.ndarray:
    """The watched PCs a visits file's header names (count_PC, cycles_PC pairs after the fixed fields)."""
    pairs = header[len(_FIXED):]
    if header[:len(_FIXED)] != _FIXED or not pairs or len(pairs) % 2:
        raise PintimeError(f"{path}: not a visits file (header {','.join(_FIXED)},count_PC,cycles_PC…)")
    count_cols, cycle_cols = pairs[0::2], pairs[1::2]
    addresses = [c.removeprefix("count_") for c in count_cols]
    if (any(not c.startswith("count_") for c in count_cols)
            or [c.removeprefix("cycles_") for c in cycle_cols] != addresses):
        raise PintimeError(f"{path}: visits header columns must alternate count_PC, cycles_PC")
    try:
        return np.array([int(a, 16) for a in addresses], dtype=np.int64)
    except ValueError:
        raise PintimeError(f"{path}: visits header has a non-hex address") from None


def _chunk(f: TextIO, n_fields: int, path: Path) -> np.ndarray:
    """The next CHUNK_ROWS rows (or fewer, at the end) of an open visits file."""
    with warnings.catch_warnings():  # a line loadtxt skips (a comment) ends the rows early: said below
        warnings.filterwarnings("ignore", "loadtxt: input contained no data")
        rows = np.loadtxt(f, delimiter=",", dtype=np.int64, ndmin=2, max_rows=CHUNK_ROWS)
    if len(rows) == 0:
        raise PintimeError(f"{path}: malformed visits file (a line that is no row)")
    if rows.shape[1] != n_fields:
        raise PintimeError(f"{path}: visits rows have {rows.shape[1]} fields, the header {n_fields}")
    return rows


def _label_pulses(edges_path: Path, f_cpu_hz: int) -> tuple[dict[int, int], dict[int, int], np.ndarray]:
    """Pulse number → (measurement, round) key from the TABLE2 frames of the exact edges, pulse number →
    (measurement, pulse index) key from its TABLE2CUT frames, and the measurement pin's exact edge cycles."""
    meas = read_edge_list(edges_path).on(MEASUREMENT_CHANNEL)
    decode = decode_frames(meas.time * 1e6 / f_cpu_hz, meas.polarity, start_us=0.0)
    if decode.inverted or (len(meas.polarity) and meas.polarity[0] < 0):
        raise PintimeError(f"{edges_path}: the measurement pin does not start low")
    labels: dict[int, int] = {}
    for frame in decode.of_kind("table2"):
        rises = frame.group[0::2]
        keys = _key(np.full(len(rises), frame.fields["measurement"]),
                    frame.fields["first_round"] + np.arange(len(rises)))
        labels.update(zip((rises // 2).tolist(), keys.tolist(), strict=True))
    cut_labels: dict[int, int] = {}
    for frame in decode.of_kind("table2cut"):
        rises = frame.group[0::2]
        keys = _key(np.full(len(rises), frame.fields["measurement"]), np.arange(len(rises)))
        cut_labels.update(zip((rises // 2).tolist(), keys.tolist(), strict=True))
    return labels, cut_labels, meas.time


def load_sim_rounds(visits_path: Path) -> SimRounds:
    """Read a table2 harness run (visits, CFG JSON, run JSON, exact edges) and label its rounds. The visits
    are read a chunk at a time, each row put straight where its key sorts it (:func:`visits_chunks`)."""
    run_path, blocks_path, edges_path = run_files(visits_path)
    run = read_json(run_path, "simavr run summary")
    description = read_json(blocks_path, "CFG JSON")
    cfg = cfg_from_description(description, str(blocks_path))
    copies = copies_from_description(description, cfg, str(blocks_path))
    f_cpu_hz, revision = run.get("f_cpu_hz"), run.get("revision")
    if not (type(f_cpu_hz) is int and f_cpu_hz > 0 and type(revision) is int):
        raise PintimeError(f"{run_path}: run summary needs integers f_cpu_hz (> 0) and revision")
    labels, cut_labels, edge_cycles = _label_pulses(edges_path, f_cpu_hz)
    if cut_labels and copies is None:
        raise PintimeError(f"{visits_path}: TABLE2CUT pulses but {blocks_path} describes no cut copies")
    # each pulse's row in the rounds and in the cut pulses, by key
    row_of = {p: i for i, p in enumerate(sorted(labels, key=lambda p: (labels[p], p)))}
    cut_row_of = {p: i for i, p in enumerate(sorted(cut_labels, key=lambda p: (cut_labels[p], p)))}
    # per-round counts fit in 32 bits (a round visits a block a few hundred times at most): half the memory
    blocks = np.zeros((len(labels), len(cfg.blocks)), np.int32)
    exits, width = np.zeros((len(labels), len(cfg.exits)), np.int32), np.zeros(len(labels), np.int64)
    cut_exits = np.zeros((len(cut_labels), len(cfg.exits)), np.int64)
    cut_width = np.zeros(len(cut_labels), np.int64)
    patched = np.zeros((len(cut_labels), 0 if copies is None else len(copies.cfg.blocks)), np.int64)
    seen: set[int] = set()
    for pcs, n_rows, pulse, w, counts, cycles in visits_chunks(visits_path):
        if not seen:  # the header's, once
            _check_addresses(visits_path, cfg, copies, pcs)
        _check_pulses(visits_path, n_rows, pulse, w, labels, cut_labels, edge_cycles)
        twice = seen.intersection(pulse.tolist()) or len(set(pulse.tolist())) < len(pulse)
        if twice:
            raise PintimeError(f"{visits_path}: a pulse's visits listed twice")
        seen.update(pulse.tolist())
        b, e = visits_from_histograms(cfg, pcs, counts, cycles)
        full = np.array([p in labels for p in pulse.tolist()], dtype=bool)
        rows = [row_of[p] for p in pulse[full].tolist()]
        blocks[rows], exits[rows], width[rows] = b[full], e[full], w[full]
        rows = [cut_row_of[p] for p in pulse[~full].tolist()]
        cut_exits[rows], cut_width[rows] = e[~full], w[~full]
        if copies is not None:
            column = {int(pc): k for k, pc in enumerate(pcs.tolist())}
            patched[rows] = counts[~full][:, [column[copies.patched(c)] for c in range(patched.shape[1])]]
    if np.any(patched.sum(axis=1) > 1):
        raise PintimeError(f"{visits_path}: a TABLE2CUT pulse reached more than one cut")
    cuts = None if copies is None else CutRuns(
        np.array(sorted(cut_labels.values()), np.int64), np.argmax(patched, axis=1),
        patched.sum(axis=1) == 1, cut_exits, cut_width)
    return SimRounds(cfg, f_cpu_hz, revision, np.array(sorted(labels.values()), np.int64), blocks, exits,
                     width, visits_path, cuts)


def _check_addresses(path: Path, cfg: Cfg, copies: CutCopies | None, pcs: np.ndarray) -> None:
    """The visits' watched addresses ``pcs`` checked: every address of the function, and of the cut
    copies' patched words, among them."""
    missing = sorted(set(watch_addresses(cfg)) - set(pcs.tolist()))
    if missing:
        raise PintimeError(f"{path}: does not watch {len(missing)} of {cfg.function}'s addresses "
                           f"(e.g. {missing[0]:#x}): visits from another build?")
    missing = [] if copies is None else sorted(set(copies.watch()) - set(pcs.tolist()))
    if missing:
        raise PintimeError(f"{path}: does not watch the cut copies' patched words (e.g. {missing[0]:#x})")


def _check_pulses(path: Path, n_rows: int, pulse: np.ndarray, width: np.ndarray, labels: dict[int, int],
                  cut_labels: dict[int, int], edge_cycles: np.ndarray) -> None:
    """A chunk of visits checked: every pulse in a TABLE2 or TABLE2CUT frame of the edges and as wide as
    there, and as many pulses in all as those frames hold."""
    unlabelled = [p for p in pulse.tolist() if p not in labels and p not in cut_labels]
    if unlabelled or len(labels) + len(cut_labels) != n_rows:
        raise PintimeError(f"{path}: {n_rows} visited pulses, {len(labels) + len(cut_labels)} "
                           f"TABLE2 and TABLE2CUT pulses in the edges"
                           f"{'' if not unlabelled else f' (pulse {unlabelled[0]} in no frame)'}")
    if 2 * pulse.max() + 1 >= len(edge_cycles) or np.any(
            edge_cycles[2 * pulse + 1] - edge_cycles[2 * pulse] != width):
        raise PintimeError(f"{path}: pulse widths differ from the edge list's")


def match(sim: SimRounds, frames: list[Frame], time: np.ndarray, us_per_unit: float) -> Rounds:
    """The capture's TABLE2 pulses (widths in MCU µs) joined with the simulated rounds of the same labels."""
    measurement, keys = [], []
    for frame in (f for f in frames if f.kind == "table2"):
        n = frame.pulses
        m, first = frame.fields["measurement"], frame.fields["first_round"]
        measurement.append(np.full(n, m))
        keys.append(_key(np.full(n, m), first + np.arange(n)))
    if not keys:
        raise PintimeError("no TABLE2 frame decoded in the capture")
    key = np.concatenate(keys)
    if len(np.unique(key)) != len(key):
        raise PintimeError("the capture holds a TABLE2 round twice")
    where = np.minimum(np.searchsorted(sim.key, key), len(sim.key) - 1)
    absent = sim.key[where] != key
    if absent.any():
        k = int(key[absent][0])
        raise PintimeError(f"{sim.path}: lacks measurement {k // 65536} round {k % 65536} of the capture "
                           f"({int(absent.sum())} rounds; visits from another run?)")
    rounds = Rounds(np.concatenate(measurement), np.zeros(0), sim.block_counts[where], sim.exit_counts[where],
                    sim.width_cycles[where], _match_cuts(sim, frames))
    return with_widths(rounds, frames, time, us_per_unit)


def with_widths(rounds: Rounds, frames: list[Frame], time: np.ndarray, us_per_unit: float) -> Rounds:
    """``rounds`` (:func:`match`'s of these ``frames``) with the widths of their pulses at edge times
    ``time``: the estimations of one capture (the result, and each draw of a shared error) differ only in
    them."""
    def widths(kind: str) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [pulse_widths_us(time, f.group, us_per_unit)
                                               for f in frames if f.kind == kind])

    cuts = None if rounds.cuts is None else replace(rounds.cuts, width_us=widths("table2cut"))
    return replace(rounds, width_us=widths("table2"), cuts=cuts)


FrameKey = tuple[str, int, int]  # a frame's kind and its group's edges: which frame of the capture it is


def frame_key(frame: Frame) -> FrameKey:
    return frame.kind, frame.group_lo, frame.group_hi


def rounds_of(rounds: Rounds, frames: list[Frame], part: set[FrameKey]) -> Rounds:
    """The rounds :func:`match` joins to the frames ``part`` of ``frames`` (whose rounds are ``rounds``):
    their rows, as match puts each frame's pulses in turn (widths: :func:`with_widths`)."""
    def rows(kind: str) -> np.ndarray:
        spans, start = [np.zeros(0, dtype=np.int64)], 0
        for frame in (f for f in frames if f.kind == kind):
            if frame_key(frame) in part:
                spans.append(np.arange(start, start + frame.pulses))
            start += frame.pulses
        return np.concatenate(spans)

    table2 = rows("table2")
    return Rounds(rounds.measurement[table2], np.zeros(0), rounds.block_counts[table2],
                  rounds.exit_counts[table2], rounds.width_cycles[table2],
                  None if rounds.cuts is None else rounds.cuts.take(rows("table2cut")))


def _match_cuts(sim: SimRounds, frames: list[Frame]) -> CutRuns | None:
    """The capture's TABLE2CUT pulses joined with the simulated ones of the same labels (None when the
    simulation has no cut copies; no frame decoded gives none); their widths come from :func:`with_widths`."""
    if sim.cuts is None:
        return None
    keys = [np.zeros(0, dtype=np.int64)]
    for frame in (f for f in frames if f.kind == "table2cut"):
        n = frame.pulses
        keys.append(_key(np.full(n, frame.fields["measurement"]), np.arange(n)))
    key = np.concatenate(keys)
    if len(np.unique(key)) != len(key):
        raise PintimeError("the capture holds a TABLE2CUT frame twice")
    where = np.minimum(np.searchsorted(sim.cuts.key, key), max(len(sim.cuts.key) - 1, 0))
    if len(key) and (len(sim.cuts.key) == 0 or np.any(sim.cuts.key[where] != key)):
        raise PintimeError(f"{sim.path}: lacks TABLE2CUT pulses of the capture (visits from another run?)")
    return sim.cuts.take(where)
