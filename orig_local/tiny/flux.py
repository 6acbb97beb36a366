"""Tiny random-weight FLUX pipelines (text-to-image and Kontext), saved in diffusers format.

Mirrors diffusers' own fast-test dummy components (1 double + 1 single block, 2 heads of 16,
a one-level VAE with one latent channel) but with local tokenizers, so nothing comes from the
hub. Both folders load back with ``DiffusionPipeline.from_pretrained`` (~0.6 MB each).
"""

from __future__ import annotations

from pathlib import Path


def tiny_flux_components(seed: int = 0) -> dict:
    import torch
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    from orig_local.tiny.diffusion_tokenizers import clip_tokenizer, t5_tokenizer

    tokenizer = clip_tokenizer()
    tokenizer_2 = t5_tokenizer()
    bos, eos = tokenizer.convert_tokens_to_ids(["<|startoftext|>", "<|endoftext|>"])

    torch.manual_seed(seed)
    transformer = FluxTransformer2DModel(
        patch_size=1, in_channels=4, num_layers=1, num_single_layers=1, attention_head_dim=16,
        num_attention_heads=2, joint_attention_dim=32, pooled_projection_dim=32, axes_dims_rope=[4, 4, 8],
    )
    torch.manual_seed(seed)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        bos_token_id=bos, eos_token_id=eos, pad_token_id=eos, hidden_size=32, intermediate_size=37,
        num_attention_heads=4, num_hidden_layers=2, vocab_size=len(tokenizer), projection_dim=32,
        max_position_embeddings=77,
    ))
    torch.manual_seed(seed)
    text_encoder_2 = T5EncoderModel(T5Config(
        vocab_size=len(tokenizer_2), d_model=32, d_ff=37, d_kv=8, num_heads=4, num_layers=2,
        relative_attention_num_buckets=8, dropout_rate=0.0,
    ))
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1,
        latent_channels=1, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
        shift_factor=0.0609, scaling_factor=1.5035,
    )
    # Fresh modules start in train mode (T5 dropout): eval() so a reload is bit-identical.
    return {
        "scheduler": FlowMatchEulerDiscreteScheduler(),
        "text_encoder": text_encoder.eval(), "text_encoder_2": text_encoder_2.eval(),
        "tokenizer": tokenizer, "tokenizer_2": tokenizer_2,
        "transformer": transformer.eval(), "vae": vae.eval(),
    }


def build_tiny_flux(out_dir: str | Path, seed: int = 0) -> Path:
    """FluxPipeline (FLUX.1-schnell/dev layout)."""
    from diffusers import FluxPipeline

    out = Path(out_dir)
    FluxPipeline(**tiny_flux_components(seed)).save_pretrained(out)
    return out
