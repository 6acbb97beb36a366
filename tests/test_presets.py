"""Model presets: shipped inside the package, pinned by revision, gated models said so; models by
hub id without a preset; the hub's refusals (gated, unknown) as one line naming the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from conftest import tiny_model

import orig_local
from orig_local.cli import main
from orig_local.configbase import ConfigError
from orig_local.generation.config import GeneratorConfig
from orig_local.paths import PRESETS_DIR
from orig_local.presets import generator_preset, list_presets, load_preset

REPO = Path(__file__).resolve().parents[1]
GATED = {"flux.1-dev", "flux.1-kontext-dev", "sd-3.5-large"}


def test_presets_live_in_the_models_catalogue_and_all_load(monkeypatch):
    """A checkout reads the catalogue at its top (models/, the design card's layout); the wheel
    test below finds the same files inside an installed package."""
    monkeypatch.delenv("ORIG_MODELS_DIR", raising=False)
    package = Path(orig_local.__file__).parent
    assert PRESETS_DIR in (REPO / "models", package / "models")
    names = list_presets()
    assert {"qwen2.5-vl-7b", "qwen2.5-vl-72b", "qwen-image-edit-2509", "tiny-judge"} <= set(names)
    for name in names:
        data = yaml.safe_load((PRESETS_DIR / f"{name}.yaml").read_text())
        assert "revision" in data, f"{name}: every preset states its revision (null = default branch)"
        preset = load_preset(name)
        assert preset.name == name
        assert preset.gated == (name in GATED), name


def test_orig_models_dir_overrides_per_file(tmp_path, monkeypatch, capsys):
    """One preset of your own changes that preset and adds yours; the other 20 stay listed."""
    packaged = list_presets()
    text = (PRESETS_DIR / "tiny-judge.yaml").read_text()
    (tmp_path / "tiny-judge.yaml").write_text(text.replace("name: tiny-judge", "name: tiny-judge\nnotes: mine"))
    (tmp_path / "my-model.yaml").write_text(text.replace("name: tiny-judge", "name: my-model"))
    monkeypatch.setenv("ORIG_MODELS_DIR", str(tmp_path))
    assert list_presets() == sorted([*packaged, "my-model"])
    assert load_preset("tiny-judge").notes == "mine"  # yours wins for the same name
    assert load_preset("my-model").name == "my-model"
    assert load_preset("qwen2.5-vl-7b").hf_id.startswith("Qwen/")  # packaged ones still load
    with pytest.raises(ConfigError, match="known: .*my-model"):
        load_preset("no-such-model")
    assert main(["models"]) == 0
    out = capsys.readouterr().out.splitlines()
    marked = {line.split()[0] for line in out if line.endswith("[yours]")}
    assert marked == {"tiny-judge", "my-model"}
    assert len([ln for ln in out[1:] if ln.split() and ln.split()[0] in list_presets()]) == len(packaged) + 1


def test_orig_models_marks_gated_models(capsys):
    assert main(["models"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "gated" in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line.split() and line.split()[0] in list_presets()}
    assert set(rows) == set(list_presets())
    for name, cells in rows.items():
        assert (cells[4] == "yes") == (name in GATED), cells
    assert any("HF_TOKEN" in line and "huggingface-cli login" in line for line in lines)


# --------------------------------------------------------------------------- generators by hub id


@pytest.mark.parametrize("hub_id,backend,borrowed", [
    ("Qwen/Qwen-Image-Edit-2509", "qwen-image-edit-plus", "qwen-image-edit-2509"),
    ("Qwen/Qwen-Image-Edit", "qwen-image-edit", "qwen-image-edit"),
    ("someone/Qwen-Image-finetune", "qwen-image", "qwen-image"),
    ("black-forest-labs/FLUX.1-Kontext-dev", "flux-kontext", "flux.1-kontext-dev"),
    ("black-forest-labs/FLUX.1-Krea-dev", "flux", "flux.1-dev"),
    ("black-forest-labs/FLUX.1-schnell", "flux", "flux.1-schnell"),
    ("stabilityai/stable-diffusion-3.5-medium", "sd3", "sd-3.5-large"),
])
def test_generator_by_hub_id_gets_its_family_pipeline(hub_id, backend, borrowed):
    preset = generator_preset(GeneratorConfig(model=hub_id, revision="abc123"))
    assert (preset.hf_id, preset.name, preset.revision, preset.generator) == (hub_id, hub_id, "abc123", backend)
    assert preset.defaults == load_preset(borrowed).defaults
    assert preset.gated == (hub_id == load_preset(borrowed).hf_id and load_preset(borrowed).gated)


def test_generator_of_unknown_family_needs_a_backend():
    with pytest.raises(ConfigError, match=r"generator\.backend=<.*qwen-image-edit-plus"):
        generator_preset(GeneratorConfig(model="someone/my-diffusion-model"))
    preset = generator_preset(GeneratorConfig(model="someone/my-diffusion-model", backend="sd3"))
    assert preset.generator == "sd3" and preset.defaults["steps"] > 0


def test_generator_preset_revision_backend_and_hub_id_as_preset():
    assert generator_preset(GeneratorConfig(preset="qwen-image")).revision is None
    assert generator_preset(GeneratorConfig(preset="qwen-image", revision="v1")).revision == "v1"
    as_preset = generator_preset(GeneratorConfig(preset="Qwen/Qwen-Image-Edit-2509"))  # `--generator <hub id>`
    assert as_preset.hf_id == "Qwen/Qwen-Image-Edit-2509" and as_preset.generator == "qwen-image-edit-plus"
    finetune = generator_preset(GeneratorConfig(preset="flux.1-schnell", model="me/schnell-ft"))
    assert finetune.hf_id == "me/schnell-ft" and finetune.defaults == load_preset("flux.1-schnell").defaults


def test_orig_image_with_a_model_folder_and_no_preset(tmp_path, capsys):
    folder = tiny_model("qwen_image")
    out = tmp_path / "img.png"
    rc = main(["-q", "image", "a red square", "-o", str(out), "-s", f"generator.model={folder}",
               "-s", "generator.backend=qwen-image", "-s", "generator.device=cpu",
               "--width", "64", "--height", "64", "--steps", "1"])
    assert rc == 0 and out.is_file()
    params = json.loads(out.with_suffix(".png.json").read_text())["params"]
    assert params["model"] == str(folder) and params["pipeline"] == "QwenImagePipeline"


def test_embedder_by_folder_without_a_preset():
    from orig_local.embeddings.clip import OpenClipEmbedder
    from orig_local.embeddings.config import EmbedConfig
    folder = tiny_model("clip")
    embedder = OpenClipEmbedder.from_config(EmbedConfig(model=str(folder), device="cpu"))
    assert embedder.embed_texts(["a cat"]).shape[0] == 1


# --------------------------------------------------------------------------- the hub says no


class GatedHub:
    """A loopback stand-in for the Hugging Face Hub that refuses every request the way the hub
    refuses a gated repo without a token (HTTP 401, X-Error-Code: GatedRepo); records paths."""

    def __init__(self):
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _refuse(self):
                outer.paths.append(self.path)
                body = json.dumps({"error": "Access to model is restricted. Please log in."}).encode()
                self.send_response(401)
                self.send_header("X-Error-Code", "GatedRepo")
                self.send_header("X-Error-Message", "Access to model is restricted")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = _refuse

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def gated_hub(tmp_path):
    hub = GatedHub()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_ENDPOINT=hub.url, HF_HUB_OFFLINE="0", TRANSFORMERS_OFFLINE="0", HF_HOME=str(tmp_path / "hf"),
               PYTHONPATH=str(REPO))
    yield hub, env
    hub.close()


def _orig(env, *argv) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "orig_local", *argv], env=env, capture_output=True, text=True,
                          timeout=240)


@pytest.mark.parametrize("argv,model,revision", [
    (["image", "a cat", "-s", "generator.model=black-forest-labs/FLUX.1-dev", "-s", "generator.revision=deadbeef"],
     "black-forest-labs/FLUX.1-dev", "deadbeef"),
    (["chat", "hi", "-s", "backbone.backend=transformers", "-s", "backbone.model=Qwen/Qwen2.5-VL-3B-Instruct",
      "-s", "backbone.revision=r1"], "Qwen/Qwen2.5-VL-3B-Instruct", "r1"),
], ids=["generator", "chat"])
def test_gated_model_is_one_line_naming_the_token_and_revision_reaches_the_hub(gated_hub, tmp_path, argv, model,
                                                                                revision):
    hub, env = gated_hub
    proc = _orig(env, "-q", *argv, *(["-o", str(tmp_path / "x.png")] if argv[0] == "image" else []))
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("orig: error:") and "gated" in last and model in last
    assert "HF_TOKEN" in last and "huggingface-cli login" in last
    assert any(model in p and revision in p for p in hub.paths), hub.paths  # the pinned revision was asked for
    assert not (tmp_path / "x.png").exists()


# --------------------------------------------------------------------------- a non-editable install


def test_built_wheel_installed_elsewhere_lists_every_preset(tmp_path):
    """The default backbone preset must resolve from `pip install .`, not only from a checkout."""
    src = tmp_path / "src"
    shutil.copytree(REPO / "orig_local", src / "orig_local", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "models", src / "models")
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.py"):  # what a build reads
        shutil.copy(REPO / name, src / name)
    # without PYTHONPATH: a checkout on it (with its orig_local.egg-info) reads to pip as an
    # installed orig-local of the same version, and the install below would be skipped
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ORIG_MODELS_DIR")}
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(wheels), str(src)], check=True, capture_output=True, timeout=300, env=env)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    (wheel,) = wheels.glob("orig_local-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                    "--no-deps", str(wheel)], check=True, capture_output=True, timeout=300, env=env)
    # dependencies from this environment, but not its (editable) orig_local: a plain path entry
    # runs no .pth hooks, and the venv's own site-packages comes first
    import pydantic

    site = next((venv / "lib").glob("python*/site-packages"))
    (site / "deps.pth").write_text(str(Path(pydantic.__file__).parents[1]) + "\n")
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import orig_local; print(orig_local.__file__)"],
                           env=env, cwd=tmp_path, capture_output=True, text=True)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(venv), where.stdout
    listed = subprocess.run([str(venv / "bin" / "orig"), "models"], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr
    shown = {line.split()[0] for line in listed.stdout.splitlines()[1:] if line.strip()}
    assert set(list_presets()) <= shown
