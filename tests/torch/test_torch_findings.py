"""torch behaviours this lab found while testing labkit, in plain torch (no labkit): the day a release changes
one, its test fails and says where the lab relies on it."""
import pytest
import torch

HAS_TAG_OUT = hasattr(torch.Tag, "out")

if HAS_TAG_OUT:
    @torch.library.custom_op("t_found::double_into", mutates_args={"out"}, tags=(torch.Tag.out,))
    def double_into(x: torch.Tensor, *, out: torch.Tensor) -> torch.Tensor:
        out.copy_(x * 2)
        return out


def _returns_clones(x, out):
    torch.ops.t_found.double_into(x, out=out)
    return x.clone(), out.clone()


@pytest.mark.skipif(not HAS_TAG_OUT, reason="torch.Tag.out arrived in torch 2.13")
def test_tag_out_result_buffer_is_reused_too_early():
    """Observed on 2.13.0, 2.14.1, 2.15.0 (CPU, Inductor): the generated code calls the op into buf0, names its
    result buf3 = buf1 (an alias of buf0), then reuses buf0 for x.clone() ("buf4 = buf0; del buf0  # reuse"), so
    out ends up holding x instead of 2x. labkit.audit reports it as a compile finding
    (tests/labkit/test_audit_real_ops.py::test_a_keyword_only_out_op_like_notebook_09s)."""
    x = torch.arange(3.0) + 1
    out = torch.zeros(3)
    torch.compiler.reset()
    _, out_clone = torch.compile(_returns_clones, backend="inductor")(x, out)
    assert torch.equal(out, x) and torch.equal(out_clone, x), (
        f"torch {torch.__version__} now writes 2x into out ({out.tolist()}): the Tag.out buffer-reuse bug is "
        "fixed; update the two tests named in this docstring")


@torch.library.custom_op("t_found::widen", mutates_args=())
def widen(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.float32)


@widen.register_fake
def _(x):
    return torch.empty(x.shape, dtype=torch.float32)


def test_opchecks_schema_test_cannot_run_on_float8_cpu_inputs():
    """Observed on 2.13.0 (CPU): opcheck's test_schema fails on a correct op given a float8 tensor, because the
    test's own arithmetic has no float8 CPU kernel; its other tests pass. labkit.audit says so instead of
    repeating the failure (tests/labkit/test_audit_real_ops.py::test_opchecks_own_limit_on_float8_is_a_note), and
    torchao's dequantize_affine_float8_non_decomposed meets it (docs/audit-vs-opcheck.md)."""
    x = torch.randn(4).to(torch.float8_e4m3fn)
    with pytest.raises(Exception, match="not implemented for 'Float8_e4m3fn'"):
        torch.library.opcheck(widen, (x,), test_utils="test_schema")
    torch.library.opcheck(widen, (x,), test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))


@torch.library.custom_op("t_found::two_states", mutates_args=("a", "b"))
def two_states(a: torch.Tensor, b: torch.Tensor) -> None:
    a.mul_(0.5).add_(1.0)
    b.mul_(2.0)


@two_states.register_fake
def _(a, b):
    return None


def _clone_as_the_other_written(x):
    s = x.clone()
    two_states(s, x)
    return s.clone()


def test_a_clone_passed_as_another_written_argument_gets_the_wrong_values_before_2_15():
    """Observed on 2.11.0, 2.13.0 and 2.14.1 (CPU, Inductor), right on 2.15.0: an op that declares and writes
    both a and b, called as op(x.clone(), x), leaves the clone holding b's result (2x) instead of a's
    (x/2 + 1); aot_eager is right. bitsandbytes' optimizer_update_32bit meets it with state1 = state2.clone()
    (docs/audit-vs-opcheck.md); labkit.audit reports it
    (tests/labkit/test_audit_real_ops.py::test_a_clone_as_another_written_argument_is_torchs_not_the_declarations)."""
    from labkit.env import torch_version

    x = torch.arange(4.0)
    eager = _clone_as_the_other_written(x.clone())
    torch.compiler.reset()
    compiled = torch.compile(_clone_as_the_other_written, backend="inductor")(x.clone())
    assert torch.equal(eager, x / 2 + 1)
    if torch_version() >= (2, 15, 0):
        assert torch.equal(compiled, eager), f"torch {torch.__version__} is wrong again: {compiled.tolist()}"
    else:
        assert torch.equal(compiled, x * 2), (f"torch {torch.__version__} now gives {compiled.tolist()}: the "
                                              "clone-as-another-written-argument bug changed; update the tests "
                                              "named in this docstring")


AUTOCAST_AFTER_A_COMPILE = '''
import torch
@torch.library.custom_op("t_found_ac::mm", mutates_args=())
def mm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a @ b
mm.register_fake(lambda a, b: a.new_empty(a.shape[0], b.shape[1]))
def f(a, b):
    return mm(a, b)
a, b = torch.randn(4, 4), torch.randn(4, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.compile(f, backend="inductor")(a, b)
torch.library.register_autocast("t_found_ac::mm", "cpu", torch.bfloat16)
torch.compiler.reset()
with torch.autocast("cpu", dtype=torch.bfloat16):
    print(torch.compile(f, backend="inductor")(a, b).dtype)
'''


@pytest.mark.parametrize("caches", ["on", "off"])
def test_register_autocast_after_a_compile_is_not_seen_while_the_compile_caches_answer(caches, tmp_path):
    """Observed on 2.11.0, 2.13.0 and 2.15.0 (CPU, Inductor, a fresh process over an empty cache): an op compiled
    under autocast, then given register_autocast, compiles again after torch.compiler.reset() to the float32
    artifact the caches still hold; with TORCHINDUCTOR_FX_GRAPH_CACHE=0 and TORCHINDUCTOR_AUTOGRAD_CACHE=0 the new
    compile casts to bfloat16. docs/torch-versions.md (notebook 10) states it; notebook 10 registers autocast on a
    fresh op, before its first compile."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "cache"))
    if caches == "off":
        env.update(TORCHINDUCTOR_FX_GRAPH_CACHE="0", TORCHINDUCTOR_AUTOGRAD_CACHE="0")
    done = subprocess.run([sys.executable, "-c", AUTOCAST_AFTER_A_COMPILE], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    expected = "torch.float32" if caches == "on" else "torch.bfloat16"
    assert done.stdout.strip() == expected, (
        f"torch {torch.__version__}, caches {caches}: the second compile returned {done.stdout.strip()}, not "
        f"{expected}; update docs/torch-versions.md's notebook-10 finding (written by hand under the table)")
