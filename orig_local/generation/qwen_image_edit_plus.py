"""Qwen-Image-Edit-2509 (diffusers' QwenImageEditPlusPipeline): several reference images.

Every selected reference up to the model's limit goes into the call, in the agent's order
(the prompt can refer to them as "picture 1", "picture 2", ...). The 2509 model card recommends
1-3 input images; the preset's ``max_references`` sets the cap.
"""

from __future__ import annotations

from orig_local.generation.diffusers_base import DiffusersGenerator


class QwenImageEditPlusGenerator(DiffusersGenerator):
    pipeline_class = "QwenImageEditPlusPipeline"
    guidance_kwarg = "true_cfg_scale"
    default_negative_prompt = " "
    reference_kwarg = "image"
    requires_reference = True
    reference_as_list = True
    model_max_references = 3
