"""`tokspeed tokens` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("tokens", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed tokens` is not implemented yet")
