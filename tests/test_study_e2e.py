"""`orig study` end to end with real processes on loopback: a stand-in `vllm` (ORIG_VLLM_BIN)
that serves tiny models through the real `transformers serve`, real `orig eval` phase processes,
a real report. Two backbone presets x {direct, prompt_enhanced} x one tiny generator."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
STANDIN = Path(__file__).with_name("study_vllm_standin.py")


BROKEN = "broken"  # a run whose generator fails on every item (an argument the pipeline refuses)


def _plan(tmp: Path, **changes) -> Path:
    data = yaml.safe_load((REPO / "studies" / "tiny.yaml").read_text())
    data["data"] = str(REPO / "orig_local" / "evaluation" / "data" / "mini.jsonl")
    data["out"] = str(tmp / "study")
    data["runs"] = [{"label": BROKEN, "condition": "direct", "generator": "tiny-qwen-image",
                     "set": ["generator.call_kwargs={bogus_argument: 1}"]}]
    data["gpus"] = {"devices": [3, 5], "server_gpus": 1}  # servers get the first one only
    data.update(changes)
    path = tmp / "plan.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _env(tmp: Path, **extra) -> dict:
    wrapper = tmp / "vllm"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} {STANDIN} \"$@\"\n")
    wrapper.chmod(0o755)
    env = dict(os.environ)
    env.update({"ORIG_VLLM_BIN": str(wrapper), "STANDIN_LOG": str(tmp / "standin.jsonl"),
                "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)})
    env.update(extra)
    return env


def _study(tmp: Path, *args, env=None, **popen) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "orig_local", "study", *args], cwd=REPO,
                            env=env or _env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.is_file() else []


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan reparented to a pid 1 that does not reap stays 'Z')."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _processes_mentioning(text: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if text in cmdline and _running(int(proc.name)):
            found.append(int(proc.name))
    return found


def _assert_nothing_left(tmp: Path, timeout: float = 20.0) -> None:
    """No server the stand-in started and no phase process of this study is still running."""
    pids = [row["pid"] for row in _lines(tmp / "standin.jsonl")]
    pids += [row["child_pid"] for row in _lines(tmp / "study" / "study.jsonl") if "child_pid" in row]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in pids if _running(p)] + _processes_mentioning(str(tmp / "study"))
        if not alive:
            return
        time.sleep(0.25)
    raise AssertionError(f"processes still running after the study ended: {alive}")


def _results(out: Path) -> dict:
    """What a study produced, minus timings: final prompts, image bytes, verdicts, scores."""
    import hashlib

    results = {}
    for run in sorted(p for p in out.iterdir() if (p / "run.json").is_file()):
        for phase in ("agent", "generate", "judge"):
            for row in _lines(run / f"{phase}.jsonl"):
                key = (run.name, phase, row["id"])
                if phase == "agent":
                    results[key] = (row["final_prompt"], row.get("error"))
                elif phase == "generate":
                    image = row.get("image") and hashlib.sha256((run / row["image"]).read_bytes()).hexdigest()
                    results[key] = (image, row.get("error"))
                else:
                    results[key] = (row.get("score"), row.get("error"),
                                    [(v["qid"], v["answer"], v["error"]) for v in row.get("verdicts") or []])
    return results


RUNS = ["direct_tiny-qwen-image", "prompt-enhanced_tiny-qwen2.5-vl_tiny-qwen-image",
        "prompt-enhanced_tiny-judge_tiny-qwen-image"]


@pytest.fixture(scope="module")
def finished_study(tmp_path_factory):
    """One uninterrupted study (~35 s on 2 CPU cores), shared by the tests that read it."""
    tmp = tmp_path_factory.mktemp("study-full")
    proc = _study(tmp, str(_plan(tmp)))
    out, err = proc.communicate(timeout=600)
    return tmp, proc.returncode, out, err


def _failed(run_dir: Path) -> int:
    from orig_local.study.status import row_state

    return sum(row_state(r) == "failed" for p in ("agent", "generate", "judge") for r in _lines(run_dir / f"{p}.jsonl"))


def test_study_runs_every_phase_once_per_model_and_nothing_is_left_running(finished_study):
    tmp, rc, out, err = finished_study
    study = tmp / "study"
    for run in RUNS + [BROKEN]:  # every phase of every run has a row per selected item
        for phase in ("agent", "generate", "judge"):
            ids = [r["id"] for r in _lines(study / run / f"{phase}.jsonl")]
            assert sorted(ids) == ["mini_animal", "mini_landmark"], (run, phase)
        assert json.loads((study / run / "run.json").read_text())["label"] == run
    # honest: the broken run's items failed, the study says so (exit 1, marked in its report)
    assert _failed(study / BROKEN) == 4
    assert rc == (1 if any(_failed(study / r) for r in RUNS + [BROKEN]) else 0) == 1, out + err
    page = (study / "report" / "study.md").read_text()
    # the list names exactly the runs with failed rows (the tiny noise backbone makes
    # prompt_enhanced fail honestly too), the broken run among them
    assert "**Runs with failed items**" in page
    listed = page.split("**Runs with failed items**")[1].split("\n")[0].split("):", 1)[1]
    assert {x.strip() for x in listed.split(",")} == {r for r in RUNS + [BROKEN] if _failed(study / r)} >= {BROKEN}
    assert f"| {BROKEN} |" in page and "FAILED ITEMS |" in page.split(f"| {BROKEN} |")[1].splitlines()[0]
    # each model loaded once: one server start per backbone and one for the judge, in that order
    starts = [Path(r["model"]).name for r in _lines(tmp / "standin.jsonl")]
    assert starts == ["qwen2_5_vl", "judge", "judge"]
    assert {r["cuda_visible_devices"] for r in _lines(tmp / "standin.jsonl")} == {"3"}
    events = _lines(study / "study.jsonl")
    assert [(e["role"], e["model"]) for e in events if e["event"] == "server_start"] == [
        ("backbone", "tiny-qwen2.5-vl"), ("backbone", "tiny-judge"), ("judge", "tiny-judge")]
    # every agent phase of a backbone ran while its server was up; generation in between
    order = [(e["event"], e.get("model") or e.get("phase"), e.get("run")) for e in events
             if e["event"] in ("server_start", "server_stop", "phase_start", "generate_group_start")]
    assert order.index(("phase_start", "agent", RUNS[1])) < order.index(("server_stop", "tiny-qwen2.5-vl", None))
    # generation: ONE process for the four runs of the one generator, between the servers;
    # it loaded the generator twice: once for the three plain runs, once for the broken
    # run's different settings (generator.call_kwargs)
    gen = [i for i, o in enumerate(order) if o[0] == "generate_group_start"]
    assert len(gen) == 1 and not [o for o in order if o[0] == "phase_start" and o[1] == "generate"]
    assert order[gen[0] - 1][0] == "server_stop" and order[gen[0] + 1] == ("server_start", "tiny-judge", None)
    group = next(e for e in events if e["event"] == "generate_group_start")
    assert sorted(group["runs"]) == sorted(RUNS + [BROKEN])
    assert next(e for e in events if e["event"] == "generate_group_end")["loads"] == 2
    assert "tiny-qwen-image              x2" in out  # the dry-run estimate printed at the start says so
    # the broken run differs from the direct run only in its generator: one agent phase for both
    pair = {RUNS[0], BROKEN}
    copied = [(e["run"], e["source"]) for e in events if e["event"] == "agent_copied"]
    assert len(copied) == 1 and set(copied[0]) == pair and copied[0][0] != copied[0][1]
    assert [e["run"] for e in events if e["event"] == "phase_start" and e["phase"] == "agent" and e["run"] in pair] \
        == [copied[0][1]]
    # the report has every run side by side
    accuracy = (study / "report" / "accuracy.md").read_text()
    assert all(run in accuracy for run in RUNS)
    _assert_nothing_left(tmp)


def test_study_rerun_skips_finished_work_and_status_reads_the_run_folders(finished_study):
    tmp, rc, _, _ = finished_study
    assert rc == 1
    before = _results(tmp / "study")
    n_starts = len(_lines(tmp / "standin.jsonl"))
    proc = _study(tmp, "--dry-run", str(tmp / "plan.yaml"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "server" not in out.split("estimated model loads")[0]  # nothing left: no server planned
    assert "none (nothing left to do)" in out
    proc = _study(tmp, str(tmp / "plan.yaml"))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, out + err  # the broken run's failed items are still failed
    assert len(_lines(tmp / "standin.jsonl")) == n_starts  # no model loaded again
    assert _results(tmp / "study") == before
    proc = _study(tmp, "status", str(tmp / "plan.yaml"))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    from orig_local.study.status import row_state

    for run in RUNS + [BROKEN]:  # each cell is done/failed/pending as counted from the run's rows
        rows = {ph: [row_state(r) for r in _lines(tmp / "study" / run / f"{ph}.jsonl")]
                for ph in ("agent", "generate", "judge")}
        want = [f"{sum(s != 'failed' for s in st)}/{st.count('failed')}/0" for st in rows.values()]
        line = next(x for x in out.splitlines() if x.startswith(run + " "))
        assert line.split()[4:7] == want, (run, line)
        assert line.rstrip().endswith("FAILED ITEMS" if _failed(tmp / "study" / run) else "done"), line
    line = next(x for x in out.splitlines() if x.startswith(BROKEN + " "))
    assert line.split()[4:7] == ["2/0/0", "0/2/0", "0/2/0"]  # its generator fails every item
    line = next(x for x in out.splitlines() if x.startswith(RUNS[0] + " "))
    assert line.split()[4:7] == ["2/0/0", "2/0/0", "2/0/0"]  # direct needs no backbone: all done


def test_failing_server_stops_the_study_with_one_line_and_leaves_nothing_running(tmp_path):
    proc = _study(tmp_path, str(_plan(tmp_path)), env=_env(tmp_path, STANDIN_FAIL="1"))
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, out + err
    message = [x for x in err.splitlines() if x.startswith("orig: error:")]
    assert len(message) == 1 and "backbone server for tiny-qwen2.5-vl did not start" in message[0]
    assert "exited with code 3" in message[0] and "server-backbone-tiny-qwen2.5-vl.log" in message[0]
    assert "Traceback" not in err
    # it stopped at the first server: no later phase ran, no other server was tried
    assert len(_lines(tmp_path / "standin.jsonl")) == 1
    phases = [(e["run"], e["phase"]) for e in _lines(tmp_path / "study" / "study.jsonl") if e["event"] == "phase_start"]
    assert phases == [(BROKEN, "agent")]  # the direct agent phase (shared), before any server
    _assert_nothing_left(tmp_path)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_or_sigterm_stops_the_phase_and_the_server_and_exits_130(tmp_path, sig):
    proc = _study(tmp_path, str(_plan(tmp_path)))
    events = tmp_path / "study" / "study.jsonl"
    deadline = time.monotonic() + 120
    while not any(e["event"] == "server_ready" for e in _lines(events)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, out + err
    assert "interrupted" in out
    assert [e["event"] for e in _lines(events)][-2:] == ["interrupted", "server_stop"]
    _assert_nothing_left(tmp_path)


@pytest.mark.slow
def test_study_killed_midway_resumes_to_the_same_results(tmp_path, finished_study):
    """SIGKILL the study while the second backbone's agent phase runs (no cleanup can run):
    its server and phase die with it (parent-death signal), and a rerun finishes with the
    same rows as the uninterrupted study, without loading the first backbone again. This study
    generates with one `orig eval` per run (generation: per_run), the uninterrupted one with one
    process per generator: the rows must not depend on that either."""
    full_tmp, rc, _, _ = finished_study
    assert rc == 1
    proc = _study(tmp_path, str(_plan(tmp_path, generation="per_run")))
    events = tmp_path / "study" / "study.jsonl"
    deadline = time.monotonic() + 300
    while not any(e["event"] == "phase_start" and e["run"] == RUNS[2] for e in _lines(events)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    proc.kill()
    proc.communicate(timeout=60)
    _assert_nothing_left(tmp_path)  # orphans got SIGTERM from the kernel
    n_before = len(_lines(tmp_path / "standin.jsonl"))
    agent_done = len(_lines(tmp_path / "study" / RUNS[2] / "agent.jsonl")) == 2
    proc = _study(tmp_path, str(_plan(tmp_path, generation="per_run")))
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 1, out + err  # as the uninterrupted study: the broken run failed
    restarted = [Path(r["model"]).name for r in _lines(tmp_path / "standin.jsonl")][n_before:]
    # the first backbone's work was done: not loaded again; the second only if its phase was cut
    assert restarted == (["judge"] if agent_done else ["judge", "judge"])
    assert _results(tmp_path / "study") == _results(full_tmp / "study")
    _assert_nothing_left(tmp_path)
