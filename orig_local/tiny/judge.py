"""Tiny judge: the tiny Qwen2.5-VL fine-tuned for seconds to answer ``true`` for a red image and
``false`` for a blue one, whatever the question says.

That gives tests a judge with *real* generation end to end (templating, image processing,
decoding, HTTP) whose answers are known in advance. It is trained over varied instructions and
question texts (with and without a system turn, with a JSON-schema note appended, with a second
"reference" image of any colour) so it keeps answering by the colour of the first image under
whatever prompt the evaluation sends. It replies with the bare word, which is also valid JSON
(a boolean).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from orig_local.tiny.qwen_vl import TINY_VERSION as _BASE_VERSION
from orig_local.tiny.qwen_vl import build_model, build_processor

TINY_VERSION = f"{_BASE_VERSION}.1"  # rebuilt when the base model or the training changes

STEPS = 150
LR = 3e-3
BATCH = 4

_WORDS = (
    "the statue tower bridge river player team jersey logo flag mountain painting museum car "
    "stadium festival dragon temple city crown bird flower building skyline ship train king "
    "queen clock moon castle garden poster trophy shirt number red blue green golden old new "
    "tall small two three left right behind front wearing holding near under above".split()
)
_SYSTEMS = [
    None, None,
    "You are a careful visual judge.",
    "You check whether statements about an image are true.",
    "Answer only with true or false.",
]
_TEMPLATES = [
    "{q}",
    "Is the following statement true? {q}",
    "Statement: {q}\nIs it true for this image? Answer true or false.",
    "Look at the generated image. {q} Reply with true or false.",
    "Question: {q}\nAnswer:",
    "Judge the image against this claim: {q}",
]
_SCHEMA_NOTE = (
    '\n\nReply with only a JSON value that matches this JSON schema:\n{"type": "boolean"}'
)


def _statement(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(3, 14))
    return " ".join(words).capitalize() + rng.choice([".", "?", ""])


def _colour_image(rng: random.Random, red: bool):
    from PIL import Image

    size = (rng.randint(28, 96), rng.randint(28, 96))
    hi, lo = rng.randint(170, 255), (rng.randint(0, 70), rng.randint(0, 70))
    rgb = (hi, lo[0], lo[1]) if red else (lo[0], lo[1], hi)
    return Image.new("RGB", size, rgb)


def judge_example(rng: random.Random, red: bool) -> list[dict]:
    """One judge-style conversation (the first image decides the answer)."""
    text = rng.choice(_TEMPLATES).format(q=_statement(rng))
    if rng.random() < 0.25:
        text += _SCHEMA_NOTE
    content: list[dict] = [{"type": "image", "image": _colour_image(rng, red)}]
    if rng.random() < 0.2:  # a reference image shown beside the generated one
        content.append({"type": "image", "image": _colour_image(rng, rng.random() < 0.5)})
    content.append({"type": "text", "text": text})
    if rng.random() < 0.3:  # text before the image, as some prompts put it
        content.insert(0, {"type": "text", "text": "Generated image:"})
    messages: list[dict[str, Any]] = []
    sys_text = rng.choice(_SYSTEMS)
    if sys_text:
        messages.append({"role": "system", "content": sys_text})
    messages.append({"role": "user", "content": content})
    return messages


def _batch(processor, rng: random.Random, n: int):
    """Tokenised batch with loss only on the answer tokens (``true``/``false`` + <|im_end|>)."""
    import torch

    tok = processor.tokenizer
    prompts: list[str] = []
    answers: list[str] = []
    images: list[Any] = []
    for _ in range(n):
        red = rng.random() < 0.5
        messages = judge_example(rng, red)
        prompts.append(processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False))
        answers.append(("true" if red else "false") + "<|im_end|>")
        images.extend(c["image"] for m in messages if isinstance(m["content"], list)
                      for c in m["content"] if c["type"] == "image")
    enc = processor(text=[p + a for p, a in zip(prompts, answers, strict=True)], images=images,
                    return_tensors="pt", padding=True, padding_side="right")
    labels = torch.full_like(enc["input_ids"], -100)
    for i, answer in enumerate(answers):
        n_answer = len(tok.encode(answer, add_special_tokens=False))
        length = int(enc["attention_mask"][i].sum())
        labels[i, length - n_answer:length] = enc["input_ids"][i, length - n_answer:length]
    enc["labels"] = labels
    return enc


def build_tiny_judge(out_dir: str | Path, seed: int = 0, steps: int = STEPS) -> Path:
    """Fine-tune a fresh tiny Qwen2.5-VL into the red/blue judge and save it to ``out_dir``."""
    import torch

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    processor = build_processor()
    model = build_model(processor.tokenizer, seed=seed, tied=True)
    rng = random.Random(seed)
    torch.manual_seed(seed)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=LR)
    # Once the loss is tiny, gradients turn denormal and CPU float math slows ~20x; flushing
    # them to zero keeps all steps fast. One thread: a shared 2-core machine thrashes with two.
    threads = torch.get_num_threads()
    torch.set_flush_denormal(True)
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            loss = model(**_batch(processor, rng, BATCH)).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)
    model.eval()
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out
