"""The table backend's search snapshots in the template (issue 35, point 1; infra/components/snapshots.py): a
bucket encrypted with the stack's key, private, TLS only, objects expiring; a request queue encrypted with the
key, with a dead-letter queue; the snapshot function consuming it; the API reading objects and asking, the
erasure deleting them; every object grant on ``partitions/*`` and the key only through S3 and SQS. OpenSearch
stacks have none of it."""

from __future__ import annotations

from typing import Any

from infra.components.snapshots import KEPT_DAYS
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources


def _logical(template: dict[str, Any], kind: str, part: str) -> str:
    [found] = [name for name in resources(template, kind) if part in name]
    return found


def _functions(template: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        f["Properties"]["Handler"].split(".", 1)[0]: (name, f["Properties"])
        for name, f in resources(template, "AWS::Lambda::Function").items()
    }


def _statements(template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    _, props = _functions(template)[function]
    role = props["Role"]["Fn::GetAtt"][0]
    out = []
    for policy in resources(template, "AWS::IAM::Policy").values():
        if any(r.get("Ref") == role for r in policy["Properties"]["Roles"]):
            out += policy["Properties"]["PolicyDocument"]["Statement"]
    return out


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _granted(statements: list[dict[str, Any]], action: str) -> list[Any]:
    return [r for s in statements if action in _as_list(s["Action"]) for r in _as_list(s["Resource"])]


def test_the_table_backend_keeps_snapshots_in_a_private_encrypted_bucket(synthesized: Synthesized) -> None:
    template = synthesized.templates[DEV_TABLE]
    bucket_id = _logical(template, "AWS::S3::Bucket", "Snapshots")
    bucket = resources(template, "AWS::S3::Bucket")[bucket_id]["Properties"]
    key_id = next(iter(resources(template, "AWS::KMS::Key")))
    # Then it is encrypted with the stack's key, private, and its objects expire
    [rule] = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
    assert rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert all(bucket["PublicAccessBlockConfiguration"].values())
    assert bucket["LifecycleConfiguration"]["Rules"] == [{"ExpirationInDays": KEPT_DAYS, "Status": "Enabled"}]
    # And its policy refuses anything but TLS
    policies = [
        p["Properties"]["PolicyDocument"]["Statement"]
        for p in resources(template, "AWS::S3::BucketPolicy").values()
        if p["Properties"]["Bucket"] == {"Ref": bucket_id}
    ]
    assert any(
        s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}} for s in policies[0]
    )
    # And the request queue is encrypted with the key and drains into a dead-letter queue
    queues = resources(template, "AWS::SQS::Queue")
    [requests] = [q["Properties"] for n, q in queues.items() if "SnapshotsRequests" in n and "Dlq" not in n]
    assert requests["KmsMasterKeyId"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert "deadLetterTargetArn" in requests["RedrivePolicy"]


def test_the_functions_hold_what_their_part_needs_and_no_more(synthesized: Synthesized) -> None:
    template = synthesized.templates[DEV_TABLE]
    functions = _functions(template)
    bucket_id = _logical(template, "AWS::S3::Bucket", "Snapshots")
    objects = {"Fn::Join": ["", [{"Fn::GetAtt": [bucket_id, "Arn"]}, "/partitions/*"]]}
    # Given the API: it reads objects and asks on the queue, told where both are
    api_env = functions["api"][1]["Environment"]["Variables"]
    assert api_env["MEMORY_SNAPSHOTS"] == "s3"
    assert api_env["MEMORY_SNAPSHOT_BUCKET"] == {"Ref": bucket_id}
    assert "MEMORY_SNAPSHOT_QUEUE_URL" in api_env
    api = _statements(template, "api")
    assert _granted(api, "s3:GetObject") == [objects]
    assert _granted(api, "s3:PutObject") == []
    assert _granted(api, "s3:DeleteObject") == []
    assert len(_granted(api, "sqs:SendMessage")) == 1
    # And the writer: reads, writes and deletes objects, consumes the queue, never asks (no queue URL)
    writer_env = functions["snapshots"][1]["Environment"]["Variables"]
    assert writer_env["MEMORY_SNAPSHOTS"] == "s3"
    assert "MEMORY_SNAPSHOT_QUEUE_URL" not in writer_env
    writer = _statements(template, "snapshots")
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert _granted(writer, action) == [objects], action
    assert _granted(writer, "sqs:ReceiveMessage")
    assert functions["snapshots"][1]["ReservedConcurrentExecutions"] >= 1
    mappings = [
        m["Properties"]
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if m["Properties"]["FunctionName"] == {"Ref": functions["snapshots"][0]}
    ]
    assert len(mappings) == 1
    assert mappings[0]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # And the erasure steps: delete and check, never write
    steps = _statements(template, "deletion")
    assert _granted(steps, "s3:DeleteObject") == [objects]
    assert _granted(steps, "s3:PutObject") == []
    assert functions["deletion"][1]["Environment"]["Variables"]["MEMORY_SNAPSHOT_BUCKET"] == {"Ref": bucket_id}
    # And every grant of the key to these roles goes through S3, SQS or DynamoDB only
    for function in ("api", "snapshots"):
        for statement in _statements(template, function):
            if any(str(a).startswith("kms:") for a in _as_list(statement["Action"])):
                services = statement["Condition"]["StringEquals"]["kms:ViaService"]
                assert all(
                    any(s["Fn::Join"][1][0].startswith(f"{name}.") for name in ("s3", "sqs", "dynamodb"))
                    for s in _as_list(services)
                ), statement


def test_opensearch_stacks_have_no_snapshots(synthesized: Synthesized) -> None:
    template = synthesized.templates[PROD_OPENSEARCH]
    assert not [n for n in resources(template, "AWS::S3::Bucket") if "Snapshots" in n]
    assert "snapshots" not in _functions(template)
    assert "MEMORY_SNAPSHOTS" not in _functions(template)["api"][1]["Environment"]["Variables"]
