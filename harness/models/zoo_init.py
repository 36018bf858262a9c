"""How the zoo's CNN generators draw their weights, by generator version.

Version 1 (the models of results recorded before #25): He-normal convs, BatchNorm statistics
drawn around the expected variance, a plain N(0, std^2) classifier. Its post-ReLU inputs have a
positive mean that each conv multiplies by its filter's (random) sum, so every channel carries a
large input-independent offset: the classifiers answer one class for nearly every input.

Version 2 keeps the graphs and draws, and removes that offset where it arises:

- every conv filter sums to zero over its input channels at each kernel tap (a depthwise
  filter: over each row and each column of taps), so inputs that share one mean, whatever it
  is, contribute none, at the borders too (a depthwise one: but at the corners); each filter
  then has unit norm, so a conv keeps its input's variance;
- BatchNorm holds the statistics a calibration pass would find on that: mean 0 and the tracked
  variance (gamma 1), so each normalised output has about unit variance; beta is ACT_SHIFT
  before an activation (see there), else 0;
- the classifier's rows sum to zero (the pooled features' common mean cancels) and are scaled
  so the logits spread across inputs (the tiny CNN, without BatchNorm, also centres its logits
  by a float64 pass: harness.models.zoo_reference).

Every constant follows from the seed alone, with no onnxruntime inference: a generator's output
is the same bytes on every machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol

import numpy as np

from harness.models.zoo_graph import Graph


class Moments(NamedTuple):
    """The tracked statistics of a tensor's elements (version 1 tracked its second moment)."""

    mean: float
    var: float


# The model's input: standard-normal samples.
INPUT: Final = Moments(0.0, 1.0)


def relu_moments(pre: Moments) -> Moments:
    """Mean and variance of ReLU(z) for z ~ N(pre.mean, pre.var)."""
    sigma = math.sqrt(pre.var)
    a = pre.mean / sigma
    cdf = 0.5 * (1.0 + math.erf(a / math.sqrt(2.0)))
    pdf = math.exp(-0.5 * a * a) / math.sqrt(2.0 * math.pi)
    mean = pre.mean * cdf + sigma * pdf
    second = (pre.mean**2 + pre.var) * cdf + pre.mean * sigma * pdf
    return Moments(mean, second - mean * mean)


class Init(Protocol):
    """One generator version's weights: conv filters, BatchNorm statistics, the classifier."""

    @property
    def version(self) -> int:
        """The generator version."""
        ...

    def conv_weight(
        self, g: Graph, name: str, shape: tuple[int, int, int, int], gain: float
    ) -> str:
        """Adds a conv weight [cout, cin/group, k, k]; version 2 scales it by ``gain``."""
        ...

    def batch_norm(
        self, g: Graph, name: str, channels: int, conv_in: Moments, act: bool
    ) -> list[str]:
        """Adds gamma, beta, mean and variance after a conv of an input with these moments.

        ``act``: an activation follows.
        """
        ...

    def after(self, act: bool) -> Moments:
        """The moments of a BatchNorm output, with or without its activation."""
        ...

    def pooled(self) -> Moments:
        """The moments after ResNet's 3x3 max-pool of ReLU outputs."""
        ...

    def add(self, x: Moments, h: Moments, *, relu: bool, projected: bool = False) -> Moments:
        """The moments of a residual sum x + h (then ReLU); ``projected``: x is a conv's."""
        ...

    def dense_weight(self, g: Graph, name: str, shape: tuple[int, int], std: float) -> str:
        """Adds a classifier weight [n_out, n_in]; ``std`` is version 1's."""
        ...


@dataclass(frozen=True)
class InitV1:
    """Generator version 1, kept draw for draw: its models must stay byte-identical."""

    version: int = 1

    def conv_weight(
        self, g: Graph, name: str, shape: tuple[int, int, int, int], gain: float
    ) -> str:
        """He-normal: N(0, 2 / fan_in)."""
        del gain  # He-normal
        fan_in = shape[1] * shape[2] * shape[3]
        return g.normal(name, shape, math.sqrt(2.0 / fan_in))

    def batch_norm(
        self, g: Graph, name: str, channels: int, conv_in: Moments, act: bool
    ) -> list[str]:
        """Statistics drawn around the variance the conv is expected to give."""
        expected_var = 2.0 * conv_in.var
        return [
            g.uniform(f"{name}.weight", channels, 0.9, 1.1),
            g.normal(f"{name}.bias", (channels,), 0.02),
            g.normal(f"{name}.running_mean", (channels,), 0.02),
            g.uniform(f"{name}.running_var", channels, 0.8 * expected_var, 1.2 * expected_var),
        ]

    def after(self, act: bool) -> Moments:
        """Second moments of ReLU(N(0, 1)) and N(0, 1)."""
        return Moments(0.0, 0.5 if act else 1.0)  # second moments of ReLU(N(0, 1)), N(0, 1)

    def pooled(self) -> Moments:
        """The max of 3x3 ReLU outputs: a larger second moment than each one."""
        return Moments(0.0, 2.0)  # the max of 3x3 ReLU outputs: larger than each one

    def add(self, x: Moments, h: Moments, *, relu: bool, projected: bool = False) -> Moments:
        """A normalised shortcut gives ~1; an identity one keeps its own plus the branch's."""
        return Moments(0.0, 1.0 if projected else x.var + h.var)

    def dense_weight(self, g: Graph, name: str, shape: tuple[int, int], std: float) -> str:
        """N(0, std^2)."""
        return g.normal(name, shape, std)


