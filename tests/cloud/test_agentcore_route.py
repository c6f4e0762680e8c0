"""The AgentCore Memory data plane (docs/agentcore.md) as deployed: ``/agentcore/{proxy+}`` through the gateway's
tenant authorizer to the API function configured by its template, on each stack."""

from __future__ import annotations

from tests.cloud.conftest import AGENTCORE_ACTOR, Flow


def test_agentcore_calls_write_and_retrieve_through_the_deployed_api(flow: Flow) -> None:
    r = flow.replies
    assert r["agentcore_event"].status == 201, r["agentcore_event"].body
    assert r["agentcore_event"].body["event"]["actorId"] == AGENTCORE_ACTOR
    assert r["agentcore_records"].status == 201, r["agentcore_records"].body
    [created] = r["agentcore_records"].body["successfulRecords"]
    assert r["agentcore_retrieve"].status == 200, r["agentcore_retrieve"].body
    [found] = r["agentcore_retrieve"].body["memoryRecordSummaries"]
    assert found["memoryRecordId"] == created["memoryRecordId"]
    assert found["content"] == {"text": "Carol sails on weekends"}
    # another tenant's key reaches the function, which refuses it in the model's shape
    refused = r["agentcore_other_tenant"]
    assert refused.status == 403, refused.body
    assert refused.headers.get("x-amzn-ErrorType") == "AccessDeniedException"
