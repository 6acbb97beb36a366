"""What produced a run: code version and commit, library versions, host and GPUs, models.

:func:`provenance` returns a JSON-able dict that ``orig eval`` stores in ``run.json`` (and that
reports print). Nothing heavy is imported: library versions come from package metadata,
GPU names from ``nvidia-smi`` when it exists.
"""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

# distribution names whose versions change results
LIBRARIES = ("torch", "transformers", "diffusers", "vllm", "open_clip_torch", "accelerate", "pydantic", "httpx")


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def library_versions() -> dict[str, str | None]:
    """Python and the libraries in :data:`LIBRARIES` (None: not installed)."""
    return {"python": platform.python_version(), **{name: _dist_version(name) for name in LIBRARIES}}


def _git(root: Path, *args: str) -> str | None:
    if not shutil.which("git"):
        return None
    try:
        out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def package_version() -> str:
    """The version of the orig_local code that runs (``orig --version``): the package's own
    ``__version__`` (pyproject reads it from there, so an installed wheel's metadata agrees)."""
    import orig_local

    return str(orig_local.__version__)


def code_version() -> dict[str, Any]:
    """orig_local's version (the code's, and the installed distribution's from its metadata), and
    the git commit + dirty flag when run from a checkout. An installed wheel has no git commit:
    ``source`` says so, and its version identifies the code."""
    import orig_local

    root = Path(orig_local.__file__).resolve().parent.parent
    info: dict[str, Any] = {"orig_local": package_version(), "distribution": _dist_version("orig-local"),
                            "path": str(root), "source": "installed package (no git checkout)",
                            "git_commit": None, "git_dirty": None}
    if (root / ".git").exists():
        info["source"] = "git checkout"
        info["git_commit"] = _git(root, "rev-parse", "HEAD")
        status = _git(root, "status", "--porcelain", "--untracked-files=no")
        info["git_dirty"] = None if status is None else bool(status)
        if info["git_commit"] is None:
            info["source"] = "git checkout (git unavailable: commit unknown)"
    return info


def host_info() -> dict[str, Any]:
    """Host name, OS, CPU count and GPU names (``nvidia-smi``; empty list without one)."""
    import os

    gpus: list[str] = []
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                                  "--format=csv,noheader"], capture_output=True, text=True, timeout=10)
            if out.returncode == 0:
                gpus = [ln.strip() for ln in out.stdout.splitlines() if ln.strip()]
        except (OSError, subprocess.SubprocessError):
            pass
    return {"host": socket.gethostname(), "platform": platform.platform(), "cpus": os.cpu_count(),
            "gpus": gpus, "argv": _redacted(sys.argv)}


def _redacted(argv: list[str]) -> list[str]:
    """The command line without secrets (``-s backbone.api_key=...``)."""
    out = []
    for arg in argv:
        key, sep, _ = arg.partition("=")
        out.append(f"{key}=<redacted>" if sep and any(w in key.lower() for w in ("key", "token", "secret"))
                   else arg)
    return out


