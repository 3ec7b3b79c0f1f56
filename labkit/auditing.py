"""``labkit.audit(op, *sample_args, **sample_kwargs)``: check an op's declaration the way torch.compile uses it.

It runs, and reports as a list of findings (problem, why it matters under compile, fix, and what the
compiled runs got wrong because of it where they did):

1. the kernel against its declaration: which tensor arguments (or ``Tensor[]`` lists, or keyword
   arguments such as ``out=``) a real call changes, versus the ones the schema marks as written
   (``Tensor(a!)``, ``Tensor(a!)[]``); NaN counts as equal to NaN;
2. each output's memory against each input's (the span of bytes each strided tensor reaches, not storages), where
   the schema declares no alias between them: an output made from an input's memory in a new storage passes
   torch's own check (torch's own ops, and two outputs sharing memory with each other, are not judged);
3. every ``torch.library.opcheck`` test;
4. eager vs compiled, with ``aot_eager`` and ``inductor``, static and dynamic shapes, on a
   program that discards the op's result (the case where a wrong declaration bites), with the
   compile caches bypassed so no stale artifact can answer;
5. a clone of a written argument passed in another argument's place, compiled with Inductor
   (pytorch #198031).

These are :data:`CHECKS`, in order: a new check is one entry there, with its official page and lesson, and its
findings' kind one of the named kinds (:data:`DECLARATION`, ...). The same registry holds two checks only
``labkit doctor`` runs (``doctor_only``): ``fullgraph=True``, and the fake kernel on the meta device and a second
dtype; ``audit`` skips them. It never raises at a learner: anything that goes wrong becomes a
finding. What it cannot see — a Python side effect in a "pure" op, a write that only happens for other
inputs — it says so.

Not here: running and comparing the compiled programs (:mod:`labkit.stages`), private torch
(:mod:`labkit._torch_internals`), HTML (:func:`labkit.render.audit_html` draws a report) and printing: a report
is data, with its one-paragraph text, for whoever shows it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import keyword
import logging
import re
import time
from typing import Callable

import torch

from . import _torch_internals as internals
from . import checks, ops
from .cache import TORCH_OP_NAMESPACES
from .describe import brief
from .lessons import LESSONS, notebook_about
from .env import compiler_unavailable
from .logs import torch_loggers
from .compare import copy_inputs
from .errors import InputError, as_torch_error
from .findings import Finding
from .stages import compile_and_compare

COMPILE_MODES = (("aot_eager", False), ("aot_eager", True), ("inductor", False), ("inductor", True))

ABOVE_FIRST = "fix the findings above first; then "   # dropped from the first finding, which has none above
TAGGED_RETURN = "tags=torch.Tag.inplace (an out= op returning out: tags=torch.Tag.out)"   # may return an input

OPCHECK_ADVICE = {
    "test_schema": ("the schema does not match what the kernel does (an undeclared write, or an output that "
                    "aliases an input)", "declare every written argument in mutates_args; return new tensors"),
    "test_faketensor": ("the compiler traces with fake tensors; without a correct fake kernel it cannot know the "
                        "output's shape", "register_fake a function returning empty tensors of the right shape"),
    "test_aot_dispatch_dynamic": ("AOTAutograd's result differs from eager or fails",
                                  ABOVE_FIRST + "compare shapes/dtypes of the fake kernel"),
    "test_autograd_registration": ("autograd would not see the op correctly",
                                   "use register_autograd instead of a manual autograd.Function around the op"),
}


# What torch's message says went wrong -> (why it matters, the fix); tried in order, before OPCHECK_ADVICE.
MESSAGE_ADVICE = (
    (r"output has alias annotations",
     ("the schema returns an alias of an argument (Tensor(a!) in its returns): torch.compile cannot functionalize "
      "a custom op that does", "return () from the out= overload, or return a new tensor")),
    (r"no autograd formula was registered|[Pp]lease use register_autograd",
     ("a sample requires grad, and the op has no backward: torch cannot differentiate through it (opcheck runs a "
      "backward)", "register one with torch.library.register_autograd('ns::name', backward, setup_context=...), "
      "or, if the op is never differentiated, pass samples with requires_grad=False")),
    (r"Argument (\w+) is not defined as mutable but was mutated",
     ("the kernel writes an argument its schema says it only reads", "add '{0}' to mutates_args")),
    (r"must not also be an input|may not alias",
     ("an output is, or views, an input: the compiler assumes outputs are new tensors",
      "return a new tensor (e.g. x.clone()) or nothing; an op returning its mutated input needs Tag.inplace (an "
      "out= op returning out: Tag.out)")),
    (r"no fake impl|No fake impl|does not have a fake",
     ("the compiler traces with fake tensors and needs a fake kernel to know the output",
      "register_fake a function that returns empty tensors of the right shape, dtype and device")),
    (r"[Ss]hapes? .*(?:are not equal|mismatch)|size mismatch",
     ("the fake kernel promises another shape than the kernel returns", "make the fake kernel's shape follow the "
      "kernel's")),
    (r"dtype", ("the fake kernel promises another dtype than the kernel returns",
                "make the fake kernel return the kernel's dtype (e.g. x.new_empty(...), torch.empty_like)")),
    (r"[Ss]tride", ("the fake kernel promises other strides than the kernel returns",
                    "return tensors laid out like the kernel's (empty_like keeps the input's strides)")),
    (r"Failed to normalize function",
     ("torch could not match the sample inputs to the op's schema",
      "pass inputs that fit the schema; an argument named like a Python keyword (from) cannot be passed by name")),
)


def _opcheck_advice(test: str, outcome: str, overload=None) -> tuple[str, str]:
    """(why, fix) for a failed opcheck test, read from torch's message first so it cannot contradict it; the fix
    in the terms of how the op was declared (:func:`_undeclared_write_fix`)."""
    for pattern, (why, fix) in MESSAGE_ADVICE:
        found = re.search(pattern, outcome)
        if found and pattern == MESSAGE_ADVICE[0][0]:
            return _alias_annotation_advice(overload)
        if found:
            if fix == "add '{0}' to mutates_args":
                return why, _undeclared_write_fix(overload, found.group(1))
            return why, fix.format(*found.groups())
    return OPCHECK_ADVICE.get(test, ("opcheck failed", "see torch's message"))


def _alias_annotation_advice(overload) -> tuple[str, str]:
    """(why, fix) for torch's "output has alias annotations". Where the op writes an argument and some return is
    neither a tensor nor annotated (seen on 2.13: ``(Tensor(a0!) x) -> SymInt``), AOTAutograd says this of the
    non-tensor return, and returning a new tensor from the same writing op compiles; otherwise the annotated return
    it means is the op's own (:data:`MESSAGE_ADVICE`'s first entry)."""
    if overload is not None and internals.is_mutable(overload):
        odd = [r for r in internals.return_types(overload) if not re.match(r"Tensor(\(\w+!?\))?( \w+)?$", r)]
        if odd and not any(internals.declared_output_aliases(overload)):
            return (f"AOTAutograd refuses an op that writes an argument and returns {', '.join(odd)} (not a plain "
                    "tensor); its message calls that an output with alias annotations, though no return is annotated",
                    "return a new tensor instead (e.g. x.new_tensor(n), with a fake kernel returning x.new_empty(())); "
                    "if the kernel never writes the argument, drop it from mutates_args")
    return MESSAGE_ADVICE[0][1]


def _undeclared_write_fix(overload, name: str) -> str:
    """An undeclared write's fix where it is declared: ``mutates_args`` for a custom_op (the wording the lessons
    show), the schema's ``Tensor(a!)`` for an op declared by schema text (Library.define, torch.library.define)."""
    if overload is None or internals.defined_by_custom_op(overload):
        return f"add '{name}' to mutates_args"
    return f"mark it written in the schema: Tensor(a!) {name}"




