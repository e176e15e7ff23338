"""Run orchestration: load problems, run a method over a backend, verify, store (`pipeline`, `scoring`)."""
