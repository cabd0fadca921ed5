"""`tokspeed inspect` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("inspect", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed inspect` is not implemented yet")
