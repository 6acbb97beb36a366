"""Check what a phase needs before it starts, so a run that cannot work fails in seconds, with
one line naming the fix, and writes nothing.

* a served backbone/judge (``backend: openai``) answers ``GET <base_url>/models`` and serves the
  configured model name;
* a generator preset is set (and exists) when a phase generates;
* the run folder is not held by another process.

The server's description of the model (``/v1/models`` entry) is returned for provenance.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from orig_local.errors import PreflightError

log = logging.getLogger(__name__)


def _serve_hint(role: str, chat) -> str:
    preset = chat.preset or "<preset>"
    return (f"start it with `orig serve --preset {preset}`, or point -s {role}.base_url=... at a running "
            "server")


def served_models(base_url: str, api_key: str | None = None, timeout_s: float = 10.0) -> list[dict[str, Any]]:
    """The ``data`` list of ``GET <base_url>/models`` (raises httpx errors)."""
    import httpx

    from orig_local.llm.openai_backend import _is_local

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    response = httpx.get(base_url.rstrip("/") + "/models", headers=headers,
                         timeout=httpx.Timeout(timeout_s, connect=min(5.0, timeout_s)),
                         trust_env=not _is_local(base_url))
    response.raise_for_status()
    data = response.json().get("data")
    if not isinstance(data, list):
        raise ValueError(f"no model list in the reply: {response.text[:200]!r}")
    return [m for m in data if isinstance(m, dict)]


def check_chat_server(role: str, chat) -> dict[str, Any] | None:
    """For a served chat model (``backend: openai``): the server answers and serves ``chat.model``
    (after preset resolution). Returns the server's entry for the model; None for in-process
    backends (nothing to check before loading)."""
    from orig_local.presets import resolve_chat_preset

    chat = resolve_chat_preset(chat)  # an unknown preset: ConfigError listing the known ones
    if chat.backend != "openai":
        return None
    import httpx

    url = chat.base_url.rstrip("/")
    try:
        models = served_models(url, chat.resolved_api_key(), timeout_s=min(10.0, chat.timeout_s))
    except httpx.HTTPStatusError as exc:
        code = exc.response.status_code
        if code in (404, 405, 501):  # up, but cannot list its models: the model name stays unchecked
            log.warning("the %s server at %s does not list its models (HTTP %d); %r not checked", role, url,
                        code, chat.model)
            return {"id": chat.model, "listed": False}
        hint = (f"check the key the server expects (export {chat.api_key_env}=... or set {role}.api_key_env)"
                if code in (401, 403)
                else _serve_hint(role, chat))
        raise PreflightError(f"the {role} server at {url} answered HTTP {code} to GET /models", hint=hint) from None
    except (httpx.HTTPError, ValueError) as exc:
        raise PreflightError(f"the {role} server at {url} does not answer ({type(exc).__name__}: "
                             f"{str(exc)[:120]})", hint=_serve_hint(role, chat)) from None
    names = [str(m.get("id")) for m in models]
    for m in models:
        if m.get("id") == chat.model:
            return m
    served = ", ".join(repr(n) for n in names) or "no model"
    hint = (f"set -s {role}.model={names[0]} to use it, or serve {chat.model!r} "
            f"(orig serve --preset {chat.preset or '<preset>'})" if names else _serve_hint(role, chat))
    raise PreflightError(f"the {role} server at {url} serves {served}, not the configured {role}.model "
                         f"{chat.model!r}", hint=hint)


def check_generator(config) -> None:
    if not (config.generator.preset or config.generator.model):
        raise PreflightError("the generate phase needs a generator",
                             hint="pass --generator <preset or hub id>, e.g. --generator qwen-image "
                                  "(`orig models` lists them) or --generator Qwen/Qwen-Image")
    from orig_local.presets import generator_preset

    # a preset name (ConfigError listing the known ones), or a hub id / folder whose pipeline
    # is known from its family, resolved exactly as make_generator will resolve it
    generator_preset(config.generator)


def preflight(config, phases: Sequence[str], *, run_dir=None, shard=None,
              have: dict[str, bool] | None = None) -> dict[str, dict | None]:
    """Check every phase in ``phases``; ``have``: roles whose component the caller passed in
    ready-made (not checked). Returns role -> the server's model entry (served models only)."""
    from orig_local.evaluation.phases import check_phase
    from orig_local.evaluation.rundir import check_not_held

    have = have or {}
    served: dict[str, dict | None] = {}
    for name in phases:
        role = check_phase(name).needs
        if have.get(role) or role in served:
            continue
        if role == "backbone":
            if config.agent.spec.uses_backbone:
                served[role] = check_chat_server("backbone", config.backbone)
        elif role == "generator":
            check_generator(config)
            served[role] = None
        elif role == "judge":
            served[role] = check_chat_server("judge", config.judge)
    if run_dir is not None:
        check_not_held(run_dir, shard)
    return served
