"""The CPPO pipeline: SFT, reward model, stage data and RL stages."""
