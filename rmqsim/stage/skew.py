"""Queue-count skew in numpy: statistics over segments of a flat array, for a whole batch at once.

The allocation stage uses these to write each group's metrics and each client's fleet-wide load
straight from the batch that allocated them, so Spark never regroups per-client rows.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SegmentStats:
    """Per segment: how many values, how many above zero, min, max, mean, population stddev."""

    count: np.ndarray
    active: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    mean: np.ndarray
    stddev: np.ndarray

    @property
    def max_over_mean(self) -> np.ndarray:
        """max / mean, NaN where the mean is 0 (no queue, no meaningful ratio)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.mean > 0, self.maximum / self.mean, np.nan)


def segment_stats(values: np.ndarray, segment: np.ndarray, n_segments: int) -> SegmentStats:
    """Statistics of ``values`` grouped by ``segment`` (0..n_segments-1); empty segments get zeros."""
    values = values.astype(np.float64)
    count = np.bincount(segment, minlength=n_segments)
    total = np.bincount(segment, weights=values, minlength=n_segments)
    squares = np.bincount(segment, weights=values * values, minlength=n_segments)
    active = np.bincount(segment, weights=values > 0, minlength=n_segments).astype(np.int64)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), 0.0)
        variance = np.where(count > 0, squares / np.maximum(count, 1) - mean * mean, 0.0)
    minimum = np.zeros(n_segments)
    maximum = np.zeros(n_segments)
    if len(values):
        order = np.argsort(segment, kind="stable")
        present = np.flatnonzero(count)
        starts = np.concatenate([[0], np.cumsum(count)[:-1]])[present]
        minimum[present] = np.minimum.reduceat(values[order], starts)
        maximum[present] = np.maximum.reduceat(values[order], starts)
    return SegmentStats(count, active, minimum, maximum, mean, np.sqrt(np.maximum(variance, 0.0)))


def first_of_each(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For integer keys: (is first occurrence, index of each key's class, class sizes)."""
    _, first, inverse, sizes = np.unique(keys, return_index=True, return_inverse=True, return_counts=True)
    is_first = np.zeros(len(keys), dtype=bool)
    is_first[first] = True
    return is_first, inverse.reshape(-1), sizes
