"""`tokspeed report` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("report", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed report` is not implemented yet")