def _first_not_told_of_above(findings: list) -> list:
    """The first finding has nothing above it: its fix must not send the reader to findings above."""
    if findings and findings[0].fix.startswith(ABOVE_FIRST):
        fix = findings[0].fix[len(ABOVE_FIRST):]
        findings = [dataclasses.replace(findings[0], fix=fix[:1].upper() + fix[1:]), *findings[1:]]
    return findings


# --- what a finding is about: its kind -------------------------------------------------------------------

EAGER = "eager"              # calling the op eagerly raised
DECLARATION = "declaration"  # what the kernel writes against what its schema declares
OPCHECK = "opcheck"          # a torch.library.opcheck test failed: "opcheck:<the test>"
COMPILE = "compile"          # a compiled run raised, or its result differs from eager's
ALIASING = "aliasing"        # a clone of a written argument passed in another argument's place (pytorch #198031)
MEMORY = "memory"            # an output shares memory with an input, and the schema does not declare it
INPUT = "input"              # what was passed cannot be audited: nothing was checked
NOTE = "note"                # a limit of this audit, not a defect: it goes to "not checkable here"
FULLGRAPH = "fullgraph"      # the doctor's: a graph break at the op, named (fullgraph=True)
FAKE = "fake"                # the doctor's: the fake kernel on the meta device and a second dtype, "fake:dtype"


