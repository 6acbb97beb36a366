"""`orig study PLAN.yaml`: a whole study (conditions x backbones x generators) on one
workstation; `orig study status PLAN.yaml`: where it stands; `--dry-run`: the schedule."""

from __future__ import annotations

HELP = "run a study plan (many runs, servers managed, resumable); `orig study status PLAN` shows progress"


def add_arguments(parser) -> None:
    parser.add_argument("target", metavar="[status] PLAN",
                        help="plan file (YAML, see studies/); `status PLAN` prints runs x phases")
    parser.add_argument("plan_file", nargs="?", metavar="PLAN", help="the plan, after `status`")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the ordered schedule (servers, phases, model loads) and the cost plan "
                             "(ESTIMATE: calls, tokens, images, generator steps, GPU-hours); run nothing")
    parser.add_argument("--out", help="study folder (overrides the plan's `out`)")
    parser.add_argument("--tokens-per-s", action="append", metavar="[PRESET=]N",
                        help="prefill+decode tokens/s of a model's server for --dry-run's GPU-hours: N for every "
                             "model or PRESET=N, repeatable (default: what a previous run of the same "
                             "backbone recorded in its run.json)")
    parser.add_argument("--retry-failed", action="store_true",
                        help="also redo items whose rows failed (default: resume pending items only)")


def run(args) -> int:
    from orig_local.errors import UsageError
    from orig_local.study.plan import load_plan

    if args.target == "status":
        if not args.plan_file:
            raise UsageError("orig study status needs a plan: orig study status PLAN.yaml")
        from orig_local.study.status import select_ids, status_table, study_status

        plan = load_plan(args.plan_file, out=args.out)
        status = study_status(plan, select_ids(plan))
        print(status_table(plan, status))
        from orig_local.study.runner import running_study

        busy = running_study(plan.out_dir)
        if busy:
            print(f"\na study is running on {plan.out_dir} ({busy})")
        complete = all(c.complete for st in status.values() for c in st.values())
        return 0 if complete else 1  # like the study itself: did everything finish?
    if args.plan_file:
        raise UsageError(f"unexpected argument {args.plan_file!r}: orig study PLAN.yaml | orig study status PLAN.yaml")
    plan = load_plan(args.target, out=args.out)
    if args.dry_run:
        from orig_local.study.runner import dry_run

        print(dry_run(plan, retry_failed=args.retry_failed))
        from orig_local.evaluation.costplan import parse_throughput
        from orig_local.study.cost import cost_plan

        print(cost_plan(plan, parse_throughput(args.tokens_per_s)))
        return 0
    from orig_local.study.runner import run_study

    return run_study(plan, retry_failed=args.retry_failed, echo=lambda s: print(s, flush=True))
