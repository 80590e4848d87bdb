"""The statistics of item analysis, on plain lists of numbers (no numpy: a report of 2,000 students is small).

Every function states what it returns when the data cannot say anything (one student, every score the same): ``None``
and never a number made up for the occasion, so the report can say *why* there is no number.
"""
from __future__ import annotations

import math
from statistics import NormalDist

Z95 = NormalDist().inv_cdf(0.975)  # 1.959963984540054
SMALL_COHORT = 20  # below this many students an item's discrimination interval is too wide to rank tests by


def mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def sd(xs: list[float]) -> float | None:
    """Sample standard deviation (n - 1); None below two values."""
    if len(xs) < 2:
        return None
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson score interval of a proportion (95 % by default); None when n is 0. Unlike the normal approximation it
    stays inside [0, 1] and is honest at 0 % and 100 % and for small classes."""
    if n <= 0:
        return None
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pearson(xs: list[float], ys: list[float]) -> float | None:
    """Pearson's r; None when fewer than two pairs or either variable does not vary."""
    n = len(xs)
    if n != len(ys):
        raise ValueError(f"pearson: {n} values against {len(ys)}")
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 * max(1.0, mx * mx) * n or syy <= 1e-12 * max(1.0, my * my) * n:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def fisher_interval(r: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """95 % interval of a correlation by Fisher's z transform; None below four students (its standard error is
    1/sqrt(n - 3))."""
    if n < 4:
        return None
    if abs(r) >= 1:
        return (r, r)
    centre, half = math.atanh(r), z / math.sqrt(n - 3)
    return math.tanh(centre - half), math.tanh(centre + half)


def item_total(item: list[float], totals: list[float]) -> float | None:
    """Corrected item–total correlation: the item against the total *without* that item (an item is otherwise
    correlated with itself through the total)."""
    return pearson(item, [t - i for t, i in zip(totals, item)])


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile by the Cornish–Fisher expansion around the normal one (Abramowitz & Stegun 26.7.5):
    within 0.3 % of the exact value from 3 degrees of freedom on, which an interval's second digit does not see."""
    if df <= 0:
        raise ValueError(f"t_quantile: {df} degrees of freedom")
    z = NormalDist().inv_cdf(p)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


def welch(a: list[float], b: list[float]) -> dict | None:
    """Difference of means a - b with Welch's 95 % interval; None unless each side has two values."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = sd(a) ** 2 / len(a), sd(b) ** 2 / len(b)
    diff = mean(a) - mean(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return {"diff": diff, "low": diff, "high": diff, "df": None}
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = t_quantile(0.975, df) * se
    return {"diff": diff, "low": diff - half, "high": diff + half, "df": df}


def histogram(values: list[float], low: float, high: float, bins: int) -> list[int]:
    """Counts in ``bins`` equal bins over [low, high]; the top edge belongs to the last bin (a full score counts)."""
    counts = [0] * bins
    width = (high - low) / bins if high > low else 1.0
    for v in values:
        k = int((v - low) / width) if high > low else 0
        counts[min(bins - 1, max(0, k))] += 1
    return counts


def quantile(sorted_values: list[float], q: float) -> float | None:
    """Linear interpolation between order statistics (numpy's default, type 7)."""
    if not sorted_values:
        return None
    position = (len(sorted_values) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(sorted_values) - 1)
    return sorted_values[below] + (sorted_values[above] - sorted_values[below]) * (position - below)
