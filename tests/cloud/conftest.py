"""The cloud rehearsal tier: each stack deployed into moto from its template, the README flow run through it.

The stacks are synthesized once per session (``synthesized``, shared with tests/infra: same xdist
group). Each stack's deployment lives for this package only (``scope="package"``: moto's state must not
outlive these tests on the worker), and the README flow runs once per stack; the tests then read its
answers and the AWS calls it recorded. The grants no call used are printed in the terminal summary.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.cloud.rehearsal import OPERATOR, BedrockSwitch, Deployment, Gateway
from tests.cloud.template import REGION
from tests.synthesis import DEV_TABLE, PROD_OPENSEARCH, Synthesized, mark_group

APP, OTHER_APP, USER = "shop", "clinic", "alice"
STORE_USER = "bob"
AGENTCORE_ACTOR = "carol"
STORE_VALUE = {"content": "Bob prefers a dark theme", "kind": "preference"}
SCOPE = f"/v1/apps/{APP}/users/{USER}"
# The prod stack first: tests parametrised with [PROD_OPENSEARCH] alone then share its parameter index
# with the others' prod runs, so pytest deploys each stack once rather than six times.
STACKS = [PROD_OPENSEARCH, DEV_TABLE]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_group(items, Path(__file__).resolve().parent)


@dataclass
class Flow:
    deployment: Deployment
    replies: dict[str, Any] = field(default_factory=dict)
    indexer_batches: list[dict[str, Any]] = field(default_factory=list)
    vectors_after_erasure: int | None = None
    snapshot_delivery: dict[str, Any] | None = None
    """The table backend: the snapshot function's answer to the requests the flow's searches sent."""
    snapshots: dict[str, bool] = field(default_factory=dict)
    """The table backend: whether the user's snapshot object was in the bucket, ``before`` and ``after`` erasure."""
    keys: dict[str, str] = field(default_factory=dict)
    """App -> the key the operator made for it (the tests after the flow call with them too)."""

    @property
    def opensearch(self) -> bool:
        return "indexer" in self.deployment.functions


def _entry(text: str) -> dict[str, Any]:
    return {"content": {"role": "user", "parts": [{"text": text}]}, "author": "user"}


