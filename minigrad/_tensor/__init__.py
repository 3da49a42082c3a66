"""Tensor's methods, one family per file, mixed into the class in tensor.py.

Each mixin holds methods only (no state): they delegate to the Functions in ops/ and reach
the Tensor class through the autograd seam (``function.tensor_class``), since tensor.py
imports them before the class exists.
"""

from .arith import ArithMethods
from .complex import ComplexMethods
from .convert import ConvertMethods
from .elementwise import ElementwiseMethods
from .indexing import IndexingMethods
from .inplace import InplaceMethods
from .linalg import LinalgMethods
from .products import ProductMethods
from .reduce import ReduceMethods
from .shape import ShapeMethods
from .sorting import SortMethods
from .special import SpecialMethods

__all__ = ["ArithMethods", "ComplexMethods", "ConvertMethods", "ElementwiseMethods",
           "IndexingMethods", "InplaceMethods", "LinalgMethods", "ProductMethods", "ReduceMethods",
           "ShapeMethods", "SortMethods", "SpecialMethods"]
