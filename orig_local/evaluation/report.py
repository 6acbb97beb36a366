"""Reports derived from run folders (rebuildable any time): ``orig report RUN... --out DIR``.

Writes into ``DIR``:
  accuracy.md / .csv     Table-3 layout: rows = runs, columns = classes + PF/CC/TC + All, with
                         bootstrap CIs and error counts
  differences.md / .csv  each run minus the baseline run (paired on prompt ids, bootstrap CI)
  cost.md / .csv         per-stage means per prompt (Table 6 layout: calls, tokens, seconds, searches)
  retrieval.md / .csv    Tables 4/7 layout: iterations, retrieval acc., prompt length, references,
                         searches, extension tokens, generation acc.
  figures/classes.png    per-class bars across runs (CI error bars)
  figures/backbone_scale.png   All vs backbone size, when runs differ only in backbone size
  status.md / .csv       per run: items ok/degraded/failed per phase, stop reasons, judge errors
                         (questions and items), missing verdicts, data errors
  data_errors.md         every row that could not be scored, and why (when there are any)
  gallery/<label>.html   per prompt: image, references, final prompt, each question's verdict
  media/<label>/...      copies of the images the galleries show (the folder is self-contained:
                         copy it anywhere and every image still shows)
  report.md              all tables in one page, stand-in labels, provenance

Every table has a ``notes`` column: † = the run has failed items (its scores cover only what
ran), ‡ = rows with data errors were left out, SIMULATED / TINY = stand-in models (see
:mod:`orig_local.labels`). Runs judged by different judges (model or revision) are refused side
by side unless ``allow_mixed_judges``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orig_local.errors import UsageError
from orig_local.evaluation.gallery import GALLERY_PAGE, MEDIA_MODES, write_gallery
from orig_local.evaluation.phases.common import naming_disk_errors
from orig_local.evaluation.report_figures import _save_figure, figure_backbone_scale, figure_classes
from orig_local.evaluation.report_format import _md, _pct, _slug, _write_text, columns_for
from orig_local.evaluation.report_provenance import labels_banner, provenance_block
from orig_local.evaluation.report_runs import _mixed_judges, _RunLoader
from orig_local.evaluation.report_tables import (
    accuracy_table,
    choice_rule_note,
    write_accuracy,
    write_cost,
    write_data_errors,
    write_differences,
    write_retrieval,
    write_status,
)
from orig_local.evaluation.results import RunResults
from orig_local.evaluation.run_rows import ReadBenchmark
from orig_local.evaluation.scoring import ErrorPolicy


def build_report(run_dirs: Sequence[str | Path], out: str | Path | None = None, *, judge_name: str | None = None,
                 baseline: str | Path | None = None, n_boot: int = 1000, ci: float = 0.95, seed: int = 0,
                 errors: ErrorPolicy = "exclude", gallery: bool = True, allow_mixed_judges: bool = False,
                 data: str | Path | None = None, benchmark: str | None = None,
                 ids: Sequence[str] | None = None, classes: Sequence[str] | None = None,
                 media_mode: str = "copy", page_size: int = GALLERY_PAGE,
                 read: ReadBenchmark | None = None) -> dict[str, Path]:
    """Write every table, figure and gallery for ``run_dirs`` into ``out`` (default
    ``<run>/report`` for one run). ``judge_name`` may list several judges ("default,qwen7b")
    to compare them side by side. ``data``/``benchmark``: where the benchmark is (default:
    run.json's), for checking verdicts against its question lists. ``ids``/``classes``
    restrict the tables (unknown ones are an error). ``media_mode``/``page_size``: how galleries
    show images and how many prompts a gallery page holds (:func:`write_gallery`). ``read``: the
    benchmark as ``orig eval`` already read it. Returns the written paths by name.

    Memory: with several runs, each run's rows are dropped once scored (:meth:`RunResults.compact`)
    and galleries reload one run at a time: a study's report does not grow with its runs.

    Nothing is written (no folder created) when a run folder is missing or unreadable, or when
    runs judged by different judges would be compared without ``allow_mixed_judges``; a full
    disk while writing is one :class:`DiskWriteError` naming the file.

    Example (the bundled 3-item mini benchmark with tiny random-weight models: the numbers
    test the machinery only, and the report says so)::

        >>> import tempfile
        >>> from pathlib import Path
        >>> from orig_local import load_config
        >>> from orig_local.evaluation import build_report, load_benchmark, run_phases
        >>> from orig_local.evaluation.data import mini_path
        >>> config = load_config(["offline"], ["agent.condition=direct", "progress=false"])
        >>> run = Path(tempfile.mkdtemp()) / "direct"
        >>> summaries = run_phases(config, run, load_benchmark("jsonl", mini_path()))
        >>> [(s.phase, s.failed) for s in summaries]
        [('agent', 0), ('generate', 0), ('judge', 0)]
        >>> paths = build_report([run])
        >>> "tiny random-weight models" in paths["report"].read_text()
        True
    """
    if not run_dirs:
        raise UsageError("no run folder given", hint="orig report RUN [RUN ...]")
    if media_mode not in MEDIA_MODES:
        raise UsageError(f"--media {media_mode!r}: use one of {', '.join(MEDIA_MODES)}")
    runs, loader, mixed = _load_runs(run_dirs, judge_name, errors, data, benchmark, ids, classes,
                                     allow_mixed_judges, read)
    out, base = _report_folder(out, len(run_dirs), runs, baseline)
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):  # same folder name in different places
        for k, r in enumerate(runs):
            r.label = f"{r.label}#{k + 1}"
    with naming_disk_errors(out):
        written = _write_tables(runs, base, out, mixed, n_boot, ci, seed)
        if gallery:
            written.update(_write_galleries(runs, loader, out, media_mode, page_size))
            written["sections"].append("Galleries: " + ", ".join(
                f"[{r.label}](gallery/{_slug(r.label)}.html)" for r in runs) + "\n")
        sections = written.pop("sections") + ["## Provenance\n"] + [provenance_block(r) for r in runs]
        _write_text(out / "report.md", "\n".join(sections))
    written["report"] = out / "report.md"
    return written


def _load_runs(run_dirs: Sequence[str | Path], judge_name: str | None, errors: ErrorPolicy,
               data: str | Path | None, benchmark: str | None, ids: Sequence[str] | None,
               classes: Sequence[str] | None,
               allow_mixed_judges: bool,
               read: ReadBenchmark | None = None) -> tuple[list[RunResults], _RunLoader, str | None]:
    """Every run x judge to report on, the loader (galleries reload through it) and the
    judges' mismatch, if any; refuses runs judged differently unless ``allow_mixed_judges``."""
    # Several judges (comma-separated names, "default" = judge.jsonl): one row per run x judge.
    names = [None if n in ("", "default") else n for n in judge_name.split(",")] if judge_name else [None]
    loader = _RunLoader(errors, data, benchmark, ids, classes, compact=len(run_dirs) * len(names) > 1, read=read)
    runs = [loader.load(d, name, f" [{name or 'default'}]" if len(names) > 1 else "")
            for d in run_dirs for name in names]
    loader.check_selection()
    # One run whose rows come from several judges is warned about in its Status; several runs
    # judged differently must not stand side by side unless asked for.
    mixed = _mixed_judges(runs) if len(names) == 1 and len(runs) > 1 else None
    if mixed and not allow_mixed_judges:
        raise UsageError(f"runs were judged by different judges ({mixed}); their scores are not comparable",
                         hint="report them separately, rejudge with one judge, or pass --allow-mixed-judges")
    return runs, loader, mixed


def _report_folder(out: str | Path | None, n_dirs: int, runs: list[RunResults],
                   baseline: str | Path | None) -> tuple[Path, RunResults]:
    """The report folder, created once every argument has been checked (so a bad ``baseline``
    creates nothing), and the baseline run."""
    if out is None:
        if n_dirs != 1:
            raise UsageError("several runs: pass --out DIR for the comparison report")
        out = runs[0].dir / "report"
    out = Path(out)
    base = _baseline_run(runs, baseline)  # before anything is written
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the report folder {out}: {exc.strerror or exc}",
                         hint="pass --out a folder you can write") from exc
    return out, base


