"""A float64 numpy forward pass of the tiny CNN, to calibrate its classifier's bias (version 2).

The tiny CNN has no BatchNorm, so its channels keep unequal means that no seed-only rule
removes; their effect on the logits is measured here instead, on seeded inputs. float64 and
a coarse rounding of the result make the bias the same bytes on every machine (onnxruntime's
float32 kernels differ across CPUs).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]

CALIBRATION_SAMPLES: Final = 16
# The bias is rounded to this step: far below the logits' spread, far above float64's noise.
BIAS_STEP: Final = 2.0**-12


def _conv3x3(x: F64, w: F64, bias: F64) -> F64:
    """'Same' 3x3 convolution of [N, C, H, W] by [O, C, 3, 3]."""
    n, c, h, width = x.shape
    padded = np.pad(x.transpose(0, 2, 3, 1), ((0, 0), (1, 1), (1, 1), (0, 0)))  # NHWC
    taps = [padded[:, dy : dy + h, dx : dx + width, :] for dy in range(3) for dx in range(3)]
    cols = np.stack(taps, axis=3).reshape(n * h * width, 9 * c)  # each row: [tap, channel]
    kernel = w.transpose(2, 3, 1, 0).reshape(9 * c, -1)  # [tap, channel] x out
    out = (cols @ kernel + bias).reshape(n, h, width, -1)
    nchw: F64 = np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    return nchw


def _max_pool2(x: F64) -> F64:
    n, c, h, w = x.shape
    pooled: F64 = x.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
    return pooled


def tiny_pooled_mean(
    convs: Sequence[tuple[F64, F64]], seed: int, samples: int = CALIBRATION_SAMPLES
) -> F64:
    """The tiny CNN's globally pooled features, averaged over seeded N(0, 1) inputs.

    Args:
        convs: Each conv's (weight [O, C, 3, 3], bias [O]), in order.
        seed: The model's seed; the inputs are drawn from their own stream of it.
        samples: How many inputs.
    """
    rng = np.random.default_rng([seed, 25])
    x = rng.standard_normal((samples, 3, 32, 32), dtype=np.float32).astype(np.float64)
    for i, (w, b) in enumerate(convs):
        x = np.maximum(_conv3x3(x, w, b), 0.0)
        if i in (1, 2):
            x = _max_pool2(x)
    mean: F64 = x.mean(axis=(0, 2, 3))
    return mean


def centring_bias(weight: F64, pooled_mean: F64) -> npt.NDArray[np.float32]:
    """The bias that centres the logits of the pooled mean: -W mean, on a coarse grid."""
    bias = -(weight @ pooled_mean)
    return (np.round(bias / BIAS_STEP) * BIAS_STEP).astype(np.float32)
