"""Neural-network building blocks with torch's names: Module, Parameter, layers, losses."""

from . import functional, init, utils
from .module import Module
from .modules import (BCELoss, BCEWithLogitsLoss, CELU, CosineSimilarity, CrossEntropyLoss,
                      Dropout, ELU, Embedding, Flatten, GELU, GLU, Hardsigmoid, Hardswish,
                      Hardtanh, HuberLoss, Identity, KLDivLoss, L1Loss, LayerNorm, LeakyReLU,
                      Linear, LogSigmoid, LogSoftmax, MSELoss, Mish, ModuleDict, ModuleList,
                      NLLLoss, PReLU, PairwiseDistance, ParameterDict, ParameterList, ReLU, ReLU6,
                      RMSNorm, SELU, Sequential, SiLU, Sigmoid, SmoothL1Loss, Softmax, Softmin,
                      Softplus, Softsign, Tanh, Tanhshrink, Threshold, Unflatten, BatchNorm1d,
                      BatchNorm2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d,
                      AdaptiveAvgPool1d, AdaptiveAvgPool2d)
from .parameter import Parameter

__all__ = ["Module", "Parameter", "functional", "init", "utils",
           # layers
           "Linear", "Identity", "Dropout", "LayerNorm", "RMSNorm", "BatchNorm1d", "BatchNorm2d",
           "Embedding", "Flatten", "Unflatten", "CosineSimilarity", "PairwiseDistance",
           "Conv1d", "Conv2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           # activations
           "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "CELU", "SELU", "GELU", "SiLU", "Mish",
           "Tanh", "Sigmoid", "LogSigmoid", "Softplus", "Softsign", "Tanhshrink", "Hardtanh",
           "Hardsigmoid", "Hardswish", "Threshold", "GLU", "Softmax", "LogSoftmax", "Softmin",
           # containers
           "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
           # losses
           "MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "BCEWithLogitsLoss",
           "NLLLoss", "CrossEntropyLoss", "KLDivLoss"]
