"""The FIG-Eval judge: an open VLM through the chat layer answers each question true/false.

* Text questions see the generated image; "image" questions see the generated image and the
  reference image, in that order, each labelled.
* The answer is constrained (``answer_format``): ``bool`` sends the JSON schema
  ``{"type": "boolean"}`` so guided decoding can only emit ``true``/``false``; ``object`` asks for
  ``{"answer": <bool>}``; ``text`` sends no schema and :func:`parse_verdict` accepts the reply
  only if it is exactly true/false after trimming case, quotes and punctuation. Multiple-choice
  questions (I-HallA) are constrained to their option letters the same way.
* Never a substring test: "False - it is not true" is an error, not True. An unparseable reply
  is recorded as an error with its raw text (counted in reports), never defaulted.
* Temperature 0 (cached by the chat layer); raw replies kept; optional soft score P(true) from
  the first token's top logprobs when the server returns them.

Instruction templates live in ``templates/judge_*.jinja`` (a file of the same name in ``prompts_dir`` overrides it).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, RootModel, StrictBool

from orig_local.evaluation.items import BenchmarkItem, GoldFact, Question
from orig_local.evaluation.request_budget import RequestBudget
from orig_local.evaluation.verdict import Verdict, record_finish  # defined below both judges; public here too
from orig_local.filememo import FileMemo
from orig_local.llm.base import ChatError, ImageRef, Message, StructuredOutputError, system, user

if TYPE_CHECKING:
    from orig_local.config import Config
    from orig_local.llm.base import BaseChatModel

TEMPLATES_DIR = Path(__file__).parent / "templates"
AnswerFormat = Literal["bool", "object", "text"]


class BoolAnswer(RootModel[StrictBool]):
    """The whole reply is a JSON boolean (schema ``{"type": "boolean"}``)."""


class ObjectAnswer(BaseModel):
    answer: StrictBool


# --------------------------------------------------------------------------- strict parsing

_STRIP = string.whitespace + string.punctuation.replace("{", "").replace("}", "") + "“”‘’「」"
# Wrappers a verdict word may sit in, in matching pairs (quotes, code ticks, emphasis).
_WRAPPERS = {'"': '"', "'": "'", "`": "`", "*": "*", "_": "_", "“": "”", "‘": "’", "「": "」"}
_FENCE = re.compile(r"\A```[ \t]*(?:json)?[ \t]*\n(?P<body>.*?)\n?```\Z", re.S | re.I)


def _normalize(text: str) -> str:
    return text.strip().strip(_STRIP).strip().lower()


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise DuplicateKey(f"duplicate keys in {keys}")
    return dict(pairs)


def strict_json(text: str) -> Any:
    """``json.loads`` that refuses duplicate object keys (``{"answer": true, "answer": false}``
    would otherwise keep the last). Raises ``ValueError``, also for nesting too deep for the
    parser (``[[[[...``), which is one unparseable reply, not a crash of the whole item."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc


def _unfence(body: str) -> str:
    """The inside of one code fence that spans the whole reply (nothing after the closing
    fence), else the reply unchanged."""
    m = _FENCE.match(body)
    return m.group("body").strip() if m else body


def parse_verdict(text: str) -> bool | None:
    """``True``/``False`` if the reply is one of the documented forms, else None:

    * the word true/false, any case, optionally inside one pair of quotes, code ticks or
      emphasis marks and followed by one ``.`` or ``!`` (``" TRUE. "``, ``"`true`"``);
    * JSON ``true``/``false`` or ``{"answer": <bool>}`` with no other and no repeated key;
    * either of those inside one code fence that ends the reply.

    Everything else is None: "False - it is not true", "The answer is true", ``[true]``,
    ``{"answer": true, "answer": false}``, a fence followed by more text."""
    body = _unfence(text.strip())
    if body.startswith(("{", "[")):
        try:
            data = strict_json(body)
        except ValueError:
            return None
        if isinstance(data, dict) and set(data) == {"answer"} and isinstance(data["answer"], bool):
            return data["answer"]
        return None
    if body[-1:] in ".!":
        body = body[:-1].rstrip()
    if len(body) >= 2 and _WRAPPERS.get(body[0]) == body[-1]:
        body = body[1:-1].strip()
        if len(body) >= 2 and body[0] in "*_" and body[0] == body[-1]:  # **bold** is two marks deep
            body = body[1:-1].strip()
        if body[-1:] in ".!":  # `"true."` as well as `"true".`
            body = body[:-1].rstrip()
    return {"true": True, "false": False}.get(body.lower())


# An option given with its label and text, as I-HallA's options are written: "B) Hydrogen",
# "(B) Hydrogen", "B. Hydrogen". The label must be closed, so "A cat ..." is not option A.
_LABELLED_OPTION = re.compile(r"^\(?([A-Za-z])[).:]\s+\S")


def parse_choice(text: str, letters: str) -> str | None:
    """The option letter if the reply is exactly one of ``letters`` (``"B"``, ``"(b)"``, ``"B."``)
    or that option written with its label (``"B) Hydrogen"``, as the official I-HallA scorer,
    which reads the reply's first character, also counts it)."""
    body = text.strip()
    if body.startswith('"'):
        try:
            body = str(json.loads(body))
        except json.JSONDecodeError:
            return None
    labelled = _LABELLED_OPTION.match(body)
    if labelled and "\n" not in body:
        letter = labelled.group(1).upper()
        return letter if letter in letters else None
    word = _normalize(body).upper()
    return word if len(word) == 1 and word in letters else None


def first_character(text: str) -> str | None:
    """The official I-HallA scorer's reading of a free-text reply: its first character is the
    chosen option (leading whitespace skipped), whatever follows; None for an empty reply."""
    body = text.lstrip()
    return body[0] if body else None


def soft_true(top_logprobs: dict[str, float] | None) -> float | None:
    """P(true) from the first token's alternatives: mass of tokens that start "true" over the
    mass of tokens that start "true" or "false". None when neither appears."""
    if not top_logprobs:
        return None
    t = f = 0.0
    for token, lp in top_logprobs.items():
        word = token.strip().strip('"{ ').lower()
        if word and "true".startswith(word):
            t += math.exp(lp)
        elif word and "false".startswith(word):
            f += math.exp(lp)
    return t / (t + f) if t + f > 0 else None


_PREFIX = re.compile(r"^\s*true\s+or\s+false\s*[:：]?\s*", re.IGNORECASE)


def statement_of(question_text: str) -> str:
    """FIG-Eval questions read "True or False: <statement>"; the judge gets the statement."""
    return _PREFIX.sub("", question_text).strip()


# --------------------------------------------------------------------------- templates


def template_hashes(templates_dir: str | Path | None = None) -> dict[str, str]:
    """sha256 of each judge template's source as it will be rendered (``prompts_dir`` over the
    packaged file): run.json records them, so a verdict's request can be rebuilt and re-checked."""
    import hashlib

    out = {}
    for path in sorted(TEMPLATES_DIR.glob("*.jinja")):
        source = path
        if templates_dir and (Path(templates_dir) / path.name).is_file():
            source = Path(templates_dir) / path.name
        out[path.name] = hashlib.sha256(source.read_bytes()).hexdigest()
    return out


def _templates(templates_dir: Path | None):
    """The judges' templates, ``prompts_dir`` over the packaged ones (orig_local.templates). They
    are written without block trimming; their rendered text stays exactly as before."""
    from orig_local.templates import PromptTemplates

    return PromptTemplates(TEMPLATES_DIR, templates_dir, trim_blocks=False)


# --------------------------------------------------------------------------- images


def _prepare_all(refs: Sequence[ImageRef]) -> None:
    for ref in refs:
        ref.prepare()


class ReferenceImages:
    """Reference images as prepared ImageRefs, one per file for the whole run: many items share
    a reference picture, and each would otherwise read and encode it again. Least recently
    used pictures go first past ``max_bytes`` of data URIs, so memory stays
    bounded whatever the number of references; a file changed on disk is read again."""

    def __init__(self, max_bytes: int = 256 * 2**20):
        self.max_bytes = max_bytes
        self._refs: FileMemo[ImageRef] = FileMemo(max_bytes)

    def __len__(self) -> int:
        return len(self._refs)

    def get(self, path: str | Path) -> ImageRef:
        return self._refs.get(path, _reference)[0]


def _reference(path: Path, size: int) -> tuple[ImageRef, int]:
    return ImageRef(path, label="reference"), size * 4 // 3  # held as a base64 data URI


# --------------------------------------------------------------------------- the judge



def _structured_answer(parsed: BaseModel | None) -> Any:
    """The answer inside a structured reply (None when the reply did not parse: unparseable)."""
    if isinstance(parsed, RootModel):
        return parsed.root
    if isinstance(parsed, ObjectAnswer):
        return parsed.answer
    return None

class Judge:
    """Answers benchmark questions about generated images with a chat model.

    ``chat`` is any :class:`orig_local.llm.BaseChatModel` (openai / transformers / scripted).

    Example (a scripted chat model stands in for the VLM; it replies ``true``)::

        >>> import asyncio
        >>> from PIL import Image
        >>> from orig_local.evaluation import Judge, Question
        >>> from orig_local.llm.config import ChatConfig
        >>> from orig_local.llm.scripted import ScriptedChatModel
        >>> judge = Judge(ScriptedChatModel(ChatConfig(backend="scripted"), replies=["true"]))
        >>> question = Question(id="q1", text="Is the card red?", concept="PF")
        >>> verdict = asyncio.run(judge.judge_question(question, Image.new("RGB", (64, 64), "red")))
        >>> verdict.answer, verdict.correct, verdict.error
        (True, True, None)
    """

    def __init__(self, chat: BaseChatModel, answer_format: AnswerFormat = "bool", logprobs: int = 0,
                 reference_text: bool = True, templates_dir: str | Path | None = None,
                 name: str | None = None, max_tokens: int | None = None,
                 choice_rule: Literal["first_character", "labelled"] = "first_character"):
        self.chat = chat
        self.choice_rule = choice_rule
        self.answer_format = answer_format
        self.logprobs = logprobs or None
        self.reference_text = reference_text
        self.name = name or getattr(chat, "model_name", "judge")
        self.max_tokens = max_tokens
        self.references = ReferenceImages()  # encoded once per run, shared by every item
        # items holding their pictures: as many as the chat layer has request slots for
        self.budget = RequestBudget(getattr(getattr(chat, "config", None), "concurrency", None) or 32)
        self._templates = _templates(Path(templates_dir) if templates_dir else None)

    @classmethod
    def from_config(cls, config: Config, chat: BaseChatModel | None = None) -> Judge:
        """Build from the root Config (``judge:`` chat section + ``eval:`` judge options)."""
        if chat is None:
            from orig_local.llm import make_chat_model

            chat = make_chat_model(config.judge, cache_dir=config.resolved_cache_dir())
        ev = config.eval
        return cls(chat, answer_format=ev.judge_answer_format, logprobs=ev.judge_logprobs,
                   reference_text=ev.judge_reference_text, templates_dir=config.prompts_dir,
                   name=ev.judge_name or config.judge.preset or config.judge.model, choice_rule=ev.choice_rule)

    async def aclose(self) -> None:
        """Release the judge's chat model (its HTTP clients belong to the running loop)."""
        await self.chat.aclose()

    def render(self, name: str, **values) -> str:
        return self._templates.render(name, **values)

    def _schema(self, question: Question | None):
        if question is not None and question.choices:
            letters = string.ascii_uppercase[: len(question.choices)]
            # a Literal of this question's letters, built at run time: no static type exists for it
            return RootModel[Literal[tuple(letters)]] if self.answer_format != "text" else None  # type: ignore[misc]
        return {"bool": BoolAnswer, "object": ObjectAnswer, "text": None}[self.answer_format]

    def request_digest(self, messages: Sequence[Message], schema: type[BaseModel] | None) -> str:
        """What :attr:`Verdict.request_sha256` records: the canonical request this judge sends."""
        import hashlib

        blob = {"messages": [m.canonical() for m in messages], "temperature": 0.0, "max_tokens": self.max_tokens,
                "logprobs": self.logprobs, "schema": None if schema is None else schema.model_json_schema()}
        return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    async def _ask(self, messages, schema, letters: str | None) -> tuple[Any, list[str], Any]:
        """Send; return (answer or None, raw texts, reply or error)."""
        try:
            reply = await self.chat.chat(messages, schema=schema, temperature=0.0,
                                         max_tokens=self.max_tokens, logprobs=self.logprobs)
        except StructuredOutputError as exc:
            return None, list(exc.raw_texts), exc
        except ChatError as exc:
            return None, [], exc
        raw = list(reply.invalid_replies) + [reply.text]
        if schema is not None and not letters:
            # the chat layer's structured parse is lenient (last duplicate key wins, text after
            # a closing fence is dropped); a verdict must also pass the strict parser
            value = _structured_answer(reply.parsed)
            if parse_verdict(reply.text) is not value:
                value = None
        elif schema is not None:
            value = _structured_answer(reply.parsed)
        elif letters and self.choice_rule == "first_character":
            value = first_character(reply.text)
        elif letters:
            value = parse_choice(reply.text, letters)
        else:
            value = parse_verdict(reply.text)
        return value, raw, reply

    def _finish(self, verdict: Verdict, value, raw, reply) -> Verdict:
        verdict.raw = raw
        record_finish(verdict, reply)
        if isinstance(reply, Exception):
            verdict.error = f"{type(reply).__name__}: {str(reply)[:300]}"
            usage = getattr(reply, "usage", None)
            if usage is not None:
                verdict.prompt_tokens, verdict.completion_tokens = usage.prompt_tokens, usage.completion_tokens
            return verdict
        verdict.cached = reply.cached
        verdict.prompt_tokens, verdict.completion_tokens = reply.usage.prompt_tokens, reply.usage.completion_tokens
        if value is None:
            verdict.error = f"unparseable verdict: {reply.text[:200]!r}"
            return verdict
        verdict.answer = value
        verdict.correct = value == verdict.expected
        if isinstance(value, bool):
            verdict.p_true = soft_true(reply.top_logprobs)
        return verdict

    async def judge_question(self, question: Question, image: Any, reference_text: str = "") -> Verdict:
        """Judge one question about ``image`` (PIL image or path)."""
        if question.rubric:  # a benchmark's own rubric (WISE's judges): its module decides
            from orig_local.evaluation.wise_judge import judge_rubric

            return await judge_rubric(self, question, image, reference_text)
        verdict = Verdict(qid=question.id, answer=None, expected=question.answer,
                          concept=question.concept, modality=question.modality)
        has_reference = question.modality == "image"
        reference = question.reference_image
        if has_reference and (not reference or not question.reference_image_found or not Path(reference).is_file()):
            verdict.error = f"reference image missing: {reference}"
            return verdict
        options = question.choices or []
        letters = string.ascii_uppercase[: len(options)] if options else None
        choices = list(zip(letters, options, strict=True)) if letters else None
        sys_text = self.render("judge_system.jinja", choices=choices, answer_format=self.answer_format)
        text = self.render("judge_question.jinja", statement=statement_of(question.text),
                           reference_text=reference_text.strip() if self.reference_text else "",
                           has_reference=has_reference, choices=choices)
        parts: list[Any] = ["Generated image:", ImageRef(image, label="generated")]
        if has_reference and reference:
            parts += ["Reference image:", self.references.get(reference)]
        parts.append(text)
        messages, schema = [system(sys_text), user(*parts)], self._schema(question)
        if letters:
            verdict.rule = "schema" if schema is not None else self.choice_rule
        verdict.request_sha256 = self.request_digest(messages, schema)
        value, raw, reply = await self._ask(messages, schema, letters)
        return self._finish(verdict, value, raw, reply)

    async def judge_item(self, item: BenchmarkItem, image: Any) -> list[Verdict]:
        """All questions of ``item`` about its generated ``image`` (sent concurrently). The
        picture is read only once the item is admitted (:class:`RequestBudget`) and dropped when
        its last answer is in: memory follows the chat model's concurrency, not the phase's."""
        async with self.budget.admit(len(item.questions)):
            image = ImageRef(image)  # read/encode/hash once for all questions
            refs = [self.references.get(q.reference_image) for q in item.questions
                    if q.modality == "image" and not q.rubric and q.reference_image_found
                    and q.reference_image and Path(q.reference_image).is_file()]
            await asyncio.to_thread(_prepare_all, [image, *refs])  # CPU work, off the event loop
            return list(await asyncio.gather(*(
                self.judge_question(q, image, item.reference_text) for q in item.questions
            )))

    async def judge_fact(self, fact: GoldFact, texts: Sequence[str], images: Sequence[Any],
                         max_chars: int = 8000, max_images: int = 4) -> Verdict:
        """Align(F^GT | R^t, R^v) of paper Eq. 12: is ``fact`` supported by the evidence?"""
        verdict = Verdict(qid=fact.id, answer=None, expected=True, modality=fact.modality)
        evidence = "\n\n".join(t.strip() for t in texts if t and t.strip())
        if len(evidence) > max_chars:
            evidence = evidence[:max_chars] + " [...]"
        # never more than the served model accepts per prompt (its preset's limit_mm_per_prompt)
        limit = getattr(self.chat, "max_images_per_prompt", None)
        shown = list(images)[:max_images if limit is None else min(max_images, limit)]
        sys_text = self.render("judge_fact_system.jinja", answer_format=self.answer_format)
        text = self.render("judge_fact.jinja", evidence_text=evidence, n_images=len(shown),
                           modality=fact.modality, fact=fact.text)
        parts: list[Any] = []
        for k, img in enumerate(shown, 1):
            parts += [f"Retrieved image {k}:", ImageRef(img, label=f"retrieved-{k}")]
        parts.append(text)
        schema = self._schema(None)
        messages = [system(sys_text), user(*parts)]
        verdict.request_sha256 = self.request_digest(messages, schema)
        value, raw, reply = await self._ask(messages, schema, None)
        return self._finish(verdict, value, raw, reply)
