"""`orig eval`: run a benchmark in phases (agent -> generate -> judge [-> retrieval])."""

from __future__ import annotations

HELP = "run a benchmark (FIG-Eval, JSONL, WISE, I-HallA) in resumable phases"

# Exit status: 0 every item ok (or degraded); 1 some items failed or a phase was stopped by the
# circuit breaker; 2 usage/config/preflight error (nothing written); 130 interrupted.


def _csv_list(values):
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out or None


def add_arguments(parser) -> None:
    from orig_local.cli import add_config_arguments
    from orig_local.conditions import CONDITION_NAMES
    from orig_local.evaluation.phases import PHASE_NAMES

    add_config_arguments(parser)
    from orig_local.evaluation.loaders import LOADERS

    parser.add_argument("--benchmark", help=f"benchmark loader: {', '.join(LOADERS)} (default: eval.benchmark)")
    parser.add_argument("--data", help="benchmark folder/file (FIG-Eval: the authors' repo or a flat folder)")
    parser.add_argument("--condition", choices=CONDITION_NAMES, help="paper condition (default: agent.condition)")
    parser.add_argument("--generator", help="generator preset, e.g. qwen-image")
    parser.add_argument("--backbone", help="backbone chat preset, e.g. qwen2.5-vl-72b")
    parser.add_argument("--judge", help="judge chat preset (default qwen2.5-vl-72b)")
    parser.add_argument("--judge-name", help="store verdicts as judge-<name>.jsonl (compare several judges)")
    parser.add_argument("--out", required=True, help="run folder (created; rerun to resume)")
    parser.add_argument("--phase", default="all", choices=[*PHASE_NAMES, "all"],
                        help="run one phase only (default: all phases in order)")
    parser.add_argument("--shard", help="i/n: take every n-th item starting at i, write <phase>.shard-i-of-n.jsonl")
    parser.add_argument("--limit", type=int, help="first N items only (after --classes/--ids)")
    parser.add_argument("--classes", action="append", help="comma-separated classes (sport/sports both work)")
    parser.add_argument("--ids", action="append", help="comma-separated item ids")
    parser.add_argument("--include-others", action="store_true", help="FIG-Eval: keep the 20 'others' prompts")
    parser.add_argument("--variant", choices=["base", "rewrite"], help="WISE: base prompts (default) or the legacy rewrites")
    parser.add_argument("--label", help="run name in reports (default: the folder name)")
    parser.add_argument("--retry-errors", action="store_true", help="rerun items whose row has status failed")
    parser.add_argument("--retry-degraded", action="store_true",
                        help="rerun items whose row has status failed or degraded (some replies invalid)")
    parser.add_argument("--no-report", action="store_true", help="do not write <out>/report after phase 'all'")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the cost plan (ESTIMATE: backbone calls, prefill/decode tokens, images, judge "
                             "calls, generator steps, GPU-hours) and run nothing")
    parser.add_argument("--tokens-per-s", action="append", metavar="[PRESET=]N",
                        help="prefill+decode tokens/s of a model's server for --dry-run's GPU-hours: N for every "
                             "model or PRESET=N, repeatable (default: what a previous run of the same "
                             "backbone in --out recorded in run.json)")
    parser.add_argument("--seeds", metavar="S,S,...",
                        help="several images per item: agent once, then generate+judge per seed in <out>/seed-<s>; "
                             "orig report averages over seeds (CI over prompts and seeds)")
    parser.add_argument("--images", metavar="DIR",
                        help="with --phase judge: judge images made elsewhere, one <item id>.png/.jpg per item "
                             "(imported as generate.jsonl; provenance 'external: <name>')")
    parser.add_argument("--images-name", metavar="NAME", help="the external system's name (default: DIR's name)")
    parser.add_argument("--json", action="store_true", help="print each phase summary as one JSON object (for scripts)")


def apply_flags(config, args):
    """Fold the command's flags into the config (flags win over files and --set)."""
    ev = config.eval
    if args.benchmark:
        ev.benchmark = args.benchmark
    if args.data:
        ev.data = args.data
    if args.classes:
        ev.classes = _csv_list(args.classes)
    if args.include_others:
        ev.include_others = True
    if getattr(args, "variant", None):
        ev.variant = args.variant
    if args.label:
        ev.label = args.label
    if args.judge_name:
        ev.judge_name = args.judge_name
    if args.condition:
        config.agent.condition = args.condition
    if args.generator:
        config.generator.preset = args.generator
    if args.backbone:
        config.backbone.preset = args.backbone
    if args.judge:
        config.judge.preset = args.judge
    return config


def adopt_run_meta(config, args, out) -> None:
    """Resuming or running a later phase in an existing run folder: what the run was started
    with (run.json) fills the flags not given now, so `--phase judge --out runs/x` suffices."""
    from orig_local.evaluation.rundir import read_meta

    meta = read_meta(out)
    if not meta:
        return
    if not args.condition and meta.get("condition"):
        config.agent.condition = meta["condition"]
    if not args.benchmark and meta.get("benchmark"):
        config.eval.benchmark = meta["benchmark"]
    if not args.data and not config.eval.data and meta.get("data"):
        from orig_local.evaluation.rundir import data_path

        config.eval.data = data_path(meta)  # absolute: resuming from another directory finds it
    if not args.generator and not config.generator.preset and meta.get("generator"):
        config.generator.preset = meta["generator"]
    if not args.backbone and meta.get("backbone") and not any(o.startswith("backbone.") for o in args.overrides):
        config.backbone.preset = meta["backbone"]


