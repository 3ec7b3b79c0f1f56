"""Hostile and careless inputs to ops, cache, naming, audit and checks (issue 13).

labkit is a guest in the learner's kernel: whatever comes in, it answers with one sentence
and never crashes the process, never touches an op it did not create, and never changes
torch's configuration just by being imported. Cases that used to kill the process
(SIGSEGV) run in a subprocess, so a regression fails the test instead of killing pytest.
"""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

import labkit
from labkit import _torch_internals as internals
from labkit import audit, cache, naming
from labkit.ops import LabOpError, OpSpec, StaleOpError
from op_namespaces import TORCH_NAMESPACES

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_python(code: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a crash shows as a negative return code, not a dead pytest."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=dict(os.environ, **(env or {})))


def assert_survived(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, f"exit {done.returncode} (negative = killed by a signal):\n{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()


def one_sentence(message: str) -> bool:
    return "\n" not in message and 20 < len(message) < 300 and message.rstrip().endswith((".", "'", ")"))


# --- 1. stale handles never reach a dangling overload -----------------------------------------------


def test_auditing_a_dropped_handle_refuses_instead_of_crashing():
    lines = assert_survived(run_python("""
        import torch, labkit
        lie = labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        labkit.drop("p5c::bump")
        report = labkit.audit(lie, torch.ones(3))
        print(report.ok, report.findings[0].check)
        print(report.findings[0].problem)
    """))
    assert lines[0] == "False input"
    assert "stale" in lines[1] and "Run again the cell that declares it" in lines[1]


def test_auditing_a_redeclared_handle_is_not_a_clean_bill_of_health():
    lines = assert_survived(run_python("""
        import torch, labkit
        lie = labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        labkit.declare(name="p5c::bump", writes=("x",), mutates_args=(), returns="none")
        report = labkit.audit(lie, torch.ones(3))
        print(report.ok, [f.check for f in report.findings])
    """))
    assert lines[-1] == "False ['input']"


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


def test_raw_handles_that_dangle_are_refused_too():
    """A learner's own stale CustomOpDef, packet or overload: torch would run freed state."""
    lines = assert_survived(run_python("""
        import torch, labkit

        @torch.library.custom_op("mylab::op", mutates_args=())
        def first(x: torch.Tensor) -> torch.Tensor:
            return x + 100

        packet, overload = torch.ops.mylab.op, torch.ops.mylab.op.default

        @torch.library.custom_op("mylab::op", mutates_args=("x",))
        def second(x: torch.Tensor) -> None:
            x.add_(1)

        for handle in (first, packet, overload):
            report = labkit.audit(handle, torch.ones(3))
            print([f.check for f in report.findings], "stale" in report.findings[0].problem)
        print(labkit.audit(second, torch.ones(3)).ok, labkit.audit(torch.ops.mylab.op, torch.ones(3)).ok)
    """))
    assert lines == ["['input'] True"] * 3 + ["True True"]


# --- 2, 3. ownership: labkit never replaces or drops an op it did not create -----------------------


USERS_OWN_OP = """
    import torch, labkit

    @torch.library.custom_op("mylab::op", mutates_args=())
    def my_op(x: torch.Tensor) -> torch.Tensor:
        return x + 100

    def attempt(action):
        try:
            action()
            print("ACCEPTED")
        except labkit.LabOpError as error:
            print("refused:", error)
"""


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


@pytest.mark.parametrize("scheme", ["one shared name", "a name I type"])
def test_the_naming_experiment_refuses_a_namespace_holding_the_learners_op(scheme):
    lines = assert_survived(run_python(USERS_OWN_OP + f"""
    result = labkit.naming.run({scheme!r}, labkit.naming.ORDERS[0], "default", namespace="mylab",
                               typed="mylab::op")
    print(result.problem)
    print(result.steps == (), my_op(torch.zeros(2)).tolist())
    """))
    assert "already exists" in lines[0] and one_sentence(lines[0])
    assert lines[1] == "True [100.0, 100.0]"


def test_the_naming_widget_gets_the_refusal_from_the_core():
    """Widgets only pass the namespace on; the sentence comes from naming.run."""
    @torch.library.custom_op("t_adv::op", mutates_args=())
    def mine(x: torch.Tensor) -> torch.Tensor:
        return x + 100

    from labkit.widgets import NamingLab

    lab = NamingLab(namespace="t_adv", scheme="one shared name")
    assert "already exists" in lab.outcome.problem and not lab.outcome.steps
    assert mine(torch.zeros(1)).item() == 100.0


def test_the_declaration_widget_gets_the_refusal_from_the_core():
    from labkit.widgets import DeclarationLab

    DeclarationLab(namespace="t_adv", declaration="correct")  # learn the name it declares
    (name,) = labkit.drop_namespace("t_adv")
    torch.library.custom_op(name, lambda x: x + 100, mutates_args=(), schema="(Tensor x) -> Tensor")
    lab = DeclarationLab(namespace="t_adv", declaration="correct")
    assert "labkit did not create it" in lab.view.value
    namespace, op = name.split("::")
    assert getattr(getattr(torch.ops, namespace), op)(torch.zeros(1)).item() == 100.0




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


# --- 6. import changes nothing in torch; the policy starts in setup() -------------------------------


def test_import_leaves_torchs_cache_configuration_alone():
    lines = assert_survived(run_python("""
        import sys, torch
        import labkit
        from torch._dynamo.callback import callback_handler
        cfg = torch.compiler.config
        print(repr(cfg.cache_key_tag), cfg.force_disable_caches, len(callback_handler.start_callbacks))
        torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))
        print(repr(cfg.cache_key_tag), "ipywidgets" in sys.modules)
    """, env={"TORCH_COMPILE_CACHE_KEY_TAG": "users-tag", "TORCH_COMPILE_FORCE_DISABLE_CACHES": "1"}))
    assert lines == ["'users-tag' True 0", "'users-tag' False"]


def test_setup_appends_the_fingerprint_to_the_users_tag_and_default_gives_it_back():
    lines = assert_survived(run_python("""
        import torch, labkit
        cfg = torch.compiler.config
        print(labkit.cache.enable())
        print(cfg.cache_key_tag.startswith("users-tag-labkit-ops-"))
        labkit.cache.set_policy("default")
        print(repr(cfg.cache_key_tag))
    """, env={"TORCH_COMPILE_CACHE_KEY_TAG": "users-tag"}))
    assert "your tag 'users-tag'" in lines[0] and one_sentence(lines[0])
    assert lines[1:] == ["True", "'users-tag'"]


def test_setup_reports_the_cache_policy_in_one_line(capsys):
    labkit.setup(warm_inductor=False)
    out = capsys.readouterr().out
    assert labkit.cache.policy() == "fingerprinted"
    assert sum("cache_key_tag" in line for line in out.splitlines()) == 1


# --- 10. the documented call ----------------------------------------------------------------------


def test_labkit_audit_is_callable_as_documented():
    report = labkit.audit(labkit.declare("t_adv::audited"), torch.ones(2))
    assert report.ok, str(report)
    from labkit.auditing import audit as same

    assert same is labkit.audit


# --- 11. specs, names and arguments a learner may get wrong --------------------------------------

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


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(scheme="no such scheme"), "scheme must be one of"),
    (dict(scheme=None), "scheme must be one of"),
    (dict(order="backwards"), "order must be one of"),
    (dict(order=["x"]), "order must be one of"),
    (dict(policy="sometimes"), "policy must be one of"),
    (dict(policy=None), "policy must be one of"),
    (dict(namespace="aten"), "belongs to torch"),
    (dict(namespace="prims"), "belongs to torch"),
    (dict(namespace="bad ns"), "ASCII identifier"),
    (dict(namespace=None), "must be text"),
    (dict(namespace="_c10d_functional"), "belongs to torch"),
])
def test_the_naming_experiment_validates_every_argument(kwargs, fragment):
    args = dict(scheme="one shared name", order=naming.ORDERS[0], policy="default", namespace="t_naming") | kwargs
    before = internals.custom_op_qualnames()
    result = naming.run(**args)
    assert fragment in result.problem and one_sentence(result.problem) and not result.steps
    assert internals.custom_op_qualnames() == before and cache.policy() == "fingerprinted"


def test_audit_survives_hostile_objects():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no repr for you")

        def __getattr__(self, name):
            raise RuntimeError("no attributes either")

    for thing in (Hostile(), None, 42, "x" * 10_000, torch.ones(2), torch.add, torch.ops.aten):
        report = audit(thing)
        assert report.findings[0].check == "input" and len(report.op) <= 80


def test_stale_op_error_is_raised_by_checks_in_process_for_a_labkit_handle():
    """A LabOp handle checks its own liveness before torch is involved, so this is safe in-process."""
    old = labkit.declare("t_adv::stale")
    labkit.drop("t_adv::stale")
    with pytest.raises(StaleOpError):
        labkit.checks.opcheck(old, (torch.ones(1),))
