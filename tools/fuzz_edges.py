"""Fuzz ``pintime edges`` with real-like recordings (issue 37; tests/fuzzcase.py draws and scores them).

Each seed's case is rendered into a scratch directory and ``pintime edges FILE --csv OUT`` run on it in a
subprocess (its CPU time and peak memory measured: the machine may be shared, its wall time is noted
only); the outcome is one JSON line per case: exit code,
stderr, what failed (a traceback, more than one line of error, the calibration train named, too slow,
too much memory, or, located, the requirements :func:`fuzzcase.score` checks).

Usage: ``python tools/fuzz_edges.py FIRST LAST [--dir DIR] [--out FILE] [--jobs N] [--base TREE]``; then
``python tools/fuzz_edges.py --summary FILE`` counts the failures by class.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import fuzzcase  # noqa: E402  (tests/ holds the renderer)

PINTIME = ROOT / ".venv" / "bin" / "pintime"
PYTHON = ROOT / ".venv" / "bin" / "python"
FIXED_S = 4.0  # of a command's CPU time, start-up and learning (bench_real.py: 3.5 s at 48 kHz)
REFUSAL_S = 5.0  # a refusal within a few seconds
MEMORY_MB = 500.0
CPU_LIMIT_S = 60


def run_case(seed: int, scratch: Path, base: Path | None = None) -> dict:
    """Render seed's case, run ``pintime edges`` on it (``base``: the analyzer of that source tree, as a
    commit's ``git archive`` unpacks it, instead of this one), and judge the outcome."""
    case = fuzzcase.draw(seed)
    wav, csv = scratch / f"case{seed}.wav", scratch / f"case{seed}.csv"
    truth, _, clipped = fuzzcase.write_case(case, wav)
    frames = sf.info(str(wav)).frames
    csv.unlink(missing_ok=True)
    begin = time.monotonic()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}  # its CPU time is its own
    command = [str(PINTIME)]
    if base is not None:
        env["PYTHONPATH"] = str(base / "analyzer")
        command = [str(PYTHON), "-m", "pintime.cli"]
    err = scratch / f"case{seed}.err"
    with err.open("w") as stderr_file:
        proc = subprocess.Popen([*command, "edges", str(wav), "--csv", str(csv)],
                                stdout=subprocess.DEVNULL, stderr=stderr_file, env=env, preexec_fn=_limit_cpu)
        _, status, usage = os.wait4(proc.pid, 0)
    wall_s = time.monotonic() - begin
    stderr = err.read_text()
    err.unlink()
    code = os.waitstatus_to_exitcode(status)
    cpu_s = usage.ru_utime + usage.ru_stime
    out = {"seed": seed, "case": case.describe(), "code": code, "wall_s": round(wall_s, 2),
           "cpu_s": round(cpu_s, 2),
           "rss_mb": round(usage.ru_maxrss / 1024, 1), "clipped": clipped, "stderr": stderr.strip()[-2000:]}
    out["failures"] = _failures(out, case, stderr)
    if code == 0 and csv.exists():
        rows = np.loadtxt(csv, delimiter=",", skiprows=1, ndmin=2)
        result = fuzzcase.score(rows, truth, case.rate_hz, frames)
        out["score"] = result.as_dict()
        out["failures"] += result.failures
    wav.unlink(missing_ok=True)
    csv.unlink(missing_ok=True)
    return out


def _limit_cpu() -> None:
    """The child's CPU time capped at CPU_LIMIT_S: a runaway case is killed (SIGXCPU), and counted."""
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 5))


def cpu_budget_s(case: fuzzcase.Case) -> float:
    """The CPU time a case may take: the issue's 10 s for 15 s at 48 kHz, of which FIXED_S (start-up and
    learning, which read the same first seconds of any file) is fixed, the rest in proportion to the
    samples; at a higher rate the fixed part too."""
    scale = max(1.0, case.rate_hz / 48000) * (2 if case.stereo != "mono" else 1)
    return (FIXED_S + (10.0 - FIXED_S) * case.seconds / 15.0 * case.rate_hz / 48000) * scale


def _failures(out: dict, case: fuzzcase.Case, stderr: str) -> list[str]:
    """What the run itself failed: its exit, its error's form, its time and memory."""
    failures = []
    lines = stderr.strip().splitlines()
    if out["code"] in (-signal.SIGXCPU, -signal.SIGKILL):
        failures.append(f"runaway (killed at {CPU_LIMIT_S} s of CPU)")
    elif "Traceback" in stderr or out["code"] not in (0, 2):
        failures.append("traceback")
    elif out["code"] == 2:
        if len(lines) != 1 or not lines[0].startswith("pintime: error: "):
            failures.append("error not one line")
        if out["cpu_s"] > REFUSAL_S:
            failures.append("slow refusal")
    if "calibration train" in stderr:  # no case holds pintime frames
        failures.append("names the calibration train")
    if out["code"] == 0 and out["cpu_s"] > cpu_budget_s(case):
        failures.append("slow")
    if out["rss_mb"] > MEMORY_MB:
        failures.append("memory")
    return failures


def summary(path: Path) -> str:
    """The failures of a run's JSON lines by class, and the refusals by their reason's first words."""
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    failures, refusals = Counter(), Counter()
    for c in cases:  # the run's own failures judged again: the budgets may have changed
        scored = c.get("score", {}).get("failures", [])
        c["failures"] = _failures(c, fuzzcase.draw(c["seed"]), c["stderr"]) + scored
        for f in c["failures"]:
            failures[f] += 1
        if c["code"] == 2:
            refusals[_reason(c["stderr"], c["clipped"])] += 1
    located = sum(c["code"] == 0 for c in cases)
    lines = [f"{len(cases)} cases: {located} located, {sum(c['code'] == 2 for c in cases)} refused, "
             f"{sum(bool(c['failures']) for c in cases)} with a failure"]
    lines += [f"  {n:4d}  {name}" for name, n in failures.most_common()]
    lines += ["refusals:"] + [f"  {n:4d}  {name}" for name, n in refusals.most_common()]
    return "\n".join(lines)


def _reason(stderr: str, clipped: bool) -> str:
    """A refusal's class: its message after the file name, to the first colon or semicolon."""
    text = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    text = text.removeprefix("pintime: error: ")
    text = text.split(": ", 1)[1] if ": " in text else text
    head = text.split(":")[0].split(";")[0]
    return ("(clipped as rendered) " if clipped else "") + " ".join(
        w if not any(ch.isdigit() for ch in w) else "#" for w in head.split()[:14])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", type=int, nargs="?", default=0)
    parser.add_argument("last", type=int, nargs="?", default=99)
    parser.add_argument("--dir", type=Path, default=Path("/tmp/pintime-fuzz"))
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--summary", type=Path, default=None)
    parser.add_argument("--base", type=Path, default=None,
                        help="run the analyzer of this source tree (a commit's git archive) instead")
    args = parser.parse_args()
    if args.summary is not None:
        print(summary(args.summary))
        return 0
    args.dir.mkdir(parents=True, exist_ok=True)
    out = args.out or args.dir / f"fuzz-{args.first}-{args.last}.jsonl"
    with out.open("w") as f, ThreadPoolExecutor(args.jobs) as pool:
        for result in pool.map(lambda s: run_case(s, args.dir, args.base), range(args.first, args.last + 1)):
            f.write(json.dumps(result) + "\n")
            f.flush()
            mark = ",".join(result["failures"]) or "ok"
            print(f"{result['seed']:5d} exit {result['code']} {result['cpu_s']:5.1f}s {mark}: "
                  f"{result['case']}", flush=True)
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
