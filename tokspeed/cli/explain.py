"""`tokspeed explain` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("explain", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed explain` is not implemented yet")
