import itertools
import pathlib
from collections import defaultdict

import pytest
from nbval.plugin import IPyNbCell


def packages_under(tests: pathlib.Path) -> list[str]:
    """The folders of tests/ that hold an ``__init__.py``, tests/ itself included."""
    inits = [tests / "__init__.py", *tests.glob("*/__init__.py")]
    return sorted(str(init.parent.relative_to(tests.parent)) for init in inits if init.exists())


# tests/ and its folders are not packages, and must not become ones: pytest (its default rootdir-based "prepend"
# imports) would put tests/ on sys.path and import tests/labkit and tests/torch as the packages ``labkit`` and
# ``torch``, shadowing the real ones for every test. Checked before this file imports either.
PACKAGES = packages_under(pathlib.Path(__file__).parent)
if PACKAGES:
    raise pytest.UsageError(
        f"{', '.join(f'{folder}/__init__.py' for folder in PACKAGES)}: delete "
        "it; the folders of tests/ are not packages (tests/labkit would shadow labkit, tests/torch torch), and "
        "pyproject's pythonpath makes their helpers importable")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

import labkit  # noqa: E402
from labkit import _torch as internals  # noqa: E402
from op_namespaces import TEST_NAMESPACES  # noqa: E402 - it reads torch's namespaces now, before any test file
from repo import ROOT  # noqa: E402


@pytest.fixture(autouse=True, scope="session")
def lab_cache_policy():
    """The tests run as a notebook does after ``labkit.setup()``: fingerprinted caches."""
    labkit.cache.enable()
    yield
    labkit.cache.set_policy("default")


@pytest.fixture(autouse=True)
def clean_lab_namespace():
    """Each test starts and ends with no ops in the test namespaces: labkit's, and raw ones a test made; and with
    labkit speaking English (a test that asked for Chinese and failed before asking back leaves no trace)."""
    _clean()
    labkit.language.use_language("en")
    yield
    labkit.language.use_language("en")
    _clean()


def _clean():
    for name in internals.custom_op_qualnames():
        if name.split("::")[0] in TEST_NAMESPACES:
            if labkit.ops.owns(name):
                labkit.drop(name)
            else:  # a raw custom_op the test itself defined
                labkit.ops.destroy_custom_op(name)


# The files that take minutes in one test start first: under ./lab test's two workers (pytest-xdist,
# --dist loadfile --no-loadscope-reorder) each runs beside the rest instead of alone at the end.
LONGEST_FIRST = ("tests/notebooks/test_robustness.py", "tests/delivery/test_browser.py")
assert all((ROOT / path).is_file() for path in LONGEST_FIRST), f"tests/conftest.py: a file of {LONGEST_FIRST} is gone"


class RunAllAgainCell(IPyNbCell):
    """A notebook's code cell run a second time in the notebook's kernel, as an instructor's second Run All does.

    It fails on an error and compares no output (a second run may print less: warnings shown once, caches hit).
    """

    SUFFIX = " (Run All again)"

    @classmethod
    def after(cls, cell: IPyNbCell) -> "RunAllAgainCell":
        again = cls.from_parent(cell.parent, name=cell.name + cls.SUFFIX, cell_num=cell.cell_num, cell=cell.cell,
                                options=defaultdict(bool, cell.options, check=False))
        again.add_marker(pytest.mark.slow)  # ./lab quick (-m "not slow") runs each notebook once
        return again

    def reportinfo(self):
        path, line, description = super().reportinfo()
        return path, line, description + self.SUFFIX


def run_all_again(items: list) -> list:
    """After each notebook's last cell, every code cell of it once more, in the kernel nbval already started for it
    (on whichever worker runs that notebook) rather than in a second kernel of its own."""
    out = []
    for _, group in itertools.groupby(items, key=lambda item: item.parent):   # a notebook's cells are together
        group = list(group)
        out += group + [RunAllAgainCell.after(cell) for cell in group if type(cell) is IPyNbCell]
    return out


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects: the second runs are marked slow
def pytest_collection_modifyitems(config, items):
    def rank(item):
        path = item.nodeid.split("::")[0]
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items[:] = run_all_again(items)
    items.sort(key=rank)  # stable: every other test keeps its place, a notebook's cells their order
