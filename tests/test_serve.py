"""`orig serve` (vLLM command line from presets), the server-process helper, and `orig chat`.

vLLM itself is CUDA-only and not installable here, so process handling is checked with a
stand-in `vllm` executable that records its arguments and answers /health; the flags are
checked on the real command line `--dry-run` prints."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import textwrap

import pytest
from PIL import Image

from orig_local.cli import main
from orig_local.llm.local_server import ServerProcess, ServerStartError, free_port
from orig_local.llm.serve import VLLMNotFound, find_vllm, vllm_command
from orig_local.presets import load_preset

pytestmark = pytest.mark.timeout(120)


def _flags(argv: list[str]) -> dict[str, str | bool]:
    out: dict[str, str | bool] = {}
    i = 3  # vllm serve <model>
    while i < len(argv):
        if i + 1 < len(argv) and not argv[i + 1].startswith("--"):
            out[argv[i]] = argv[i + 1]
            i += 2
        else:
            out[argv[i]] = True
            i += 1
    return out


def test_dry_run_prints_the_vllm_command(capsys):
    assert main(["serve", "--preset", "qwen2.5-vl-72b", "--port", "8123", "--dry-run"]) == 0
    argv = shlex.split(capsys.readouterr().out.strip())
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen2.5-VL-72B-Instruct"]
    flags = _flags(argv)
    assert flags["--port"] == "8123" and flags["--host"] == "127.0.0.1"
    assert flags["--tensor-parallel-size"] == "4"
    assert flags["--max-model-len"] == "32768"
    assert flags["--dtype"] == "bfloat16"
    limits = json.loads(flags["--limit-mm-per-prompt"])
    assert limits["image"] > 1  # vLLM's default for Qwen2.5-VL is one image per prompt
    # `size` is what transformers >= 5.19 asks for (min_pixels/max_pixels raise a FutureWarning)
    assert json.loads(flags["--mm-processor-kwargs"]) == {"size": {"shortest_edge": 3136, "longest_edge": 1003520}}
    assert flags["--enable-prefix-caching"] is True
    assert 0 < float(flags["--gpu-memory-utilization"]) <= 1


@pytest.mark.parametrize("name", ["qwen2.5-vl-7b", "qwen2.5-vl-32b", "qwen2.5-vl-72b", "tiny-judge"])
def test_every_chat_preset_makes_a_command(name):
    preset = load_preset(name)
    argv = vllm_command(preset, vllm_bin="/x/vllm", port=9000)
    assert argv[:3] == ["/x/vllm", "serve", preset.path]
    flags = _flags(argv)
    assert int(flags["--tensor-parallel-size"]) >= 1
    json.loads(flags["--limit-mm-per-prompt"])
    if not preset.serve.enable_prefix_caching:
        assert flags["--no-enable-prefix-caching"] is True


def test_missing_vllm_explains_how_to_install(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ORIG_VLLM_BIN", raising=False)
    assert main(["serve", "--preset", "qwen2.5-vl-7b"]) == 1
    err = capsys.readouterr().err
    assert "python -m venv ~/vllm-env && ~/vllm-env/bin/pip install vllm" in err
    assert "--vllm-bin" in err and "ORIG_VLLM_BIN" in err
    with pytest.raises(VLLMNotFound):
        find_vllm(str(tmp_path / "no-such-vllm"))


FAKE_VLLM = textwrap.dedent("""\
    #!{python}
    # Stand-in for `vllm serve`: records argv, answers GET /health, exits on SIGTERM.
    import json, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    args = sys.argv[1:]
    open({record!r}, "w").write(json.dumps(args))
    port = int(args[args.index("--port") + 1])
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()
        def log_message(self, *a): pass
    HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


@pytest.fixture
def fake_vllm(tmp_path):
    record = tmp_path / "argv.json"
    exe = tmp_path / "vllm"
    exe.write_text(FAKE_VLLM.format(python=sys.executable, record=str(record)))
    exe.chmod(0o755)
    return exe, record


