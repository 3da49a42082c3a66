"""Reverse-mode autodiff: backward, grad, Function, gradcheck, functional (jacobian, hessian)."""

from . import functional
from .api import backward, grad
from .function import Context, Function
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["Function", "Context", "backward", "grad", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "functional"]
