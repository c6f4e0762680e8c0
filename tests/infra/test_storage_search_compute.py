"""Storage, search and compute of the synthesized stacks (issue 6, points 1-3)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match

from agentmem.keys import Scope, UserRef
from agentmem.memory import records as memory_records
from infra import packaging
from tests.event_filters import passes
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources
from tests.synthesis import PRIVATE_NETWORK


def test_table_is_on_demand_with_pitr_cmk_and_ttl(prod: Any, dev: Any) -> None:
    # Given both deployment shapes / Then the table has every storage property of the issue
    for template in (prod, dev):
        template.has_resource_properties(
            "AWS::DynamoDB::Table",
            {
                "BillingMode": "PAY_PER_REQUEST",
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True},
                "SSESpecification": {"SSEEnabled": True, "SSEType": "KMS", "KMSMasterKeyId": Match.any_value()},
                "TimeToLiveSpecification": {"AttributeName": "ttl", "Enabled": True},
                "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
            },
        )
        template.has_resource_properties("AWS::KMS::Key", {"EnableKeyRotation": True})


def test_the_table_has_a_stream_only_when_a_function_reads_it(synthesized: Synthesized) -> None:
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        (table_id,) = resources(template, "AWS::DynamoDB::Table")
        stream = template["Resources"][table_id]["Properties"].get("StreamSpecification")
        readers = [
            m["Properties"]
            for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
            if m["Properties"]["EventSourceArn"] == {"Fn::GetAtt": [table_id, "StreamArn"]}
        ]
        # Then prod (the OpenSearch indexer, extraction) has the stream and its two readers; the table-only
        # shape without extraction has neither (a stream nobody reads is a day's copy of every write)
        assert (stream, len(readers)) == (
            ({"StreamViewType": "NEW_AND_OLD_IMAGES"}, 2) if name == PROD_OPENSEARCH else (None, 0)
        )
    # And the option follows the backend and extraction: the table backend with extraction keeps a stream
    from infra.stack import DeploymentOptions

    assert DeploymentOptions(search_backend="table", extraction_model="amazon.nova-micro-v1:0").reads_the_stream
    assert not DeploymentOptions(search_backend="table").reads_the_stream
    assert DeploymentOptions(search_backend="opensearch").reads_the_stream


def test_production_retains_and_protects_the_table_and_dev_destroys_it(prod: Any, dev: Any) -> None:
    # Given prod / Then retained with deletion protection; dev / Then deleted with the stack
    prod.has_resource(
        "AWS::DynamoDB::Table",
        {
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
            "Properties": {"DeletionProtectionEnabled": True},
        },
    )
    prod.has_resource("AWS::KMS::Key", {"DeletionPolicy": "Retain"})
    dev.has_resource(
        "AWS::DynamoDB::Table",
        {"DeletionPolicy": "Delete", "Properties": {"DeletionProtectionEnabled": False}},
    )
    dev.has_resource("AWS::KMS::Key", {"DeletionPolicy": "Delete"})


def test_opensearch_serverless_vector_collection_with_three_policies(prod: Any, synthesized: Synthesized) -> None:
    # Given the opensearch backend / Then a VECTORSEARCH collection guarded by encryption, network and data policies
    prod.has_resource_properties("AWS::OpenSearchServerless::Collection", {"Type": "VECTORSEARCH"})
    prod.has_resource_properties("AWS::OpenSearchServerless::SecurityPolicy", {"Type": "encryption"})
    prod.has_resource_properties("AWS::OpenSearchServerless::SecurityPolicy", {"Type": "network"})
    prod.has_resource_properties("AWS::OpenSearchServerless::AccessPolicy", {"Type": "data"})
    template = synthesized.templates[PROD_OPENSEARCH]
    collection = next(iter(resources(template, "AWS::OpenSearchServerless::Collection").values()))
    depends = set(collection.get("DependsOn", []))
    assert set(resources(template, "AWS::OpenSearchServerless::SecurityPolicy")) <= depends

    encryption = next(
        r
        for r in resources(template, "AWS::OpenSearchServerless::SecurityPolicy").values()
        if r["Properties"]["Type"] == "encryption"
    )
    assert '\\"AWSOwnedKey\\":false' in str(encryption["Properties"]["Policy"]) or "AWSOwnedKey" in str(
        encryption["Properties"]["Policy"]
    )


def test_only_the_lambda_roles_that_search_are_in_the_data_access_policy(synthesized: Synthesized) -> None:
    # Given the data access policy / Then its principals are exactly the api, deletion, indexer and extraction roles
    stack = synthesized.stacks[PROD_OPENSEARCH]
    template = synthesized.templates[PROD_OPENSEARCH]
    policy = next(iter(resources(template, "AWS::OpenSearchServerless::AccessPolicy").values()))
    text = str(policy["Properties"]["Policy"])
    roles = {
        name: stack.get_logical_id(fn.role.node.default_child)
        for name, fn in (
            ("api", stack.compute.api),
            ("deletion", stack.compute.deletion),
            ("indexer", stack.compute.indexer),
            ("extraction", stack.compute.extraction.function),
            ("authorizer", stack.compute.authorizer),
        )
    }
    for name in ("api", "deletion", "indexer", "extraction"):
        assert roles[name] in text, f"{name} role missing from the data access policy"
    assert roles["authorizer"] not in text
    assert "index/agentmem-prod/*" in text


def _store_functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every function but the console's (which serves static files: no store settings, the core layer only) and the
    pre-traffic hook's (it invokes a version of the API: no store settings either)."""
    functions = resources(template, "AWS::Lambda::Function")
    apart = ("console.handler.handler", "prehook.handler.handler")
    return {k: f for k, f in functions.items() if f["Properties"]["Handler"] not in apart}


