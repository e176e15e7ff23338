"""Loading a checkpoint for the hf backend: the causal LM that writes text, whatever its family.

* A text checkpoint (Llama, SmolLM2, Qwen2/3) loads with `AutoModelForCausalLM`.
* A composite (multimodal) checkpoint keeps its text model under `model.language_model`:
  Qwen3.5 (text + vision), Gemma 4 E2B / E4B (text + vision + audio). We load the text
  config's own causal-LM class (`Qwen3_5ForCausalLM`, `Gemma4ForCausalLM`) with
  `model.language_model.*` renamed to `model.*`; the towers' weights stay on disk (a
  composite laid out otherwise falls back to what `AutoModelForCausalLM` gives, if that
  finds every weight). Left to
  itself transformers does not do this everywhere: `AutoModelForCausalLM` maps Gemma 4 to
  the whole multimodal model (towers and all), and in transformers 5.5 it maps Qwen3.5 to
  the text class *without* renaming the weights, so every layer is silently random.
* Every load asks transformers which weights it did not find: any missing weight is an
  error, since a randomly initialised layer generates plausible-looking garbage.

The decision reads transformers' own mappings, so a new family with the same layout needs
no code here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cppo_bench.backends.base import ModelLoadError
from cppo_bench.backends.default_model import (
    DEFAULT_MODEL,
    ensure_default_model,
    load_from_gguf,
    quiet_loading,
)
from cppo_bench.util.termsafe import quote

# where composite checkpoints keep the text model, and where its causal-LM class expects it
TEXT_PREFIX = {r"^model\.language_model\.": "model."}


def dtype_kwarg(dtype: Any) -> dict[str, Any]:
    """transformers renamed `torch_dtype` to `dtype` in 4.56; we support both sides."""
    import transformers

    major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
    return {"dtype" if (major, minor) >= (4, 56) else "torch_dtype": dtype}


def text_model_class(config: Any) -> tuple[Any, Any] | None:
    """(causal-LM class, text config) when `config` is a composite (multimodal) config whose
    text config has a causal-LM class; None for a plain text checkpoint."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    get_text = getattr(config, "get_text_config", None)
    text = get_text() if get_text else config
    if text is config:
        return None
    try:
        return MODEL_FOR_CAUSAL_LM_MAPPING[type(text)], text
    except KeyError:
        return None  # no text-only class: the multimodal class is the only way in


def _checked(path: str, loaded: tuple[Any, dict[str, Any]]) -> Any:
    model, info = loaded
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" (+{len(missing) - 3} more)" if len(missing) > 3 else ""
        )
        raise ModelLoadError(
            f"model {quote(path)}: {type(model).__name__} found no weights for {len(missing)} "
            f"parameter(s) in the checkpoint: {shown}"
        )
    return model


def check_model_folder(model: str) -> None:
    """A local model folder, before any loader (transformers, vLLM) sees it: they open files
    by name and by listing the folder, so every entry is checked (`userfiles.check_folder`:
    a FIFO, a device, a link to /dev/zero is one line, never a hang). Links to regular files
    are accepted: a hub cache's snapshot folder is links into its blobs."""
    from cppo_bench.files import userfiles

    local = Path(model).expanduser()
    if not local.is_dir():
        return
    try:
        userfiles.check_folder(local, links_to_files=True)
    except userfiles.UserFileError as exc:
        raise ModelLoadError(f"model {quote(model)}: {exc}") from None


def _resolve(model: str | None) -> tuple[str, str]:
    """(path or hub id to load, model id to record)."""
    if model is None:
        return str(ensure_default_model()), DEFAULT_MODEL
    local = Path(model).expanduser()
    if local.exists():
        if not (local / "config.json").is_file():
            raise ModelLoadError(f"model {quote(model)}: folder has no config.json")
        check_model_folder(model)
        return str(local), str(local.resolve())
    if model.startswith((".", "/", "~")) or model.count("/") > 1:
        raise ModelLoadError(f"model {quote(model)}: no such folder")
    return model, model  # a hub id


def load_model(
    model: str | None, *, dtype: Any, trust_remote_code: bool = False
) -> tuple[Any, Any, str]:
    """(model, tokenizer, model_id) from None (embedded default), a folder, a .gguf or a hub id.
    The model is always a text causal LM (see the module doc for multimodal checkpoints)."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    if model is not None and Path(model).expanduser().suffix == ".gguf":
        local = Path(model).expanduser()
        if not local.is_file():
            raise ModelLoadError(f"model {quote(model)}: no such GGUF file")
        m, tok = load_from_gguf(local)
        return m.to(dtype), tok, str(local.resolve())
    path, model_id = _resolve(model)
    remote = {"trust_remote_code": trust_remote_code}
    try:
        with quiet_loading():
            tokenizer = AutoTokenizer.from_pretrained(path, **remote)
            config = AutoConfig.from_pretrained(path, **remote)
            text = text_model_class(config)
            kwargs = {**remote, **dtype_kwarg(dtype), "output_loading_info": True}
            # (with output_loading_info, from_pretrained gives (model, info): its own type
            # hints do not say so)
            loaded: Any
            whole: Any
            if text is None:
                loaded = AutoModelForCausalLM.from_pretrained(path, **kwargs)
                m = _checked(model or path, loaded)
            else:
                text_cls, text_config = text
                loaded = text_cls.from_pretrained(
                    path, config=text_config, key_mapping=TEXT_PREFIX, **kwargs
                )
                try:
                    m = _checked(model or path, loaded)
                except ModelLoadError:
                    # a composite laid out otherwise (not under model.language_model): the
                    # whole model, if transformers finds every weight of it, else the error
                    # about the text model
                    whole = AutoModelForCausalLM.from_pretrained(path, **kwargs)
                    if whole[1].get("missing_keys"):
                        raise
                    m = whole[0]
    except OSError as exc:  # offline hub, missing files, gated repo
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "local folder" if Path(path).exists() else "Hugging Face hub (offline?)"
        raise ModelLoadError(
            f"model {quote(model or path)}: cannot load from the {where}: {first}"
        ) from None
    except ModelLoadError:
        raise
    except Exception as exc:
        # a stranger's folder: a safetensors header that lies (SafetensorError), a config
        # asking for remote code (ValueError), a malformed config.json... Nothing of it ran;
        # say which folder and what, in one line
        raise ModelLoadError(f"model {quote(model or path)}: {load_error_line(exc)}") from None
    return m, tokenizer, model_id


def load_error_line(exc: BaseException) -> str:
    """The first line of a loader's exception, with its type: one line for the terminal."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"not loadable ({type(exc).__name__}{': ' + first[:300] if first else ''})"
