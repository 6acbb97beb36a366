"""Seconds per image for Qwen-Image and FLUX.1-schnell on a GPU without internet access.

    python scripts/gpu_check_generation.py                      # both models, 1024x1024, bf16
    python scripts/gpu_check_generation.py --model qwen-image --size 1328 --offload model
    python scripts/gpu_check_generation.py --tiny               # tiny pipelines (CPU, seconds)
    python scripts/gpu_check_generation.py --layers 1 --size 256 --device cpu   # wiring check

No weights are downloaded: the transformer and VAE are built with *random* weights from the
real models' configs (written below), which gives the real compute cost; the text encoders keep
their real width but have one layer (they run once per image, a few percent of the time). The
pipelines go through the project's own generator (seeding, size checks, offload, attention
backend, torch.compile), with each preset's call settings (Qwen-Image: true CFG = two
transformer passes per step; FLUX-schnell: guidance-distilled, one pass).

Timing: a warm-up call, then one call with 2 steps and one with ``--steps`` steps; the difference
gives seconds per denoising step and the rest the fixed cost (text encoding, VAE decode), from
which seconds per image at the preset's step count (Qwen-Image 50, FLUX-schnell 4) follow.
"""

from __future__ import annotations

import argparse
import time

# Qwen/Qwen-Image transformer/config.json and vae/config.json
QWEN_TRANSFORMER = dict(patch_size=2, in_channels=64, out_channels=16, num_layers=60, attention_head_dim=128,
                        num_attention_heads=24, joint_attention_dim=3584, guidance_embeds=False,
                        axes_dims_rope=(16, 56, 56))
QWEN_VAE = dict(base_dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                temperal_downsample=[False, True, True], dropout=0.0,
                latents_mean=[-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
                              0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921],
                latents_std=[2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                             3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916])
# Qwen2.5-VL-7B text side (width, heads, rope), cut to one layer
QWEN_TEXT = dict(hidden_size=3584, intermediate_size=1024, num_hidden_layers=1, num_attention_heads=28,
                 num_key_value_heads=4, rope_theta=1e6,
                 rope_scaling={"mrope_section": [16, 24, 24], "rope_type": "default", "type": "default"})

# black-forest-labs/FLUX.1-schnell transformer/config.json and vae/config.json
FLUX_TRANSFORMER = dict(patch_size=1, in_channels=64, num_layers=19, num_single_layers=38, attention_head_dim=128,
                        num_attention_heads=24, joint_attention_dim=4096, pooled_projection_dim=768,
                        guidance_embeds=False, axes_dims_rope=[16, 56, 56])
FLUX_VAE = dict(in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * 4,
                up_block_types=["UpDecoderBlock2D"] * 4, block_out_channels=[128, 256, 512, 512],
                layers_per_block=2, latent_channels=16, norm_num_groups=32, sample_size=1024,
                scaling_factor=0.3611, shift_factor=0.1159, use_quant_conv=False, use_post_quant_conv=False)

PRESETS = {"qwen-image": ("qwen-image", "tiny-qwen-image", "qwen_image"),
           "flux-schnell": ("flux.1-schnell", "tiny-flux", "flux")}


def build(fn, device: str, dtype):
    """Construct directly on the target device and in the target dtype: random init on a GPU is
    fast, and the 20B Qwen-Image transformer never exists in float32 (~80 GB)."""
    import torch

    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            module = fn()
    finally:
        torch.set_default_dtype(previous)
    return module.to(dtype).eval()


def qwen_pipeline(device, dtype, layers):
    from diffusers import (
        AutoencoderKLQwenImage,
        FlowMatchEulerDiscreteScheduler,
        QwenImagePipeline,
        QwenImageTransformer2DModel,
    )
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    from orig_local.tiny.diffusion_tokenizers import qwen2_tokenizer, qwen_token_ids

    tok = qwen2_tokenizer()
    cfg = dict(QWEN_TRANSFORMER, **({"num_layers": layers} if layers else {}))
    text_cfg = Qwen2_5_VLConfig(
        text_config=dict(QWEN_TEXT, vocab_size=len(tok)), vision_config={"depth": 1, "hidden_size": 64,
        "intermediate_size": 64, "num_heads": 1, "out_hidden_size": 3584}, vocab_size=len(tok), **qwen_token_ids(tok))
    # the scheduler config of the real checkpoint (dynamic shifting, exponential time shift)
    scheduler = FlowMatchEulerDiscreteScheduler(
        base_image_seq_len=256, base_shift=0.5, max_image_seq_len=8192, max_shift=0.9, shift=1.0,
        shift_terminal=0.02, time_shift_type="exponential", use_dynamic_shifting=True)
    return QwenImagePipeline(
        transformer=build(lambda: QwenImageTransformer2DModel(**cfg), device, dtype),
        vae=build(lambda: AutoencoderKLQwenImage(**QWEN_VAE), device, dtype),
        text_encoder=build(lambda: Qwen2_5_VLForConditionalGeneration(text_cfg), device, dtype),
        tokenizer=tok, scheduler=scheduler)


