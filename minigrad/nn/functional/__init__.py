"""Stateless layer and loss functions (torch.nn.functional names, signatures and defaults).

One family per file: activations, layers (linear, dropout, embedding, padding, distances),
convolutions, pooling, normalisation and losses; ``_fused`` holds the Functions that make the
common layers and losses one graph node each. Names with an underscore are private to this package.
"""

from ._activation import (celu, elu, gelu, glu, hardsigmoid, hardswish, hardtanh, leaky_relu,
                          log_softmax, logsigmoid, mish, prelu, relu, relu6, selu, sigmoid, silu,
                          softmax, softmin, softplus, softsign, tanh, tanhshrink, threshold)
from ._conv import conv1d, conv2d
from ._layers import (cosine_similarity, dropout, embedding, linear, one_hot, pad,
                      pairwise_distance)
from ._loss import (binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy,
                    huber_loss, kl_div, l1_loss, mse_loss, nll_loss, smooth_l1_loss)
from ._loss import _legacy_reduction  # noqa: F401  (nn's loss modules use it)
from ._normalization import batch_norm, layer_norm, normalize, rms_norm
from ._pooling import (adaptive_avg_pool1d, adaptive_avg_pool2d, avg_pool1d, avg_pool2d,
                       max_pool1d, max_pool2d)

__all__ = ["linear", "relu", "relu6", "hardtanh", "tanh", "sigmoid", "hardsigmoid", "hardswish",
           "silu", "mish", "gelu", "leaky_relu", "elu", "selu", "celu", "softplus", "logsigmoid",
           "softsign", "tanhshrink", "threshold", "glu", "prelu", "softmax", "softmin",
           "log_softmax", "dropout", "layer_norm", "rms_norm", "batch_norm", "normalize",
           "embedding", "one_hot", "pad", "cosine_similarity", "pairwise_distance", "mse_loss",
           "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "nll_loss", "cross_entropy",
           "conv1d", "conv2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d"]
