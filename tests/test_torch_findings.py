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
    (tests/test_audit_real_ops.py::test_a_keyword_only_out_op_like_notebook_09s)."""
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
    repeating the failure (tests/test_audit_real_ops.py::test_opchecks_own_limit_on_float8_is_a_note), and
    torchao's dequantize_affine_float8_non_decomposed meets it (docs/audit-vs-opcheck.md)."""
    x = torch.randn(4).to(torch.float8_e4m3fn)
    with pytest.raises(Exception, match="not implemented for 'Float8_e4m3fn'"):
        torch.library.opcheck(widen, (x,), test_utils="test_schema")
    torch.library.opcheck(widen, (x,), test_utils=("test_faketensor", "test_aot_dispatch_dynamic"))
