"""Tiny random-weight Qwen2.5-VL: checkpoint + full processor, built offline.

The architecture is the real ``Qwen2_5_VLForConditionalGeneration`` at toy sizes, the chat
template is Qwen2.5-VL-Instruct's own, and the tokenizer is a byte-level ``Qwen2Tokenizer``
(256 byte symbols, no merges) with Qwen's special tokens. So the product path —
``AutoProcessor`` / ``AutoModelForImageTextToText`` / ``apply_chat_template`` / ``generate``,
or ``transformers serve`` / vLLM — runs exactly as on the real model, in well under a second.
Its replies are noise; :mod:`orig_local.tiny.judge` fine-tunes a copy into a usable judge.
"""

from __future__ import annotations

from pathlib import Path

# Bump when the built model changes: caches built by an older version are rebuilt.
TINY_VERSION = 2

# Qwen2.5-VL-Instruct's chat template (chat_template.json of Qwen/Qwen2.5-VL-7B-Instruct):
# a default system turn, <|vision_start|><|image_pad|><|vision_end|> per image, ChatML turns.
QWEN2_5_VL_CHAT_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

# Qwen2.5's special tokens, in the real model's order (ids 151643.. there; 256.. here).
SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>",
    "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>",
    "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]

# Like Qwen's real BPE, the judge's answer words are single tokens, so a one-word verdict fits in
# two generated tokens and its first token's logprob is P(word). Everything else is bytes.
WORD_TOKENS = ["true", "false", "True", "False"]

VOCAB_SIZE = 320  # 256 bytes + 14 specials, padded (embedding rows beyond are never produced)

# head_dim 64 (hidden 128 / 2 heads): vLLM's CPU attention rejects smaller heads.
# mrope_section sums to head_dim / 2 (temporal, height, width rotary sections).
TEXT_CONFIG = {
    "vocab_size": VOCAB_SIZE,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
    "max_position_embeddings": 4096,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1_000_000.0, "mrope_section": [16, 8, 8]},
}
VISION_CONFIG = {
    "depth": 2,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_heads": 1,
    "out_hidden_size": 128,  # = text hidden size (the merger projects into the LM)
    "patch_size": 14,
    "spatial_merge_size": 2,
    "temporal_patch_size": 2,
    "window_size": 112,
    "fullatt_block_indexes": [1],
}
# Small images keep the vision sequence short: at most 224x224 px -> 64 image tokens.
MIN_PIXELS = 56 * 56
MAX_PIXELS = 224 * 224


def _byte_symbol(b: int) -> str:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return bytes_to_unicode()[b]


def build_tokenizer():
    """Byte-level Qwen2Tokenizer with Qwen's special tokens at fixed ids."""
    from transformers import Qwen2Tokenizer
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    symbols = list(bytes_to_unicode().values())
    vocab = {s: i for i, s in enumerate(symbols)}
    for tok in SPECIAL_TOKENS:
        vocab[tok] = len(vocab)
    merges = []
    for word in WORD_TOKENS:  # t+r, tr+u, tru+e: each prefix becomes a token
        for i in range(2, len(word) + 1):
            merges.append((word[: i - 1], word[i - 1]))
            vocab.setdefault(word[:i], len(vocab))
    tok = Qwen2Tokenizer(
        vocab=vocab, merges=merges, unk_token=None, bos_token=None,
        eos_token="<|im_end|>", pad_token="<|endoftext|>",
        errors="replace", add_prefix_space=False,
    )
    tok.add_special_tokens({"additional_special_tokens": SPECIAL_TOKENS[1:]})
    tok.chat_template = QWEN2_5_VL_CHAT_TEMPLATE
    return tok


def build_processor(tokenizer=None):
    from transformers import Qwen2_5_VLProcessor, Qwen2VLImageProcessor, Qwen2VLVideoProcessor

    tokenizer = tokenizer or build_tokenizer()
    return Qwen2_5_VLProcessor(
        image_processor=Qwen2VLImageProcessor(min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS),
        tokenizer=tokenizer,
        video_processor=Qwen2VLVideoProcessor(),
        chat_template=QWEN2_5_VL_CHAT_TEMPLATE,
    )


def build_model(tokenizer, seed: int = 0, tied: bool = False):
    """The tiny model. ``tied=False`` (the noise model): a separate output head whose rows are
    masked to printable characters. ``tied=True``: input and output embeddings shared, which
    fine-tunes much faster (the judge)."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    config = Qwen2_5_VLConfig(
        text_config={**TEXT_CONFIG, "bos_token_id": ids["<|endoftext|>"],
                     "eos_token_id": ids["<|im_end|>"], "pad_token_id": ids["<|endoftext|>"]},
        vision_config=VISION_CONFIG,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=tied,
    )
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    if tied:
        return _with_generation_config(model, ids)
    # Random weights give noise; keep it readable. Output rows of everything but printable ASCII
    # and <|im_end|> are zeroed, so greedy replies are printable characters (no control bytes or
    # broken UTF-8 in traces and JSONL) and may end on their own. (A tied head would instead just
    # echo the prompt's last token, a newline, and reply with nothing.)
    keep = [tokenizer.convert_tokens_to_ids(c) for c in map(_byte_symbol, range(0x20, 0x7F))]
    keep.append(ids["<|im_end|>"])
    mask = torch.zeros(VOCAB_SIZE, 1)
    mask[keep] = 1.0
    with torch.no_grad():
        model.lm_head.weight.mul_(mask)
    return _with_generation_config(model, ids)


def _with_generation_config(model, ids: dict[str, int]):
    from transformers import GenerationConfig

    model.generation_config = GenerationConfig(
        eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]],
        pad_token_id=ids["<|endoftext|>"],
        bos_token_id=ids["<|endoftext|>"],
        do_sample=False,
    )
    return model


def build_tiny_qwen2_5_vl(out_dir: str | Path, seed: int = 0) -> Path:
    """Write a tiny Qwen2.5-VL (weights, config, processor, chat template) into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    processor = build_processor()
    model = build_model(processor.tokenizer, seed=seed)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
