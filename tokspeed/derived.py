"""Values derived from an immutable object, kept on the object; frozen values as cheap cache keys.

A frozen dataclass (``ModelSpec``, ``Hardware``, ``EngineProfile``, ``QuantScheme``) cannot change, so what is
computed from it (a weight ledger, a rate table, a device view, its own hash) stays true for as long as the object
lives. ``derived(obj)`` is a dict held in the object's own ``__dict__`` (written there directly, as
``functools.cached_property`` does): the cache dies with the object, and a new object (``dataclasses.replace``, a
device view) starts empty. ``hash_once`` makes a frozen dataclass's value hash computed once per object, so a tuple
of such values is a cheap cache key. Caches are never keyed by ``id()``: an address outlives its object, and a new
object at an old address would find the old one's numbers.
"""

from __future__ import annotations

SLOT = "_derived"


def derived(obj) -> dict:
    """The dict of values derived from ``obj``, kept on ``obj`` (created empty on first use)."""
    d = obj.__dict__
    got = d.get(SLOT)
    if got is None:
        got = d[SLOT] = {}
    return got


def hash_once(cls):
    """Class decorator for a frozen dataclass: its value hash is computed on first use and kept on the object; the
    kept values are left out of pickles and copies (a hash is only valid in the process that computed it)."""
    by_value = cls.__hash__

    def __hash__(self):
        kept = self.__dict__.get(SLOT)          # derived(self) inlined: a hash is asked many times an answer
        h = kept.get("hash") if kept is not None else None
        if h is None:
            h = derived(self)["hash"] = by_value(self)
        return h

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != SLOT}

    cls.__hash__ = __hash__
    cls.__getstate__ = __getstate__
    return cls