def _until(condition: Any, what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


def run_readme_flow(deployment: Deployment, opensearch_url: str | None) -> Flow:
    """The README's flow as a tenant runs it against the deployed API, plus the operator's steps."""
    from agentmem.stores.dynamo_table import DynamoTable
    from agentmem.tenancy.keys import TenantService
    from agentmem.vectors.opensearch import OpenSearchVectorIndex

    flow = Flow(deployment)
    gateway = Gateway(deployment)
    # The operator (docs/deploy.md): keys for two tenants; with OpenSearch, the index (agentmem create-index).
    import boto3

    # Signed with the operator's own credentials, whatever a function invoked on another thread (an erasure
    # running in the background) has put in the environment meanwhile.
    operator = boto3.Session(
        aws_access_key_id=OPERATOR, aws_secret_access_key="operator-secret", region_name=REGION
    ).client("dynamodb")
    tenants = TenantService(DynamoTable(deployment.table_name, client=operator))
    key = tenants.create_key(APP).secret
    other_key = tenants.create_key(OTHER_APP).secret
    flow.keys = {APP: key, OTHER_APP: other_key}
    operator_index = None
    if flow.opensearch:
        assert opensearch_url is not None
        index_name = deployment.functions["api"].variables.get("MEMORY_OPENSEARCH_INDEX", "agent-memory-vectors")
        operator_index = OpenSearchVectorIndex(opensearch_url, index=index_name, engine="lucene")
        operator_index.create_index(1024)

    def call(name: str, method: str, path: str, body: Any = None, **kw: Any) -> Any:
        reply = gateway.request(method, path, body, **kw)
        flow.replies[name] = reply
        return reply

    def export_all(name: str) -> None:
        """GET export, following next_cursor to the end; the pages' sections joined under ``name``."""
        pages = [call(name, "GET", f"{SCOPE}/export", api_key=key)]
        while pages[-1].status == 200 and pages[-1].body.get("next_cursor"):
            pages.append(
                call(name, "GET", f"{SCOPE}/export", query={"cursor": pages[-1].body["next_cursor"]}, api_key=key)
            )
        assert all(page.status == 200 for page in pages), [page.body for page in pages]
        joined = {
            "entries": [],
            "episodes": [],
            "memory_history": [],
            "graph": {"entities": [], "relations": [], "observations": []},
        }
        for page in pages:
            for section in ("entries", "episodes", "memory_history"):
                joined[section] += page.body[section]
            for kind in joined["graph"]:
                joined["graph"][kind] += page.body["graph"][kind]
        flow.replies[name] = type(pages[0])(200, joined, {})

    def pump() -> None:
        if flow.opensearch:
            flow.indexer_batches += deployment.pump_stream()

    call("health", "GET", "/v1/health")
    call("no_key", "POST", f"{SCOPE}/memories/search", {"query": "dark mode"})
    call("bad_key", "POST", f"{SCOPE}/memories/search", {"query": "dark mode"}, api_key="amk_nope_nope")
    call("other_tenant", "POST", f"{SCOPE}/memories/search", {"query": "dark mode"}, api_key=other_key)
    call(
        "store_session",
        "PUT",
        f"{SCOPE}/sessions/chat-1/memories",
        {"entries": [_entry("I prefer dark mode in every editor"), _entry("My dog is called Pixel")]},
        api_key=key,
    )
    call(
        "store_project",
        "POST",
        f"{SCOPE}/memories",
        {"entry": _entry("Budget is 2k EUR"), "project_id": "trip"},
        api_key=key,
    )
    BedrockSwitch.down = True  # an entry stored while the embedder is down: the indexer embeds it later
    try:
        call("store_while_embedder_down", "POST", f"{SCOPE}/memories", {"entry": _entry("My cat is Miso")}, api_key=key)
    finally:
        BedrockSwitch.down = False
    pump()

    def found(name: str, query: str, text: str) -> bool:
        reply = call(name, "POST", f"{SCOPE}/memories/search", {"query": query, "mode": "semantic"}, api_key=key)
        texts = [e["content"]["parts"][0]["text"] for e in (reply.body or {}).get("entries", [])]
        return reply.status == 200 and not reply.body.get("degraded") and text in texts[:1]

    # The vector index refreshes on its own schedule (Serverless has no refresh parameter).
    _until(lambda: found("semantic_search", "my dog is called Pixel", "My dog is called Pixel"), "semantic search")
    if flow.opensearch:
        _until(lambda: found("semantic_search_embedded_later", "my cat is Miso", "My cat is Miso"), "the indexer")
    note = call("store_note", "POST", f"{SCOPE}/memories", {"entry": _entry("A note to forget")}, api_key=key)
    call("forget_note", "DELETE", f"{SCOPE}/memories/{note.body['id']}", api_key=key)
    call("store_chat_2", "PUT", f"{SCOPE}/sessions/chat-2/memories", {"entries": [_entry("Forget me")]}, api_key=key)
    call("forget_session", "DELETE", f"{SCOPE}/sessions/chat-2", api_key=key)
    call("keyword_search", "POST", f"{SCOPE}/memories/search", {"query": "dark mode", "mode": "keyword"}, api_key=key)
    call("project_list", "GET", f"{SCOPE}/memories", query={"project_id": "trip"}, api_key=key)
    # A correction and its history (issue 43, point 4), the app's users and parked jobs: the routes issue 43 added
    budget = flow.replies["store_project"].body["id"]
    corrected = {"role": "user", "parts": [{"text": "Budget is 3k EUR"}]}
    patch = {"content": corrected, "project_id": "trip", "revision": 1}
    call("correct_budget", "PATCH", f"{SCOPE}/memories/{budget}", patch, api_key=key)
    call("budget_history", "GET", f"{SCOPE}/memories/{budget}/history", query={"project_id": "trip"}, api_key=key)
    call("app_users", "GET", f"/v1/apps/{APP}/users", api_key=key)
    call("app_users_other_tenant", "GET", f"/v1/apps/{APP}/users", api_key=other_key)
    call("extraction_jobs", "GET", f"/v1/apps/{APP}/extraction/jobs", api_key=key)
    call(
        "remember",
        "POST",
        f"{SCOPE}/graph/tools/remember",
        {"entity": "Pixel", "entity_type": "dog", "facts": ["likes the beach"]},
        api_key=key,
    )
    call(
        "relate",
        "POST",
        f"{SCOPE}/graph/tools/relate",
        {"source": "alice", "relation": "owns", "target": "Pixel"},
        api_key=key,
    )
    call("profile_card", "GET", f"{SCOPE}/graph/profile-card", api_key=key)
    # LangGraph's store (agentmem.langgraph), for another user of the app: a put, then a ranked search
    store_put = {"op": "put", "user": STORE_USER, "namespace": ["prefs"], "key": "theme", "value": STORE_VALUE}
    call("store_put", "POST", f"/v1/apps/{APP}/store/batch", {"ops": [store_put]}, api_key=key)
    pump()
    search = {"op": "search", "user": STORE_USER, "namespace_prefix": [], "query": "which theme?", "limit": 1}
    get = {"op": "get", "user": STORE_USER, "namespace": ["prefs"], "key": "theme"}
    call("store_read", "POST", f"/v1/apps/{APP}/store/batch", {"ops": [search, get]}, api_key=key)
    call("store_other_tenant", "POST", f"/v1/apps/{APP}/store/batch", {"ops": [get]}, api_key=other_key)
    call("graph_search", "GET", f"{SCOPE}/graph/search", query={"q": "Pixel"}, api_key=key)
    # The AgentCore data plane (docs/agentcore.md), for another user: an event, a record, a retrieval
    agentcore = f"/agentcore/memories/{APP}"
    said = {"conversational": {"content": {"text": "I sail on weekends"}, "role": "USER"}}
    event = {"actorId": AGENTCORE_ACTOR, "sessionId": "ac-1", "eventTimestamp": 1767225600, "payload": [said]}
    call("agentcore_event", "POST", f"{agentcore}/events", event, api_key=key)
    record = {
        "requestIdentifier": "r1",
        "namespaces": [f"/facts/{AGENTCORE_ACTOR}/"],
        "content": {"text": "Carol sails on weekends"},
        "timestamp": 1767225600,
    }
    call("agentcore_records", "POST", f"{agentcore}/memoryRecords/batchCreate", {"records": [record]}, api_key=key)
    pump()
    retrieve = {"namespace": f"/facts/{AGENTCORE_ACTOR}/", "searchCriteria": {"searchQuery": "sailing"}}
    call("agentcore_retrieve", "POST", f"{agentcore}/retrieve", retrieve, api_key=key)
    call("agentcore_other_tenant", "POST", f"{agentcore}/actors", {}, api_key=other_key)
    export_all("export")
    snapshot_exists = _snapshot_probe(deployment)
    if snapshot_exists is not None:  # the table backend: the searches above asked for the user's snapshot
        flow.snapshot_delivery = deployment.deliver_queue("snapshots", _snapshot_queue(deployment))
        flow.snapshots["before"] = snapshot_exists()
    erase = call("erase", "DELETE", SCOPE, api_key=key)
    assert erase.status == 202, erase.body
    deletion = f"{SCOPE}/deletions/{erase.body['deletion_id']}"

    def finished() -> bool:
        reply = call("deletion_status", "GET", deletion, api_key=key)
        return reply.status == 200 and reply.body["status"] != "RUNNING"

    _until(finished, "the erasure workflow", timeout=300)  # the template's drain Wait alone is 30 s
    export_all("export_after_erasure")
    if snapshot_exists is not None:
        flow.snapshots["after"] = snapshot_exists()
    pump()
    if operator_index is not None:
        from agentmem.keys import UserRef

        # The end state, once the index has refreshed (the indexer's last batch replays the stream's older
        # changes before its REMOVEs: a vector may come back for a moment and go again).
        operator_index.client.indices.refresh(index=operator_index.index)
        flow.vectors_after_erasure = operator_index.count_user(UserRef(APP, USER))
    return flow


def _snapshot_queue(deployment: Deployment) -> str:
    [queue] = [q for q in deployment.template.of_type("AWS::SQS::Queue") if "SnapshotsRequests" in q and "Dlq" not in q]
    return queue


def _snapshot_probe(deployment: Deployment) -> Any:
    """Whether the flow's user's snapshot is in the stack's snapshot bucket (the operator looks), or None when
    the stack keeps none (OpenSearch)."""
    if "snapshots" not in deployment.functions:
        return None
    import boto3

    from agentmem.keys import Scope
    from agentmem.search.snapshots import snapshot_key

    bucket = deployment.functions["api"].variables["MEMORY_SNAPSHOT_BUCKET"]
    s3 = boto3.Session(aws_access_key_id=OPERATOR, aws_secret_access_key="operator-secret", region_name=REGION).client(
        "s3"
    )
    key = snapshot_key(Scope(APP, USER).partition)
    return lambda: s3.list_objects_v2(Bucket=bucket, Prefix=key).get("KeyCount", 0) == 1


@pytest.fixture(scope="package", params=STACKS)
def flow(request: pytest.FixtureRequest, synthesized: Synthesized) -> Iterator[Flow]:
    """One stack deployed and the README flow run through it (once per stack for the whole tier)."""
    stack = request.param
    opensearch_url = None
    if stack == PROD_OPENSEARCH:
        opensearch_url = request.getfixturevalue("opensearch_node").url
    deployment = Deployment(synthesized, stack, opensearch_url=opensearch_url)
    with deployment.deployed():
        yield run_readme_flow(deployment, opensearch_url)
