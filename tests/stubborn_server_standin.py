#!/usr/bin/env python
"""A stand-in for a vLLM server during its start-up (tests): ignores SIGTERM, as vLLM's API
server does while its engine starts; spawns an engine-like child in its process group that
ignores SIGTERM too, and a worker that leaves the group (its own session) and is orphaned by
a short-lived intermediate process; never becomes healthy. Writes every pid, one JSON line,
to $STUBBORN_PIDS once all are running."""

import json
import os
import signal
import subprocess
import sys
import time

SLEEPER = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    engine = subprocess.Popen([sys.executable, "-c", SLEEPER])
    # the intermediate starts the worker in a new session and exits: the worker is orphaned
    spawner = subprocess.run(
        [sys.executable, "-c",
         "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', sys.argv[1]], "
         "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)",
         SLEEPER],
        capture_output=True, text=True, check=True)
    worker = int(spawner.stdout.strip())
    with open(os.environ["STUBBORN_PIDS"], "a") as f:
        f.write(json.dumps({"server": os.getpid(), "engine": engine.pid, "worker": worker}) + "\n")
    time.sleep(600)


if __name__ == "__main__":
    main()
