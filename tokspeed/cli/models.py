"""`tokspeed models` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("models", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed models` is not implemented yet")
