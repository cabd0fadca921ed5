"""`tokspeed plan` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("plan", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed plan` is not implemented yet")
