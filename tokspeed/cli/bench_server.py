"""`tokspeed bench-server` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("bench-server", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed bench-server` is not implemented yet")
