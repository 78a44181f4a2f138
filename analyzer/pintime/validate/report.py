"""One Markdown report from ``pintime validate`` JSON files.

Each input is one capture analysed with one edge method and compared with the simavr truth. The report puts
the paper's Table 1 and Table 2 beside the truth and every capture's estimates, then the per-edge accuracy
of each method against the Cramér–Rao bound, the clock calibration and the frame counts, then the figures.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pintime.avr.expect import range_text
from pintime.errors import PintimeError
from pintime.files import read_json, write_text
from pintime.table2.table import PAPER_TABLE2

Run = dict[str, Any]


def load_runs(paths: list[Path]) -> list[Run]:
    """The validate JSONs, each with ``name`` = capture stem · method."""
    runs = []
    for path in paths:
        run = read_json(path, "validation result")
        if "truth" not in run or "method" not in run:
            raise PintimeError(f"{path}: not a `pintime validate --json` result")
        try:  # every field the report reads, of the type it reads it as
            run["name"] = f"{Path(run['capture']).stem} · {run['method']}"
            _sections([run])
        except _SHAPE_ERRORS as err:
            raise PintimeError(f"{path}: not a `pintime validate --json` result ({err!r})") from None
        runs.append(run)
    return runs


# what a field of the wrong type or a missing key raises while a section is rendered
_SHAPE_ERRORS = (KeyError, IndexError, TypeError, ValueError, AttributeError)


def _sections(runs: list[Run]) -> list[str]:
    lines = []
    for section in (table1_section, table2_section, user_section, micro_section, kernel_section,
                    edges_section, capture_section):
        lines += section(runs)
    return lines


def _mean_std(e: dict[str, Any]) -> str:
    std = "—" if e.get("std_us") is None else f"{e['std_us']:.3g}"
    return f"{e['mean_us']:.4f} ({std})"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
            + ["| " + " | ".join(r) + " |" for r in rows])


def table1_section(runs: list[Run]) -> list[str]:
    """Table 1: paper, simavr truth and each capture's mean (std over repetitions), µs."""
    runs = [r for r in runs if r.get("table1")]
    if not runs:
        return []
    header = ["Technique", "paper", "simavr truth"] + [r["name"] for r in runs]
    rows = []
    for i, row in enumerate(runs[0]["table1"]):
        paper = f"{row['paper_mean_us']:.3f} ({row['paper_std_us']:g})" if row.get("paper_mean_us") else "—"
        rows.append([row["label"], paper, f"{row['truth_us']:.4f}"]
                    + [_mean_std(r["table1"][i]) for r in runs])
    for name, label in (("t_e", "Overdetermined T_e"), ("t_i", "Overdetermined T_i"),
                        ("epsilon", "Overdetermined ε")):
        if all("overdetermined" in r for r in runs):
            rows.append([label, "—", f"{runs[0]['overdetermined'][name]['truth_us']:.4f}"]
                        + [_mean_std(r["overdetermined"][name]) for r in runs])
    return (["## Table 1 — the 100-cycle reference routine", "",
             "Execution time in µs of the MCU clock, mean over 100 repetitions (std over repetitions). "
             "Truth: the same estimator on simavr's exact edges. On a real or modelled card, ε also holds "
             "the pin's fall–rise delay difference, so Direct and Executing differ from the simulator's "
             "by that much; line fit and differential cancel it.", ""]
            + _table(header, rows) + [""])


def _expected(row: dict[str, Any]) -> str:
    """The listing's expectation of a row (cycles), or — when the result has none."""
    return range_text(row.get("expected_min_cycles"), row.get("expected_max_cycles"))


def _flag(row: dict[str, Any]) -> str:
    """` ✗` where the row's 95 % CI lies wholly outside its expectation."""
    return " ✗" if row.get("outside_expectation") else ""