def flux_pipeline(device, dtype, layers):
    from diffusers import AutoencoderKL, FlowMatchEulerDiscreteScheduler, FluxPipeline, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    from orig_local.tiny.diffusion_tokenizers import clip_tokenizer, t5_tokenizer

    tok, tok2 = clip_tokenizer(), t5_tokenizer()
    cfg = dict(FLUX_TRANSFORMER, **({"num_layers": layers, "num_single_layers": 2 * layers} if layers else {}))
    eos = tok.convert_tokens_to_ids("<|endoftext|>")
    clip_cfg = CLIPTextConfig(hidden_size=768, intermediate_size=512, num_hidden_layers=1, num_attention_heads=12,
                              vocab_size=len(tok), max_position_embeddings=77, eos_token_id=eos, pad_token_id=eos,
                              bos_token_id=tok.convert_tokens_to_ids("<|startoftext|>"))
    t5_cfg = T5Config(vocab_size=len(tok2), d_model=4096, d_ff=1024, d_kv=64, num_heads=64, num_layers=1,
                      dropout_rate=0.0)
    return FluxPipeline(
        transformer=build(lambda: FluxTransformer2DModel(**cfg), device, dtype),
        vae=build(lambda: AutoencoderKL(**FLUX_VAE), device, dtype),
        text_encoder=build(lambda: CLIPTextModel(clip_cfg), device, dtype),
        text_encoder_2=build(lambda: T5EncoderModel(t5_cfg), device, dtype),
        tokenizer=tok, tokenizer_2=tok2,
        scheduler=FlowMatchEulerDiscreteScheduler(shift=1.0, use_dynamic_shifting=False))


def check(model: str, args) -> dict:
    import torch

    from orig_local.generation import GenerationRequest, GeneratorConfig, make_generator
    from orig_local.presets import load_preset

    real, tiny, tiny_dir = PRESETS[model]
    dtype_name = args.dtype or ("float32" if args.device.startswith("cpu") or args.tiny else "bfloat16")
    config = GeneratorConfig(preset=tiny if args.tiny else real, device=args.device, dtype=dtype_name,
                             offload=args.offload, attention_backend=args.attention, torch_compile=args.compile)
    gen = make_generator(config)
    if args.tiny:
        from orig_local.paths import tiny_models_dir
        from orig_local.tiny.build import build_one

        build_one(tiny_dir, tiny_models_dir())
        gen.load()
    else:
        start = time.perf_counter()
        # offload wants the pipeline on the CPU first; otherwise build straight on the GPU
        where = "cpu" if args.offload != "none" else gen.device
        builder = qwen_pipeline if model == "qwen-image" else flux_pipeline
        gen.attach(builder(where, getattr(torch, dtype_name), args.layers))
        print(f"[{model}] built random-weight pipeline in {time.perf_counter() - start:.0f} s", flush=True)
    cuda = torch.cuda.is_available() and not gen.device.startswith("cpu")
    size = args.size or (64 if args.tiny else 1024)
    request = dict(prompt="a lighthouse on a basalt cliff at dusk", width=size, height=size, seed=0)
    # 2 steps, not 1: a one-step schedule is degenerate for Qwen-Image's terminal-shifted sigmas
    gen.generate(GenerationRequest(**request, steps=2))  # warm-up (and compilation)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    short = gen.generate(GenerationRequest(**request, steps=2)).seconds
    long = gen.generate(GenerationRequest(**request, steps=args.steps)).seconds
    per_step = (long - short) / (args.steps - 2)
    fixed = max(0.0, short - 2 * per_step)
    preset_steps = load_preset(real).defaults["steps"]
    row = {"model": model, "size": size, "layers": "tiny" if args.tiny else args.layers or "full", "s_per_step": per_step,
           "fixed_s": fixed, "preset_steps": preset_steps, "s_per_image": fixed + preset_steps * per_step,
           "peak_gb": torch.cuda.max_memory_allocated() / 2**30 if cuda else None}
    gen.unload()
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=[*PRESETS, "all"], default="all")
    parser.add_argument("--size", type=int, help="square image side (default 1024; 64 with --tiny)")
    parser.add_argument("--steps", type=int, default=6, help="steps of the long timed call (>= 3)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", help="default bfloat16 on GPU, float32 on CPU")
    parser.add_argument("--offload", choices=["none", "model", "sequential"], default="none")
    parser.add_argument("--attention", help="diffusers attention backend, e.g. flash, _flash_3, sage")
    parser.add_argument("--compile", action="store_true", help="torch.compile the repeated blocks")
    parser.add_argument("--layers", type=int, help="cut the transformer to this many blocks (wiring checks)")
    parser.add_argument("--tiny", action="store_true", help="the tiny pipelines instead (no GPU needed)")
    args = parser.parse_args(argv)
    if args.steps < 3:
        parser.error("--steps must be at least 3")
    from orig_local.generation.diffusers_base import pick_device

    args.device = pick_device(args.device)
    models = list(PRESETS) if args.model == "all" else [args.model]
    rows = [check(m, args) for m in models]
    label = "tiny pipelines" if args.tiny else "random weights, real configs"
    print(f"\n## Generation speed ({label}, device {args.device})\n")
    print("| model | size | transformer blocks | s/step | fixed s | steps (preset) | s/image | peak GB |")
    print("|---|---:|---|---:|---:|---:|---:|---:|")
    for r in rows:
        peak = f"{r['peak_gb']:.1f}" if r["peak_gb"] is not None else "-"
        print(f"| {r['model']} | {r['size']}² | {r['layers']} | {r['s_per_step']:.3f} | {r['fixed_s']:.2f} | "
              f"{r['preset_steps']} | {r['s_per_image']:.2f} | {peak} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
