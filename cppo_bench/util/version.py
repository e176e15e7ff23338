"""The package version and folder, for the manifests that record which code made a run
(kept below every layer so the store and the runner need not import the package front)."""

from __future__ import annotations

from pathlib import Path

__version__ = "0.1.0"
PACKAGE_DIR = Path(__file__).resolve().parents[1]