def table2_section(runs: list[Run]) -> list[str]:
    """Table 2 (block model and exit model): truth and each capture's mean ± 95 % CI, µs."""
    runs = [r for r in runs if r.get("table2")]
    if not runs:
        return []
    out = ["## Table 2 — adpcm_coder basic blocks", "",
           "Each unknown is the named combination of blocks (or CFG edges) its count column stands for; "
           "mean ± 95 % CI over the measurements, µs. Truth: the blocks' cycle costs from the CFG, checked "
           "against simavr on every pulse. Expected (cycles): what the listing predicts — each round's pulse "
           "width from the datasheet cost of the exits it took, plus the pulse's rising `out` and CALL, "
           "solved as the measurement is; ✗ = the 95 % CI lies wholly outside it.", ""]
    for key, title in (("table2", "Basic block"), ("table2_exits", "CFG edge (exit model)")):
        header = [title, "stands for", "truth", "expected (cycles)"] + [r["name"] for r in runs]
        rows = [[row["label"], row["formula"], f"{row['truth_us']:.4f}", _expected(row)]
                + [f"{r[key][i]['mean_us']:.4f} ± {r[key][i]['ci95_half_us']:.2g}{_flag(r[key][i])}"
                   for r in runs]
                for i, row in enumerate(runs[0][key])]
        out += _table(header, rows) + [""]
    resolved = [r for r in runs if "columns" in r.get("table2_resolved", {})]
    if resolved:
        out += ["Resolved by the cut measurements (paper §5.1, firmware/table2/TABLE2.md §6): every CFG exit "
                "alone, in cycles ± 95 % CI in µs; ✗ = the truth lies outside the CI.", ""]
        header = ["exit", "truth (cycles)"] + [r["name"] for r in resolved] + ["how"]
        rows = [[c["name"], str(c["truth_cycles"])]
                + [f"{r['table2_resolved']['columns'][i]['mean_cycles']:.4f} ± "
                   f"{r['table2_resolved']['columns'][i]['ci95_half_us']:.2g}"
                   f"{' ✗' if r['table2_resolved']['columns'][i].get('within_ci95') is False else ''}"
                   for r in resolved] + [c["how"]]
                for i, c in enumerate(resolved[0]["table2_resolved"]["columns"])]
        out += _table(header, rows) + [""]
    cover = [(r["name"], r["table2_coverage"]) for r in runs if "table2_coverage" in r]
    out += [f"- {name}: {c['all']['outside']} of {c['all']['total']} (ε-free unknowns and resolved exits) "
            f"outside their 95 % CI; chance predicts {c['all']['expected']:.1f} ± "
            f"{c['all']['expected_sd']:.1f}. "
            f"Outside their joint 95 % CI (each ×{c['joint']['factor']:.2f}, Bonferroni over the "
            f"{c['joint']['total']}: all inside in ≥ 95 % of captures): {c['joint']['outside']}."
            for name, c in cover]
    out += [""] if cover else []
    paper = "; ".join(f"{n} {m:g} ± {c:g}" for n, m, c in PAPER_TABLE2)
    return out + [f"The paper's Table 2 (its compiler's blocks, µs): {paper}.", ""]


def user_section(runs: list[Run]) -> list[str]:
    """User programs: each function's time per call, truth and each capture's mean (std), in cycles."""
    runs = [r for r in runs if r.get("user")]
    if not runs:
        return []
    header = ["Function", "expected (listing)", "simavr truth"] + [r["name"] for r in runs]
    truth = [row["time"]["truth_cycles"] for row in runs[0]["user"]]
    rows = [[row["name"], _expected(row), "—" if truth[i] is None else f"{truth[i]:.4f}"]
            + [f"{r['user'][i]['time']['mean_cycles']:.4f} ({r['user'][i]['time']['std_cycles']:.2g})"
               f"{_flag(r['user'][i])}" for r in runs]
            for i, row in enumerate(runs[0]["user"])]
    return (["## Your functions — time per call", "",
             "Line fitting 1×–M× (paper §4): the slope's mean over the repetitions (std), in MCU cycles, "
             "CALL and RET included. Truth: the same fit on simavr's exact edges. Expected: the cycles the "
             "listing gives per call (exact for straight-line code, min–max over paths where the code "
             "branches, loops by their trip count); ✗ = the 95 % CI lies wholly outside it.", ""]
            + _table(header, rows) + [""])


