"""labkit.logs: torch's own log (torch_logs), caught for a cell to assert on, and torch's defaults afterwards; a missing
tlparse; Inductor's code and a logger's messages as data."""

import sys

import pytest
import torch

import labkit
from labkit import logs


def test_torch_logs_catches_the_aot_graph_and_leaves_stderr_alone(capfd):
    def double(x):
        return x * 2

    with labkit.torch_logs(aot_graphs=True) as log:
        torch.compile(double, backend="aot_eager")(torch.ones(3))
    assert any("torch.ops.aten.mul.Tensor" in line for line in log.artifact("aot_graphs"))
    assert log.artifact("graph_code") == []
    before = len(log.getvalue())
    torch.compile(lambda x: x + 1, backend="aot_eager")(torch.ones(3))  # after the block: not logged, not caught
    assert len(log.getvalue()) == before
    assert "aot_graphs" not in capfd.readouterr().err
    assert sys.stderr is not log


def _torch_logging():
    import logging

    return {name: (list(logger.handlers), logger.level, logger.propagate)
            for name, logger in logging.Logger.manager.loggerDict.items()
            if name.startswith("torch") and isinstance(logger, logging.Logger)}


def test_after_the_block_torch_logs_where_it_logged_before():
    import logging

    before = _torch_logging()
    with labkit.torch_logs(graph_code=True, dynamo=logging.INFO) as log:
        torch.compile(lambda x: x * 3, backend="eager")(torch.ones(2))
    assert log.artifact("graph_code")
    finished = len(log.getvalue())
    logging.getLogger("torch._dynamo").warning("a torch warning after the block")
    assert len(log.getvalue()) == finished, "torch's log still goes into the finished block's buffer"
    after = _torch_logging()
    assert {name: after[name] for name in before} == before


def test_a_learners_own_set_logs_survives_a_torch_logs_block(capfd):
    """torch_logs gives back torch's record of what was on, not the record its own set_logs overwrote."""
    from torch._logging import _internal

    torch._logging.set_logs(recompiles=True)
    try:
        with labkit.torch_logs(graph_code=True):
            torch.compile(lambda x: x * 5, backend="eager")(torch.ones(2))
        assert _internal._get_log_state().artifact_names == {"recompiles"}, "the learner's setting is kept"
        compiled = torch.compile(lambda x: x * 7, backend="eager")
        compiled(torch.ones(2)), compiled(torch.ones(3, 3))
        assert "Recompiling function" in capfd.readouterr().err, "and still logs"
    finally:
        torch._logging.set_logs()


NESTED = """
import json, logging, sys, torch
from labkit.logs import torch_logs
def f(x):
    return x * 2
with torch_logs(recompiles=True) as outer:
    with torch_logs(graph_code=True) as inner:          # the process's first compile: __recompiles is made here
        torch.compile(f, backend="eager")(torch.ones(2))
    torch.compile(f, backend="eager")(torch.ones(3))   # a recompile, after the inner block ended
ended = len(outer.getvalue())
torch.compile(f, backend="eager")(torch.ones(4, 4))  # after both blocks: into neither buffer
logging.getLogger("torch._dynamo").warning("a torch warning after both blocks")
print(json.dumps({"inner": "def forward" in inner.getvalue(), "outer": "Recompiling function" in outer.getvalue(),
                  "outer_kept": outer.getvalue()[ended:] == "", "inner_leaked": "Recompiling" in inner.getvalue()}))
"""


def test_a_nested_block_in_a_first_compile_leaves_the_outer_block_its_logs(capfd):
    """The outer block of two nested torch_logs blocks, the process's first compile inside the inner one, still
    catches its own log afterwards (torch's __recompiles logger, created inside the inner block, was left off by
    its restore); after both blocks neither buffer grows, and torch writes to the real stderr again."""
    import json
    import subprocess

    from repo import ROOT

    done = subprocess.run([sys.executable, "-c", NESTED], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"inner": True, "outer": True, "outer_kept": True, "inner_leaked": False}, seen
    assert "a torch warning after both blocks" in done.stderr, "torch logs to the real stderr after the blocks"


def test_a_missing_tlparse_is_one_sentence_naming_the_install_and_nothing_is_downloaded(monkeypatch, tmp_path):
    """Nothing downloads while a lesson runs: without tlparse, torch_trace_report refuses before it starts the
    traced program (it used to pip-install tlparse there)."""
    import shutil
    import subprocess

    from labkit import logs

    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "bin" / "python"))  # nothing beside it
    started = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: started.append(a))
    assert logs.tlparse_command() is None
    try:
        logs.torch_trace_report("print('hi')")
    except logs.ToolMissing as refused:
        assert "%pip install tlparse" in str(refused) and "\n" not in str(refused)
        assert refused._render_traceback_() == [f"ToolMissing: {refused}"]
    else:
        raise AssertionError("torch_trace_report ran without tlparse")
    assert started == [], "no pip, no traced program"


