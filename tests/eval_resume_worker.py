"""Run one eval phase with scripted components and a per-item delay (killed by the resume test)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _eval_fakes import FakeAgent, FakeGenerator, scripted_judge  # noqa: E402

from orig_local.evaluation.loaders import load_benchmark  # noqa: E402
from orig_local.evaluation.phases.agent import run_agent_phase  # noqa: E402
from orig_local.evaluation.phases.generate import run_generate_phase  # noqa: E402
from orig_local.evaluation.phases.judge import run_judge_phase  # noqa: E402


def main(bench: str, run_dir: str, phase: str, delay: float) -> None:
    items = load_benchmark("jsonl", bench)
    if phase == "agent":
        run_agent_phase(items, Path(run_dir), FakeAgent(delay), progress=False)
    elif phase == "generate":
        run_generate_phase(items, Path(run_dir), FakeGenerator(delay), progress=False)
    else:
        run_judge_phase(items, Path(run_dir), scripted_judge(latency_s=delay), concurrency=1, progress=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))