def kernel_section(runs: list[Run]) -> list[str]:
    """The kernel's figures: simavr truth and each capture's mean ± 95 % CI, in cycles (overheads also in %
    of the tick); ✗ = the truth lies outside the CI."""
    runs = [r for r in runs if r.get("kernel")]
    if not runs:
        return []
    names = [row["name"] for row in max((r["kernel"] for r in runs), key=len)]
    header = ["Figure", "simavr truth (cycles)"] + [r["name"] for r in runs]
    rows = []
    for name in names:
        found = [next((row for row in r["kernel"] if row["name"] == name), None) for r in runs]
        truth = next(row for row in found if row is not None)
        cells = []
        for row in found:
            if row is None:
                cells.append("—")
                continue
            half = "—" if row["ci95_half_cycles"] is None else f"{row['ci95_half_cycles']:.2g}"
            pct = "" if "percent" not in row else f" = {row['percent']:.3f} %"
            miss = " ✗" if row["within_ci95"] is False else ""
            cells.append(f"{row['mean_cycles']:.4f} ± {half}{pct}{miss}")
        truth_pct = "" if truth.get("truth_percent") is None else f" = {truth['truth_percent']:.3f} %"
        rows.append([name, f"{truth['truth_cycles']:.3f}{truth_pct}"] + cells)
    cover = [f"- {r['name']}: {c['outside']} of {c['total']} figures outside their 95 % CI; chance "
             f"predicts {c['expected']:.1f} ± {c['expected_sd']:.1f}."
             for r in runs if (c := r.get("kernel_coverage"))]
    return (["## Kernel — scheduler, run-queue insertion, context switch", "",
             "A preemptive round-robin kernel (firmware/kernel/KERNEL.md) with N = 1, 2, 4, 8, 16 "
             "counting threads, a tick every 7993 µs. Scheduler = the tick interrupt (context save, walk of "
             "the thread list, insertions, restore), fitted against N per repetition: fixed part + "
             "per-thread part. "
             "Overhead = tick interrupt + the threads' context switches per tick. Mean ± 95 % CI over the "
             "repetitions, in MCU cycles; truth: the same figures from simavr's exact edges. A capture with "
             "the measurement pin and the clock reference only (a stereo card) carries the scheduler's "
             "figures alone.", ""]
            + _table(header, rows) + [""] + cover + ([""] if cover else []))


def micro_section(runs: list[Run]) -> list[str]:
    """Micro-benchmarks: datasheet, simavr truth and each capture's mean ± 95 % CI, in cycles; — where a
    capture has no estimate (its frames rejected: e.g. pulses too short for its edge locator)."""
    runs = [r for r in runs if r.get("micro")]
    if not runs:
        return []
    header = ["Benchmark", "datasheet", "simavr truth"] + [r["name"] for r in runs]
    by_index = [{row["index"]: row for row in r["micro"]} for r in runs]
    every = {row["index"]: row for r in reversed(runs) for row in r["micro"]}
    rows = []
    for index, row in sorted(every.items()):
        datasheet = "—" if row["datasheet_cycles"] is None else str(row["datasheet_cycles"])
        if row.get("simavr_differs_from_datasheet"):
            datasheet += " ¹"
        rows.append([row["name"], datasheet, f"{row['truth_cycles']:.3f}"]
                    + [_micro_cell(rows_of_run.get(index)) for rows_of_run in by_index])
    differs = sorted({row["simavr_differs_from_datasheet"] for row in every.values()
                      if row.get("simavr_differs_from_datasheet")})
    cover = [f"- {r['name']}: {c['outside']} of {c['total']} outside their 95 % CI; chance predicts "
             f"{c['expected']:.1f} ± {c['expected_sd']:.1f}." for r in runs if (c := r.get("micro_coverage"))]
    return (["## Micro-benchmarks", "",
             "Program micro (firmware/micro/MICRO.md): call overhead by argument count and type, a call "
             "through a pointer, loop overhead per turn, interrupt round trip, entry and return; line "
             "fitting 1×–M× (paper §4), mean ± 95 % CI over the repetitions in MCU cycles; ✗ = the truth "
             "lies outside the CI. Datasheet: the ATmega2560's instruction cycles summed over the compiled "
             "code. Truth: the same estimate on simavr's exact edges, in every row.", ""]
            + _table(header, rows) + [""]
            + [f"¹ simavr differs from the datasheet here: {'; '.join(differs)}." if differs else ""]
            + [""] + cover + ([""] if cover else []))


def _micro_cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    return (f"{row['mean_cycles']:.3f} ± {row['ci95_half_cycles'] or 0:.2g}"
            + (" ✗" if row.get("within_ci95") is False else ""))


