"""The one exception the web API raises for a request it refuses: an HTTP status, a message, the field."""

from __future__ import annotations

from ..errors import UserError, reword

# a library parameter -> the query field that sets it, where the two names differ (the rest are the same)
QUERY_NAMES = {"flash_attention": "flash_attn"}


class ApiError(Exception):
    """400 for a value over the API's limits, 404 for something that is not there, 422 for a malformed
    field; ``field`` names the query field at fault when there is one."""

    def __init__(self, status: int, message: str, field: str | None = None, suggestion: str | None = None,
                 retry_after_s: int | None = None):
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.status = status
        self.message = message
        self.field = field
        self.suggestion = suggestion


def refusal(e: UserError) -> ApiError:
    """A library UserError as the API's 400, in the query's words, naming the query field at fault."""
    field = QUERY_NAMES.get(e.field, e.field)
    return ApiError(400, reword(e.message, QUERY_NAMES, e.field, "="), field,
                    reword(e.suggestion, QUERY_NAMES, assign="=") if e.suggestion else None)
