"""The two checks only ``labkit doctor`` runs (``doctor_only``): ``fullgraph=True``, so that a graph break is named,
and the fake kernel on the meta device and a second dtype.

Not here: audit's own checks, and running any check (:mod:`.registry`).
"""

from __future__ import annotations

import torch

from .. import _torch as internals
from ..compare import copy_inputs
from ..errors import as_torch_error
from ..findings import Finding
from ..stages import compile_and_compare
from .calls import Call, _discarding, _named_values
from .report import AuditReport
from .vocabulary import COMPILE, EAGER, FULLGRAPH, NOTE, OPCHECK


# The settings that let Dynamo keep a data-dependent result in its graph under fullgraph=False, in the order tried:
# on torch 2.13 the first captures an op whose fake returns torch.library.get_ctx().new_dynamic_size(), as an output
# size or as an int result; the second alone captures neither (it captures Tensor.item() in the compiled code).
CAPTURE_SETTINGS = ("capture_dynamic_output_shape_ops", "capture_scalar_outputs")


TRACEABLE_FIX = ("make the op traceable: declare it with torch.library.custom_op (or Library.define) and "
                 "register_fake a fake kernel; if its output size or int result depends on the data, the fake returns "
                 "torch.library.get_ctx().new_dynamic_size() for it, and then "
                 "torch._dynamo.config.capture_dynamic_output_shape_ops = True keeps the op in the graph under "
                 "fullgraph=False")


def _in_a_graph(run, qualname: str) -> bool:
    return run.error is None and bool(run.fate(qualname)["dynamo"])


def _capturing_setting(overload, call: Call, values, qualname: str) -> str | None:
    """The first of :data:`CAPTURE_SETTINGS` under which Dynamo (``fullgraph=False``) kept the op in a graph, tried
    here on this sample; None when neither did alone."""
    for setting in CAPTURE_SETTINGS:
        with internals.config_patches(dynamo={setting: True}):
            run = compile_and_compare(_discarding(overload, call), *values, backend="eager")
        if _in_a_graph(run, qualname):
            return setting
    return None


def _fullgraph_findings(overload, call: Call, audited: AuditReport) -> list[Finding]:
    """A graph break at the op, named: under default settings (Dynamo only, ``fullgraph=False``), is the op in a
    graph, and if not, why (torch's own graph-break reasons); then ``fullgraph=True``, which must compile it. The
    fix names the capture setting that kept the op in a graph when it was tried on the sample, and only that."""
    if COMPILE in audited.kinds() or EAGER in audited.kinds():
        return []    # audit has said why it does not compile; the same error again adds nothing
    _, values = _named_values(overload, call)
    qualname = internals.qualname_of(overload)
    strict = compile_and_compare(_discarding(overload, call), *values, backend="eager", fullgraph=True)
    if strict.error is None and not audited.broke_in:
        return []    # one graph under fullgraph=True, and every one of audit's compiled runs had the op in a graph
    before = internals.torch_counters("graph_break")
    default = compile_and_compare(_discarding(overload, call), *values, backend="eager")
    reasons = [" ".join(str(r).split()) for r in internals.torch_counters("graph_break") - before]
    if strict.error is not None:
        error = strict.error
        broke = default.error is None and default.fate(qualname)["dynamo"] is False
        return [Finding(FULLGRAPH, f"torch.compile(fullgraph=True) refused the op: {error.type_name}: "
                        f"{error.message}", "a fullgraph=True user gets this error" + (
                            "; under fullgraph=False Dynamo splits the program at the op and runs it eagerly, "
                            "unseen by the compiler" if broke else ""), TRACEABLE_FIX,
                        detail=error.full)]
    if default.error is None and default.fate(qualname)["dynamo"] is False:
        why = "; ".join(reasons) or "Dynamo left the op out of every graph"
        setting = _capturing_setting(overload, call, values, qualname)
        capture = (f"set torch._dynamo.config.{setting} = True (it kept the op in the graph here)" if setting else
                   f"use fullgraph=True ({' and '.join(CAPTURE_SETTINGS)} alone each left the op out of the graph "
                   "here)")
        return [Finding(FULLGRAPH, f"under default settings (fullgraph=False) the op breaks the graph and runs "
                        f"eagerly: {why}", "the compiler sees nothing around the op, and every call splits the "
                        "compiled program in two (fullgraph=True compiled it in one graph)",
                        "if the op's output size (or int result) really depends on the data, the break is expected "
                        f"by default: where you compile, {capture}" + (" or use fullgraph=True" if setting else "") +
                        "; otherwise compute the fake kernel's sizes from the input shapes",
                        detail="\n".join(reasons))]
    return []


