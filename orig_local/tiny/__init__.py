"""Builders of tiny random-weight models, made offline from configs with fixed seeds.

They exercise the exact loading code used for real models (``from_pretrained``, open_clip
``local-dir:``), so tests and ``make demo`` run the product path without a hub. One builder
per file; ``scripts/make_tiny_models.py`` runs them all into :func:`orig_local.paths.tiny_models_dir`.
"""

BUILDERS = {
    "clip": "orig_local.tiny.clip:build_tiny_clip",
    "qwen2_5_vl": "orig_local.tiny.qwen_vl:build_tiny_qwen2_5_vl",
    "judge": "orig_local.tiny.judge:build_tiny_judge",
    "flux": "orig_local.tiny.flux:build_tiny_flux",
    "flux_kontext": "orig_local.tiny.flux_kontext:build_tiny_flux_kontext",
    "qwen_image": "orig_local.tiny.qwen_image:build_tiny_qwen_image",
    "qwen_image_edit": "orig_local.tiny.qwen_image_edit:build_tiny_qwen_image_edit",
    "qwen_image_edit_plus": "orig_local.tiny.qwen_image_edit_plus:build_tiny_qwen_image_edit_plus",
    "sd3": "orig_local.tiny.sd3:build_tiny_sd3",
}
