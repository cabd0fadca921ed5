"""``tokspeed plan``: which hardware meets a speed target for a model.

For every device in the catalog it tries, in order of cost:
1. the device alone, when the model fits;
2. a GPU with weights offloaded to system RAM, when it does not: llama.cpp ``--offload auto`` (and
   ``experts`` for MoE models), other engines ``stream``;
3. the smallest group of 2, 4, 8 or 16 such devices that holds the model (``--parallel`` default of
   the engine: layer split for llama.cpp, tensor parallel otherwise; tp=8 x pp when the heads do
   not split further), and twice that many when the smallest group is too slow.
A setup meets the target when its expected per-user decode tok/s (at ``--users`` concurrent users, or
``--batch``) reaches ``--target-tok-s``. Ranked by hourly price when ``--prices`` gives one, else by
board power (TDP x devices), then by device count; ``headroom`` is expected / target.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engines.compat import engines_for, runtime_of
from ..engines.profile import check_engine_build
from ..errors import UserError
from ..hardware.devices import all_hardware
from ..predict import predict
from ..scale.interconnect import scale_up_reach
from ..userfile import read_toml
from ..workload import DEFAULT_ENGINE, engine_build

GROUP_SIZES = (2, 4, 8, 16)


@dataclass
class Option:
    hardware: str
    name: str
    setup: str            # "1 device" | "offload: 40/81 layers on GPU" | "4 x split"
    devices: int
    tok_s: float          # per user
    aggregate_tok_s: float
    memory_bytes: float
    capacity_bytes: float
    power_w: float | None
    price_per_hour: float | None
    meets: bool
    headroom: float
    fits: bool
    kwargs: dict

    def to_dict(self) -> dict:
        d = dict(self.__dict__)
        d.pop("kwargs")
        d["options"] = {k: v for k, v in self.kwargs.items() if v not in (None, 1, "none")}
        return d


def load_prices(path) -> dict[str, float]:
    """A TOML table ``hardware-id = USD per device-hour`` (your cloud or amortised price)."""
    p, data = read_toml(path, "prices file", "write lines like  h100-sxm = 2.99")
    out = {}
    for k, v in data.items():
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
            raise UserError(f"{p}: price of {k} must be a non-negative number of USD per hour")
        out[k.lower()] = float(v)
    return out


def parallel_for(spec, engine: str, n: int, hw=None) -> str:
    """llama.cpp: layer split. Serving engines: tensor parallel within the scale-up fabric's reach
    (and the head count), pipeline stages across groups."""
    if runtime_of(engine) == "llama.cpp":
        return "split"
    reach = scale_up_reach(hw) if hw is not None and hw.scale_up_gbps else n
    tp = max(t for t in range(1, n + 1) if n % t == 0 and spec.n_heads % t == 0 and t <= reach)
    if tp == n:
        return "tp"
    return "pp" if tp == 1 else f"tp={tp},pp={n // tp}"


def runs_on(engine: str, hw) -> bool:
    """Whether the engine runs on the device at all (the capability table, ``tokspeed.engines.compat``)."""
    return engine.strip().lower() == "ideal" or engine.strip().lower() in engines_for(hw)


def offload_modes(spec, engine: str) -> list[str]:
    """llama.cpp offloads whole layers (and, for MoE, just the experts); other engines stream."""
    if runtime_of(engine) == "llama.cpp":
        return ["auto", "experts"] if spec.is_moe else ["auto"]
    return ["stream"]


def candidate_devices(kinds=("gpu", "soc", "accelerator", "cpu")):
    return [h for h in all_hardware() if h.kind in kinds and "unstated" not in h.id]


def _option(pred, hw, setup, n, target, users, price) -> Option:
    x = pred.extra
    if users:
        u = x["serving"]["users"]
        tok_s, agg = u["per_user_tok_s"], u["aggregate_tok_s"]
    else:
        tok_s, agg = pred.decode.tok_s, pred.decode.aggregate_tok_s
    fits = pred.memory.fits and (not users or x["serving"]["users"]["fits"])
    power = hw.tdp_w * n if hw.tdp_w else None
    return Option(hw.id, hw.name, setup, n, tok_s, agg, pred.memory.total_bytes, pred.memory.capacity_bytes, power,
                  price * n if price is not None else None, fits and tok_s >= target, tok_s / target, fits,
                  {"gpus": n})


def plan(model, target_tok_s: float, quant=None, engine=DEFAULT_ENGINE, context=0, batch=1, users=None,
         budget=None, prices=None, kv_dtype="f16", hardware=None, offload=True, engine_version: str | None = None,
         flash_attention: bool | None = None) -> list[Option]:
    """Every setup tried, best first (those that meet the target, then the rest by speed). ``engine_version`` /
    ``flash_attention``: the llama.cpp build and -fa every prediction is for (a device whose backend cannot run
    them is left out, as one the engine does not run on)."""
    if not target_tok_s or target_tok_s <= 0:
        raise UserError("target_tok_s must be positive", field="target_tok_s")
    if budget is not None and not prices:
        raise UserError("budget needs hourly prices", "give prices=FILE.toml (hardware-id = USD per hour)", field="budget")
    prices = prices or {}
    b = users or batch
    build = engine_build(engine_version, flash_attention)
    if build:                        # a bad build or -fa for this engine is one error, not every device left out

        check_engine_build(engine, **build)
    common = dict(quant=quant, kv_dtype=kv_dtype, engine=engine, prompt=0, gen=1, context=context, batch=b,
                  users=users, **build)
    devices = hardware if hardware is not None else candidate_devices()
    out: list[Option] = []
    for hw in devices:
        price = prices.get(hw.id)
        if not runs_on(engine, hw):
            continue
        try:
            one = predict(model, hw, **common)
        except UserError:
            continue
        spec = one.spec
        if one.memory.fits:
            out.append(_option(one, hw, "1 device", 1, target_tok_s, users, price))
            continue
        if offload and hw.kind == "gpu" and hw.host_link_gbps:
            for mode in offload_modes(spec, engine):
                try:
                    p = predict(model, hw, offload=mode, **common)
                except UserError:
                    continue
                off = p.extra["offload"]
                n_all = off["n_layers_with_output"] - (1 if mode == "experts" else 0)
                what = "layers' experts" if mode == "experts" else "layers"
                o = _option(p, hw, f"offload {mode}: {off['gpu_layers']}/{n_all} {what} on GPU",
                            1, target_tok_s, users, price)
                o.kwargs = {"offload": mode}
                out.append(o)
        if hw.kind not in ("gpu", "accelerator"):
            continue
        found = 0
        for n in GROUP_SIZES:
            par = parallel_for(spec, one.engine, n, hw)
            try:
                p = predict(model, hw, gpus=n, parallel=par, **common)
            except UserError:
                continue
            if not p.memory.fits:
                continue
            o = _option(p, hw, f"{n} x {par}", n, target_tok_s, users, price)
            o.kwargs = {"gpus": n, "parallel": par}
            out.append(o)
            found += 1
            if o.meets or found == 2:
                break
    if budget is not None:
        out = [o for o in out if o.price_per_hour is not None and o.price_per_hour <= budget]

    def key(o: Option):
        cost = o.price_per_hour if o.price_per_hour is not None else float("inf")
        power = o.power_w if o.power_w is not None else float("inf")
        return (not o.meets, cost if o.meets else 0, power if o.meets else 0, o.devices if o.meets else 0, -o.tok_s)

    return sorted(out, key=key)


def min_devices(model, hardware, quant=None, engine=DEFAULT_ENGINE, parallel=None, context=0, batch=1,
                limit: int = 64) -> int | None:
    """Fewest devices of ``hardware`` that hold the model at ``context`` tokens (``parallel`` style
    for every count; None if ``limit`` is not enough)."""
    for n in range(1, limit + 1):
        try:
            p = predict(model, hardware, quant=quant, engine=engine, prompt=0, gen=1, context=context, batch=batch,
                        gpus=n, parallel=parallel if n > 1 else None)
        except UserError:
            continue
        if p.memory.fits:
            return n
    return None
