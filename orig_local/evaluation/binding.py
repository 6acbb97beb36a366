"""Bind each phase of a run folder to the resolved settings it reads.

A phase's rows are only comparable with each other when every row was made with the same
settings: an agent phase resumed without ``-s agent.refinement=false`` would otherwise finish
items 2-3 with refinement and item 1 without, and one score would mix two ablations. So each
phase (each judge phase under its judge name) records in ``run.json`` the settings it reads,
flattened to dotted keys, the first time it writes rows; a later invocation of that phase with
any of them changed is refused (:class:`SettingsMismatch`) with a one-line diff.

What counts is what can change a row: the condition, backend, model, revision, sampling,
schema handling, every agent switch and budget, the retrieval chain and its limits, the
generator's pipeline and sampling, the judge and its protocol. Where a server is, how long to
wait for it, how many requests run at once, caches, devices and progress bars are operational
(:data:`OPERATIONAL`) and may change between invocations.

Each phase's resolved config is also kept as ``config.<phase>.yaml`` (``config.judge-<name>.yaml``)
beside ``config.yaml`` (the last invocation's), so the config that wrote the rows is never
overwritten by a later phase's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from orig_local.errors import OrigError
from orig_local.evaluation.phases import check_phase

if TYPE_CHECKING:
    from orig_local.config import Config

class SettingsMismatch(OrigError, ValueError):
    """A phase resumed (or rerun into the same file) with settings other than its rows'."""


# Leaf names that say where/how fast/on which device, never what a row contains.
OPERATIONAL = frozenset({
    "base_url", "api_key_env", "api_key", "timeout_s", "connect_timeout_s", "connect_retries", "backoff_s",
    "backoff_base_s", "backoff_max_s", "min_interval_s", "max_attempts", "cooldown_after", "cooldown_s",
    "concurrency", "per_host_concurrency", "per_host_interval_s", "parse_workers", "decode_memory_mb",
    "cache", "device", "batch_size", "offload", "vae_tiling", "vae_slicing", "attention_backend",
    "torch_compile", "proxy", "user_agent", "index_dir", "record", "trace_messages", "run_timeout_s",
})

# eval.* keys each judge phase reads (the judge model itself is the whole ``judge`` section).
JUDGE_EVAL_KEYS = {
    "judge": ("judge_answer_format", "judge_logprobs", "judge_reference_text", "choice_rule"),
    "retrieval": ("judge_answer_format", "judge_logprobs", "evidence_max_chars", "evidence_max_images"),
}


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            if k not in OPERATIONAL:
                _flatten(f"{prefix}.{k}" if prefix else k, v, out)
    else:
        out[prefix] = value


def _prompts_identity(prompts_dir: str | None) -> str | None:
    """The changed templates by content (a prompt ablation is a setting like any other)."""
    if not prompts_dir:
        return None
    folder = Path(prompts_dir)
    if not folder.is_dir():
        return f"{prompts_dir} (missing)"
    digest = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def phase_settings(config: Config, phase: str) -> dict[str, Any]:
    """The resolved settings ``phase`` reads, as ``{"agent.refinement": False, ...}``."""
    dumped = config.model_dump(mode="json")
    out: dict[str, Any] = {}
    needs = check_phase(phase).needs
    if needs == "backbone":
        spec = config.agent.spec
        out["agent.condition"] = config.agent.condition
        if spec.uses_backbone:
            _flatten("agent", dumped["agent"], out)
            _flatten("backbone", dumped["backbone"], out)
            out["prompts"] = _prompts_identity(config.prompts_dir)
        if spec.retrieves:
            _flatten("retrieval", dumped["retrieval"], out)
            _flatten("embed", dumped["embed"], out)
    elif needs == "generator":
        _flatten("generator", dumped["generator"], out)
        out["eval.seed"] = config.eval.seed
    else:
        _flatten("judge", dumped["judge"], out)
        for key in JUDGE_EVAL_KEYS[phase]:
            out[f"eval.{key}"] = dumped["eval"][key]
        if phase == "judge" and config.eval.benchmark == "wise":
            out["eval.wise_judge"] = dumped["eval"]["wise_judge"]
        out["prompts"] = _prompts_identity(config.prompts_dir)
    return out


def phase_key(phase: str, judge_name: str | None) -> str:
    """``agent``, ``generate``, ``judge`` / ``judge-<name>``, ``retrieval`` / ``retrieval-<name>``."""
    return f"{phase}-{judge_name}" if judge_name and check_phase(phase).needs == "judge" else phase


def diff(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """``key: old -> new`` for every setting both record and that differs. A key only one side
    has comes from another code version's config shape (a new field at its default), not from
    the user, so it does not refuse a resume."""
    def show(v: Any) -> str:
        return json.dumps(v, ensure_ascii=False)

    return [f"{k}: {show(old[k])} -> {show(new[k])}" for k in old if k in new and old[k] != new[k]]


def has_rows(run_dir: Path, key: str) -> bool:
    """Whether ``<key>.jsonl`` or one of its shard files holds anything (cheap: sizes only)."""
    from orig_local.evaluation.rundir import shard_files

    files = [Path(run_dir) / f"{key}.jsonl", *shard_files(Path(run_dir), key)]
    return any(f.is_file() and f.stat().st_size > 0 for f in files)


def check(run_dir: Path, recorded: dict[str, Any], config: Config, phases: list[str] | tuple[str, ...],
          judge_name: str | None) -> None:
    """Refuse (:class:`SettingsMismatch`) a phase whose rows were made with other settings."""
    for phase in phases:
        key = phase_key(phase, judge_name)
        old = (recorded or {}).get(key)
        if not isinstance(old, dict) or not has_rows(run_dir, key):
            continue
        changed = diff(old, phase_settings(config, phase))
        if not changed:
            continue
        shown = "; ".join(changed[:6]) + (f"; +{len(changed) - 6} more" if len(changed) > 6 else "")
        if check_phase(phase).needs == "judge":
            hint = ("another judge or judge protocol is another judge name: add --judge-name NAME to keep its "
                    "verdicts apart (orig report --judge-name NAME), or rerun with the settings shown first")
        else:
            hint = "rerun with the settings shown first, or pass another --out for the changed settings"
        raise SettingsMismatch(f"{run_dir}: the {key} phase has rows made with other settings ({shown})", hint=hint)


def record(run_dir: Path, meta: dict[str, Any], config: Config, phases: list[str] | tuple[str, ...],
           judge_name: str | None) -> dict[str, Any]:
    """``meta`` with each phase's settings recorded (kept when the phase already has rows: they
    were checked equal), and ``config.<phase>.yaml`` written for each."""
    from orig_local.config import save_config

    settings = dict(meta.get("settings") or {})
    for phase in phases:
        key = phase_key(phase, judge_name)
        if not isinstance(settings.get(key), dict) or not has_rows(run_dir, key):
            settings[key] = phase_settings(config, phase)
        save_config(config, Path(run_dir) / f"config.{key}.yaml")
    return {**meta, "settings": settings}