def test_table_backend_deploys_no_opensearch_and_no_indexer(dev: Any, synthesized: Synthesized) -> None:
    # Given search_backend=table / Then no collection, no indexer, and the functions search the table
    for kind in (
        "AWS::OpenSearchServerless::Collection",
        "AWS::OpenSearchServerless::SecurityPolicy",
        "AWS::OpenSearchServerless::AccessPolicy",
    ):
        dev.resource_count_is(kind, 0)
    # The one mapping feeds the snapshot writer from its queue (tests/infra/test_snapshots_stack.py); the queues are
    # the erasure re-drive's dead letters and the snapshot requests with theirs: nothing of indexing
    [mapping] = resources(synthesized.templates[DEV_TABLE], "AWS::Lambda::EventSourceMapping").values()
    assert "Snapshots" in str(mapping["Properties"]["FunctionName"])
    dev.resource_count_is("AWS::SQS::Queue", 3)
    # (and CDK's bucket auto-delete provider, not one of the stack's functions: tests/infra/test_first_deploy.py)
    assert len(resources(synthesized.templates[DEV_TABLE], "AWS::Lambda::Function")) == 7
    functions = _store_functions(synthesized.templates[DEV_TABLE])
    assert len(functions) == 5
    for function in functions.values():
        assert function["Properties"]["Environment"]["Variables"]["MEMORY_VECTOR_INDEX"] == "exact"


def test_every_function_is_arm64_python3_traced_with_both_layers_and_a_retained_log(
    prod: Any, dev: Any, synthesized: Synthesized
) -> None:
    # Given every function of the stack (CDK's bucket auto-delete provider in dev apart: tests/infra/conftest.py)
    # Then arm64, the project's Python, active tracing, its own log group
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        for logical, function in resources(synthesized.templates[name], "AWS::Lambda::Function").items():
            props = function["Properties"]
            assert props["Runtime"] == packaging.RUNTIME.name, logical
            assert props["Architectures"] == ["arm64"], logical
            assert props["TracingConfig"] == {"Mode": "Active"}, logical
            assert "LogGroup" in props["LoggingConfig"], logical
    for template in (prod, dev):
        template.all_resources_properties("AWS::Logs::LogGroup", {"RetentionInDays": Match.any_value()})
    assert packaging.RUNTIME.name.startswith("python3.")
    assert int(packaging.RUNTIME.name.split(".")[1]) >= 12
    # And every function but the console's has both layers and the store's settings
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        for function in _store_functions(synthesized.templates[name]).values():
            assert len(function["Properties"]["Layers"]) == 2
            variables = function["Properties"]["Environment"]["Variables"]
            assert (variables["MEMORY_STORE"], variables["MEMORY_AUTH"]) == ("dynamodb", "required")
            assert variables["MEMORY_TABLE_NAME"]
    # And the console's function has the core layer only and no store settings
    console = next(
        f["Properties"]
        for f in resources(synthesized.templates[PROD_OPENSEARCH], "AWS::Lambda::Function").values()
        if f["Properties"]["Handler"] == "console.handler.handler"
    )
    assert len(console["Layers"]) == 1
    assert console["Layers"][0]["Ref"].startswith("ComputeCoreLayer")
    assert not any(name.startswith("MEMORY_") for name in console["Environment"]["Variables"])
    prod.resource_count_is("AWS::Lambda::Function", 8)  # the six, extraction, and the API's pre-traffic hook
    prod.resource_count_is("AWS::Lambda::LayerVersion", 2)
    prod.all_resources_properties(
        "AWS::Lambda::LayerVersion",
        {"CompatibleArchitectures": ["arm64"], "CompatibleRuntimes": [packaging.RUNTIME.name]},
    )