def _load_items(ev, ids: list[str] | None = None):
    """The benchmark, and the identity of its full item list (filters left out, so a run grown
    with a larger --limit keeps matching its data). The data is read once; the run's classes,
    each class's check and the identity are selections from that one read."""
    items, identity, _read = _read_items(ev, ids)
    return items, identity


def _read_items(ev, ids: list[str] | None = None):
    """:func:`_load_items`, and the read itself (a ``ReadBenchmark``: the final report of
    ``--phase all`` takes it instead of parsing the data again)."""
    from pathlib import Path

    from orig_local.errors import DataError, UsageError
    from orig_local.evaluation.identity import benchmark_identity
    from orig_local.evaluation.loaders import LOADERS, benchmark_options, read_benchmark, select_benchmark
    from orig_local.evaluation.run_rows import ReadBenchmark
    from orig_local.evaluation.selection import check_selection

    if ev.benchmark not in LOADERS:
        raise UsageError(f"unknown benchmark {ev.benchmark!r}; benchmarks: {', '.join(LOADERS)}")
    if not Path(ev.data).exists():
        raise DataError(f"benchmark data not found: {ev.data}", hint="pass --data PATH (a folder or file)")
    options = benchmark_options(ev)
    try:
        loaded = read_benchmark(ev.benchmark, ev.data, **options)
        every = loaded.items
        items = select_benchmark(ev.benchmark, every, ev.classes, ev.include_others)
        # A class is unknown when the loader (whose own names and aliases count) selects nothing
        # for it: never a silently smaller run.
        empty = [c for c in ev.classes or [] if not select_benchmark(ev.benchmark, every, [c], True)]
    except (OSError, ValueError, KeyError) as exc:
        if isinstance(exc, (DataError, UsageError)):
            raise
        raise DataError(f"cannot read {ev.benchmark} data at {ev.data}: {type(exc).__name__}: {exc}") from exc
    if empty:
        raise UsageError(f"unknown class(es) {', '.join(empty)}",
                         hint=f"valid classes: {', '.join(sorted({it.category for it in every}))}")
    check_selection(every, ids=ids)
    # loaded.bound: WISE's items with every protocol's questions (the binding must not depend on
    # how the items are judged: another protocol is another judge name on the same data).
    return items, benchmark_identity(ev.benchmark, str(Path(ev.data).resolve()), every, source=loaded.source,
                                     bound_items=loaded.bound), ReadBenchmark.of(ev.benchmark, ev.data, options, loaded)


def _run_seeds(config, args, items, phases, shard, identity) -> list:
    """--seeds: agent/retrieval once in <out>; generate+judge per seed in <out>/seed-<s> (agent rows
    copied), with one generator for all seeds (loaded once). The judge is built per seed's phase
    run, as orig eval always does (its async client lives in that phase's event loop)."""
    from pathlib import Path

    from orig_local.evaluation.orchestrate import build_generator, run_phases
    from orig_local.evaluation.seeds import parse_seeds, prepare_seed_run

    seeds = parse_seeds(args.seeds)
    out = Path(args.out)
    kw = dict(shard=shard, retry_errors=args.retry_errors, retry_degraded=args.retry_degraded, data_identity=identity)
    summaries = []
    own = [p for p in phases if p in ("agent", "retrieval")]
    if own:
        summaries += run_phases(config, out, items, own, **kw)
    per_seed = [p for p in phases if p in ("generate", "judge")]
    if not per_seed:
        return summaries
    generator = build_generator(config) if "generate" in per_seed else None
    base_label = config.eval.label or out.resolve().name
    try:
        for s in seeds:
            cfg = config.model_copy(deep=True)
            cfg.eval.seed = s
            cfg.eval.label = f"{base_label}/seed-{s}"
            sub = prepare_seed_run(out, s, [i.id for i in items])
            summaries += run_phases(cfg, sub, items, per_seed, generator=generator, **kw)
    finally:
        if generator is not None and hasattr(generator, "unload"):
            generator.unload()
    return summaries


def _import_external(config, args, items) -> None:
    """--images DIR: the folder's images become this run's generate rows, judged like any other."""
    from pathlib import Path

    from orig_local.errors import UsageError
    from orig_local.evaluation.external import external_label, import_images

    if args.phase != "judge":
        raise UsageError("--images judges images made elsewhere: use it with --phase judge",
                         hint=f"orig eval --phase judge --images {args.images} --out DIR ...")
    name = args.images_name or Path(args.images).resolve().name
    config.generator.preset = None  # the images' provenance is the external system, never a preset
    config.generator.model = external_label(name)
    counts = import_images(items, Path(args.out), args.images, name)
    print(f"imported {counts['imported']} image(s) from {args.images} as {external_label(name)!r}"
          + (f", {counts['kept']} already imported" if counts["kept"] else "")
          + (f"; {counts['missing']} item(s) WITHOUT an image (failed rows, not judged)" if counts["missing"] else "")
          + (f"; {counts['unused']} image(s) match no selected item" if counts["unused"] else ""))


