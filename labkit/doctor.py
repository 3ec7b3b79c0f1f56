"""``labkit doctor``: audit every custom op a project registers, the way its CI can run it.

:func:`run` imports the project's module(s), finds each operator they registered (``custom_op``, ``triton_op``,
``torch.library.define`` / ``Library(...).define``: whatever the dispatcher holds after the import that it did
not hold before, plus any C++ op of a namespace named with ``namespaces=``), takes sample inputs from the project
(a module-level ``SAMPLES``, :func:`samples_for`) and checks each overload separately:

1. everything :func:`labkit.audit` checks (its :data:`labkit.auditing.CHECKS`: the kernel against its
   declaration, every opcheck test, eager vs compiled with aot_eager and Inductor, static and dynamic, and the
   clone passed in another argument's place, pytorch #198031);
2. ``fullgraph=True``, so that a graph break is named instead of passed;
3. the fake kernel on a second dtype and on the meta device (a fake must follow its inputs' dtype and device);
4. whether labkit's cache fingerprint covers the op's declaration (torch's own keys do not: pytorch #187319).

Steps 2-4 are the doctor's own (:data:`STEPS`): audit's learners meet them in lessons instead. :func:`check` does
the same on ops given as objects (a notebook's, a test's). Nothing here raises at the project: a failing op, a
failing sample or a failing step is a finding; what cannot be used at all (a module that does not import, one that
registers no op) is one sentence, :class:`UsageError`. The caller's sample inputs are only ever copied.

Not here: formatting (:mod:`labkit.doctor_report`: terminal table, JSON, JUnit XML), the command line
(:mod:`labkit.__main__`), pytest's items (:mod:`labkit.pytest_plugin`), and private torch.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import importlib
import importlib.util
import pathlib
import platform
import sys
import time
import traceback
from typing import Any, Callable, Iterable

import torch

from . import _torch_internals as internals
from . import auditing, cache, doctor_report, env, ops, warmup
from .cache import TORCH_OP_NAMESPACES
from .compare import copy_inputs
from .describe import brief
from .errors import as_torch_error
from .lessons import notebook_about
from .stages import compile_and_compare

LIBRARY_DOCS = "https://docs.pytorch.org/docs/stable/library.html"
TUTORIAL = "https://docs.pytorch.org/tutorials/advanced/custom_ops_landing_page.html"

# A finding's kind -> (the official page that states the rule, the lab's topic that shows it: "learn more").
DOCS = {
    auditing.DECLARATION: (f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args"),
    auditing.EAGER: (f"{LIBRARY_DOCS}#torch.library.custom_op", "mutates_args"),
    auditing.OPCHECK: (f"{LIBRARY_DOCS}#torch.library.opcheck", "a silent wrong result"),
    auditing.COMPILE: (TUTORIAL, "a silent wrong result"),
    auditing.ALIASING: ("https://github.com/pytorch/pytorch/issues/198031", "mutates_args"),
    auditing.INPUT: (f"{LIBRARY_DOCS}#torch.library.opcheck", None),
    "fullgraph": (TUTORIAL, "graph breaks"),
    "fake": (f"{LIBRARY_DOCS}#torch.library.register_fake", "fake kernels"),
    "cache": ("https://github.com/pytorch/pytorch/issues/187319", "compile caches"),
    "samples": (f"{LIBRARY_DOCS}#torch.library.opcheck", None),
    "doctor": ("https://github.com/torch-compile-lab/custom-ops-lab/issues", None),
}
FAKE_DOCS = f"{LIBRARY_DOCS}#torch.library.register_fake"

PASS, FAIL, SKIP = "pass", "fail", "skip"


class UsageError(Exception):
    """What was asked cannot be examined at all (a module that does not import, no op in it): one sentence."""


# --- what the report holds ---------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Sample:
    """One call's inputs, as opcheck takes them, and where they came from."""

    args: tuple
    kwargs: dict
    source: str = "SAMPLES"   # or "generated from the schema"

    def describe(self) -> str:
        """The inputs for a bug report: ``float32[10, 20], 'nf4', 6.0, bias=None``."""
        return ", ".join([describe_value(a) for a in self.args] +
                         [f"{k}={describe_value(v)}" for k, v in self.kwargs.items()])


