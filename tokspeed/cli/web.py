"""`tokspeed web` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("web", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed web` is not implemented yet")