def config_hash(config: Any) -> str:
    """sha256 of the resolved config (secrets left out, so equal configs hash equal)."""
    data = config.model_dump(mode="json") if hasattr(config, "model_dump") else dict(config)
    for section in ("backbone", "judge"):
        if isinstance(data.get(section), dict):
            data[section].pop("api_key", None)
    return hashlib.sha256(json.dumps(data, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def _preset_info(name: str | None) -> dict[str, Any]:
    if not name:
        return {"preset": None, "hub_id": None, "revision": None}
    try:
        from orig_local.presets import load_preset

        preset = load_preset(name)
    except Exception as exc:  # an unknown preset is reported by the phase that uses it
        return {"preset": name, "hub_id": None, "revision": None, "preset_error": str(exc)[:200]}
    return {"preset": name, "hub_id": preset.hf_id, "revision": getattr(preset, "revision", None),
            "tiny_random_weights": preset.is_tiny}


def _generator_info(gen: Any) -> dict[str, Any]:
    """Preset, hub id and revision of the generator, whatever named it (a preset, a hub id as
    preset, ``generator.model``)."""
    if not (gen.preset or gen.model):
        return _preset_info(None)
    try:
        from orig_local.presets import generator_preset

        preset = generator_preset(gen)
    except Exception as exc:  # an unknown generator is reported by the phase that uses it
        return {"preset": gen.preset, "hub_id": gen.model, "revision": None, "preset_error": str(exc)[:200]}
    return {"preset": gen.preset if gen.preset and "/" not in gen.preset else None, "hub_id": preset.hf_id,
            "revision": getattr(preset, "revision", None), "tiny_random_weights": preset.is_tiny}


def chat_model_info(chat: Any, served: dict | None = None) -> dict[str, Any]:
    """A chat section (backbone/judge): backend, preset, hub id, revision, served name and the
    server's own description of it (``GET /v1/models``), when served."""
    info = {"backend": chat.backend, **_preset_info(chat.preset), "model": chat.model}
    if chat.backend == "openai":
        info["base_url"] = chat.base_url
        info["server"] = served
    return info


def model_info(config: Any, uses: dict[str, bool], served: dict[str, dict | None] | None = None) -> dict[str, Any]:
    """Per model this run uses (``uses``: role -> used): preset, hub id, revision, served info."""
    served = served or {}
    out: dict[str, Any] = {}
    if uses.get("backbone"):
        out["backbone"] = chat_model_info(config.backbone, served.get("backbone"))
    if uses.get("generator"):
        out["generator"] = _generator_info(config.generator)
    if uses.get("judge"):
        out["judge"] = chat_model_info(config.judge, served.get("judge"))
    if uses.get("embedder"):
        out["embedder"] = {**_preset_info(getattr(config.embed, "preset", None)),
                           "precision": _embed_precision(config.embed)}
    return out


def _embed_precision(embed: Any) -> str:
    """The CLIP precision the run uses (``auto`` resolved on this host: imports torch)."""
    try:
        from orig_local.embeddings.clip import resolve_precision

        return resolve_precision(embed.precision, embed.device)
    except ImportError:
        return f"{embed.precision} (unresolved: torch not installed)"


def provenance(config: Any = None, uses: dict[str, bool] | None = None,
               served: dict[str, dict | None] | None = None) -> dict[str, Any]:
    """Everything above in one dict (``models`` only with a config)."""
    out: dict[str, Any] = {"code": code_version(), "libraries": library_versions(), "host": host_info()}
    if config is not None:
        out["config_sha256"] = config_hash(config)
        out["models"] = model_info(config, uses or {}, served)
    return out


def summary_lines(prov: dict[str, Any]) -> list[str]:
    """A short, human-readable provenance block (for reports) from ``run.json["provenance"]``."""
    if not prov:
        return ["provenance: not recorded (run made before provenance was kept)"]
    code, libs, host = prov.get("code") or {}, prov.get("libraries") or {}, prov.get("host") or {}
    commit = code.get("git_commit")
    lines = [f"orig_local {code.get('orig_local')}"
             + (f", commit {commit[:12]}{' (dirty)' if code.get('git_dirty') else ''}" if commit
                else f" ({code['source']})" if code.get('source') else ""),
             "libraries: " + ", ".join(f"{k} {v}" for k, v in libs.items() if v),
             f"host: {host.get('host')}; GPUs: {', '.join(host.get('gpus') or []) or 'none'}",
             f"run: {prov.get('started_at')} → {prov.get('ended_at')}; "
             f"config sha256 {str(prov.get('config_sha256'))[:12]}"]
    for role, m in (prov.get("models") or {}).items():
        text = f"{role}: {m.get('preset') or m.get('model')}"
        if m.get("hub_id"):
            text += f" ({m['hub_id']}" + (f" @ {m['revision']}" if m.get("revision") else ", revision not pinned") + ")"
        if m.get("tiny_random_weights"):
            text += " — tiny random weights"
        if m.get("precision"):
            text += f", {m['precision']}"
        if m.get("backend") and m.get("backend") != "openai":
            text += f" [{m['backend']}]"
        server = m.get("server")
        if server:
            text += f"; served as {server.get('id')!r} at {m.get('base_url')}"
        lines.append(text)
    return lines
