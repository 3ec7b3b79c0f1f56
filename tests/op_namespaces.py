"""The op namespaces the tests meet: their own, which tests/conftest.py empties around each test, and torch's.

torch's are read once, when tests/conftest.py imports this module: before any test file is imported, so that
no test's parameters depend on which files were collected before it (they define ops, and importing more of
torch registers more of its own).
"""

from labkit import _torch as internals

TEST_NAMESPACES = ("t", "t_naming", "t_adv", "mine")

TORCH_NAMESPACES = sorted({name.split("::")[0] for name in internals.custom_op_qualnames()} - set(TEST_NAMESPACES))
