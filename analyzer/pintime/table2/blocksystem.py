"""The count-matrix system of paper §5.1 (eq. 9–10), reduced to unknowns it can actually determine.

A round's time is ``Σ_c N_c · t_c`` over count columns ``c`` (blocks, or CFG exits, and the constant
column of the systematic error ε). Columns that are identical (blocks run equally often in every round)
cannot be told apart: the paper merges them into one unknown, "BBk et al." (§6.2). Columns can also be
linearly dependent without being identical (a loop test runs once more than its body: BB1 = BB0 + BB3),
which merging does not remove. :func:`reduce_columns` does both: it keeps an independent basis of
columns and writes every column as an exact rational combination of the basis,
``N_c = Σ_u R[c, u] · N_basis(u)``, so that

    T = Σ_c N_c t_c = Σ_u N_basis(u) · (Σ_c R[c, u] t_c),

i.e. unknown ``u`` stands for ``Σ_c R[c, u] · t_c`` — its members, with coefficients, and its true value
is the same combination of the columns' true costs.

Basis choice (deterministic): identical columns form groups; groups are tried largest first (ties: the
lower first column), one representative each (its first column), and a representative is kept when it
raises the numerical rank (SVD, numpy's default tolerance). Merging the largest groups first makes the
paper's "et al." groups the unknowns wherever the rank allows it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from pintime.errors import PintimeError

EPSILON = "ε"  # name of the constant column (paper eq. 6: the systematic error of every pulse)
MAX_DENOMINATOR = 1000  # exact combinations of integer count columns are checked up to this denominator
QR_ROWS = 8192  # rows of the counts worked a block at a time (bounded memory)

# what a system's counts alone give (its reduction, rank tests, exact truth), by name: kept across the
# estimations of one capture, which differ only in the widths (pintime.table2.table.table2_from_capture)
Memo = Callable[[str, Callable[[], Any]], Any]


def computed(name: str, make: Callable[[], Any]) -> Any:
    """The :data:`Memo` that keeps nothing: ``make()``."""
    return make()


@dataclass(frozen=True)
class Reduction:
    """Independent unknowns of a count matrix, each an exact combination of the columns' costs."""

    names: tuple[str, ...]  # one per column
    basis: tuple[int, ...]  # columns kept, one per unknown, ascending
    coefficients: tuple[tuple[Fraction, ...], ...]  # [c][u]: column c = Σ_u coef · column basis[u]
    groups: tuple[tuple[int, ...], ...]  # identical nonzero columns, by first column
    unused: tuple[int, ...]  # all-zero columns: never counted, in no unknown

    @property
    def matrix(self) -> np.ndarray:
        """``R`` as floats, shape (columns, unknowns)."""
        return np.array([[float(x) for x in row] for row in self.coefficients]).reshape(
            len(self.names), len(self.basis))

    def members(self, u: int) -> list[tuple[str, Fraction]]:
        """The columns unknown ``u`` stands for, with their coefficients, in column order."""
        return [(self.names[c], row[u]) for c, row in enumerate(self.coefficients) if row[u] != 0]

    def label(self, u: int) -> str:
        """The paper's name: "BBk" alone, or "BBk et al." when the unknown holds more ("+ ε" if ε joins)."""
        names = [name for name, _ in self.members(u)]
        head = self.names[self.basis[u]]
        blocks = [n for n in names if n != EPSILON]
        label = head if len(blocks) <= 1 else f"{head} et al."
        return label + (f" + {EPSILON}" if EPSILON in names and head != EPSILON else "")

    def formula(self, u: int) -> str:
        """The exact combination, e.g. ``BB1 + BB3 + 3·BB7 − BB34``."""
        text = ""
        for name, coef in self.members(u):
            size = abs(coef)
            term = name if size == 1 else f"{size}·{name}"
            text += (" − " if coef < 0 else " + ") + term if text else ("−" if coef < 0 else "") + term
        return text

    def value(self, costs: np.ndarray) -> np.ndarray:
        """Each unknown's value from per-column costs: ``Rᵀ · costs`` (float)."""
        return self.matrix.T @ np.asarray(costs, dtype=np.float64)


