"""Errors raised by minigrad's linear algebra."""


class LinAlgError(RuntimeError):
    """A linear-algebra routine could not produce a trustworthy result.

    Raised for non-finite input (NaN or Inf) and for an iterative method that did not
    converge within its cap. Like ``torch.linalg.LinAlgError`` it subclasses RuntimeError,
    so ``except RuntimeError`` keeps working for code ported from PyTorch.
    """


class IllConditionedWarning(RuntimeWarning):
    """A gradient that exists but is ill-conditioned: a loss that reads the singular vectors
    (or eigenvectors) of two values closer than sqrt(eps) times the largest, but not tied.
    The gradient returned is the plain formula's, as accurate as those vectors are (the
    message gives the relative error to expect). ``warnings.simplefilter("error",
    IllConditionedWarning)`` turns it into an exception for code that must not go on.
    """