@dataclasses.dataclass
class AuditReport:
    """One audit: the op's defects (``findings``), and its ``notes``: what this audit could not check on these
    inputs (findings of kind :data:`NOTE`; ``fix`` says what to do, or torch's reason a call could not run), said
    under "not checkable here" with :data:`CANNOT_SEE`, what no audit can see."""

    op: str
    schema: str
    findings: list[Finding]
    checks_run: list[str]
    notes: list[Finding]
    seconds: float

    @property
    def ok(self) -> bool:
        return not self.findings

    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def not_checkable(self, breaks: bool = True) -> list[str]:
        """Each limit of this audit as one line (a note and its fix), then :data:`CANNOT_SEE`; ``breaks=False``
        leaves out the notes that the op broke the graph (for a report that names the break as a finding)."""
        return [note.as_note() for note in self.notes if breaks or not note.broke_in] + [CANNOT_SEE]

    @property
    def cannot_see(self) -> str:
        """The limits as one sentence, as the report prints them."""
        return "; ".join(self.not_checkable())

    @property
    def broke_in(self) -> int:
        """In how many of the compiled runs Dynamo ran the op eagerly at a graph break (0: in none)."""
        return max([note.broke_in for note in self.notes], default=0)

    @property
    def missing_backend(self) -> str:
        """The backend calling the op eagerly found no kernel for ("CPU" for a CUDA-only op on CPU inputs): this
        machine's limit, not the op's defect; "" otherwise."""
        return next((f.raised.no_kernel_for for f in self.findings
                     if f.kind == EAGER and f.raised is not None and f.raised.no_kernel_for), "")

    def __str__(self):
        head = f"audit of {self.op}: {self.schema}  ({len(self.checks_run)} checks, {self.seconds:.1f} s)"
        body = "\n".join(str(f) for f in self.findings) or "no problems found."
        return f"{head}\n{body}\nnot checkable here: {self.cannot_see}"

    __repr__ = __str__

    def _repr_html_(self):
        """How a notebook shows it: :func:`labkit.render.audit_html` draws it. Imported here, when a report is
        shown: render is the view layer above this core, which must import and run without it."""
        from .render import audit_html

        return audit_html(self)


@dataclasses.dataclass(frozen=True)
class Call:
    """One call's sample inputs, positional and keyword (``out=``, keyword-only ``*, alpha``)."""

    args: tuple
    kwargs: dict

    def named(self, overload) -> list[tuple[str, object]]:
        """Each input with the schema's name for it."""
        return list(zip(internals.argument_names(overload), self.args)) + list(self.kwargs.items())

    def copy(self, overload) -> Call:
        names, values = zip(*self.named(overload)) if self.args or self.kwargs else ((), ())
        copies = copy_inputs(values, names)
        return Call(copies[:len(self.args)], dict(zip(self.kwargs, copies[len(self.args):])))

    def run(self, overload):
        return overload(*self.args, **self.kwargs)


def _tensors_in(value) -> list[torch.Tensor]:
    """The tensors in an input: itself, or the elements of a ``Tensor[]`` list (nested lists too)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors_in(item)]
    return []


def _changed(before, now) -> bool:
    """Whether a call changed this input in place: its shape, dtype or values (NaN equals NaN); lists element-wise."""
    if isinstance(before, (list, tuple)):
        return any(_changed(b, n) for b, n in zip(before, now))
    if not isinstance(before, torch.Tensor) or before.is_meta:
        return False
    if before.shape != now.shape or before.dtype != now.dtype or before.layout != now.layout:
        return True
    if before.layout != torch.strided:
        before, now = before.to_dense(), now.to_dense()
    if before.is_floating_point() or before.is_complex():
        return not torch.allclose(before, now, rtol=0, atol=0, equal_nan=True)
    return not torch.equal(before, now)


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
                    "torch.compile takes an output it is not told aliases an input for new memory: a write through "
                    f"one is not seen through the other, so compiled results can differ from eager (notebook "
                    f"{notebook_about('aliasing').number})",
                    "return a copy (e.g. result.clone()): torch.compile refuses a custom op whose output is declared "
                    "a view of an input ('(Tensor(a) x) -> Tensor(a)'); only an op that writes an input and returns "
                    f"it may declare that ({TAGGED_RETURN}; torch >= 2.13)"))
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


def _varied(tensor: torch.Tensor) -> torch.Tensor:
    """Values of both signs, all distinct where the dtype allows (unsigned types: 0, 1, 2, ...)."""
    count = tensor.numel()
    values = torch.arange(count, device=tensor.device) - (0 if not tensor.dtype.is_signed else count // 2)
    return (values.to(torch.float32) + 0.5 if tensor.is_floating_point() else values).reshape(tensor.shape).to(
        tensor.dtype)


def _replaced(call: Call, index: int, value) -> tuple[tuple, dict]:
    """``call``'s (args, kwargs) with its input at ``index`` (positional first, then keyword) replaced."""
    args, kwargs = list(call.args), dict(call.kwargs)
    if index < len(args):
        args[index] = value
    else:
        kwargs[list(kwargs)[index - len(args)]] = value
    return tuple(args), kwargs


def _holds_nan(value) -> bool:
    return any((t.is_floating_point() or t.is_complex()) and not t.is_meta and bool(t.isnan().any())
               for t in _tensors_in(value))


def _opcheck_findings(overload, call: Call) -> list[Finding]:
    nan_inputs = [name for name, value in call.named(overload) if _holds_nan(value)]
    findings = []
    for test, (outcome, detail) in checks.opcheck_details(overload, call.args, kwargs=call.kwargs).items():
        if outcome != "ok":
            unsupported = re.search(r"not implemented for '(\w+)'", outcome)
            if unsupported:  # the op ran eagerly on these inputs: what failed is opcheck's own work around it
                findings.append(Finding(NOTE, f"opcheck's {test} cannot run on {unsupported.group(1)} inputs here: "
                                        f"an operation of the test itself has no kernel for them (torch: "
                                        f"{outcome[len('FAIL: '):][:120]}); a correct op fails it too",
                                        "a limit of opcheck, not a finding about the op", "audit again with "
                                        "inputs of a dtype every kernel has (float32) to run that test"))
                continue
            why, fix = _opcheck_advice(test, outcome, overload)
            if nan_inputs and "are different" in outcome:
                fix = (f"first rerun on inputs without NaN: {', '.join(nan_inputs)} holds NaN, and opcheck "
                       f"compares outputs with NaN != NaN, so this can be a false alarm")
            findings.append(Finding(f"{OPCHECK}:{test}", outcome[len("FAIL: "):], why, fix, detail=detail,
                                    docs=FAKE_DOCS if test == "test_faketensor" else ""))
    return findings


