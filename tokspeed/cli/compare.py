"""`tokspeed compare` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("compare", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed compare` is not implemented yet")