def identical_groups(counts: np.ndarray) -> list[list[int]]:
    """Groups of equal columns (every column in exactly one group), ordered by their first column."""
    counts = np.asarray(counts)
    groups: dict[tuple[bytes, int], list[int]] = {}  # by the column's digest, and which of those it is
    for c in range(counts.shape[1]):  # a column at a time, kept as its digest (a long matrix's are 1 MB)
        column = counts[:, c]
        digest = hashlib.blake2b(column.tobytes()).digest()
        k = 0
        while (digest, k) in groups and not np.array_equal(counts[:, groups[digest, k][0]], column):
            k += 1
        groups.setdefault((digest, k), []).append(c)
    return list(groups.values())  # dicts keep insertion order: by first column


def reduce_columns(counts: np.ndarray, names: list[str] | tuple[str, ...]) -> Reduction:
    """Reduce an integer rounds × columns count matrix to an independent basis (see module docstring).

    Raises
    ------
    PintimeError
        When a column the rank test finds dependent is no exact combination (denominators up to
        ``MAX_DENOMINATOR``) of the basis: the counts are too close to collinear to name the unknowns.
    """
    counts = np.asarray(counts)
    if counts.ndim != 2 or counts.shape[1] != len(names):
        raise ValueError("counts must be rounds × columns with one name per column")
    if not np.issubdtype(counts.dtype, np.integer):
        raise ValueError("counts must be integers")
    groups = identical_groups(counts)
    zero = [g for g in groups if not counts[:, g[0]].any()]
    nonzero = [g for g in groups if counts[:, g[0]].any()]
    # counts = Q·R with orthonormal Q: any set of columns of R has the rank of the same columns of counts,
    # and the same least-squares coefficients, at the cost of columns × columns instead of rounds × columns
    r = r_factor(counts)
    basis: list[int] = []
    for group in sorted(nonzero, key=lambda g: (-len(g), g[0])):
        if rank(r[:, sorted([*basis, group[0]])], len(counts)) > len(basis):
            basis.append(group[0])
    basis.sort()
    # least-squares coefficients of every column in the basis, then made exact (rational) and checked
    approx = np.linalg.lstsq(r[:, basis], r, rcond=None)[0]
    coefficients = [_combination(basis, approx[:, c], c) for c in range(counts.shape[1])]
    _check_exact(counts, basis, coefficients, names)
    return Reduction(tuple(names), tuple(basis), tuple(coefficients),
                     tuple(tuple(g) for g in nonzero), tuple(c for g in zero for c in g))


def r_factor(counts: np.ndarray | tuple[np.ndarray, ...], rows: np.ndarray | None = None) -> np.ndarray:
    """The R of a QR factorization of ``counts`` (of its ``rows``, default all; a tuple: its matrices side
    by side): the same row space and column ranks in columns × columns. QR_ROWS rows at a time, each block
    stacked under the R so far: no floating-point copy of a long matrix, nor a joined one."""
    parts = counts if isinstance(counts, tuple) else (counts,)
    rows = np.arange(len(parts[0])) if rows is None else rows
    r = np.zeros((0, sum(p.shape[1] for p in parts)))
    for start in range(0, len(rows), QR_ROWS):
        chunk = rows[start:start + QR_ROWS]
        r = np.asarray(np.linalg.qr(np.vstack([r, np.hstack([p[chunk] for p in parts])]), mode="r"))
    return r


def rank(r: np.ndarray, rows: int) -> int:
    """Numerical rank of a ``rows`` × columns matrix from its QR factor ``r`` (or any matrix with its
    singular values), with numpy's default tolerance for the original shape."""
    singular = np.linalg.svd(r, compute_uv=False)
    if singular.size == 0:
        return 0
    return int(np.sum(singular > singular[0] * max(rows, r.shape[1]) * np.finfo(np.float64).eps))


