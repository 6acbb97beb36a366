"""Scripted stand-ins for the eval tests: an agent, a generator drawing solid colours, and a
judge chat model answering by the first image's colour (red -> true), like the tiny judge."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

from orig_local.evaluation.phases.common import AgentOutput
from orig_local.generation.base import GenerationResult


def colour_of(item_id: str) -> str:
    return "red" if int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % 3 else "blue"


def solid(colour: str, size: int = 32) -> Image.Image:
    return Image.new("RGB", (size, size), (220, 20, 20) if colour == "red" else (20, 20, 220))


def make_mini_benchmark(folder: Path, n: int = 6) -> Path:
    """n items in our JSONL format, 3 questions each, one "image" question with a reference."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "img").mkdir(exist_ok=True)
    classes = ["animal", "sports", "food"]
    rows = []
    for i in range(n):
        pid = f"item_{i}"
        ref = f"img/{pid}_0.png"
        solid("blue" if i % 2 else "red").save(folder / ref)
        rows.append({
            "id": pid, "prompt": f"A picture of thing {i}", "class": classes[i % 3],
            "questions": [
                {"id": "q1", "text": "True or False: the thing is shown.", "concept": "PF"},
                {"id": "q2", "text": "True or False: two things stand side by side.", "concept": "CC"},
                {"id": "q3", "text": "True or False: it looks like the reference.", "concept": "PF",
                 "modality": "image", "reference_image": ref},
            ],
            "reference_text": f"Thing {i} is {colour_of(pid)}.\nIt stands alone.",
            "reference_images": [ref],
        })
    path = folder / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


class FakeAgent:
    def __init__(self, delay: float = 0.0):
        self.delay = delay
        self.calls = 0

    def __call__(self, item) -> AgentOutput:
        self.calls += 1
        time.sleep(self.delay)
        if item.id == "item_boom":
            raise RuntimeError("agent exploded")
        return AgentOutput(
            final_prompt=f"{item.prompt}, {colour_of(item.id)}",
            references=[solid(colour_of(item.id), 16)],
            evidence_texts=[item.reference_text.splitlines()[0]],
            evidence_images=[solid(colour_of(item.id), 16)],
            stages={"planning": {"calls": 1, "prompt_tokens": 100, "completion_tokens": 20, "seconds": 0.5,
                                 "searches_text": 2, "searches_image": 1},
                    "extension": {"calls": 1, "prompt_tokens": 50, "completion_tokens": 30, "seconds": 0.2}},
            rounds=2, stop_reason="sufficient", trace={"records": []},
        )


@dataclass
class FakeGenerator:
    delay: float = 0.0
    name: str = "fake-solid"
    max_references: int = 1
    unloaded: bool = False
    calls: int = 0

    def generate(self, request):
        self.calls += 1
        time.sleep(self.delay)
        colour = "red" if request.prompt.endswith("red") else "blue"
        return GenerationResult(image=solid(colour), seed=request.seed, seconds=0.0,
                                references_used=min(1, len(request.references)))

    def generate_batch(self, requests):
        return [self.generate(r) for r in requests]

    def unload(self):
        self.unloaded = True


def colour_reply(messages, schema) -> str:
    """Answer like the tiny judge: by the first image of the last user turn (red -> true)."""
    image = messages[-1].images[0].to_pil()
    r, g, b = image.getpixel((0, 0))
    return "true" if r > b else "false"


def scripted_judge(latency_s: float = 0.0, answer_format: str = "bool", reply=colour_reply):
    from orig_local.evaluation.judge import Judge
    from orig_local.llm.config import ChatConfig
    from orig_local.llm.scripted import ScriptedChatModel

    chat = ScriptedChatModel(ChatConfig(backend="scripted", model="scripted-judge"),
                             replies=[reply], cycle=True, latency_s=latency_s)
    return Judge(chat, answer_format=answer_format, name="scripted")