def test_the_colab_cell_installs_tlparse_with_labkit():
    import build_notebooks

    assert '"tlparse>=0.4"' in build_notebooks.colab_install_cell()


# --- Inductor's code and a logger's messages, as notebooks 08 and 09 read them ------------------------------


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


def test_a_child_told_the_vector_instructions_picks_what_its_own_check_would():
    """torch_trace_report's child skips Inductor's check of the CPU's vector instructions (5-15 s) only when the
    parent's own check kept every set the CPU claims: then the child, told so, picks the set the check picked.
    The parent here is a fresh Python that ran torch's real check; whether every claimed set passed is computed
    there on its own (each set's cached verdict), and torch's pick, with its compiler flags, in a child told the
    result must equal the pick in the parent that checked."""
    import json
    import os
    import platform
    import subprocess

    from repo import ROOT

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the vector-instruction hand-over is for x86 only; elsewhere it returns {} and the child checks")
    env = {k: v for k, v in os.environ.items() if k != "TORCHINDUCTOR_VEC_ISA_OK"}
    pick = ("from torch._inductor.cpu_vec_isa import pick_vec_isa; isa = pick_vec_isa(); "
            "print(json.dumps([str(isa), isa.build_arch_flags()]))")
    parent = f"""
import json, labkit
from labkit import _torch as internals
from torch._inductor import cpu_vec_isa
before = internals.vec_isa_settled_env()
{pick}
flags = cpu_vec_isa.x86_isa_checker()
claimed = [isa for isa in cpu_vec_isa.supported_vec_isa_list if all(f in flags for f in str(isa).split())]
print(json.dumps([before, internals.vec_isa_settled_env(), all(bool(isa) for isa in claimed)]))
"""

    def run(code, extra=None):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                              env=dict(env, **(extra or {})))
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout.strip().splitlines()

    checked_pick, states = run(parent)
    before, after, every_claimed_set_passed = json.loads(states)
    assert before == {}, "nothing is passed on before this process has checked the CPU itself"
    assert after == ({"TORCHINDUCTOR_VEC_ISA_OK": "1"} if every_claimed_set_passed else {}), after
    if after:
        (told_pick,) = run("import json; " + pick, after)
        assert json.loads(told_pick) == json.loads(checked_pick), "a child told the check's result picks its set"


def test_nothing_is_handed_over_when_a_claimed_set_failed_or_the_setting_is_the_callers(monkeypatch):
    """The other cases, in this process: a claimed set that failed its check, a caller's own VEC_ISA_OK (the
    child inherits it), and vec_isa_ok set in Python (no check ran) each give {}."""
    import functools

    from torch._inductor import config as inductor_config
    from torch._inductor import cpu_vec_isa

    from labkit import _torch as internals

    monkeypatch.delenv("TORCHINDUCTOR_VEC_ISA_OK", raising=False)
    from labkit._torch import config as torch_config

    monkeypatch.setattr(torch_config.platform, "machine", lambda: "x86_64")
    monkeypatch.setattr(cpu_vec_isa, "x86_isa_checker", lambda: ["avx2", "avx512"])
    claimed = [isa for isa in cpu_vec_isa.supported_vec_isa_list if str(isa) in ("avx2", "avx512")]
    for kept, expected in ((claimed, {"TORCHINDUCTOR_VEC_ISA_OK": "1"}), (claimed[-1:], {})):
        checked = functools.cache(lambda kept=kept: list(kept))
        checked()                                        # as after the first compile: its cache holds the list
        monkeypatch.setattr(cpu_vec_isa, "valid_vec_isa_list", checked)
        with inductor_config.patch({"cpp.vec_isa_ok": None}):
            assert internals.vec_isa_settled_env() == expected, (kept, expected)
    with inductor_config.patch({"cpp.vec_isa_ok": True}):
        assert internals.vec_isa_settled_env() == {}, "vec_isa_ok set in Python: no check ran to hand over"
    monkeypatch.setenv("TORCHINDUCTOR_VEC_ISA_OK", "0")
    with inductor_config.patch({"cpp.vec_isa_ok": None}):
        assert internals.vec_isa_settled_env() == {}, "the caller's own setting is inherited, not overridden"
