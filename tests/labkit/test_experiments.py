"""labkit.experiments: dead-code elimination of custom ops and dynamic shapes (dce_experiment, and notebook 05's
DynamicLab over it): what keeps an op alive, static vs dynamic shapes, data-dependent ops; against real torch (CPU;
CUDA when present). The declaration experiment is driven through its widget in test_widgets.py."""

import itertools

import re

import pytest
import torch

from labkit import compile_and_compare, declare
from labkit.experiments import DCE_DECLARATIONS, DYNAMIC_CHOICES, dce_experiment, devices
from labkit.widgets import DynamicLab

KEPT = {"pure, result unused": False, "-> None with a Python side effect": False,
        "declared mutation of x": True, "has_side_effect": True, "effectful (ordered)": True}
GRAPHS = {"False": [1, 1, 1], "True": [1, 0, 0], "None": [1, 1, 0]}
cuda_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def lab():
    return DynamicLab(namespace="t_dce")


@pytest.mark.parametrize("dynamic, declaration", list(itertools.product(DYNAMIC_CHOICES, DCE_DECLARATIONS)))
def test_removal_depends_on_the_declaration_not_on_shapes(lab, dynamic, declaration):
    lab.set(dynamic=dynamic, declaration=declaration, shapes="4 → 6 → 8")
    report = lab.report
    name = lab.result()[0].name
    assert report.fate(name)["ran"] is KEPT[declaration]
    assert report.compiled_calls[name] == (3 if KEPT[declaration] else 0)
    assert report.graphs_per_call == GRAPHS[dynamic]
    assert report.verdict.agree
    assert ("removed" in lab.view.value) is (not KEPT[declaration])


def test_symbolic_sizes_appear_after_the_automatic_recompile(lab):
    lab.set(dynamic="None", declaration="pure, result unused", shapes="4 → 6 → 8")
    first, second = lab.report.dynamo_graphs
    assert first.input_shapes == ("[4]",) and second.input_shapes[-1].startswith("[s")


def test_a_repeated_shape_never_recompiles(lab):
    lab.set(dynamic="False", shapes="4 → 4 → 4")
    assert lab.report.graphs_per_call == [1, 0, 0]
    lab.set(dynamic="False", shapes="4 → 6 → 4")
    assert lab.report.graphs_per_call == [1, 1, 0]


def test_effects_show_as_with_effects_and_seeded_ops_are_removed():
    _, report = dce_experiment("effectful (ordered)", False, (4,), backend="aot_eager", namespace="t_dce")
    assert report.aot_graphs[0].calls("t_dce::effectful__ordered")[0].wrapper == "with_effects"
    seeded = declare(name="t::seeded", returns="fresh", tags=("nondeterministic_seeded",))
    report = compile_and_compare(lambda x: (seeded(x), x + 1)[1], torch.ones(3), backend="inductor")
    assert report.fate("t::seeded")["ran"] is False


def test_a_declared_mutation_of_a_dead_temporary_is_removed():
    fill = declare(name="t::fill", args=("x", "buf"), writes=("buf",), mutates_args=("buf",), returns="none")

    def dead_temporary(x):
        buf = torch.empty_like(x)
        fill(x, buf)
        return x + 1

    report = compile_and_compare(dead_temporary, torch.ones(3), backend="inductor")
    assert report.fate("t::fill") == {"dynamo": True, "aot": False, "inductor": False, "ran": False}


def test_fullgraph_false_does_not_make_a_shape_following_op_run_eagerly(capsys):
    pure = declare(name="t::pure", returns="fresh")

    def with_break(x):
        pure(x)
        print("a graph break")
        return x + 1

    report = compile_and_compare(with_break, torch.ones(3), backend="inductor", fullgraph=False)
    assert report.graphs_per_call == [2] and report.compiled_calls["t::pure"] == 0


@pytest.mark.parametrize("fullgraph, in_graph, kernel_ran", [(False, False, True), (True, True, True)])
def test_a_data_dependent_op_breaks_the_graph_or_is_kept_by_its_runtime_assert(fullgraph, in_graph, kernel_ran):
    """Its unused result does not make it removable: under fullgraph=False Dynamo breaks the graph at it
    (the kernel runs eagerly), under fullgraph=True it is captured and its unbacked size's assert keeps it."""
    op, report = dce_experiment("pure, result unused", None, (4, 6, 4), namespace="t_dce", op_kind="data-dependent",
                                fullgraph=fullgraph)
    fate = report.fate(op.name)
    assert (fate["dynamo"], fate["ran"]) == (in_graph, kernel_ran) and report.verdict.agree
    pure, pure_report = dce_experiment("pure, result unused", None, (4, 6, 4), namespace="t_dce", fullgraph=fullgraph)
    assert not pure_report.fate(pure.name)["ran"]  # the shape-following op, same settings: removed


def test_a_data_dependent_size_needs_an_op_that_returns_a_tensor():
    with pytest.raises(ValueError, match="pure, result unused"):
        dce_experiment("has_side_effect", None, namespace="t_dce", op_kind="data-dependent")


@pytest.mark.parametrize("device", ["meta", "mps", "cuda:7", "gpu", ""] + ([] if "cuda" in devices() else ["cuda"]))
def test_an_unavailable_device_is_refused_with_a_sentence(device):
    """Devices that are never a choice (and CUDA where there is no GPU): refused before anything runs."""
    with pytest.raises(ValueError, match=rf"^device '{re.escape(device)}' is not available here; pick one of "
                                         rf"{re.escape(str(devices()))}\.$"):
        dce_experiment("pure, result unused", False, device=device, namespace="t_dce")


@cuda_only
@pytest.mark.parametrize("declaration", ["pure, result unused", "has_side_effect"])
def test_custom_op_dce_dynamic_shapes_cuda(declaration):
    """The scenario of the seed's disabled CI test, on a GPU: under dynamic shapes an unused pure op
    is removed and a side-effecting one kept; the generated code is Triton."""
    op, report = dce_experiment(declaration, True, (4, 6, 8), device="cuda", namespace="t_dce_gpu")
    assert report.fate(op.name)["ran"] is KEPT[declaration]
    assert report.graphs_per_call == [1, 0, 0] and report.verdict.agree
    assert any("triton" in code for code in report.inductor_code)
