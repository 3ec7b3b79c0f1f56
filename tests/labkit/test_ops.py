"""labkit.ops: ops declared from a spec, their real kernel calls counted; a redeclared or dropped op's handle goes
stale; labkit owns only what it made (never the learner's op, never torch's); a bad spec, name or argument gets one
sentence."""

import pytest
import torch

import labkit
from fresh_python import USERS_OWN_OP, assert_survived, one_sentence, run_python
from labkit import _torch as internals
from labkit import OpSpec, declare, drop, scoped
from labkit.ops import LabOpError, StaleOpError, call_counts, name_problem
from op_namespaces import TORCH_NAMESPACES


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
    from labkit import _torch as internals
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


# --- stale handles: every way into one raises StaleOpError (in a fresh Python: it once crashed) -------------


@pytest.mark.parametrize("reach", ["checks.opcheck", "overload", "opdef", "call", "bare_call_is_impure"])
def test_every_way_into_a_stale_handle_raises_stale_op_error(reach):
    lines = assert_survived(run_python(f"""
        import torch, labkit
        old = labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        labkit.declare(name="p5c::bump", writes=("x",), mutates_args=("x",), returns="none")
        reach = {{
            "checks.opcheck": lambda: labkit.checks.opcheck(old, (torch.ones(3),)),
            "overload": lambda: old.overload(torch.ones(3)),
            "opdef": lambda: old.opdef(torch.ones(3)),
            "call": lambda: old(torch.ones(3)),
            "bare_call_is_impure": lambda: old.bare_call_is_impure,
        }}[{reach!r}]
        try:
            reach()
            print("no error")
        except labkit.StaleOpError as error:
            print("StaleOpError:", error)
        print(repr(old))
    """))
    assert lines[0].startswith("StaleOpError: This handle to p5c::bump is stale")
    assert lines[1] == "<LabOp p5c::bump(Tensor x) -> () stale>"  # the old schema, shown safely


# --- ownership: labkit never replaces or drops an op it did not create --------------------------------------


@pytest.mark.parametrize("action", [
    'labkit.drop("mylab::op")',
    'labkit.drop_namespace("mylab")',
    'labkit.declare(name="mylab::op")',
    'labkit.declare("mylab::op", writes=("x",), mutates_args=("x",), returns="none")',
    'labkit.ops.custom_op("mylab::op", lambda x: None, mutates_args=())',
])
def test_the_learners_own_custom_op_is_never_replaced_or_dropped(action):
    lines = assert_survived(run_python(USERS_OWN_OP + f"""
    attempt(lambda: {action})
    print(my_op(torch.zeros(2)).tolist(), torch.ops.mylab.op(torch.zeros(2)).tolist())
    """))
    assert lines[0].startswith("refused: ") and one_sentence(lines[0][len("refused: "):]), lines[0]
    assert lines[1] == "[100.0, 100.0] [100.0, 100.0]"


@pytest.mark.parametrize("namespace", ["prims", "aten", "torch", "_c10d_functional", *TORCH_NAMESPACES])
def test_torchs_own_namespaces_cannot_be_dropped(namespace):
    before = [n for n in internals.custom_op_qualnames() if n.startswith(namespace + "::")]
    with pytest.raises(LabOpError) as refused:
        labkit.drop_namespace(namespace)
    assert one_sentence(str(refused.value))
    assert [n for n in internals.custom_op_qualnames() if n.startswith(namespace + "::")] == before


def test_prims_survive_a_drop_namespace_attempt():
    count = len(list(torch.ops.prims))
    with pytest.raises(LabOpError, match="never drops torch's ops"):
        labkit.drop_namespace("prims")
    with pytest.raises(LabOpError, match="did not create it"):
        labkit.drop("prims::add")
    assert len(list(torch.ops.prims)) == count and torch.ops.prims.add.default is not None


