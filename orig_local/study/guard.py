"""Children of a study die with it, even when the study itself is killed with SIGKILL.

A vLLM server or a phase left running after its study died would hold the GPU that the rerun
needs (or write rows into a run folder the rerun is writing too). On Linux the kernel delivers
SIGTERM to a child when its parent dies (``PR_SET_PDEATHSIG``); elsewhere this is a no-op and
only the study's own cleanup (try/finally, signal handlers) applies.

``python -m orig_local.study.guard CMD ARGS...`` sets that signal, then ``exec``s CMD: the way
to guard a command whose ``Popen`` is not ours (:class:`~orig_local.llm.local_server.ServerProcess`).
"""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PARENT_ENV = "ORIG_STUDY_PARENT_PID"


def set_parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux only)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl in this libc: keep running unguarded
        return


def main(argv: list[str]) -> None:
    if not argv:
        sys.exit("usage: python -m orig_local.study.guard COMMAND [ARGS...]")
    set_parent_death_signal()
    expected = os.environ.get(PARENT_ENV)
    if expected and str(os.getppid()) != expected:  # the study died before prctl took effect
        sys.exit(143)
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
