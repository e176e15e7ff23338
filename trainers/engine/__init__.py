"""The training engine every trainer of the study shares (PKPO, pass@k-RL, UpSkill; CPPO next).

One GRPO-family loop on torch + transformers, distributed by accelerate (one code path for a
single CPU process, DDP, FSDP, DeepSpeed; `accelerate launch -m cppo_bench train ...`).

API, one module per concept:

* ``algorithm``: ``Algorithm`` (subclass it: ``Config`` dataclass, ``requests(problem, ctx)``
  -> the group's ``RolloutRequest``s, ``rows(scored, ctx)`` -> ``StepRows``; override
  ``collect`` for multi-round rollouts; registered by name in ``trainers.algorithms.ALGORITHMS``), ``StepContext`` (seeds,
  prompt, ``generate``, ``score``, ``completion_logprobs``, ``encode``), ``response_rows``.
* ``rollout``: ``RolloutRequest`` (problem, prompt, seed, ``kind``, ``group``, ``meta``) ->
  ``Rollout`` (prompt / completion token ids + text); engines ``hf`` (the policy generates)
  and ``vllm`` (``rollout_vllm``: colocated, weights synced in place after every step).
* ``rewards``: ``REWARDS`` (``pass``, ``tests_fraction``): rollouts -> ``Scored`` through the
  sandboxed verifier; any ``RewardFn`` can replace it (``RunSpec.reward``).
* rows are ``trainers.core.batch.Row``s: token segments with a ``Region`` mask and an
  advantage each, so one batch can mix planner and solver tokens (CPPO).
* ``update``: micro-batched ``policy_loss`` with global-batch denominators (layout-exact).
* ``loop``: ``RunSpec`` -> ``train(spec)`` -> ``TrainResult``; ``on_step`` hook.
* ``checkpoint``: resumable state (SIGKILL-safe) and HF folders; ``metrics``: metrics.jsonl
  and the study's diagnostic panel; ``manifest``: train_manifest.json; ``data``: training set,
  decontamination, the seeded data stream; ``config``: TrainConfig and YAML / --set layers.
"""
