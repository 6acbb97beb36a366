"""Children of a study die with it, even when the study itself is killed with SIGKILL.

A vLLM server or a phase left running after its study died would hold the GPU that the rerun
needs (or write rows into a run folder the rerun is writing too). On Linux the kernel delivers
a signal to a child when its parent dies (``PR_SET_PDEATHSIG``); elsewhere this is a no-op and
only the study's own cleanup (try/finally, signal handlers) applies.

A single SIGTERM to the server process is not enough: vLLM ignores it while its engine starts,
and its engine and worker processes (children of the API server) get no signal at all. So
``python -m orig_local.study.guard CMD ARGS...`` does not ``exec`` CMD; it stays as the
server's supervisor:

* it gets the parent-death signal itself, and also notices a new parent pid (the signal is
  tied to the thread that started it);
* it is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process the server forks that loses
  its own parent is re-parented to the guard, so the guard can always find every descendant;
* when the study dies or stops it, it sends SIGTERM to CMD and every descendant, waits
  ``$ORIG_GUARD_GRACE_S`` seconds (default 20), then SIGKILLs whatever is left, and exits;
* when CMD exits by itself, leftover descendants are stopped the same way and the guard exits
  with CMD's status (what :class:`~orig_local.llm.local_server.ServerProcess` reads).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PARENT_ENV = "ORIG_STUDY_PARENT_PID"
GRACE_ENV = "ORIG_GUARD_GRACE_S"
DEFAULT_GRACE_S = 20.0


def _prctl(option: int, value: int) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):  # no prctl in this libc: keep running unguarded
        return False


def set_parent_death_signal(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent exits (Linux only)."""
    _prctl(PR_SET_PDEATHSIG, int(sig))


def descendants(root: int) -> list[int]:
    """Every living descendant of ``root`` (from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # exited meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields and fields[0] != b"Z":  # a zombie is dead already (its parent reaps it)
            children.setdefault(int(fields[1]), []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _signal_all(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def _reap() -> None:
    """Collect exited children (orphans re-parented to us as subreaper, too)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def stop_tree(grace_s: float) -> None:
    """SIGTERM every descendant of this process, then SIGKILL what is left after ``grace_s``."""
    me = os.getpid()
    _signal_all(descendants(me), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap()
        if not descendants(me):
            return
        time.sleep(0.1)
    while left := descendants(me):  # a process forked during the grace period is caught too
        _signal_all(left, signal.SIGKILL)
        time.sleep(0.05)
        _reap()


def main(argv: list[str]) -> int:
    if not argv:
        sys.exit("usage: python -m orig_local.study.guard COMMAND [ARGS...]")
    set_parent_death_signal(signal.SIGTERM)
    expected = os.environ.get(PARENT_ENV)
    parent = os.getppid()
    if expected and str(parent) != expected:  # the study died before prctl took effect
        return 143
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    grace_s = float(os.environ.get(GRACE_ENV) or DEFAULT_GRACE_S)
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: stop.append(signum))
    child = subprocess.Popen(argv)
    while True:
        code = child.poll()
        if code is not None:
            stop_tree(grace_s)  # what the server left behind
            return code if code >= 0 else 128 - code
        if stop or os.getppid() != parent:
            stop_tree(grace_s)
            child.wait()
            return 143
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
