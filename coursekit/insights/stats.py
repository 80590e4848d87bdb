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
    1/sqrt(n - 3)) and for a perfect correlation."""
    if n < 4 or abs(r) >= 1:  # r = +-1: Fisher's z is infinite, and an interval of width 0 would claim certainty
        return None
    centre, half = math.atanh(r), z / math.sqrt(n - 3)
    return math.tanh(centre - half), math.tanh(centre + half)


def item_total(item: list[float], totals: list[float]) -> float | None:
    """Corrected item–total correlation: the item against the total *without* that item (an item is otherwise
    correlated with itself through the total)."""
    return pearson(item, [t - i for t, i in zip(totals, item)])


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes 6.4)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + num * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function (any real df > 0)."""
    tail = 0.5 * betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t > 0 else tail


def t_quantile(p: float, df: float) -> float:
    """Student's t quantile, exact to 1e-10 for any df > 0 (Welch's df is fractional, and near 1 for two answers
    against many): the distribution function inverted by bisection."""
    if df <= 0 or not 0 < p < 1:
        raise ValueError(f"t_quantile: p={p}, {df} degrees of freedom")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        high *= 2
    for _ in range(200):
        mid = (low + high) / 2
        if t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12 * max(1.0, high):
            break
    return (low + high) / 2


def welch(a: list[float], b: list[float]) -> dict | None:
    """Difference of means a - b with Welch's 95 % interval; None unless each side has two values."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = sd(a) ** 2 / len(a), sd(b) ** 2 / len(b)
    diff = mean(a) - mean(b)
    se = math.sqrt(va + vb)
    if se == 0:
        return None  # neither side varies: no interval to give
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
