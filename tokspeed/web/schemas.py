"""The typed requests and responses of `tokspeed web`'s JSON API, written once: FastAPI validates queries
against them (a malformed field is a 422 naming it) and generates the OpenAPI document from them.

Limits that depend on the model (its context window) or on cost are checked in ``api.py`` (400)."""

from __future__ import annotations

import dataclasses
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, create_model

from ..engines.compat import default_engine, engine_help
from ..memory import Memory as MemoryRecord
from ..predict import Decode as DecodeRecord, Prediction as PredictionRecord, Prefill as PrefillRecord
from ..workload import DEFAULT_ENGINE, DEFAULT_GEN, DEFAULT_PROMPT

Count = int       # tokens / sequences: whole numbers from the query string


def _f(lo_gt: float | None = None, ge: float | None = None, hi: float = 1e5, desc: str = ""):
    return Field(None, gt=lo_gt, ge=ge, le=hi, allow_inf_nan=False, description=desc)


class Setup(BaseModel):
    """What runs where: a model, a device and how the weights and KV cache are stored."""
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(description="a catalog id (see /api/models) or upload:<id> from POST /api/upload")
    hardware: str = Field(description="a catalog id (see /api/hardware) or 'custom' with the numbers below")
    quant: Optional[str] = Field(None, description="weight format (see /api/options); default: Q4_K_M for llama.cpp "
                                 "engines (the released format where smaller), else the model's released format")
    kv_dtype: str = Field("f16", description="KV-cache dtype")
    engine: str = Field(DEFAULT_ENGINE, description="inference engine")
    engine_version: Optional[str] = Field(None, max_length=32, description="llama.cpp build (b6000) or year-month "
                                                                          "(2025-08); default the newest calibrated")
    flash_attn: Literal["auto", "on", "off"] = Field(
        "auto", description="llama.cpp -fa: attention fused (on) or not (off); auto: the build's and front end's default")
    gpus: int = Field(1, ge=1, le=64, description="identical devices (tensor parallel when > 1)")
    parallel: Optional[str] = Field(None, description="with gpus > 1: tp, pp, split or tp=N,pp=M "
                                                      "(default: the engine's own)")
    offload: Literal["none", "auto", "experts", "stream"] = Field(
        "none", description="auto: as many layers on the GPU as fit, the rest in system RAM (llama.cpp -ngl); "
                            "experts: MoE experts of some layers on the CPU; stream: layers streamed over the host link")
    bandwidth_gbps: Optional[float] = _f(lo_gt=0, desc="custom device: memory bandwidth, GB/s")
    memory_gb: Optional[float] = _f(lo_gt=0, desc="custom device: memory as labelled, GB (= GiB, 2**30 bytes)")
    fp16_tflops: Optional[float] = _f(ge=0, desc="custom device: dense FP16 tensor TFLOPS (omit if unknown)")
    host_link_gbps: Optional[float] = _f(ge=0, hi=1e4, desc="custom device: host link, GB/s per direction")


class PredictQuery(Setup):
    prompt: Count = Field(DEFAULT_PROMPT, ge=0, description="tokens prefilled")
    gen: Count = Field(DEFAULT_GEN, ge=0, description="tokens generated (decode tok/s averages over them)")
    context: Count = Field(0, ge=0, description="tokens already in the KV cache before the run")
    batch: Count = Field(1, ge=1, description="concurrent sequences")


class ExplainQuery(Setup):
    prefill: Count = Field(0, ge=0, description="0: one decode token; N: a prefill of N tokens")
    context: Count = Field(0, ge=0, description="tokens already in the KV cache")
    batch: Count = Field(1, ge=1, description="concurrent sequences")


class CalculatorQuery(PredictQuery):
    explain: Literal["decode", "prefill"] = Field("decode", description="what the journey explains: the first "
                                                                       "generated token or the prefill")


class FitQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hardware: str = Field(description="a catalog id")
    context: Optional[Count] = Field(None, ge=0, description="tokens in the KV cache; default 8192, clamped to "
                                                           "each model's trained window")
    prompt: Count = Field(DEFAULT_PROMPT, ge=0)
    min_tok_s: Optional[float] = Field(None, ge=0, allow_inf_nan=False)
    engine: str = DEFAULT_ENGINE
    engine_version: Optional[str] = Field(None, max_length=32, description="llama.cpp build or year-month")
    flash_attn: Literal["auto", "on", "off"] = Field("auto", description="llama.cpp -fa")
    gpus: int = Field(1, ge=1, le=64)
    offload: Literal["none", "auto"] = "none"
    family: Optional[str] = None
    max_params: Optional[float] = Field(None, gt=0, allow_inf_nan=False, description="billions")
    moe: Optional[bool] = None
    use: Optional[str] = Field(None, description="a use tag (chat, code, ...)")
    top: Optional[int] = Field(None, ge=1, le=500)


class UploadQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["config", "gguf"] = Field("config", description="config: a config.json; gguf: the start of "
                                                                  "a GGUF file (its header)")
    name: Optional[str] = Field(None, max_length=256)
    size: Optional[int] = Field(None, ge=0, description="gguf: the size of the whole file whose start is sent")


# ---- responses ---------------------------------------------------------------------------------------
class Open(BaseModel):
    """A document whose listed keys are guaranteed; the library may add more (scale, cost, ...)."""
    model_config = ConfigDict(extra="allow", protected_namespaces=())


class Closed(BaseModel):
    """A document whose keys are all declared (a generated one: its record says what it holds)."""
    model_config = ConfigDict(extra="forbid", protected_namespaces=())


class Error(BaseModel):
    error: str
    status: int
    field: Optional[str] = Field(None, description="the query field at fault, when one is")
    suggestion: Optional[str] = None


class ModelEntry(BaseModel):
    model_config = ConfigDict(protected_namespaces=())
    id: str
    name: str
    params_b: float
    n_layers: int
    n_heads: int
    n_kv_heads: int
    moe: bool
    active_params_b: Optional[float] = None
    family: str
    hf_id: Optional[str] = None
    max_context: int
    source: str


class Models(BaseModel):
    models: list[ModelEntry]


class HardwareEntry(BaseModel):
    id: str
    name: str
    kind: str
    vendor: str
    memory_gb: float
    bandwidth_gbps: float
    fp16_tflops: Optional[float] = Field(None, description="null: no published figure (prefill unknown)")
    power_w: Optional[float] = None


class HardwareList(BaseModel):
    hardware: list[HardwareEntry]


class Preset(BaseModel):
    id: str
    label: str
    settings: dict[str, str]


class Options(BaseModel):
    quant: list[str]
    kv_dtype: list[str]
    engine: list[str]
    presets: list[Preset]


# The `predict --json` document is declared once, by the dataclasses that hold it (tokspeed.predict.Prediction
# and its Decode, Prefill, memory.Memory): its models here are generated from them (``json_model``), field for
# field, with the descriptions below; tests/test_web_schemas.py holds real documents against them.
DESCRIPTIONS = {
    "Prediction": {"hypothetical": "true when the setup does not fit memory: its numbers describe a machine that "
                                   "cannot run it",
                   "ttft_lead_tokens": "decode steps ttft_s holds after the first token, before a streaming client's "
                                       "first text (server engines' fitted lead_tokens; 0 elsewhere)"},
    "Prefill": {"tok_s": "null when the device has no published FLOP/s figure"},
}
# the names a JSON field's annotation may use (a float may be null: strict JSON writes no Infinity)
JSON_TYPES = {"float": Optional[float], "int": int, "str": str, "bool": bool, "dict": dict, "list": list,
              "None": None}
# a JSON key that is a property of the record, not a field of it
PROPERTIES = {"Prediction": {"hypothetical": bool}}


def json_fields(cls) -> list:
    """The dataclass fields of ``cls`` that its ``to_dict`` writes: all but the in-memory objects (``repr=False``)."""
    return [f for f in dataclasses.fields(cls) if f.repr]


def json_model(cls, types: dict, doc: str | None = None) -> type[BaseModel]:
    """A pydantic model of ``cls``'s JSON document: a field without a default is required, one with a default may be
    left out (``to_dict`` leaves out an empty section); ``types`` names the models of nested records."""
    described = DESCRIPTIONS.get(cls.__name__, {})
    spec = {}
    for f in json_fields(cls):
        kind = eval(f.type, {"__builtins__": {}}, {**JSON_TYPES, **types}) if isinstance(f.type, str) else f.type
        default = (f.default if f.default is not dataclasses.MISSING else
                   None if f.default_factory is dataclasses.MISSING else f.default_factory())
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        spec[f.name] = (kind, Field(... if required else default, description=described.get(f.name)))
    for name, kind in PROPERTIES.get(cls.__name__, {}).items():
        spec[name] = (kind, Field(..., description=described.get(name)))
    return create_model(cls.__name__, __base__=Closed, __doc__=doc, **spec)


def _prediction_models():
    types, out = {}, {}
    for record in (MemoryRecord, DecodeRecord, PrefillRecord):
        out[record.__name__] = json_model(record, types, f"The {record.__name__.lower()} section of a prediction.")
    types.update(out)
    out["Prediction"] = json_model(PredictionRecord, types, "The `tokspeed predict --json` document.")
    return out


