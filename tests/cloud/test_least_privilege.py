"""What each role may do, read from the template and held against what the rehearsal saw it do.

Each test here failed on the stack as it was (the defects of issue 9): the authorizer could Query and
BatchGetItem every memory, the state machine role held table and key grants its Tasks never use, the
API role could create and update OpenSearch indexes, the deletion steps had no reserved concurrency,
and the environment names were typed again in infra/.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem.settings import ENV_NAMES
from agentmem.tenancy.keys import registry_partition
from tests.cloud.conftest import Flow
from tests.cloud.rehearsal import Deployment, data_policy_allows
from tests.cloud.template import REGION
from tests.synthesis import PROD_OPENSEARCH


def _table_and_key(d: Deployment) -> tuple[str, str]:
    t = d.template
    return (
        t.physical[t.one("AWS::DynamoDB::Table")].attributes["Arn"],
        t.physical[t.one("AWS::KMS::Key")].attributes["Arn"],
    )


def _role_of(d: Deployment, name: str) -> str:
    return d.functions[name].role


def test_the_authorizer_reads_only_the_key_lookup_and_tenant_items(flow: Flow) -> None:
    d = flow.deployment
    table, key = _table_and_key(d)
    policy = d.functions["authorizer"].policy
    # What it did: GetItem of a key lookup (K#<hash>) and of a tenant record (K#T#<app>), nothing else
    calls = [c for c in d.recorder.calls if c.principal == _role_of(d, "authorizer")]  # type: ignore[union-attr]
    assert {c.action for c in calls} == {"dynamodb:GetItem"}
    read = {c.condition_keys()["dynamodb:LeadingKeys"][0] for c in calls}
    assert {pk[:4] == "K#T#" for pk in read} == {True, False}
    assert all(pk.startswith("K#") for pk in read)
    # What it may do: exactly that (the app's own partition, its usage and receipts, is out of reach)
    assert policy.evaluate("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["K#abc"]}).allowed
    assert policy.evaluate("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["K#T#shop"]}).allowed
    assert not policy.evaluate("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["T#shop"]}).allowed
    assert not policy.evaluate("dynamodb:GetItem", table, {"dynamodb:LeadingKeys": ["S#shop#alice#"]}).allowed
    for action in ("dynamodb:Query", "dynamodb:BatchGetItem", "dynamodb:Scan", "dynamodb:PutItem"):
        assert not policy.evaluate(action, table, {"dynamodb:LeadingKeys": ["K#abc"]}).allowed, action
    through_dynamodb = {"kms:ViaService": [f"dynamodb.{REGION}.amazonaws.com"]}
    assert policy.evaluate("kms:Decrypt", key, through_dynamodb).allowed
    assert not policy.evaluate("kms:GenerateDataKey", key, through_dynamodb).allowed


def test_every_role_uses_the_data_key_only_through_the_services_that_hold_its_data(flow: Flow) -> None:
    # Given every function role of the deployed stack and the data key
    d = flow.deployment
    _, key = _table_and_key(d)

    def through(service: str) -> dict[str, list[str]]:
        return {"kms:ViaService": [f"{service}.{REGION}.amazonaws.com"]}

    for fn in d.functions.values():
        # Then none may call KMS with it directly (a leaked role cannot decrypt what it copies out), nor encrypt
        for action in ("kms:Decrypt", "kms:GenerateDataKey", "kms:Encrypt", "kms:ReEncryptFrom", "kms:CreateGrant"):
            assert not fn.policy.evaluate(action, key).allowed, (fn.name, action)
            assert not fn.policy.evaluate(action, key, through("lambda")).allowed, (fn.name, action)
        assert not fn.policy.evaluate("kms:Encrypt", key, through("dynamodb")).allowed, fn.name
    # And the table's users decrypt through DynamoDB; extraction also through SQS (its wake queue)
    for name in ("api", "authorizer", "deletion"):
        assert d.functions[name].policy.evaluate("kms:Decrypt", key, through("dynamodb")).allowed, name
    if "extraction" in d.functions:
        assert d.functions["extraction"].policy.evaluate("kms:GenerateDataKey", key, through("sqs")).allowed
        assert not d.functions["api"].policy.evaluate("kms:GenerateDataKey", key, through("sqs")).allowed


def test_the_state_machine_role_only_invokes_the_deletion_steps(flow: Flow) -> None:
    d = flow.deployment
    table, key = _table_and_key(d)
    steps = d.template.resolve({"Fn::GetAtt": [d.functions["deletion"].logical_id, "Arn"]})
    calls = {(c.action, c.resource) for c in d.recorder.calls if c.principal == d.state_machine_role}  # type: ignore[union-attr]
    assert calls == {("lambda:InvokeFunction", steps)}
    policy = d.policy_of(d.state_machine_role)
    for action in ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query", "dynamodb:DeleteItem"):
        assert not policy.evaluate(action, table).allowed, action
    for action in ("kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey"):
        assert not policy.evaluate(action, key).allowed, action


@pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)
def test_the_indexer_may_write_back_the_embedding_of_a_pending_entry(flow: Flow) -> None:
    d = flow.deployment
    table, _ = _table_and_key(d)
    puts = [c for c in d.recorder.calls if c.principal == _role_of(d, "indexer") and c.action == "dynamodb:PutItem"]  # type: ignore[union-attr]
    assert puts, "the rehearsal never made the indexer embed a pending entry"
    assert all(d.functions["indexer"].policy.evaluate(c.action, c.resource, c.condition_keys()).allowed for c in puts)
    assert not d.functions["indexer"].policy.evaluate("dynamodb:Query", table).allowed


@pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)
def test_the_opensearch_data_policy_gives_each_role_only_what_it_uses(flow: Flow) -> None:
    d = flow.deployment
    index = f"index/{d.collection}/agent-memory-vectors"
    permissions = ("CreateIndex", "UpdateIndex", "DeleteIndex", "DescribeIndex", "ReadDocument", "WriteDocument")

    def granted(name: str) -> set[str]:
        arn = d.role_arn(_role_of(d, name))
        return {p for p in permissions if data_policy_allows(d.data_policies, arn, f"aoss:{p}", index)}

    assert granted("api") == {"DescribeIndex", "ReadDocument", "WriteDocument"}
    assert granted("deletion") == {"ReadDocument", "WriteDocument"}
    assert granted("indexer") == {"WriteDocument"}
    assert granted("extraction") == {"DescribeIndex", "ReadDocument", "WriteDocument"}  # as the API's
    assert granted("authorizer") == set()
    # And what they used is inside that (the rehearsal's OpenSearch requests, mapped to permissions); extraction's
    # requests are there when its rehearsal (test_extraction_rehearsal.py) ran first
    used = {(c.principal, c.action) for c in d.recorder.calls if c.resource.startswith("index/")}  # type: ignore[union-attr]
    roles = {role for role, _ in used}
    assert {_role_of(d, name) for name in ("api", "deletion", "indexer")} <= roles
    assert roles <= {_role_of(d, name) for name in ("api", "deletion", "indexer", "extraction")}
    for role, action in used:
        assert data_policy_allows(d.data_policies, d.role_arn(role), action, index), (role, action)


def _max_parallel_tasks(states: dict[str, Any]) -> int:
    """At most how many Task states of this state list run at once."""
    widest = 0
    for state in states.values():
        if state["Type"] == "Task":
            width = 1
        elif state["Type"] == "Parallel":
            width = sum(_max_parallel_tasks(branch["States"]) for branch in state["Branches"])
        elif state["Type"] == "Map":
            inner = state.get("ItemProcessor") or state["Iterator"]
            concurrency = state.get("MaxConcurrency", 0)
            assert concurrency > 0, "an unbounded Map could use any number of Lambdas"
            width = concurrency * _max_parallel_tasks(inner["States"])
        else:
            width = 0
        widest = max(widest, width)
    return widest


def test_the_deletion_steps_have_reserved_concurrency_for_two_full_erasures(flow: Flow) -> None:
    d = flow.deployment
    machine = d.template.properties(d.template.one("AWS::StepFunctions::StateMachine"))
    key = d.template.resolve(machine["DefinitionS3Location"])["Key"]
    definition = json.loads(d.synthesized.asset(d.stack, key).read_text())
    per_execution = _max_parallel_tasks(definition["States"])
    reserved = d.template.properties(d.functions["deletion"].logical_id).get("ReservedConcurrentExecutions")
    assert per_execution == 5
    assert reserved is not None, "the deletion steps share the account's concurrency with every tenant's requests"
    assert reserved >= 2 * per_execution


def test_every_variable_the_template_sets_is_a_setting(flow: Flow) -> None:
    for fn in flow.deployment.functions.values():
        ours = {name for name in fn.variables if not name.startswith("POWERTOOLS_")}
        assert ours <= ENV_NAMES, (fn.name, ours - ENV_NAMES)


@pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)
def test_no_function_but_the_authorizer_may_touch_an_api_key_lookup_or_a_tenant_record(flow: Flow) -> None:
    # Given the deployed roles, and a key lookup item's partition (K#<sha256 of the key>)
    d = flow.deployment
    table, _ = _table_and_key(d)
    lookup = {"dynamodb:LeadingKeys": ["K#" + "0" * 64]}
    scope = {"dynamodb:LeadingKeys": ["S#shop#alice#"]}
    writes = ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem")
    tenant_record = {"dynamodb:LeadingKeys": [registry_partition("shop")]}
    for name in ("api", "deletion", "indexer", "extraction"):
        policy = d.functions[name].policy
        # Then none may write one (a compromised function cannot mint a key), nor read one, nor rewrite a
        # tenant's record (its quota and usage-plan key)
        for action in writes:
            assert not policy.evaluate(action, table, lookup).allowed, (name, action)
            assert not policy.evaluate(action, table, tenant_record).allowed, (name, action)
        for action in ("dynamodb:GetItem", "dynamodb:Query"):
            assert not policy.evaluate(action, table, lookup).allowed, (name, action)
        # And a batch holding one lookup among memory items is refused as a whole
        mixed = {"dynamodb:LeadingKeys": [*scope["dynamodb:LeadingKeys"], *lookup["dynamodb:LeadingKeys"]]}
        assert not policy.evaluate("dynamodb:BatchWriteItem", table, mixed).allowed, name
    # While the API still writes memories and the authorizer still reads the lookup
    assert d.functions["api"].policy.evaluate("dynamodb:PutItem", table, scope).allowed
    assert d.functions["authorizer"].policy.evaluate("dynamodb:GetItem", table, lookup).allowed
    # And every table call the rehearsal made was allowed under the deny
    for name in ("api", "deletion", "indexer"):
        role = _role_of(d, name)
        calls = [c for c in d.recorder.calls if c.principal == role and c.action.startswith("dynamodb:")]  # type: ignore[union-attr]
        assert calls, name
        for call in calls:
            assert d.functions[name].policy.evaluate(call.action, call.resource, call.condition_keys()).allowed, call
