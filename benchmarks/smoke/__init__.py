"""The checks of ``benchmarks/gpu_smoke.py``, one module per kind (base: the registry and the
requirements a check states; basic: hf backends, one-process training, CPPO's data stages;
jobs: whole-job regressions and the verifier; layouts: FSDP2 / ZeRO-3 launches; vllm_checks: the colocated engine; memory: checkpointing
and the training state). Importing the package registers every check."""

from benchmarks.smoke import basic, jobs, layouts, memory, vllm_checks  # noqa: F401 - registration
from benchmarks.smoke.base import CHECKS, Skip

__all__ = ["CHECKS", "Skip"]