def _compile_findings(overload, call: Call) -> list[Finding]:
    names, values = zip(*call.named(overload)) if call.args or call.kwargs else ((), ())
    discards_result = discarding_call(overload, names, len(call.args), list(call.kwargs))

    failures: dict[str, list[str]] = {}
    details: dict[str, str] = {}   # each compile error's whole message, as torch raised it
    qualname, held = internals.qualname_of(overload), []
    for backend, dynamic in COMPILE_MODES:
        report = compile_and_compare(discards_result, *values, backend=backend, dynamic=dynamic)
        label = f"{backend}, dynamic={dynamic}"
        if report.ok:
            held.append((label, bool(report.fate(qualname)["dynamo"])))
        if report.error is not None:
            problem = f"torch.compile raised {report.error.type_name}: {report.error.message}"
            failures.setdefault(problem, []).append(label)
            details.setdefault(problem, report.error.full)
        elif report.verdict is not None and not report.verdict.agree:
            problem = f"compiled result differs from eager: {'; '.join(report.verdict.problems)}"
            failures.setdefault(problem, []).append(label)
    found = [Finding(COMPILE, f"{problem} ({' / '.join(labels)})",
                     "this is what a user of the op would see under torch.compile",
                     _alias_annotation_advice(overload)[1] if re.search(MESSAGE_ADVICE[0][0], problem) else
                     "fix the declaration findings; a compile error usually means a missing or wrong fake kernel",
                     detail=details.get(problem, ""))
             for problem, labels in failures.items()]
    torch_own = qualname.partition("::")[0] in TORCH_OP_NAMESPACES
    broke = [label for label, kept in held if not kept]
    if not failures and broke and not torch_own:   # torch's own ops are not counted by name
        note = GRAPH_BREAK_NOTE if len(broke) == len(COMPILE_MODES) else GRAPH_BREAK_SOME.format(
            k=len(broke), n=len(COMPILE_MODES), runs=" / ".join(broke))
        found.append(Finding(NOTE, note, "", "compile with fullgraph=True to see why", broke_in=len(broke)))
    return found


GRAPH_BREAK = "Dynamo ran it eagerly at a graph break"   # in both notes (the count is the note's broke_in)
GRAPH_BREAK_NOTE = (f"the op under torch.compile: {GRAPH_BREAK} in every compiled run, so the compile checks saw "
                    "nothing of it")
GRAPH_BREAK_SOME = (f"the op under torch.compile: {GRAPH_BREAK} in {{k}} of the {{n}} compiled runs ({{runs}}), so "
                    "those saw nothing of it")


# What the written argument is in the compiled function when audit calls the op the way pytorch #198031 breaks it:
# torch 2.15.0 keeps the clone of a graph input, not of an intermediate, so audit tries both.
CLONE_CALLS = ("graph input", "intermediate")


def _where(written: str, calls) -> str:
    said = {"graph input": f"'{written}' a graph input (an argument of the compiled function)",
            "intermediate": f"'{written}' an intermediate (-(-{written}), or ~(~{written}) for integers and bool, "
                            "computed inside the compiled function)"}
    return " and with ".join(said[c] for c in calls)


def _clone_alias_findings(overload, call: Call) -> list[Finding]:
    """Call the op compiled the way pytorch #198031 breaks it: a clone of an argument it writes passed as another
    of its arguments (``y = x.clone(); op(y, x)``). Inductor may drop the clone and hand the op one buffer twice,
    so a kernel that reads one while it writes the other computes something else than eagerly. Each pair runs
    with ``x`` a graph input and with ``x`` an intermediate (torch 2.15.0 fixed only the first), each in two
    programs: one that never reads the clone again (the issue's), one that does; on distinct values (zeros hide a
    misread). The finding says which of the two calls went wrong."""
    names, values = zip(*call.named(overload)) if call.args or call.kwargs else ((), ())
    tensors = {name: v for name, v in zip(names, values) if isinstance(v, torch.Tensor) and not v.is_meta}
    findings, both_written = [], []
    for written in sorted(internals.written_args(overload) & tensors.keys()):
        for other, value in tensors.items():
            target = tensors[written]
            if other == written or (value.shape, value.dtype, value.device) != (target.shape, target.dtype,
                                                                                target.device):
                continue
            wrong, not_run = _wrong_calls(overload, call, names, values, written, other)
            findings += [Finding(NOTE, f"the #198031 call op({other}=<a clone of {written}>, ...) with "
                                 f"{_where(written, [where])} could not run here", "", why)
                         for where, why in not_run.items()]
            if not wrong:
                continue
            seen = next(iter(wrong.values()))
            right = [c for c in CLONE_CALLS if c not in wrong and c not in not_run]
            problem = (f"called as op({other}=<a clone of {written}>, {written}=...) with {_where(written, wrong)}, "
                       f"compiled with Inductor it gives another result than eagerly: "
                       f"{'; '.join(seen.verdict.problems)}" + (f" (right with {_where(written, right)})"
                                                                if right else ""))
            if other in internals.written_args(overload):
                both_written.append((other, written, wrong))
                continue
            twice = _called_with_one_buffer_twice(seen, overload)
            findings.append(Finding(
                ALIASING, problem,
                ("Inductor's code calls the op with the same buffer for both: the clone was removed, and the kernel "
                 f"reads '{other}' while it writes '{written}'" if twice else
                 "the clone did not survive Inductor's passes as it does eagerly, and the kernel reads memory it "
                 "writes") + " (pytorch #198031; in the lab's measurements torch 2.15.0 gets the call with a graph "
                 "input right and the one with an intermediate still wrong)",
                f"have the kernel copy '{other}' first when the two share storage ({other}.untyped_storage()."
                f"data_ptr() == {written}.untyped_storage().data_ptr()): free for distinct tensors, and it does "
                "not depend on which copies Inductor keeps"))
    return findings + ([_both_written_finding(both_written)] if both_written else [])


