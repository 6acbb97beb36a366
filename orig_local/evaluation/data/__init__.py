"""Package data: the 3-item mini benchmark (``mini.jsonl``, our JSONL format) and its drawn
reference images, written by ``scripts/make_eval_mini.py``."""

from pathlib import Path

DATA_DIR = Path(__file__).parent


def mini_path() -> Path:
    return DATA_DIR / "mini.jsonl"
