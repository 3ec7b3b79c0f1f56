"""The inputs the doctor calls an op on: the project's ``SAMPLES`` tables (per op a list of (args, kwargs) pairs, as
opcheck takes them, or a function returning one), else inputs generated from the schema where that is safe, and
said so.

:func:`sample_tables` says which tables to read, :func:`samples_for` gives one overload's samples (a malformed entry
is a finding), :func:`unmatched` the keys that name no op examined
(:func:`refuse_unmatched`: a usage error for a run over modules), :func:`generated_fits` whether generated inputs
run the op at all. The caller's inputs are only ever copied; its random state is left alone.

Not here: finding the ops (:mod:`labkit.doctor.discovery`), and checking them on the samples
(:mod:`labkit.doctor.examining`, :mod:`labkit.auditing`).
"""

from __future__ import annotations

import torch

from .. import _torch as internals
from .. import auditing
from ..compare import copy_inputs
from ..describe import brief
from ..errors import as_torch_error
from .discovery import Target, UsageError, full_name, op_name
from .report import Finding, Sample
from .stopping import by_the_user, raised


def sample_tables(modules, samples: dict | None = None) -> list[dict]:
    """The SAMPLES tables to read, first match wins: ``samples`` given by the caller, then each module's."""
    tables = []
    if samples is not None:
        tables.append(samples)
    for module in modules:
        table = getattr(module, "SAMPLES", None)
        if table is not None and not isinstance(table, dict):
            raise UsageError(f"{getattr(module, '__name__', 'a module')}.SAMPLES is {brief(table)}, not a dict: "
                             "it maps each op to its inputs, SAMPLES = {my_op: [((x,), {}), ...]} (an op, or its "
                             "name 'ns::name', as the key).")
        if table is not None:
            tables.append(table)
    return tables


def samples_for(target_name: str, overload, tables: list[dict]) -> tuple[list[Sample], list[str], list[Finding]]:
    """The samples for one overload from the projects' ``SAMPLES`` tables (the first that names it); else inputs
    generated from the schema where that is safe. Returns (samples, notes, findings about the table itself)."""
    for table in tables:
        for key, value in table.items():
            name = op_name(key)
            if name is None or full_name(name) != target_name:
                continue
            return _read_samples(name, value, overload)
    generated = _generated(overload)
    if generated is None:
        return [], [f"no samples: add SAMPLES[{target_name.removesuffix('.default')!r}] = [(args, kwargs), ...] "
                    "to the module (the schema has arguments the doctor cannot invent safely)"], []
    return [generated], [f"inputs generated from the schema ({generated.describe()}): small float32 tensors and "
                         f"plain numbers; add SAMPLES[{target_name.removesuffix('.default')!r}] for the inputs "
                         "the op is meant for"], []


def _samples_problem(name: str, what: str, fix: str = "") -> Finding:
    where = f"SAMPLES[{name!r}]" + ("" if what.startswith("[") else " ")      # SAMPLES['ns::op'][0] ...
    return Finding("samples", where + what, "the doctor runs the op on the inputs SAMPLES gives, "
                   "as torch.library.opcheck takes them", fix or f"make SAMPLES[{name!r}] a list of (args, kwargs) "
                   "pairs, e.g. [((torch.randn(4),), {})], or a function returning one", docs=auditing.INPUT_DOCS)


