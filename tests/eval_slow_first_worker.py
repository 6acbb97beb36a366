"""Run the agent phase where the first item hangs (a prompt stuck in web timeouts); killed by
tests/test_eval_completion_order.py once the other rows are on disk."""

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from _eval_fakes import FakeAgent  # noqa: E402

from orig_local.evaluation.loaders import load_benchmark  # noqa: E402
from orig_local.evaluation.phases.agent import run_agent_phase  # noqa: E402


class SlowFirstAgent:
    """item_0 takes ``slow`` seconds, every other item a few milliseconds (async, like a backbone)."""

    def __init__(self, slow: float):
        self.slow, self.fake = slow, FakeAgent()

    async def __call__(self, item):
        await asyncio.sleep(self.slow if item.id == "item_0" else 0.005)
        return self.fake(item)


if __name__ == "__main__":
    bench, run_dir, slow = sys.argv[1], sys.argv[2], float(sys.argv[3])
    run_agent_phase(load_benchmark("jsonl", bench), Path(run_dir), SlowFirstAgent(slow), concurrency=4,
                    progress=False)
