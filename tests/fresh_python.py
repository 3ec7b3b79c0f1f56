"""Code run in a fresh Python, for the cases that once killed the process (SIGSEGV) or that need a torch no test
has configured yet: a crash fails the test instead of killing pytest. And what a one-sentence refusal looks like.
"""

import os
import subprocess
import sys
import textwrap

from repo import ROOT


def run_python(code: str, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh interpreter; a crash shows as a negative return code, not a dead pytest."""
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env=dict(os.environ, **(env or {})))


def assert_survived(done: subprocess.CompletedProcess) -> list[str]:
    assert done.returncode == 0, f"exit {done.returncode} (negative = killed by a signal):\n{done.stderr[-3000:]}"
    return done.stdout.strip().splitlines()


def one_sentence(message: str) -> bool:
    return "\n" not in message and 20 < len(message) < 300 and message.rstrip().endswith((".", "'", ")"))


# The start of a fresh Python in which the learner defined their own op, mylab::op, with torch.library.custom_op;
# attempt(action) prints ACCEPTED, or labkit's refusal.
USERS_OWN_OP = """
    import torch, labkit

    @torch.library.custom_op("mylab::op", mutates_args=())
    def my_op(x: torch.Tensor) -> torch.Tensor:
        return x + 100

    def attempt(action):
        try:
            action()
            print("ACCEPTED")
        except labkit.LabOpError as error:
            print("refused:", error)
"""
