"""Private torch APIs are touched only in ``labkit/_torch_internals.py`` (issue 14).

When torch moves one of them, only that file must change, and ``CHECKED_ON`` there says which
releases it was read against. This test reads every other labkit module and fails, naming the
file and line, on any private torch name outside that fence.

NOTE for the merge: each helper cleans the files they own. Until every branch is merged, this
test may fail on files another helper is still moving (stages.py, widgets.py, ...): a failure
names the file, so the fix is in that file, not here.
"""

import pathlib
import re

import pytest

LABKIT = pathlib.Path(__file__).resolve().parents[1] / "labkit"
FENCE = "_torch_internals.py"

PRIVATE = re.compile(
    r"\._schema\b|\._opoverload\b|\._qualified_op_name\b"
    r"|\btorch\._(?:ops|library|C|inductor|functorch|subclasses|guards|prims|higher_order_ops|export)\b"
    r"|\btorch\._dynamo\.(?!mark_dynamic\b|mark_static\b|maybe_mark_dynamic\b|reset\b)\w+"
    r"|\bfrom torch\._dynamo\b|\bimport torch\._dynamo\b"
)


def _modules():
    return sorted(p for p in LABKIT.glob("*.py") if p.name != FENCE)


@pytest.mark.parametrize("module", _modules(), ids=lambda p: p.name)
def test_no_private_torch_name_outside_the_fence(module):
    hits = [f"{module.name}:{number}: {line.strip()}"
            for number, line in enumerate(module.read_text().splitlines(), 1)
            if PRIVATE.search(line)]
    assert not hits, (f"private torch API outside labkit/{FENCE}; add a named helper there and call it:\n"
                      + "\n".join(hits))


def test_the_pattern_catches_what_it_should_and_allows_the_public_entry_points():
    for private in ("overload._schema", "op._opoverload", "torch._ops.OpOverload", "from torch._library import x",
                    "torch._inductor.config", "torch._dynamo.utils.counters", "import torch._functorch.config",
                    "from torch._dynamo.callback import callback_handler", "torch._C._dispatch_has_kernel"):
        assert PRIVATE.search(private), private
    for public in ("torch._dynamo.mark_dynamic(x, 0)", "torch._logging.set_logs(graph_code=True)",
                   "torch.library.custom_op", "torch.compiler.config.cache_key_tag", "self._declared_schema"):
        assert not PRIVATE.search(public), public