@dataclasses.dataclass(frozen=True)
class Finding:
    """A defect of an op on one sample, stated for a bug report: ``problem`` shortened for a terminal,
    ``detail`` torch's whole message; ``fix`` in torch's terms, ``docs`` the official page, ``learn_more`` the lab."""

    check: str         # audit's kind ("declaration", "opcheck:test_schema", ...) or a doctor step's
    problem: str
    why: str
    fix: str
    docs: str
    learn_more: str = ""
    compiled: str = ""
    detail: str = ""
    sample: int | None = None   # which sample (0-based) showed it; None: the op itself

    @property
    def kind(self) -> str:
        return self.check.split(":")[0]


@dataclasses.dataclass
class OpResult:
    """One overload's verdict: ``"pass"``, ``"fail"`` (findings) or ``"skip"`` (nothing could run: ``note`` says
    why and what to add)."""

    op: str          # "ns::name.overload"
    schema: str
    found_in: str    # the module that registered it, or "namespace ns"
    verdict: str
    findings: list[Finding]
    samples: list[Sample]
    checks_run: list[str]
    notes: list[str]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.verdict != FAIL


@dataclasses.dataclass
class DoctorReport:
    """Every overload's result, and what a bug report needs about the machine."""

    targets: list[str]            # what was asked: module names, namespaces, or "ops given to check()"
    environment: dict[str, str]   # torch, labkit, python, platform, device, date
    results: list[OpResult]
    warnings: list[str]
    warmup_seconds: float | None
    seconds: float

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results)

    @property
    def exit_status(self) -> int:
        """0 clean, 1 on a finding (a skipped op is no finding: the table says it was not checked)."""
        return 0 if self.ok else 1

    def counts(self) -> dict[str, int]:
        return {v: sum(r.verdict == v for r in self.results) for v in (PASS, FAIL, SKIP)}

    def result(self, op: str) -> OpResult:
        """The result of ``"ns::name.overload"`` (``"ns::name"``: its default overload)."""
        name = op if "." in op.partition("::")[2] else f"{op}.default"
        return next(r for r in self.results if r.op == name)

    def table(self, width: int = 120, details: bool = True) -> str:
        """One row per overload; with ``details``, each finding below (shortened; the JSON has torch's whole text)."""
        return doctor_report.table(self, width, details)

    def to_dict(self) -> dict:
        return doctor_report.as_dict(self)

    def __str__(self):
        return self.table()

    __repr__ = __str__


