"""torch's messages and opcheck's tests turned into why and fix, in the terms the op was declared in.

Not here: running anything; the checks call these.
"""

from __future__ import annotations

import dataclasses
import re

from .. import _torch as internals


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
