"""One error root for the whole library; the API maps it to HTTP in one place.

Every error carries a stable snake_case ``code`` and the HTTP status it stands for, so no caller ever
matches on message text.
"""

from __future__ import annotations

from typing import Any


class MemoryServiceError(Exception):
    """Base of every error the library raises on purpose."""

    code = "internal_error"
    http_status = 500

    def __init__(self, message: str, *, code: str | None = None, details: Any = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details


class MalformedRequest(MemoryServiceError):
    code = "malformed_request"
    http_status = 400


class InvalidInput(MemoryServiceError):
    code = "invalid_input"
    http_status = 422


class PayloadTooLarge(MemoryServiceError):
    code = "payload_too_large"
    http_status = 413


class Unauthorized(MemoryServiceError):
    code = "unauthorized"
    http_status = 401


class Forbidden(MemoryServiceError):
    code = "forbidden"
    http_status = 403


class NotFound(MemoryServiceError):
    code = "not_found"
    http_status = 404


class Conflict(MemoryServiceError):
    code = "conflict"
    http_status = 409


class UserDeletionInProgress(Conflict):
    code = "user_deletion_in_progress"


class MemoryFull(Conflict):
    """The user's memory (one scope) holds as many entries as this deployment's search serves there."""

    code = "user_memory_full"


class ConditionFailed(Conflict):
    """A conditional or transactional write found the item in another state than it required."""

    code = "condition_failed"


class MethodNotAllowed(MemoryServiceError):
    """The path is served, by other methods (``allowed``: the ``Allow`` header)."""

    code = "method_not_allowed"
    http_status = 405

    def __init__(self, allowed: list[str]) -> None:
        super().__init__(f"this path takes {', '.join(allowed)}", details={"allow": allowed})
        self.allowed = allowed


class RateLimited(MemoryServiceError):
    code = "rate_limited"
    http_status = 429


class TooManyInFlight(RateLimited):
    """The tenant has as many requests in flight as its plan allows at once (agentmem/tenancy/admission.py)."""

    code = "too_many_in_flight"


class ModelShareUsed(RateLimited):
    """The tenant used its share of a model this minute (agentmem/tenancy/admission.py): refused before the call."""

    code = "model_share_used"


class Unavailable(MemoryServiceError):
    """A dependency (table, vector index, embedder) cannot be reached."""

    code = "dependency_unavailable"
    http_status = 503


class DeadlineExceeded(Unavailable):
    """The request's time is (nearly) up: no write starts after it, so none lands after an erasure has
    waited for the requests begun before it. Nothing of the refused write was written; a retry runs anew."""

    code = "deadline_exceeded"
