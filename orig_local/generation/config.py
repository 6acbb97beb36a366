"""Config section for the image generator."""

from __future__ import annotations

from orig_local.configbase import StrictModel


class GeneratorConfig(StrictModel):
    preset: str | None = None  # models/<preset>.yaml; None -> no image is generated
    device: str = "auto"
