"""The judge reads and encodes each picture once: once per item for the generated image, once per
run for a reference image shared by items; a PNG/JPEG file goes on the wire as it came; the
work runs off the event loop. Counted, not timed, against a real loopback server."""

from __future__ import annotations

import asyncio
import base64
import threading

import pytest
from PIL import Image
from test_llm_openai import ScriptedHTTP, chat_body

from orig_local.evaluation.items import BenchmarkItem, Question
from orig_local.evaluation.judge import Judge
from orig_local.llm import ChatConfig, make_chat_model
from orig_local.llm.base import ImageRef

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def server():
    s = ScriptedHTTP([(200, chat_body("true"))])
    yield s
    s.close()


@pytest.fixture
def encodes(monkeypatch):
    """Every time a picture is read and turned into wire bytes: (source, thread name)."""
    seen: list[tuple[str, str]] = []
    real = ImageRef._wire_bytes

    def counting(self):
        seen.append((str(self.source), threading.current_thread().name))
        return real(self)

    monkeypatch.setattr(ImageRef, "_wire_bytes", counting)
    return seen


def item(i: int, refs: list[str]) -> BenchmarkItem:
    qs = [Question(id=f"t{k}", text=f"True or False: fact {k}") for k in range(5)]
    qs += [Question(id=f"i{k}", text=f"True or False: like reference {k}", modality="image",
                    reference_image=refs[k % len(refs)]) for k in range(3)]
    return BenchmarkItem(id=f"p{i}", prompt="p", category="others", questions=qs)


def _urls(body: dict) -> list[str]:
    return [p["image_url"]["url"] for m in body["messages"] if isinstance(m["content"], list)
            for p in m["content"] if p["type"] == "image_url"]


def test_each_picture_is_encoded_once_and_sent_as_it_came(tmp_path, server, encodes):
    refs = []
    for k, colour in enumerate([(200, 30, 30), (30, 200, 30)]):
        path = tmp_path / f"ref{k}.jpg"
        Image.new("RGB", (1024, 768), colour).save(path, quality=85)
        refs.append(str(path))
    gens = []
    for i in range(3):
        path = tmp_path / f"gen{i}.png"
        Image.new("RGB", (1024, 768), (i * 40, 90, 160)).save(path)
        gens.append(path)
    judge = Judge(make_chat_model(ChatConfig(backend="openai", base_url=server.base_url, model="m", cache=False)))

    async def run():
        return [await judge.judge_item(item(i, refs), gens[i]) for i in range(3)]

    verdicts = asyncio.run(run())
    assert all(v.correct for vs in verdicts for v in vs), [v.error for vs in verdicts for v in vs]
    assert len(server.bodies) == 3 * 8

    counts = {src: sum(s == src for s, _ in encodes) for src, _ in encodes}
    assert {str(g): counts.get(str(g)) for g in gens} == {str(g): 1 for g in gens}  # once per item
    assert {r: counts.get(r) for r in refs} == {r: 1 for r in refs}  # once per run, for all items
    assert len(encodes) == 3 + 2
    assert all(name != threading.main_thread().name for _, name in encodes)  # not on the loop's thread

    # the files' own bytes, with their own type: no decode and PNG re-encode on the way
    gen0 = "data:image/png;base64," + base64.b64encode(gens[0].read_bytes()).decode()
    ref0 = "data:image/jpeg;base64," + base64.b64encode(open(refs[0], "rb").read()).decode()
    image_bodies = [_urls(b) for b in server.bodies if len(_urls(b)) == 2]
    assert len(image_bodies) == 9
    assert any(urls == [gen0, ref0] for urls in image_bodies)
    assert all(len(_urls(b)) in (1, 2) for b in server.bodies)


def test_a_format_the_api_does_not_take_is_sent_as_png(tmp_path, server):
    path = tmp_path / "gen.bmp"
    Image.new("RGB", (32, 16), (1, 2, 3)).save(path)
    ref = ImageRef(path)
    assert ref.mime == "image/png" and ref.size == (32, 16)
    with Image.open(__import__("io").BytesIO(base64.b64decode(ref.data_uri().split(",", 1)[1]))) as im:
        assert im.format == "PNG" and im.convert("RGB").getpixel((0, 0)) == (1, 2, 3)


def test_wrapping_a_ref_shares_its_encoding(tmp_path, encodes):
    path = tmp_path / "a.png"
    Image.new("RGB", (8, 8)).save(path)
    first = ImageRef(path)
    second = ImageRef(first, label="generated")
    assert second.sha256() == first.sha256()
    assert len(encodes) == 1 and second.label == "generated"


def test_reference_images_are_bounded_and_follow_the_file(tmp_path):
    from orig_local.evaluation.judge import ReferenceImages

    paths = []
    for k in range(4):
        path = tmp_path / f"r{k}.png"
        noise = __import__("random").Random(k).randbytes(64 * 64 * 3)  # files of about equal size
        Image.frombytes("RGB", (64, 64), noise).save(path)
        paths.append(path)
    sizes = [p.stat().st_size * 4 // 3 for p in paths]
    refs = ReferenceImages(max_bytes=2 * max(sizes))  # room for two, not three
    assert 3 * min(sizes) > refs.max_bytes
    first = refs.get(paths[0])
    assert refs.get(str(paths[0])) is first  # the same file: the same prepared picture
    for p in paths[1:]:
        refs.get(p)
    assert len(refs) == 2 and refs.get(paths[0]) is not first  # evicted, least recent first
    before = refs.get(paths[3]).sha256()
    Image.new("RGB", (64, 64), (0, 255, 0)).save(paths[3])  # changed on disk: read again
    assert refs.get(paths[3]).sha256() != before


def test_retrieval_accuracy_encodes_each_evidence_image_once(tmp_path, server, encodes):
    from orig_local.evaluation.items import GoldFact
    from orig_local.evaluation.phases.agent import run_agent_phase
    from orig_local.evaluation.phases.common import AgentOutput
    from orig_local.evaluation.phases.retrieval_accuracy import run_retrieval_phase

    pictures = [Image.new("RGB", (320, 240), (k * 90, 20, 20)) for k in range(2)]
    item = BenchmarkItem(id="p0", prompt="p", category="others",
                         facts=[GoldFact(id=f"f{k}", text=f"fact {k}") for k in range(4)])
    run = tmp_path / "run"
    run_agent_phase([item], run, lambda it: AgentOutput(final_prompt="p", evidence_texts=["page text"],
                                                         evidence_images=pictures), progress=False)
    judge = Judge(make_chat_model(ChatConfig(backend="openai", base_url=server.base_url, model="m", cache=False)))
    summary = run_retrieval_phase([item], run, judge, progress=False, close=True)
    assert summary.ok == 1 and len(server.bodies) == 4
    assert all(len(_urls(b)) == 2 for b in server.bodies)  # every fact saw both pictures
    assert len(encodes) == 2  # ... each read and encoded once, not once per fact
