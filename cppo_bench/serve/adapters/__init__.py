"""The verifier as the reward of other RL stacks: `trl` (a GRPOTrainer reward function),
`verl` (a custom_reward_function `compute_score`), `openrlhf` (a remote reward endpoint on
`cppo-bench serve`; `openrlhf_reward`, its reward-function file, which carries the token).
`labels` reads a row's tests, `scoring` turns programs into rewards, by
a service (a URL) or in this process."""
