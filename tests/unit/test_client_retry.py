"""The clients' retry policy: which answers are retried, and how long it waits."""

from __future__ import annotations

import email.utils

from agentmem.client import UNREACHABLE, RetryPolicy, retry_after_seconds


def test_retry_after_reads_seconds_and_http_dates() -> None:
    assert retry_after_seconds("3") == 3.0
    assert retry_after_seconds("0.5") == 0.5
    assert retry_after_seconds("-2") == 0.0
    assert retry_after_seconds(email.utils.formatdate(1_000_030.0, usegmt=True), now=1_000_000.0) == 30.0
    assert retry_after_seconds(email.utils.formatdate(999_000.0, usegmt=True), now=1_000_000.0) == 0.0
    assert retry_after_seconds(None) is None
    assert retry_after_seconds("soon") is None


def test_backoff_is_jittered_exponential_and_capped() -> None:
    policy = RetryPolicy(retries=10, base=0.1, cap=1.0)
    for attempt in range(10):
        waits = [policy.delay(attempt, 503, None, safe=True) for _ in range(200)]
        assert all(w is not None and 0 <= w <= min(1.0, 0.1 * 2**attempt) for w in waits)
        assert len(set(waits)) > 1  # jittered, not one fixed wait
    assert policy.delay(10, 503, None, safe=True) is None  # retries used up


def test_retry_after_is_honoured_up_to_its_limit() -> None:
    policy = RetryPolicy(base=0.1, max_retry_after=60)
    waits = [policy.delay(0, 429, "5", safe=True) for _ in range(100)]
    assert all(w is not None and 5.0 <= w <= 5.01 for w in waits)
    assert policy.delay(0, 429, "3600", safe=True) is None  # too long to wait: raise now


def test_only_throttling_unavailability_and_no_answer_are_retried_and_only_when_safe() -> None:
    policy = RetryPolicy()
    for status in (429, 503, UNREACHABLE):
        assert policy.delay(0, status, None, safe=True) is not None
        assert policy.delay(0, status, None, safe=False) is None
    for status in (200, 201, 204, 400, 404, 409, 422, 500, 502):
        assert policy.delay(0, status, None, safe=True) is None
    assert RetryPolicy(retries=0).delay(0, 503, None, safe=True) is None