def exit_status(summaries, command: str = "orig eval") -> int:
    """0 when no item failed; else 1, with the counts (and how to rerun them) on stderr."""
    import sys

    stopped = [s.stopped for s in summaries if s.stopped]
    # the selected items' state, not only this invocation's: rows failed earlier still count
    failed = {s.phase: s.failed_total for s in summaries if s.failed_total}
    degraded = {s.phase: s.degraded + s.earlier.get("degraded", 0) for s in summaries
                if s.degraded + s.earlier.get("degraded", 0)}
    if degraded:
        print(f"{command}: degraded items (some replies invalid): "
              + ", ".join(f"{p} {n}" for p, n in degraded.items()) + " (--retry-degraded reruns them)",
              file=sys.stderr)
    for message in stopped:
        print(f"{command}: {message}", file=sys.stderr)
    if failed:
        print(f"{command}: failed items: " + ", ".join(f"{p} {n}" for p, n in failed.items())
              + "; rerun with --retry-errors to run them again", file=sys.stderr)
    return 1 if failed or stopped else 0


def run(args) -> int:
    import json
    from pathlib import Path

    from orig_local.cli import config_from_args
    from orig_local.configbase import ConfigError
    from orig_local.errors import UsageError
    from orig_local.evaluation.orchestrate import run_phases
    from orig_local.evaluation.phases import default_phases
    from orig_local.evaluation.phases.common import parse_shard, select_items

    config = apply_flags(config_from_args(args), args)
    adopt_run_meta(config, args, Path(args.out))
    ev = config.eval
    if not ev.data:
        raise ConfigError("no benchmark data: pass --data PATH (or set eval.data)")
    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    phases = default_phases(config) if args.phase == "all" else [args.phase]
    if args.dry_run:
        print(cost_plan(config, args, phases))
        return 0
    items, identity, read = _read_items(ev, _csv_list(args.ids))
    items = select_items(items, ids=_csv_list(args.ids), limit=args.limit)
    if not items:
        raise UsageError("no items selected", hint="check --classes/--ids/--limit")
    if args.images:
        _import_external(config, args, items)
    if args.seeds:
        summaries = _run_seeds(config, args, items, phases, shard, identity)
    else:
        summaries = run_phases(config, Path(args.out), items, phases, shard=shard, retry_errors=args.retry_errors,
                               retry_degraded=args.retry_degraded, data_identity=identity)
    from orig_local.evaluation.phases.loop import summary_line

    for s in summaries:
        print(json.dumps(s.to_dict()) if args.json else summary_line(s))
    if args.phase == "all" and not args.no_report and not (shard and shard[1] > 1):
        from orig_local.evaluation.report import build_report
        from orig_local.evaluation.seeds import expand_runs, seed_report

        dirs, groups = expand_runs([args.out])  # --seeds: each seed a row, then their mean
        written = build_report(dirs, Path(args.out) / "report", judge_name=ev.judge_name, n_boot=ev.bootstrap,
                               ci=ev.ci, seed=ev.bootstrap_seed, errors=ev.judge_errors,
                               read=read)  # the data as read above: parsed once per orig eval
        print((Path(written["accuracy"])).read_text(encoding="utf-8"))
        if groups:
            print(seed_report(groups, Path(written["report"]).parent, judge_name=ev.judge_name,
                              errors=ev.judge_errors, n_boot=ev.bootstrap, ci=ev.ci, seed=ev.bootstrap_seed, read=read))
        print(f"report: {written['report']}")
    return exit_status(summaries)


def cost_plan(config, args, phases) -> str:
    """``--dry-run``: the run's cost plan (an estimate; without the data, per prompt)."""
    from pathlib import Path

    from orig_local.errors import DataError, UsageError
    from orig_local.evaluation import costplan
    from orig_local.evaluation.phases.common import select_items

    items, why = None, ""
    try:
        items, _ = _load_items(config.eval, _csv_list(args.ids))
        items = select_items(items, ids=_csv_list(args.ids), limit=args.limit)
    except (DataError, UsageError) as exc:
        why = f"\n(no data: {exc.one_line() if hasattr(exc, 'one_line') else exc}; figures are per prompt)"
    given = costplan.parse_throughput(args.tokens_per_s)
    tps, source = costplan.throughput_for(config.backbone.preset or config.backbone.model, given, [Path(args.out)])
    judge_tps, _ = costplan.throughput_for(config.judge.preset or config.judge.model, given)
    estimate = costplan.estimate(config, phases, items)
    label = f"{config.agent.condition} run -> {args.out}"
    return "\n".join(x for x in (costplan.render(label, estimate, tps, source, judge_tps), costplan.render_steps(estimate),
                                  costplan.FOOTNOTE + why) if x)
