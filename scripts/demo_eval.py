#!/usr/bin/env python
"""FIG-Eval harness demo, fully offline: the bundled 3-item mini benchmark through every phase
(agent with the tiny backbone + local demo corpus, tiny generator, tiny judge) for two
conditions, then the comparison report (Markdown table, figure, HTML gallery).

    python scripts/demo_eval.py --out out/demo-eval [--conditions direct,orig] [--quiet]

The tiny models have random weights (the judge answers by colour), so the numbers exercise the
machinery, not ORIG's quality. Conditions that use a backbone run on the SIMULATED backbone by
default (it answers every agent stage from the evidence in the request): the tiny random-weight
backbone (``--backbone tiny``) replies noise, so its items are honestly *failed* (no image, no
score). Rerunning resumes: finished items are skipped.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out/demo-eval"))
    parser.add_argument("--conditions", default="direct,orig", help="comma-separated agent conditions")
    parser.add_argument("--generator", help="generator preset (default: the offline config's, else "
                        "tiny-qwen-image)")
    parser.add_argument("--backbone", choices=["simulated", "tiny"], default="simulated",
                        help="simulated (default): scripted answers from the evidence; tiny: the tiny "
                        "random-weight model, whose noise replies make the agent items fail")
    parser.add_argument("--bootstrap", type=int, default=200)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    logging.basicConfig(level="WARNING" if args.quiet else "INFO", format="%(levelname)s %(name)s: %(message)s")

    from orig_local.config import load_config
    from orig_local.evaluation.data import mini_path
    from orig_local.evaluation.loaders import load_benchmark
    from orig_local.evaluation.orchestrate import run_phases
    from orig_local.evaluation.phases import default_phases
    from orig_local.evaluation.report import build_report
    from orig_local.paths import tiny_models_dir
    from orig_local.tiny.build import build_all

    build_all(tiny_models_dir())  # idempotent: only missing tiny models are built
    items = load_benchmark("jsonl", mini_path())
    runs = []
    for condition in [c.strip() for c in args.conditions.split(",") if c.strip()]:
        config = load_config("offline", [
            f"agent.condition={condition}", "eval.benchmark=jsonl", f"eval.data={mini_path()}",
            f"eval.label={condition}", f"cache_dir={args.out / 'cache'}",
        ])
        config.progress = not args.quiet
        if args.generator or not config.generator.preset:
            config.generator.preset = args.generator or "tiny-qwen-image"
        if args.backbone == "simulated" and config.agent.spec.uses_backbone:
            config.backbone.backend = "simulated"
            print(f"{condition}: SIMULATED backbone — not model output")
        phases = default_phases(config)
        run_dir = args.out / condition
        for summary in run_phases(config, run_dir, items, phases):
            logging.getLogger("demo_eval").info("%s", summary)
            if summary.failed_total:
                print(f"{condition}: {summary.phase}: {summary.failed_total} item(s) failed")
        runs.append(run_dir)
    written = build_report(runs, args.out / "report", n_boot=args.bootstrap)
    print(Path(written["accuracy"]).read_text(encoding="utf-8"))
    print(f"table:   {written['accuracy']}")
    print(f"figure:  {written.get('fig_classes')}")
    for name, path in written.items():
        if name.startswith("gallery:"):
            print(f"gallery: {path}")
    print(f"report:  {written['report']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
