"""Tiny random-weight Qwen-Image pipelines: text-to-image, Edit (1 image), Edit-2509 (several).

Components follow diffusers' fast tests (2-layer MMDiT, 3 heads of 16; a Qwen2.5-VL text encoder
of width 16 with mrope [1, 1, 2]) with a local byte-level Qwen2Tokenizer. The VAE is narrower
than the tests' but keeps the real model's 8x downsampling (4 levels), so a reference image the
edit pipelines resize to ~1 MP becomes 64x64 patches rather than 128x128: that keeps an edit
call at seconds on a CPU.
"""

from __future__ import annotations

from pathlib import Path


def tiny_qwen_image_components(seed: int = 0, with_processor: bool = False) -> dict:
    import torch
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from orig_local.tiny.diffusion_tokenizers import qwen2_tokenizer, qwen_token_ids

    tokenizer = qwen2_tokenizer()
    ids = qwen_token_ids(tokenizer)
    torch.manual_seed(seed)
    transformer = QwenImageTransformer2DModel(
        patch_size=2, in_channels=16, out_channels=4, num_layers=2, attention_head_dim=16,
        num_attention_heads=3, joint_attention_dim=16, guidance_embeds=False, axes_dims_rope=(8, 4, 4),
    )
    torch.manual_seed(seed)
    vae = AutoencoderKLQwenImage(
        base_dim=4, z_dim=4, dim_mult=[1, 2, 4, 4], num_res_blocks=1,
        temperal_downsample=[False, True, True], latents_mean=[0.0] * 4, latents_std=[1.0] * 4,
    )
    torch.manual_seed(seed)
    config = Qwen2_5_VLConfig(
        text_config={
            "hidden_size": 16, "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
            "num_key_value_heads": 2, "vocab_size": len(tokenizer), "rope_theta": 1e6,
            "rope_scaling": {"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
            "bos_token_id": tokenizer.convert_tokens_to_ids("<|endoftext|>"),
            "eos_token_id": tokenizer.convert_tokens_to_ids("<|im_end|>"),
        },
        vision_config={"depth": 2, "hidden_size": 16, "intermediate_size": 16, "num_heads": 2, "out_hidden_size": 16},
        hidden_size=16, vocab_size=len(tokenizer), **ids,
    )
    text_encoder = Qwen2_5_VLForConditionalGeneration(config)
    components = {
        "transformer": transformer.eval(), "vae": vae.eval(), "scheduler": FlowMatchEulerDiscreteScheduler(),
        "text_encoder": text_encoder.eval(), "tokenizer": tokenizer,
    }
    if with_processor:
        from transformers import Qwen2VLImageProcessor, Qwen2VLProcessor, Qwen2VLVideoProcessor

        components["processor"] = Qwen2VLProcessor(
            image_processor=Qwen2VLImageProcessor(), tokenizer=tokenizer, video_processor=Qwen2VLVideoProcessor()
        )
    return components


def build_tiny_qwen_image(out_dir: str | Path, seed: int = 0) -> Path:
    from diffusers import QwenImagePipeline

    out = Path(out_dir)
    QwenImagePipeline(**tiny_qwen_image_components(seed)).save_pretrained(out)
    return out