def _combination(basis: list[int], approx: np.ndarray, c: int) -> tuple[Fraction, ...]:
    """Exact coefficients of column ``c`` in the basis columns from their least-squares values ``approx``
    (denominators up to MAX_DENOMINATOR; :func:`_check_exact` checks them)."""
    if c in basis:
        return tuple(Fraction(int(c == k)) for k in basis)
    return tuple(Fraction(float(v)).limit_denominator(MAX_DENOMINATOR) for v in approx)


def _check_exact(counts: np.ndarray, basis: list[int], coefficients: list[tuple[Fraction, ...]],
                 names: list[str] | tuple[str, ...]) -> None:
    """Every column not in the basis is its ``coefficients``' combination of the basis columns, checked in
    exact integer arithmetic (the column times its coefficients' common denominator), all columns at once a
    block of rows at a time (bounded memory); PintimeError naming the first column that is not."""
    others = [c for c in range(counts.shape[1]) if c not in basis]
    denominators = [math.lcm(*(f.denominator for f in coefficients[c])) for c in others]
    numerators = [[int(f * d) for f in coefficients[c]] for c, d in zip(others, denominators, strict=True)]
    bound = int(np.abs(counts).max(initial=0)) * max(
        (max(sum(map(abs, row)), d) for row, d in zip(numerators, denominators, strict=True)), default=1)
    # every product and partial sum is an integer up to ``bound``: the narrowest type that holds them all
    # exactly (float64 below 2⁵³, its BLAS product then exact; int64 below 2⁶², else Python's integers)
    exact = np.float64 if bound < 2 ** 53 else np.int64 if bound < 2 ** 62 else object
    combination = np.array(numerators, dtype=exact).reshape(len(others), len(basis)).T
    scale = np.array(denominators, dtype=exact)
    wrong = np.zeros(len(others), dtype=bool)
    for start in range(0, len(counts), QR_ROWS):
        part = counts[start:start + QR_ROWS]
        wrong |= np.any(part[:, basis].astype(exact) @ combination != part[:, others].astype(exact) * scale,
                        axis=0)
    if wrong.any():
        c = others[int(np.argmax(wrong))]
        raise PintimeError(f"count column {names[c]} is nearly but not exactly a combination of "
                           f"{', '.join(names[k] for k in basis)}: cannot name the unknowns")


@dataclass(frozen=True)
class Fit:
    """Least-squares solution of one measurement's system (eq. 10 on the basis columns)."""

    values: np.ndarray  # one per unknown, in the unit of the times
    residual_rms: float  # RMS of times − counts · values over the rounds kept
    condition: float  # 2-norm condition number of the rounds × unknowns matrix kept
    outliers: int  # rounds rejected


def solve(counts: np.ndarray, times: np.ndarray, reduction: Reduction, outlier_factor: float | None = None,
          outlier_floor: float = 0.0) -> Fit:
    """Solve ``N_basis · x = T`` in the least-squares sense (eq. 10; LAPACK's SVD-based gelsd, not eq. 8's
    normal equations, which square the condition number). ``counts`` are all columns; the basis is taken.

    With ``outlier_factor``, the paper's rule of §4.1 applies: after a fit of all rounds, a round whose
    |residual| exceeds ``outlier_factor`` × the median |residual| (and ``outlier_floor``) is dropped and the
    system solved again without it.
    """
    a = np.asarray(counts, dtype=np.float64)[:, list(reduction.basis)]
    t = np.asarray(times, dtype=np.float64)
    x, singular = _lstsq(a, t)
    kept = np.ones(len(t), dtype=bool)
    if outlier_factor is not None:
        deviation = np.abs(t - a @ x)
        kept = deviation <= max(outlier_factor * float(np.median(deviation)), outlier_floor)
        if not kept.all():
            x, singular = _lstsq(a[kept], t[kept])
    residual = t[kept] - a[kept] @ x
    return Fit(x, float(np.sqrt(np.mean(residual ** 2))), float(singular[0] / singular[-1]),
               int(np.count_nonzero(~kept)))


def _lstsq(a: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, _, rank, singular = np.linalg.lstsq(a, t, rcond=None)
    if rank < a.shape[1]:
        raise PintimeError(f"the basis columns are rank {rank} < {a.shape[1]} in this measurement")
    return x, singular
