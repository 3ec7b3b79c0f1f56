import pytest
import torch

import labkit
from labkit import OpSpec, declare, drop, scoped
from labkit.ops import LabOpError, StaleOpError, call_counts, name_problem


def test_declared_mutation_is_in_the_schema():
    op = declare(name="t::bump", writes=("x",), mutates_args=("x",), returns="none")
    assert op.schema == "t::bump(Tensor(a0!) x) -> ()"
    assert op.is_mutable and op.bare_call_is_impure


def test_unknown_marks_every_argument_mutable():
    op = declare(name="t::two", args=("x", "y"), mutates_args="unknown")
    assert op.schema == "t::two(Tensor(a0!) x, Tensor(a1!) y) -> Tensor"


def test_kernel_counts_real_calls_and_really_writes():
    op = declare(name="t::bump", writes=("x",), mutates_args=("x",), returns="none")
    x = torch.zeros(3)
    op(x)
    op(x)
    assert op.calls == 2 and call_counts()["t::bump"] == 2
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_fresh_return_is_twice_the_first_argument():
    op = declare(name="t::scale")
    assert op(torch.ones(2)).tolist() == [2.0, 2.0]


def test_redeclaring_retires_the_old_handle():
    old = declare(name="t::foo", mutates_args=())
    new = declare(name="t::foo", writes=("x",), mutates_args=("x",), returns="none")
    assert old.stale and not new.stale
    with pytest.raises(StaleOpError, match="redeclared or dropped"):
        old(torch.ones(1))
    assert torch.ops.t.foo.default._schema.is_mutable


def test_torch_itself_keeps_the_stale_schema_on_a_raw_handle():
    """What labkit guards against: custom_op replaces silently, the old object still reports the old schema.

    (Calling ``first`` now is undefined behaviour, pytorch #98541, so this test does not.)
    """
    first = torch.library.custom_op("t::raw", lambda x: x * 2, mutates_args=(), schema="(Tensor x) -> Tensor")

    def second(x: torch.Tensor) -> None:
        x.add_(1)

    torch.library.custom_op("t::raw", second, mutates_args=("x",))
    assert "Tensor(a0!)" not in str(first._opoverload._schema)
    assert "Tensor(a0!)" in str(torch.ops.t.raw.default._schema)


def test_drop_frees_the_name():
    op = declare(name="t::gone")
    assert drop("t::gone")
    assert op.stale
    with pytest.raises(AttributeError):
        torch.ops.t.gone.default  # noqa: B018 - the look-up is what raises
    assert declare(name="t::gone", writes=("x",), mutates_args=("x",), returns="none").is_mutable


def test_scoped_drops_on_exit_even_after_an_error():
    with pytest.raises(ZeroDivisionError):
        with scoped(name="t::tmp") as op:
            assert not op.stale
            1 / 0  # noqa: B018 - raises on purpose
    assert op.stale
    assert "t::tmp" not in labkit.ops.live_ops()


def test_a_library_define_name_gets_a_clear_message():
    lib = torch.library.Library("t", "FRAGMENT")
    try:
        lib.define("taken(Tensor x) -> Tensor")
        with pytest.raises(LabOpError, match="labkit did not create it"):
            declare(name="t::taken")
    finally:
        lib._destroy()


@pytest.mark.parametrize("bad", [
    "", "   ", "nocolons", "a::b::c", "aten::add", "prims::x", "_hidden::x", "é::op", "ns::ópera",
    "ns::with space", "x" * 300, "class::op", "ns::def", "ns::1st", "ns::op.overload", None, 42,
    "__import__('os')::x",
])
def test_bad_names_are_refused_with_a_sentence(bad):
    message = name_problem(bad)
    assert message and message.endswith((".", "'")) and len(message) < 200
    with pytest.raises(LabOpError):
        OpSpec(name=bad)


def test_good_names_pass():
    assert name_problem("mylab::scale_2") is None


@pytest.mark.parametrize("fields, match", [
    ({"returns": "twice"}, "returns must be"),
    ({"writes": ("y",)}, "not among args"),
    ({"mutates_args": ("z",)}, "not among args"),
    ({"effect": "loud"}, "effect must be"),
    ({"tags": ("no_such_tag",)}, "no torch.Tag"),
    ({"args": ("x", "lambda")}, "identifiers"),
])
def test_bad_specs_are_refused(fields, match):
    with pytest.raises(LabOpError, match=match):
        OpSpec(name="t::x", **fields)


def test_returning_the_input_raises_torchs_alias_error_in_eager():
    op = declare(name="t::ret", writes=("x",), mutates_args=("x",), returns="input")
    with pytest.raises(RuntimeError, match="must not also be an input"):
        op(torch.ones(1))


