"""The training algorithms (PKPO, pass@K-RL, UpSkill, CPPO) on the shared engine; their
loss math lives in trainers/core under the same names."""
