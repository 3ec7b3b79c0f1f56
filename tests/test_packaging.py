"""Requirements stay friendly to Colab (torch already there, ipywidgets 7.7) and Binder (CPU torch)."""

import pathlib
import re

from labkit.env import minimum_torch_text

ROOT = pathlib.Path(__file__).resolve().parents[1]


def _requirements(path):
    return [line.split("#")[0].strip() for line in (ROOT / path).read_text().splitlines()
            if line.split("#")[0].strip()]


def test_torch_is_a_range_never_a_pin_for_users():
    floor = f"torch>={minimum_torch_text()}"  # the lab's one minimum (tests/test_env.py checks it)
    for path in ("requirements.txt",):
        torch_lines = [r for r in _requirements(path) if re.match(r"torch\b", r)]
        assert torch_lines == [floor], path
    assert f'"{floor}"' in (ROOT / "pyproject.toml").read_text()


def test_ipywidgets_accepts_colabs_7_7():
    assert "ipywidgets>=7.7,<9" in _requirements("requirements.txt")
    assert '"ipywidgets>=7.7,<9"' in (ROOT / "pyproject.toml").read_text()


def test_binder_and_the_lab_script_install_a_cpu_build():
    binder = _requirements("binder/requirements.txt")
    assert "torch==2.13.0+cpu" in binder and "-e ." in binder
    lab = (ROOT / "lab").read_text()
    assert "whl/cpu" in lab and 'reference_torch=2.13.0' in lab


def test_ci_runs_exactly_the_readme_test_command():
    assert "exec ./lab test" in (ROOT / ".ci" / "run").read_text()
    assert "./lab test" in (ROOT / "README.md").read_text()


def test_preflight_passes_here(capsys):
    from labkit import preflight

    assert preflight.run()
    assert "ready" in capsys.readouterr().out
