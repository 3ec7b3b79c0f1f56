"""labkit.compare: private copies of the inputs (a snapshot keeps values and layout, a small view of a big base
is copied at its own size) and the eager-vs-compiled verdict on outputs and inputs."""

import torch

from labkit.compare import compare_runs, snapshot_tensor


def test_compare_runs_reports_output_and_input_differences():
    orig = [(torch.zeros(2), 5)]
    same = [(torch.ones(2), (torch.zeros(2), 5))]
    verdict = compare_runs(orig, same, same)
    assert verdict.agree and str(verdict).startswith("eager and compiled agree")
    other_out = [(torch.full((2,), 2.0), (torch.zeros(2), 5))]
    assert not compare_runs(orig, same, other_out).outputs_match
    mutated = [(torch.ones(2), (torch.ones(2), 5))]
    verdict = compare_runs(orig, mutated, same, ["x", "k"])
    assert verdict.outputs_match and not verdict.inputs_match
    assert verdict.mutated_eager == ("x",)
    assert str(verdict) == "eager and compiled DIFFER: x differs afterwards: eager changed it, compiled left it"


def test_snapshot_keeps_values_and_layout():
    base = torch.arange(12.0).reshape(3, 4)
    for t in (base, base.t(), base[1:, ::2], torch.ones(1, dtype=torch.bfloat16).expand(5, 2)):
        copy = snapshot_tensor(t)
        assert torch.equal(copy, t)
        if t.untyped_storage().nbytes() <= t.numel() * t.element_size():  # else: its elements, cloned
            assert copy.stride() == t.stride()
        assert copy.untyped_storage().data_ptr() != t.untyped_storage().data_ptr()
    sparse = torch.eye(2).to_sparse()
    assert torch.equal(snapshot_tensor(sparse).to_dense(), torch.eye(2))


def test_a_small_view_of_a_big_base_is_snapshotted_at_its_own_size():
    base = torch.zeros(2 ** 20)
    view = base[:4]
    copy = snapshot_tensor(view)
    assert copy.untyped_storage().nbytes() == 16 and torch.equal(copy, view)
