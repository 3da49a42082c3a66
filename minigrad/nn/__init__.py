"""Neural-network building blocks with torch's names: Module, Parameter, layers, losses."""

from . import functional, init, utils
from .module import Module
from .modules import (CrossEntropyLoss, Flatten, Identity, Linear, LogSoftmax, MSELoss,
                      ModuleList, ReLU, Sequential, Sigmoid, Softmax, Tanh)
from .parameter import Parameter

__all__ = ["Module", "Parameter", "Linear", "Identity", "ReLU", "Tanh", "Sigmoid", "Softmax",
           "LogSoftmax", "Flatten", "Sequential", "ModuleList", "MSELoss", "CrossEntropyLoss",
           "functional", "init", "utils"]
