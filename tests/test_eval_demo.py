"""scripts/demo_eval.py end to end (tiny backbone, local corpus, tiny generator, tiny judge)."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_demo_eval_writes_table_figure_gallery(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "demo_eval.py"), "--out", str(out), "--quiet",
                           "--bootstrap", "50"], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = out / "report"
    table = (report / "accuracy.md").read_text()
    assert "| direct |" in table and "| orig |" in table
    assert (report / "figures" / "classes.png").stat().st_size > 1000
    page = (report / "gallery" / "orig.html").read_text()
    assert "mini_landmark" in page and "images/mini_landmark.png" in page
    for run in ("direct", "orig"):
        assert len((out / run / "judge.jsonl").read_text().splitlines()) == 3