def _baseline_run(runs: list[RunResults], baseline: str | Path | None) -> RunResults:
    """The run the differences are taken against: ``baseline`` when given (and there is more
    than one run), else the first."""
    if baseline is None or len(runs) <= 1:
        return runs[0]
    base = next((r for r in runs if r.dir.resolve() == Path(baseline).resolve()), None)
    if base is None:
        raise UsageError(f"--baseline {baseline} is not one of the runs",
                         hint="runs: " + ", ".join(str(r.dir) for r in runs))
    return base


def _write_galleries(runs: list[RunResults], loader: _RunLoader, out: Path, media_mode: str,
                     page_size: int) -> dict[str, Path]:
    """One gallery per run; a compacted run is reloaded for it (one run's rows at a time)."""
    # one call per run: its reloaded rows die with the call. A loop variable kept the previous
    # run's rows alive while the next one loaded (two runs' rows at the peak: +760 MB at 50k items)
    return {f"gallery:{r.label}": _write_gallery(r, loader, out, media_mode, page_size) for r in runs}


def _write_gallery(run: RunResults, loader: _RunLoader, out: Path, media_mode: str, page_size: int) -> Path:
    full = run if not run.compacted else loader.reload(run)
    return write_gallery(full, out / "gallery" / f"{_slug(run.label)}.html", out / "media" / _slug(run.label),
                         media_mode=media_mode, page_size=page_size)


