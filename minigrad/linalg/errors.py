"""Errors raised by minigrad's linear algebra."""


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not produce a trustworthy result.

    Raised for non-finite input (NaN or Inf) and for an iterative method that did not
    converge within its cap. Like ``torch.linalg.LinAlgError`` it subclasses RuntimeError,
    so ``except RuntimeError`` keeps working for code ported from PyTorch.
    """
