"""labkit.cache (and labkit.cache_demo): labkit's answer to pytorch #187319, stale compile artifacts after a
declaration changes; the policy that setup() turns on, and that importing labkit does not."""

import os
import shutil
import tempfile

import pytest
import torch

import labkit
from labkit import cache, declare
from fresh_python import assert_survived, run_python
from labkit.cache_demo import run_in_subprocess, run_together
from repo import ROOT


@pytest.fixture
def restore_policy():
    yield
    cache.set_policy("fingerprinted")


def test_fingerprint_follows_the_declaration_not_the_handle():
    declare(name="t::foo", writes=("x",), returns="none")
    pure = cache.fingerprint()
    declare(name="t::foo", writes=("x",), mutates_args=("x",), returns="none")
    mutating = cache.fingerprint()
    declare(name="t::foo", writes=("x",), returns="none")
    assert pure != mutating and cache.fingerprint() == pure


def test_fingerprint_sees_fake_kernels_and_effects():
    declare(name="t::foo", returns="none")
    base = cache.fingerprint()
    declare(name="t::foo", returns="none", effect="ordered")
    assert cache.fingerprint() != base


def test_the_tag_is_refreshed_on_every_declaration():
    assert cache.policy() == "fingerprinted"
    declare(name="t::foo")
    first = torch.compiler.config.cache_key_tag
    declare(name="t::foo", writes=("x",), mutates_args=("x",))
    assert first.startswith(cache.TAG_PREFIX) and torch.compiler.config.cache_key_tag != first


def test_policies_set_and_undo_their_switches(restore_policy):
    saved_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    cache.set_policy("disabled")
    assert torch.compiler.config.force_disable_caches
    cache.set_policy("isolated")
    isolated = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    assert not torch.compiler.config.force_disable_caches and os.path.isdir(isolated) and isolated != saved_dir
    cache.set_policy("default")
    assert torch.compiler.config.cache_key_tag == "" and not os.path.exists(isolated)
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == saved_dir
    with pytest.raises(ValueError, match="Cache policy must be"):
        cache.set_policy("sometimes")


def test_the_users_own_settings_are_kept_and_restored_exactly(restore_policy):
    cfg = torch.compiler.config
    cache.set_policy("default")
    with cfg.patch(cache_key_tag="my-team-tag", force_disable_caches=True):
        cache.set_policy("fingerprinted")
        assert cfg.cache_key_tag.startswith("my-team-tag-" + cache.TAG_PREFIX)  # appended, not replaced
        assert cfg.force_disable_caches  # the user's disable stays
        declare(name="t::foo")
        assert cfg.cache_key_tag.startswith("my-team-tag-" + cache.TAG_PREFIX)
        cfg.cache_key_tag = "changed-my-mind"  # the user's new tag is the base from the next refresh on
        cache.refresh()
        assert cfg.cache_key_tag.startswith("changed-my-mind-" + cache.TAG_PREFIX)
        cache.set_policy("disabled")
        cache.set_policy("default")
        assert (cfg.cache_key_tag, cfg.force_disable_caches) == ("changed-my-mind", True)


def test_isolated_really_isolates_and_cleans_up(restore_policy):
    """Each isolated run starts from an empty cache: its first compile is never a cache hit."""
    from labkit import naming

    saved_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    runs = [naming.run("one shared name", naming.ORDERS[0], "isolated", namespace="t_naming") for _ in range(2)]
    assert [r.steps[0].cache_hits for r in runs] == [0, 0]
    assert runs[1].steps[1].stale  # inside one run the cache is shared: #187319 still shows there
    assert os.environ.get("TORCHINDUCTOR_CACHE_DIR") == saved_dir
    with cache.using("isolated") as directory:
        assert os.path.isdir(directory)
    assert not os.path.exists(directory) and os.environ.get("TORCHINDUCTOR_CACHE_DIR") == saved_dir