def _wrong_calls(overload, call: Call, names, values, written: str, other: str) -> tuple[dict, dict]:
    """Of :data:`CLONE_CALLS`: those whose compiled run differs from eager (call -> its report), and those that could
    not run (call -> why), so that a call that never ran is never said to be right."""
    sample, wrong, not_run = _with_distinct(values, names.index(written)), {}, {}
    for where in CLONE_CALLS:
        for reads_clone in (False, True):
            program = _clone_passed(overload, call, names, written, other, reads_clone, where == "intermediate")
            report = compile_and_compare(program, *sample, backend="inductor")
            failed = report.eager_error or report.error
            if failed is not None or report.verdict is None:
                not_run[where] = (f"{failed.type_name}: {failed.message[:160]}" if failed is not None else
                                  "labkit could not compare its runs")
                break
            if not report.verdict.agree and report.verdict.problems:
                wrong[where] = report
                break
    return wrong, not_run


def discarding_call(overload, names, positional: int, keywords: list[str]) -> Callable:
    """``f(*inputs)``: call the op on ``inputs`` (the first ``positional`` by position, the rest as ``keywords``),
    discard its result and return clones of every tensor input, ``Tensor[]`` included: the program where a wrong
    declaration bites. Its signature names the op's arguments, so verdicts do too."""

    def discards_result(*inputs):
        overload(*inputs[:positional], **dict(zip(keywords, inputs[positional:])))
        return tuple(t.clone() for t in _tensors_in(inputs))   # every dtype clones (t + 0 fails for uint16)

    discards_result.__signature__ = _signature(names)
    return discards_result


def _both_written_finding(cases: list) -> Finding:
    """A clone of one written argument passed as another *written* argument: the declaration is not the cause,
    and no kernel change helps. With a graph input: observed on torch 2.11.0-2.14.1, fixed in 2.15.0
    (tests/torch/test_torch_findings.py: Inductor folds the clone into the input it copies, and the clone's place
    ends up with the input's result)."""
    pairs = ", ".join(f"{other}=<a clone of {written}> with {_where(written, wrong)}" for other, written, wrong
                      in cases)
    return Finding(
        ALIASING, f"called with a clone of one written argument as another written argument ({pairs}), compiled "
        f"with Inductor it gives another result than eagerly: "
        f"{'; '.join(next(iter(cases[0][2].values())).verdict.problems)}",
        "both places are declared written, so the declaration is not what is wrong: Inductor's code gives the "
        "clone other values than eager does (pytorch #198031's family; torch 2.15.0 keeps the clone of a graph "
        "input)",
        "no declaration avoids it; run such a call eagerly (outside torch.compile), or pass a tensor that is not "
        "a copy of the other argument")


def _buffer_arguments(text: str) -> list[str]:
    """The tensor names among a generated call's positional arguments (literals such as 0.0, None, 'adam' left out)."""
    names = [a.strip() for a in text.split(",") if a.strip() and "=" not in a]
    return [a for a in names if re.fullmatch(r"[A-Za-z_]\w*", a) and a not in ("None", "True", "False")]


def _called_with_one_buffer_twice(report, overload) -> bool:
    """Whether Inductor's generated code calls the op with one buffer in two argument places."""
    namespace, name = internals.qualname_of(overload).split("::")
    for line in "\n".join(report.inductor_code).splitlines():
        found = re.search(rf"torch\.ops\.{namespace}\.{name}\.\w+\(([^()]*)\)", line)
        if found:
            args = _buffer_arguments(found.group(1))
            if len(args) != len(set(args)):
                return True
    return False


_SAME_SIZE_INT = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}


