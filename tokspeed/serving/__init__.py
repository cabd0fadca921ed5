"""Serving at scale: a step-level simulation of an engine's scheduler, and the layouts around it.

- ``schedulers``: each engine's token budget, sequences in flight, KV pool share, prefill mixing (sourced);
- ``requests``: arrivals (offline, concurrency, Poisson/constant rate, a recorded trace) and lengths;
- ``steptime``: one step's time from predict's operator ledger and timer (decode rows + prefill chunks);
- ``worker``: one engine instance over tp x pp GPUs (or experts over ep GPUs): its step cost and KV pool;
- ``expert``: expert parallelism and attention data parallelism (all-to-all over the device link);
- ``speculative``: draft model or MTP heads with an acceptance rate;
- ``metrics``: TTFT/TPOT/ITL/E2E percentiles, throughput, goodput;
- ``run``: one configuration (replicas, disaggregated prefill/decode); ``search``: layouts and loads;
- ``fitted``: the per-engine serving constants ``scripts/fit_serving.py`` writes;
- the scheduler as vLLM's ``v1/core/sched`` splits it: ``kvpool`` (the paged KV pool), ``policy`` (how an
  engine family composes a step), ``instance`` (one engine instance's queues and step), ``simulate`` (the
  event loops: one instance; disaggregated prefill and decode pools);
- ``step_explain``: one step per GPU by kernel family (``tokspeed explain --gpus/--parallel/--disagg``);
- ``curve``: the batch curve, ridge batch, continuous batching at a rate and cost ``predict`` reports.
Predict's resolution of model, device and engine comes in as an argument (``Setup.resolver``):
``tokspeed.serving_api`` is the entry point the CLI, the web, the report and bench-server's overlay call.
"""
