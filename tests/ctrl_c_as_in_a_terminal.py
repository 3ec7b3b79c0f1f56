"""Run a command with Ctrl-C as a terminal gives it: ``python tests/ctrl_c_as_in_a_terminal.py [--ignored] CMD ARGS``.

A process started in the background by a non-interactive shell (``./lab test > log &``, as CI scripts and this
project's sessions start the suite) has SIGINT ignored, and every process it starts inherits that: Python then
installs no KeyboardInterrupt handler, so a test that sends SIGINT would measure how the suite was started, not the
program. This resets SIGINT to its default (and unblocks it) and execs the command, whose Python then takes
Ctrl-C as in a terminal.
"""

import os
import signal
import sys

if __name__ == "__main__":
    command = sys.argv[1:]
    as_a_background_job = command[0] == "--ignored"      # ... or, with --ignored first, as `command &` starts it
    if as_a_background_job:
        command = command[1:]
    signal.signal(signal.SIGINT, signal.SIG_IGN if as_a_background_job else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})   # a blocked signal is inherited blocked too
    os.execvp(command[0], command)