@pytest.mark.skipif(not hasattr(torch.Tag, "inplace"), reason="torch.Tag.inplace arrived in torch 2.13")
def test_inplace_tag_makes_returning_the_input_legal():
    op = declare(name="t::inpl", writes=("x",), mutates_args=("x",), returns="input", tags=("inplace",))
    assert op.schema == "t::inpl(Tensor(a0!) x) -> Tensor(a0!)"
    x = torch.zeros(1)
    assert op(x) is x and x.item() == 1.0


@pytest.mark.parametrize("effect", ["side_effect", "ordered"])
def test_effects_make_a_pure_op_impure(effect):
    assert not declare(name="t::pure", returns="none").bare_call_is_impure
    assert declare(name="t::pure", returns="none", effect=effect).bare_call_is_impure


def test_dropping_a_side_effect_op_unregisters_it():
    from torch.fx.node import _side_effectful_functions

    op = declare(name="t::loud", returns="none", effect="side_effect")
    overload = op.overload
    assert overload in _side_effectful_functions
    drop("t::loud")
    assert overload not in _side_effectful_functions


def test_a_positional_name_and_single_names_written_alone():
    op = declare("t::alone", args="x", writes="x", mutates_args=("x",), returns="none")
    assert op.schema == "t::alone(Tensor(a0!) x) -> ()"
    assert OpSpec(name="t::a", args="xy").args == ("xy",)  # one argument called xy, not x and y


@pytest.mark.parametrize("source_spec", [
    dict(writes=("x",), mutates_args=("x",), returns="none"),
    dict(args=("x", "y"), writes=("y",), mutates_args="unknown"),
    dict(returns="fresh", fake=False),
    dict(returns="none", effect="ordered"),
    dict(returns="none", effect="side_effect"),
    dict(returns="data-dependent"),
    pytest.param(dict(writes=("x",), mutates_args=("x",), returns="input", tags=("inplace",)),
                 marks=pytest.mark.skipif(not hasattr(torch.Tag, "inplace"), reason="torch.Tag.inplace: 2.13+")),
])
def test_torch_source_declares_the_same_op_in_plain_torch(source_spec):
    op = declare(name="t::src", **source_spec)
    source = op.torch_source(name="t::src_plain")
    assert "labkit" not in source
    scope = {}
    exec(compile(source, "<torch_source>", "exec"), scope)  # noqa: S102 - the source labkit itself wrote
    plain = torch.ops.t.src_plain.default
    assert str(plain._schema) == op.schema.replace("t::src(", "t::src_plain(")
    x = [torch.ones(2) for _ in op.spec.args]
    y = [torch.ones(2) for _ in op.spec.args]
    out_lab, out_plain = op(*x), scope["src_plain"](*y)
    assert [a.tolist() for a in x] == [a.tolist() for a in y]
    assert (out_lab is None) == (out_plain is None)
    from labkit import _torch_internals as internals
    assert internals.is_impure(plain) == op.bare_call_is_impure
    assert internals.has_fake_impl("t::src_plain") == internals.has_fake_impl("t::src")


# --- torch_source with names that could shadow what the generated code uses -----------------------

_TRICKY_ARGS = [("self", "out"), ("_", "y"), ("input", "Tensor"), ("ctx", "library"), ("custom_op", "x")]


@pytest.mark.parametrize("returns, effect", [("fresh", None), ("data-dependent", None), ("none", "ordered"),
                                             ("none", "side_effect")])
@pytest.mark.parametrize("op_name, args", [("tricky", a) for a in _TRICKY_ARGS] + [("_", ("x",)), ("x", ("x",))])
def test_torch_source_runs_in_a_fresh_namespace_for_tricky_names(op_name, args, returns, effect):
    spec = OpSpec(name="t::unused", args=args, writes=(args[0],), mutates_args=(args[0],), returns=returns,
                  effect=effect)
    namespace = f"t_src_{abs(hash((op_name, args, returns, effect))) % 10**8}"
    scope = {}
    exec(compile(labkit.ops.torch_source(spec, name=f"{namespace}::{op_name}"), "<torch_source>", "exec"), scope)
    op = scope[op_name]
    assert isinstance(op, torch.library.CustomOpDef)  # the name is still the op, not its fake
    inputs = [torch.tensor([1.0, -2.0, 3.0]) for _ in args]
    torch.compiler.reset()  # each case compiles the same lambda: no recompile limit across cases
    out = torch.compile(lambda *xs: op(*xs), backend="aot_eager", fullgraph=True)(*inputs)
    assert inputs[0].tolist() == [2.0, -1.0, 4.0]  # the declared write happened
    expected = {"fresh": [4.0, -2.0, 8.0], "data-dependent": [2.0, 4.0], "none": None}[returns]
    assert (out if out is None else out.tolist()) == expected


def test_names_that_hide_the_torch_module_are_refused_in_one_sentence():
    with pytest.raises(LabOpError, match="argument called 'torch'"):
        OpSpec(name="t::shadow", args=("torch",))
    with pytest.raises(LabOpError, match=r"op called 'torch'.*torch_source\(name="):
        labkit.ops.torch_source(OpSpec(name="t::shadow"), name="t::torch")
