"""Thread-local switch for gradient recording: no_grad, enable_grad, set_grad_enabled,
inference_mode."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any


class _State(threading.local):
    def __init__(self) -> None:
        self.enabled = True  # every thread starts with recording on, as in torch
        self.inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """True when operations on tensors that require grad are recorded on the tape."""
    return _state.enabled


def _set(flag: bool) -> None:
    # inside inference_mode nothing records, enable_grad or not (torch's inference tensors)
    _state.enabled = bool(flag) and not _state.inference


class _GradMode:
    """Base of the three switches: a context manager that is also a decorator."""

    _flag: bool

    def __enter__(self) -> None:
        self._prev = is_grad_enabled()
        _set(self._flag)

    def __exit__(self, *exc: object) -> None:
        _set(self._prev)

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        flag = self._flag

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with set_grad_enabled(flag):
                return fn(*args, **kwargs)

        return wrapper


class _BareDecorator(_GradMode):
    """Also usable without parentheses, ``@mg.no_grad``, as torch 2 allows."""

    def __new__(cls, fn: Callable[..., Any] | None = None) -> Any:
        self = super().__new__(cls)
        return self if fn is None else self(fn)

    def __init__(self, fn: Callable[..., Any] | None = None) -> None:
        pass


class no_grad(_BareDecorator):
    """Disable recording: ``with mg.no_grad(): y = x * 2`` gives ``y.requires_grad == False``."""

    _flag = False


class enable_grad(_BareDecorator):
    """Re-enable recording inside a ``no_grad`` block."""

    _flag = True


class set_grad_enabled(_GradMode):
    """Set recording on or off; works as a function call, a context manager or a decorator.

    Like torch, calling it as a plain function takes effect immediately.
    """

    def __init__(self, mode: bool) -> None:
        self._flag = bool(mode)
        self._prev = is_grad_enabled()
        _set(self._flag)

    def __enter__(self) -> None:
        pass  # already switched in __init__

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        _set(self._prev)  # used as a decorator: undo the immediate switch
        return super().__call__(fn)


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``."""
    return _state.inference


class inference_mode:  # noqa: N801  (torch's spelling)
    """torch.inference_mode: recording off inside, and ``enable_grad`` does not turn it back
    on; mode=False turns inference mode off and recording on (inside an inference block, as
    torch's). minigrad has no separate inference tensors, so this is ``no_grad`` that
    ``is_inference_mode_enabled`` sees; a context manager and a decorator, with or without
    parentheses.

    >>> with mg.inference_mode():
    ...     (mg.ones(1, requires_grad=True) * 2).requires_grad
    False
    """

    mode: bool

    def __new__(cls, mode: Any = True) -> Any:
        self = super().__new__(cls)
        self.mode = True if callable(mode) else bool(mode)
        return self(mode) if callable(mode) else self  # @mg.inference_mode, bare

    def __enter__(self) -> None:
        self._prev = (_state.enabled, _state.inference)
        _state.enabled, _state.inference = not self.mode, self.mode

    def __exit__(self, *exc: object) -> None:
        _state.enabled, _state.inference = self._prev

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with inference_mode(mode):
                return fn(*args, **kwargs)

        return wrapper