def test_drop_namespace_takes_only_labkits_ops_and_leaves_the_rest():
    @torch.library.custom_op("t_adv::raw", mutates_args=())
    def raw(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    labkit.declare("t_adv::lab")
    assert labkit.drop_namespace("t_adv") == ["t_adv::lab"]
    assert raw(torch.zeros(1)).item() == 1.0 and "t_adv::raw" in internals.custom_op_qualnames()


def test_an_op_someone_else_redefined_is_no_longer_labkits():
    op = labkit.declare("t_adv::taken_over")

    @torch.library.custom_op("t_adv::taken_over", mutates_args=())
    def theirs(x: torch.Tensor) -> torch.Tensor:
        return x - 1

    assert op.stale and "t_adv::taken_over" not in labkit.ops.live_ops()
    with pytest.raises(LabOpError, match="did not create it"):
        labkit.drop("t_adv::taken_over")
    assert theirs(torch.zeros(1)).item() == -1.0


# --- specs, names and arguments a learner may get wrong: one sentence each ----------------------------------


BAD_SPECS = [
    dict(args="x y"), dict(args=("x", "x")), dict(args=()), dict(args=None), dict(args=5), dict(args=(1, 2)),
    dict(args=["x", None]), dict(writes="y"), dict(writes=None), dict(writes=(b"x",)), dict(mutates_args="z"),
    dict(mutates_args=5), dict(mutates_args=None), dict(tags="no_such_tag"), dict(tags=("__class__",)),
    dict(tags=("name",)), dict(tags=None), dict(returns=None), dict(returns=["fresh"]), dict(returns="twice"),
    dict(effect="loud"), dict(effect=["ordered"]), dict(effect=1), dict(fake="yes"), dict(fake=None),
    dict(name=b"t_adv::x"), dict(name=("t_adv", "x")), dict(name="t_adv::x\n"), dict(name="t_adv::x y"),
]


@pytest.mark.parametrize("fields", BAD_SPECS, ids=[str(f)[:40] for f in BAD_SPECS])
def test_a_bad_spec_gets_one_sentence(fields):
    fields = {"name": "t_adv::x", **fields}
    with pytest.raises(LabOpError) as refused:
        labkit.declare(**fields)
    assert one_sentence(str(refused.value)), str(refused.value)
    assert "t_adv::x" not in internals.custom_op_qualnames()


@pytest.mark.parametrize("call", [
    lambda: labkit.declare(42), lambda: labkit.declare(["t_adv::x"]), lambda: labkit.declare("t_adv::x", bogus=1),
    lambda: labkit.declare("t_adv::x", name="t_adv::y"), lambda: labkit.declare("no colon"),
    lambda: labkit.drop(None), lambda: labkit.drop(42), lambda: labkit.drop("nocolon"),
    lambda: labkit.drop_namespace(None), lambda: labkit.drop_namespace("a::b"), lambda: labkit.drop_namespace(""),
    lambda: labkit.checks.opcheck("not an op", (torch.ones(1),)),
    lambda: labkit.checks.opcheck(None, ()),
], ids=["declare-int", "declare-list", "unknown-field", "name-twice", "bad-name", "drop-None", "drop-int",
        "drop-nocolon", "ns-None", "ns-qualified", "ns-empty", "opcheck-str", "opcheck-None"])
def test_bad_arguments_get_one_sentence(call):
    with pytest.raises(LabOpError) as refused:
        call()
    assert one_sentence(str(refused.value)), str(refused.value)


def test_a_string_is_one_name_not_a_sequence_of_letters():
    spec = OpSpec(name="t_adv::x", args="xy", writes="xy", mutates_args=("xy",))
    assert (spec.args, spec.writes, spec.mutates_args) == (("xy",), ("xy",), ("xy",))
    with pytest.raises(LabOpError, match=r"^mutates_args takes a tuple of names, \('xy',\) for one"):
        OpSpec(name="t_adv::x", args="xy", mutates_args="xy")     # as torch.library.custom_op refuses it
    if hasattr(torch.Tag, "inplace"):
        assert OpSpec(name="t_adv::x", tags="inplace").tags == ("inplace",)
    assert OpSpec(name="t_adv::x", mutates_args="unknown").mutates_args == "unknown"
    assert OpSpec(name="t_adv::x", args=["x", "y"], writes={"y"}).args == ("x", "y")  # hashable again


def test_dropping_an_absent_name_is_harmless():
    assert labkit.drop("t_adv::never_declared") is False


def test_a_failed_redeclare_leaves_the_old_op_live_and_tracked():
    old = labkit.declare("t_adv::op", writes="x", mutates_args=("x",), returns="none")
    # torch refuses this one at schema inference: the out tag needs a keyword-only output argument
    with pytest.raises(LabOpError, match="torch refused to define t_adv::op"):
        labkit.declare("t_adv::op", tags=("out",))
    assert not old.stale and labkit.ops.live_ops()["t_adv::op"] is old and labkit.ops.owns("t_adv::op")
    x = torch.zeros(1)
    old(x)
    assert x.item() == 1.0
    assert labkit.drop("t_adv::op") and old.stale
