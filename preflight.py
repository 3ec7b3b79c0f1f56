# -*- coding: utf-8 -*-
"""The workshop pre-flight, for any Python: python3 preflight.py (in the lab's folder, or with its path).

With a Python that has torch, it runs the lab's check (labkit.preflight). With one that has none -- the
system's python3 on a laptop where ./lab made .venv -- it runs the check with the lab's own .venv, and
where there is none it prints one ✘ sentence saying what to do. Written for any Python 3 (no f-strings):
an old python3 must reach its own sentence, not a SyntaxError.
"""

import os
import subprocess
import sys

LAB = os.path.dirname(os.path.abspath(__file__))
VENV_PYTHONS = (os.path.join(LAB, ".venv", "bin", "python"), os.path.join(LAB, ".venv", "Scripts", "python.exe"))
FIX = ("run ./lab once in the lab's folder (it makes .venv with torch and labkit), then python3 preflight.py "
       "again; on Colab or Binder, run labkit.preflight.run() in a notebook cell instead")


def say(text):
    out = "\u2718 " + text + "\n"
    try:
        sys.stdout.write(out)
    except UnicodeEncodeError:  # a terminal that cannot show the mark
        sys.stdout.write("x " + text + "\n")
    sys.stdout.flush()


def has_torch():
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


def main():
    if sys.version_info < (3, 10):
        for python in VENV_PYTHONS:
            if os.path.isfile(python):
                return subprocess.call([python, "-m", "labkit.preflight"], cwd=LAB)
        say("this Python is " + sys.version.split()[0] + " (" + sys.executable + "), the lab needs 3.10 or newer: "
            + FIX)
        return 1
    if not has_torch():
        for python in VENV_PYTHONS:
            # a venv's python is a link to the Python it was made from: compare environments, not files
            if os.path.isfile(python) and os.path.abspath(sys.prefix) != os.path.join(LAB, ".venv"):
                sys.stdout.write("(this Python, " + sys.executable + ", has no torch: checking with the lab's "
                                 + os.path.relpath(python, LAB) + ")\n")
                sys.stdout.flush()
                return subprocess.call([python, "-m", "labkit.preflight"], cwd=LAB)
        say("torch is not installed in this Python (" + sys.executable + "): " + FIX)
        return 1
    sys.path.insert(0, LAB)  # labkit from this folder, when this Python has torch but no installed labkit
    try:
        from labkit import preflight
    except ImportError as error:  # torch, but not labkit's own requirements (ipywidgets, ...)
        say("labkit cannot be imported with this Python (" + sys.executable + "): " + str(error) + "; " + FIX)
        return 1
    return 0 if preflight.run() else 1


if __name__ == "__main__":
    sys.exit(main())