_generated = _prediction_models()
Memory, Decode, Prefill, Prediction = (_generated[k] for k in ("Memory", "Decode", "Prefill", "Prediction"))


class Stage(Open):
    key: str
    label: str
    phase: str
    unit: str
    data_from: str
    seconds: float
    share: float
    bound: str


class Lever(Open):
    lever: str
    what_if: str
    tok_s: Optional[float]
    bytes_per_token: float
    speedup: Optional[float]
    fits: bool


class Explanation(Open):
    """The `tokspeed explain --json` document."""
    mode: str
    tokens: int
    context: int
    total_s: float
    tok_s: Optional[float]
    ridge_flops_per_byte: Optional[float] = Field(description="null when the device has no FLOP/s figure")
    matmul_tflops: Optional[float]
    stages: list[Stage]
    levers: list[Lever]
    prediction: Prediction


class CurvePoint(BaseModel):
    context: int
    tok_s: Optional[float]
    bound_tok_s: Optional[float]
    fits: bool


class Way(Open):
    """One way a setup that does not fit would run, with its figure."""
    kind: str = Field(description="offload | gpus | format | context | batch")
    label: str
    tok_s: Optional[float]
    fits: bool
    settings: dict[str, str] = Field(description="the form settings that select it")


class RooflinePoint(BaseModel):
    label: str
    intensity: float = Field(description="FLOP per byte moved")
    flops_per_s: float = Field(description="FLOPs ÷ the stage's predicted time")
    bound: str


class Calculator(BaseModel):
    """Everything the calculator page shows for one setting, in one round trip."""
    prediction: Prediction
    explanation: Explanation
    context_curve: list[CurvePoint]
    roofline: dict[str, list[RooflinePoint]] = Field(description="decode (and prefill) stages at their attained "
                                                                 "FLOP/s and arithmetic intensity")
    hypothetical: bool


class Upload(BaseModel):
    model_config = ConfigDict(protected_namespaces=())
    model: str
    name: str
    params_b: float
    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    vocab_size: int


class Alternatives(BaseModel):
    prediction: Prediction
    alternatives: list[Way] = Field(description="empty when the setup fits; those that fit first, fastest first")


class FitRow(Open):
    """One row of `tokspeed fit --json`."""
    model: str
    quant: str
    fits: bool


class FitList(BaseModel):
    hardware: str
    rows: list[FitRow]


MAX_SERVE_GPUS = 16        # a search over 16 devices takes ~1-2 s of CPU (benchmarks/RESULTS_serving.md: 8 GPUs)


class ServeQuery(BaseModel):
    """A serving search (`tokspeed serve --json`): catalog names only (never a file or an upload), sizes bounded."""
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str = Field(max_length=128, description="a catalog id (see /api/models)")
    hardware: str = Field(max_length=128, description="a catalog id (see /api/hardware)")
    quant: Optional[str] = Field(None, max_length=32, description="weight format; default: the model's released format")
    kv_dtype: str = Field("f16", max_length=16, description="KV-cache dtype")
    engine: str = Field(default_engine("serve"), max_length=32, description="serving engine: " + engine_help())
    engine_version: Optional[str] = Field(None, max_length=32, description="engine era (year-month)")
    gpus: int = Field(8, ge=1, le=MAX_SERVE_GPUS, description="devices the layouts share")
    isl: int = Field(1024, ge=1, le=32768, description="prompt tokens per request")
    osl: int = Field(256, ge=1, le=8192, description="output tokens per request")
    slo_ttft_ms: Optional[float] = _f(lo_gt=0, hi=1e6, desc="time to first token SLO (p50), ms")
    slo_tpot_ms: Optional[float] = _f(lo_gt=0, hi=1e5, desc="time per output token SLO (p50), ms")


class FrontierPoint(BaseModel):
    tok_s_per_gpu: float
    tok_s_per_user: float


class ServeConfig(Open):
    """One configuration of `tokspeed serve --json` (docs/serving.md: layout, concurrency, rates, percentiles)."""
    layout: dict
    concurrency: int
    output_tok_s_per_gpu: float
    tok_s_per_user: Optional[float]
    meets_slo: Optional[bool]


class Serve(Open):
    """`tokspeed serve --json` in search mode: the best configuration of each layout, best first, and the frontier."""
    model: str
    hardware: str
    gpus: int
    engine: str
    isl: int
    osl: int
    configs: list[ServeConfig]
    frontier: list[FrontierPoint]
