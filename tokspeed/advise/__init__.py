"""The advising verbs: each stands on ``predict`` and asks it many times.

- ``plan``: rank catalog hardware (single, multi-GPU, offload) for a target speed.
- ``runs_here``: every catalog model ranked on one device (``tokspeed fit``).
- ``alternatives``: the ways a setup that does not fit would run.
"""
