"""Small local tokenizers for the tiny diffusion pipelines (no hub download).

Real tokenizer *classes* (CLIPTokenizer, T5Tokenizer, Qwen2Tokenizer) over tiny vocabularies, so
the pipelines save and reload them through the same ``from_pretrained`` code as real checkpoints.
"""

from __future__ import annotations

import string

# Qwen2.5-VL's special tokens that the QwenImage pipelines and Qwen2VLProcessor use by name.
QWEN_SPECIAL = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
]


def _byte_symbols() -> list[str]:
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return sorted(set(bytes_to_unicode().values()))


def clip_tokenizer():
    """CLIPTokenizer over the 256 byte symbols (+ their ``</w>`` forms), no merges: 514 ids."""
    from transformers import CLIPTokenizer

    vocab: dict[str, int] = {}
    for sym in _byte_symbols():
        vocab[sym] = len(vocab)
    for sym in _byte_symbols():
        vocab[sym + "</w>"] = len(vocab)
    for tok in ("<|startoftext|>", "<|endoftext|>"):
        vocab[tok] = len(vocab)
    # CLIP's real context is 77 tokens; the pipelines read the length from the tokenizer.
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def t5_tokenizer():
    """T5Tokenizer (Unigram) over printable ASCII characters; ids < 200 with 100 extra ids."""
    from transformers import T5Tokenizer

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -1.0)]
    pieces += [(ch, -2.0) for ch in string.printable if not ch.isspace()]
    pieces += [("\u2581" + ch, -1.5) for ch in string.ascii_letters]
    return T5Tokenizer(vocab=pieces, extra_ids=0)


def qwen2_tokenizer():
    """Byte-level Qwen2Tokenizer with Qwen's special tokens at fixed ids (256..269)."""
    from transformers import Qwen2Tokenizer

    vocab = {sym: i for i, sym in enumerate(_byte_symbols())}
    for tok in QWEN_SPECIAL:
        vocab[tok] = len(vocab)
    tok = Qwen2Tokenizer(vocab=vocab, merges=[], unk_token=None, pad_token="<|endoftext|>")
    tok.add_special_tokens({"additional_special_tokens": QWEN_SPECIAL[1:]})
    return tok


def qwen_token_ids(tokenizer) -> dict[str, int]:
    """The config ids Qwen2.5-VL needs for the tokenizer above."""
    conv = tokenizer.convert_tokens_to_ids
    return {
        "image_token_id": conv("<|image_pad|>"),
        "video_token_id": conv("<|video_pad|>"),
        "vision_start_token_id": conv("<|vision_start|>"),
        "vision_end_token_id": conv("<|vision_end|>"),
        "vision_token_id": conv("<|vision_pad|>"),
    }
