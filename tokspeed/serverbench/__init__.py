"""Benchmark a running LLM server (OpenAI-compatible or Ollama) and put it next to its roofline.

The pieces, one per file:
- ``sse``      turns a byte stream into Server-Sent Events (or NDJSON lines), counting malformed lines;
- ``client``   sends one streaming request and times every chunk (TTFT, gaps, TPOT, e2e, token counts);
- ``loadgen``  drives many requests: a concurrency sweep or a Poisson arrival rate, bounded and warmed up;
- ``record``   appends each finished request to ``requests.jsonl`` (flushed per line);
- ``summary``  rebuilds ``summary.json`` (percentiles, tok/s per concurrency, errors by kind) from the JSONL;
- ``compare``  sets measured decode speed beside tokspeed's prediction and the memory-bandwidth utilisation;
- ``workload`` prompt text and lengths: synthetic (exact-length with ``tokens``), files, shared prefix, chats;
- ``tokens``   the served model's tokenizer (tokenizer.json, GGUF, HF folder) as two counters;
- ``engine_info`` the engine version the server reports; ``interrupt`` Ctrl-C without a traceback;
- ``report_html`` (with ``svg``) the self-contained report.html; ``compare_runs`` overlays runs.
"""
