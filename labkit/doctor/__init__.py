"""``labkit doctor``: audit every custom op a project registers, the way its CI can run it.

:func:`run` imports the project's module(s), finds each operator they registered (``custom_op``, ``triton_op``,
``torch.library.define`` / ``Library(...).define``: whatever the dispatcher holds after the import that it did not
hold before, plus any C++ op of a namespace named with ``namespaces=``), takes sample inputs from the project (a
module-level ``SAMPLES``, :func:`samples_for`) and checks each overload separately with every check of
:data:`labkit.auditing.CHECKS`, in order (listed in :mod:`labkit.auditing`; :func:`labkit.audit` runs all but the
doctor's own), then adds a note (no check: nothing there can fail) on the compile caches: the doctor compiles with
labkit's cache fingerprint on, which holds a Python-defined op's declaration; a C++ op's it does not (nor do torch's
own keys: pytorch #187319), and its note says what to do. Every check names its official page and lesson, which each
finding carries. :func:`check` does the same on ops given as objects (a notebook's, a test's). Nothing here raises
at the project: a failing op, a failing sample or a failing step is a finding; what cannot be used at all (a module
that does not import, one that registers no op) is one sentence, :class:`UsageError`. The caller's sample inputs are
only ever copied.

Its modules, each one job, lowest first: :mod:`~labkit.doctor.formats` (a report as a terminal table, JSON, JUnit
XML), :mod:`~labkit.doctor.report` (what a report holds), :mod:`~labkit.doctor.discovery` (finding the ops),
:mod:`~labkit.doctor.samples` (their inputs), :mod:`~labkit.doctor.examining` (one overload, into one result) and
:mod:`~labkit.doctor.running` (a run: :func:`run`, :func:`check`, :func:`assert_clean`), and
:mod:`~labkit.doctor.stopping` (how the command line's process stops: Ctrl-C wherever it lands, a project's thread
left running).

Not here: any of that work (this file gathers the public names), the command line (:mod:`labkit.doctor.command`),
pytest's items (``labkit_pytest`` (beside the package)), and private torch.
"""

from .discovery import Target, UsageError, discover, import_module, op_snapshot
from .examining import examine
from ..describe import describe_value
from .report import FAIL, PASS, SKIP, DoctorReport, Finding, OpResult, Sample, environment
from .running import Interrupted, assert_clean, check, examine_in_report, import_limit, run, say_to_stderr, time_limit

from .samples import refuse_unmatched, sample_tables, samples_for

__all__ = ["run", "check", "assert_clean", "discover", "examine", "DoctorReport", "OpResult", "Finding", "Sample",
           "UsageError", "Interrupted",
           # also used by labkit's command line and pytest plugin, and named in the docs
           "Target", "import_module", "op_snapshot", "samples_for", "sample_tables", "examine_in_report",
           "say_to_stderr", "refuse_unmatched", "time_limit", "import_limit",
           "describe_value", "environment", "PASS", "FAIL", "SKIP"]
