"""Learning-rate schedulers with torch.optim.lr_scheduler's names, formulas and step semantics.

A scheduler owns ``last_epoch`` (-1 before its first step; the constructor takes that step) and
writes ``group["lr"]`` of every parameter group. Like torch, most schedulers are *chainable*:
each step rescales the current lr, so two of them applied in turn compose. ``step(epoch)`` (which
torch deprecates) jumps with the closed form where one exists. Call ``scheduler.step()`` after
``optimizer.step()``.

One family per file: the base class and lambda schedules (``_base``), fixed decays
(``decay``), schedulers of schedulers (``composite``), ``plateau`` and the ``cyclic`` ones.
"""

# torch's module has these two as well, outside its __all__:
from ._base import EPOCH_DEPRECATION_WARNING, _LRScheduler  # noqa: F401
from ._base import LambdaLR, LRScheduler, MultiplicativeLR
from .composite import ChainedScheduler, SequentialLR
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR
from .decay import (ConstantLR, CosineAnnealingLR, ExponentialLR, LinearLR, MultiStepLR,
                    PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau

__all__ = ["LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR",
           "LinearLR", "ExponentialLR", "SequentialLR", "PolynomialLR", "CosineAnnealingLR",
           "ChainedScheduler", "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts",
           "OneCycleLR"]
