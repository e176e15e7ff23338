"""The verifier as an HTTP service (`cppo-bench serve`) and as the reward of other RL stacks.

Modules: config (bind, token, caps), schema (the typed wire format), jobs (a request -> the
verifier's VerifyJob / Limits, every cap checked), queue (bounded, back-pressure), metrics
(Prometheus text), app (the FastAPI app), server (uvicorn, ready line, drain on SIGTERM),
client (`cb.VerifierClient`, stdlib only), adapters/ (TRL, verl, OpenRLHF).

FastAPI and uvicorn are the `serve` extra (``pip install cppo-bench[serve]``): only the
server side imports them, so the client and the adapters work without it.
"""
