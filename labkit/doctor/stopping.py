"""How the doctor's process stops: Ctrl-C ends it in one sentence wherever it lands, and a project's thread that
outlives the run is named, not waited for in silence. Only the command line's process starts a :class:`CtrlCWatch`
(a notebook's or a test's ``doctor.run`` leaves signals and threads alone).

Python turns Ctrl-C into ``KeyboardInterrupt`` only when the main thread runs Python bytecode: a kernel blocked in
C code (a C++ op, a wait on a C++ future), or code that catches the interrupt, would keep the run going forever.
So the watch also has the signal written to a pipe (:func:`signal.set_wakeup_fd`: done in C the moment it
arrives), which a thread of its own reads: if the main thread has not taken the interrupt within :data:`GRACE_S`,
that thread ends the run itself.

A process started with Ctrl-C ignored (a background job of a script, ``labkit doctor ... &``) keeps ignoring it,
as every program does: the shell asked for that, and the watch stays off.

Not here: what a stopped run keeps (:class:`labkit.doctor.running.Interrupted`) and says (:mod:`labkit.__main__`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from typing import Callable

GRACE_S = 5.0   # how long the main thread has to take a Ctrl-C itself before the watch ends the run


class CtrlCWatch:
    """The command line's watch over Ctrl-C, from :meth:`start` until the process ends.

    While the run goes on, a Ctrl-C the main thread has not taken within ``GRACE_S`` calls ``stuck`` (set by the
    command line once it knows its options) from the watch's thread; ``stuck`` must end the process. The main
    thread takes one inside :meth:`taking_it`, so the two never write a report at once. After :meth:`exiting`,
    when only Python's own exit is left, a Ctrl-C ends the process at once with the run's exit status.

    :meth:`start` does nothing off the main thread, or when Ctrl-C does not raise ``KeyboardInterrupt`` here (it is
    ignored, or someone else's handler has it); the other methods are then harmless."""

    def __init__(self):
        self.stuck: Callable[[], None] = lambda: exit_now(2)
        self._ending = threading.Lock()
        self._taken = threading.Event()
        self._status: int | None = None
        self._waiting_for: list[threading.Thread] = []
        self.limit_s: float | None = None   # the command line's --timeout-per-op, which also bounds the wait at exit
        self.process = False                 # started: this is the command line's own process
        self.active = False                  # and Ctrl-C reaches the watch

    def start(self) -> "CtrlCWatch":
        self.process = True
        if threading.current_thread() is not threading.main_thread() or \
                signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
            return self
        read, write = os.pipe()
        os.set_blocking(write, False)     # set_wakeup_fd needs it: the C signal handler must never block
        try:
            signal.set_wakeup_fd(write, warn_on_full_buffer=False)
        except (ValueError, OSError):
            os.close(read), os.close(write)
            return self
        threading.Thread(target=self._watch, args=(read,), name="labkit-doctor-ctrl-c", daemon=True).start()
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
            if self._status is not None:       # only Python's exit was left: nothing to keep, nothing to say but this
                if self._waiting_for:
                    print("labkit doctor: stopped waiting for the project's thread(s) by Ctrl-C; the report was "
                          "already written.", file=sys.stderr)
                exit_now(self._status)
            if not self._taken.wait(GRACE_S):
                with self._ending:
                    if not self._taken.is_set():
                        self.stuck()

    @contextlib.contextmanager
    def taking_it(self):
        """The main thread's handling of a Ctrl-C (keeping the report of what was examined, saying so)."""
        with self._ending:
            yield
            self._taken.set()

    def exiting(self, status: int) -> None:
        """The run is over with ``status`` and its reports are written. From now on a Ctrl-C ends the process at once
        with ``status`` (Python's exit takes a second or two; a Ctrl-C there would only replace the run's status with
        a signal's, or print a traceback from inside ``threading``). A project thread still running, which Python
        waits for before exiting, is named; :attr:`limit_s` (``--timeout-per-op``) bounds that wait."""
        limit_s = self.limit_s
        self._status = status
        self._taken.set()
        if not self.process:           # a notebook's or a test's call: its threads and signals are not ours
            return
        if self.active:                # KeyboardInterrupt no more: the signal still reaches the watch's pipe
            signal.signal(signal.SIGINT, lambda number, frame: None)
        self._waiting_for = project_threads()
        if not self._waiting_for:
            return
        names = ", ".join(repr(t.name) for t in self._waiting_for[:4]) + (", ..." if len(self._waiting_for) > 4
                                                                           else "")
        bound = f" (at most --timeout-per-op {limit_s:g} s)" if limit_s else ""
        stop = "; Ctrl-C stops the wait" if self.active else ""
        print(f"labkit doctor: the report is written; waiting for the project's thread(s) {names} to end{bound}, as "
              f"Python does before a process exits{stop}.", file=sys.stderr, flush=True)
        if limit_s:
            def give_up():
                print(f"labkit doctor: the project's thread(s) {names} still run after {limit_s:g} s: exiting without "
                      "them.", file=sys.stderr)
                exit_now(status)
            timer = threading.Timer(limit_s, give_up)
            timer.daemon = True
            timer.start()


def project_threads() -> list[threading.Thread]:
    """The threads Python waits for before the process exits: non-daemon ones, still running, other than the main
    thread (an idle ``concurrent.futures`` pool's among them: Python ends those at once)."""
    return [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon and t.is_alive()]


def exit_now(status: int) -> None:
    """End the process at once with ``status``, what was printed flushed first: for a thread other than the main
    one, or a main thread whose project threads must not be waited for."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
