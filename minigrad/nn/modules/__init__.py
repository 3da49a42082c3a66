"""Layers, activations, containers and losses (torch.nn names, signatures and defaults),
one family per file as in torch.nn.modules. Names with an underscore are private to this
package."""

from .activation import (CELU, ELU, GELU, GLU, Hardsigmoid, Hardswish, Hardtanh, LeakyReLU,
                         LogSigmoid, LogSoftmax, Mish, PReLU, ReLU, ReLU6, SELU, Sigmoid, SiLU,
                         Softmax, Softmin, Softplus, Softsign, Tanh, Tanhshrink, Threshold)
from .conv import Conv1d, Conv2d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .layers import (CosineSimilarity, Dropout, Embedding, Flatten, Identity, Linear,
                     PairwiseDistance, Unflatten)
from .loss import (BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, HuberLoss, KLDivLoss, L1Loss,
                   MSELoss, NLLLoss, SmoothL1Loss)
from .normalization import BatchNorm1d, BatchNorm2d, LayerNorm, RMSNorm
from .pooling import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AvgPool1d, AvgPool2d, MaxPool1d,
                      MaxPool2d)

__all__ = ["ReLU", "ReLU6", "SiLU", "Mish", "SELU", "Hardsigmoid", "Hardswish", "Tanh", "Sigmoid",
           "LogSigmoid", "Softsign", "Tanhshrink", "GELU", "LeakyReLU", "ELU", "CELU", "Softplus",
           "Hardtanh", "Threshold", "GLU", "PReLU", "Softmax", "LogSoftmax", "Softmin",
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity",
           "Linear", "Dropout", "Embedding", "CosineSimilarity", "PairwiseDistance", "Flatten",
           "Unflatten", "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss", "BCELoss",
           "BCEWithLogitsLoss", "NLLLoss", "CrossEntropyLoss", "LayerNorm", "RMSNorm",
           "BatchNorm1d", "BatchNorm2d", "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d",
           "AvgPool2d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d"]
