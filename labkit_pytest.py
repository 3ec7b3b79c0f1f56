"""labkit doctor inside pytest: ``pytest --labkit-doctor mypkg.ops`` makes one test item per op overload.

Registered through the ``pytest11`` entry point, so it is there wherever labkit is installed, and does nothing
unless asked: without ``--labkit-doctor`` it adds no item and imports neither torch nor labkit (a test checks
it). That is why it is a top-level module beside the package, not ``labkit.pytest_plugin``: importing anything
inside ``labkit`` runs ``labkit/__init__.py``, which imports torch, in every pytest run of the environment. Each item
is named after its overload (``labkit-doctor::mypkg.ops::ns::name.default``), carries the ``labkit_doctor`` marker
(``-m labkit_doctor`` selects them alone), fails with every finding in full (torch's whole message, the fix, the
docs), and skips an op without samples with the sentence saying what to add. The first item pays Inductor's
warm-up, once, with a line on the terminal. The ops are found before collection (the registry noted before the
conftest files load, the modules imported in ``pytest_configure``): the tests' own imports of the project would
otherwise register them before the doctor looked.

For a project's own test: the ``labkit_doctor`` fixture is :func:`labkit.doctor.assert_clean`
(``labkit_doctor(my_op, [((torch.randn(4),), {})])`` raises AssertionError with the report).

Not here: what is checked (:mod:`labkit.doctor`) and how a finding is written (:mod:`labkit.doctor.formats`).
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser):
    group = parser.getgroup("labkit-doctor", "labkit doctor: audit a project's custom ops")
    group.addoption("--labkit-doctor", action="append", default=[], metavar="MODULE",
                    help="a module (mypkg.ops) whose custom ops become one test item per overload; repeatable")
    group.addoption("--labkit-doctor-namespace", action="append", default=[], metavar="NS",
                    help="also every op of namespace NS (C++ ops), repeatable")


_BEFORE = pytest.StashKey[set]()
_FOUND = pytest.StashKey[tuple]()


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    """The ops registered before the project's conftest files import anything: what its imports add is then told
    apart from torch's (only when asked: otherwise nothing is imported)."""
    asked = early_config.known_args_namespace
    if getattr(asked, "labkit_doctor", None) or getattr(asked, "labkit_doctor_namespace", None):
        from labkit import doctor

        early_config.stash[_BEFORE] = doctor.op_snapshot()


def pytest_configure(config):
    """Find the ops before collection: the tests' imports would otherwise register them before the doctor looked."""
    config.addinivalue_line("markers", "labkit_doctor: an op overload examined by labkit doctor")
    modules, namespaces = config.getoption("labkit_doctor"), config.getoption("labkit_doctor_namespace")
    if not modules and not namespaces:
        return
    from labkit import doctor

    try:
        targets, imported = doctor.discover(modules, namespaces, before=config.stash.get(_BEFORE, None))
        tables = doctor.sample_tables(imported)
        doctor.refuse_unmatched(tables, targets)
    except doctor.UsageError as problem:
        raise pytest.UsageError(f"--labkit-doctor: {problem}") from None
    config.stash[_FOUND] = (targets, tables)


_VERDICT = "labkit_doctor_verdict"


def pytest_runtest_logreport(report):
    """Each doctor item's verdict, from its report: where the session ends (with pytest-xdist, the controller, to
    which the workers send their reports), the rule below counts them."""
    for key, value in getattr(report, "user_properties", ()):
        if key == _VERDICT and report.when == "call":
            _SEEN.append(value)


_SEEN: list[str] = []


def pytest_sessionstart(session):
    _SEEN.clear()


def pytest_sessionfinish(session, exitstatus):
    """The command line's rule: a run in which every op was skipped checked nothing, and must not pass green."""
    verdicts = list(_SEEN)
    if verdicts and exitstatus == pytest.ExitCode.OK and all(v == "skip" for v in verdicts):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"labkit doctor: nothing was checked: every op ({len(verdicts)}) was skipped: give "
                                "them SAMPLES that run on this machine.", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


class DoctorFailure(Exception):
    """An op overload with findings; its text is the whole report for that op."""


class DoctorItem(pytest.Item):
    def __init__(self, *, target, tables, **kwargs):
        super().__init__(**kwargs)
        self.target, self.tables = target, tables
        self.add_marker("labkit_doctor")

    def setup(self):
        from labkit import warmup

        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        say = (lambda text: reporter.write_line(text)) if reporter is not None else (lambda _: None)
        warmup.run(say=say)

    def runtest(self):
        from labkit import doctor

        report = doctor.examine_in_report(self.target, self.tables)
        result = report.results[0]
        self.user_properties.append((_VERDICT, result.verdict))
        if result.verdict == doctor.SKIP:
            pytest.skip(result.notes[0] if result.notes else "not checked")
        if result.verdict == doctor.FAIL:
            from labkit.doctor import formats

            raise DoctorFailure(formats.failure_text(report))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, DoctorFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        return self.path, None, f"labkit doctor: {self.target.name}"


def pytest_collection_modifyitems(session, config, items):
    if _FOUND not in config.stash:
        return
    targets, tables = config.stash[_FOUND]
    for target in targets:
        items.append(DoctorItem.from_parent(session, name=f"labkit-doctor::{target.found_in}::{target.name}",
                                            target=target, tables=tables))


@pytest.fixture
def labkit_doctor():
    """``labkit_doctor(op, samples)``: examine one op (every overload) and fail the test with the report if anything
    is found; ``samples`` a list of (args, kwargs) pairs or a SAMPLES dict. Returns the report."""
    from labkit.doctor import assert_clean

    return assert_clean