def test_handlers_point_at_the_functions_directory(prod: Any) -> None:
    # Given the six functions / Then each handler is functions/<name>/handler.py's `handler`
    for name in ("api", "authorizer", "deletion", "indexer", "extraction", "console", "prehook"):
        prod.has_resource_properties("AWS::Lambda::Function", {"Handler": f"{name}.handler.handler"})
        assert (packaging.FUNCTIONS_DIR / name / "handler.py").exists()


def test_the_indexer_takes_only_entries_for_hours_and_keeps_what_it_gives_up_whole_and_encrypted(
    synthesized: Synthesized,
) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    functions = {
        f["Properties"]["Handler"]: (k, f["Properties"])
        for k, f in resources(template, "AWS::Lambda::Function").items()
    }
    indexer_id, indexer = functions["indexer.handler.handler"]
    (mapping,) = [
        m["Properties"]
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": indexer_id}
    ]
    # Given the indexer's stream mapping / Then batches, bisection, partial failures, and retries for hours
    assert (mapping["BatchSize"], mapping["BisectBatchOnFunctionError"]) == (100, True)
    assert mapping["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert 3600 <= mapping["MaximumRecordAgeInSeconds"] <= 12 * 3600  # hours, inside the stream's 24
    assert mapping["MaximumRetryAttempts"] >= 5
    # And only what the indexer acts on invokes it: entries of scope partitions, written, rewritten or removed
    filters = mapping["FilterCriteria"]["Filters"]
    entry = {"pk": Scope("shop", "alice", "trip").partition, "sk": memory_records.entry_sk("01J0000000000000000000000")}
    for event in ("INSERT", "MODIFY", "REMOVE"):
        assert passes(filters, _stream_record(event, entry)), event
    for item in (
        {"pk": Scope("shop", "alice", None).partition, "sk": "MT#dark#01J0000000000000000000000"},
        {"pk": UserRef("shop", "alice").partition, "sk": memory_records.entry_sk("01J0000000000000000000000")},
        {"pk": "T#shop", "sk": "USAGE#2026-01-01"},
    ):
        assert not passes(filters, _stream_record("INSERT", item)), item
    # And a batch given up goes whole (an S3 destination gets the payload) to a bucket encrypted with the data key
    bucket_id = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    bucket = template["Resources"][bucket_id]["Properties"]
    (key_id,) = resources(template, "AWS::KMS::Key")
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": {"Fn::GetAtt": [key_id, "Arn"]},
    }
    assert bucket["PublicAccessBlockConfiguration"] == dict.fromkeys(
        ("BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"), True
    )
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["ExpirationInDays"] == 7  # it holds memory text: a week to replay it
    # And the indexer may put objects there and list it (what Lambda documents), the key through S3 only
    statements = [s for s in _statements_of_role(template, indexer["Role"]["Fn::GetAtt"][0]) if "s3" in json.dumps(s)]
    granted = {(a, json.dumps(r)) for s in statements for a in _as_list(s["Action"]) for r in _as_list(s["Resource"])}
    assert {a for a, _ in granted} == {"s3:PutObject", "s3:ListBucket", "kms:GenerateDataKey"}
    (kms_grant,) = [s for s in statements if "kms:GenerateDataKey" in _as_list(s["Action"])]
    assert "s3." in json.dumps(kms_grant["Condition"]["StringEquals"]["kms:ViaService"])
    # And the template says where the runbook finds it
    assert template["Outputs"]["IndexerFailuresBucket"]["Value"] == {"Ref": bucket_id}


def _stream_record(event: str, item: dict[str, Any]) -> dict[str, Any]:
    keys = {"pk": {"S": item["pk"]}, "sk": {"S": item["sk"]}}
    return {"eventName": event, "eventSource": "aws:dynamodb", "dynamodb": {"Keys": keys, "SequenceNumber": "1"}}


def _statements_of_role(template: dict[str, Any], role_id: str) -> list[dict[str, Any]]:
    return [
        s
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
    ]