def _two_runs(policy):
    cache_dir = tempfile.mkdtemp(prefix="labkit-test-cache-")
    try:
        first = run_in_subprocess("pure", policy, cache_dir)
        second = run_in_subprocess("mutating", policy, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    return first, second


def test_two_processes_one_cache_dir_without_labkit_protection_go_stale():
    """Documents torch's bug (observed on 2.13.0 and 2.14.1). If this fails, torch fixed #187319:
    update notebook 03 and this test."""
    first, second = _two_runs("default")
    assert first["x_after"] == [0.0] * 4  # pure declaration: the op is dead code, correctly
    assert "Tensor(a0!)" in second["schema"]
    assert second["cache"]["fxgraph_hit"] == 1, "no cache hit: has torch started keying on schemas?"
    assert second["x_after"] == [0.0] * 4, "the stale artifact is gone: torch may have fixed #187319"


def test_two_processes_one_cache_dir_with_the_fingerprint_stay_correct():
    first, second = _two_runs("fingerprinted")
    assert first["cache_key_tag"] != second["cache_key_tag"]
    assert second["cache"]["fxgraph_hit"] == 0
    assert second["x_after"] == [1.0] * 4 and second["kernel_calls"] == 1


def test_the_demo_reports_a_failing_process_clearly(tmp_path):
    with pytest.raises(RuntimeError, match="demo process failed"):
        run_in_subprocess("pure", "no-such-policy", str(tmp_path))


def test_run_together_keeps_runs_over_one_dir_in_order_and_runs_the_others_beside(tmp_path):
    """Notebook 04's three processes, all started at once: the second, over the first's directory, still
    compiles after the first has exited (it gets its stale artifact); the third, in a directory of its own,
    compiles afresh."""
    shared, own = str(tmp_path / "shared"), str(tmp_path / "own")
    os.makedirs(shared)
    os.makedirs(own)
    bug, fixed, fresh = run_together(("pure", "default", shared), ("mutating", "default", shared),
                                     ("mutating", "default", own))
    assert bug["cache"]["fxgraph_hit"] == 0, "the first run over a fresh directory compiles afresh"
    assert fixed["cache"]["fxgraph_hit"] == 1, "the second run over the same directory found the first's artifact"
    assert fixed["x_after"] == [0.0] * 4, "…and ran it, stale: torch may have fixed #187319"
    assert fresh["cache"]["fxgraph_hit"] == 0, "a run over a directory of its own compiles afresh"
    assert fresh["x_after"] == [1.0] * 4, "…and is correct"
    built = [path.name for path in tmp_path.rglob("*") if path.suffix in (".so", ".cpp", ".o")]
    assert not built, f"the demo's graph compiled C++ ({built[:2]}…): each child now pays the compiler's checks again"


def test_run_together_stops_a_waiting_run_when_the_one_before_it_fails(tmp_path):
    with pytest.raises(RuntimeError, match="demo process failed"):
        run_together(("pure", "no-such-policy", str(tmp_path)), ("mutating", "default", str(tmp_path)), timeout=120)


def test_a_waiting_demo_process_refuses_to_compile_without_go(tmp_path):
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "labkit.cache_demo", "--declare", "pure", "--policy", "default",
                           "--wait"], input="", capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, TORCHINDUCTOR_CACHE_DIR=str(tmp_path)),
                          cwd=ROOT)
    assert done.returncode != 0 and "without saying 'go'" in done.stderr, done.stderr[-2000:]
    assert os.listdir(tmp_path) == [], "nothing was compiled into the cache directory"


def test_setup_turns_the_fingerprinted_policy_on_and_says_so_in_plain_words():
    """Every notebook's setup prints this line: a learner meets it before notebook 04 explains caches, so it says
    what changes for them and how to turn it off, not torch's config names (they appear only for a tag of theirs)."""
    assert labkit.cache.policy() == "fingerprinted"  # conftest calls cache.enable(), as setup() does
    said = labkit.cache.enable()
    assert "compile afresh once an op's declaration changes" in said and "set_policy('default')" in said, said
    assert "cache_key_tag" not in said and "hash" not in said, said


# --- the policy on a learner's own resets, on torch.library ops, and nested blocks -------


def _raw_bump(mutating: bool, adds: float):
    """``t::raw_bump`` with plain ``custom_op``, as a notebook cell declares it; its kernel adds ``adds`` to x."""
    @torch.library.custom_op("t::raw_bump", mutates_args=("x",) if mutating else ())
    def raw_bump(x: torch.Tensor) -> None:
        x.add_(adds)

    if not mutating:
        raw_bump.register_fake(lambda x: None)


def _uses_raw_bump(x):
    torch.ops.t.raw_bump(x)
    return x * 2 + 1


def _compile_and_run(fn):
    x = torch.zeros(2)
    before = cache.counters()
    torch.compile(fn, backend="inductor")(x)
    return x.tolist(), cache.counters()["fxgraph_hit"] - before["fxgraph_hit"]


def test_the_fingerprint_survives_the_learners_own_reset():
    with cache.using("fingerprinted"):
        _raw_bump(mutating=False, adds=1)
        assert _compile_and_run(_uses_raw_bump) == ([0.0, 0.0], 0)  # pure: the call is dead code
        torch.compiler.reset()  # the learner's own reset, as notebooks call it
        _raw_bump(mutating=True, adds=5)  # same name, the fixed declaration, another kernel
        assert _compile_and_run(_uses_raw_bump) == ([5.0, 5.0], 0), "the stale artifact came back after a reset"
        torch.compiler.reset()
        assert _compile_and_run(_uses_raw_bump) == ([5.0, 5.0], 1)  # unchanged: the cache still answers


def test_the_key_part_takes_only_an_empty_pass_slot_and_frees_only_its_own(restore_policy):
    import torch._inductor.config as inductor_config

    cache.set_policy("fingerprinted")
    assert inductor_config.post_grad_custom_post_pass is not None  # labkit's no-op pass carries the key
    cache.set_policy("default")
    assert inductor_config.post_grad_custom_post_pass is None

    def users_pass(graph):
        return None

    with inductor_config.patch(post_grad_custom_post_pass=users_pass):
        cache.set_policy("fingerprinted")
        assert inductor_config.post_grad_custom_post_pass is users_pass
        cache.set_policy("default")
        assert inductor_config.post_grad_custom_post_pass is users_pass


