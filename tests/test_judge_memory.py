"""The judge's memory follows the chat model's concurrency, not the phase's: an item reads its
picture only when the chat layer has request slots for it (the others wait without their
pictures), and a picture file's base64 is built in pieces, never beside the file's bytes."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import mmap

import pytest
from PIL import Image

from orig_local.evaluation import judge as judge_module
from orig_local.evaluation.items import BenchmarkItem, Question
from orig_local.evaluation.judge import Judge
from orig_local.llm.base import ImageRef
from orig_local.llm.config import ChatConfig
from orig_local.llm.scripted import ScriptedChatModel
from orig_local.llm.wire import PIECE, file_base64

pytestmark = pytest.mark.timeout(120)


class CountingChat(ScriptedChatModel):
    """Replies "true" after a short wait; records the requests in flight at once."""

    def __init__(self, concurrency: int):
        super().__init__(ChatConfig(backend="scripted", model="m", concurrency=concurrency), replies=["true"],
                         cycle=True)
        self.now = self.peak = 0

    async def _complete(self, messages, **kw):
        self.now += 1
        self.peak = max(self.peak, self.now)
        try:
            await asyncio.sleep(0.02)
            return await super()._complete(messages, **kw)
        finally:
            self.now -= 1


def _items(n: int, questions: int) -> list[BenchmarkItem]:
    return [BenchmarkItem(id=f"p{i}", prompt="p", category="c",
                          questions=[Question(id=f"q{k}", text=f"True or False: fact {k}") for k in range(questions)])
            for i in range(n)]


def test_pictures_held_follow_the_chat_concurrency_not_the_items_in_flight(tmp_path, monkeypatch):
    held = {"now": 0, "peak": 0}
    real_prepare = judge_module._prepare_all

    def prepare(refs):  # an item's pictures are read here, once it is admitted
        held["now"] += 1
        held["peak"] = max(held["peak"], held["now"])
        real_prepare(refs)

    monkeypatch.setattr(judge_module, "_prepare_all", prepare)
    picture = tmp_path / "gen.png"
    Image.new("RGB", (1024, 768), (20, 90, 160)).save(picture)
    chat = CountingChat(concurrency=8)
    judge = Judge(chat, answer_format="text")

    async def one(item):
        try:
            return await judge.judge_item(item, picture)
        finally:
            held["now"] -= 1

    async def phase():  # 12 items in flight at once, 4 questions each
        return await asyncio.gather(*(one(it) for it in _items(12, 4)))

    verdicts = asyncio.run(phase())
    assert all(v.correct for vs in verdicts for v in vs)
    assert held["peak"] == 2, "8 request slots / 4 questions: two items hold their pictures, not twelve"
    assert chat.peak == 8, "the chat layer still has all its requests in flight"


def test_an_item_with_more_questions_than_slots_is_still_judged(tmp_path):
    picture = tmp_path / "gen.png"
    Image.new("RGB", (64, 48)).save(picture)
    judge = Judge(CountingChat(concurrency=2), answer_format="text")

    async def phase():
        return await asyncio.gather(*(judge.judge_item(it, picture) for it in _items(3, 5)))

    assert [len(vs) for vs in asyncio.run(phase())] == [5, 5, 5]
    assert asyncio.run(phase())  # the judge reused in a new event loop


@pytest.mark.parametrize("size", [1, 2, 3, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 2])
def test_file_base64_is_the_files_base64(tmp_path, size):
    path = tmp_path / "blob.bin"
    data = bytes((i * 7 + 3) % 256 for i in range(size))
    path.write_bytes(data)
    b64, sha, n = file_base64(path)
    assert bytes(b64) == base64.b64encode(data)
    assert sha == hashlib.sha256(data).hexdigest() and n == size


def test_a_png_file_goes_on_the_wire_as_it_came_from_a_memory_map(tmp_path):
    path = tmp_path / "gen.png"
    Image.new("RGB", (1328, 1328), (200, 40, 40)).save(path)
    ref = ImageRef(path).prepare()
    prefix, b64 = ref.data_uri_parts()
    assert isinstance(b64, mmap.mmap)  # not a heap block the allocator keeps after it is freed
    assert ref.data_uri() == "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()
    assert ref.sha256() == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (ref.mime, ref.size) == ("image/png", (1328, 1328))
