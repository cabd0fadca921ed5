"""The `predict --json` document is declared once: the web's response models (tokspeed/web/schemas.py) are generated
from the dataclasses that hold it, and real documents hold against them key for key (no key undeclared, none
declared that no document carries), so the two cannot drift apart."""

import dataclasses

import pytest

pytest.importorskip("pydantic")

from tokspeed import predict  # noqa: E402
from tokspeed.memory import Memory  # noqa: E402
from tokspeed.predict import Decode, Prediction, Prefill  # noqa: E402
from tokspeed.web import schemas  # noqa: E402

SETUPS = [
    dict(model="llama-3-8b", hardware="rtx-4090"),                                         # one device, fits
    dict(model="llama-3-70b", hardware="rtx-4090", quant="Q4_K_M"),                        # hypothetical
    dict(model="llama-3-70b", hardware="rtx-4090", quant="Q4_K_M", offload="auto"),        # offload section
    dict(model="llama-3-70b", hardware="h100-sxm", gpus=2, parallel="tp", users=8),       # devices, serving
    dict(model="llama-2-7b", hardware="rtx-4090", context=8000),                           # past the window: warnings
]


@pytest.fixture(scope="module")
def docs():
    return [predict(s.pop("model"), s.pop("hardware"), **s).to_dict() for s in map(dict, SETUPS)]


def test_models_are_the_records_fields():
    for record, model in ((Memory, schemas.Memory), (Decode, schemas.Decode), (Prefill, schemas.Prefill)):
        assert set(model.model_fields) == {f.name for f in dataclasses.fields(record)}, record
    # objects, not JSON; and the band's bookkeeping (which kinds ran a layer split in turn, the fullest device's share
    # of its memory: bands.prediction_basis)
    in_memory = {"spec", "hw", "storage", "engine_profile", "layout", "band_in_turn", "band_fill"}
    assert set(schemas.Prediction.model_fields) == {f.name for f in dataclasses.fields(Prediction)} - in_memory | {
        "hypothetical"}
    assert schemas.Prediction.model_fields["memory"].annotation is schemas.Memory


def test_every_document_holds_against_the_model(docs):
    for doc in docs:
        schemas.Prediction.model_validate(doc)          # extra keys are refused: a key the model lacks fails here


def test_every_declared_key_appears_in_some_document(docs):
    seen = set().union(*map(set, docs))
    assert seen == set(schemas.Prediction.model_fields)
    assert {"offload", "serving", "warnings"} <= seen and any(d["hypothetical"] for d in docs)


def test_a_key_the_record_lacks_is_refused(docs):
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        schemas.Prediction.model_validate({**docs[0], "speed": 1.0})
    with pytest.raises(ValidationError):
        schemas.Decode.model_validate({**docs[0]["decode"], "tok_s_median": 1.0})
    broken = {k: v for k, v in docs[0].items() if k != "ttft_s"}
    with pytest.raises(ValidationError):
        schemas.Prediction.model_validate(broken)
