"""Table 2's models without a simavr run.

The reduction of count columns (identical ones merged, dependent ones written in an independent basis) is
checked against a slow exact implementation (pairwise comparison, Fraction Gauss–Jordan) on hand-made
matrices; then the coverage count of a validation, and the exit model on a toy CFG.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from pintime.errors import PintimeError
from pintime.programs.table2 import ResolvedExit, Table2Unknown, table2_coverage
from pintime.table2.blocksystem import EPSILON, QR_ROWS, identical_groups, r_factor, rank, reduce_columns


def _rank(rows: list[list[Fraction]]) -> int:
    """Exact rank by Gaussian elimination on Fractions."""
    m = [list(r) for r in rows]
    rank = 0
    for col in range(len(m[0]) if m else 0):
        pivot = next((r for r in range(rank, len(m)) if m[r][col] != 0), None)
        if pivot is None:
            continue
        m[rank], m[pivot] = m[pivot], m[rank]
        for r in range(len(m)):
            if r != rank and m[r][col] != 0:
                f = m[r][col] / m[rank][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[rank], strict=True)]
        rank += 1
    return rank


def _solve(a: list[list[Fraction]], b: list[Fraction]) -> list[Fraction]:
    """Exact solution of the square system a x = b (Gauss–Jordan)."""
    n = len(a)
    m = [list(row) + [v] for row, v in zip(a, b, strict=True)]
    for col in range(n):
        pivot = next(r for r in range(col, n) if m[r][col] != 0)
        m[col], m[pivot] = m[pivot], m[col]
        m[col] = [v / m[col][col] for v in m[col]]
        for r in range(n):
            if r != col:
                f = m[r][col]
                m[r] = [x - f * y for x, y in zip(m[r], m[col], strict=True)]
    return [row[-1] for row in m]


def slow_reduce(counts: np.ndarray) -> tuple[list[list[int]], list[int], list[list[Fraction]]]:
    """Groups, basis and coefficients as blocksystem.reduce_columns defines them, the slow exact way."""
    cols = [[Fraction(int(v)) for v in counts[:, c]] for c in range(counts.shape[1])]
    groups: list[list[int]] = []
    for c, col in enumerate(cols):
        for g in groups:
            if cols[g[0]] == col:
                g.append(c)
                break
        else:
            groups.append([c])
    basis: list[int] = []
    for g in sorted((g for g in groups if any(cols[g[0]])), key=lambda g: (-len(g), g[0])):
        trial = [*basis, g[0]]
        if _rank([[cols[k][r] for k in trial] for r in range(len(cols[0]))]) > len(basis):
            basis.append(g[0])
    basis.sort()
    gram = [[sum(x * y for x, y in zip(cols[i], cols[j], strict=True)) for j in basis] for i in basis]
    coefficients = []
    for col in cols:
        x = _solve(gram, [sum(a * b for a, b in zip(cols[i], col, strict=True)) for i in basis])
        fitted = [sum(x[u] * cols[k][r] for u, k in enumerate(basis)) for r in range(len(col))]
        assert fitted == col  # every column is an exact combination of the basis
        coefficients.append(x)
    return [g for g in groups if any(cols[g[0]])], basis, coefficients


def _planted(rng: np.random.Generator, rounds: int) -> np.ndarray:
    """A count matrix with the shapes of a CFG: once-per-call, a loop and its test, if/else pairs, a
    3-iteration inner loop, a half column (exact coefficient 1/2), a never-run block, a second block run
    once per iteration, and ε."""
    body = rng.integers(0, 12, rounds)
    neg = rng.binomial(body, 0.4)
    rare = rng.binomial(body, 0.1)
    even = 2 * rng.integers(0, 4, rounds)
    ones = np.ones(rounds, dtype=np.int64)
    return np.column_stack([ones, body + 1, ones, body, neg, body - neg, 3 * body, rare, neg,
                            even, even // 2, np.zeros(rounds, dtype=np.int64), body, ones])


NAMES = ["BB0", "BB1", "BB2", "BB3", "BB4", "BB5", "BB6", "BB7", "BB8", "BB9", "BB10", "BB11", "BB12",
         EPSILON]


def test_planted_matrix_reduces_as_named():
    r = reduce_columns(_planted(np.random.default_rng(5), 60), NAMES)
    labels = [r.label(u) for u in range(len(r.basis))]
    assert labels == ["BB0 et al. + ε", "BB3 et al.", "BB4 et al.", "BB7", "BB9 et al."]
    assert r.formula(0) == "BB0 + BB1 + BB2 + ε"
    assert r.formula(1) == "BB1 + BB3 + BB5 + 3·BB6 + BB12"
    assert r.formula(2) == "BB4 − BB5 + BB8"
    assert r.formula(4) == "BB9 + 1/2·BB10"
    assert [r.names[c] for c in r.unused] == ["BB11"]
    merged = [[r.names[c] for c in g] for g in r.groups if len(g) > 1]
    assert merged == [["BB0", "BB2", EPSILON], ["BB3", "BB12"], ["BB4", "BB8"]]
    # the value of an unknown is its members' costs combined: costs 1, 2, 4, … make every member visible
    costs = 2.0 ** np.arange(len(NAMES))
    assert r.value(costs)[4] == costs[9] + costs[10] / 2


@pytest.mark.parametrize("seed", range(6))
def test_reduction_matches_slow_exact_reduction(seed):
    rng = np.random.default_rng(seed)
    counts = _planted(rng, int(rng.integers(15, 40)))
    counts = counts[:, rng.permutation(counts.shape[1])]  # any column order
    names = [f"c{k}" for k in range(counts.shape[1])]
    r = reduce_columns(counts, names)
    groups, basis, coefficients = slow_reduce(counts)
    assert [list(g) for g in r.groups] == groups
    assert [g for g in identical_groups(counts)] == [g for g in slow_identical(counts)]
    assert list(r.basis) == basis
    assert [list(row) for row in r.coefficients] == coefficients


def slow_identical(counts: np.ndarray) -> list[list[int]]:
    """Identical columns by pairwise comparison, groups by first column."""
    seen: list[list[int]] = []
    for c in range(counts.shape[1]):
        match = [g for g in seen if (counts[:, g[0]] == counts[:, c]).all()]
        if match:
            match[0].append(c)
        else:
            seen.append([c])
    return seen


@pytest.mark.parametrize("seed", range(3))
def test_rank_of_matrices_side_by_side_is_that_of_the_joined_matrix(seed):
    """r_factor of a tuple (never joined, several row blocks) gives the rank, and the Gram matrix, of the
    matrices joined: the exact rank of rows made of a few planted ones."""
    rng = np.random.default_rng(seed)
    n = 2 * QR_ROWS + 17
    base = rng.integers(0, 5, (6, 9))
    joined = base[rng.integers(0, len(base), n)]  # every row one of 6: rank ≤ 6
    parts = (joined[:, :4], joined[:, 4:7], joined[:, 7:])
    r = r_factor(parts)
    assert rank(r, n) == _rank([[Fraction(int(v)) for v in row] for row in base]) \
        == np.linalg.matrix_rank(joined)
    np.testing.assert_allclose(r.T @ r, (joined.T @ joined).astype(float), rtol=1e-9)
    rows = np.flatnonzero(rng.random(n) < 0.5)
    np.testing.assert_allclose(r_factor(parts, rows).T @ r_factor(parts, rows),
                               (joined[rows].T @ joined[rows]).astype(float), rtol=1e-9)


def test_full_rank_matrix_keeps_every_column():
    counts = np.random.default_rng(1).integers(0, 9, (30, 5))
    r = reduce_columns(counts, list("abcde"))
    assert r.basis == (0, 1, 2, 3, 4) and r.groups == ((0,), (1,), (2,), (3,), (4,))
    np.testing.assert_array_equal(r.matrix, np.eye(5))


def test_nearly_dependent_column_is_refused():
    """A column within float tolerance of a multiple of another but not equal to it: an error, never a
    wrong name (float64 cannot even hold c, which int64 holds exactly)."""
    rng = np.random.default_rng(2)
    a = rng.integers(1, 1000, 50)
    c = 10**16 * a + rng.integers(0, 2, 50)
    with pytest.raises(PintimeError, match="not exactly a combination"):
        reduce_columns(np.column_stack([a, c]), ["a", "c"])


def test_table2_coverage_counts_each_part_and_skips_epsilon():
    def row(error_us=0.0, judged=True):  # a CI half-width of 1 µs over 100 measurements
        return Table2Unknown("u", error_us, 0.0, 1.0, 100, 0.0, judged)
    rows = [row(9.0, judged=False), row(0.5), row(1.2)]
    columns = [ResolvedExit(f"BB{i}→BB{i + 1}", "measured", 0, u)
               for i, u in enumerate([row(3.5), row(), row(9.0, judged=False), None])]
    assert [u.within_ci95 for u in rows] == [None, True, False]
    cover = table2_coverage(rows, columns)
    assert [(c.outside, c.total) for c in (cover.block, cover.resolved, cover.combined)] == [
        (1, 2), (1, 2), (2, 4)]
    assert cover.combined.expected == pytest.approx(0.2)
    # jointly, four CIs at 95 % each widen by t₉₉(1 − 0.05/8)/t₉₉(0.975) ≈ 1.28: 1.2 is inside, 3.5 is not
    assert cover.joint.factor == pytest.approx(1.28, abs=0.01)
    assert (cover.joint.outside, cover.joint.total) == (1, 4)


def _toy_cfg():
    """A loop in which BB1 and BB2 both branch to BB3 or BB4 at different costs (1 and 2 cycles more to
    BB4): rounds taking BB1→BB3, BB2→BB4 or BB1→BB4, BB2→BB3 run the same blocks but cost differently."""
    from pintime.avr.cfg import Block, Cfg, Exit

    edges = {0: [(6, 10)], 1: [(3, 3), (4, 4)], 2: [(3, 5), (4, 7)], 3: [(5, 2)], 4: [(5, 3)], 5: [(6, 1)],
             6: [(1, 2), (7, 3)], 7: [(2, 2), (8, 3)], 8: [(None, 5)]}
    blocks, index = [], 0
    for source, outs in edges.items():
        exits = tuple(Exit(index + k, source, target, k == 1, cycles)
                      for k, (target, cycles) in enumerate(outs))
        index += len(exits)
        blocks.append(Block(source, (), exits))
    return Cfg("toy", 0, 0, tuple(blocks))


def test_exit_model_is_exact_where_the_block_model_cannot_be():
    """On the toy CFG the exit counts leave the span of the block counts: the block model keeps a residual
    on exact widths (its truth is only a least-squares value), the exit model recovers whole cycles."""
    from pintime.table2.table import build_table2, format_table2
    from pintime.table2.visits import Rounds

    cfg = _toy_cfg()
    rng = np.random.default_rng(4)
    exit_of = {(e.source, e.target): e.index for e in cfg.exits}
    rows = []
    for _ in range(600):
        exits = np.zeros(len(cfg.exits), dtype=np.int64)
        block, steps = 0, 0
        while block is not None:
            options = cfg.blocks[block].successors
            target = None if not options else (options[-1] if block == 7 and steps > 40
                                               else options[rng.integers(len(options))])
            exits[exit_of[(block, target)]] += 1
            block, steps = target, steps + 1
        rows.append(exits)
    exit_counts = np.array(rows)
    block_counts = np.array([exit_counts[:, [e.index for e in b.exits]].sum(axis=1) for b in cfg.blocks]).T
    width_cycles = exit_counts @ np.array([e.cycles for e in cfg.exits]) + 6
    t2 = build_table2(cfg, Rounds(np.repeat(np.arange(3), 200), width_cycles * 1.0, block_counts, exit_counts,
                                  width_cycles), 1.0)
    assert not t2.same_span
    assert t2.block.truth_residual_cycles > 0.1 and np.all(t2.block.residual_rms_us > 0.1)
    assert t2.exit.truth_residual_cycles < 1e-9
    truth = np.array([u.truth_cycles for u in t2.exit.unknowns])
    np.testing.assert_allclose(truth, np.round(truth), atol=1e-9)
    np.testing.assert_allclose(t2.exit.values_us, np.broadcast_to(truth, t2.exit.values_us.shape), atol=1e-9)
    assert t2.capture_epsilon.mean_us == pytest.approx(6, abs=1e-9)  # from the exact (exit) model
    assert "cannot be exact" in format_table2(t2)
