"""Serving at scale: a step-level simulation of an engine's scheduler, and the layouts around it.

- ``schedulers``: each engine's token budget, sequences in flight, KV pool share, prefill mixing (sourced);
- ``requests``: arrivals (offline, concurrency, Poisson/constant rate, a recorded trace) and lengths;
- ``steptime``: one step's time from predict's operator ledger and timer (decode rows + prefill chunks);
- ``worker``: one engine instance over tp x pp GPUs (or experts over ep GPUs): its step cost and KV pool;
- ``expert``: expert parallelism and attention data parallelism (all-to-all over the device link);
- ``speculative``: draft model or MTP heads with an acceptance rate;
- ``simulate``: the scheduler loop; ``metrics``: TTFT/TPOT/ITL/E2E percentiles, throughput, goodput;
- ``run``: one configuration (replicas, disaggregated prefill/decode); ``search``: layouts and loads;
- ``fitted``: the per-engine serving constants ``scripts/fit_serving.py`` writes.
"""
