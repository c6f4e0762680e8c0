"""The deployed shape, rehearsed: each stack's functions configured only from its template, run on moto.

Per stack (table-only and prod with OpenSearch): the README flow answers as API.md says through the
authorizer and the API, the indexer makes pending entries searchable, the template's own state machine
erases the user, and every AWS call each function made is allowed by its role in the template.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem.settings import Env, Settings
from tests.cloud.conftest import Flow
from tests.cloud.rehearsal import OVERRIDDEN
from tests.synthesis import PROD_OPENSEARCH


def test_the_readme_flow_answers_through_the_authorizer_and_the_api(flow: Flow) -> None:
    r = flow.replies
    assert r["health"].status == 200
    assert r["no_key"].status == 401
    assert r["bad_key"].status == 401
    assert r["other_tenant"].status == 403, r["other_tenant"].body
    assert r["store_session"].status == 200
    assert r["store_session"].body["stored"] == 2
    assert r["store_project"].status == 201, r["store_project"].body
    assert r["store_while_embedder_down"].status == 201, r["store_while_embedder_down"].body
    assert r["store_note"].status == 201
    assert r["forget_note"].status == 204, r["forget_note"].body
    assert r["store_chat_2"].status == 200
    assert (r["forget_session"].status, r["forget_session"].body) == (200, {"deleted": 1})
    assert r["semantic_search"].body["entries"][0]["content"]["parts"][0]["text"] == "My dog is called Pixel"
    assert "degraded" not in r["semantic_search"].body
    keyword = [e["content"]["parts"][0]["text"] for e in r["keyword_search"].body["entries"]]
    assert keyword == ["I prefer dark mode in every editor"]
    assert "Budget is 2k EUR" in [e["content"]["parts"][0]["text"] for e in r["project_list"].body["entries"]]
    # And the routes issue 43 added answer through the gateway: a correction with its history, the app's users
    # (for the app's own key only) and its parked extraction jobs
    assert (r["correct_budget"].status, r["correct_budget"].body["revision"]) == (200, 2), r["correct_budget"].body
    versions = [v["content"]["parts"][0]["text"] for v in r["budget_history"].body["versions"]]
    assert versions == ["Budget is 2k EUR", "Budget is 3k EUR"], r["budget_history"].body
    assert "alice" in [u["user_id"] for u in r["app_users"].body["users"]], r["app_users"].body
    assert r["app_users_other_tenant"].status == 403, r["app_users_other_tenant"].body
    assert (r["extraction_jobs"].status, r["extraction_jobs"].body["jobs"]) == (200, [])
    assert r["remember"].status == 200
    assert r["relate"].status == 200
    assert "Pixel" in r["profile_card"].body["text"]
    assert any(result["entity"]["name"] == "Pixel" for result in r["graph_search"].body["results"])
    exported = {e["content"]["parts"][0]["text"] for e in r["export"].body["entries"]}
    assert exported == {
        "I prefer dark mode in every editor",
        "My dog is called Pixel",
        "Budget is 3k EUR",
        "My cat is Miso",
    }
    assert [v["content"]["parts"][0]["text"] for v in r["export"].body["memory_history"]] == ["Budget is 2k EUR"]


def test_the_templates_state_machine_erases_the_user(flow: Flow) -> None:
    status = flow.replies["deletion_status"].body
    assert status["status"] == "SUCCEEDED", json.dumps(status)
    assert status["deleted"]["entries"] == 4
    after = flow.replies["export_after_erasure"].body
    assert after["entries"] == []
    assert after["memory_history"] == []
    assert after["graph"]["entities"] == []
    if flow.opensearch:
        assert status["deleted"]["vectors"] == 4
        assert flow.vectors_after_erasure == 0


@pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)
def test_the_indexer_embeds_an_entry_stored_while_the_embedder_was_down(flow: Flow) -> None:
    assert flow.indexer_batches
    failed = [(b["failed_records"], b["errors"]) for b in flow.indexer_batches if b["batchItemFailures"]]
    assert failed == []
    miso = flow.replies["semantic_search_embedded_later"].body["entries"][0]
    assert miso["content"]["parts"][0]["text"] == "My cat is Miso"
    writes = [c for c in flow.deployment.recorder.calls if c.principal.startswith("ComputeIndexerRole")]  # type: ignore[union-attr]
    assert any(c.action == "dynamodb:PutItem" for c in writes), "the indexer never wrote an embedding back"


def test_each_function_runs_with_the_environment_its_template_gives_it(flow: Flow) -> None:
    d = flow.deployment
    table = d.template.physical[d.template.one("AWS::DynamoDB::Table")].ref
    secret = d.template.physical[d.template.one("AWS::SecretsManager::Secret")].ref
    # (the prod shape runs extraction too: tests/synthesis.py)
    assert set(d.functions) == (
        {"api", "authorizer", "deletion", "indexer", "extraction", "console", "redrive", "prehook"}
        if flow.opensearch
        else {"api", "authorizer", "deletion", "console", "redrive", "snapshots", "prehook"}
    )
    # The console's function serves static files: no store settings at all (and its role grants no data); the
    # pre-traffic hook knows only the versions it checks
    assert not any(name.startswith("MEMORY_") for name in d.functions["console"].variables)
    hook_names = {name for name in d.functions["prehook"].variables if name.startswith("MEMORY_")}
    assert hook_names == {Env.PREHOOK_TARGET, Env.PREHOOK_AUTHORIZER_TARGET}
    hook = Settings.from_env(d.functions["prehook"].variables)
    assert hook.prehook_target
    assert hook.prehook_authorizer_target
    for fn in (f for f in d.functions.values() if f.name not in ("console", "prehook")):
        process = d.lambda_environment(fn)
        changed = {k for k, v in fn.variables.items() if process.get(k) != v} | (set(process) - set(fn.variables))
        assert changed - set(OVERRIDDEN) == {k for k in process if k.startswith("AWS_")}, fn.name
        settings = Settings.from_env(fn.variables)
        assert (settings.store, settings.table_name) == ("dynamodb", table), fn.name
        assert (settings.auth, settings.embedder) == ("required", "bedrock"), fn.name
        assert settings.receipt_key_secret_arn == secret, fn.name
        if flow.opensearch:
            assert settings.vector_index == "opensearch", fn.name
            assert settings.opensearch_endpoint
            assert settings.opensearch_endpoint.endswith(".aoss.amazonaws.com")
            assert settings.opensearch_service == "aoss", f"{fn.name} would sign OpenSearch Serverless requests as es"
            assert fn.variables.get(Env.OPENSEARCH_SERVICE) == "aoss", "the stack says the signing service itself"
        else:
            assert (settings.vector_index, settings.opensearch_endpoint) == ("exact", None), fn.name
        # On the table backend the API, the erasure steps and the writer know the snapshot bucket; only the API
        # asks for snapshots (the writer never asks itself)
        keeps = not flow.opensearch and fn.name in ("api", "deletion", "snapshots")
        assert (settings.snapshots == "s3", settings.snapshot_bucket is not None) == (keeps, keeps), fn.name
        assert (settings.snapshot_queue_url is not None) == (keeps and fn.name == "api"), fn.name
        # Only the API (which writes pending rows) and extraction are told of the model and the wake queue
        learns = flow.opensearch and fn.name in ("api", "extraction")
        assert (settings.model != "none", settings.extraction_queue_url is not None) == (learns, learns), fn.name
    assert Settings.from_env(d.functions["api"].variables).deletion_state_machine_arn == d.state_machine_arn


def test_every_aws_call_is_allowed_by_the_callers_role(flow: Flow, record_property: Any) -> None:
    d = flow.deployment
    stack = d.stack
    for role, calls in d.calls_by_role().items():
        record_property(f"rehearsal:{stack} calls of {role}", "; ".join(calls))
    for role, grants in d.unused_grants().items():
        record_property(f"rehearsal:{stack} grants of {role} no call used", "; ".join(grants))
    assert d.recorder is not None
    assert d.recorder.calls
    assert d.violations() == []


def test_the_table_backend_writes_the_users_snapshot_when_asked_and_erasure_deletes_it(flow: Flow) -> None:
    if flow.opensearch:
        assert "snapshots" not in flow.deployment.functions  # OpenSearch holds the vectors: no snapshots
        return
    # Given the flow's searches, which read the user's partition whole (a cold container) and asked the queue
    # the template names: the snapshot function, fed by its mapping, wrote the snapshot with its own role
    assert flow.snapshot_delivery is not None
    assert flow.snapshot_delivery["batchItemFailures"] == []
    assert flow.snapshots["before"] is True
    # Then the user's erasure deleted it, through the erasure steps' grants
    assert flow.snapshots["after"] is False
    assert flow.deployment.violations() == []