def _write_tables(runs: list[RunResults], base: RunResults, out: Path, mixed: str | None,
                  n_boot: int, ci: float, seed: int) -> dict:
    """Every table and figure; ``written["sections"]`` holds report.md's text so far."""
    written: dict = {}
    sections = ["# FIG-Eval report\n"]
    banner = labels_banner(runs)
    if banner:
        sections.append(banner)
    sections.append("Runs: " + ", ".join(f"`{r.label}` ({r.dir})" for r in runs) + "\n")
    if mixed:
        sections.append(f"> **Mixed judges** (allowed with --allow-mixed-judges): {mixed}. "
                        "Differences between these runs include the judges' differences.\n")
    sections += ["## Status\n", write_status(runs, out)]
    written["status"] = out / "status.md"
    errors_md = write_data_errors(runs, out)
    if errors_md:
        sections += ["## Data errors\n", errors_md]
        written["data_errors"] = out / "data_errors.md"
    table = accuracy_table(runs, n_boot, ci, seed)  # one bootstrap: accuracy.md, figures and results.json
    sections += ["## Accuracy\n", write_accuracy(runs, out, n_boot, ci, seed, table=table)]
    written["accuracy"] = out / "accuracy.md"
    if len(runs) > 1:
        sections += ["## Differences\n", write_differences(runs, base, out, n_boot, ci, seed)]
        written["differences"] = out / "differences.md"
    from orig_local.evaluation.results_file import write_results

    written.update(write_results(runs, out, table, n_boot=n_boot, ci=ci, seed=seed,
                                 baseline=base if len(runs) > 1 else None, classes=columns_for(runs)))
    sections += ["## Retrieval\n", write_retrieval(runs, out), "## Cost\n", write_cost(runs, out)]
    written["retrieval"], written["cost"] = out / "retrieval.md", out / "cost.md"
    fig = figure_classes(runs, out / "figures" / "classes.png", n_boot, ci, seed, table=table)
    if fig:
        written["fig_classes"] = fig
        sections.append("![per-class accuracy](figures/classes.png)\n")
    fig = figure_backbone_scale(runs, out / "figures" / "backbone_scale.png", n_boot, ci, seed, table=table)
    if fig:
        written["fig_backbone"] = fig
        sections.append("![backbone scale](figures/backbone_scale.png)\n")
    written["sections"] = sections
    return written


# The report's parts live in report_format / report_tables / report_figures / report_provenance /
# report_runs; these names stay importable from here (older imports, the seeds report).
__all__ = ["_md", "_pct", "_save_figure", "accuracy_table", "build_report", "choice_rule_note",
           "columns_for", "figure_backbone_scale", "figure_classes", "write_gallery"]
