"""What produced each run (run.json's provenance, read defensively: "unknown" where missing)
and the stand-in banner at the top of report.md."""

from __future__ import annotations

from collections.abc import Sequence

from orig_local.evaluation.results import RunResults
from orig_local.labels import SIMULATED, TINY

# Provenance fields every report prints (missing ones as "unknown"): (title, candidate keys).
PROVENANCE_FIELDS = [
    ("orig_local", ("code.orig_local", "orig_local_version", "orig_local", "version")),
    ("git commit", ("code.git_commit", "git_commit", "commit", "git.commit")),
    ("git dirty", ("code.git_dirty", "git_dirty", "dirty", "git.dirty")),
    ("python", ("libraries.python", "python", "python_version")),
    ("libraries", ("libraries", "packages", "versions")),
    ("host", ("host.host", "host", "hostname")),
    ("GPU", ("host.gpus", "gpus", "gpu", "accelerator")),
    ("started", ("started_at", "started", "timestamps.started")),
    ("finished", ("ended_at", "finished_at", "finished", "ended", "timestamps.finished")),
    ("config hash", ("config_sha256", "config_hash")),
]


def _lookup(data: dict, key: str):
    node = data
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _fmt(value) -> str:
    if value is None or value == "" or value == {} or value == []:
        return "unknown"
    if isinstance(value, dict):
        return ", ".join(f"{k} {_fmt(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(_fmt(v) for v in value)
    return str(value)


def provenance_block(run: RunResults) -> str:
    """What produced a run, from run.json's ``provenance`` (read defensively: whatever is
    missing shows as "unknown")."""
    prov = run.provenance
    lines = [f"**{run.label}** ({run.dir})", ""]
    for title, keys in PROVENANCE_FIELDS:
        value = next((v for v in (_lookup(prov, k) for k in keys) if v not in (None, "")), None)
        lines.append(f"- {title}: {_fmt(value)}")
    models = found if isinstance(found := prov.get("models"), dict) else {}
    for role in ("backbone", "generator", "judge", "embedder"):
        m = models.get(role)
        preset_name = run.meta.get(role) if role != "embedder" else None
        if isinstance(m, dict):
            served = m.get("served_name") or m.get("served_model_name") or (
                m.get("model") if m.get("backend") == "openai" else None)
            fields = [("preset", m.get("preset") or preset_name), ("hub id", m.get("hub_id") or m.get("hf_id")),
                      ("revision", m.get("revision")), ("served as", served)]
            if m.get("backend"):
                fields.insert(0, ("backend", m["backend"]))
            if m.get("precision"):
                fields.append(("precision", m["precision"]))
            lines.append(f"- {role}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in fields))
        elif preset_name:
            lines.append(f"- {role}: preset {preset_name}, hub id unknown, revision unknown")
    lines.append(f"- judged by: {', '.join(run.judges) or 'unknown'}")
    if not prov:
        lines.append("- (run.json records no provenance: a run written before provenance was recorded)")
    return "\n".join(lines) + "\n"


def labels_banner(runs: Sequence[RunResults]) -> str:
    """Stand-in labels, unmissable at the top of report.md."""
    out = []
    for label in (SIMULATED, TINY):
        which = [r.label for r in runs if label in r.labels]
        if which:
            out.append(f"> **{label.upper() if label == SIMULATED else label.capitalize()}** "
                       f"(runs: {', '.join(f'`{w}`' for w in which)})\n")
    return "\n".join(out)
