"""tokspeed.derived: values kept on a frozen object, its hash computed once, neither carried into a copy."""

import copy
import dataclasses
import pickle

from tokspeed.derived import derived, hash_once
from tokspeed.hardware.catalog import get_hardware
from tokspeed.ledger import weight_ledger
from tokspeed.models.catalog import get_model
from tokspeed.quant.schemes import scheme_for


@hash_once
@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    y: int


def test_hash_is_the_value_hash_and_kept():
    p = Point(1, 2)
    assert hash(p) == hash((1, 2)) == hash(Point(1, 2))        # a frozen dataclass hashes its field tuple
    assert derived(p)["hash"] == hash((1, 2))


def test_a_copy_or_a_replace_starts_empty():
    p = Point(1, 2)
    derived(p)["answer"] = 42
    for q in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p), dataclasses.replace(p)):
        assert q == p and "answer" not in derived(q)
    assert derived(dataclasses.replace(p, x=3)) == {}


def test_an_equal_spec_finds_the_same_ledger():
    """Keyed by value: a spec rebuilt with the same fields (another object) gets the ledger already built; one
    with a field changed gets its own, with the bytes that change implies (one layer fewer: fewer weights)."""
    spec = get_model("llama-3-8b")
    same = dataclasses.replace(spec)
    assert same is not spec
    q = scheme_for("Q4_K_M", spec)
    assert weight_ledger(same, q) is weight_ledger(spec, q)
    fewer = dataclasses.replace(spec, n_layers=spec.n_layers - 1)
    assert weight_ledger(fewer, q).resident < weight_ledger(spec, q).resident


def test_a_device_is_a_value_key():
    hw = get_hardware("rtx-4090")
    assert {hw: 1}[dataclasses.replace(hw)] == 1
