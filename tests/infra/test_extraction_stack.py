"""Extraction in the synthesized stacks (issue 34, the cloud wiring): off by default, and when a model is named
the function, its concurrency cap, the stream mapping that lets only pending rows through, the wake queue and
the failure queues, and a Bedrock grant scoped to the one model (infra/components/extraction.py).

The prod shape has extraction on with a US cross-Region inference profile (tests/synthesis.py); the dev shape
is the default, without it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem.extraction import work
from agentmem.keys import Scope, UserRef
from agentmem.memory import records as memory_records
from agentmem.settings import Env
from infra.app import deployment_options
from infra.components import extraction as extraction_component
from infra.components.extraction import ExtractionSettings, model_arns
from tests.event_filters import passes
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources
from tests.synthesis import EXTRACTION_MODEL

EXTRACTION_HANDLER = "extraction.handler.handler"
PSEUDO = {"AWS::Partition": "aws", "AWS::Region": "<region>", "AWS::AccountId": "<account>"}


def _text(value: Any) -> Any:
    """A template value with its Fn::Join of pseudo parameters written out (``arn:aws:bedrock:<region>:...``)."""
    if isinstance(value, dict) and set(value) == {"Fn::Join"}:
        separator, parts = value["Fn::Join"]
        return separator.join(str(_text(p)) for p in parts)
    if isinstance(value, dict) and set(value) == {"Ref"} and value["Ref"] in PSEUDO:
        return PSEUDO[value["Ref"]]
    return value


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Handler name (``api``, ``extraction``, ...) -> the function's logical id and properties."""
    return {
        props["Handler"].split(".", 1)[0]: {"id": logical_id, **props}
        for logical_id, resource in resources(template, "AWS::Lambda::Function").items()
        if (props := resource["Properties"])
    }


def _statements_of(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    found = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            found += policy["Properties"]["PolicyDocument"]["Statement"]
    return found


def _statements_of_all(template: dict[str, Any]) -> list[dict[str, Any]]:
    policies = resources(template, "AWS::IAM::Policy").values()
    return [s for p in policies for s in p["Properties"]["PolicyDocument"]["Statement"]]


def _role(function: dict[str, Any]) -> str:
    return str(function["Role"]["Fn::GetAtt"][0])


def _mappings_of(template: dict[str, Any], function_id: str) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if r["Properties"]["FunctionName"] == {"Ref": function_id}
    ]


def _one_of_kind(template: dict[str, Any], function_id: str, attribute: str) -> dict[str, Any]:
    """The function's mapping whose source is a ``Fn::GetAtt`` of ``attribute`` (StreamArn or Arn)."""
    found = [m for m in _mappings_of(template, function_id) if m["EventSourceArn"]["Fn::GetAtt"][1] == attribute]
    assert len(found) == 1, found
    return found[0]


def _table_id(template: dict[str, Any]) -> str:
    (table_id,) = resources(template, "AWS::DynamoDB::Table")
    return table_id


def _key_id(template: dict[str, Any]) -> str:
    (key_id,) = resources(template, "AWS::KMS::Key")
    return key_id


# -- off by default ------------------------------------------------------------------------------------------


def test_without_a_model_nothing_of_extraction_is_deployed(synthesized: Synthesized) -> None:
    # Given the default shape (no extraction_model)
    template = synthesized.templates[DEV_TABLE]
    functions = _functions(template)
    # Then no extraction function, no mapping and no queue at all (the table-only shape has no indexer either)
    assert EXTRACTION_HANDLER.split(".")[0] not in functions
    assert not [m for m in resources(template, "AWS::Lambda::EventSourceMapping") if "Snapshots" not in m]
    assert [name for name in resources(template, "AWS::SQS::Queue") if "Extraction" in name] == []
    assert not [name for name in resources(template, "AWS::CloudWatch::Alarm") if "Extraction" in name]
    # And no function is told of a model or a queue: writes put no pending row
    for name, function in functions.items():
        variables = function["Environment"]["Variables"]
        assert not {Env.MODEL, Env.MODEL_ID, Env.EXTRACTION_QUEUE_URL} & set(variables), name
    # And no role may call a chat model (Titan embeddings only)
    invoked = {
        str(_text(resource))
        for statement in _statements_of_all(template)
        if "bedrock:InvokeModel" in _as_list(statement["Action"])
        for resource in _as_list(statement["Resource"])
    }
    assert invoked == {"arn:aws:bedrock:<region>::foundation-model/amazon.titan-embed-text-v2:0"}


