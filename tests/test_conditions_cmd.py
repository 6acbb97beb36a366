"""`orig conditions`: what scripts read instead of branching on a condition's name."""

from __future__ import annotations

import json

from orig_local.cli import main
from orig_local.conditions import CONDITIONS


def _cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_json_lists_every_condition_with_its_needs(capsys):
    rc, out, _ = _cli(capsys, "conditions", "--json")
    assert rc == 0
    rows = json.loads(out)
    assert list(rows) == list(CONDITIONS)
    for name, spec in CONDITIONS.items():
        row = rows[name]
        assert (row["uses_backbone"], row["retrieves"], row["needs_oracle"], row["enhances"]) == \
            (spec.uses_backbone, spec.retrieves, spec.needs_oracle, spec.enhances)
        assert tuple(row["modalities"]) == spec.modalities


def test_get_prints_one_shell_value(capsys):
    assert _cli(capsys, "conditions", "direct", "--get", "uses_backbone")[:2] == (0, "false\n")
    assert _cli(capsys, "conditions", "oracle", "--get", "retrieves")[:2] == (0, "false\n")
    assert _cli(capsys, "conditions", "orig", "--get", "modalities")[:2] == (0, "text,image\n")
    rc, out, _ = _cli(capsys, "conditions")  # the table names them all
    assert rc == 0 and all(name in out for name in CONDITIONS)


def test_unknown_name_or_get_without_name_is_one_line_exit_2(capsys):
    rc, out, err = _cli(capsys, "conditions", "orig_text", "--get", "retrieves")
    assert rc == 2 and out == "" and "unknown condition 'orig_text'" in err and len(err.splitlines()) == 1
    rc, out, err = _cli(capsys, "conditions", "--get", "retrieves")
    assert rc == 2 and out == "" and "needs a condition name" in err
