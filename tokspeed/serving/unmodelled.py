"""What the serving simulation does not model, each case with its mechanism and source: a configuration that
meets one is answered with a warning (``evaluate``'s ``warnings``, printed by ``tokspeed serve``), and a public
row that meets one is left out of the fit's scoring with its flag as the reason (``rows``). None is tuned to.

- ``pipeline-parallel-unmeasured``: no public serving measurement in the calibration files runs pipeline
  parallelism; a PP layout's figures are the model's alone, marked ``measured: false`` and ranked after the
  measured layouts by the search.
- ``sglang-dp-attention-before-deepep``: SGLang releases before 0.4.5 (the first with ``--enable-deepep-moe``;
  0.4.4's ``server_args.py`` has no DeepEP) ran attention data parallelism's MoE layers without an all-to-all:
  every layer all-gathers all ranks' hidden states, padded to the largest rank, runs the experts TP-sharded
  over all of them with its Triton fused-MoE kernels and all-reduces (sglang 0.4.1
  ``srt/models/deepseek_v2.py``: ``all_gather`` then ``self.mlp``; ``server_args.py`` turns the overlap
  scheduler off and halves the prefill chunk). That exchange is a few ms a step for DeepSeek-V3 on 8 x H200
  (61 layers x an all-gather and an all-reduce of ~150 tokens x 7,168 x 2 bytes), while the measured steps of
  that release (datacrunch, Dec 2024: TPOT 140-680 ms at 1-8 requests/s) are 3-10x the simulated DeepEP
  step: the kernels of that release, which tokspeed has no figures for.
"""

from __future__ import annotations

from .engine_versions import version_tuple
from .schedulers import scheduler_key

SGLANG_DP_BEFORE_DEEPEP = "sglang-dp-attention-before-deepep"
PIPELINE = "pipeline-parallel-unmeasured"
SGLANG_DEEPEP_SINCE = (0, 4, 5)

WARNINGS = {
    SGLANG_DP_BEFORE_DEEPEP: (
        "SGLang before 0.4.5 ran attention-DP MoE layers without DeepEP (an all-gather of every rank's tokens, "
        "TP-sharded Triton experts, an all-reduce); its measured DeepSeek-V3 steps were 3-10x the simulated "
        "all-to-all step: not modelled, the figures are DeepEP's (docs/serving.md)"),
    PIPELINE: (
        "pipeline parallelism: no serving measurement (data/validation/serving-calibration*.csv has TP, EP, "
        "attention-DP and disaggregated rows, no PP) checks its step times or its bubbles; such a layout "
        "is ranked after the measured ones (docs/serving.md)"),
}

UNMEASURED = frozenset({PIPELINE})      # flags of layouts no serving measurement is behind


def not_modelled(engine: str, engine_version, par) -> list[str]:
    """The flags of the unmodelled mechanisms a configuration meets (``par``: its ``Parallelism``)."""
    flags = []
    v = version_tuple(engine_version)
    if scheduler_key(engine) == "sglang" and par.dp > 1 and v is not None and v < SGLANG_DEEPEP_SINCE:
        flags.append(SGLANG_DP_BEFORE_DEEPEP)
    if par.pp > 1:
        flags.append(PIPELINE)
    return flags
