"""labkit.boundaries and labkit.charts: a C++ kernel compiled and loaded with ctypes computes what torch computes,
is compiled once per source, and refuses bad input in one sentence; the cost per call is measured for every
boundary; the chart draws what it is given and refuses what it cannot draw."""

import os
import pathlib

import pytest
import torch

import labkit
from labkit import boundaries, charts

SOFTCLIP = r"""
#include <cmath>
#include <cstdint>
extern "C" void softclip(const float *x, float *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] / (1.0f + std::fabs(x[i]));
}
"""


def _run(kernel, x):
    out = torch.empty_like(x)
    kernel(x.data_ptr(), out.data_ptr(), x.numel())
    return out


def test_a_c_kernel_computes_what_torch_computes_and_is_compiled_once():
    x = torch.randn(1000)
    torch.testing.assert_close(_run(boundaries.c_kernel("softclip", SOFTCLIP), x), x / (1 + x.abs()))
    built = sorted(boundaries.KERNELS.glob("softclip-*.so"))
    stamps = [p.stat().st_mtime_ns for p in built]
    boundaries.c_kernel("softclip", SOFTCLIP)
    assert [p.stat().st_mtime_ns for p in sorted(boundaries.KERNELS.glob("softclip-*.so"))] == stamps, "reused"
    assert not list(boundaries.KERNELS.glob("*.partial.so")) and not list(boundaries.KERNELS.glob("*.cpp")), \
        "no half-written library or source file is left"
    assert boundaries.KERNELS.is_relative_to(pathlib.Path.home()) or "XDG_CACHE_HOME" in os.environ, "the user's own"


@pytest.mark.parametrize("name, source, said", [
    ("soft clip", SOFTCLIP, "takes the C function's name, an identifier"),
    ("softclp", SOFTCLIP, "has no function 'softclp': declare it extern \"C\""),
    ("broken", 'extern "C" void broken( {', "refused the source: broken-"),
    ("empty", "", "has no function 'empty'"),
])
def test_a_bad_kernel_is_one_sentence(name, source, said):
    with pytest.raises(labkit.LabOpError) as refused:
        boundaries.c_kernel(name, source)
    assert said in str(refused.value) and "\n" not in str(refused.value), str(refused.value)
    assert str(boundaries.KERNELS) not in str(refused.value), "the compiler's line without the cache folder"


@pytest.mark.parametrize("functions", [{}, {"a": 3}, [len], None])
def test_what_per_call_us_cannot_time_is_one_sentence(functions):
    with pytest.raises(TypeError, match="times {name: function}, a dict of callables") as refused:
        boundaries.per_call_us(functions, torch.ones(2))
    assert "\n" not in str(refused.value)


def test_a_source_that_is_not_text_is_one_sentence():
    with pytest.raises(labkit.LabOpError, match=r"takes the C\+\+ source as a str"):
        boundaries.c_kernel("softclip", b"bytes")


def test_the_cost_per_call_is_measured_for_every_boundary():
    x = torch.randn(8)
    costs = boundaries.per_call_us({"add": lambda t: t + 1, "sleep-free": lambda t: t}, x, number=50, repeat=2)
    assert list(costs) == ["add", "sleep-free"] and all(0 < us < 1e5 for us in costs.values()), costs
    assert costs["add"] > costs["sleep-free"], "an op costs more than returning the argument"


def test_the_chart_draws_one_bar_per_boundary_and_refuses_what_it_cannot_draw():
    figure = charts.per_call({"a": 3.0, "b": 12.5})
    assert len(figure.axes[0].patches) == 2
    assert {t.get_text().strip() for t in figure.axes[0].texts} == {"3.0 µs", "12.5 µs"}
    for bad in ({}, {"a": -1.0}, {"a": "fast"}):
        with pytest.raises(ValueError, match="positive microseconds per boundary"):
            charts.per_call(bad)


def test_the_outcome_grid_draws_each_outcome_in_its_tone_and_refuses_a_ragged_table():
    figure = charts.outcome_grid({"plain": {"compile": ("traced", "ok"), "export": ("aten ops", "ok")},
                                  "ctypes": {"compile": ("graph break", "warn"), "export": ("fails", "bad")}})
    cells = {t.get_text(): t for t in figure.axes[0].texts}
    assert {"traced", "aten ops", "graph break", "fails", "compile", "export", "plain", "ctypes"} <= set(cells)
    colours = [p.get_facecolor() for p in figure.axes[0].patches]
    assert len(colours) == 4 and len(set(colours)) == 3, "ok, ok, warn, bad: three tones"
    for bad in ({}, {"a": {"x": ("w", "ok")}, "b": {"y": ("w", "ok")}}, {"a": {"x": ("w", "green")}}):
        with pytest.raises(ValueError, match="the same questions in every row"):
            charts.outcome_grid(bad)
