"""Search: an OpenSearch Serverless vector collection (see docs/adr/0600-opensearch-serverless.md).

Only deployed with ``search_backend=opensearch``; with ``search_backend=table`` the service searches
the vectors kept in the table (exact search) and nothing here exists, so nothing costs when idle.

Three policies guard the collection:
- encryption: the stack's customer managed KMS key;
- network: the collection endpoint only (no OpenSearch Dashboards), reached over HTTPS;
- data access: only the Lambda roles given to :meth:`allow`, each with its own index permissions, only on
  this collection's indexes. No function creates or changes an index (``agentmem create-index`` does, run
  by a deployer whose principal is added with the ``opensearch_admins`` context).
Every request is SigV4-signed by those roles, which also need ``aoss:APIAccessAll`` on this collection.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_opensearchserverless as aoss
from constructs import Construct

from agentmem.settings import OPENSEARCH_SERVERLESS_SERVICE

SEARCHER = ["aoss:DescribeIndex", "aoss:ReadDocument", "aoss:WriteDocument"]
"""The API: its health check describes the index, it searches and writes vectors in the request."""
ERASER = ["aoss:ReadDocument", "aoss:WriteDocument"]
"""The deletion steps: list, count and delete a user's vectors."""
INDEXER = ["aoss:WriteDocument"]
"""The stream indexer only writes (bulk index and delete)."""
ADMIN = ["aoss:CreateIndex", "aoss:DescribeIndex", "aoss:UpdateIndex", "aoss:ReadDocument", "aoss:WriteDocument"]
"""A deployer's ``agentmem create-index`` and ``agentmem reindex`` (the ``opensearch_admins`` context)."""


class VectorSearch(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, stage: str, key: kms.IKey, production: bool) -> None:
        super().__init__(scope, construct_id)
        self.collection_name = f"agentmem-{stage}"[:32]
        collection_resource = [f"collection/{self.collection_name}"]
        encryption = aoss.CfnSecurityPolicy(
            self,
            "EncryptionPolicy",
            name=f"{self.collection_name}-enc"[:32],
            type="encryption",
            policy=Stack.of(self).to_json_string(
                {
                    "Rules": [{"ResourceType": "collection", "Resource": collection_resource}],
                    "AWSOwnedKey": False,
                    "KmsARN": key.key_arn,
                }
            ),
        )
        network = aoss.CfnSecurityPolicy(
            self,
            "NetworkPolicy",
            name=f"{self.collection_name}-net"[:32],
            type="network",
            policy=json.dumps(
                [{"Rules": [{"ResourceType": "collection", "Resource": collection_resource}], "AllowFromPublic": True}]
            ),
        )
        self.collection = aoss.CfnCollection(
            self,
            "Collection",
            name=self.collection_name,
            type="VECTORSEARCH",
            description="Agent memory vectors (derived from the table; rebuildable)",
            standby_replicas="ENABLED" if production else "DISABLED",  # minimum_ocus follows this
        )
        self.collection.add_resource_dependency(encryption)
        self.collection.add_resource_dependency(network)
        self.endpoint = self.collection.attr_collection_endpoint
        self.signing_service = OPENSEARCH_SERVERLESS_SERVICE
        self.arn = self.collection.attr_arn
        self._key = key

    def allow(self, grants: Mapping[iam.IRole, Sequence[str]], admins: Sequence[str] = ()) -> None:
        """Let exactly these roles use the collection's indexes, each with its permissions (data policy + IAM).

        ``admins`` (IAM principal ARNs) may also create, describe and update the index and read and write
        its documents: what ``agentmem create-index`` and ``agentmem reindex`` need."""
        collection = f"collection/{self.collection_name}"
        index = f"index/{self.collection_name}/*"
        statements = [
            {
                "Rules": [{"ResourceType": "index", "Resource": [index], "Permission": list(permissions)}],
                "Principal": [role.role_arn],
            }
            for role, permissions in grants.items()
        ]
        if admins:
            statements.append(
                {
                    "Rules": [
                        {"ResourceType": "index", "Resource": [index], "Permission": ADMIN},
                        {
                            "ResourceType": "collection",
                            "Resource": [collection],
                            "Permission": ["aoss:DescribeCollectionItems"],
                        },
                    ],
                    "Principal": list(admins),
                }
            )
        aoss.CfnAccessPolicy(
            self,
            "DataAccessPolicy",
            name=f"{self.collection_name}-data"[:32],
            type="data",
            policy=Stack.of(self).to_json_string(statements),
        )
        for role in grants:
            role.add_to_principal_policy(iam.PolicyStatement(actions=["aoss:APIAccessAll"], resources=[self.arn]))


def minimum_ocus(production: bool) -> float:
    """What a collection bills at rest: OpenSearch Serverless keeps 0.5 OCU for indexing and 0.5 for
    search, each doubled with standby replicas (prod), whether or not anyone searches."""
    return 2.0 if production else 1.0


def floor_notice(production: bool) -> str:
    """The monthly floor of the collection, said before a deploy that creates one."""
    from agentmem.costs import price

    ocu_hour = price("aoss.ocu_hour")
    ocus = minimum_ocus(production)
    monthly = ocu_hour.of(ocus * 730)
    return (
        f"search_backend=opensearch: OpenSearch Serverless bills at least {ocus:g} OCU "
        f"({'with' if production else 'without'} standby replicas) x 730 h x ${ocu_hour.usd} "
        f"({ocu_hour.region}, {ocu_hour.date}) = ${monthly:,.2f} a month, whether or not anyone searches. "
        "The table backend (the default) has no such floor."
    )