def test_ops_defined_with_torch_library_are_in_the_fingerprint():
    base = cache.fingerprint()
    with torch.library._scoped_library("t", "FRAGMENT") as lib:
        lib.define("lib_op(Tensor x) -> ()")
        pure = cache.fingerprint()
        torch.library.register_fake("t::lib_op", lambda x: None, lib=lib)
        with_fake = cache.fingerprint()
    with torch.library._scoped_library("t", "FRAGMENT") as lib:
        lib.define("lib_op(Tensor(a!) x) -> ()")
        mutating = cache.fingerprint()
    assert len({base, pure, with_fake, mutating}) == 4
    assert cache.fingerprint() == base  # a destroyed registration leaves the fingerprint


def test_two_processes_with_library_registered_ops_and_the_fingerprint_stay_correct(tmp_path):
    """The registration of pytorch #187319's reporter and vLLM: ``Library.define`` + ``impl`` + ``register_fake``."""
    first = run_in_subprocess("pure", "fingerprinted", str(tmp_path), registration="library")
    second = run_in_subprocess("mutating", "fingerprinted", str(tmp_path), registration="library")
    assert first["x_after"] == [0.0] * 4 and "Tensor(a!)" in second["schema"]
    assert second["cache"]["fxgraph_hit"] == 0
    assert second["x_after"] == [1.0] * 4 and second["kernel_calls"] == 1


@pytest.mark.parametrize("outer", cache.POLICIES)
@pytest.mark.parametrize("inner", ("isolated", "fingerprinted"))
def test_nested_using_blocks_give_the_outer_one_back(outer, inner):
    saved_dir = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    with cache.using(outer) as outer_dir:
        with cache.using(inner) as inner_dir:
            assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == inner_dir and cache.policy() == inner
        assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == outer_dir and os.path.isdir(outer_dir)
        assert cache.policy() == outer and not os.path.exists(inner_dir)
        assert torch.compiler.config.force_disable_caches == (outer == "disabled")
    assert not os.path.exists(outer_dir) and os.environ.get("TORCHINDUCTOR_CACHE_DIR") == saved_dir
    assert cache.policy() == "fingerprinted"


def test_with_the_learners_own_post_grad_pass_the_policy_says_how_to_stay_right_after_a_reset():
    """The slot is taken (as vLLM does): only the tag carries the hash, and a reset switches its hook off."""
    import torch._inductor.config as inductor_config
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class UsersPass(CustomGraphPass):
        def __call__(self, graph):
            return None

        def uuid(self):
            return "the-learners-pass"

    users_pass = UsersPass()
    with inductor_config.patch(post_grad_custom_post_pass=users_pass), cache.using("fingerprinted"):
        assert "call labkit.cache.refresh()" in cache.enable()
        assert inductor_config.post_grad_custom_post_pass is users_pass
        _raw_bump(mutating=False, adds=1)
        assert _compile_and_run(_uses_raw_bump) == ([0.0, 0.0], 0)
        torch.compiler.reset()
        _raw_bump(mutating=True, adds=5)
        assert _compile_and_run(_uses_raw_bump) == ([0.0, 0.0], 1), "stale without refresh(): the one-line advice"
        torch.compiler.reset()
        _raw_bump(mutating=False, adds=1)
        torch.compiler.reset()
        _raw_bump(mutating=True, adds=5)
        cache.refresh()  # what the line says to do
        assert _compile_and_run(_uses_raw_bump) == ([5.0, 5.0], 0)
    assert "call labkit.cache.refresh()" not in cache.enable()  # the slot is free again: no advice needed


def test_a_config_patch_that_puts_an_old_fingerprint_back_is_never_taken_for_the_users_tag(restore_policy):
    """Found by CI: a ``config.patch(cache_key_tag=...)`` block restores labkit's *old* tag on exit; the next
    refresh took it for the learner's own, and ``set_policy("default")`` left it behind."""
    cache.set_policy("fingerprinted")
    with torch.compiler.config.patch(cache_key_tag="mine"):
        declare(name="t::patched")
        assert torch.compiler.config.cache_key_tag.startswith("mine-" + cache.TAG_PREFIX)
    declare(name="t::patched_after")
    assert torch.compiler.config.cache_key_tag.count(cache.TAG_PREFIX) == 1
    cache.set_policy("default")
    assert torch.compiler.config.cache_key_tag == ""


# --- import changes nothing in torch; the policy starts in setup() (in a fresh Python) ----------------------


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
    assert "cache_key_tag ('users-tag'), which it keeps" in lines[0], lines[0]
    assert lines[1:] == ["True", "'users-tag'"]


def test_setup_reports_the_cache_policy_in_one_line(capsys):
    labkit.setup(warm_inductor=False)
    out = capsys.readouterr().out
    assert labkit.cache.policy() == "fingerprinted"
    assert sum(line.startswith("compile caches: ") for line in out.splitlines()) == 1, out
