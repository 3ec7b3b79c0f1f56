"""labkit.torch_logs: torch's own log, caught for a cell to assert on, and torch's defaults afterwards."""

import sys

import torch

import labkit


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
