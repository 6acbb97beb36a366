"""Tiny random-weight StableDiffusion3Pipeline (SD 3 / 3.5 layout), after diffusers' fast tests."""

from __future__ import annotations

from pathlib import Path


def build_tiny_sd3(out_dir: str | Path, seed: int = 0) -> Path:
    import torch
    from diffusers import (
        AutoencoderKL,
        FlowMatchEulerDiscreteScheduler,
        SD3Transformer2DModel,
        StableDiffusion3Pipeline,
    )
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel

    from orig_local.tiny.diffusion_tokenizers import clip_tokenizer, t5_tokenizer

    tokenizer = clip_tokenizer()
    tokenizer_3 = t5_tokenizer()
    bos, eos = tokenizer.convert_tokens_to_ids(["<|startoftext|>", "<|endoftext|>"])
    clip_config = CLIPTextConfig(
        bos_token_id=bos, eos_token_id=eos, pad_token_id=eos, hidden_size=32, intermediate_size=37,
        num_attention_heads=4, num_hidden_layers=2, vocab_size=len(tokenizer), projection_dim=32,
        max_position_embeddings=77,
    )
    torch.manual_seed(seed)
    transformer = SD3Transformer2DModel(
        sample_size=32, patch_size=1, in_channels=4, num_layers=1, attention_head_dim=8, num_attention_heads=4,
        caption_projection_dim=32, joint_attention_dim=32, pooled_projection_dim=64, out_channels=4,
    )
    torch.manual_seed(seed)
    text_encoder = CLIPTextModelWithProjection(clip_config)
    torch.manual_seed(seed + 1)
    text_encoder_2 = CLIPTextModelWithProjection(clip_config)
    torch.manual_seed(seed)
    text_encoder_3 = T5EncoderModel(T5Config(
        vocab_size=len(tokenizer_3), d_model=32, d_ff=37, d_kv=8, num_heads=4, num_layers=2,
        relative_attention_num_buckets=8, dropout_rate=0.0,
    ))
    torch.manual_seed(seed)
    vae = AutoencoderKL(
        sample_size=32, in_channels=3, out_channels=3, block_out_channels=(4,), layers_per_block=1,
        latent_channels=4, norm_num_groups=1, use_quant_conv=False, use_post_quant_conv=False,
        shift_factor=0.0609, scaling_factor=1.5035,
    )
    pipe = StableDiffusion3Pipeline(
        scheduler=FlowMatchEulerDiscreteScheduler(), transformer=transformer.eval(), vae=vae.eval(),
        text_encoder=text_encoder.eval(), text_encoder_2=text_encoder_2.eval(), text_encoder_3=text_encoder_3.eval(),
        tokenizer=tokenizer, tokenizer_2=clip_tokenizer(), tokenizer_3=tokenizer_3,
    )
    out = Path(out_dir)
    pipe.save_pretrained(out)
    return out