def edges_section(runs: list[Run]) -> list[str]:
    """Per-edge accuracy by method, once per capture (validate reports every method)."""
    seen, rows = set(), []
    for r in runs:
        capture = r["capture"]
        if not r.get("edges") or capture in seen:
            continue
        seen.add(capture)
        for method, e in r["edges"].items():
            if "not_compared" in e:
                rows.append([Path(capture).stem, method, f"not compared: {e['not_compared']}", *["—"] * 6])
                continue
            own, crlb = e.get("locator_rms_ns"), e["crlb_ns"]
            rows.append([Path(capture).stem, method, f"{e['rms_ns']:.3g}", f"{e['bias_rise_ns']:+.3g}",
                         f"{e['bias_fall_ns']:+.3g}", f"{e['max_ns']:.3g}", f"{e['crlb_ns']:.3g}",
                         f"{e['rms_ns'] / e['crlb_ns']:.2f}",
                         "—" if own is None or e["locator_rms_se_ns"] is None
                         else f"{own / crlb:.2f} ± {e['locator_rms_se_ns'] / crlb:.2f}"])
    if not rows:
        return []
    header = ["capture", "method", "RMS (ns)", "bias rise (ns)", "bias fall (ns)", "max (ns)",
              "CRLB (ns)", "RMS / CRLB", "locator RMS / CRLB"]
    return (["## Edge timing against simavr", "",
             "Every located edge against its exact simavr time, mapped to capture time by a piecewise-linear "
             "clock fit (knots every 20 ms). Bias: the mean error of rising and of falling edges (their "
             "difference is the pin's and card's fall–rise delay, part of ε); RMS and max are about that "
             "bias. The Cramér–Rao bound is estimated from the capture's own noise. The last column is the "
             "edge locator's own error, with the sound card's clock wander (a 20 ms map does not follow it) "
             "separated out: its sub-sample phase bias plus the intercept of the error's structure function "
             "over pairs 0.1-1 ms apart (pintime.validate.edgecheck).", ""]
            + _table(header, rows) + [""])


def capture_section(runs: list[Run]) -> list[str]:
    """Clock calibration and frame counts of every analysed capture."""
    rows = []
    for r in runs:
        c, f = r["clock"], r["frames"]
        ppm = "—" if c.get("ppm") is None else f"{c['ppm']:+.4f} ± {c['ppm_sigma']:.2g}"
        rows.append([r["name"], r["run"]["program"], str(r["run"]["f_cpu_hz"]), r["run"]["revision"], ppm,
                     str(f["decoded"]), str(f["rejected"]), str(f["incomplete"]), str(f["missing"]),
                     "—" if r.get("recording_gaps") is None else str(r["recording_gaps"]["frames_cut"])])
    header = ["capture · method", "program", "F_CPU (Hz)", "firmware", "clock (ppm)", "frames decoded",
              "rejected", "incomplete", "missing", "cut by recording gaps"]
    return ["## Captures", ""] + _table(header, rows) + [""]


def figures_section(figures: Path | None, report: Path) -> list[str]:
    """The PNGs under ``figures`` (any depth); PintimeError if it is no folder or holds none."""
    if figures is None:
        return []
    if not figures.is_dir():
        raise PintimeError(f"{figures}: no such folder of figures (--figures)")
    pngs = sorted(figures.rglob("*.png"))
    if not pngs:
        raise PintimeError(f"{figures}: no PNG figure in it, at any depth (--figures)")
    out = ["## Figures", ""]
    for png in pngs:
        rel = os.path.relpath(png, report.parent)
        out += [f"**{png.parent.name} / {png.stem}**", "", f"![{png.stem}]({rel})", ""]
    return out


def write_report(paths: list[Path], output: Path, figures: Path | None = None) -> Path:
    runs = load_runs(paths)
    if not runs:
        raise PintimeError("no validation results given")
    lines = ["# pintime — the paper's tables reproduced", "",
             "Moreno & Fischmeister, *Accurate Measurement of Small Execution Times*: Table 1 and Table 2 "
             "from simulated firmware runs (simavr) through a model of a 192 kHz sound card, beside the "
             "exact simulator truth.", ""]
    try:
        lines += _sections(runs)
    except _SHAPE_ERRORS as err:  # each renders alone: they differ from each other
        raise PintimeError(f"results of different shapes (other programs or pintime versions?): {err!r}") \
            from None
    lines += figures_section(figures, output)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise PintimeError(f"{output}: cannot write ({err.strerror or err})") from None
    write_text(output, "\n".join(lines))
    return output