def _read_samples(name: str, value, overload) -> tuple[list[Sample], list[str], list[Finding]]:
    if callable(value) and not isinstance(value, (list, tuple)):
        try:
            value = value()
        except BaseException as error:  # noqa: BLE001 - the project's sample function: what it raises is a finding
            if by_the_user(error):
                raise
            fix = "" if isinstance(error, Exception) else (   # an exit or a skip: no error, and no samples either
                "let the function return its samples, or raise an exception saying why it cannot: the doctor "
                "examines the op only on samples (pytest.skip and pytest.importorskip belong in a test, not in "
                "SAMPLES)")
            return [], [], [_samples_problem(name, f"is a function that raised {raised(error)}", fix)]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
        value = [value]            # one (args, kwargs) pair given without its list
    if isinstance(value, (list, tuple)) and not value:   # e.g. a CUDA-only op's entry on a CPU runner
        return [], [f"skipped: no samples for this machine (SAMPLES[{name!r}] gives none here)"], []
    if not isinstance(value, (list, tuple)) or not value:
        return [], [], [_samples_problem(name, f"is {brief(value)}, not a list of (args, kwargs) pairs")]
    found = []
    for index, item in enumerate(value):
        pair = isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], dict)
        if pair and not isinstance(item[0], (tuple, list)):       # ((x), {}): the comma of a 1-tuple forgotten
            return [], [], [_samples_problem(name, f"[{index}]'s args are {brief(item[0])}, not a tuple of the op's "
                                             "arguments (one argument is written (x,), with a comma)")]
        if not pair:
            return [], [], [_samples_problem(name, f"[{index}] is {brief(item)}, not an (args, kwargs) pair")]
        found.append(Sample(tuple(item[0]), dict(item[1])))
    return found, [], []


SAFE_TYPES = {"Tensor", "float", "int", "SymInt", "bool"}


def _generated(overload) -> Sample | None:
    """Inputs from the schema when every argument without a default is a plain Tensor, float, int or bool (and one
    is a tensor): float32 tensors of 8 distinct values, 2, 1.5, False. None when any argument is something else."""
    arguments = internals.schema_arguments(overload)
    needed = [(name, kind, keyword) for name, kind, has_default, keyword in arguments if not has_default]
    if not any(kind == "Tensor" for _, kind, _ in needed) or any(kind not in SAFE_TYPES for _, kind, _ in needed):
        return None
    generator = torch.Generator().manual_seed(0)   # its own: the caller's random state is left alone
    values = {"Tensor": lambda: torch.randn(8, generator=generator), "float": lambda: 1.5, "int": lambda: 2,
              "SymInt": lambda: 2, "bool": lambda: False}
    args = tuple(values[kind]() for _, kind, keyword in needed if not keyword)
    kwargs = {name: values[kind]() for name, kind, keyword in needed if keyword}
    return Sample(args, kwargs, source="generated from the schema")


def named_values(overload, sample: Sample) -> tuple[list[str], tuple]:
    """A sample's argument names (the schema's for its args, then its keywords) and its values, in that order."""
    names = internals.argument_names(overload)
    return [*names[:len(sample.args)], *sample.kwargs], (*sample.args, *sample.kwargs.values())


def generated_fits(overload, sample: Sample) -> str | None:
    """None when the op runs eagerly on generated inputs, else one sentence: they do not fit it (then: skip). What
    is no error (the kernel's ``sys.exit()``, a pytest skip) is raised: the caller makes it a finding."""
    names, values = named_values(overload, sample)
    copies = copy_inputs(values, names)
    try:
        overload(*copies[:len(sample.args)], **dict(zip(names[len(sample.args):], copies[len(sample.args):])))
    except Exception as error:  # noqa: BLE001 - not the op's defect: the doctor's guess did not fit it
        return f"{type(error).__name__}: {as_torch_error(error, 'eager').message[:160]}"
    return None


def unmatched(tables: list[dict], targets: list[Target]) -> list[str]:
    """A SAMPLES key that matches no op examined (a typo leaves its op skipped: say so)."""
    names = {t.name for t in targets}
    warnings = []
    for table in tables:
        for key in table:
            name = op_name(key)
            if name is None:
                warnings.append(f"SAMPLES key {brief(key)} is neither an op nor a qualified name 'ns::name'")
            elif full_name(name) not in names:
                warnings.append(f"SAMPLES names {name!r}, which is not among the ops examined")
    return warnings



def refuse_unmatched(tables: list[dict], targets: list[Target]) -> None:
    """A SAMPLES key that names no op found is a usage error (:class:`UsageError`, one sentence): a typo would
    otherwise leave its op skipped, or unexamined, under a clean exit status."""
    problems = unmatched(tables, targets)
    if problems:
        found = ", ".join(t.name for t in targets[:8]) + (", ..." if len(targets) > 8 else "")
        raise UsageError(f"{problems[0]} (found: {found}): correct the key, or import the module that defines "
                         "the op.")
