"""The checks of what a real call does against the schema: the arguments it writes (``declaration``), and the memory
its outputs share with its inputs (``memory``).

Not here: compiling (:mod:`.compiled`, :mod:`.clones`).
"""

from __future__ import annotations

import torch

from .. import _torch as internals
from ..cache import TORCH_OP_NAMESPACES
from ..lessons import notebook_about
from ..errors import as_torch_error
from ..findings import Finding
from .advice import TAGGED_RETURN, _undeclared_write_fix
from .calls import Call, _changed, _replaced, _tensors_in, _varied
from .vocabulary import DECLARATION, EAGER, MEMORY


def _declaration_findings(overload, call: Call) -> list[Finding]:
    after = call.copy(overload)
    try:
        after.run(overload)
    except Exception as error:  # noqa: BLE001 - torch's refusal is a finding
        problem = as_torch_error(error, "eager")
        fix = ("return a new tensor (e.g. x.clone()), or on torch >= 2.13 tag an in-place op with "
               + TAGGED_RETURN if problem.kind == "alias_return"
               else "make the op run eagerly first")
        return [Finding(EAGER, f"calling the op raised {problem.type_name}: {problem.message}",
                        "an op that fails eagerly cannot be compiled either", fix, detail=problem.full,
                        raised=problem)]
    pairs = zip(call.named(overload), after.named(overload))
    written = {name for (name, before), (_, now) in pairs if _changed(before, now)}
    declared = internals.written_args(overload) & {name for name, value in call.named(overload) if _tensors_in(value)}
    findings = []
    for name in sorted(written - declared):
        findings.append(Finding(
            DECLARATION, f"the kernel changes '{name}' in place but does not declare it",
            "the compiler believes the schema: it may drop the call or the write, silently (see notebooks "
            f"{notebook_about('a silent wrong result').number}, {notebook_about('mutates_args').number})",
            _undeclared_write_fix(overload, name)))
    torch_own = internals.qualname_of(overload).partition("::")[0] in TORCH_OP_NAMESPACES
    for name in sorted(declared - written):
        if torch_own or _writes_on_other_values(overload, call, name):
            continue      # a write that left the values as they were is still a write: keep the declaration
        findings.append(Finding(
            DECLARATION, f"'{name}' is declared as mutated, and neither this call nor one with other values "
            f"in '{name}' changed it",
            "if the kernel never writes it, the declaration costs: a call on an input of the compiled function can "
            "no longer be removed (one on a temporary nothing reads afterwards still is) and carries "
            "functionalization (auto_functionalized + copy_) for nothing",
            f"keep '{name}' declared if any input makes the kernel write it (a write of equal values is a write: "
            "dropping the declaration then gives silently wrong results); drop it only if it is never written"))
    return findings


def _byte_span(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The bytes a strided tensor can reach, ``[first, last + 1)``: from its data pointer, each dimension's reach
    (``(size - 1) * stride`` elements); None for an empty, meta or non-strided tensor, or one with no data pointer
    of its own (a wrapper subclass)."""
    if tensor.numel() == 0 or tensor.is_meta or tensor.layout != torch.strided:
        return None
    try:
        start, item = tensor.data_ptr(), tensor.element_size()
    except Exception:  # noqa: BLE001 - a tensor subclass without storage: nothing to compare
        return None
    low = high = 0
    for size, stride in zip(tensor.shape, tensor.stride()):
        reach = (size - 1) * stride
        low, high = (low + reach, high) if reach < 0 else (low, high + reach)
    return start + low * item, start + (high + 1) * item


def _overlap(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether two tensors' reachable bytes meet, on one device: memory compared, not storages (a tensor made from
    another's memory, by ``torch.from_numpy(x.numpy())`` or a DLPack round trip, has a storage of its own). A span,
    not each byte: two interleaved strided views of one buffer count as meeting."""
    spans = _byte_span(a), _byte_span(b)
    if a.device != b.device or None in spans:
        return False
    (a_start, a_end), (b_start, b_end) = spans
    return a_start < b_end and b_start < a_end


def _returned(result, returns: int) -> list:
    """The op's result as one value per schema return (a single return is the result itself)."""
    if returns == 1:
        return [result]
    return list(result) if isinstance(result, (list, tuple)) and len(result) == returns else []


def _shared_memory_findings(overload, call: Call) -> list[Finding]:
    """Each return whose memory overlaps an input's when the schema declares no alias between them.

    torch's own check (custom_op, eagerly) compares storages, so an output in a new storage over an input's memory
    passes it; torch.compile then takes that output for new memory, and a write through one is lost to the other.
    torch's own ops are not judged (their schemas are torch's). Inputs that share memory with an argument the
    return is declared to alias (``f(x, x)`` for an in-place op) are not counted against it.
    """
    if internals.qualname_of(overload).partition("::")[0] in TORCH_OP_NAMESPACES:
        return []
    fresh = call.copy(overload)
    declared = internals.declared_output_aliases(overload)
    values = _returned(fresh.run(overload), len(declared))
    inputs = fresh.named(overload)
    findings = []
    for index, (value, allowed) in enumerate(zip(values, declared)):
        which = "its output" if len(declared) == 1 else f"output {index}"
        allowed_tensors = [t for name, v in inputs if name in allowed for t in _tensors_in(v)]
        reported = set()   # a Tensor[] return: one finding per input, not one per tensor of the list
        for output in _tensors_in(value):
            for name, argument in inputs:
                shared = [t for t in _tensors_in(argument) if _overlap(output, t)]
                if name in allowed or name in reported or not shared or any(
                        _overlap(t, a) for t in shared for a in allowed_tensors):
                    continue
                storage = ("in a new storage over the same memory, which torch's own check lets through (it "
                           "compares storages)" if not any(internals.same_storage(output, t) for t in shared) else
                           "in the same storage")
                findings.append(Finding(
                    MEMORY, f"{which} shares memory with '{name}', and the schema does not say so: {storage}",
                    "AOTAutograd takes an output it is not told aliases an input for new memory, so a write through "
                    "one may not reach the other: compiled results can differ from eager (with aot_eager the write "
                    "is lost; Inductor, which may reuse the output's buffer, can still write it through; notebook "
                    f"{notebook_about('aliasing').number})",
                    "return a copy (e.g. result.clone()): AOTAutograd (the aot_eager and inductor backends) refuses a "
                    "custom op whose output is declared a view of an input ('(Tensor(a) x) -> Tensor(a)'); only an "
                    f"op that writes an input and returns it may declare that ({TAGGED_RETURN}; torch >= 2.13)"))
                reported.add(name)
                break   # one finding per output tensor
    return findings


def _writes_on_other_values(overload, call: Call, name: str) -> bool:
    """Whether the kernel changes ``name`` when it starts from other values (distinct, of both signs): a ``.out``
    buffer pre-filled with the answer, ``zero_`` of zeros or ``relu_`` of non-negatives change nothing on the
    sample, yet write."""
    named = call.named(overload)
    index = [n for n, _ in named].index(name)
    value = named[index][1]
    if not isinstance(value, torch.Tensor) or value.is_meta or value.numel() == 0 or value.dtype == torch.bool:
        return False
    other = Call(*_replaced(call, index, _varied(value))).copy(overload)
    before = other.named(overload)[index][1].clone()
    try:
        other.run(overload)
    except Exception:  # noqa: BLE001 - these values may not suit the op: no evidence either way
        return False
    return _changed(before, other.named(overload)[index][1])
