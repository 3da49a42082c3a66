"""Errors raised by minigrad's linear algebra, and its warning of an ill-conditioned gradient."""

import os
import sys
import types
import warnings


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not produce a trustworthy result.

    Raised for non-finite input (NaN or Inf) and for an iterative method that did not
    converge within its cap. Like ``torch.linalg.LinAlgError`` it subclasses RuntimeError,
    so ``except RuntimeError`` keeps working for code ported from PyTorch.
    """


class IllConditionedWarning(LinAlgError, RuntimeWarning):
    """A gradient that exists but is ill-conditioned: the loss reads the singular vectors
    (or eigenvectors) of two values closer than sqrt(eps) times the largest, but not tied
    (or of a value that close to 0). The gradient returned is the plain formula's; the
    message estimates how far it may be off. A warning, so that training goes on;
    ``warnings.simplefilter("error", IllConditionedWarning)`` raises it instead, as the
    LinAlgError (a RuntimeError) it also is.
    """


def warn_outside(message: str) -> None:
    """warnings.warn(message, IllConditionedWarning), attributed to the first caller outside
    minigrad (the user's ``backward()`` line), where the filters' once-per-place applies."""
    level = 2
    frame: types.FrameType | None = sys._getframe(1)  # stacklevel 2: warn_outside's caller
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, IllConditionedWarning, stacklevel=level)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