def describe_value(value) -> str:
    """One input, briefly and exactly: a tensor's dtype and shape (and device off the CPU), else its value."""
    if isinstance(value, torch.Tensor):
        where = "" if value.device.type == "cpu" else f" on {value.device}"
        return f"{str(value.dtype).removeprefix('torch.')}{list(value.shape)}{where}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in value):
        inner = ", ".join(describe_value(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return brief(value, 80)


def environment() -> dict[str, str]:
    """What a bug report states first: the versions and the machine."""
    import labkit

    return {"torch": torch.__version__, "labkit": labkit.__version__, "python": platform.python_version(),
            "platform": f"{platform.system()} {platform.machine()}", "device": env.report()["device"],
            "date": datetime.date.today().isoformat()}


# --- finding the ops -----------------------------------------------------------------------------------------


@dataclasses.dataclass
class Target:
    """An overload to examine: where it was found and the module(s) whose ``SAMPLES`` may hold its inputs."""

    name: str       # "ns::name.overload"
    overload: Any
    found_in: str


def import_module(name: str):
    """Import a module by dotted name or a ``.py`` path; :class:`UsageError` (one sentence) when it cannot be."""
    if not isinstance(name, str) or not name.strip():
        raise UsageError(f"name a module to examine, such as mypkg.ops, not {brief(name)}.")
    path = pathlib.Path(name)
    try:
        if name.endswith(".py") or "/" in name:
            if not path.is_file():
                raise UsageError(f"{name}: no such file.")
            known = sys.modules.get(path.stem)
            if known is not None and pathlib.Path(getattr(known, "__file__", "") or "").resolve() == path.resolve():
                return known    # imported before: running it again would register its ops twice
            spec = importlib.util.spec_from_file_location(path.stem, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[path.stem] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(name)
    except UsageError:
        raise
    except ModuleNotFoundError as error:
        missing = error.name or str(error)
        if name == missing or name.startswith(f"{missing}."):
            raise UsageError(f"there is no module {name!r} on this Python's path ({sys.executable}): check the name, "
                             "run from the project's folder, or pip install -e the project.") from None
        raise UsageError(f"importing {name} failed: it imports {missing!r}, which is not installed here.") from None
    except SyntaxError as error:
        raise UsageError(f"importing {name} failed: a syntax error in {error.filename}, line {error.lineno}: "
                         f"{error.msg}.") from None
    except BaseException as error:  # noqa: BLE001 - the project's import code: any failure is one sentence
        if isinstance(error, KeyboardInterrupt):
            raise
        where = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        at = f" ({where.filename}, line {where.lineno})" if where else ""
        raise UsageError(f"importing {name} raised {type(error).__name__}{at}: "
                         f"{' '.join(str(error).split())[:300]}") from None


def _not_torchs(names: Iterable[str]) -> set[str]:
    return {n for n in names if n.partition("::")[0] not in TORCH_OP_NAMESPACES}


def _full_name(name: str) -> str:
    """``"ns::name"`` -> ``"ns::name.default"``; ``"ns::name.out"`` as is."""
    return name if "." in name.partition("::")[2] else f"{name}.default"


def _targets(names: Iterable[str], found_in: str) -> list[Target]:
    found = []
    for name in sorted({_full_name(n) for n in names}):
        qualname, _, overload_name = name.partition(".")
        overload = internals.find_overload(qualname, overload_name)
        if overload is not None:
            found.append(Target(name, overload, found_in))
    return found


def _ops_held_by(module) -> set[str]:
    """The ops a module's globals hold (a CustomOpDef, ``torch.ops.ns.name``, an overload, a labkit op), each
    overload by name: how an already-imported module (whose import registered before the doctor looked) is read."""
    names = set()
    for value in list(vars(module).values()):
        key = internals.op_key(value)
        if key is None and isinstance(value, ops.LabOp):
            key = f"{value.name}.default"
        if key is None:
            continue
        qualname, _, overload_name = key.partition(".")
        names |= ({f"{qualname}.{overload_name}"} if overload_name else
                  {f"{qualname}.{o}" for o in internals.overload_names(qualname)})
    return _not_torchs(names)


def discover(modules: Iterable[str] = (), namespaces: Iterable[str] = ()) -> tuple[list[Target], list]:
    """Import each module and find the overloads it registered; add every op of each namespace. Returns the targets
    (sorted, each once) and the imported modules. :class:`UsageError` for a module that does not import, or when
    nothing at all is found."""
    targets: dict[str, Target] = {}
    imported = []
    for name in modules:
        is_path = name.endswith(".py") or "/" in name
        fresh = (pathlib.Path(name).stem if is_path else name) not in sys.modules
        before = internals.all_op_names()
        module = import_module(name)
        imported.append(module)
        registered = _not_torchs(internals.all_op_names() - before) if fresh else set()
        held = _ops_held_by(module)
        for target in _targets(registered | held, getattr(module, "__name__", name)):
            targets.setdefault(target.name, target)
        if not registered and not held and not getattr(module, "SAMPLES", None):
            raise UsageError(f"{name} registered no custom operator when imported (custom_op, triton_op, "
                             "torch.library.define, Library.define) and holds none: name the module that defines "
                             "them, or pass --namespace NS for ops defined in C++.")
    for namespace in namespaces:
        if not isinstance(namespace, str) or not namespace.isidentifier():
            raise UsageError(f"a namespace is a name such as mylib (the part before :: in mylib::op), "
                             f"not {brief(namespace)}.")
        names = {n for n in internals.all_op_names() if n.partition("::")[0] == namespace}
        if not names:
            raise UsageError(f"no operator is registered in namespace {namespace!r} (after importing "
                             f"{', '.join(modules) or 'nothing'}): import the module that loads them first.")
        for target in _targets(names, f"namespace {namespace}"):
            targets.setdefault(target.name, target)
    for module in imported:   # an op named only in SAMPLES (registered before the doctor looked)
        for key in _sample_keys(getattr(module, "SAMPLES", None) or {}):
            for target in _targets(_expand(key), getattr(module, "__name__", "?")):
                targets.setdefault(target.name, target)
    if not targets:
        asked = ", ".join([*modules, *(f"namespace {n}" for n in namespaces)]) or "nothing"
        raise UsageError(f"no custom operator found in {asked}.")
    return sorted(targets.values(), key=lambda t: t.name), imported


def _expand(key: str) -> set[str]:
    """A SAMPLES key's overloads: ``"ns::name.out"`` itself; ``"ns::name"`` its default overload."""
    return {_full_name(key)}


def _sample_keys(samples) -> list[str]:
    return [k for k in (_key(key) for key in samples) if k is not None] if isinstance(samples, dict) else []


def _key(key) -> str | None:
    """A SAMPLES key as ``"ns::name"`` / ``"ns::name.overload"``: a qualified name, a CustomOpDef, a packet, an
    overload or a labkit op; None for anything else."""
    if isinstance(key, str):
        return key if "::" in key else None
    if isinstance(key, ops.LabOp):
        return key.name
    return internals.op_key(key)


# --- the samples ---------------------------------------------------------------------------------------------


def samples_for(target_name: str, overload, tables: list[dict]) -> tuple[list[Sample], list[str], list[Finding]]:
    """The samples for one overload from the projects' ``SAMPLES`` tables (the first that names it); else inputs
    generated from the schema where that is safe. Returns (samples, notes, findings about the table itself)."""
    for table in tables:
        for key, value in table.items():
            name = _key(key)
            if name is None or _full_name(name) != target_name:
                continue
            return _read_samples(name, value, overload)
    generated = _generated(overload)
    if generated is None:
        return [], [f"no samples: add SAMPLES[{target_name.removesuffix('.default')!r}] = [(args, kwargs), ...] "
                    "to the module (the schema has arguments the doctor cannot invent safely)"], []
    return [generated], [f"inputs generated from the schema ({generated.describe()}): small float32 tensors and "
                         f"plain numbers; add SAMPLES[{target_name.removesuffix('.default')!r}] for the inputs "
                         "the op is meant for"], []


def _samples_problem(name: str, what: str) -> Finding:
    return Finding("samples", f"SAMPLES[{name!r}] {what}", "the doctor runs the op on the inputs SAMPLES gives, "
                   "as torch.library.opcheck takes them", f"make SAMPLES[{name!r}] a list of (args, kwargs) pairs, "
                   "e.g. [((torch.randn(4),), {})], or a function returning one", DOCS["samples"][0])


def _read_samples(name: str, value, overload) -> tuple[list[Sample], list[str], list[Finding]]:
    if callable(value) and not isinstance(value, (list, tuple)):
        try:
            value = value()
        except Exception as error:  # noqa: BLE001 - the project's sample function: its error is a finding
            return [], [], [_samples_problem(name, f"is a function that raised {type(error).__name__}: "
                                             f"{' '.join(str(error).split())[:200]}")]
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[1], dict):
        value = [value]            # one (args, kwargs) pair given without its list
    if not isinstance(value, (list, tuple)) or not value:
        return [], [], [_samples_problem(name, f"is {brief(value)}, not a list of (args, kwargs) pairs")]
    found = []
    for index, item in enumerate(value):
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], (tuple, list))
                and isinstance(item[1], dict)):
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


