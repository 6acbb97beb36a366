"""The output folder of one run: what ``orig generate`` and :func:`run_agent` write.

    <out>/image.png          the generated image (when a generator is configured)
    <out>/prompt.txt         P̂, exactly what the generator received
    <out>/references/NN_<id>.png   the reference images, in the order P̂ cites them
    <out>/trace.json         result, knowledge base (with provenance), trace records + totals
    <out>/config.yaml        the resolved config
    <out>/trace.html         a self-contained report (stages, evidence, thumbnails, prompt, image)
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

TEMPLATES = Path(__file__).parent / "templates"


def write_outputs(result, out_dir: str | Path, config: Any = None) -> Path:
    """Write ``result`` (an :class:`~orig_local.agent.agent.AgentResult`) into ``out_dir``."""
    out = Path(out_dir)
    (out / "references").mkdir(parents=True, exist_ok=True)
    (out / "prompt.txt").write_text(result.final_prompt + "\n", encoding="utf-8")
    ref_files = []
    for n, ref in enumerate(result.references, 1):
        name = f"references/{n:02d}_{ref.id}.png"
        if ref.image is not None:
            ref.image.save(out / name)
        ref_files.append(name)
    if result.image is not None:
        result.image.save(out / "image.png")
    data = result.to_json()
    data["files"] = {"references": ref_files, "image": "image.png" if result.image is not None else None}
    (out / "trace.json").write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    if config is not None:
        if hasattr(config, "backbone"):  # the root Config
            from orig_local.config import save_config

            save_config(config, out / "config.yaml")
        else:
            import yaml

            (out / "config.yaml").write_text(yaml.safe_dump({"agent": config.model_dump(mode="json")}, sort_keys=False))
    (out / "trace.html").write_text(render_html(result, data), encoding="utf-8")
    return out


def thumbnail(image, size: int = 256) -> str:
    """A data: URI of a JPEG thumbnail (keeps trace.html small and self-contained)."""
    im = image.convert("RGB").copy()
    im.thumbnail((size, size))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def safe_url(url: str | None) -> str:
    """Only web and corpus links become clickable: a URL from the web is untrusted input (a
    ``javascript:`` link in a trace would run when clicked)."""
    if url and url.split(":", 1)[0].lower() in ("http", "https", "corpus"):
        return url
    return "#"


def render_html(result, data: dict | None = None) -> str:
    from orig_local.templates import environment

    data = data or result.to_json()
    env = environment(TEMPLATES, autoescape=True)
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=1, ensure_ascii=False)
    env.filters["safe_url"] = safe_url
    thumbs = {v.id: thumbnail(v.image) for v in result.knowledge.images if v.image is not None}
    image_uri = thumbnail(result.image, 768) if result.image is not None else None
    return env.get_template("trace.html.jinja").render(
        r=data, thumbs=thumbs, image_uri=image_uri, records=data["trace"]["records"],
        totals=data["trace"]["totals"], total=data["trace"]["total"],
    )
