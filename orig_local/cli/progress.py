"""Live progress on stderr for commands that run for a while without items to count
(``orig generate``): one line when a stage starts a new round, with the time since start.

The agent's trace calls :meth:`StageLines.__call__` on every record it adds; only a change of
(stage, round) prints, so a round's dozen page reads are one line, not twelve."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class StageLines:
    """Prints ``  3.2s  round 1  planning sub-questions and queries`` when a stage begins."""

    def __init__(self, prefix: str = "orig generate", stream: TextIO | None = None) -> None:
        self.prefix = prefix
        self.stream = stream if stream is not None else sys.stderr
        self._t0 = time.perf_counter()
        self._last: tuple[str, int] | None = None
        self.errors = 0

    def say(self, text: str) -> None:
        print(f"{self.prefix}: {time.perf_counter() - self._t0:6.1f}s  {text}", file=self.stream, flush=True)

    def __call__(self, stage: str, round: int, record=None) -> None:
        if record is not None and record.error:
            self.errors += 1
            self.say(f"{stage}/{record.step} failed: {' '.join(str(record.error).split())[:120]}")
        if (stage, round) == self._last:
            return
        self._last = (stage, round)
        where = f"round {round}  " if round else ""
        from orig_local.agent.registry import registry  # each stage's SPEC says what it is doing

        self.say(where + registry().doing(stage))
