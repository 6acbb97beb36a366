"""The report's figures (matplotlib, imported only when a figure is drawn): per-class accuracy
across runs, and All accuracy against backbone size."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from orig_local.evaluation.items import CLASS_ABBREV, CONCEPTS
from orig_local.evaluation.report_format import notes_cell
from orig_local.evaluation.report_tables import AccuracyTable, accuracy_table
from orig_local.evaluation.results import RunResults
from orig_local.evaluation.scoring import bootstrap_ci, table_classes, table_row


def figure_classes(runs: Sequence[RunResults], path: Path, n_boot: int, ci: float, seed: int,
                   table: AccuracyTable | None = None) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols, rows = table or accuracy_table(runs, n_boot, ci, seed)
    # classes without data in any run are dropped from the figure (kept in the tables)
    cols = [c for c in cols if c not in CONCEPTS and any(not math.isnan(r["cells"][c][0]) for r in rows)]
    if not cols:
        return None
    x = np.arange(len(cols))
    width = 0.8 / max(len(rows), 1)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(cols) + 2), 3.6))
    for k, r in enumerate(rows):
        vals = np.array([r["cells"][c][0] for c in cols]) * 100
        lo = np.array([r["cells"][c][1] for c in cols]) * 100
        hi = np.array([r["cells"][c][2] for c in cols]) * 100
        err = None if not n_boot else np.nan_to_num(np.vstack([vals - lo, hi - vals]), nan=0.0).clip(min=0)
        marks = notes_cell(runs[k])
        pos = x + (k - (len(rows) - 1) / 2) * width
        have = ~np.isnan(vals)  # no data is not 0 %: no bar, and said so
        colour = f"C{k % 10}"  # explicit: a run without any bar still gets its own legend colour
        label = r["label"] + (f" {marks}" if marks else "")
        if have.any():
            ax.bar(pos[have], vals[have], width, yerr=None if err is None else err[:, have], capsize=2,
                   color=colour, label=label)
        else:  # one zero-height bar: the run keeps its legend entry and colour
            ax.bar(pos[:1], [0.0], width, color=colour, label=label)
        for xp in pos[~have]:
            ax.text(xp, 1, "no data", rotation=90, ha="center", va="bottom", fontsize=7, color=colour)
    ax.set_xticks(x, [CLASS_ABBREV.get(c, c) for c in cols])
    ax.set_xlim(-0.5, len(cols) - 0.5)
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 100)
    return _save_figure(fig, ax, path)


def figure_backbone_scale(runs: Sequence[RunResults], path: Path, n_boot: int, ci: float, seed: int,
                          table: AccuracyTable | None = None) -> Path | None:
    """All vs backbone size (7B/32B/72B), one line per (condition, generator). ``table``: the
    accuracy table, whose All interval is reused for runs scored over the same classes."""
    sized = [r for r in runs if r.meta.get("backbone_size_b")]
    if len({r.meta["backbone_size_b"] for r in sized}) < 2:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups: dict[str, list] = {}
    for r in sized:
        key = f"{r.meta.get('condition', '?')} / {r.meta.get('generator') or '?'}"
        point = table_row(r.prompts)["All"]
        lo, hi = _all_interval(r, runs, table, n_boot, ci, seed) if n_boot else (point, point)
        groups.setdefault(key, []).append((r.meta["backbone_size_b"], point, lo, hi))
    fig, ax = plt.subplots(figsize=(4.8, 3.4))
    for key, pts in sorted(groups.items()):
        pts.sort()
        xs = [p[0] for p in pts]
        ys = [100 * p[1] for p in pts]
        err = [[100 * (p[1] - p[2]) for p in pts], [100 * (p[3] - p[1]) for p in pts]]
        ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=key)
    ax.set_xscale("log")
    sizes = sorted({r.meta["backbone_size_b"] for r in sized})
    ax.set_xticks(sizes, [f"{s:g}B" for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("backbone size")
    ax.set_ylabel("All accuracy (%)")
    return _save_figure(fig, ax, path)


def _all_interval(run: RunResults, runs: Sequence[RunResults], table: AccuracyTable | None, n_boot: int, ci: float, seed: int) -> tuple[float, float]:
    """The All interval of ``run`` over its own classes: the accuracy table's when that table
    used the same classes (same bootstrap, same numbers), else a bootstrap of its own."""
    if table is not None and table_classes(run.prompts) == table[0][: len(table[0]) - len(CONCEPTS) - 1]:
        cells = table[1][next(k for k, r in enumerate(runs) if r is run)]["cells"]["All"]
        return (cells[1], cells[2])
    return bootstrap_ci(run.prompts, n_boot=n_boot, ci=ci, seed=seed)["All"]


def _save_figure(fig, ax, path: Path) -> Path:
    """The finishing touches both figures share: legend, no top/right frame, saved, closed.
    The legend sits below the axes, so it can never hide a bar or a point."""
    import matplotlib.pyplot as plt

    handles, _ = ax.get_legend_handles_labels()
    legend = ax.legend(fontsize=8, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.14),
                       ncol=min(max(len(handles), 1), 3))
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_extra_artists=[legend], bbox_inches="tight")
    plt.close(fig)
    return path
