"""What every phase shares: the agent-output type, item selection and sharding, crash-safe
image saving, the per-phase store (main + shard file) and the progress bar."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orig_local.errors import UsageError
from orig_local.evaluation.items import BenchmarkItem
from orig_local.evaluation.jsonl_store import DISK_ERRNOS, DiskWriteError, JsonlStore
from orig_local.evaluation.rundir import phase_file

log = logging.getLogger(__name__)


@dataclass
class AgentOutput:
    """What the agent phase needs from any agent/condition for one prompt."""

    final_prompt: str
    references: list[Any] = field(default_factory=list)  # PIL images or paths, for the generator
    evidence_texts: list[str] = field(default_factory=list)  # retrieved text R^t (Eq. 12)
    evidence_images: list[Any] = field(default_factory=list)  # retrieved images R^v
    stages: dict[str, dict] = field(default_factory=dict)  # per-stage totals (calls, tokens, ...)
    rounds: int | None = None
    stop_reason: str | None = None
    trace: dict | None = None  # JSON-able trace, saved to traces/<id>.json
    notes: list[str] = field(default_factory=list)
    iterations: int | None = None  # retrieval iterations incl. bootstrap (paper Table 4 "Iters")
    error: str | None = None  # a failure the agent recovered from enough to report (row error)
    status: str = "ok"  # ok | degraded | failed (orig_local.agent.agent.assess)
    failure: str | None = None  # why failed/degraded (row error / warning)
    transport: bool = False  # the backbone did not answer (counts toward the circuit breaker)


AgentFn = Callable[[BenchmarkItem], "AgentOutput | Awaitable[AgentOutput]"]


# --------------------------------------------------------------------------- selection


def parse_shard(text: str | None) -> tuple[int, int]:
    """``"i/n"`` -> (i, n), 0 <= i < n."""
    if not text:
        return (0, 1)
    i, _, n = text.partition("/")
    try:
        i_, n_ = int(i), int(n)
    except ValueError:
        raise UsageError(f"--shard wants i/n, e.g. 0/4; got {text!r}") from None
    if not (n_ >= 1 and 0 <= i_ < n_):
        raise UsageError(f"--shard {text}: need 0 <= i < n")
    return (i_, n_)


def shard_from_env(env: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """(RANK, WORLD_SIZE) when launched by ``accelerate launch`` / ``torchrun`` with >1 process."""
    where: Mapping[str, str] = os.environ if env is None else env
    try:
        rank, world = int(where.get("RANK", "0")), int(where.get("WORLD_SIZE", "1"))
    except ValueError:
        return None
    return (rank, world) if world > 1 else None


def select_items(items: Sequence[BenchmarkItem], ids: Sequence[str] | None = None,
                 classes: Sequence[str] | None = None, limit: int | None = None,
                 shard: tuple[int, int] = (0, 1)) -> list[BenchmarkItem]:
    """Filter by ids / classes, cut to ``limit``, then take shard i of n (every n-th item, so
    shards get a similar class mix)."""
    out = list(items)
    if ids:
        wanted = set(ids)
        out = [it for it in out if it.id in wanted]
    if classes:
        wanted_c = set(classes)
        out = [it for it in out if it.category in wanted_c]
    if limit is not None:
        if limit < 1:  # out[:-1] would silently drop the last item
            from orig_local.errors import UsageError

            raise UsageError(f"--limit must be a positive number of items, not {limit}")
        out = out[:limit]
    i, n = shard
    return out[i::n]


# --------------------------------------------------------------------------- helpers


def relative_to_run(path: Path, run_dir: Path) -> str:
    return os.path.relpath(path, run_dir)


@contextmanager
def naming_disk_errors(path: Path):
    """A full/read-only disk while writing ``path`` becomes a DiskWriteError naming it (or the
    file inside it the error names)."""
    try:
        yield
    except OSError as exc:
        if isinstance(exc, DiskWriteError):
            raise
        if exc.errno in DISK_ERRNOS:
            raise DiskWriteError(f"cannot write {exc.filename or path}: {exc.strerror or exc}",
                                 hint="rows already written are intact; free space, then rerun the same "
                                 "command to resume") from exc
        raise


def save_image(image: Any, path: Path) -> Path:
    """Write a PIL image (or copy an image file) atomically: temp file, then rename."""
    from PIL import Image

    with naming_disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.stem + ".tmp" + path.suffix)
        if isinstance(image, (str, Path)):
            with Image.open(image) as im:
                im.convert("RGB").save(tmp)
        else:
            image.save(tmp)
        os.replace(tmp, path)
    return path


def write_text(path: Path, text: str) -> Path:
    """An asset file (trace, evidence list), with disk errors naming it."""
    with naming_disk_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return path


def error_text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:500]}"


def progress_bar(total: int, desc: str, progress: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="item", disable=not progress, dynamic_ncols=True)


def retry_statuses(retry_errors: bool = False, retry_degraded: bool = False) -> set[str]:
    """Row statuses to run again: failed (``--retry-errors``), and degraded (``--retry-degraded``)."""
    return ({"failed"} if retry_errors or retry_degraded else set()) | ({"degraded"} if retry_degraded else set())


def phase_store(run_dir: Path, phase: str, shard: tuple[int, int], judge_name: str | None = None,
                retry_errors: bool = False, retry_degraded: bool = False) -> tuple[JsonlStore, dict[str, str]]:
    """This shard's store, and the status of every item finished anywhere (main file or this
    shard file), by id (ids and statuses only: resuming never holds the rows)."""
    retry = retry_statuses(retry_errors, retry_degraded)
    store = JsonlStore(phase_file(run_dir, phase, judge_name, shard), retry=retry)
    done = store.statuses
    if shard[1] > 1:
        main = JsonlStore(phase_file(run_dir, phase, judge_name), retry=retry)
        done = {**main.statuses, **done}
    return store, done


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value