def _computed_copy(tensor: torch.Tensor) -> torch.Tensor:
    """The same bits, computed: an intermediate of the compiled function (see :func:`_clone_passed`). ``neg``
    twice for the usual floating and complex dtypes (exact, NaN and -0.0 included), ``bitwise_not`` twice for bool
    and the integer dtypes that have it; any other dtype (uint16, float8, ...) through a same-size integer view."""
    if tensor.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64) or tensor.is_complex():
        return torch.neg(torch.neg(tensor))
    if tensor.dtype in (torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64):
        return torch.bitwise_not(torch.bitwise_not(tensor))
    same = _SAME_SIZE_INT[tensor.element_size()]
    return torch.bitwise_not(torch.bitwise_not(tensor.view(same))).view(tensor.dtype)


def _clone_passed(overload, call: Call, names, written: str, other: str, reads_clone: bool, intermediate: bool):
    """``f(*inputs)``: calls the op with a clone of ``written`` in ``other``'s place; returns what it wrote (and,
    with ``reads_clone``, the clone too). ``intermediate``: ``written`` is first replaced by ``-(-written)``, a
    tensor the compiled function computes, not one it is given, with the same values and dtype. Not ``written * 1``
    or ``written + 0``: torch 2.15.0 simplifies those to ``written`` itself, a graph input again, and the program
    then shows only what 2.15.0 fixed. An integer or bool one is ``~(~written)`` (exact; ``neg`` refuses bool)."""
    positional, keywords = len(call.args), list(call.kwargs)

    def clone_passed(*inputs):
        inputs = dict(zip(names, inputs))
        if intermediate:
            inputs[written] = _computed_copy(inputs[written])
        inputs[other] = inputs[written].clone()
        ordered = [inputs[name] for name in names]
        overload(*ordered[:positional], **dict(zip(keywords, ordered[positional:])))
        return (inputs[written].clone(), inputs[other].clone()) if reads_clone else inputs[written].clone()

    clone_passed.__signature__ = _signature(names)
    return clone_passed


def _signature(names) -> inspect.Signature:
    """A signature with the op's argument names, so that verdicts name them; a name Python cannot take as a
    parameter (``from``, a keyword) gets a trailing ``_``."""
    return inspect.Signature([inspect.Parameter(name if name.isidentifier() and not keyword.iskeyword(name)
                                                else f"{name}_", inspect.Parameter.POSITIONAL_OR_KEYWORD)
                              for name in names])


def _with_distinct(values: tuple, index: int) -> tuple:
    """``values`` with the tensor at ``index`` holding distinct values (0, 1, 2, ... in its dtype): a kernel that
    reads what it writes shows it on such data, not on zeros."""
    tensor = values[index]
    if tensor.dtype == torch.bool or tensor.is_complex() or tensor.numel() == 0:
        return values
    distinct = torch.arange(tensor.numel(), device=tensor.device).reshape(tensor.shape).to(tensor.dtype)
    return (*values[:index], distinct, *values[index + 1:])


_ERROR_DETAIL = re.compile(r"^(torch\.compile raised \w+): .*( \([^()]*dynamic=[^()]*\))$", re.S)


def _with_compiled_consequence(findings: list[Finding], compile_ran: bool, broke: int = 0) -> list[Finding]:
    """Each finding of a check that asks for it (``Check.told_compiled``), told what the compiled runs of this
    audit did: the compile check's findings, or that they agreed with eager (``broke``: in how many of them Dynamo
    ran the op eagerly at a graph break; in all of them, none compiled it)."""
    every_mode = " (" + " / ".join(f"{backend}, dynamic={dynamic}" for backend, dynamic in COMPILE_MODES) + ")"
    in_all = f" (in all {len(COMPILE_MODES)} compiled runs)"
    seen = [_ERROR_DETAIL.sub(r"\1\2", f.problem).replace(every_mode, in_all) for f in findings
            if f.kind == COMPILE]
    if seen:
        consequence = "; ".join(seen)
    elif compile_ran and broke == len(COMPILE_MODES):
        consequence = (f"not seen: in all {len(COMPILE_MODES)} compiled runs Dynamo ran the op eagerly at a graph "
                       "break, so none of them compiled it")
    elif compile_ran:
        consequence = f"not on this program: the {len(COMPILE_MODES)} compiled runs agreed with eager on these inputs"
        consequence += f" (in {broke} of them Dynamo ran the op eagerly at a graph break)" if broke else ""
    else:
        return findings
    told = {check.kind for check in CHECKS if check.told_compiled}
    return [dataclasses.replace(f, compiled=consequence) if f.kind in told else f for f in findings]


class _KeepTorchRecords(logging.Filter):
    """Holds back torch's log records (its tracebacks would spill into the learner's notebook)."""

    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record):
        if record.name == "torch" or record.name.startswith("torch."):
            self.records.append(record)
            return False
        return True


@contextlib.contextmanager
def torch_logs_held_back():
    """For the block, no handler prints torch's log records; afterwards every handler is as it was.

    Only a filter is added to each handler (torch's own, the root's, ``logging.lastResort``) and
    then removed: levels, handlers and ``TORCH_LOGS`` settings are never touched.
    """
    keep = _KeepTorchRecords()
    loggers = [logging.getLogger(), *torch_loggers().values()]
    handlers = {id(h): h for logger in loggers for h in logger.handlers}
    if logging.lastResort is not None:
        handlers[id(logging.lastResort)] = logging.lastResort
    for handler in handlers.values():
        handler.addFilter(keep)
    try:
        yield keep.records
    finally:
        for handler in handlers.values():
            handler.removeFilter(keep)


