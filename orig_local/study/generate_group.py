"""The generate phase of several runs with ONE generator instance (an internal entry point).

``python -m orig_local.study.generate_group JOB.json RESULTS.json``: the study writes the job
(the runs of one generator, each with its config overrides, and the item selection); this
process loads the generator once, runs the generate phase of each run folder in turn through
the same phase code as ``orig eval --phase generate`` (:func:`run_phases` with the generator
passed in), and unloads it at the end. A run whose generator settings differ (a ``generator.*``
override) gets its own instance: the previous one is unloaded first, so one generator holds
the GPU at a time. The process exits afterwards, which gives every byte of GPU memory back
before the judge server starts.

After each run, RESULTS.json is rewritten (temp file + rename) with that run's outcome, in
``orig eval``'s terms: 0 every item ok, 1 some items failed, 2 a config/usage error, 3 a
crash (message kept). A run the process never reached has no entry.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import traceback
from pathlib import Path

log = logging.getLogger("orig_local.study.generate_group")


def _write_json(path: Path, data: dict) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def generator_key(config) -> str:
    """Two runs can share an instance when their generator sections are equal."""
    return json.dumps(config.generator.model_dump(mode="json"), sort_keys=True)


def run_job(job: dict, results_path: Path) -> dict:
    from orig_local.config import load_config
    from orig_local.errors import OrigError
    from orig_local.evaluation.loaders import load_benchmark
    from orig_local.evaluation.orchestrate import run_phases
    from orig_local.evaluation.phases.common import select_items
    from orig_local.evaluation.rundir import read_phase
    from orig_local.generation import make_generator
    from orig_local.study.status import row_state

    items = load_benchmark(job["benchmark"], job["data"], classes=job.get("classes"),
                           include_others=job.get("include_others", False))
    items = select_items(items, ids=job.get("ids"), limit=job.get("limit"))
    ids = {it.id for it in items}
    results: dict = {"loads": 0, "runs": {}}
    generator, key = None, None
    try:
        for run in job["runs"]:
            label = run["label"]
            try:
                config = load_config(job.get("config") or [], run["overrides"])
                if generator is not None and generator_key(config) != key:
                    generator.unload()  # one generator on the GPU at a time
                    generator = None
                if generator is None:
                    log.info("loading generator %s", config.generator.preset)
                    generator = make_generator(config.generator, progress=config.progress)
                    key = generator_key(config)
                    results["loads"] += 1
                run_phases(config, Path(run["out"]), items, ["generate"], generator=generator,
                           retry_errors=job.get("retry_failed", False))
                rows = read_phase(Path(run["out"]), "generate")
                failed = sum(1 for i in ids if i in rows and row_state(rows[i]) == "failed")
                results["runs"][label] = {"rc": 1 if failed else 0, "failed": failed}
            except OrigError as exc:
                results["runs"][label] = {"rc": 2, "error": exc.one_line()}
            except Exception as exc:  # noqa: BLE001 - one run's crash must not stop the others
                traceback.print_exc()
                results["runs"][label] = {"rc": 3, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{label}: {json.dumps(results['runs'][label])}", flush=True)
            _write_json(results_path, results)
    finally:
        if generator is not None:
            generator.unload()
    return results


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m orig_local.study.generate_group JOB.json RESULTS.json", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    results = run_job(job, Path(argv[1]))
    codes = [r["rc"] for r in results["runs"].values()]
    return max(codes) if codes else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
