"""Shared timing and printing for every benchmark in this folder.

A figure is only useful with its spread and the state of the machine it came from, so every
benchmark here: runs warm-up rounds that are not counted, then ``repeats`` timed rounds; records
wall time and this process's CPU time (all threads) for each round; prints min / median / max;
and prints the machine's load (``os.getloadavg``) and core count before and after, so a figure
taken on a busy machine is recognisable as such. A goal is printed beside its figure, judged on
the median (the best single round would flatter a shared machine; the worst would punish it).
"""

from __future__ import annotations

import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere: import this checkout's orig_local
    sys.path.insert(0, str(ROOT))


def cores() -> int:
    """Cores this process may run on (what a per-core figure divides by)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def load_line() -> str:
    one, five, fifteen = os.getloadavg()
    n = cores()
    busy = "  BUSY: load above the core count, figures are pessimistic" if one > n else ""
    return f"load {one:.2f} / {five:.2f} / {fifteen:.2f} (1/5/15 min) on {n} core(s){busy}"


def header(title: str, **settings: Any) -> None:
    """Title, machine and settings of one benchmark."""
    print(f"\n## {title}")
    print(f"machine: {platform.machine()} {platform.system()}, python {platform.python_version()}, "
          f"{load_line()}")
    if settings:
        print("settings: " + ", ".join(f"{k}={v}" for k, v in settings.items()))


def footer() -> None:
    print(f"after: {load_line()}")


@dataclass
class Samples:
    """Timed rounds of one measurement: wall and CPU seconds, and what each round returned."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    def add(self, wall: float, cpu: float, result: Any = None) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.results.append(result)


def measure(fn: Callable[[], Any], *, repeats: int = 5, warmup: int = 1) -> Samples:
    """Run ``fn`` ``warmup`` times untimed, then ``repeats`` times timed (wall and process CPU)."""
    if repeats < 1:
        raise ValueError("repeats must be >= 1")
    for _ in range(warmup):
        fn()
    out = Samples()
    for _ in range(repeats):
        c0, w0 = time.process_time(), time.perf_counter()
        result = fn()
        out.add(time.perf_counter() - w0, time.process_time() - c0, result)
    return out


def measure_async(make_coro: Callable[[], Any], *, repeats: int = 5, warmup: int = 1) -> Samples:
    """:func:`measure` for a coroutine factory; each round runs in its own event loop."""
    return measure(lambda: asyncio.run(make_coro()), repeats=repeats, warmup=warmup)


def spread(values: list[float]) -> tuple[float, float, float]:
    """(min, median, max)."""
    if not values:
        raise ValueError("no values")
    return min(values), statistics.median(values), max(values)


def _num(x: float) -> str:
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 100:
        return f"{x:,.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 0.1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def judge(value: float, goal: float | None, higher_is_better: bool) -> str:
    if goal is None:
        return ""
    ok = value >= goal if higher_is_better else value <= goal
    sign = ">=" if higher_is_better else "<="
    return f"   goal {sign} {_num(goal)}: {'MET' if ok else 'MISSED'}"


def figure(name: str, values: list[float], unit: str = "", *, goal: float | None = None,
           higher_is_better: bool = True, note: str = "") -> float:
    """Print ``name: median unit (min .. max, n rounds)`` and the goal verdict; return the median."""
    lo, med, hi = spread(values)
    n = len(values)
    span = f"(min {_num(lo)}, max {_num(hi)}, n={n})" if n > 1 else "(1 round: no spread)"
    line = f"  {name:<46} {_num(med):>9} {unit:<14} {span}{judge(med, goal, higher_is_better)}"
    print(line + (f"   [{note}]" if note else ""))
    return med


def rates(samples: Samples, items: int) -> dict[str, list[float]]:
    """Per-round throughput figures for ``items`` processed per round."""
    return {
        "per_s": [items / w for w in samples.wall],
        "per_cpu_s": [items / c if c > 0 else float("inf") for c in samples.cpu],
        "cpu_ms_each": [1000 * c / items for c in samples.cpu],
        "wall_ms_each": [1000 * w / items for w in samples.wall],
    }


def print_timing(name: str, samples: Samples, items: int | None = None, *, goal_per_s: float | None = None,
                 per_core_goal: float | None = None) -> None:
    """Wall and CPU seconds of each round; with ``items``, rates, CPU per item and per core."""
    figure(f"{name}: wall", samples.wall, "s")
    figure(f"{name}: CPU (this process, all threads)", samples.cpu, "s")
    if items:
        r = rates(samples, items)
        figure(f"{name}: throughput", r["per_s"], "items/s", goal=goal_per_s)
        figure(f"{name}: per CPU-second", r["per_cpu_s"], "items/CPU-s", goal=per_core_goal)
        figure(f"{name}: CPU per item", r["cpu_ms_each"], "ms", higher_is_better=False)
