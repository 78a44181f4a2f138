"""Beilner's slow-clock model (:mod:`pintime.estimate.slowclock`) beside Table 2's unknowns, for the count
method: each measurement's least-squares solve (paper eq. 10) is linear in its rounds' widths, so an
unknown's variance per measurement is ``Σ_j P[u, j]² · tick² f_j (1 − f_j)``, P the pseudo-inverse of the
measurement's basis columns and f_j the fractional part, in ticks, of the width the fit expects for round j
(the rounds taken as independent, Beilner's eq. 7c; the outlier rule, which drops no round of a count
capture's, is not modelled)."""

from __future__ import annotations

import numpy as np

from pintime.estimate.slowclock import ModelEstimate, count_variance_ticks2, model_estimate
from pintime.table2.table import Model, Table2


def model_std_us(model: Model, counts: np.ndarray, measurement: np.ndarray, tick_us: float) -> np.ndarray:
    """Per-measurement standard deviation (µs) of each unknown of ``model``, the RMS over its measurements
    of the model's prediction for each."""
    columns = np.column_stack([counts, np.ones(len(counts))])[:, list(model.reduction.basis)].astype(float)
    var = []
    for m, values in zip(model.measurements, model.values_us, strict=True):
        a = columns[measurement == m]
        p = np.linalg.pinv(a)
        var.append((p ** 2) @ (tick_us ** 2 * count_variance_ticks2((a @ values) / tick_us)))
    return np.sqrt(np.mean(var, axis=0))


def table2_models(t2: Table2, tick_us: float) -> list[tuple[str, ModelEstimate]]:
    """The model beside every unknown of the block model (the paper's Table 2)."""
    if t2.fitted is None:
        return []
    r = t2.fitted
    std = model_std_us(t2.block, r.block_counts, r.measurement, tick_us)
    return [(u.label, model_estimate(u.estimate, std, i)) for i, u in enumerate(t2.block.unknowns)]
