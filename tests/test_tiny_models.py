"""Tiny Qwen2.5-VL and tiny judge: they load back through the product path (AutoProcessor /
AutoModelForImageTextToText) with the hub switched off, with Qwen2.5-VL-Instruct's template."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import tiny_model

from orig_local.tiny import BUILDERS
from orig_local.tiny.qwen_vl import QWEN2_5_VL_CHAT_TEMPLATE

pytestmark = pytest.mark.timeout(240)

RELOAD = r"""
import json, sys
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor
path = sys.argv[1]
processor = AutoProcessor.from_pretrained(path)
model = AutoModelForImageTextToText.from_pretrained(path)
messages = [{"role": "user", "content": [
    {"type": "image", "image": Image.new("RGB", (64, 64), (230, 20, 20))},
    {"type": "text", "text": "Is the following statement true? The sky is clear."}]}]
prompt = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
inputs = processor.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                       return_dict=True, return_tensors="pt")
out = model.generate(**inputs, max_new_tokens=4, do_sample=False)
text = processor.batch_decode(out[:, inputs["input_ids"].shape[1]:], skip_special_tokens=True)[0]
cfg = model.config
print(json.dumps({
    "processor": type(processor).__name__, "model": type(model).__name__, "prompt": prompt,
    "reply": text, "template": processor.chat_template,
    "head_dim": cfg.text_config.hidden_size // cfg.text_config.num_attention_heads,
    "mrope": cfg.text_config.rope_parameters["mrope_section"],
    "image_token_ok": cfg.image_token_id == processor.tokenizer.convert_tokens_to_ids("<|image_pad|>"),
    "eos": processor.tokenizer.decode(model.generation_config.eos_token_id[:1]),
}))
"""


def _reload(path) -> dict:
    import json

    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1")
    proc = subprocess.run([sys.executable, "-c", RELOAD, str(path)], capture_output=True, text=True,
                          env=env, timeout=200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_builders_registered():
    assert BUILDERS["qwen2_5_vl"] == "orig_local.tiny.qwen_vl:build_tiny_qwen2_5_vl"
    assert BUILDERS["judge"] == "orig_local.tiny.judge:build_tiny_judge"


def test_tiny_qwen_reloads_offline_with_the_real_template():
    info = _reload(tiny_model("qwen2_5_vl"))
    assert info["processor"] == "Qwen2_5_VLProcessor"
    assert info["model"] == "Qwen2_5_VLForConditionalGeneration"
    assert info["template"] == QWEN2_5_VL_CHAT_TEMPLATE
    assert info["prompt"] == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>"
        "Is the following statement true? The sky is clear.<|im_end|>\n<|im_start|>assistant\n"
    )
    assert info["head_dim"] == 64 and sum(info["mrope"]) == 32  # vLLM CPU needs head_dim 64
    assert info["image_token_ok"] and info["eos"] == "<|im_end|>"
    assert info["reply"].isprintable()


def test_tiny_judge_reloads_offline_and_answers():
    info = _reload(tiny_model("judge"))
    assert info["model"] == "Qwen2_5_VLForConditionalGeneration"
    assert info["reply"] == "true"  # red image


def test_answer_words_are_single_tokens():
    from orig_local.tiny.qwen_vl import build_tokenizer

    tok = build_tokenizer()
    for word in ("true", "false", "True", "False"):
        assert len(tok.encode(word)) == 1
    assert tok.decode(tok.encode("héllo wörld")) == "héllo wörld"  # byte-level: any text round-trips


def test_build_is_deterministic(tmp_path):
    from safetensors.torch import load_file

    from orig_local.tiny.build import build_one

    fresh = build_one("qwen2_5_vl", tmp_path)
    a = load_file(str(fresh / "model.safetensors"))
    b = load_file(str(tiny_model("qwen2_5_vl") / "model.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert (fresh / ".complete").exists()


def test_stale_builds_are_rebuilt_when_the_builder_version_changes(tmp_path, monkeypatch):
    import importlib

    from orig_local.tiny.build import build_one

    (tmp_path / "fake_tiny_builder.py").write_text(
        "TINY_VERSION = 1\nCALLS = []\n"
        "def build(out):\n    import pathlib\n    pathlib.Path(out).mkdir(parents=True)\n    CALLS.append(out)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("fake_tiny_builder")
    monkeypatch.setitem(BUILDERS, "fake", "fake_tiny_builder:build")
    root = tmp_path / "models"
    build_one("fake", root)
    build_one("fake", root)
    assert len(module.CALLS) == 1 and (root / "fake" / ".complete").read_text().strip() == "ok 1"
    monkeypatch.setattr(module, "TINY_VERSION", 2)
    build_one("fake", root)
    assert len(module.CALLS) == 2 and (root / "fake" / ".complete").read_text().strip() == "ok 2"