# Version 2's pre-activations are N(ACT_SHIFT, 1). Centred at 0, a ReLU after offset-free
# convs and BatchNorm would amplify small differences (a rounding, a quantization) by about
# 1.47 per layer (1/2 over the variance 0.34 of ReLU(N(0, 1))): FP16 changed 1 in 8 of
# ResNet-50's answers and INT8 all of them. Shifted by 2, a ReLU clips 2 % and amplifies them by
# ~1.02 (0.977 / 0.961), so rounding changes few answers while the answers follow the input.
ACT_SHIFT: Final = 2.0
SHIFTED: Final = Moments(ACT_SHIFT, 1.0)

# A 3x3, stride-2 max-pool of ReLU(N(ACT_SHIFT, 1)) outputs of a 7x7 conv, as measured on random
# inputs (its neighbours are correlated, so no closed form of independent maxima applies).
POOLED: Final = Moments(3.46, 0.359)

# Version 2's logit scale: the classifier's rows have this norm over the pooled features'
# (small) input-dependent part, so the logits of random inputs spread by a few units.
LOGIT_GAIN: Final = 8.0


@dataclass(frozen=True)
class InitV2:
    """Generator version 2: offsets cancelled at every conv, calibrated BatchNorm, spread logits."""

    version: int = 2

    def conv_weight(
        self, g: Graph, name: str, shape: tuple[int, int, int, int], gain: float
    ) -> str:
        """Zero sum at each tap over input channels (depthwise: rows, columns), norm ``gain``."""
        w = g.rng.standard_normal(shape, dtype=np.float32).astype(np.float64)
        if shape[1] > 1:  # at each tap, across input channels
            w -= _reduced(w.mean(axis=1, keepdims=True))
        else:  # depthwise: each row and column of taps, so a border's missing ones sum to 0
            w -= _reduced(w.mean(axis=2, keepdims=True))
            w -= _reduced(w.mean(axis=3, keepdims=True))
        norm = np.sqrt(np.sum(w * w, axis=(1, 2, 3), keepdims=True))
        return g.init(name, (w * _reduced(gain / norm)).astype(np.float32))

    def batch_norm(
        self, g: Graph, name: str, channels: int, conv_in: Moments, act: bool
    ) -> list[str]:
        """Mean 0 and the input's variance, which a unit-norm filter without offset passes on.

        Before an activation, beta is ACT_SHIFT (see there).
        """
        return [
            g.init(f"{name}.weight", np.ones(channels, np.float32)),
            g.init(f"{name}.bias", np.full(channels, ACT_SHIFT if act else 0.0, np.float32)),
            g.init(f"{name}.running_mean", np.zeros(channels, np.float32)),
            g.init(f"{name}.running_var", np.full(channels, conv_in.var, np.float32)),
        ]

    def after(self, act: bool) -> Moments:
        """The moments of ReLU(N(ACT_SHIFT, 1)) and N(0, 1)."""
        return relu_moments(SHIFTED) if act else INPUT

    def pooled(self) -> Moments:
        """Measured: see POOLED."""
        return POOLED

    def add(self, x: Moments, h: Moments, *, relu: bool, projected: bool = False) -> Moments:
        """Independent terms' means and variances add; ReLU's by the Gaussian formulas."""
        total = Moments(x.mean + h.mean, x.var + h.var)  # independent: their variances add
        return relu_moments(total) if relu else total

    def dense_weight(self, g: Graph, name: str, shape: tuple[int, int], std: float) -> str:
        """Rows of norm LOGIT_GAIN summing to zero (``std`` is version 1's)."""
        del std
        w = g.rng.standard_normal(shape, dtype=np.float32).astype(np.float64)
        w -= _reduced(w.mean(axis=1, keepdims=True))
        w *= _reduced(LOGIT_GAIN / np.sqrt(np.sum(w * w, axis=1, keepdims=True)))
        return g.init(name, w.astype(np.float32))


def _reduced(values: np.ndarray) -> np.ndarray:
    """A reduction's float64 result rounded to float32, then used exactly.

    numpy may sum in another order on another CPU, changing a float64 result's last bit; one
    float32 rounding hides that (but with odds of about 2^-29 a value), and what follows is
    exact or rounded element by element, so the model is the same bytes everywhere.
    """
    rounded: np.ndarray = values.astype(np.float32).astype(np.float64)
    return rounded


INITS: Final[dict[int, Init]] = {1: InitV1(), 2: InitV2()}