CANNOT_SEE = ("Python side effects inside a kernel declared pure, and writes that happen only for other "
              f"inputs: give such ops an effect (notebook {notebook_about('effects').number}) and audit them on "
              "several inputs.")


def _resolve(op):
    """``(overload, None)``, or ``(None, finding)`` saying in one sentence what to pass instead."""
    try:
        overload = ops.live_overload(op)
        packet = internals.packet_overloads(op)
        if packet is not None and len(packet[1]) == 1:  # the one overload, whatever its name
            overload = ops.live_overload(getattr(op, packet[1][0]))
    except ops.StaleOpError as stale:  # its registration is gone: calling it could crash the process
        return None, Finding(INPUT, str(stale), "a stale handle points at a deleted registration; nothing about "
                             "it can be checked safely", "audit the handle the latest declaration returned",
                             docs=INPUT_DOCS)
    if packet is not None and len(packet[1]) > 1:
        qualname, names = packet
        spelled = "torch.ops." + qualname.replace("::", ".")
        shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
        return None, Finding(INPUT, f"{spelled} has {len(names)} overloads ({shown}): pass one, e.g. "
                             f"{spelled}.{names[0]}", "each overload has its own schema, and audit checks one "
                             "schema", f"pass the overload your inputs are for, e.g. {spelled}.{names[0]}",
                             docs=INPUT_DOCS)
    if overload is None:
        return None, Finding(INPUT, f"{_short_repr(op)} is not a custom operator",
                             "audit needs an op registered with torch.library (custom_op or Library.define)",
                             "pass the object custom_op returned, labkit.declare's handle, or torch.ops.ns.name",
                             docs=INPUT_DOCS)
    return overload, None


# --- the doctor's own checks: run after audit, on each of a project's samples (Check.doctor_only) -------------

def _named_values(overload, call: Call) -> tuple[list[str], tuple]:
    """A call's argument names (the schema's for its args, then its keywords) and its values, in that order."""
    pairs = call.named(overload)
    return [name for name, _ in pairs], tuple(value for _, value in pairs)


def _discarding(overload, call: Call) -> Callable:
    """audit's program for this call: the op's result discarded, clones of its tensor inputs returned."""
    names, _ = _named_values(overload, call)
    return discarding_call(overload, names, len(call.args), list(call.kwargs))


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



# --- the checks, in the order they run (the doctor-only ones after audit's): a new check is one entry in CHECKS


LIBRARY_DOCS = "https://docs.pytorch.org/docs/stable/library.html"
TUTORIAL = "https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html"
FAKE_DOCS = f"{LIBRARY_DOCS}#torch.library.register_fake"
INPUT_DOCS = f"{LIBRARY_DOCS}#torch.library.opcheck"   # what inputs an op is checked on, as opcheck takes them


@dataclasses.dataclass(frozen=True)
class Check:
    """One check of an op: ``find(overload, call)`` returns its findings, of kind ``kind`` (or :data:`EAGER`,
    :data:`NOTE`); if an audit check raises, that is one finding of its kind saying the check could not run.

    ``docs``: the official page that states the rule it holds the op to, and ``lesson``: the lab's topic that shows
    it (a key of :data:`labkit.lessons.LESSONS`; None for none). Every finding it makes but a note carries both
    (``docs``, ``learn_more``) unless it names its own page. ``stop_if``: the audit ends before this check once a
    finding of one of these kinds is in (this check could tell nothing more). ``told_compiled``: its findings are
    told what the compiled runs of this audit did. ``doctor_only``: ``labkit doctor`` runs it after audit, on each
    sample, as ``find(overload, call, audited)`` with audit's report, and ``labkit.audit`` does not (it compiles
    more, and its learners meet these in lessons); it reads ``audited`` itself to tell when it has nothing to add
    (``stop_if`` and ``told_compiled`` are audit's, refused here), and what it raises the doctor reports as labkit's
    bug. A wrong topic or a doctor-only check with audit's options is refused when the check is made.
    """

    kind: str
    find: Callable[..., list[Finding]]
    docs: str
    lesson: str | None
    stop_if: tuple[str, ...] = ()
    told_compiled: bool = False
    doctor_only: bool = False

    def __post_init__(self):
        if self.lesson is not None and self.lesson not in LESSONS:
            raise ValueError(f"Check {self.kind!r}: lesson {self.lesson!r} is no topic of labkit.lessons.LESSONS "
                             f"({', '.join(LESSONS)}); add it to a notebook's topics in pyproject.toml, or pass None")
        if self.doctor_only and (self.stop_if or self.told_compiled):
            raise ValueError(f"Check {self.kind!r}: stop_if and told_compiled are audit's; a doctor_only check "
                             "reads audit's report (its third argument) to tell when it has nothing to add")


