"""`tokspeed compare-runs` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("compare-runs", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed compare-runs` is not implemented yet")
