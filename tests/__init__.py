"""The test suite, in folders that mirror minigrad/. Each folder is a package so that two
folders may hold files of the same name (tests/tensor/test_basics.py, tests/nn/test_basics.py)."""
