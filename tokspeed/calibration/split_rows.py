"""A layer split as evidence of its device: the multi-device rows the fit takes, and the time their hand-offs add.

llama.cpp's layer split (``-sm layer``, its default over several GPUs) gives each device a run of layers; a pass
runs them one device after another, handing the hidden state over at each boundary. Where every pass goes through
the stages in turn -- a decode step, a prompt in one micro-batch, or a backend that never pipelines a prompt's
micro-batches (``scale.timing.engine_pipelines_prompt``: Vulkan and ROCm stage each hand-off through host memory,
and llama.cpp before its 2024 era had no pipeline) -- the pass over n identical devices runs the operators, kernels
and bytes it runs on one device, each device streaming its own layers, one after another
(``scale.timing.layout_pass``: the stages' times add up, the per-step cost is paid once), plus the hand-offs, which
are link transfers no fitted factor touches. Such a row measures its device's own rates: the fit
(``calibration.fast``) times it as the one-device pass plus ``handoff_s``. What stays out (``rows`` marks it
``multi-device``): row split (``tp``: every matmul split across the devices, a link cost per layer), a prompt
whose micro-batches flow through the stages together (pipelined), and batched decode.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from ..engines.compat import runtime_of
from ..engines.profile import prior_profile
from ..scale.timing import engine_pipelines_prompt, splits_layers
from ..workload import one_micro_batch
from .evaluate import at_row_build, metric_tok_s, predicted


def stages_in_turn(engine: str, parallel: str, n_devices: int, metric: str, prompt: int, batch: int, ubatch: int,
                   n_batch: int, era: str) -> bool:
    """Whether a calibration row of ``n_devices`` runs every pass through its layer split's stages in turn (the
    module's docstring): a llama.cpp layer split at batch 1, decoding, or prefilling one micro-batch or on an engine
    that does not pipeline them."""
    if n_devices <= 1 or parallel != "layer-split" or batch != 1 or not splits_layers(runtime_of(engine)):
        return False
    if metric != "prefill":
        return True
    return one_micro_batch(prompt, ubatch, n_batch) or not engine_pipelines_prompt(engine, runtime_of(engine),
                                                                                  era or None)


def handoff_s(row) -> float:
    """The seconds a layer-split ``row`` (``stages_in_turn``) adds to its one-device pass over the time its metric
    counts (a decode step; the whole prompt): ``predict``'s time over the row's devices less its time on one, both
    under the backend's priors, so no fitted value enters (the hand-offs are link transfers)."""
    return _handoff_s(row) if row.n_devices > 1 else 0.0


@lru_cache(maxsize=None)
def _handoff_s(row) -> float:
    prof = at_row_build(prior_profile(row.engine), row)
    one = replace(row, n_devices=1, parallel="none")
    tokens = row.prompt * row.batch if row.metric == "prefill" else 1.0
    return tokens / metric_tok_s(predicted(row, prof), row) - tokens / metric_tok_s(predicted(one, prof), one)
