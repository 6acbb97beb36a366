"""What scripts/demo.py and scripts/demo_eval.py share: keeping the tiny models' noise out of
the demo's story. Scoped to the demo process (and the servers it starts); the library never
silences anything globally."""

from __future__ import annotations

import logging
import os
import re
import warnings


def quiet_model_libraries() -> None:
    """Silence what transformers/diffusers/huggingface_hub/torch say about tiny random-weight
    models (generation-config advice, unused-weight notices, progress bars, deprecation
    warnings): it is about the stand-in models, not about the run, and it buries the story.
    Call before those libraries are imported; environment variables reach the local server
    (its log file keeps whatever it still prints)."""
    for name, value in (("TRANSFORMERS_VERBOSITY", "error"), ("DIFFUSERS_VERBOSITY", "error"),
                        ("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1"), ("HF_HUB_DISABLE_PROGRESS_BARS", "1"),
                        ("HF_HUB_VERBOSITY", "error"), ("TOKENIZERS_PARALLELISM", "false")):
        os.environ.setdefault(name, value)
    for module in ("transformers", "diffusers", "huggingface_hub", "torch", "accelerate", "open_clip", "timm"):
        warnings.filterwarnings("ignore", module=rf"{module}(\..*)?$")
        logging.getLogger(module).setLevel(logging.ERROR)


def first_sentence(error: str, limit: int = 110) -> str:
    """An error's first sentence, cut to one short line (the trace keeps the whole text)."""
    head = re.sub(r"\s*\([^()]*\)", "", error.split("; ", 1)[0].split("\n", 1)[0]).strip()  # asides
    return head if len(head) <= limit else head[: limit - 1].rstrip() + "…"


def ensure_tiny_models() -> None:
    """Build the tiny models that are missing (idempotent), saying so first: the first build
    takes minutes on CPU and would otherwise look like a hang."""
    from orig_local.paths import tiny_models_dir
    from orig_local.tiny import BUILDERS
    from orig_local.tiny.build import MARKER, build_all

    root = tiny_models_dir()
    missing = [name for name in BUILDERS if not (root / name / MARKER).is_file()]
    if missing:
        print(f"building {len(missing)} tiny random-weight model(s) into {root} (once; minutes on CPU)",
              flush=True)
    build_all(root)
