"""The helpers notebooks 08 and 09 call: errors as data, the graph that served a call, gradcheck, Inductor's code."""

import torch

import labkit
from labkit import checks, logs, stages


def test_raised_gives_none_or_torchs_error_with_the_outermost_type_first():
    assert stages.raised(lambda: None) is None
    error = stages.raised(lambda: torch.ones(2) @ torch.ones(3), "eager")
    assert error.stage == "eager" and error.type_name == "RuntimeError" and "size" in error.message
    wrapped = stages.raised(lambda: torch.compile(lambda x: x @ torch.ones(3), backend="eager")(torch.ones(2)),
                            "compiled", quiet=True)
    assert wrapped is not None and wrapped.full.split(":")[0] != "", wrapped


def test_serving_tells_which_graph_ran_each_call_and_none_for_eager():
    def f(x, n):
        return x * n

    calls = [(torch.ones(2), n) for n in (2, 3, 4, 2)]
    with torch._dynamo.config.patch(recompile_limit=2):
        run = stages.serving(f, calls, dynamic=False)
    assert run.served == [0, 1, None, 0], run.served
    assert len(run.graphs) == 2
    assert all(torch.equal(out, f(*args)) for out, args in zip(run.outputs, calls))


def test_gradcheck_as_data():
    x = torch.randn(3, dtype=torch.float64, requires_grad=True)
    assert checks.gradcheck(torch.sin, x) == "ok"

    class Wrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, grad):
            return grad

    assert checks.gradcheck(Wrong.apply, x).startswith("FAIL: Jacobian mismatch")


def test_inductor_code_is_this_compiles_own_code_and_code_lines_skip_comments():
    code = logs.inductor_code(lambda x: x * 2 + 1, torch.ones(4))
    assert "def call(" in code
    assert logs.code_lines(code, "_fused_") and not any(line.startswith("#") for line in logs.code_lines(code, "e"))
    again = logs.inductor_code(lambda x: x * 2 + 1, torch.ones(4))
    assert "def call(" in again, "a second compile of the same function still returns code: no cached artifact"


def test_logged_collects_a_loggers_messages_without_printing_and_restores_it():
    import logging

    logger = logging.getLogger("torch.labkit_test")
    level, propagate = logger.level, logger.propagate
    with logs.logged("torch.labkit_test", logging.INFO) as messages:
        logger.info("seen %d", 1)
        logger.debug("not at this level")
    assert messages == ["seen 1"]
    assert (logger.level, logger.propagate) == (level, propagate)
    assert labkit.logs is logs
