"""How the doctor's process stops: Ctrl-C ends it in one sentence wherever it lands, and a project's thread that
outlives the run is named, not waited for in silence. Only the command line's own process starts a
:class:`CtrlCWatch` (a notebook's or a test's ``doctor.run`` and ``main([...])`` leave signals and threads alone).

Python turns Ctrl-C into ``KeyboardInterrupt`` only when the main thread runs Python bytecode: a kernel waiting in
C code that has let go of Python's lock (a C++ op, a wait on a C++ future), or code that catches the interrupt,
would keep the run going forever. So the watch also has the signal written to a pipe (:func:`signal.set_wakeup_fd`:
done in C the moment it arrives), which a thread of its own reads: if the main thread has not taken the interrupt
within :data:`GRACE_S`, that thread ends the run itself. (C code that holds Python's lock stops every Python
thread, this one and ``--timeout-per-op``'s timer too: only a signal Python does not handle ends that.)

A process started with Ctrl-C ignored (a background job of a script, ``labkit doctor ... &``) keeps ignoring it,
as every program does: the shell asked for that, and the watch stays off. So it does off POSIX systems.

What stops a run at all is a real Ctrl-C: :func:`by_the_user` tells it from what the project's code raises
(``SystemExit``, pytest's skip, its own ``raise KeyboardInterrupt``), which the doctor reports as a finding.

Not here: what a stopped run keeps (:class:`labkit.doctor.running.Progress`) and says (:mod:`labkit.doctor.command`).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import sys
import threading
from typing import Callable

GRACE_S = 5.0      # how long the main thread has to take a Ctrl-C itself before the watch ends the run
ANNOUNCE_S = 1.0   # how long Python's exit may wait for threads before the doctor names them


class CtrlCWatch:
    """The command line's watch over Ctrl-C, from :meth:`start` until the process ends.

    While the run goes on, a Ctrl-C the main thread has not taken within ``GRACE_S`` calls :attr:`on_stuck` (set by
    the command line once it knows its options) from the watch's thread, which then ends the process (exit 2)
    whatever ``on_stuck`` does. The main thread writes its reports inside :meth:`main_reports`; the watch writes
    only if the main thread has not, never at the same time. After :meth:`exiting` only Python's exit is left: a
    Ctrl-C ends the process at once with the run's exit status.

    :meth:`start` leaves the watch off (the other methods are then harmless) off the main thread, off POSIX, and
    when Ctrl-C does not raise ``KeyboardInterrupt`` here (ignored, or someone else's handler has it)."""

    def __init__(self):
        self.on_stuck: Callable[[], None] = _stopped_while_starting   # until the command line knows its options
        self.limit_s: float | None = None   # --timeout-per-op, which also bounds Python's wait for threads at exit
        self.command_line = False            # started: this process is the doctor's command line
        self.active = False                  # and Ctrl-C reaches the watch
        self._reporting = threading.Lock()
        self._reported = threading.Event()   # the main thread has written its reports (or said why none)
        self._status: int | None = None      # set by exiting(): the run is over
        self.took_ctrl_c = False             # the main thread took a Ctrl-C: stop, wait for nothing

    def start(self) -> "CtrlCWatch":
        self.command_line = True
        if os.name != "posix" or threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return self
        read, write = os.pipe()
        try:
            os.set_blocking(write, False)    # set_wakeup_fd needs it: the C signal handler must never block
            signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read), os.close(write)
            return self
        # A child the project forks shares the pipe: its own Ctrl-C must not look like the doctor's.
        os.register_at_fork(after_in_child=_no_wakeup_fd)
        threading.Thread(target=self._watch, args=(read,), name="labkit-doctor-ctrl-c", daemon=True).start()
        signal.signal(signal.SIGINT, _ctrl_c)   # Python's own handler, remembering that a real Ctrl-C came
        _WATCHED.set()
        self.active = True
        return self

    def _watch(self, read: int) -> None:
        while True:
            try:
                data = os.read(read, 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGINT not in data:
                continue
            _SIGNALLED.set()                   # also when the project replaced the handler that remembers it
            if self._status is not None:       # only Python's exit was left
                if threads_python_waits_for():
                    print("labkit doctor: stopped waiting for the project's thread(s) by Ctrl-C; the run was over.",
                          file=sys.stderr)
                exit_now(self._status)
            if self._reported.wait(GRACE_S):
                continue
            with self._reporting:
                if self._reported.is_set():
                    continue
                backstop = threading.Timer(GRACE_S, os._exit, (2,))   # on_stuck itself may block (a C lock)
                backstop.daemon = True
                backstop.start()
                try:
                    self.on_stuck()
                finally:
                    exit_now(2)

    @contextlib.contextmanager
    def main_reports(self, after_ctrl_c: bool = False):
        """Around the main thread's writing of its reports or its last sentence, whatever the run's outcome: the
        watch then writes none. A Ctrl-C taken by the main thread (``after_ctrl_c``) must reach this within
        ``GRACE_S``; the process then waits for no project thread at exit."""
        with self._reporting:
            self.took_ctrl_c = self.took_ctrl_c or after_ctrl_c
            try:
                yield
            finally:
                self._reported.set()

    def exiting(self, status: int) -> None:
        """The run is over with ``status`` and its last word is said. From now on a Ctrl-C ends the process at once
        with ``status`` (Python's exit takes a second or two; a Ctrl-C there would only replace the run's status with
        a signal's, or print a traceback from inside ``threading``). When a Ctrl-C stopped the run, nothing more is
        waited for. Otherwise threads Python waits for before exiting (a project's, not daemon) are named if the
        exit takes longer than ``ANNOUNCE_S``, and :attr:`limit_s` bounds that wait."""
        self._reported.set()
        if not self.command_line:          # a notebook's or a test's call: its threads and signals are not ours
            return
        if self.active:                    # KeyboardInterrupt no more: the signal still reaches the watch's pipe
            signal.signal(signal.SIGINT, lambda number, frame: None)
            # Once Python has joined its threads, its teardown puts a Python-level handler back to the default
            # (death by SIGINT, status lost) for its last second: ignored from then on, nothing is left to stop.
            atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)
        self._status = status
        if self.took_ctrl_c and threads_python_waits_for():
            exit_now(status)               # asked to stop: a thread of the project's is not waited for
        self._later(ANNOUNCE_S, self._announce)
        if self.limit_s:
            self._later(self.limit_s, self._give_up)

    @staticmethod
    def _later(seconds: float, call: Callable[[], None]) -> None:
        timer = threading.Timer(seconds, call)
        timer.daemon = True                # it runs while Python's exit waits for the others
        timer.start()

    def _announce(self) -> None:
        waiting = _names(threads_python_waits_for())
        if waiting:
            bound = f" (at most --timeout-per-op {self.limit_s:g} s)" if self.limit_s else ""
            stop = "; Ctrl-C stops the wait" if self.active else ""
            print(f"labkit doctor: the run is over; waiting for the project's thread(s) {waiting} to end{bound}, as "
                  f"Python does before a process exits{stop}.", file=sys.stderr, flush=True)

    def _give_up(self) -> None:
        waiting = _names(threads_python_waits_for())
        if waiting:
            print(f"labkit doctor: the project's thread(s) {waiting} still run after {self.limit_s:g} s: exiting "
                  "without them.", file=sys.stderr)
            exit_now(self._status)