def _second_dtype(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in (torch.float64, torch.float16, torch.bfloat16) else torch.float64


def _converted(values, convert) -> list:
    out = []
    for value in values:
        if isinstance(value, torch.Tensor):
            out.append(convert(value))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
            out.append(type(value)(convert(v) if isinstance(v, torch.Tensor) else v for v in value))
        else:
            out.append(value)
    return out


def _outputs(value) -> list:
    """Every item of a value, lists and tuples flattened: an op's outputs, or its inputs (a Tensor[] argument)."""
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _outputs(item)]
    return [value]


def _fake_findings(overload, call: Call, audited: AuditReport) -> list[Finding]:
    """The fake (meta) kernel on the sample's inputs moved to the meta device, then on a second dtype: its outputs
    must be on the inputs' device ("fake:device") and follow their dtype as the real kernel's do ("fake:dtype";
    shape too). opcheck's test_faketensor compares the fake on the sample as given; this asks what it does not."""
    if any(f.check == f"{OPCHECK}:test_faketensor" for f in audited.findings) or EAGER in audited.kinds():
        return []     # no fake kernel, or one opcheck already failed: that finding says it
    names, values = _named_values(overload, call)
    floating = [v for v in _outputs(values) if isinstance(v, torch.Tensor) and v.is_floating_point()]  # Tensor[] too
    variants = [("device", "the sample's inputs on the meta device", lambda t: t)]
    if floating:
        second = _second_dtype(floating[0].dtype)
        variants.append(("dtype", f"{str(second).removeprefix('torch.')} inputs (on the meta device)",
                         lambda t, d=second: t.to(d) if t.is_floating_point() else t))
    else:
        variants.append(("dtype", "", None))
    findings, notes = [], []
    for aspect, label, convert in variants:
        if convert is None:
            notes.append("no floating-point input: the fake kernel was not tried on a second dtype")
            continue
        compared = _compare_fake(overload, names, values, len(call.args), convert, aspect)
        if isinstance(compared, str):
            notes.append(f"{aspect} of the fake kernel not checked on {label}: {compared}")
        elif compared:
            findings.append(Finding(
                f"fake:{aspect}", f"on {label}, the fake kernel: {'; '.join(compared)}",
                "torch.compile plans every buffer from the fake kernel, before the real one runs: a "
                "wrong " + ("device fails or misplaces the op's outputs on a GPU" if aspect == "device" else
                            "dtype can give wrong results or an error on inputs the samples did not show"),
                "build the outputs from the inputs: torch.empty_like(x), x.new_empty(shape) (they keep the dtype "
                "and device), or pass dtype=x.dtype, device=x.device"))
    return findings + [Finding(NOTE, note, "", "") for note in notes]


def _compare_fake(overload, names, values, positional: int, convert, aspect: str) -> list[str] | str:
    """What the fake promises wrongly for inputs converted by ``convert`` (``aspect``: "device" compares the device,
    "dtype" the dtype and shape); a string when it could not be compared (why)."""
    real_inputs = list(copy_inputs(tuple(_converted(values, convert)), names))
    meta_inputs = _converted(real_inputs, lambda t: t.to("meta"))

    def call(inputs):
        return overload(*inputs[:positional], **dict(zip(names[positional:], inputs[positional:])))

    try:
        promised = call(meta_inputs)
    except Exception as error:  # noqa: BLE001 - e.g. a data-dependent size: no meta answer to compare
        return f"it did not run on meta tensors ({as_torch_error(error, 'eager').message[:160]})"
    try:
        real = call(real_inputs)
    except Exception as error:  # noqa: BLE001 - the kernel does not take this dtype: nothing to compare
        return f"the kernel itself refuses them ({type(error).__name__})"
    problems = []
    pairs = [(f, r) for f, r in zip(_outputs(promised), _outputs(real))
             if isinstance(f, torch.Tensor) and isinstance(r, torch.Tensor)]
    for index, (fake_out, real_out) in enumerate(pairs):
        which = "its output" if len(pairs) == 1 else f"output {index}"
        if aspect == "device" and fake_out.device.type != "meta":
            problems.append(f"{which} is on {fake_out.device}, not on its inputs' device (torch.empty(n) without "
                            "device= is wrong for a CUDA input)")
        if aspect == "dtype" and fake_out.dtype != real_out.dtype:
            problems.append(f"{which} promises {fake_out.dtype}, the kernel returns {real_out.dtype}")
        if aspect == "dtype" and tuple(fake_out.shape) != tuple(real_out.shape):
            problems.append(f"{which} promises shape {list(fake_out.shape)}, the kernel returns "
                            f"{list(real_out.shape)}")
    return problems