def test_the_context_turns_extraction_on_only_when_a_model_is_named() -> None:
    # Given no context, an empty value (make synth without EXTRACTION_MODEL) or "none" / Then no extraction
    for context in ({}, {"extraction_model": ""}, {"extraction_model": "none"}):
        assert deployment_options(context.get).extraction is None, context
    # Given a model / Then extraction with the default cap, or the one given (strings from -c, numbers from cdk.json)
    on = deployment_options({"extraction_model": "amazon.nova-micro-v1:0"}.get).extraction
    assert on == ExtractionSettings("amazon.nova-micro-v1:0", reserved_concurrency=5)
    for concurrency in ("4", 4):
        options = deployment_options(
            {"extraction_model": "amazon.nova-micro-v1:0", "extraction_concurrency": concurrency}.get
        )
        assert options.extraction.reserved_concurrency == 4
    profile = deployment_options(
        {"extraction_model": "eu.amazon.nova-micro-v1:0", "extraction_model_regions": "eu-west-1, eu-central-1"}.get
    )
    assert profile.extraction.destinations == ("eu-west-1", "eu-central-1")
    # And a value that cannot be right stops the synth with the context key in the message
    for context, message in (
        ({"extraction_model": "amazon.nova-micro-v1:0", "extraction_concurrency": "five"}, "extraction_concurrency"),
        ({"extraction_model": "amazon.nova-micro-v1:0", "extraction_concurrency": "0"}, "extraction_concurrency"),
        # (the stream's two budgeted shards and SQS's minimum of 2 for wakes)
        ({"extraction_model": "amazon.nova-micro-v1:0", "extraction_concurrency": "3"}, "4 or more"),
        ({"extraction_model": "arn:aws:bedrock:us-east-1::foundation-model/x"}, "extraction_model"),
        ({"extraction_model": "nova micro"}, "extraction_model"),
        ({"extraction_model": "global.anthropic.claude-sonnet-4-5-20250929-v1:0"}, "global"),
        ({"extraction_model": "eu.amazon.nova-micro-v1:0"}, "extraction_model_regions"),
        ({"extraction_model": "amazon.nova-micro-v1:0", "extraction_model_regions": "us-east-1"}, "profile"),
        ({"extraction_model_regions": "us-east-1"}, "extraction_model"),
        ({"extraction_model": "us.amazon.nova-micro-v1:0", "extraction_model_regions": "mars"}, "Region"),
    ):
        with pytest.raises(ValueError, match=message):
            deployment_options(context.get)


# -- the function --------------------------------------------------------------------------------------------


