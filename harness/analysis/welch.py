"""Welch's t-test and Fieller's interval of a ratio: is a difference real, and how large (scipy)."""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence

from harness.errors import DependencyError

SCIPY_MISSING = (
    "Welch's t-test needs scipy; install the report extra: pip install 'beyond-tops[report]'"
)


def welch_t_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Welch's t statistic and two-sided p-value (scipy.stats.ttest_ind, equal_var=False).

    Needs two values per side (ValueError otherwise). When neither side varies, t is 0 and
    p is 1 for equal means, t is ±inf and p is 0 otherwise (scipy would return nan).
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's t-test needs at least two values on each side")
    if statistics.pvariance(a) == 0 and statistics.pvariance(b) == 0:
        diff = statistics.fmean(a) - statistics.fmean(b)
        return (0.0, 1.0) if diff == 0 else (math.copysign(math.inf, diff), 0.0)
    try:
        from scipy import stats as scipy_stats  # type: ignore[import-untyped]
    except ImportError:
        raise DependencyError(SCIPY_MISSING) from None
    with warnings.catch_warnings():
        # scipy warns when one side's values are all equal; its result is still exact.
        warnings.filterwarnings("ignore", "Precision loss", RuntimeWarning)
        result = scipy_stats.ttest_ind(list(a), list(b), equal_var=False)
    return float(result.statistic), float(result.pvalue)


def significant(a: Sequence[float], b: Sequence[float], *, alpha: float = 0.05) -> bool | None:
    """Whether the means differ at level alpha; None with fewer than two values on a side."""
    if len(a) < 2 or len(b) < 2:
        return None
    return welch_t_test(a, b)[1] < alpha


def ratio_interval(
    a: Sequence[float], b: Sequence[float], *, confidence: float = 0.95
) -> tuple[float, float] | None:
    """Fieller's confidence interval of mean(b) / mean(a), with Welch's degrees of freedom.

    The two sides are independent samples with unequal variances. The degrees of freedom are
    Welch-Satterthwaite's for mean(b) - R mean(a) at the estimate R (Tamhane and Logan's
    "Fieller-Welch" interval). None with fewer than two values on a side; (-inf, inf) when
    mean(a) is not clear of zero at this confidence, so no finite interval exists.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    mean_a, mean_b = statistics.fmean(a), statistics.fmean(b)
    var_a, var_b = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if mean_a == 0:
        return (-math.inf, math.inf)
    ratio = mean_b / mean_a
    spread = var_b**2 / (len(b) - 1) + ratio**4 * var_a**2 / (len(a) - 1)
    df = (var_b + ratio**2 * var_a) ** 2 / spread if spread > 0 else math.inf
    t = _t_quantile(1 - (1 - confidence) / 2, df)
    quad = mean_a**2 - t**2 * var_a
    half = mean_a**2 * var_b + mean_b**2 * var_a - t**2 * var_a * var_b
    if quad <= 0 or half < 0:
        return (-math.inf, math.inf)
    root = t * math.sqrt(half)
    return ((mean_a * mean_b - root) / quad, (mean_a * mean_b + root) / quad)


def _t_quantile(q: float, df: float) -> float:
    try:
        from scipy import stats as scipy_stats
    except ImportError:
        raise DependencyError(SCIPY_MISSING) from None
    return float(scipy_stats.t.ppf(q, df))