_WATCHED = threading.Event()     # this is the command line's process, and its watch is on
_SIGNALLED = threading.Event()   # and a real Ctrl-C (SIGINT) reached it


def _ctrl_c(number, frame) -> None:
    """SIGINT's handler while the watch is on: remember that the user pressed Ctrl-C, then interrupt as Python's
    own handler does (``KeyboardInterrupt`` in the main thread)."""
    _SIGNALLED.set()
    signal.default_int_handler(number, frame)


def by_the_user(error: BaseException) -> bool:
    """Whether ``error``, raised while the project's code ran (a SAMPLES function, a kernel, an import), is the user
    stopping the run rather than the project's own doing: a ``KeyboardInterrupt`` that a real Ctrl-C raised. Anything
    else (``SystemExit``, pytest's skip, a ``raise KeyboardInterrupt`` of the project's) is a finding or one sentence.
    Where the doctor cannot tell them apart (not the command line's watched process: a notebook's stop button, a
    test's call), every ``KeyboardInterrupt`` is the user's."""
    if not isinstance(error, KeyboardInterrupt):
        return False
    return not _WATCHED.is_set() or _SIGNALLED.is_set()


def raised(error: BaseException) -> str:
    """What the project's code raised, in words: its type, what it means when it is no error, and its message."""
    kind = type(error).__name__
    meaning = {"SystemExit": "sys.exit() or exit(), which would end the program calling it",
               "Skipped": "pytest.skip or pytest.importorskip", "Failed": "pytest.fail",
               "Exit": "pytest.exit", "KeyboardInterrupt": "raised by the code, not by a Ctrl-C"}.get(kind)
    try:
        message = " ".join(str(error).split())[:200]
    except BaseException:  # noqa: BLE001 - the project's exception: its __str__ can raise anything, SystemExit too
        message = ""
    return kind + (f" ({meaning})" if meaning else "") + (f": {message}" if message else "")


def threads_python_waits_for() -> list[threading.Thread]:
    """The threads Python waits for before the process exits: non-daemon ones, still running, other than the main
    thread (an idle ``concurrent.futures`` pool's among them, Inductor's too: Python ends those at once, which is
    why the doctor names the threads only once the exit has waited for a while)."""
    return [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def _names(threads: list[threading.Thread]) -> str:
    return ", ".join(repr(t.name) for t in threads[:4]) + (", ..." if len(threads) > 4 else "")


def _stopped_while_starting() -> None:
    print("labkit doctor: stopped by Ctrl-C while starting; nothing was examined.", file=sys.stderr)


def _no_wakeup_fd() -> None:
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)


def exit_now(status: int) -> None:
    """End the process at once with ``status``, what was printed flushed first; Python's exit handlers (``atexit``)
    do not run: for a thread other than the main one, or a main thread whose project threads must not be waited
    for."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
