"""The one exception the web API raises for a request it refuses: an HTTP status, a message, the field."""

from __future__ import annotations


class ApiError(Exception):
    """400 for a value over the API's limits, 404 for something that is not there, 422 for a malformed
    field; ``field`` names the query field at fault when there is one."""

    def __init__(self, status: int, message: str, field: str | None = None, suggestion: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field
        self.suggestion = suggestion
