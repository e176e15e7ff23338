"""Whether the verifier keeps a test child for a program's next test in a sandbox mode here
(the kept child needs a pid namespace, the seccomp filter and a memory cgroup): the warm and
fidelity tests ask before they count on one child serving several tests."""

from __future__ import annotations

from cppo_bench.verifier import sandbox as sandbox_module


def kept(mode: str) -> bool:
    """Does a sandbox of this mode keep children here (its set-up says so)?"""
    box = sandbox_module.Sandbox(nproc=64)
    try:
        box.start()
        return bool(box.hello.get("reuse")) and box.mode == mode
    finally:
        box.close()