def test_the_extraction_function_is_capped_and_configured_from_the_settings_names(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    functions = _functions(template)
    fn = functions["extraction"]
    (wake_queue,) = [q for q in resources(template, "AWS::SQS::Queue") if "WakeQueue" in q]
    # Then the same packaging as the others: arm64, both layers, the functions asset, traced
    assert fn["Handler"] == EXTRACTION_HANDLER
    assert fn["Architectures"] == ["arm64"]
    assert fn["Layers"] == functions["api"]["Layers"]
    assert fn["Code"] == functions["api"]["Code"]
    assert fn["TracingConfig"] == {"Mode": "Active"}
    # And its limits: a few minutes per batch, 512 MB, and the concurrency cap
    assert fn["Timeout"] == extraction_component.TIMEOUT_SECONDS == 300
    assert fn["MemorySize"] == 512
    assert fn["ReservedConcurrentExecutions"] == extraction_component.DEFAULT_RESERVED_CONCURRENCY == 5
    # And its environment: the store's (as the API's, names from settings.Env) plus the model and the wake queue
    variables = fn["Environment"]["Variables"]
    api = functions["api"]["Environment"]["Variables"]
    assert variables[Env.MODEL] == "bedrock"
    assert variables[Env.MODEL_ID] == EXTRACTION_MODEL
    assert variables[Env.EXTRACTION_QUEUE_URL] == {"Ref": wake_queue}
    # (the erasure workflow and the tenants' in-flight limits and embedding shares are the API's alone; each app's
    # share of the model's tokens a minute is extraction's)
    api_only = (Env.DELETION_STATE_MACHINE_ARN, Env.IN_FLIGHT_LIMITS, Env.EMBEDDING_SHARES)
    shared = {k: v for k, v in api.items() if k not in api_only}
    assert {k: v for k, v in variables.items() if k in shared} == shared
    assert set(variables) - set(shared) == {Env.EXTRACTION_TOKENS_PER_MINUTE}
    # And the API writes pending rows: the same three settings (it never calls the model nor sends)
    for name in (Env.MODEL, Env.MODEL_ID, Env.EXTRACTION_QUEUE_URL):
        assert api[name] == variables[name], name
    # And no other function is told of the model
    for name in ("authorizer", "deletion", "indexer", "console"):
        assert Env.MODEL not in functions[name]["Environment"]["Variables"], name


def test_the_stream_mapping_lets_only_pending_rows_through(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    fn = _functions(template)["extraction"]
    mapping = _one_of_kind(template, fn["id"], "StreamArn")
    # Given the mapping from the table's stream
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [_table_id(template), "StreamArn"]}
    # Then small batches gathered over a few seconds, partial failures reported, bisected, bounded retries,
    # records given up after hours, and a queue told of what was given up
    assert mapping["BatchSize"] == 10
    assert 1 <= mapping["MaximumBatchingWindowInSeconds"] <= 10
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert mapping["BisectBatchOnFunctionError"] is True
    assert 1 <= mapping["MaximumRetryAttempts"] <= 5
    assert 3600 <= mapping["MaximumRecordAgeInSeconds"] <= 24 * 3600
    assert mapping["StartingPosition"] == "TRIM_HORIZON"
    failures = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert template["Resources"][failures]["Properties"]["SqsManagedSseEnabled"] is True
    # And its filter lets through exactly what the handler acts on: a pending row written or written again
    filters = mapping["FilterCriteria"]["Filters"]
    scope = Scope("shop", "alice", None)
    pending = work.pending_item(scope, "chat-1", 1)
    project = work.pending_item(Scope("shop", "alice", "trip"), "chat/2", 1)
    for item in (pending, project):
        for event in ("INSERT", "MODIFY"):
            assert passes(filters, _stream_record(event, item)), (event, item)
    # And nothing else: its removal, the session's entries and cursor, other partitions' rows
    others = [
        ("REMOVE", pending),
        ("INSERT", {"pk": scope.partition, "sk": memory_records.entry_sk("01J0000000000000000000000")}),
        ("INSERT", {"pk": scope.partition, "sk": work.cursor_sk("chat-1")}),
        ("INSERT", {"pk": UserRef("shop", "alice").partition, "sk": work.PENDING + "chat-1"}),
        ("MODIFY", {"pk": work.parked_partition("shop"), "sk": work.PENDING + "x"}),
    ]
    for event, item in others:
        assert not passes(filters, _stream_record(event, item)), (event, item)


def _stream_record(event: str, item: dict[str, Any]) -> dict[str, Any]:
    """A DynamoDB stream record as the mapping filters it (keys in DynamoDB JSON)."""
    keys = {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}}
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": {"Keys": keys, "SequenceNumber": "1"}}


