"""Execute a study's schedule: servers up and down, one ``orig eval`` process per phase, the
report, and an exit status that says whether everything finished.

Exit status: 0 every phase of every run finished with no failed item; 1 some items or phases
failed (the status table says which; rerun to resume, ``--retry-failed`` to redo failed rows);
2 the plan is wrong, or a server cannot start or dies (raised as :class:`~orig_local.errors.OrigError`);
130 interrupted (Ctrl-C or SIGTERM: the running phase is stopped, then the server).

Whatever happens, nothing is left running: the phase process and the server are stopped in
``finally`` blocks, SIGTERM is turned into the same path as Ctrl-C, and both kinds of child
get a parent-death signal (:mod:`orig_local.study.guard`) for the one case no ``finally``
covers — the study itself being SIGKILLed.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from orig_local.errors import PreflightError, UsageError
from orig_local.evaluation.rundir import phase_file
from orig_local.study.commands import eval_command, report_command
from orig_local.study.folder import EventLog, StudyLock, running_study
from orig_local.study.plan import Plan, RunSpec
from orig_local.study.progress import RowCounter, wait_with_progress
from orig_local.study.schedule import (
    CopyStep,
    GenerateGroupStep,
    PhaseStep,
    ServerStep,
    StopStep,
    build_schedule,
    render_schedule,
)
from orig_local.study.servers import StudyServer
from orig_local.study.status import PhaseCounts, select_ids, status_table, study_status

# `orig eval` exit statuses (see docs/evaluation.md); anything else is a failure too.
EXIT_OK, EXIT_ITEMS_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class StudyInterrupted(BaseException):
    """Ctrl-C or SIGTERM: a BaseException, so no ``except Exception`` on the way swallows it."""


def stop_process_group(proc: subprocess.Popen, grace_s: float = 30.0) -> None:
    """SIGINT (the phase writes its last row and exits), then SIGTERM, then SIGKILL."""
    from orig_local.llm.local_server import stop_process_group as stop_group

    stop_group(proc, ((signal.SIGINT, grace_s), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)))


class StudyRunner:
    def __init__(self, plan: Plan, *, retry_failed: bool = False, echo: Callable[[str], None] = print):
        self.plan, self.retry_failed, self.echo = plan, retry_failed, echo
        self.out = plan.out_dir
        self.events = EventLog(self.out / "study.jsonl")
        self.logs = self.out / "logs"
        self.blocked: dict[str, str] = {}  # run label -> why its later phases are skipped
        self.failures: list[str] = []
        self.server: StudyServer | None = None
        self.child: subprocess.Popen | None = None
        self.progress_interval_s = 30.0  # a progress line at most this often while a phase runs
        self.interrupted: str | None = None  # the signal that asked the study to stop

    def _interrupt(self, signum, frame) -> None:
        self.interrupted = signal.Signals(signum).name
        raise StudyInterrupted(self.interrupted)

    def _check_interrupted(self) -> None:
        """Raise if a signal came. Its exception alone is not enough: raised inside code whose
        exceptions Python ignores (the at-fork hooks that run right after Popen forks a phase,
        seen as "Exception ignored in: _releaseLock"), it is lost, and the study ran to its end
        with exit 1 instead of stopping with 130."""
        if self.interrupted:
            raise StudyInterrupted(self.interrupted)

    # ------------------------------------------------------------------ steps
    def phase_env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.plan.gpus.devices:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(d) for d in self.plan.gpus.devices)
        return env

    def run_command(self, cmd: list[str], log_path: Path, progress: RowCounter | None = None, **event) -> int:
        from orig_local.study.guard import set_parent_death_signal

        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as log:
            log.write(f"\n$ {shlex.join(cmd)}\n".encode())
            log.flush()
            # Own process group: Ctrl-C reaches the study only, which stops the phase in order
            # (SIGINT, then SIGTERM, then SIGKILL) before it stops the server.
            self.child = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.phase_env(),
                                          start_new_session=True, preexec_fn=set_parent_death_signal)
            todo, label = event.get("todo"), event.get("phase", "items")
            if event:
                self.events.write(event.pop("event"), child_pid=self.child.pid, **event)
            try:
                if progress is None:
                    while (rc := self._wait_child(0.5)) is None:
                        pass
                    return rc
                return wait_with_progress(self._wait_child, progress, todo, self.echo, label, self.progress_interval_s)
            finally:
                stop_process_group(self.child)
                self.child = None

    def _wait_child(self, timeout: float) -> int | None:
        assert self.child is not None
        self._check_interrupted()
        try:
            return self.child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def run_phase(self, step: PhaseStep) -> None:
        run, phase = step.run, step.phase
        if run.label in self.blocked:
            self.echo(f"    skip {phase} of {run.label}: {self.blocked[run.label]}")
            self.events.write("phase_skipped", run=run.label, phase=phase, why=self.blocked[run.label])
            return
        url = None
        if self.server is not None:
            if not self.server.alive():
                raise PreflightError(f"the {self.server.role} server for {self.server.preset_name} exited "
                                     f"(code {self.server.exit_code()}) during the study",
                                     hint=f"see {self.server.log_path}")
            url = self.server.base_url
        cmd = eval_command(self.plan, run, phase, server_url=url, retry_failed=self.retry_failed)
        log_path = self.logs / f"{run.label}.{phase}.log"
        self.echo(f"    {phase:<9} {run.label} ...")
        started = time.monotonic()
        judge_name = self.plan.judge.name if phase in ("judge", "retrieval") else None
        rows = RowCounter(phase_file(self.plan.run_dir(run), phase, judge_name))
        rc = self.run_command(cmd, log_path, rows, event="phase_start", run=run.label, phase=phase,
                              todo=step.todo, command=cmd)
        seconds = round(time.monotonic() - started, 1)
        self.events.write("phase_end", run=run.label, phase=phase, rc=rc, seconds=seconds)
        if rc in (EXIT_INTERRUPTED, -signal.SIGINT):
            raise StudyInterrupted(f"{phase} of {run.label} was interrupted")
        self.outcome(run, phase, rc, log_path, seconds=seconds)

    def run_generate_group(self, step: GenerateGroupStep) -> None:
        """Every run's generate phase of one generator in one process, the generator loaded
        once (per distinct settings) and unloaded at the end; outcomes per run, as orig eval's."""
        from orig_local.study.commands import generate_group_command, generate_job

        runs = []
        for sub in step.group:
            if sub.run.label in self.blocked:
                self.echo(f"    skip generate of {sub.run.label}: {self.blocked[sub.run.label]}")
                self.events.write("phase_skipped", run=sub.run.label, phase="generate", why=self.blocked[sub.run.label])
            else:
                runs.append(sub.run)
        if not runs:
            return
        self.logs.mkdir(parents=True, exist_ok=True)
        job_path = self.logs / f"generate-{step.model}.job.json"
        results_path = self.logs / f"generate-{step.model}.results.json"
        job_path.write_text(json.dumps(generate_job(self.plan, runs, self.retry_failed), indent=1), encoding="utf-8")
        results_path.unlink(missing_ok=True)
        log_path = self.logs / f"generate-{step.model}.log"
        self.echo(f"    generate  {step.model}: {len(runs)} run(s) in one process ...")
        started = time.monotonic()
        rc = self.run_command(generate_group_command(job_path, results_path), log_path, event="generate_group_start",
                              model=step.model, runs=[r.label for r in runs])
        if rc in (EXIT_INTERRUPTED, -signal.SIGINT):
            raise StudyInterrupted(f"generation with {step.model} was interrupted")
        try:
            results = json.loads(results_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            results = {"runs": {}}
        self.events.write("generate_group_end", model=step.model, rc=rc, loads=results.get("loads"),
                          seconds=round(time.monotonic() - started, 1))
        for run in runs:
            outcome = results["runs"].get(run.label, {"rc": 3, "error": f"not finished (the generate process "
                                                                    f"exited with status {rc})"})
            self.events.write("phase_end", run=run.label, phase="generate", rc=outcome["rc"])
            self.outcome(run, "generate", outcome["rc"], log_path, outcome.get("error"))
        self.echo(f"    generate  {step.model}: done, loaded {results.get('loads', '?')} time(s) "
                  f"({time.monotonic() - started:.0f} s)")

    def outcome(self, run: RunSpec, phase: str, rc: int, log_path: Path, error: str | None = None,
                seconds: float | None = None) -> None:
        """Book a phase's exit status (orig eval's meaning) for a run."""
        took = f" ({seconds} s)" if seconds is not None else ""
        if rc == EXIT_OK:
            self.echo(f"    {phase:<9} {run.label}: ok{took}")
        elif rc == EXIT_ITEMS_FAILED:
            self.failures.append(f"{run.label}/{phase}: some items failed")
            self.echo(f"    {phase:<9} {run.label}: some items failed{took}; log {log_path}")
        else:  # usage/preflight error, a crash, a kill: the run cannot go on
            why = error or {EXIT_USAGE: "config or preflight error"}.get(rc, f"exit status {rc}")
            self.blocked[run.label] = f"{phase} failed ({why})"
            self.failures.append(f"{run.label}/{phase}: {why}")
            self.echo(f"    {phase:<9} {run.label}: FAILED ({why}); log {log_path}:\n{_tail(log_path)}")

    def copy_agent(self, step: CopyStep) -> None:
        from orig_local.study.share import copy_agent_rows

        run, source = step.run, step.source
        if source.label in self.blocked:
            self.blocked[run.label] = f"shares the agent phase of {source.label}, which failed"
            self.echo(f"    skip agent of {run.label}: {self.blocked[run.label]}")
            return
        counts = copy_agent_rows(self.plan.run_dir(source), self.plan.run_dir(run), self.ids, self.retry_failed)
        self.events.write("agent_copied", run=run.label, source=source.label, **counts)
        self.echo(f"    agent     {run.label}: {counts['copied']} row(s) shared from {source.label}")

    def start_server(self, step: ServerStep) -> None:
        self.echo(f"start {step.role} server {step.model} ...")
        server = StudyServer(self.plan, step.model, step.role, self.logs / f"server-{step.role}-{step.model}.log")
        self.events.write("server_start", role=step.role, model=step.model)
        started = time.monotonic()
        self.server = server
        try:
            server.start()
        except BaseException as exc:
            if not isinstance(exc, StudyInterrupted):
                self.events.write("server_failed", role=step.role, model=step.model,
                                  error=(str(exc).splitlines() or [type(exc).__name__])[0])
            self.server = None
            raise
        self.events.write("server_ready", role=step.role, model=step.model, base_url=server.base_url,
                          seconds=round(time.monotonic() - started, 1))
        self.echo(f"  ready at {server.base_url} ({time.monotonic() - started:.0f} s)")

    def stop_server(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            server.stop()
            self.events.write("server_stop", role=server.role, model=server.preset_name)
            self.echo(f"stopped {server.role} server {server.preset_name}")

    def report(self) -> None:
        """``orig report`` over every run with judged rows, and the study's status page."""
        status = study_status(self.plan, self.ids)
        judged = [str(self.plan.run_dir(r)) for r in self.plan.runs
                  if status[r.label]["judge"].done + status[r.label]["judge"].failed]
        report_dir = self.out / "report"
        report_dir.mkdir(parents=True, exist_ok=True)
        if judged:
            self.echo("report ...")
            rc = self.run_command(report_command(self.plan, judged), self.logs / "report.log")
            self.events.write("report", rc=rc, runs=len(judged))
            if rc != 0:
                self.failures.append(f"report: exit status {rc}")
                self.echo(f"report FAILED (exit status {rc}); log {self.logs / 'report.log'}")
        write_status_page(self.plan, status, report_dir / "study.md")

    # ------------------------------------------------------------------ main
    def run(self) -> int:
        with StudyLock(self.out):
            return self._run_locked()

    def _run_locked(self) -> int:
        self.ids = select_ids(self.plan)
        if not self.ids:
            raise UsageError("the plan selects no benchmark items (check data, classes, ids, limit)")
        steps = build_schedule(self.plan, study_status(self.plan, self.ids), self.retry_failed)
        if any(isinstance(step, ServerStep) for step in steps):
            from orig_local.study.servers import preflight

            preflight(self.plan)
        self.echo(render_schedule(self.plan, steps, len(self.ids)) + "\n")
        self.events.write("study_start", plan=self.plan.name, steps=len(steps), runs=len(self.plan.runs))
        old = {s: signal.signal(s, self._interrupt) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            for step in steps:
                self._check_interrupted()
                if isinstance(step, ServerStep):
                    self.start_server(step)
                elif isinstance(step, StopStep):
                    self.stop_server()
                elif isinstance(step, PhaseStep):
                    self.run_phase(step)
                elif isinstance(step, CopyStep):
                    self.copy_agent(step)
                elif isinstance(step, GenerateGroupStep):
                    self.run_generate_group(step)
                else:
                    self.report()
        except StudyInterrupted as exc:
            self.events.write("interrupted", why=str(exc))
            self.echo(f"orig study: interrupted ({exc}); rerun the same command to resume")
            return EXIT_INTERRUPTED
        except BaseException as exc:
            self.events.write("study_failed", error=str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            raise
        finally:
            # Ignore further Ctrl-C while the children are taken down: a second one must not
            # leave a half-stopped server behind.
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                if self.child is not None:
                    stop_process_group(self.child)
                self.stop_server()
            finally:
                for s, handler in old.items():
                    signal.signal(s, handler)
        status = study_status(self.plan, self.ids)
        self.echo(status_table(self.plan, status))
        complete = all(c.complete for st in status.values() for c in st.values())
        self.events.write("study_end", complete=complete, failures=self.failures)
        if complete and not self.failures:
            self.echo(f"orig study: every run finished; report in {self.out / 'report'}")
            return EXIT_OK
        self.echo("orig study: NOT everything finished (see the table; rerun to resume, "
                  "--retry-failed to redo failed items)")
        return EXIT_ITEMS_FAILED


def _tail(path: Path, n: int = 8) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()[-n:]
    except OSError:
        return ""
    return "\n".join("      | " + line for line in lines)


def write_status_page(plan: Plan, status: dict[str, dict[str, PhaseCounts]], path: Path) -> Path:
    """The study's own page beside the report: every run's phases, failed runs marked."""
    lines = [f"# Study {plan.name or ''}", ""]
    failed = [r.label for r in plan.runs if any(c.failed for c in status[r.label].values())]
    incomplete = [r.label for r in plan.runs if r.label not in failed
                  and not all(c.complete for c in status[r.label].values())]
    if failed:
        lines += [f"**Runs with failed items** (their scores rest on fewer items; see the table, and "
                  f"rerun with --retry-failed to redo them): {', '.join(failed)}", ""]
    if incomplete:
        lines += [f"**Runs not finished**: {', '.join(incomplete)}", ""]
    if not failed and not incomplete:
        lines += ["Every phase of every run finished with no failed item.", ""]
    lines.append(status_table(plan, status, markdown=True))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def run_study(plan: Plan, *, retry_failed: bool = False, echo: Callable[[str], None] = print) -> int:
    return StudyRunner(plan, retry_failed=retry_failed, echo=echo).run()


def dry_run(plan: Plan, *, retry_failed: bool = False) -> str:
    """The schedule, without running anything. Without the benchmark data at hand (planning on
    another machine) every phase counts as pending and the item count as unknown."""
    from orig_local.errors import DataError

    try:
        ids = select_ids(plan)
    except DataError as exc:
        status = {r.label: {p: PhaseCounts(pending=1) for p in plan.phases(r)} for r in plan.runs}
        steps = build_schedule(plan, status, retry_failed)
        for step in steps:
            step.todo = 0
        return (render_schedule(plan, steps, 0).replace(" x 0 item(s)", " x ? items")
                + f"\n\n(no data: {exc.one_line()}; every phase is shown as pending)")
    steps = build_schedule(plan, study_status(plan, ids), retry_failed)
    return render_schedule(plan, steps, len(ids))


# running_study and StudyLock live in study/folder.py; importable from here as before
__all__ = ["EXIT_INTERRUPTED", "EXIT_ITEMS_FAILED", "EXIT_OK", "EXIT_USAGE", "EventLog", "StudyInterrupted", "StudyLock",
           "StudyRunner", "dry_run", "run_study", "running_study", "stop_process_group", "write_status_page"]
