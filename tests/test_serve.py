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
    )
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
