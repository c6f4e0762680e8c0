"""Every AgentCore page fits Lambda's response (issue 33, point 4), on both tables through the real handler:
thirty events within the documented size limits, listed thirty a page, made a 7.4 MB answer (over Lambda's 6 MB:
502 on every retry in the cloud). Now a page holds what fits the 4 MiB budget, with a nextToken at the cut, and
the tokens lead through every event once."""

from __future__ import annotations

from agentmem.budget import LAMBDA_RESPONSE_LIMIT, RESPONSE_BUDGET_BYTES
from tests.support import ApiClient

MEMORY = "budget-memory-01"
SESSION = f"/agentcore/memories/{MEMORY}/actor/alice/sessions/s1"
EVENTS = 30


def test_a_page_of_large_events_stays_within_the_budget_and_pages_through_all(api: ApiClient) -> None:
    # Given thirty events of ~180 KB each (a blob of JSON text, within the 256 KiB content limit)
    blob = {"notes": ["x" * 1000] * 180}
    for n in range(EVENTS):
        event = {"actorId": "alice", "sessionId": "s1", "eventTimestamp": 1.7e9 + n, "payload": [{"blob": blob}]}
        assert api.post(f"/agentcore/memories/{MEMORY}/events", event).status == 201
    # When they are listed thirty a page, following nextToken
    seen: list[str] = []
    pages = 0
    token = None
    while True:
        reply = api.post(SESSION, {"maxResults": 30, **({"nextToken": token} if token else {})})
        assert reply.status == 200, reply.body
        pages += 1
        # Then every page fits the budget (and Lambda's limit), and none is empty
        assert reply.wire_bytes <= RESPONSE_BUDGET_BYTES + 512 * 1024 < LAMBDA_RESPONSE_LIMIT
        assert reply.body["events"]
        seen += [e["eventId"] for e in reply.body["events"]]
        token = reply.body.get("nextToken")
        if token is None:
            break
    # And the pages hold every event once, newest first
    assert pages > 1
    assert len(seen) == len(set(seen)) == EVENTS
    assert seen == sorted(seen, reverse=True)
