"""Rewards: the sandboxed verifier that scores evaluation runs, scoring training rollouts.

A reward function maps rollouts to ``Scored`` rollouts; ``REWARDS`` holds them by name.
``pass`` (the study's) is 1.0 when every test passes, else 0.0; ``tests_fraction`` is the
share of tests passed. Jobs go to ``verify_batch`` in one parallel batch; identical programs
for the same problem run once.

Training rewards run every test (``all_tests``): a judge that stops at the first failing test
tells the next program of the same problem, through any state that outlives a program, one
bit about the hidden answers (whether test j ran). The verifier closes the channels it can
(cppo_bench/verifier/SECURITY.md); machine-wide inode numbers and read timing of shared files
stay open, and running every test removes that bit for all of them. Measured cost (2-core
CPU, docs/verifier.md): verification x1.9 with half the programs wrong, x6 when all fail at
test 0. Every reward goes through ``_verify``, the one place rewards call the verifier, and
it always runs every test: ``pass_early_stop`` (kept as a name, so configs that set it still
load) is now ``pass`` (issue 36: an early-stop reward keeps every channel open).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from trainers.engine.rollout import Rollout
from trainers.harness import Registry, VerifyJob, env, verify_batch


@dataclass(frozen=True)
class Scored:
    rollout: Rollout
    reward: float
    passed: bool
    verdict: str


RewardFn = Callable[[Sequence[Rollout]], list[Scored]]
# name -> factory(workers) -> RewardFn
REWARDS: Registry[Callable[[int | None], RewardFn]] = Registry("reward")


# the `cppo-bench serve` client of the reward being computed (config reward_verifier), set
# around each call by `through_service`: a context variable, so the factories keep their
# signature and `_verify` stays the one place rewards call the verifier
_SERVICE: ContextVar[Any] = ContextVar("reward_service", default=None)


def _verify(rollouts: Sequence[Rollout], workers: int | None) -> list:
    """THE verifier call of every reward: every test runs, whatever fails (module doc), in
    this process or, with reward_verifier set, by the service (which runs every test too)."""
    if not rollouts:
        return []
    jobs = [VerifyJob(r.request.problem, r.text) for r in rollouts]
    client = _SERVICE.get()
    if client is not None:
        return client.verify([j.problem for j in jobs], [j.code for j in jobs], all_tests=True)
    return verify_batch(jobs, workers=workers, all_tests=True)


def through_service(reward: RewardFn, urls: str) -> RewardFn:
    """`reward`, its programs verified by `cppo-bench serve` at `urls` (commas: several,
    the programs spread over them; docs/serve.md)."""
    from trainers.harness import VerifierClient

    client = VerifierClient(urls)

    @contextmanager
    def using() -> Iterator[None]:
        token = _SERVICE.set(client)
        try:
            yield
        finally:
            _SERVICE.reset(token)

    def score(rollouts: Sequence[Rollout]) -> list[Scored]:
        with using():
            return reward(rollouts)

    return score


def _pass(workers: int | None) -> RewardFn:
    def score(rollouts: Sequence[Rollout]) -> list[Scored]:
        results = _verify(rollouts, workers)
        return [
            Scored(r, 1.0 if v.passed else 0.0, v.passed, v.verdict)
            for r, v in zip(rollouts, results, strict=True)
        ]

    return score


@REWARDS.register("pass")
def pass_reward(workers: int | None = None) -> RewardFn:
    return _pass(workers)


@REWARDS.register("pass_early_stop")
def pass_early_stop_reward(workers: int | None = None) -> RewardFn:
    """The old early-stop option's name: the same reward as ``pass`` (every test runs)."""
    return _pass(workers)


@REWARDS.register("tests_fraction")
def tests_fraction_reward(workers: int | None = None) -> RewardFn:
    def score(rollouts: Sequence[Rollout]) -> list[Scored]:
        results = _verify(rollouts, workers)
        return [
            Scored(r, v.tests_passed / max(v.tests_total, 1), v.passed, v.verdict)
            for r, v in zip(rollouts, results, strict=True)
        ]

    return score