NO_RESOURCE_LEVEL_ACTIONS = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "dynamodb:ListStreams",
    # Lambda's view of the network interfaces of a function in a VPC (creation is bound to subnets and a group).
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSubnets",
    # Step Functions logging to CloudWatch Logs (vended log delivery) documents Resource "*" for these.
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}


def _statements(template: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        found += policy["Properties"]["PolicyDocument"]["Statement"]
    for role in resources(template, "AWS::IAM::Role").values():
        for inline in role["Properties"].get("Policies", []):
            found += inline["PolicyDocument"]["Statement"]
    return found


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_wildcard_actions_and_no_wildcard_resources_on_data(synthesized: Synthesized) -> None:
    # Given every IAM statement of both stacks
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        for statement in _statements(synthesized.templates[name]):
            actions = [str(a) for a in _as_list(statement["Action"])]
            resources_ = _as_list(statement["Resource"])
            # Then no action is a wildcard ...
            assert all("*" not in action for action in actions), actions
            # ... and Resource "*" only goes with actions that have no resource-level permissions (none on data)
            if "*" in resources_:
                assert set(actions) <= NO_RESOURCE_LEVEL_ACTIONS, actions


def test_authorizer_can_only_read_the_table(synthesized: Synthesized) -> None:
    # Given the authorizer's role / Then its DynamoDB actions are reads only
    stack = synthesized.stacks[PROD_OPENSEARCH]
    template = synthesized.templates[PROD_OPENSEARCH]
    role_id = stack.get_logical_id(stack.compute.authorizer.role.node.default_child)
    actions: set[str] = set()
    for policy in resources(template, "AWS::IAM::Policy").values():
        if {"Ref": role_id} in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions |= {str(a) for a in _as_list(statement["Action"])}
    dynamo = {a for a in actions if a.startswith("dynamodb:")}
    assert dynamo
    assert dynamo <= {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:Query",
        "dynamodb:ConditionCheckItem",
        "dynamodb:DescribeTable",
    }
    assert not any(a.startswith(("aoss:", "bedrock:", "states:")) for a in actions)


def test_dependency_layer_is_built_for_arm64_without_docker() -> None:
    # Given the pip command of the dependency layer / Then it takes arm64 binary wheels for the runtime's Python
    command = packaging.pip_install_command(packaging.PREBUILT_DEPS_DIR)
    assert "--only-binary=:all:" in command
    assert command[command.index("--python-version") + 1] == packaging.PYTHON_VERSION
    assert command[command.index("--implementation") + 1] == "cp"
    assert "manylinux2014_aarch64" in command
    assert packaging.RUNTIME.name == f"python{packaging.PYTHON_VERSION}"


def test_the_receipt_key_is_a_generated_secret_read_only_by_the_api_and_the_deletion_steps(
    prod: Any, synthesized: Synthesized
) -> None:
    # Given the production template
    template = synthesized.templates[PROD_OPENSEARCH]
    secrets = resources(template, "AWS::SecretsManager::Secret")
    # Then one generated secret holds the receipt key, and functions get only its ARN
    assert len(secrets) == 1
    (secret_id,) = secrets
    assert "GenerateSecretString" in secrets[secret_id]["Properties"]
    for function in _store_functions(template).values():
        assert function["Properties"]["Environment"]["Variables"]["MEMORY_RECEIPT_KEY_SECRET_ARN"] == {"Ref": secret_id}
    for function in resources(template, "AWS::Lambda::Function").values():
        assert "MEMORY_RECEIPT_KEY" not in function["Properties"]["Environment"]["Variables"]
    # And only the API and deletion-step roles may read it
    readers = set()
    for policy in resources(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            resource = statement.get("Resource")
            if resource == {"Ref": secret_id}:
                readers |= {role["Ref"] for role in policy["Properties"]["Roles"]}
    assert len(readers) == 2
    assert all("Api" in r or "Deletion" in r for r in readers)


def test_key_use_is_conditioned_on_the_service_and_cloudwatch_on_its_own_alarms(synthesized: Synthesized) -> None:
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        (key_id,) = resources(template, "AWS::KMS::Key")
        key_arn = {"Fn::GetAtt": [key_id, "Arn"]}
        # Given every identity statement naming the data key
        on_key = [s for s in _statements(template) if key_arn in _as_list(s["Resource"])]
        assert on_key
        for statement in on_key:
            actions = set(_as_list(statement["Action"]))
            # Then its use goes through a service (kms:ViaService), and nobody may encrypt with it directly
            assert actions <= {"kms:Decrypt", "kms:GenerateDataKey", "kms:DescribeKey"}, actions
            services = statement["Condition"]["StringEquals"]["kms:ViaService"]
            assert services, statement
            assert all(".amazonaws.com" in json.dumps(s) for s in services), statement
        # And CloudWatch's grant in the key policy holds for this account's alarms only
        key_policy = template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
        (cloudwatch,) = [s for s in key_policy if s.get("Principal", {}).get("Service") == "cloudwatch.amazonaws.com"]
        assert cloudwatch["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}
        assert ":alarm:*" in json.dumps(cloudwatch["Condition"]["ArnLike"]["aws:SourceArn"])


def _network_policy(template: dict[str, Any]) -> list[dict[str, Any]]:
    (policy,) = [
        r["Properties"]["Policy"]
        for r in resources(template, "AWS::OpenSearchServerless::SecurityPolicy").values()
        if r["Properties"]["Type"] == "network"
    ]
    return json.loads(policy) if isinstance(policy, str) else policy


def test_opensearch_can_be_reached_only_through_a_vpc_endpoint(synthesized: Synthesized) -> None:
    # Given the prod shape, whose collection is limited to private subnets (tests/synthesis.py)
    template = synthesized.templates[PROD_OPENSEARCH]
    vpc, subnets = PRIVATE_NETWORK
    (endpoint_id,) = resources(template, "AWS::OpenSearchServerless::VpcEndpoint")
    endpoint = template["Resources"][endpoint_id]["Properties"]
    # Then the network policy refuses the public internet and admits that VPC endpoint only
    (policy,) = [
        r["Properties"]["Policy"]
        for r in resources(template, "AWS::OpenSearchServerless::SecurityPolicy").values()
        if r["Properties"]["Type"] == "network"
    ]
    separator, parts = policy["Fn::Join"]
    assert {"Fn::GetAtt": [endpoint_id, "Id"]} in parts
    (rules,) = json.loads(separator.join(p if isinstance(p, str) else "vpce" for p in parts))
    assert (rules["AllowFromPublic"], rules["SourceVPCEs"]) == (False, ["vpce"])
    # And the endpoint sits in those subnets behind a group that admits HTTPS from the functions' group only
    assert (endpoint["VpcId"], endpoint["SubnetIds"]) == (vpc, list(subnets))
    groups = resources(template, "AWS::EC2::SecurityGroup")
    (endpoint_group,) = [
        g["Properties"] for k, g in groups.items() if {"Fn::GetAtt": [k, "GroupId"]} in endpoint["SecurityGroupIds"]
    ]
    (ingress,) = endpoint_group["SecurityGroupIngress"]
    assert (ingress["FromPort"], ingress["ToPort"], ingress["IpProtocol"]) == (443, 443, "tcp")
    assert "CidrIp" not in ingress
    functions_group = ingress["SourceSecurityGroupId"]
    # And exactly the functions that call the collection run in those subnets, in that group
    placed = {
        f["Properties"]["Handler"].split(".")[0]: f["Properties"].get("VpcConfig")
        for f in resources(template, "AWS::Lambda::Function").values()
    }
    for name, config in placed.items():
        if name in ("api", "deletion", "indexer", "extraction"):
            assert config == {"SubnetIds": list(subnets), "SecurityGroupIds": [functions_group]}, name
        else:
            assert config is None, name


def test_without_a_private_network_the_collection_is_public_behind_iam(tmp_path: Any) -> None:
    # Given the collection alone, as the default deploy makes it / Then its network policy admits the internet
    # (every request is still SigV4-signed and checked against IAM and the data-access policy)
    from aws_cdk import App, Stack
    from aws_cdk import aws_kms as kms
    from aws_cdk.assertions import Template

    from infra.components.search import PrivateNetwork, VectorSearch

    stack = Stack(App(outdir=str(tmp_path)), "Collection")
    VectorSearch(stack, "Search", stage="dev", key=kms.Key(stack, "Key"), production=False)
    template = Template.from_stack(stack).to_json()
    (rules,) = _network_policy(template)
    assert rules["AllowFromPublic"] is True
    assert "SourceVPCEs" not in rules
    assert resources(template, "AWS::OpenSearchServerless::VpcEndpoint") == {}
    # And a private network must name a VPC and its subnets
    for vpc, subnets in (("vpc-1", ()), ("", ("subnet-1",)), ("vpc-1", ("sg-1",))):
        with pytest.raises(ValueError, match="opensearch"):
            PrivateNetwork(vpc, subnets)