# --- the doctor's own steps, after audit ---------------------------------------------------------------------


def _values(overload, sample: Sample) -> tuple[list[str], tuple]:
    names = internals.argument_names(overload)
    return [*names[:len(sample.args)], *sample.kwargs], (*sample.args, *sample.kwargs.values())


def _discarding(overload, sample: Sample) -> Callable:
    """``f(*inputs)`` calling the op and returning clones of its tensor inputs (as audit's compile check does)."""
    positional, keywords = len(sample.args), list(sample.kwargs)
    names, _ = _values(overload, sample)

    def calls_the_op(*inputs):
        overload(*inputs[:positional], **dict(zip(keywords, inputs[positional:])))
        return tuple(t.clone() for t in inputs if isinstance(t, torch.Tensor))

    calls_the_op.__signature__ = auditing._signature(names)
    return calls_the_op


GRAPH_BREAK_NOTE = "Dynamo ran it eagerly at a graph break"   # audit's note when no compiled run had the op in a graph


def _fullgraph_findings(overload, sample: Sample, audited) -> list[Finding]:
    """A graph break at the op, named: under default settings (Dynamo only, ``fullgraph=False``), is the op in a
    graph, and if not, why (torch's own graph-break reasons); then ``fullgraph=True``, which must compile it."""
    if auditing.COMPILE in audited.kinds() or auditing.EAGER in audited.kinds():
        return []    # audit has said why it does not compile; the same error again adds nothing
    _, values = _values(overload, sample)
    qualname = internals.qualname_of(overload)
    strict = compile_and_compare(_discarding(overload, sample), *values, backend="eager", fullgraph=True)
    if strict.error is None and GRAPH_BREAK_NOTE not in audited.cannot_see:
        return []    # one graph under fullgraph=True, and audit's fullgraph=False runs had the op in a graph
    before = internals.torch_counters("graph_break")
    default = compile_and_compare(_discarding(overload, sample), *values, backend="eager")
    reasons = [" ".join(str(r).split()) for r in internals.torch_counters("graph_break") - before]
    fix = ("make the op traceable: declare it with torch.library.custom_op (or Library.define) and register_fake a "
           "fake kernel; a data-dependent output size needs torch.library.get_ctx().new_dynamic_size(), and then "
           "torch._dynamo.config.capture_dynamic_output_shape_ops = True (capture_scalar_outputs for an int "
           "result) keeps it in the graph without fullgraph=True")
    if strict.error is not None:
        error = strict.error
        return [Finding("fullgraph", f"torch.compile(fullgraph=True) refused the op: {error.type_name}: "
                        f"{error.message}", "a fullgraph=True user gets this error; under fullgraph=False Dynamo "
                        "splits the program at the op and runs it eagerly, unseen by the compiler", fix,
                        DOCS["fullgraph"][0], detail=error.full)]
    if default.error is None and default.fate(qualname)["dynamo"] is False:
        why = "; ".join(reasons) or "Dynamo left the op out of every graph"
        return [Finding("fullgraph", f"under default settings (fullgraph=False) the op breaks the graph and runs "
                        f"eagerly: {why}", "the compiler sees nothing around the op, and every call splits the "
                        "compiled program in two (fullgraph=True does capture it: it turns on capture_scalar_outputs "
                        "and capture_dynamic_output_shape_ops)",
                        "if the op's output size (or int result) really depends on the data, the break is expected "
                        "by default: where you compile, set torch._dynamo.config.capture_dynamic_output_shape_ops = "
                        "True (capture_scalar_outputs = True for an int result) or use fullgraph=True; otherwise "
                        "compute the fake kernel's sizes from the input shapes", DOCS["fullgraph"][0],
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
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _outputs(item)]
    return [value]


def _fake_findings(overload, sample: Sample, audited) -> tuple[list[Finding], list[str]]:
    """The fake (meta) kernel on the sample's inputs moved to the meta device, then on a second dtype: its outputs
    must be on the inputs' device ("fake:device") and follow their dtype as the real kernel's do ("fake:dtype";
    shape too). opcheck's test_faketensor compares the fake on the sample as given; this asks what it does not."""
    if any(f.check == "opcheck:test_faketensor" for f in audited.findings) or auditing.EAGER in audited.kinds():
        return [], []     # no fake kernel, or one opcheck already failed: that finding says it
    names, values = _values(overload, sample)
    floating = [v for v in values if isinstance(v, torch.Tensor) and v.is_floating_point()]
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
        compared = _compare_fake(overload, names, values, len(sample.args), convert, aspect)
        if isinstance(compared, str):
            notes.append(f"{aspect} of the fake kernel not checked on {label}: {compared}")
        elif compared:
            findings.append(Finding(
                f"fake:{aspect}", f"on {label}, the fake kernel: {'; '.join(compared)}",
                "torch.compile plans every buffer from the fake kernel and never runs the real one to check: a "
                "wrong " + ("device fails or misplaces the op's outputs on a GPU" if aspect == "device" else
                            "dtype gives wrong results or a crash on inputs the samples did not show"),
                "build the outputs from the inputs: torch.empty_like(x), x.new_empty(shape) (they keep the dtype "
                "and device), or pass dtype=x.dtype, device=x.device", FAKE_DOCS))
    return findings, notes


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


def _cache_note(target_name: str) -> list[str]:
    if cache.covers(target_name):
        return []
    return ["its declaration is not in labkit's cache fingerprint (an op defined in C++), and torch's compile "
            "caches do not key on an op's schema (pytorch #187319): after rebuilding it with another schema, "
            "change torch.compiler.config.cache_key_tag or clear the cache (TORCHINDUCTOR_FX_GRAPH_CACHE=0)"]


@dataclasses.dataclass(frozen=True)
class Step:
    """A doctor-only step after audit, on one sample: ``find(overload, sample, audited)`` returns findings (and, for
    steps that can say what they could not check, notes)."""

    name: str
    find: Callable


STEPS = (Step("fullgraph", _fullgraph_findings), Step("fake", _fake_findings))


# --- running ---------------------------------------------------------------------------------------------------


def _from_audit(finding: auditing.Finding, sample: int) -> Finding:
    docs, topic = DOCS.get(auditing.kind_of(finding), (TUTORIAL, None))
    if finding.check == "opcheck:test_faketensor":
        docs = FAKE_DOCS
    return Finding(finding.check, finding.problem, finding.why, finding.fix, docs, _learn_more(topic),
                   finding.compiled, finding.detail or "", sample)


def _learn_more(topic: str | None) -> str:
    if topic is None:
        return ""
    lesson = notebook_about(topic)
    return f"the torch.compile × custom ops lab, notebook {lesson.number} ({lesson.title})"


def _with_learn_more(finding: Finding) -> Finding:
    topic = DOCS.get(finding.kind, (None, None))[1]
    return finding if finding.learn_more or topic is None else dataclasses.replace(finding,
                                                                                 learn_more=_learn_more(topic))


def _unique(findings: list[Finding]) -> list[Finding]:
    """Each finding once: the same check and problem on a later sample is the same defect."""
    seen, kept = set(), []
    for finding in findings:
        if (finding.check, finding.problem) not in seen:
            seen.add((finding.check, finding.problem))
            kept.append(finding)
    return kept


def _doctor_error(step: str, error: BaseException, sample: int | None) -> Finding:
    return Finding("doctor", f"labkit's {step} step failed on this op: {type(error).__name__}: "
                   f"{' '.join(str(error).split())[:300]}", "the doctor could not finish this check, so the op "
                   "is not passed", "run labkit.audit(op, *sample) on it by hand; if that works, report this "
                   "as a labkit bug with the JSON report", DOCS["doctor"][0],
                   detail="".join(traceback.format_exception(error)), sample=sample)


def _generated_fits(overload, sample: Sample) -> str | None:
    """None when the op runs eagerly on generated inputs, else one sentence: they do not fit it (then: skip)."""
    names, values = _values(overload, sample)
    copies = copy_inputs(values, names)
    try:
        overload(*copies[:len(sample.args)], **dict(zip(names[len(sample.args):], copies[len(sample.args):])))
    except Exception as error:  # noqa: BLE001 - not the op's defect: the doctor's guess did not fit it
        return f"{type(error).__name__}: {as_torch_error(error, 'eager').message[:160]}"
    return None


def examine(target: Target, tables: list[dict]) -> OpResult:
    """One overload: its samples, then audit and the doctor's steps on each. Never raises."""
    start = time.perf_counter()
    overload, name = target.overload, target.name
    schema = internals.schema_of(overload)
    samples, notes, findings = samples_for(name, overload, tables)
    checks_run: list[str] = []
    if findings or not samples:
        verdict = FAIL if findings else SKIP
        return OpResult(name, schema, target.found_in, verdict, findings, samples, checks_run, notes,
                        time.perf_counter() - start)
    if samples[0].source != "SAMPLES":
        misfit = _generated_fits(overload, samples[0])
        if misfit is not None:
            notes = [f"no samples: the inputs generated from the schema ({samples[0].describe()}) do not fit the "
                     f"op ({misfit}); add SAMPLES[{name.removesuffix('.default')!r}] = [(args, kwargs), ...]"]
            return OpResult(name, schema, target.found_in, SKIP, [], samples, checks_run, notes,
                            time.perf_counter() - start)
    for index, sample in enumerate(samples):
        try:
            audited = auditing.audit(overload, *sample.args, **sample.kwargs)
        except Exception as error:  # noqa: BLE001 - audit never raises; if it does, that is labkit's bug
            findings.append(_doctor_error("audit", error, index))
            continue
        checks_run += [c for c in audited.checks_run if c not in checks_run]
        findings += [_from_audit(f, index) for f in audited.findings]
        notes += [n.strip() for n in audited.cannot_see.split("; ") if n.strip() and n.strip() not in notes]
        for step in STEPS:
            try:
                with auditing._torch_logs_held_back():
                    found = step.find(overload, sample, audited)
            except Exception as error:  # noqa: BLE001 - a step must not crash the run
                findings.append(_doctor_error(step.name, error, index))
                continue
            found, step_notes = found if isinstance(found, tuple) else (found, [])
            checks_run += [step.name] if step.name not in checks_run else []
            findings += [dataclasses.replace(f, sample=index) for f in found]
            notes += [n for n in step_notes if n not in notes]
    checks_run.append("cache")
    notes += _cache_note(name)
    if any(f.check == "fullgraph" for f in findings):   # audit's note on the break: the finding now names it
        notes = [n for n in notes if GRAPH_BREAK_NOTE not in n]
    findings = [_with_learn_more(f) for f in _unique(findings)]
    return OpResult(name, schema, target.found_in, FAIL if findings else PASS, findings, samples, checks_run,
                    notes, time.perf_counter() - start)


@contextlib.contextmanager
def _fingerprinted():
    """labkit's cache fingerprint on while the doctor compiles; the caller's policy back afterwards."""
    previous = cache.policy()
    if previous != "fingerprinted":
        cache.set_policy("fingerprinted")
    try:
        yield
    finally:
        if cache.policy() != previous:
            cache.set_policy(previous)


def _say_to_stderr(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _examine_all(targets: list[Target], tables: list[dict], say: Callable[[str], None] | None,
                 asked: list[str], warnings: list[str]) -> DoctorReport:
    start = time.perf_counter()
    refusal = env.compiler_unavailable()
    if refusal is not None:
        raise UsageError(refusal)
    with _fingerprinted():
        paying = warmup.status() == "not run"
        warm = warmup.run(say=say or (lambda _: None))
        warm = warm if paying else None      # paid before this run (labkit.setup(), an earlier run): not here
        results = []
        for number, target in enumerate(targets, 1):
            results.append(examine(target, tables))
            if say is not None:
                say(f"[{number}/{len(targets)}] {target.name}: {results[-1].verdict} ({results[-1].seconds:.1f} s)")
    return DoctorReport(asked, environment(), results, warnings, warm, time.perf_counter() - start)


def sample_tables(modules, samples: dict | None = None) -> list[dict]:
    """The SAMPLES tables to read, first match wins: ``samples`` given by the caller, then each module's."""
    tables = []
    if samples is not None:
        tables.append(samples)
    tables += [m.SAMPLES for m in modules if isinstance(getattr(m, "SAMPLES", None), dict)]
    return tables


def examine_in_report(target: Target, tables: list[dict]) -> DoctorReport:
    """One overload examined as :func:`run` does it (fingerprinted caches, Inductor warm), as a report of one:
    what a pytest item runs."""
    return _examine_all([target], tables, None, [target.found_in], [])


def _unmatched(tables: list[dict], targets: list[Target]) -> list[str]:
    """A SAMPLES key that matches no op examined (a typo leaves its op skipped: say so)."""
    names = {t.name for t in targets}
    warnings = []
    for table in tables:
        for key in table:
            name = _key(key)
            if name is None:
                warnings.append(f"SAMPLES key {brief(key)} is neither an op nor a qualified name 'ns::name'")
            elif _full_name(name) not in names:
                warnings.append(f"SAMPLES names {name!r}, which is not among the ops examined")
    return warnings


def run(modules: Iterable[str] | str = (), namespaces: Iterable[str] = (), samples: dict | None = None,
        ops_only: Iterable[str] = (), say: Callable[[str], None] | None = _say_to_stderr) -> DoctorReport:
    """Import ``modules`` (dotted names or ``.py`` paths), find their custom ops (and those of ``namespaces``) and
    examine each overload. ``samples`` adds a SAMPLES table of your own (it wins over the modules'); ``ops_only``
    keeps only the overloads named (``"ns::name"`` or ``"ns::name.overload"``). ``say`` gets the progress lines
    (None: silent). :class:`UsageError` for what cannot be examined at all; every op's defect is in the report."""
    modules = [modules] if isinstance(modules, str) else list(modules)
    namespaces = [namespaces] if isinstance(namespaces, str) else list(namespaces)
    if not modules and not namespaces:
        raise UsageError("name at least one module (mypkg.ops) or namespace (--namespace mylib) to examine.")
    if samples is not None and not isinstance(samples, dict):
        raise UsageError(f"samples= takes a dict like SAMPLES ({{op: [(args, kwargs), ...]}}), not {brief(samples)}.")
    targets, imported = discover(modules, namespaces)
    tables = sample_tables(imported, samples)
    warnings = _unmatched(tables, targets)
    if ops_only:
        wanted = {_full_name(o) for o in ops_only}
        unknown = wanted - {t.name for t in targets}
        if unknown:
            raise UsageError(f"{sorted(unknown)[0]} is not among the ops found: "
                             f"{', '.join(t.name for t in targets[:8])}.")
        targets = [t for t in targets if t.name in wanted]
    asked = [*modules, *(f"namespace {n}" for n in namespaces)]
    return _examine_all(targets, tables, say, asked, warnings)


def check(op_list, samples: dict | None = None, say: Callable[[str], None] | None = None) -> DoctorReport:
    """Examine ops given as objects (a CustomOpDef, ``torch.ops.ns.name``, an overload, a labkit op), every
    overload of each; ``samples`` as a module's SAMPLES. For a notebook or a project's own test; silent by default.
    :class:`UsageError` when an item is not a live custom op."""
    items = list(op_list.values()) if isinstance(op_list, dict) else (
        [op_list] if internals.op_key(op_list) is not None or isinstance(op_list, ops.LabOp) else list(op_list))
    names = set()
    for item in items:
        try:
            overload = ops.live_overload(item)
        except ops.StaleOpError as stale:
            raise UsageError(str(stale)) from None
        key = _key(item)
        if overload is None or key is None:
            raise UsageError(f"{brief(item)} is not a custom operator: pass the object custom_op returned, "
                             "torch.ops.ns.name or one of its overloads.")
        qualname, _, overload_name = key.partition(".")
        names |= ({f"{qualname}.{overload_name}"} if overload_name else
                  {f"{qualname}.{o}" for o in internals.overload_names(qualname)})
    targets = _targets(names, "given")
    if not targets:
        raise UsageError("no custom operator given to check.")
    tables = sample_tables([], samples)
    asked = sorted({t.name.partition(".")[0] for t in targets})
    return _examine_all(targets, tables, say, asked, _unmatched(tables, targets))


def assert_clean(op, samples=None) -> DoctorReport:
    """For a project's own test: examine ``op`` (every overload) on ``samples`` — a list of (args, kwargs) pairs, or
    a SAMPLES dict — and raise AssertionError with the report (every finding in full) if anything is found."""
    if samples is not None and not isinstance(samples, dict):
        key = _key(op)
        samples = {key if key is not None else op: samples}
    report = check(op, samples=samples)
    if not report.ok:
        raise AssertionError(doctor_report.failure_text(report))
    return report


__all__ = ["run", "check", "assert_clean", "discover", "examine", "DoctorReport", "OpResult", "Finding", "Sample",
           "UsageError", "STEPS"]
