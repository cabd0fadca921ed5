"""One guard per class of harm (docs/security.md): every surface goes through these, none has its own.

- ``outputs``: the one way a file is written (no symlink followed, temp file exclusive, rename into place)
  and the check of an output target before work starts.
- ``names``: names from remote data or a web request are names, never paths.
- ``redact``: secrets out of everything recorded.
- ``escape``: CSV, rich markup, matplotlib mathtext and HTML at the edge.
- ``bounded``: every network body read with a size cap and a total deadline.
- ``limits``: model shapes and document sizes, depths and fields within plausible ranges; memory budgets in
  objects (tensors, array entries, rows).
- ``typed``: the one JSON gate (numbers within 2**53, nesting capped) and the typed field readers.
- ``console``: the terminal as a writer (text escaped, secrets masked).
- ``deadline``: every CPU-bound computation on user input ends, saying how far it got.
"""
