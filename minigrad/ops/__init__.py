"""Primitive operations: one Function per primitive, its backward beside its forward."""