CHECKS = (
    Check(DECLARATION, _declaration_findings, f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args",
          told_compiled=True),
    # after an eager failure it cannot run, and says nothing
    Check(MEMORY, _shared_memory_findings, f"{LIBRARY_DOCS}#torch.library.custom_op", "aliasing"),
    Check(OPCHECK, _opcheck_findings, f"{LIBRARY_DOCS}#torch.library.opcheck", "a silent wrong result",
          told_compiled=True),
    # nothing compiled can run on an op that fails eagerly (opcheck has said what else is wrong)
    Check(COMPILE, _compile_findings, TUTORIAL, "a silent wrong result", stop_if=(EAGER,)),
    # a program that already differs tells nothing about a clone passed in another argument's place
    Check(ALIASING, _clone_alias_findings, "https://github.com/pytorch/pytorch/issues/198031", "mutates_args",
          stop_if=(COMPILE,)),
    Check(FULLGRAPH, _fullgraph_findings, TUTORIAL, "graph breaks", doctor_only=True),
    Check(FAKE, _fake_findings, FAKE_DOCS, "fake kernels", doctor_only=True),
)


def learn_more(topic: str | None) -> str:
    """The lab's notebook that teaches ``topic``, as a finding's "learn more" line ("" for no topic)."""
    if topic is None:
        return ""
    lesson = notebook_about(topic)
    return f"the torch.compile × custom ops lab, notebook {lesson.number} ({lesson.title})"


def run_check(check: Check, overload, call: Call, audited: AuditReport | None = None) -> list[Finding]:
    """``check``'s findings on one call, each carrying the check's official page and lesson unless it names its
    own. An audit check must not crash a learner's kernel: what it raises is one finding saying it could not run.
    A doctor-only check gets ``audited`` (audit's report on the same call), and what it raises is raised: the
    doctor reports it as labkit's bug."""
    if check.doctor_only:
        if audited is None:
            raise ValueError(f"the doctor_only check {check.kind!r} needs audit's report on the same call: "
                             "run_check(check, overload, call, audited)")
        found = check.find(overload, call, audited)
    else:
        try:
            found = check.find(overload, call)
        except Exception as error:  # noqa: BLE001 - an audit must not crash a learner's kernel
            message = str(error) if isinstance(error, InputError) else as_torch_error(error, check.kind).message
            found = [Finding(check.kind, f"the check could not run: {type(error).__name__}: {message}",
                             "the sample inputs may not fit the op's schema", "call the op once eagerly with them",
                             could_not_run=True)]
    lesson = learn_more(check.lesson)
    return [f if f.kind == NOTE else dataclasses.replace(f, docs=f.docs or check.docs,
                                                         learn_more=f.learn_more or lesson) for f in found]


def _not_repeating(found: list[Finding], eager: str) -> list[Finding]:
    """``found`` less what repeats the eager failure ``eager`` (its problems), or only says it could not run on
    those inputs: a check after an eager failure adds nothing by saying it again."""
    if not eager:
        return found
    return [f for f in found if not (f.could_not_run or f.problem[:60] in eager)]


def audit(op, /, *sample_args, **sample_kwargs) -> AuditReport:
    """Audit ``op`` on one call's sample inputs, ``op(*sample_args, **sample_kwargs)`` (tensors on any device).

    It compiles four times: about 1-2 s once Inductor is warm (``labkit.setup()`` warms it), about
    10 s as the first compile of a fresh process (benchmarks/audit.py). Never raises. torch's own
    log records are held back while it runs: what went wrong comes back as findings, not tracebacks.
    """
    start = time.perf_counter()
    overload, refusal = _resolve(op)
    unavailable = compiler_unavailable()
    if refusal is None and unavailable is not None:
        refusal = Finding(INPUT, unavailable, "audit compares eager runs with compiled ones, and none can "
                          "compile honestly here", "audit from the main thread of a process where Dynamo is on",
                          docs=INPUT_DOCS)
    if refusal is not None:
        return AuditReport(_short_repr(op), "?", [refusal], [], [], time.perf_counter() - start)
    call = Call(sample_args, sample_kwargs)
    findings, run = [], []
    learners_counts = ops.call_counts()   # the op runs many times here: its .calls is put back afterwards
    with torch_logs_held_back(), _calls_put_back(learners_counts):
        for check in CHECKS:
            if check.doctor_only:
                continue
            if any(f.kind in check.stop_if for f in findings):
                break
            run.append(check.kind)
            eager = " ".join(f.problem for f in findings if f.kind == EAGER)
            findings += _not_repeating(run_check(check, overload, call), eager)
    notes = [f for f in findings if f.kind == NOTE]
    findings = _first_not_told_of_above(_with_compiled_consequence(
        [f for f in findings if f.kind != NOTE], compile_ran=COMPILE in run,
        broke=max([note.broke_in for note in notes], default=0)))
    return AuditReport(internals.qualname_of(overload), internals.schema_of(overload), findings, run, notes,
                       time.perf_counter() - start)


@contextlib.contextmanager
def _calls_put_back(counts: dict[str, int]):
    try:
        yield
    finally:
        ops.set_calls(counts)


def _short_repr(value) -> str:
    return brief(value, 80)