@pytest.mark.parametrize("sig,rc", [(signal.SIGINT, 0), (signal.SIGTERM, 143)])
def test_orig_serve_starts_waits_for_health_and_stops_with_it(fake_vllm, sig, rc):
    exe, record = fake_vllm
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "orig_local", "serve", "--preset", "qwen2.5-vl-7b", "--port", str(port),
         "--vllm-bin", str(exe)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # SIGINT reaches it even from a background test run: tests/conftest.py
    try:
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if line.startswith("ready:"):
                break
        assert f"base_url=http://127.0.0.1:{port}/v1" in lines[-1], "".join(lines) + proc.stderr.read()
        assert "model=Qwen/Qwen2.5-VL-7B-Instruct" in lines[-1]
        args = json.loads(record.read_text())
        assert args[:2] == ["serve", "Qwen/Qwen2.5-VL-7B-Instruct"] and "--limit-mm-per-prompt" in args
        proc.send_signal(sig)
        assert proc.wait(timeout=30) == rc
    finally:
        if proc.poll() is None:
            proc.kill()
    with pytest.raises(OSError):  # the server went down with it
        import socket

        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_server_process_reports_an_early_exit_with_its_log(tmp_path):
    server = ServerProcess([sys.executable, "-c", "import sys; print('bad flag --foo'); sys.exit(3)"],
                           host="127.0.0.1", port=free_port(), model="m", log_path=tmp_path / "s.log")
    with pytest.raises(ServerStartError, match=r"(?s)code 3.*bad flag --foo"):
        server.start()


def test_server_process_times_out_and_kills(tmp_path):
    server = ServerProcess([sys.executable, "-c", "import time; time.sleep(60)"], host="127.0.0.1",
                           port=free_port(), model="m", startup_timeout_s=1.0)
    with pytest.raises(ServerStartError, match="not healthy"):
        server.start()
    assert server.process is None  # stopped


