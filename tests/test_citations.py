"""Reference citations in every form a model writes them (issue 19 point 4)."""

from __future__ import annotations

import pytest

from orig_local.agent.citations import MENTION, cited_numbers, renumber, strip_citations


@pytest.mark.parametrize("text, three, one", [
    ("Use reference images 1 and 2 for the tower.", [1, 2], [1, 2]),
    ("As in image 2, the dome is copper.", [2], [2]),
    ("The first image shows the lantern; the third reference photo the quay.", [1, 3], [1, 3]),
    ("Match the provided photo exactly.", [], [1]),  # unnumbered: only unambiguous with one reference
    ("Reference image #3 and photos 1, 2 and 3.", [3, 1, 2, 3], [3, 1, 2, 3]),
    ("An image of 3 boats beside 2 images.", [], []),
])
def test_every_citation_form_is_read(text, three, one):
    assert cited_numbers(text, 3) == three and cited_numbers(text, 1) == one


def test_renumbering_is_canonical_and_keeps_capitals():
    text = "The first image gives the dome. Reference images 2 and 3 frame the quay; see photo #3."
    assert renumber(text, 3, {1: 3, 2: 1, 3: 2}) == (
        "Reference image 3 gives the dome. Reference images 1 and 2 frame the quay; see reference image 2.")
    assert renumber("Match the provided photo.", 1, {1: 1}) == "Match reference image 1."
    assert strip_citations("teal bands, as in reference image 2") == "teal bands, as in"


def test_any_mention_is_found_for_a_generator_without_references():
    for text in ("Like the provided photo.", "As in image 2.", "The second picture shows it.", "the reference shot"):
        assert MENTION.search(text), text
    assert not MENTION.search("An image of three boats at dusk.")
