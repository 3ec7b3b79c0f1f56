"""Random control sequences: no exception escapes, and every view matches the core computed from scratch."""

import random
import string

import pytest

from labkit import experiments as e, naming, widgets as w


def _facts(report):
    return (str(report.verdict), report.graphs_per_call, report.eager_calls, report.compiled_calls,
            getattr(report.error, "kind", None), getattr(report.eager_error, "kind", None))


def _random_value(rng, widget, name):
    control = widget.controls[name]
    if hasattr(control, "options"):
        return rng.choice(widget.choices()[name])
    alphabet = string.ascii_letters + string.digits + "_: .é∂'\"()"
    candidates = ["", "   ", "ok::fine", "aten::add", "ns::def", "a::b::c", "x" * 300, "ns::ópera",
                  "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 20)))]
    return rng.choice(candidates)


def _fuzz(widget, steps, seed, check):
    rng = random.Random(seed)
    for _ in range(steps):
        name = rng.choice(list(widget.controls))
        widget.controls[name].value = _random_value(rng, widget, name)
        assert "could not compute" not in widget.view.value, (widget.state, widget.view.value)
        assert widget.view.value == widget.render(widget.result()), widget.state  # never a stale view
        assert widget.describe() == ", ".join(f"{n}={v!r}" for n, v in zip(widget.controls, widget.state))
        check(widget)


def test_declaration_lab_fuzz():
    def check(lab):
        declaration, backend, dynamic = lab.state
        _, fresh = e.declaration_experiment(declaration, backend, e.DYNAMIC_CHOICES[dynamic], "t_fuzz_d")
        assert _facts(lab.report) == _facts(fresh), lab.state

    _fuzz(w.DeclarationLab(namespace="t_fuzz_d"), steps=14, seed=1, check=check)


def test_dynamic_lab_fuzz():
    def check(lab):
        dynamic, declaration, op_kind, fullgraph, shapes, device = lab.state
        _, fresh = e.dce_experiment(declaration, e.DYNAMIC_CHOICES[dynamic], e.SHAPE_SEQUENCES[shapes], device,
                                    namespace="t_fuzz_c", op_kind=op_kind,
                                    fullgraph=e.FULLGRAPH_CHOICES[fullgraph])
        assert _facts(lab.report) == _facts(fresh), lab.state

    _fuzz(w.DynamicLab(namespace="t_fuzz_c"), steps=14, seed=2, check=check)


@pytest.mark.parametrize("seed", [3, 4])
def test_naming_lab_fuzz(seed):
    def check(lab):
        scheme, typed, order, policy = lab.state
        assert lab.outcome == naming.run(scheme, order, policy, namespace="t_fuzz_n", typed=typed), lab.state

    lab = w.NamingLab(namespace="t_fuzz_n", scheme="a name I type", typed_name="fuzz::op")
    _fuzz(lab, steps=6, seed=seed, check=check)
