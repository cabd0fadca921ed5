"""Name lookup shared by the device and link catalogs: case- and punctuation-insensitive, with
ambiguous short names reported instead of silently picking one."""

from __future__ import annotations

import re

from ..errors import UserError, did_you_mean


def name_key(name: str) -> str:
    """'RTX 4090' == 'rtx-4090' == 'rtx_4090'; keeps '.' and '+' ('PCIe 4.0', 'Max+ 395')."""
    return re.sub(r"[^a-z0-9.+]", "", str(name).lower())


class NameIndex:
    """Maps ids, full names and aliases to ids. Ids and full names win over aliases; an alias
    shared by several entries (``h100``: SXM, PCIe, NVL) is ambiguous: it takes its default variant where one is
    given (``defaults``: name -> (id, why)), with a note naming the others, else it names its candidates."""

    def __init__(self, what: str, entries, defaults: dict | None = None):
        """``entries``: iterable of (id, name, aliases); ``defaults``: {name: (id, why)}."""
        self.what = what
        self.defaults = {name_key(k): v for k, v in (defaults or {}).items()}
        self.exact: dict[str, str] = {}
        alias_to: dict[str, list[str]] = {}
        entries = [(eid, name, tuple(aliases)) for eid, name, aliases in entries]
        for eid, name, aliases in entries:
            for key in (name_key(eid), name_key(name)):
                self.exact.setdefault(key, eid)
            for a in aliases:
                alias_to.setdefault(name_key(a), [])
                if eid not in alias_to[name_key(a)]:
                    alias_to[name_key(a)].append(eid)
        self.unique = {k: v[0] for k, v in alias_to.items() if len(v) == 1 and k not in self.exact}
        self.ambiguous = {k: v for k, v in alias_to.items() if len(v) > 1 and k not in self.exact}
        self.choices = sorted({str(x) for eid, name, aliases in entries for x in (eid, name, *aliases)})

    def resolve(self, name: str) -> str:
        return self.resolve_note(name)[0]

    def default_of(self, key: str) -> tuple[str, str] | None:
        """(id, why) of the default variant of a name shared by several entries, or None: its own entry in
        ``defaults``, else the default among the entries it is shared by (``default_among``: "4060-ti" as
        "rtx-4060-ti")."""
        hit = self.defaults.get(key)
        if hit is None and key in self.ambiguous:
            hit = self.default_among(self.ambiguous[key])
        return hit

    def default_among(self, ids) -> tuple[str, str] | None:
        """(id, why) of the default variant for a set of candidate entries: the default of a shared name whose
        entries hold every candidate, the default itself one of them; None where no default covers them (the one
        rule for a shared name and for the devices a loose name matches)."""
        ids = set(ids)
        for k, (eid, why) in self.defaults.items():
            if eid in ids and ids <= set(self.ambiguous.get(k, ())) | {eid}:
                return eid, why
        return None

    def resolve_note(self, name: str) -> tuple[str, str | None]:
        """(id, note): the note, when the name was shared by several entries, says which one was taken, why,
        and which others it could have meant."""
        eid, why, others = self.pick(name)
        if why is None:
            return eid, None
        also = f"; also: {', '.join(others)}" if others else ""
        return eid, f"{self.what} {name!r} taken as {eid} ({why}){also}"

    def pick(self, name: str) -> tuple[str, str | None, list[str]]:
        """(id, why, others): ``why`` is None for an id, full name or unique alias; for a name shared by several
        entries it is why the default variant was taken, and ``others`` the entries it could have meant."""
        key = name_key(name)
        if key in self.exact:
            return self.exact[key], None, []
        if key in self.unique:
            return self.unique[key], None, []
        default = self.default_of(key)
        if default is not None:
            eid, why = default
            return eid, why, [e for e in self.ambiguous.get(key, ()) if e != eid]
        if key in self.ambiguous:
            raise UserError(f"{self.what} {name!r} is ambiguous", "one of " + ", ".join(self.ambiguous[key]))
        hint = did_you_mean(str(name), self.choices)
        raise UserError(f"unknown {self.what} {name!r}", hint or "see `tokspeed hardware` for the list")
