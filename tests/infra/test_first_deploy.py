"""A safe first deploy (issue 42, points 8-10), in the synthesized stacks (prod with OpenSearch behind a VPC
endpoint, dev on the table backend; tests/synthesis.py): failures that reach someone, a stack that can be created
again after a delete, and every answer of the API in its error body."""

from __future__ import annotations

import json
from typing import Any

from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, function_ids, resources
from tests.infra.waf import Request, matches


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Alarm name (its construct id, without the logical id's ``Operations`` prefix and hash) -> its properties."""
    return {
        logical[len("Operations") : -8]: a["Properties"]
        for logical, a in resources(template, "AWS::CloudWatch::Alarm").items()
        if logical.startswith("Operations")
    }


def _logical(template: dict[str, Any], kind: str, part: str) -> str:
    (found,) = [name for name in resources(template, kind) if part in name]
    return found


# -- point 8: failures nobody heard --------------------------------------------------------------------------


def test_prod_alarms_on_failed_backup_and_copy_jobs_and_on_a_day_without_a_completed_backup(
    synthesized: Synthesized,
) -> None:
    from infra.components.operations import NO_BACKUP_HOURS

    template = synthesized.templates[PROD_OPENSEARCH]
    vault = _logical(template, "AWS::Backup::BackupVault", "Vault")
    (topic,) = resources(template, "AWS::SNS::Topic")
    alarms = _alarms(template)
    of_vault = [{"Name": "BackupVaultName", "Value": {"Fn::GetAtt": [vault, "BackupVaultName"]}}]
    # Given prod, which backs its table up every day and copies each backup to another account's vault
    # Then a failed backup job and a failed copy job each alarm at once, on the vault's own metrics
    failures = (("BackupJobsFailed", "NumberOfBackupJobsFailed"), ("CopyJobsFailed", "NumberOfCopyJobsFailed"))
    for name, metric in failures:
        alarm = alarms[name]
        assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Backup", metric, "Sum"), name
        assert alarm["Dimensions"] == of_vault, name
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanOrEqualToThreshold", 1), name
        assert (alarm["EvaluationPeriods"], alarm["DatapointsToAlarm"]) == (1, 1), name
        assert alarm["AlarmActions"] == [{"Ref": topic}], name
    # And so does a day without a completed backup: fewer than one completed job in each hour of a day and the job's
    # start window and run time, an hour without the metric counting as one without a backup
    absent = alarms["NoBackupCompleted"]
    assert (absent["MetricName"], absent["Statistic"], absent["Dimensions"]) == (
        "NumberOfBackupJobsCompleted",
        "Sum",
        of_vault,
    )
    assert (absent["ComparisonOperator"], absent["Threshold"]) == ("LessThanThreshold", 1)
    assert absent["TreatMissingData"] == "breaching"
    assert absent["Period"] == 3600
    assert absent["EvaluationPeriods"] == absent["DatapointsToAlarm"] == NO_BACKUP_HOURS
    (rule,) = next(iter(resources(template, "AWS::Backup::BackupPlan").values()))["Properties"]["BackupPlan"][
        "BackupPlanRule"
    ]
    window_hours = rule["StartWindowMinutes"] / 60
    assert 24 + window_hours < NO_BACKUP_HOURS <= 24 + window_hours + 4
    assert NO_BACKUP_HOURS * 3600 <= 7 * 24 * 3600  # CloudWatch's longest evaluation range
    assert absent["AlarmActions"] == [{"Ref": topic}]
    # And dev, which keeps no backups, has none of these alarms
    dev_alarms = set(_alarms(synthesized.templates[DEV_TABLE]))
    assert not {"BackupJobsFailed", "CopyJobsFailed", "NoBackupCompleted"} & dev_alarms


def test_the_backup_vault_is_locked_for_as_long_as_the_plan_keeps_a_backup(synthesized: Synthesized) -> None:
    from infra.components.backup import KEPT_HERE, LOCK_GRACE

    template = synthesized.templates[PROD_OPENSEARCH]
    (vault,) = resources(template, "AWS::Backup::BackupVault").values()
    (plan,) = resources(template, "AWS::Backup::BackupPlan").values()
    (rule,) = plan["Properties"]["BackupPlan"]["BackupPlanRule"]
    # Given the vault / Then Vault Lock keeps every recovery point at least as long as the plan keeps it, in
    # compliance mode (it cannot be removed once its grace of three days after the first deploy has passed)
    lock = vault["Properties"]["LockConfiguration"]
    assert lock["MinRetentionDays"] == rule["Lifecycle"]["DeleteAfterDays"] == KEPT_HERE.to_days() == 35
    assert lock["ChangeableForDays"] == LOCK_GRACE.to_days() == 3
    assert "MaxRetentionDays" not in lock  # (the copy in the other account's vault keeps 90 days under its own rules)


def test_the_snapshot_requests_dead_letter_queue_alarms(synthesized: Synthesized) -> None:
    template = synthesized.templates[DEV_TABLE]
    (topic,) = resources(template, "AWS::SNS::Topic")
    dlq = _logical(template, "AWS::SQS::Queue", "SnapshotsRequestsDlq")
    # Given the table backend's snapshot requests / Then a request the snapshot function gave up on alarms at once
    alarm = _alarms(template)["SnapshotRequestsGivenUp"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert alarm["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]
    assert (alarm["ComparisonOperator"], alarm["Threshold"], alarm["EvaluationPeriods"]) == (
        "GreaterThanOrEqualToThreshold",
        1,
        1,
    )
    assert alarm["AlarmActions"] == [{"Ref": topic}]
    # And the OpenSearch backend, which has no snapshots, has no such alarm
    assert "SnapshotRequestsGivenUp" not in _alarms(synthesized.templates[PROD_OPENSEARCH])


def test_the_snapshot_queue_never_invokes_its_function_past_its_reservation(synthesized: Synthesized) -> None:
    from infra.components.compute import Concurrency
    from infra.components.snapshots import MIN_SQS_CONCURRENCY

    template = synthesized.templates[DEV_TABLE]
    function = function_ids(template)["snapshots"]
    (mapping,) = [
        m["Properties"]
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": function}
    ]
    reserved = template["Resources"][function]["Properties"]["ReservedConcurrentExecutions"]
    # Given dev's snapshot function and its queue's mapping / Then the mapping invokes it as often at once as it
    # reserves (it invoked 2 against a reservation of 1: throttled batches went back to the queue as failures)
    assert mapping["ScalingConfig"]["MaximumConcurrency"] == reserved >= MIN_SQS_CONCURRENCY
    # And so in either stage of the table backend (Lambda takes no maximum concurrency under 2)
    for production in (True, False):
        plan = Concurrency.for_stage(production, account=1000, extraction=0, snapshots=True)
        assert plan.snapshots >= MIN_SQS_CONCURRENCY


def test_the_indexer_failure_alarm_reads_what_its_stream_mapping_gave_up_each_minute(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    indexer = function_ids(template)["indexer"]
    ((mapping_id, mapping),) = [
        (logical, m["Properties"])
        for logical, m in resources(template, "AWS::Lambda::EventSourceMapping").items()
        if m["Properties"]["FunctionName"] == {"Ref": indexer}
    ]
    # Given the indexer's stream mapping / Then it counts its events (Lambda's per-minute mapping metrics), among them
    # the records it sends to its failure bucket
    assert mapping["MetricsConfig"] == {"Metrics": ["EventCount"]}
    bucket = mapping["DestinationConfig"]["OnFailure"]["Destination"]["Fn::GetAtt"][0]
    assert "IndexerFailures" in bucket
    # And the alarm reads those counts over one-minute periods (S3's object count of the bucket, daily, said it a
    # day late), and the records it dropped (their delivery to the bucket failed)
    alarm = _alarms(template)["IndexerFailuresKept"]
    stats = {q["Id"]: q["MetricStat"] for q in alarm["Metrics"] if "MetricStat" in q}
    assert {s["Metric"]["MetricName"] for s in stats.values()} == {
        "OnFailureDestinationDeliveredEventCount",
        "DroppedEventCount",
    }
    for stat in stats.values():
        assert stat["Metric"]["Namespace"] == "AWS/Lambda"
        assert stat["Metric"]["Dimensions"] == [{"Name": "EventSourceMappingUUID", "Value": {"Ref": mapping_id}}]
        assert (stat["Period"], stat["Stat"]) == (60, "Sum")
    (expression,) = [q["Expression"] for q in alarm["Metrics"] if "Expression" in q]
    assert expression == "FILL(delivered, 0) + FILL(dropped, 0)"  # (either may be missing in a minute)
    assert (alarm["Threshold"], alarm["EvaluationPeriods"]) == (1, 1)
    assert "NumberOfObjects" not in json.dumps(alarm)


# -- point 9: a stack that can be created again -----------------------------------------------------------------

_STACK_SUFFIX = {
    "Fn::Select": [4, {"Fn::Split": ["-", {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]}]}]
}
"""The last 12 hex digits of the stack's UUID (infra/components/naming.py), new for every stack CloudFormation
creates."""


def test_no_retained_resource_keeps_a_name_a_new_stack_would_take(synthesized: Synthesized) -> None:
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        # Given every resource the stack leaves behind when it is deleted
        for logical, resource in template["Resources"].items():
            if resource.get("DeletionPolicy") != "Retain":
                continue
            names = {k: v for k, v in resource.get("Properties", {}).items() if k.endswith("Name") and k != "KeyName"}
            # Then it has no name (CloudFormation makes one), or one that ends in the stack's own suffix
            for value in names.values():
                assert isinstance(value, dict), (name, logical, value)
                assert value["Fn::Join"][1][-1] == _STACK_SUFFIX, (name, logical, value)
    template = synthesized.templates[PROD_OPENSEARCH]
    # And so prod's backup vault (CloudFormation requires its name; CDK made it from the construct path) ...
    (vault,) = resources(template, "AWS::Backup::BackupVault").values()
    assert vault["DeletionPolicy"] == "Retain"
    assert vault["Properties"]["BackupVaultName"] == {"Fn::Join": ["-", ["agentmem-backups", _STACK_SUFFIX]]}
    # ... and the WAF's log group (WAF requires the aws-waf-logs- prefix), which the logging configuration names
    (group_id,) = [k for k, g in resources(template, "AWS::Logs::LogGroup").items() if "Firewall" in k]
    group = template["Resources"][group_id]
    assert group["DeletionPolicy"] == "Retain"
    assert group["Properties"]["LogGroupName"] == {"Fn::Join": ["-", ["aws-waf-logs-agentmem-prod", _STACK_SUFFIX]]}
    (logging,) = resources(template, "AWS::WAFv2::LoggingConfiguration").values()
    (destination,) = logging["Properties"]["LogDestinationConfigs"]
    assert {"Ref": group_id} in destination["Fn::Join"][1]


def test_the_buckets_go_with_the_stack_as_the_key_does(synthesized: Synthesized) -> None:
    from tests.infra.conftest import cdk_providers

    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        ((key_id, key),) = resources(template, "AWS::KMS::Key").items()
        buckets = resources(template, "AWS::S3::Bucket")
        assert buckets, name
        emptied = {
            r["Properties"]["BucketName"]["Ref"]
            for r in template["Resources"].values()
            if r["Type"] == "Custom::S3AutoDeleteObjects"
        }
        # Given each bucket of derived data (snapshots, the indexer's failures), encrypted with the data key
        for bucket_id, bucket in buckets.items():
            (rule,) = bucket["Properties"]["BucketEncryption"]["ServerSideEncryptionConfiguration"]
            assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}
            # Then it is kept or deleted with the stack as the key is: prod keeps both (what the bucket holds stays
            # readable), dev deletes both (dev's bucket was kept after its key was gone)
            assert bucket["DeletionPolicy"] == key["DeletionPolicy"], (name, bucket_id)
            # And dev's is emptied first (CloudFormation deletes no bucket that holds objects)
            assert (bucket_id in emptied) == (key["DeletionPolicy"] == "Delete"), (name, bucket_id)
        providers = cdk_providers(template)
        if key["DeletionPolicy"] == "Retain":
            assert providers == {}, name  # prod runs no code of CDK's
            continue
        # And what empties dev's buckets is CDK's one provider function, whose role may write its own logs (the
        # managed basic execution policy) and nothing else in IAM: the buckets' policies let it list and delete
        # their objects
        roles = {k: r for k, r in providers.items() if r["Type"] == "AWS::IAM::Role"}
        assert sorted(r["Type"] for r in providers.values()) == ["AWS::IAM::Role", "AWS::Lambda::Function"]
        ((role_id, role),) = roles.items()
        assert "Policies" not in role["Properties"]
        assert [json.dumps(p) for p in role["Properties"]["ManagedPolicyArns"]] == [
            json.dumps({"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"})
        ]
        assert not [
            p
            for p in template["Resources"].values()
            if p["Type"] == "AWS::IAM::Policy" and {"Ref": role_id} in p["Properties"].get("Roles", [])
        ]
        for bucket_id in emptied:
            (policy,) = [
                p["Properties"]["PolicyDocument"]["Statement"]
                for p in resources(template, "AWS::S3::BucketPolicy").values()
                if p["Properties"]["Bucket"] == {"Ref": bucket_id}
            ]
            (grant,) = [s for s in policy if s.get("Principal", {}).get("AWS") == {"Fn::GetAtt": [role_id, "Arn"]}]
            assert "s3:DeleteObject*" in grant["Action"]
            assert json.dumps({"Fn::GetAtt": [bucket_id, "Arn"]}) in json.dumps(grant["Resource"])


def test_the_stage_reserves_for_the_functions_it_has_and_no_other(synthesized: Synthesized) -> None:
    from infra.components.compute import Concurrency

    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        options = synthesized.stacks[name].options
        reserved = {
            handler: template["Resources"][logical]["Properties"]["ReservedConcurrentExecutions"]
            for handler, logical in function_ids(template).items()
        }
        # Given the stage's functions / Then the concurrency plan names exactly them, each with its reservation, and
        # its total is what the template reserves (the sum the pre-deploy check compares with the account's quota)
        assert options.concurrency.reservations == reserved, name
        assert options.concurrency.total == sum(reserved.values()), name
    # And the table backend, which has no indexer, counts none: its API gets the slots an indexer would hold
    dev = synthesized.stacks[DEV_TABLE].options.concurrency
    assert "indexer" not in dev.reservations
    with_indexer = Concurrency.for_stage(False, account=1000, extraction=0, snapshots=True, indexer=True)
    assert dev.api == with_indexer.api + with_indexer.indexer
    for production in (True, False):
        table = Concurrency.for_backend(production, account=1000, extraction=0, search_backend="table")
        opensearch = Concurrency.for_backend(production, account=1000, extraction=0, search_backend="opensearch")
        assert table.indexer == 0 < opensearch.indexer
        assert opensearch.snapshots == 0 < table.snapshots
        assert table.total == opensearch.total == table.budget  # (the API takes the rest of the stage's share)


_CALLED_BY_LAMBDA = ("logs:", "xray:", "ec2:", "kms:")
"""What a function's role holds for Lambda and AWS's services to use on its behalf, not for its code: its logs and
traces, its network interfaces, the data key (only through DynamoDB, SQS and S3: ``kms:ViaService``)."""
_READ_BY_MAPPINGS = {
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueAttributes",
    "sqs:GetQueueUrl",
    "s3:PutObject",  # (the indexer's failure bucket: its stream mapping's on-failure destination)
    "s3:ListBucket",
}
"""What the event source mappings do with the function's role: read the stream and the queue, write the failure
bucket. Lambda's pollers do it, outside the function's subnets."""
_ENDPOINT_OF = {"dynamodb": "dynamodb", "bedrock": "bedrock-runtime", "secretsmanager": "secretsmanager"}
_ENDPOINT_OF |= {"states": "states", "sqs": "sqs"}


def _allowed_actions(template: dict[str, Any], role_id: str) -> set[str]:
    return {
        action
        for policy in resources(template, "AWS::IAM::Policy").values()
        if {"Ref": role_id} in policy["Properties"]["Roles"]
        for s in policy["Properties"]["PolicyDocument"]["Statement"]
        if s["Effect"] == "Allow"
        for action in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }


def test_the_functions_in_private_subnets_reach_every_aws_api_their_code_calls(synthesized: Synthesized) -> None:
    from infra.components.compute import VPC_CALLS
    from tests.synthesis import PRIVATE_NETWORK, PRIVATE_ROUTE_TABLES

    template = synthesized.templates[PROD_OPENSEARCH]
    vpc, subnets = PRIVATE_NETWORK
    functions = resources(template, "AWS::Lambda::Function")
    placed = {
        f["Properties"]["Handler"].split(".", 1)[0]: f["Properties"]
        for f in functions.values()
        if "VpcConfig" in f["Properties"]
    }
    assert set(placed) == {"api", "deletion", "indexer", "extraction"}
    # Given what each placed function's role allows, less what Lambda and the mappings do with it
    needed: dict[str, set[str]] = {}
    for name, props in placed.items():
        actions = _allowed_actions(template, props["Role"]["Fn::GetAtt"][0])
        # (Lambda's own view of the subnets: AWSLambdaVPCAccessExecutionRole's actions, DescribeSubnets included)
        assert {"ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets", "ec2:CreateNetworkInterface"} <= actions
        called = {a for a in actions if not a.startswith(_CALLED_BY_LAMBDA) and a not in _READ_BY_MAPPINGS}
        services = {a.split(":", 1)[0] for a in called} - {"aoss"}  # (the collection: its own VPC endpoint)
        assert services <= set(_ENDPOINT_OF), (name, services)
        needed[name] = {_ENDPOINT_OF[service] for service in services}
        # And the stack's list of what each function's code calls (which makes the endpoints) is exactly that
        assert set(VPC_CALLS[name]) == needed[name], name
    (group_id,) = {json.dumps(g) for props in placed.values() for g in props["VpcConfig"]["SecurityGroupIds"]}
    endpoints = {
        e["Properties"]["ServiceName"]["Fn::Join"][1][-1].lstrip("."): e["Properties"]
        for e in resources(template, "AWS::EC2::VPCEndpoint").values()
    }
    # Then each such API has a VPC endpoint, and only those: DynamoDB's a gateway endpoint on the subnets' route tables
    assert set(endpoints) == set().union(*needed.values())
    dynamodb = endpoints.pop("dynamodb")
    assert (dynamodb["VpcEndpointType"], dynamodb["VpcId"]) == ("Gateway", vpc)
    assert dynamodb["RouteTableIds"] == list(PRIVATE_ROUTE_TABLES)
    # And every other an interface endpoint in the subnets, answering under the service's usual name (private DNS),
    # behind a group that admits HTTPS from the functions' group only
    groups = resources(template, "AWS::EC2::SecurityGroup")
    for service, endpoint in endpoints.items():
        assert endpoint["ServiceName"]["Fn::Join"][1][:2] == ["com.amazonaws.", {"Ref": "AWS::Region"}], service
        assert (endpoint["VpcEndpointType"], endpoint["VpcId"], endpoint["SubnetIds"]) == (
            "Interface",
            vpc,
            list(subnets),
        )
        assert endpoint["PrivateDnsEnabled"] is True, service
        ((endpoint_group,),) = {tuple(g["Fn::GetAtt"][0] for g in endpoint["SecurityGroupIds"])}
        (ingress,) = groups[endpoint_group]["Properties"]["SecurityGroupIngress"]
        assert (ingress["FromPort"], ingress["ToPort"]) == (443, 443)
        assert json.dumps(ingress["SourceSecurityGroupId"]) == group_id
    # And dev, with no private network, has none
    assert resources(synthesized.templates[DEV_TABLE], "AWS::EC2::VPCEndpoint") == {}


def test_a_private_network_names_its_route_tables_or_says_its_subnets_reach_aws_already(tmp_path: Any) -> None:
    import pytest
    from aws_cdk import App, Stack
    from aws_cdk import aws_kms as kms
    from aws_cdk.assertions import Annotations, Match, Template

    from infra.app import deployment_options
    from infra.components.search import PrivateNetwork, VectorSearch

    private = {
        "stage": "prod",
        "alarm_email": "a@b.example",
        "search_backend": "opensearch",
        "opensearch_vpc": "vpc-1",
        "opensearch_subnets": "subnet-1,subnet-2",
    }
    # Given a private network without its route tables / Then the synth stops: DynamoDB's endpoint needs them
    with pytest.raises(ValueError, match="opensearch_route_tables"):
        deployment_options(private.get)
    with pytest.raises(ValueError, match="route table ids"):
        deployment_options({**private, "opensearch_route_tables": "subnet-3"}.get)
    with pytest.raises(ValueError, match="true or false"):
        deployment_options({**private, "opensearch_vpc_endpoints": "maybe"}.get)
    options = deployment_options({**private, "opensearch_route_tables": "rtb-1, rtb-2"}.get)
    assert options.private_network.route_tables == ("rtb-1", "rtb-2")
    # And with opensearch_vpc_endpoints=false (a NAT gateway, or the VPC's own endpoints) it needs none, makes no
    # endpoint and says what the subnets must reach
    options = deployment_options({**private, "opensearch_vpc_endpoints": "false"}.get)
    network = options.private_network
    assert network == PrivateNetwork("vpc-1", ("subnet-1", "subnet-2"), endpoints=False)
    stack = Stack(App(outdir=str(tmp_path)), "Collection")
    search = VectorSearch(stack, "Search", stage="prod", key=kms.Key(stack, "Key"), production=True, network=network)
    search.reach(["dynamodb", "secretsmanager"])
    assert Template.from_stack(stack).find_resources("AWS::EC2::VPCEndpoint") == {}
    Annotations.from_stack(stack).has_warning("*", Match.string_like_regexp("must reach dynamodb, secretsmanager"))


# -- point 10: every answer in the API's error body ------------------------------------------------------------


def _gateway_answers(template: dict[str, Any]) -> dict[str, tuple[str | None, dict[str, Any]]]:
    """Response type -> (its status, None: the one API Gateway gives; its body)."""
    answers = {}
    for response in resources(template, "AWS::ApiGateway::GatewayResponse").values():
        props = response["Properties"]
        (content_type,) = props["ResponseTemplates"]
        assert content_type == "application/json"
        answers[props["ResponseType"]] = (props.get("StatusCode"), json.loads(props["ResponseTemplates"][content_type]))
    return answers


def test_every_answer_the_gateway_makes_itself_is_in_the_api_error_body(synthesized: Synthesized) -> None:
    import re

    from infra.components.firewall import REFUSED

    for name in (PROD_OPENSEARCH, DEV_TABLE):
        answers = _gateway_answers(synthesized.templates[name])
        # Given every gateway response of the stage / Then each is API.md's envelope: a snake_case code, a message,
        # the request's id
        for kind, (_, body) in answers.items():
            assert set(body) == {"error"}, (name, kind)
            assert set(body["error"]) == {"code", "message", "request_id"}, (name, kind)
            assert re.fullmatch(r"[a-z]+(_[a-z]+)*", body["error"]["code"]), (name, kind)
            assert body["error"]["message"], (name, kind)
            assert body["error"]["request_id"] == "$context.requestId", (name, kind)
        codes = {kind: (status, body["error"]["code"]) for kind, (status, body) in answers.items()}
        # And the answers that came bare before: a block by AWS's managed rule groups (403) ...
        assert codes["WAF_FILTERED"] == ("403", "forbidden")
        assert answers["WAF_FILTERED"][1]["error"]["message"] == REFUSED
        # ... the authorizer failing (a dependency down: 503, which clients retry, not the bare 500) ...
        assert (
            codes["AUTHORIZER_FAILURE"] == codes["AUTHORIZER_CONFIGURATION_ERROR"] == ("503", "dependency_unavailable")
        )
        # ... the API taking longer than the gateway waits (504) ...
        assert codes["INTEGRATION_TIMEOUT"] == ("504", "deadline_exceeded")
        assert "Idempotency-Key" in answers["INTEGRATION_TIMEOUT"][1]["error"]["message"]
        # ... and every other 4xx and 5xx of the gateway's own, each keeping its status (a default's status would
        # replace every status of its class)
        assert codes["DEFAULT_5XX"] == (None, "internal_error")
        assert codes["DEFAULT_4XX"] == (None, "request_refused")


def _web_acl(template: dict[str, Any]) -> dict[str, Any]:
    (acl,) = resources(template, "AWS::WAFv2::WebACL").values()
    return dict(acl["Properties"])


def test_the_managed_rules_that_would_refuse_legitimate_memories_only_count(synthesized: Synthesized) -> None:
    acl = _web_acl(synthesized.templates[PROD_OPENSEARCH])
    groups = {
        rule["Statement"]["ManagedRuleGroupStatement"]["Name"]: rule
        for rule in acl["Rules"]
        if "ManagedRuleGroupStatement" in rule["Statement"]
    }
    counted = {
        name: {
            o["Name"]
            for o in rule["Statement"]["ManagedRuleGroupStatement"].get("RuleActionOverrides", [])
            if o["ActionToUse"] == {"Count": {}}
        }
        for name, rule in groups.items()
    }
    # Given AWS's two managed groups / Then the known-bad-inputs group's body rules only count: a memory about
    # Log4Shell quotes ${jndi:ldap://...}, which Log4JRCE_BODY blocked (and so the Java deserialization and React
    # payloads a memory may quote); its header, path and query rules still block
    assert counted["AWSManagedRulesKnownBadInputsRuleSet"] == {
        "Log4JRCE_BODY",
        "JavaDeserializationRCE_BODY",
        "ReactJSRCE_BODY",
    }
    # And the common group counts a request without a User-Agent (an agent's HTTP client may send none) and a body
    # over 8 KB (a batch of memories; the API's own limit is 6 MB), beside its body inspections
    assert {"NoUserAgent_HEADER", "SizeRestrictions_BODY"} <= counted["AWSManagedRulesCommonRuleSet"]
    assert all(
        name.endswith("_BODY") or name == "NoUserAgent_HEADER" for name in counted["AWSManagedRulesCommonRuleSet"]
    )
    # And every other rule of both groups keeps its block (the group's own action is not overridden)
    for rule in groups.values():
        assert rule["OverrideAction"] == {"None": {}}


def test_the_api_keys_are_replaced_wherever_waf_shows_a_request(synthesized: Synthesized) -> None:
    from infra.components.firewall import KEY_HEADERS

    acl = _web_acl(synthesized.templates[PROD_OPENSEARCH])
    # Given the headers a key comes in (x-api-key, or Authorization: Bearer on MCP) / Then the web ACL's data
    # protection substitutes both in its logs, its sampled requests and the keys its rate rules count (the logging
    # configuration's redaction covered the logs only)
    assert set(KEY_HEADERS) == {"x-api-key", "authorization"}
    (protection,) = acl["DataProtectionConfig"]["DataProtections"]
    assert protection["Field"] == {"FieldType": "SINGLE_HEADER", "FieldKeys": ["x-api-key", "authorization"]}
    assert protection["Action"] == "SUBSTITUTION"
    assert (protection["ExcludeRateBasedDetails"], protection["ExcludeRuleMatchDetails"]) == (False, False)
    # And the logs' redaction stays
    (logging,) = resources(synthesized.templates[PROD_OPENSEARCH], "AWS::WAFv2::LoggingConfiguration").values()
    assert {f["SingleHeader"]["Name"] for f in logging["Properties"]["RedactedFields"]} == set(KEY_HEADERS)
    # And dev has no web ACL to protect (dev's stage has no WAF: docs/deploy.md)
    assert resources(synthesized.templates[DEV_TABLE], "AWS::WAFv2::WebACL") == {}


def test_the_body_size_rule_refuses_a_body_it_cannot_size(synthesized: Synthesized) -> None:
    from infra.components.firewall import BODY_LIMIT_BYTES

    acl = _web_acl(synthesized.templates[PROD_OPENSEARCH])
    (rule,) = [r for r in acl["Rules"] if r["Name"] == "BodyUnderLambdaLimit"]
    statement = rule["Statement"]
    small, large = b'{"entries": []}', b"x" * 7_000_000
    cases = [
        # (headers, body, refused)
        ({"content-length": str(len(small))}, small, False),
        ({"content-length": str(BODY_LIMIT_BYTES)}, b"x" * BODY_LIMIT_BYTES, False),
        ({"content-length": str(len(large))}, large, True),
        # a body without Content-Length (chunked): it passed the rule, which read only the header
        ({"transfer-encoding": "chunked"}, large, True),
        ({"transfer-encoding": "chunked"}, small, True),
        # a request without a body needs no length
        ({}, b"", False),
    ]
    for headers, body, refused in cases:
        assert matches(statement, Request(headers=headers, body=body)) is refused, (headers, len(body))
    # And the refusal is the API's 413, saying why
    response = rule["Action"]["Block"]["CustomResponse"]
    assert response["ResponseCode"] == 413
    answer = json.loads(acl["CustomResponseBodies"][response["CustomResponseBodyKey"]]["Content"])
    assert answer["error"]["code"] == "payload_too_large"
    assert "Content-Length" in answer["error"]["message"]