def test_the_wake_queue_is_encrypted_with_the_stacks_key_and_drains_into_a_dead_letter_queue(
    synthesized: Synthesized,
) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    fn = _functions(template)["extraction"]
    queues = resources(template, "AWS::SQS::Queue")
    (wake_id,) = [q for q in queues if "WakeQueue" in q]
    (dlq_id,) = [q for q in queues if "WakeDlq" in q]
    key = {"Fn::GetAtt": [_key_id(template), "Arn"]}
    wake, dlq = queues[wake_id]["Properties"], queues[dlq_id]["Properties"]
    # Then both are encrypted with the stack's key, and the wake queue redrives to the DLQ after a few receives
    assert wake["KmsMasterKeyId"] == key
    assert dlq["KmsMasterKeyId"] == key
    assert wake["RedrivePolicy"] == {"deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]}, "maxReceiveCount": 5}
    assert dlq["MessageRetentionPeriod"] == 14 * 24 * 3600
    # And a batch may take the function's whole timeout several times over before a message is seen again
    assert wake["VisibilityTimeout"] >= 6 * fn["Timeout"]
    # And every extraction queue refuses requests without TLS
    for queue_id in (q for q in queues if "Extraction" in q):
        policies = [
            p["Properties"]
            for p in resources(template, "AWS::SQS::QueuePolicy").values()
            if {"Ref": queue_id} in p["Properties"]["Queues"]
        ]
        denies = [
            s
            for p in policies
            for s in p["PolicyDocument"]["Statement"]
            if s["Effect"] == "Deny" and s.get("Condition") == {"Bool": {"aws:SecureTransport": "false"}}
        ]
        assert denies, queue_id
    # And the same function consumes it, reporting partial failures, no more at once than the stream mapping leaves
    # of its reservation (issue 41, point 5): a wake is never throttled, so never counts receives towards the
    # dead-letter queue without having run
    mapping = _one_of_kind(template, fn["id"], "Arn")
    assert mapping["EventSourceArn"] == {"Fn::GetAtt": [wake_id, "Arn"]}
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    stream = _one_of_kind(template, fn["id"], "StreamArn")
    stream_slots = stream["ParallelizationFactor"] * extraction_component.STREAM_SHARDS_BUDGETED
    assert stream["ParallelizationFactor"] == 1
    wakes = mapping["ScalingConfig"]["MaximumConcurrency"]
    assert 2 <= wakes <= fn["ReservedConcurrentExecutions"] - stream_slots
    assert (wakes, stream_slots, fn["ReservedConcurrentExecutions"]) == (3, 2, 5)


def test_only_the_extraction_function_may_send_to_the_wake_queue(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    functions = _functions(template)
    (wake_id,) = [q for q in resources(template, "AWS::SQS::Queue") if "WakeQueue" in q]
    wake = {"Fn::GetAtt": [wake_id, "Arn"]}
    senders = {
        name
        for name, fn in functions.items()
        for s in _statements_of(template, _role(fn))
        if s["Effect"] == "Allow" and "sqs:SendMessage" in _as_list(s["Action"]) and wake in _as_list(s["Resource"])
    }
    assert senders == {"extraction"}
    # And the API (which writes pending rows, never wakes a session) holds no queue action at all
    api_actions = {a for s in _statements_of(template, _role(functions["api"])) for a in _as_list(s["Action"])}
    assert not {a for a in api_actions if a.startswith("sqs:")}


def test_the_bedrock_grant_names_the_model_only(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    functions = _functions(template)

    def invoked(name: str) -> set[str]:
        found = set()
        for statement in _statements_of(template, _role(functions[name])):
            if any(str(a).startswith("bedrock:") for a in _as_list(statement["Action"])):
                assert _as_list(statement["Action"]) == ["bedrock:InvokeModel"], statement
                found |= {str(_text(r)) for r in _as_list(statement["Resource"])}
        return found

    titan = "arn:aws:bedrock:<region>::foundation-model/amazon.titan-embed-text-v2:0"
    # Given the US profile / Then the profile in the stack's Region, and its model where the profile routes
    model = EXTRACTION_MODEL.removeprefix("us.")
    assert invoked("extraction") == {
        titan,
        f"arn:aws:bedrock:<region>:<account>:inference-profile/{EXTRACTION_MODEL}",
        f"arn:aws:bedrock:<region>::foundation-model/{model}",
        *(f"arn:aws:bedrock:{r}::foundation-model/{model}" for r in ("us-east-1", "us-east-2", "us-west-2")),
    }
    # And the API, which never calls the chat model, embeds only
    assert invoked("api") == {titan}
    for name in ("authorizer", "deletion", "console"):
        assert not any(model in r for r in invoked(name)), name


def test_model_arns_of_a_model_id_and_of_profiles() -> None:
    from aws_cdk import App, Environment, Stack

    app = App()

    def arns(region: str, settings: ExtractionSettings) -> list[str]:
        stack = Stack(app, f"S{len(app.node.children)}", env=Environment(account="111122223333", region=region))
        return [str(_text(stack.resolve(arn))) for arn in model_arns(stack, settings)]

    # Given a model id / Then its foundation model in the stack's Region, nothing else
    assert arns("eu-west-1", ExtractionSettings("amazon.nova-micro-v1:0")) == [
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-micro-v1:0"
    ]
    # Given a US profile from us-east-2 / Then the profile there and the model in each destination, once each
    assert arns("us-east-2", ExtractionSettings("us.amazon.nova-micro-v1:0")) == [
        "arn:aws:bedrock:us-east-2:111122223333:inference-profile/us.amazon.nova-micro-v1:0",
        "arn:aws:bedrock:us-east-2::foundation-model/amazon.nova-micro-v1:0",
        "arn:aws:bedrock:us-east-1::foundation-model/amazon.nova-micro-v1:0",
        "arn:aws:bedrock:us-west-2::foundation-model/amazon.nova-micro-v1:0",
    ]
    # Given an EU profile with its Regions named / Then those
    eu = ExtractionSettings("eu.amazon.nova-micro-v1:0", model_regions=("eu-west-1", "eu-central-1", "eu-west-3"))
    assert arns("eu-west-1", eu) == [
        "arn:aws:bedrock:eu-west-1:111122223333:inference-profile/eu.amazon.nova-micro-v1:0",
        "arn:aws:bedrock:eu-west-1::foundation-model/amazon.nova-micro-v1:0",
        "arn:aws:bedrock:eu-central-1::foundation-model/amazon.nova-micro-v1:0",
        "arn:aws:bedrock:eu-west-3::foundation-model/amazon.nova-micro-v1:0",
    ]


# -- operations and checks -----------------------------------------------------------------------------------


def test_an_alarm_watches_both_failure_queues_and_the_capped_function_raises_no_throttle_alarm(
    synthesized: Synthesized,
) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    fn = _functions(template)["extraction"]
    queues = resources(template, "AWS::SQS::Queue")
    failure_queues = {q for q in queues if "WakeDlq" in q or "StreamFailures" in q}
    alarms = {name: a["Properties"] for name, a in resources(template, "AWS::CloudWatch::Alarm").items()}
    (failures,) = [p for name, p in alarms.items() if "ExtractionFailures" in name]
    watched = {
        q["Value"]["Fn::GetAtt"][0]
        for m in failures["Metrics"]
        if "MetricStat" in m
        for q in m["MetricStat"]["Metric"]["Dimensions"]
    }
    assert watched == failure_queues
    assert failures["AlarmActions"]
    (throttles,) = [p for name, p in alarms.items() if "LambdaThrottles" in name]
    throttled = [
        d["Value"] for m in throttles["Metrics"] if "MetricStat" in m for d in m["MetricStat"]["Metric"]["Dimensions"]
    ]
    assert {"Ref": fn["id"]} not in throttled
    # (the API's and the authorizer's throttles alarm apart: tests/infra/test_tenant_isolation.py)
    assert len(throttled) == len(_functions(template)) - 3


def test_cdk_nag_accepts_only_the_stream_failure_queue_without_a_dlq(synthesized: Synthesized) -> None:
    # Given the session synth's cdk-nag report (a finding fails the synth) / Then what was acknowledged for
    # extraction is the on-failure queue's SQS3 and the role's Resource::* (X-Ray, ListStreams), with reasons
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    nag = next(r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions")
    acknowledged = {
        (s["ruleName"], c["constructPath"])
        for s in nag["suppressedViolations"]
        for c in s["violatingConstructs"]
        if "/Extraction/" in c["constructPath"]
    }
    assert acknowledged == {
        ("AwsSolutions-SQS3", f"{PROD_OPENSEARCH}/Compute/Extraction/StreamFailures/Resource"),
        ("AwsSolutions-IAM5[Resource::*]", f"{PROD_OPENSEARCH}/Compute/Extraction/FunctionRole/DefaultPolicy/Resource"),
        # the prod shape reaches OpenSearch through a VPC endpoint: Lambda manages the function's interfaces there
        (
            "AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:<AWS::Region>:<AWS::AccountId>:network-interface/*]",
            f"{PROD_OPENSEARCH}/Compute/Extraction/FunctionRole/DefaultPolicy/Resource",
        ),
    }
