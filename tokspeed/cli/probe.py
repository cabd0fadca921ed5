"""`tokspeed probe` (not implemented yet: a stub that its issue replaces)."""

from ..errors import UserError


def add_parser(sub):
    return sub.add_parser("probe", help="(coming soon)")


def run(args) -> int:
    raise UserError("`tokspeed probe` is not implemented yet")
