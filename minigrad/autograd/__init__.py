"""Reverse-mode autodiff: backward, grad, Function, gradcheck, functional (jacobian, hessian)."""

from . import functional
from .api import backward, grad
from .function import Context, Function
from .grad_mode import (enable_grad, inference_mode, is_grad_enabled, is_inference_mode_enabled,
                        no_grad, set_grad_enabled)
from .gradcheck import gradcheck, gradgradcheck

__all__ = ["Function", "Context", "backward", "grad", "gradcheck", "gradgradcheck",
           "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled", "functional",
           "inference_mode", "is_inference_mode_enabled"]