def on_test_set(reward: RewardFn, tests_dir: str) -> RewardFn:
    """`reward`, judging each rollout's problem with the augmented test set in `tests_dir`
    added to its own tests (the Scored rollouts are the ones given)."""
    from dataclasses import replace

    from trainers.harness import read_test_set, with_tests

    ts = read_test_set(tests_dir)
    cache: dict[int, tuple[Any, Any]] = {}  # id -> (the problem, kept alive; with its tests)

    def stronger(problem):  # noqa: ANN001, ANN202 - a Problem in, a Problem out
        if id(problem) not in cache:
            cache[id(problem)] = (problem, with_tests([problem], ts)[0])
        return cache[id(problem)][1]

    def score(rollouts: Sequence[Rollout]) -> list[Scored]:
        judged = [replace(r, request=replace(r.request, problem=stronger(r.request.problem)))
                  for r in rollouts]  # fmt: skip
        return [replace(s, rollout=r) for s, r in zip(reward(judged), rollouts, strict=True)]

    return score


def verify_workers(configured: int) -> int:
    """Sandboxes this process runs at once: TrainConfig ``verify_workers`` when set, else the
    node's cores split among the node's training processes (``LOCAL_WORLD_SIZE``, which
    torchrun and ``accelerate launch`` set): cores // local processes, at least 1. With one
    worker per core on every rank, 8 ranks ran 8 sandboxes per core, and the verifier's
    wall backstop (2 x the time limit + 1 s) turned that contention into time-outs of
    correct programs. Under a multi-process launch the default is one pool for the node
    instead (VERIFIERS["auto"]); this is the in-process share."""
    if configured:
        return configured

    from trainers.harness import process_cpus

    local = env.world_size("LOCAL_WORLD_SIZE")
    return max(1, len(process_cpus()) // local)


# reward_verifier's named settings -> factory(cfg) -> the service URL(s) rewards go to, or
# None: verified in this process. Anything not named here is URLs (TrainConfig checks them).
VERIFIERS: Registry[Callable[[Any], str | None]] = Registry("reward_verifier",
                                                            aliases={"": "auto"})  # fmt: skip


@VERIFIERS.register("inprocess")
def _in_process(cfg: Any) -> None:
    """Each process verifies its own rewards, with verify_workers' share of the cores."""
    return None


@VERIFIERS.register("local")
def _node_pool(cfg: Any) -> str:
    """The node's one pool, started by local rank 0 and shared by the node's ranks."""
    from trainers.harness import node_service

    return node_service()


def _auto_uses_the_pool() -> bool:
    """What the default decides here: several processes on this node and the serve extra."""
    if env.world_size("LOCAL_WORLD_SIZE") <= 1:
        return False
    from trainers.harness import serve_installed

    return bool(serve_installed())


@VERIFIERS.register("auto")
def _by_launch(cfg: Any) -> str | None:
    """The default (""): the node's pool when a launcher started several processes on this
    node (LOCAL_WORLD_SIZE > 1, set by torchrun and `accelerate launch`), so the node's
    sandboxes are its cores, shared by whichever rank has programs; one process verifies in
    itself (nothing to share, no server to start or hop through). verify_workers counts
    in-process sandboxes: it applies to "inprocess" and a single process. Without the serve
    extra each rank keeps its share of the cores in-process, said on stderr."""
    if _auto_uses_the_pool():
        return _node_pool(cfg)
    if env.world_size("LOCAL_WORLD_SIZE") > 1:
        from trainers.harness import echo

        echo("node verifier: the serve extra is not installed (pip install "
             "'cppo-bench[serve]'); each rank verifies in-process on its share of the "
             "cores", err=True)  # fmt: skip
    return None


def verifier_mode(setting: str) -> str:
    """Where reward_verifier=``setting`` has rewards verified in this process's launch:
    "inprocess", "node pool" or "service" (URLs). The training manifest records it, since the
    setting alone ("", the default) does not say which one a run used."""
    if setting not in VERIFIERS:
        return "service"
    name = VERIFIERS.canonical(setting)
    if name == "auto":
        return "node pool" if _auto_uses_the_pool() else "inprocess"
    return {"local": "node pool", "inprocess": "inprocess"}.get(name, name)


def reward_from_config(cfg) -> RewardFn:  # noqa: ANN001 - a TrainConfig
    """REWARDS[cfg.reward] with ``verify_workers``' share of the cores, on cfg.reward_tests'
    augmented tests when one is set, verified where cfg.reward_verifier says (VERIFIERS: by
    default the node's pool under a multi-process launch, else this process; or URLs).
    Every training reward is built here."""
    fn = REWARDS.get(cfg.reward)(verify_workers(cfg.verify_workers))
    setting = getattr(cfg, "reward_verifier", "")
    urls = VERIFIERS.get(setting)(cfg) if setting in VERIFIERS else setting
    if urls:
        fn = through_service(fn, urls)
    return on_test_set(fn, cfg.reward_tests) if cfg.reward_tests else fn
