"""Frame decoder (pintime.frames) on the real simavr capture of the Table 1 firmware, intact and damaged.

Correct frames come only from simavr (`make sim` → build/sim/table1.edges.csv); damaged ones are made by
deleting or moving its edges. Expected values come from firmware/FORMAT.md.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from pintime.capture.edgelist import read_edge_list
from pintime.edges import MEASUREMENT_CHANNEL
from pintime.frames import (
    FrameDecode,
    decode_frames,
    group_edge_count,
)
from support import SIM

pytestmark = pytest.mark.usefixtures("make_sim")


@pytest.fixture(scope="module")
def capture() -> tuple[np.ndarray, np.ndarray, dict]:
    """Measurement-channel edges of the simavr run in nominal µs, and the run's truth JSON."""
    truth = json.loads((SIM / "table1.json").read_text())
    edges = read_edge_list(SIM / "table1.edges.csv").on(MEASUREMENT_CHANNEL)
    return edges.time * (1e6 / truth["f_cpu_hz"]), edges.polarity.copy(), truth


@pytest.fixture(scope="module")
def decoded(capture) -> FrameDecode:
    time_us, polarity, _ = capture
    return decode_frames(time_us, polarity)


def test_every_frame_of_the_run_decodes(capture, decoded):
    truth = capture[2]
    assert (decoded.rejected, decoded.incomplete, decoded.inverted) == (0, 0, False)
    kinds = Counter(f.kind for f in decoded.frames)
    reps = kinds["direct"]
    # FORMAT.md §6: RUN, CAL, then per repetition RUN DIRECT 5×EXECUTING 3×DIFFERENTIAL 2×LINE OVERDET, END
    assert kinds == {"run": reps + 1, "cal": 1, "direct": reps, "executing": 5 * reps,
                     "differential": 3 * reps, "line": 2 * reps, "overdet": reps, "end": 1}
    assert decoded.frames[-1].fields == {"frames": len(decoded.frames) - 1}
    run = decoded.frames[0].fields
    assert run == {"f_cpu_hz": truth["f_cpu_hz"], "revision": truth["revision"], "program": 1}
    assert decoded.frames[1].fields == {"period_cycles": 2777 * truth["f_cpu_hz"] // 10**6, "count": 1000}
    for kind in ("direct", "executing", "differential", "line", "overdet"):
        assert sorted(Counter(f.fields["rep"] for f in decoded.of_kind(kind)).items()) == \
            [(r, len(decoded.of_kind(kind)) // reps) for r in range(reps)]
    assert sorted(f.fields["n"] for f in decoded.frames[2:15] if "n" in f.fields) == [
        10, 20, 55, 55, 100, 210, 210, 1000]


def test_groups_are_whole_pulses_in_order(capture, decoded):
    _, polarity, _ = capture
    last = -1
    for f in decoded.frames:
        assert len(f.group) == group_edge_count(f.kind, f.fields)
        if len(f.group):
            assert f.group[0] > last and np.all(np.diff(f.group) == 1)
            assert np.array_equal(polarity[f.group], np.tile([1, -1], len(f.group) // 2))
            last = f.group[-1]


def test_unknown_capture_start_skips_to_the_first_quiet(capture, decoded):
    time_us, polarity, _ = capture
    d = decode_frames(time_us, polarity, start_us=None)
    assert (len(d.frames), d.rejected, d.incomplete) == (len(decoded.frames) - 1, 0, 0)
    assert d.frames[0].kind == "cal"  # the first RUN has no QUIET before it in this capture


def test_capture_starting_mid_frame(capture, decoded):
    time_us, polarity, _ = capture
    f = decoded.frames[20]
    cut = f.group[len(f.group) // 2]  # start inside frame 20's group
    d = decode_frames(time_us[cut:], polarity[cut:], start_us=None)
    assert (len(d.frames), d.rejected, d.incomplete) == (len(decoded.frames) - 21, 0, 0)
    assert d.frames[0].fields == decoded.frames[21].fields


@pytest.mark.parametrize("where", ["group", "header", "pin high"])
def test_capture_cut_short_is_incomplete(capture, decoded, where):
    time_us, polarity, _ = capture
    i = next(i for i, f in enumerate(decoded.frames) if i > 30 and f.kind == "differential")
    f = decoded.frames[i]
    stop = {"group": f.group[100], "header": f.start + 20, "pin high": f.group[10] + 1}[where]
    d = decode_frames(time_us[:stop], polarity[:stop])
    assert (len(d.frames), d.rejected, d.incomplete) == (i, 0, 1)


def _shift_after(time_us: np.ndarray, index: int, delta_us: float) -> np.ndarray:
    """Move edge ``index`` and every later edge by ``delta_us`` (stretches one interval)."""
    out = time_us.copy()
    out[index:] += delta_us
    return out


def _assert_only_lost(d: FrameDecode, decoded: FrameDecode, lost: int, reason: str) -> None:
    assert d.reasons == {reason: 1} and d.rejected == 1 and d.incomplete == 0
    expected = [f.fields for i, f in enumerate(decoded.frames) if i != lost]
    assert [f.fields for f in d.frames] == expected


def test_damage_is_never_attributed(capture, decoded):
    time_us, polarity, _ = capture
    i = 40
    f = decoded.frames[i]
    bit0_fall = next(f.start + 3 + 2 * b for b in range(8) if time_us[f.start + 3 + 2 * b]
                     - time_us[f.start + 2 + 2 * b] < 300)  # a 0 bit of byte 0
    cases = {
        # delete one edge inside the group: two falling edges in a row
        "edges out of order": (np.delete(time_us, f.group[5]), np.delete(polarity, f.group[5])),
        # delete one whole pulse: the group has 2 edges fewer than announced
        "group edge count": (np.delete(time_us, f.group[4:6]), np.delete(polarity, f.group[4:6])),
        # flip a header bit 0 → 1 by moving its falling edge 200 µs later (all later edges follow)
        "crc": (_shift_after(time_us, bit0_fall, 200.0), polarity),
        # a bit high of 600 µs is no bit
        "bit timing": (_shift_after(time_us, bit0_fall, 400.0), polarity),
        # a low of 600 µs between two pulses of the group is no GAP
        "group gap": (_shift_after(time_us, f.group[2], 300.0), polarity),
        # a SYNC high of 1200 µs is no SYNC
        "sync": (_shift_after(time_us, f.start + 1, 200.0), polarity),
    }
    for reason, (t, p) in cases.items():
        d = decode_frames(t, p)
        _assert_only_lost(d, decoded, i, reason)


def test_inverted_polarity_is_detected(capture, decoded):
    time_us, polarity, _ = capture
    d = decode_frames(time_us, -polarity)
    assert d.inverted and len(d.frames) == len(decoded.frames)
    assert all(np.array_equal(a.group, b.group) for a, b in zip(d.frames, decoded.frames, strict=True))


