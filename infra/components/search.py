"""Search: an OpenSearch Serverless vector collection (see docs/adr/0600-opensearch-serverless.md).

Only deployed with ``search_backend=opensearch``; with ``search_backend=table`` the service searches
the vectors kept in the table (exact search) and nothing here exists, so nothing costs when idle.

Three policies guard the collection:
- encryption: the stack's customer managed KMS key;
- network: the collection endpoint only (no OpenSearch Dashboards), reached over HTTPS: from anywhere by
  default (every request still needs IAM and the data-access policy), or, with a :class:`PrivateNetwork`
  (``-c opensearch_vpc=vpc-... -c opensearch_subnets=subnet-a,subnet-b``), only through an OpenSearch
  Serverless VPC endpoint in those subnets, with the functions that search placed there too (:meth:`connect`);
  With a private network the stack also makes the VPC endpoints of the other AWS APIs those functions call
  (:meth:`reach`: DynamoDB's gateway endpoint on the subnets' route tables, interface endpoints for the rest), unless
  ``-c opensearch_vpc_endpoints=false`` says the subnets reach them already (a NAT gateway, the VPC's own endpoints);
- data access: only the Lambda roles given to :meth:`allow`, each with its own index permissions, only on
  this collection's indexes. No function creates or changes an index (``agentmem create-index`` does, run
  by a deployer whose principal is added with the ``opensearch_admins`` context).
Every request is SigV4-signed by those roles, which also need ``aoss:APIAccessAll`` on this collection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Annotations, ArnFormat, Aws, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
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


ENI_ACTIONS = [
    "ec2:CreateNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
]
"""What Lambda does with a function's role to place it in subnets (and :data:`ENI_DESCRIBE_ACTIONS`, which name no
resource)."""
ENI_DESCRIBE_ACTIONS = ["ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets"]
"""What Lambda reads with the function's role to place it: AWS's AWSLambdaVPCAccessExecutionRole holds both (a role
without ``ec2:DescribeSubnets`` failed to create or update a function in a VPC)."""


@dataclass(frozen=True)
class PrivateNetwork:
    """An existing VPC's private subnets: the collection is reached only through an OpenSearch Serverless VPC
    endpoint there, and the functions that search run there. They call other AWS APIs too (DynamoDB, Bedrock
    runtime, Secrets Manager, Step Functions, SQS): with ``endpoints`` (the default) the stack makes a VPC endpoint
    for each (:meth:`VectorSearch.reach`), DynamoDB's a gateway endpoint on ``route_tables`` (the subnets' route
    tables); without, the subnets must reach them already, through a NAT gateway or endpoints of the VPC's own. The
    VPC must resolve DNS (enableDnsSupport and enableDnsHostnames): endpoints answer under the services' own names
    only then (docs/deploy.md; ``make deploy`` checks it: infra/preflight.py)."""

    vpc_id: str
    subnet_ids: tuple[str, ...]
    route_tables: tuple[str, ...] = ()
    endpoints: bool = True

    def __post_init__(self) -> None:
        if not self.vpc_id.startswith("vpc-") or not self.subnet_ids:
            raise ValueError("context opensearch_vpc needs a VPC id (vpc-...) and opensearch_subnets its subnet ids")
        if not all(subnet.startswith("subnet-") for subnet in self.subnet_ids):
            raise ValueError(f"context opensearch_subnets: not subnet ids: {list(self.subnet_ids)}")
        if not all(table.startswith("rtb-") for table in self.route_tables):
            raise ValueError(f"context opensearch_route_tables: not route table ids: {list(self.route_tables)}")
        if self.endpoints and not self.route_tables:
            raise ValueError(
                "context opensearch_route_tables: the route tables of the subnets (rtb-..., comma-separated), for the "
                "DynamoDB gateway endpoint the functions reach the table through; or opensearch_vpc_endpoints=false "
                "when the subnets reach DynamoDB, Bedrock, Secrets Manager, Step Functions and SQS already (a NAT "
                "gateway, or endpoints of the VPC's own)"
            )


class VectorSearch(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: str,
        key: kms.IKey,
        production: bool,
        network: PrivateNetwork | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.network = network
        self.endpoint_id: str | None = None
        self.functions_security_group: ec2.CfnSecurityGroup | None = None
        self.endpoints_security_group: ec2.CfnSecurityGroup | None = None
        self.service_endpoints: dict[str, ec2.CfnVPCEndpoint] = {}
        """The VPC endpoints of the AWS APIs the functions call, by service (:meth:`reach`)."""
        if network is not None:
            self._private_endpoint(network, f"agentmem-{stage}"[:32])
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
        reach: dict[str, object] = (
            {"AllowFromPublic": True}
            if self.endpoint_id is None
            else {"AllowFromPublic": False, "SourceVPCEs": [self.endpoint_id]}
        )
        network_policy = aoss.CfnSecurityPolicy(
            self,
            "NetworkPolicy",
            name=f"{self.collection_name}-net"[:32],
            type="network",
            policy=Stack.of(self).to_json_string(
                [{"Rules": [{"ResourceType": "collection", "Resource": collection_resource}], **reach}]
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
        self.collection.add_resource_dependency(network_policy)
        self.endpoint = self.collection.attr_collection_endpoint
        self.signing_service = OPENSEARCH_SERVERLESS_SERVICE
        self.arn = self.collection.attr_arn
        self._key = key

    def _private_endpoint(self, network: PrivateNetwork, name: str) -> None:
        """The VPC endpoint the collection is reached through, and the security groups: the functions' (HTTPS
        out) and the endpoint's (HTTPS in from the functions only)."""
        functions = ec2.CfnSecurityGroup(
            self,
            "FunctionsSecurityGroup",
            vpc_id=network.vpc_id,
            group_description="agent memory functions that reach the vector collection",
            security_group_egress=[
                ec2.CfnSecurityGroup.EgressProperty(
                    ip_protocol="tcp", from_port=443, to_port=443, cidr_ip="0.0.0.0/0", description="HTTPS to AWS"
                )
            ],
        )
        endpoint_group = ec2.CfnSecurityGroup(
            self,
            "EndpointSecurityGroup",
            vpc_id=network.vpc_id,
            group_description="the VPC endpoints of the agent memory functions: HTTPS from the functions only",
            security_group_ingress=[
                ec2.CfnSecurityGroup.IngressProperty(
                    ip_protocol="tcp",
                    from_port=443,
                    to_port=443,
                    source_security_group_id=functions.attr_group_id,
                    description="HTTPS from the functions",
                )
            ],
        )
        endpoint = aoss.CfnVpcEndpoint(
            self,
            "VpcEndpoint",
            name=f"{name}-vpce"[:32],
            vpc_id=network.vpc_id,
            subnet_ids=list(network.subnet_ids),
            security_group_ids=[endpoint_group.attr_group_id],
        )
        self.endpoint_id = endpoint.attr_id
        self.functions_security_group = functions
        self.endpoints_security_group = endpoint_group

    def connect(self, functions: Sequence[lambda_.Function]) -> None:
        """With a private network, place ``functions`` in its subnets (the collection answers nothing else), and
        let Lambda manage their network interfaces there: on those subnets and the one security group only."""
        if self.network is None or self.functions_security_group is None:
            return
        stack = Stack.of(self)
        group = self.functions_security_group

        def ec2_arn(resource: str, name: str) -> str:
            return stack.format_arn(
                service="ec2", resource=resource, resource_name=name, arn_format=ArnFormat.SLASH_RESOURCE_NAME
            )

        interfaces = [
            ec2_arn("network-interface", "*"),
            *(ec2_arn("subnet", subnet) for subnet in self.network.subnet_ids),
            ec2_arn("security-group", group.attr_group_id),
        ]
        for fn in functions:
            cfn = fn.node.default_child
            assert isinstance(cfn, lambda_.CfnFunction)
            cfn.vpc_config = lambda_.CfnFunction.VpcConfigProperty(
                subnet_ids=list(self.network.subnet_ids), security_group_ids=[group.attr_group_id]
            )
            fn.add_to_role_policy(iam.PolicyStatement(actions=ENI_ACTIONS, resources=interfaces))
            fn.add_to_role_policy(iam.PolicyStatement(actions=ENI_DESCRIBE_ACTIONS, resources=["*"]))

    def reach(self, services: Sequence[str]) -> None:
        """With a private network whose ``endpoints`` the stack makes, a VPC endpoint for each AWS API the placed
        functions call (``services``: endpoint service names, ``dynamodb``, ``bedrock-runtime``, ...): DynamoDB's a
        gateway endpoint on the subnets' route tables (free), every other an interface endpoint in the subnets with
        private DNS (the SDKs' usual names resolve to it), behind the endpoints' group (HTTPS from the functions
        only). Lambda itself sends the functions' logs; X-Ray's traces go through Lambda's daemon (docs/deploy.md)."""
        network, group = self.network, self.endpoints_security_group
        if network is None or group is None:
            return
        if not network.endpoints:
            Annotations.of(self).add_warning_v2(
                "agentmem:vpc-endpoints-elsewhere",
                f"opensearch_vpc_endpoints=false: the subnets must reach {', '.join(sorted(services))} by themselves "
                "(a NAT gateway, or endpoints of the VPC's own; docs/deploy.md)",
            )
            return
        for service in sorted(services):
            name = "".join(part.capitalize() for part in service.split("-")) + "Endpoint"
            placement: dict[str, Any] = (
                {"vpc_endpoint_type": "Gateway", "route_table_ids": list(network.route_tables)}
                if service == "dynamodb"
                else {
                    "vpc_endpoint_type": "Interface",
                    "subnet_ids": list(network.subnet_ids),
                    "security_group_ids": [group.attr_group_id],
                    "private_dns_enabled": True,
                }
            )
            endpoint = ec2.CfnVPCEndpoint(
                self,
                name,
                vpc_id=network.vpc_id,
                service_name=f"com.amazonaws.{Aws.REGION}.{service}",
                **placement,
            )
            self.service_endpoints[service] = endpoint

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
