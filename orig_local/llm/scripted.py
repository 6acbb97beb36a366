"""A chat model that replays canned replies: for tests and dry runs.

Replies come from a list given in code, or from ``config.script`` (a YAML list or a JSONL file
of strings). A reply may also be a callable ``(messages, schema) -> str`` so a test can answer
according to what it was asked. The latest requests are kept in ``self.requests`` (at least
``keep_requests``, at most twice that; oldest dropped first; ``self.calls`` counts them all):
this backend also
serves dry runs, cost plans and the demo over thousands of prompts, and keeping every request,
images included, grew by megabytes per prompt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import yaml

from orig_local.errors import DataError
from orig_local.llm.base import BaseChatModel, ChatConnectionError, ChatError, Completion, Message, Usage
from orig_local.llm.config import ChatConfig
from orig_local.llm.tokens import MemoCounter

Reply = str | Callable[[list[Message], object], str]


class ScriptExhausted(ChatConnectionError):
    """More requests than scripted replies (with ``cycle=False``). A backbone that answers no
    more, like a server gone: the stage that asked records it and the item fails (a transport
    failure: exit 1, ``--retry-errors`` reruns it); ``chat()`` still raises it, so a test sees
    a request it did not script."""


class NoScriptedReply(ChatError):
    """A reply function has no answer for this request (a schema it does not know): a failed
    call the stage records, like a backbone that cannot answer, not a crash of the run."""


class ScriptedChatModel(BaseChatModel):
    backend = "scripted"

    def __init__(self, config: ChatConfig, cache=None, replies: Sequence[Reply] | None = None,
                 cycle: bool = False, latency_s: float = 0.0, keep_requests: int = 64):
        super().__init__(config, cache=cache)
        if replies is None:
            replies = _load_script(config.script) if config.script else []
        self.replies = list(replies)
        self.cycle = cycle
        self.latency_s = latency_s
        self.requests: list[dict] = []
        self.keep_requests = keep_requests
        self._next = 0
        self._counter: MemoCounter | None = None  # token counts by text, made on first use

    async def _complete(self, messages, *, schema, temperature, max_tokens, logprobs) -> Completion:
        if self.latency_s:
            import asyncio

            await asyncio.sleep(self.latency_s)
        self.requests.append({"messages": messages, "schema": schema, "temperature": temperature})
        if len(self.requests) > 2 * self.keep_requests:  # trimmed in batches: O(1) per request
            del self.requests[: len(self.requests) - self.keep_requests]
        if self._next >= len(self.replies):
            if not self.cycle or not self.replies:
                self._next += 1  # each later request says its own number
                n, source = len(self.replies), f"script {self.config.script}" if self.config.script else "scripted model"
                raise ScriptExhausted(f"the {source} has {n} repl{'y' if n == 1 else 'ies'} and this is request "
                                      f"#{self._next} (one reply per request sent, retries included)")
            self._next = 0
        reply = self.replies[self._next]
        self._next += 1
        text = reply(messages, schema) if callable(reply) else reply
        return Completion(text=text, usage=Usage(await self._prompt_tokens(messages), len(text.split())))

    async def _prompt_tokens(self, messages: list[Message]) -> int:
        """As Qwen2.5-VL would count the request (real Qwen2 BPE when available, else an
        estimate). Texts counted before are remembered (:class:`~orig_local.llm.tokens.MemoCounter`);
        anything new is tokenized in a thread: a real backbone counts in its server, not on the
        agent's event loop (at 128 prompts in flight this stand-in's tokenizing was a third of
        the loop's CPU, and each hop to a thread costs the loop ~40 us)."""
        import asyncio

        from orig_local.llm.tokens import count_request, default_counter, known_request

        if self._counter is None:
            self._counter = MemoCounter(default_counter())
        known = known_request(messages, self._counter)
        if known is None:
            known = await asyncio.to_thread(count_request, messages, self._counter)
        return known.total


def _load_script(path: str) -> list[str]:
    p = Path(path)
    try:
        if p.suffix == ".jsonl":
            return [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (ValueError, yaml.YAMLError) as exc:  # JSONDecodeError is a ValueError
        raise DataError(f"{path}: the backbone script does not parse ({' '.join(str(exc).split())})") from None
    if not isinstance(data, list):
        raise DataError(f"{path}: a backbone script is a list of replies, got {type(data).__name__}",
                        hint="write one reply per list item (YAML) or per line (JSONL)")
    return [d if isinstance(d, str) else json.dumps(d) for d in data]
