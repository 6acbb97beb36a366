"""The ``simulated`` backbone's answers: each stage's reply lives beside the stage
(``Call.simulate`` in its ``SPEC``); this module reads the rendered request for them and
dispatches on the registry (:mod:`orig_local.agent.registry`), so ``llm/`` knows no schema.

The replies keep every page sentence as a fact, keep every image and write the final prompt
from the descriptors, reading the evidence out of the packaged templates' layout; a copied
prompt folder with a different layout needs its own responder. A schema no stage declares is
answered with :class:`~orig_local.llm.scripted.NoScriptedReply` (a chat error): the stage
records the failure and the run goes on, as with a backbone that cannot answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from orig_local.agent.simrequest import SimOptions, SimRequest, _prompt_of


def orig_responder(*, sufficient: bool | Callable[[str], bool] = True, max_facts: int = 12,
                   image_queries: bool = True) -> Callable[[list, Any], str]:
    """A ``(messages, schema) -> str`` reply function for the whole agent: the reply of the
    stage that declares ``schema`` (see module doc)."""
    from orig_local.agent.registry import registry
    from orig_local.llm.scripted import NoScriptedReply

    options = SimOptions(sufficient=sufficient, max_facts=max_facts, image_queries=image_queries)

    def reply(messages, schema) -> str:
        call = registry().schema_call(schema)
        if call is None:
            raise NoScriptedReply(f"the simulated backbone has no reply for schema "
                                  f"{getattr(schema, '__name__', schema)!r}: no stage declares it "
                                  "(a Call in its module's SPEC)")
        request = next(m for m in messages if m.role == "user")  # a retry appends more turns
        sim = SimRequest(text=request.text, prompt=_prompt_of(request.text), n_images=len(request.images),
                         options=options)
        return json.dumps(call.simulate(sim))

    return reply
