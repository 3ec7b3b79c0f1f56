import matplotlib
import pytest

matplotlib.use("Agg")

import labkit  # noqa: E402


@pytest.fixture(autouse=True)
def clean_lab_namespace():
    """Each test starts and ends with no ops in the test namespace."""
    labkit.drop_namespace("t")
    yield
    labkit.drop_namespace("t")
