"""A stream batch the indexer gave up on, kept whole and replayed (issue 37, point 6), on the prod template.

The indexer's event source mapping gives up on a batch when every retry failed or it grew older than the
mapping's maximum record age; moto has no event source mappings, so the rehearsal models that moment from
Lambda's documentation (:meth:`Deployment.give_up_stream`: the invocation record, payload included, written to
the mapping's S3 on-failure destination with the indexer's role). The operator then runs the runbook's command
(docs/deploy.md), which rebuilds the users the batch names from the table.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentmem.cli import main
from agentmem.keys import UserRef
from tests.cloud.conftest import APP, Flow
from tests.cloud.rehearsal import Gateway
from tests.support import text_entry
from tests.synthesis import PROD_OPENSEARCH

pytestmark = pytest.mark.parametrize("flow", [PROD_OPENSEARCH], indirect=True)

BEEKEEPER = UserRef(APP, "dan")


def test_a_batch_the_indexer_gave_up_on_is_kept_whole_and_replayed_from_the_table(
    flow: Flow, opensearch_node: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    import boto3

    from agentmem.vectors.opensearch import OpenSearchVectorIndex

    d = flow.deployment
    index_name = d.functions["api"].variables.get("MEMORY_OPENSEARCH_INDEX", "agent-memory-vectors")
    index = OpenSearchVectorIndex(opensearch_node.url, index=index_name, engine="lucene")
    # Given an entry whose vector reached neither the request's own write nor the indexer (OpenSearch was down
    # for both: the index holds nothing of the user), and the mapping giving up on the batch that carries it
    written = Gateway(d).request(
        "POST", f"/v1/apps/{APP}/users/dan/memories", {"entry": text_entry("I keep bees")}, api_key=flow.keys[APP]
    )
    assert written.status == 201, written.body
    index.client.indices.refresh(index=index.index)  # (a delete by query sees what a refresh has shown)
    index.delete_user(BEEKEEPER)
    keys = d.give_up_stream("indexer")
    # Then the batch lies whole in the failure bucket the template names, written with the indexer's own grants
    bucket = d.template.physical[d.template.one("AWS::S3::Bucket")].ref
    s3 = boto3.client("s3", region_name="us-east-1")
    assert keys
    kept = [json.loads(s3.get_object(Bucket=bucket, Key=key)["Body"].read()) for key in keys]
    assert any("I keep bees" in record["payload"] for record in kept)
    assert all(record["DDBStreamBatchInfo"]["batchSize"] >= 1 for record in kept)
    assert d.violations() == []
    index.client.indices.refresh(index=index.index)
    assert index.count_user(BEEKEEPER) == 0

    # When the operator replays the bucket (docs/deploy.md's runbook) with the stack's settings
    settings = {
        "MEMORY_STORE": "dynamodb",
        "MEMORY_TABLE_NAME": d.table_name,
        "MEMORY_EMBEDDER": "bedrock",
        "MEMORY_OPENSEARCH_ENDPOINT": opensearch_node.url,
        "MEMORY_OPENSEARCH_INDEX": index_name,
    }
    with d.operator(**settings):
        code = main(["replay-index-failures", "--bucket", bucket, "--delete"])
    # Then the user is rebuilt from the table (the entry's vector is back) and the replayed records are gone
    assert code == 0, capsys.readouterr().err
    assert "users rebuilt from the table" in capsys.readouterr().out
    index.client.indices.refresh(index=index.index)
    assert index.count_user(BEEKEEPER) == 1
    assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
