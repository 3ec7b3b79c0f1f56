"""``python -m labkit doctor mypkg.ops`` and the ``labkit-doctor`` script: the doctor's command line
(:mod:`labkit.doctor.command`), imported under the guard that ends a Ctrl-C while starting in one sentence.

Not here: the command line itself (:mod:`labkit.doctor.command`).
"""

import sys

from . import _CtrlCWhileStarting


def doctor_main() -> None:
    """The ``labkit-doctor`` console script."""
    with _CtrlCWhileStarting():
        from .doctor.command import doctor_main as command_line
    command_line()


if __name__ == "__main__":
    with _CtrlCWhileStarting():
        from .doctor.command import _command
    raise SystemExit(_command(sys.argv[1:]))