def test_orig_chat_round_trip_through_the_server(tiny_judge_server, tmp_path, capsys):
    red = tmp_path / "red.png"
    Image.new("RGB", (64, 64), (230, 20, 20)).save(red)
    rc = main(["-q", "chat", "Is this statement true? The thing is there.", "--image", str(red), "--json",
               "--role", "judge", "--logprobs", "2",
               "-s", "judge.backend=openai", "-s", f"judge.base_url={tiny_judge_server.base_url}",
               "-s", f"judge.model={tiny_judge_server.model}", "-s", "judge.preset=null",
               "-s", f"cache_dir={tmp_path / 'cache'}"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["text"] == "true" and out["prompt_tokens"] > 0 and out["completion_tokens"] > 0
    assert not out["cached"]


def test_orig_chat_missing_image(capsys):
    assert main(["chat", "hi", "--image", "/no/such.png", "--offline"]) == 2
    assert "no such image" in capsys.readouterr().err


def test_dry_run_overrides(capsys):
    assert main(["serve", "--preset", "qwen2.5-vl-72b", "--tensor-parallel-size", "2",
                 "--max-model-len", "16384", "--dry-run"]) == 0
    flags = _flags(shlex.split(capsys.readouterr().out.strip()))
    assert flags["--tensor-parallel-size"] == "2" and flags["--max-model-len"] == "16384"


# --------------------------------------------------------------------------- flags users expect


def _dry(capsys, *argv) -> list[str]:
    assert main(["serve", "--dry-run", *argv]) == 0
    return shlex.split(capsys.readouterr().out.strip())


@pytest.mark.parametrize("name", ["tiny-judge", "tiny-qwen2.5-vl"])
def test_tiny_presets_are_served_in_their_own_dtype(capsys, name):
    # without --dtype vLLM picks bf16 for these float32 random-weight models
    assert _flags(_dry(capsys, "--preset", name))["--dtype"] == load_preset(name).dtype == "float32"


def test_presets_turn_off_runaway_whitespace_in_guided_json(capsys):
    flags = _flags(_dry(capsys, "--preset", "qwen2.5-vl-7b"))
    assert json.loads(flags["--structured-outputs-config"]) == {"backend": "xgrammar", "disable_any_whitespace": True}


def test_flags_after_double_dash_are_passed_through_last(capsys):
    argv = _dry(capsys, "--preset", "qwen2.5-vl-7b", "--", "--max-num-seqs", "8", "--enforce-eager",
                "--max-model-len", "4096")
    assert argv[-5:] == ["--max-num-seqs", "8", "--enforce-eager", "--max-model-len", "4096"]
    # vLLM keeps the last value of a repeated flag: the user's wins over the preset's 32768
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--max-model-len"][-1] == "4096"


def test_flags_orig_serve_needs_cannot_hide_after_double_dash(capsys):
    assert main(["serve", "--preset", "qwen2.5-vl-7b", "--dry-run", "--", "--port", "9001"]) == 2
    assert "--port" in capsys.readouterr().err


def test_revision_reaches_vllm(capsys, tmp_path, monkeypatch):
    argv = _dry(capsys, "--preset", "qwen2.5-vl-7b", "--revision", "0123abc")
    assert _flags(argv)["--revision"] == "0123abc"
    assert "--revision" not in _dry(capsys, "--preset", "qwen2.5-vl-7b")  # null: the default branch
    # a revision pinned in a preset file
    from orig_local.paths import PRESETS_DIR

    text = (PRESETS_DIR / "qwen2.5-vl-7b.yaml").read_text().replace("revision: null", "revision: cafe42")
    (tmp_path / "qwen2.5-vl-7b.yaml").write_text(text)
    monkeypatch.setenv("ORIG_MODELS_DIR", str(tmp_path))
    assert _flags(_dry(capsys, "--preset", "qwen2.5-vl-7b"))["--revision"] == "cafe42"


def test_any_hub_model_without_a_preset(capsys):
    argv = _dry(capsys, "--model", "Qwen/Qwen2.5-VL-3B-Instruct", "--revision", "main")
    assert argv[:3] == ["vllm", "serve", "Qwen/Qwen2.5-VL-3B-Instruct"]
    assert _flags(argv)["--revision"] == "main" and "--structured-outputs-config" in argv
    assert main(["serve", "--dry-run"]) == 2
    assert "--preset" in capsys.readouterr().err


FAKE_VLLM_ENV = textwrap.dedent("""\
    #!{python}
    # Stand-in for `vllm serve` that also records whether it got an API key, and how.
    import json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    args = sys.argv[1:]
    open({record!r}, "w").write(json.dumps({{"argv": args, "key": os.environ.get("VLLM_API_KEY")}}))
    print("vllm starting with args", args, flush=True)  # what vLLM's own log shows
    port = int(args[args.index("--port") + 1])
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/health" else 404); self.end_headers()
        def log_message(self, *a): pass
    HTTPServer(("127.0.0.1", port), H).serve_forever()
""")


def _serve_until_ready(argv, env=None) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-m", "orig_local", "serve", *argv], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("use it with:"):
            break
    return proc, lines


def test_api_key_reaches_vllm_by_environment_only_and_judge_presets_hint_the_judge(tmp_path):
    record = tmp_path / "run.json"
    exe = tmp_path / "vllm"
    exe.write_text(FAKE_VLLM_ENV.format(python=sys.executable, record=str(record)))
    exe.chmod(0o755)
    log = tmp_path / "vllm.log"
    secret = "sk-serve-secret-8c1f"
    env = {**os.environ, "MY_SERVE_KEY": secret}
    proc, lines = _serve_until_ready(["--preset", "tiny-judge", "--port", str(free_port()), "--vllm-bin", str(exe),
                                      "--log-file", str(log), "--api-key-env", "MY_SERVE_KEY"], env=env)
    try:
        out = "".join(lines)
        assert "use it with: -s judge.base_url=http://127.0.0.1:" in out, out + proc.stderr.read()
        assert "-s judge.preset=tiny-judge" in out and "-s judge.api_key_env=MY_SERVE_KEY" in out
        seen = json.loads(record.read_text())
        assert seen["key"] == secret  # vLLM requires it...
        assert secret not in json.dumps(seen["argv"])  # ...but it is on no command line
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:  # never leave a server behind a failed test
            proc.kill()
            raise
    assert secret not in out + proc.stdout.read() + proc.stderr.read() + log.read_text()


def test_missing_api_key_variable_is_a_one_line_error(capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    assert main(["serve", "--preset", "tiny-judge", "--api-key-env", "NO_SUCH_KEY_VAR", "--vllm-bin", "/bin/true"]) == 2
    assert "NO_SUCH_KEY_VAR" in capsys.readouterr().err


@pytest.mark.parametrize("spelling", [
    ["--api_key", "k"], ["--api-key=k"], ["--api_key=k"], ["--api-ke", "k"], ["--api-k", "k"], ["--api_k=k"],
    ["--port=9001"], ["--po", "9001"], ["--ho", "0.0.0.0"], ["--rev", "abc"], ["--revision=abc"],
])
def test_every_spelling_vllm_accepts_for_an_own_flag_is_refused(capsys, spelling):
    """vLLM's parser reads ``--api_key``, ``--api-key=k`` and any unambiguous prefix as
    ``--api-key``: each would put the key on vLLM's command line (and in ps/log)."""
    assert main(["serve", "--preset", "qwen2.5-vl-7b", "--dry-run", "--", "--enforce-eager", *spelling]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "orig serve:" in err and "before `--`" in err


@pytest.mark.parametrize("flag", ["--api-server-count", "--max-num-seqs", "--hf-overrides", "--port-offset-x"])
def test_other_vllm_flags_are_not_taken_for_own_flags(flag):
    from orig_local.cli.serve import own_flag

    assert own_flag(flag) is None and own_flag(flag + "=1") is None and own_flag("--") is None
