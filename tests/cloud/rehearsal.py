"""The cloud rehearsal: one synthesized stack deployed into moto, its functions run as Lambda would run them.

- Resources: the table (from the template's own properties), its KMS key, the receipt secret, the DLQ
  and the deletion state machine (the template's definition asset with its DefinitionSubstitutions)
  are created in moto; every intrinsic of the template resolves to them (tests/cloud/template.py).
- Functions: each one's environment is its ``Environment.Variables`` resolved, plus what the Lambda
  runtime adds (region, function name, the role's credentials); only ``MEMORY_OPENSEARCH_ENDPOINT`` is
  overridden (the test node, whose index the operator creates with the lucene engine).
  Its real handler (functions/<name>/handler.py) is called with that environment and its own container,
  one invocation at a time (each function is its own process in Lambda).
- Calls: a botocore ``before-call`` hook records every AWS call with the principal whose credentials
  signed it (each role has its own access key; moto's Step Functions signs with ``ak``), and the
  OpenSearch transport records every HTTP request of the function running it. ``violations`` checks
  them against the role policies and the collection's data-access policy of the template.
- Event source mappings: :meth:`Deployment.pump_stream` reads the table's stream as a function's mapping
  does (with the function's role, its batch size and its filter criteria from the template) and
  :meth:`Deployment.deliver_queue` receives a queue's messages for the function that consumes it.
- Erasure re-drive: EventBridge's rule on the state machine's status changes, which moto does not raise, is
  modelled by :meth:`Deployment.deliver_execution_events` (the documented event, the template's pattern and
  target); Lambda's reserved concurrency, which moto does not enforce, by :class:`ReservedConcurrency` on the
  state machine's invokes; a step's process dying by :attr:`Deployment.crashing` (Lambda's ``Runtime.ExitError``).
- Bedrock: Titan embeddings are answered by a deterministic vector (moto answers ``{}``) and Converse, which
  moto lacks, by :data:`CONVERSE` (a scripted tool-use answer per tool name), each checking the request's
  shape. A Converse on an inference profile is authorized, as Bedrock does, on the profile and on its model
  in the Region that serves it (the rehearsal's own).
"""

from __future__ import annotations

import json
import os
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from typing import Any
from unittest import mock

from tests.cloud.iam import Policy, matches
from tests.cloud.template import ACCOUNT, REGION, Template
from tests.event_filters import matches as pattern_matches
from tests.event_filters import passes
from tests.support import Clock, execution_status_change
from tests.synthesis import CDK_PROVIDERS, Synthesized

OPERATOR = "operator"
STATE_MACHINE_KEY = "ak"  # the access key moto's Step Functions interpreter signs its Lambda invokes with
OVERRIDDEN = ("MEMORY_OPENSEARCH_ENDPOINT",)
"""The one value the rehearsal changes: the collection endpoint becomes the test node. The engine is not a
function's setting (no function creates the index; the stack sets none): the operator's create-index
makes the node's index with lucene, as the node needs, where AWS gets faiss."""
_IAM_PREFIX = {
    "bedrock-runtime": "bedrock",
    "dynamodb-streams": "dynamodb",
    "sfn": "states",
    "secrets-manager": "secretsmanager",
}
_IAM_ACTION = {
    ("lambda", "Invoke"): "InvokeFunction",
    ("bedrock", "Converse"): "InvokeModel",
    ("s3", "ListObjectsV2"): "ListBucket",
}
_INFERENCE_PROFILE = re.compile(r"^(?:us|us-gov|eu|apac|jp|au|ca|global)\.(.+)$")
"""A system-defined cross-Region inference profile id (``us.amazon.nova-micro-v1:0``) and its model."""
_TRANSACT = {"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem"}


@dataclass(frozen=True)
class Call:
    """One authorization request: who, which IAM action, on which resource, with which condition keys."""

    principal: str
    action: str
    resource: str
    context: tuple[tuple[str, tuple[str, ...]], ...] = ()
    api: str = ""
    """The API call it came from (``dynamodb:TransactWriteItems``, ``POST /_bulk``)."""

    def condition_keys(self) -> dict[str, tuple[str, ...]]:
        return dict(self.context)


@dataclass
class Function:
    logical_id: str
    name: str
    """functions/<name>/handler.py"""
    role: str
    """The role's logical id."""
    role_arn: str
    access_key: str
    variables: dict[str, str]
    """Environment.Variables, resolved."""
    policy: Policy
    handler: Callable[[Any, Any], Any] | None = None
    container: Any = None
    session: Any = None
    """The process's default boto3 session (its credentials are the role's)."""


class Recorder:
    """Every AWS call and OpenSearch request made while the rehearsal runs."""

    def __init__(self, principals: Mapping[str, str]) -> None:
        self.principals = dict(principals)  # access key -> principal
        self.calls: list[Call] = []
        self.unattributed: list[str] = []
        self._lock = threading.Lock()
        self.current = threading.local()
        self.table_key = "pk"

    def _add(self, calls: Sequence[Call]) -> None:
        with self._lock:
            self.calls.extend(calls)

    # -- botocore ------------------------------------------------------------------------------------

    def provide_params(self, params: Mapping[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["rehearsal_params"] = dict(params)  # the call's own parameters, read again in before_call

    def before_call(self, model: Any, context: Mapping[str, Any], request_signer: Any = None, **_: Any) -> None:
        credentials = getattr(request_signer, "_credentials", None)
        key = getattr(credentials, "access_key", None)
        principal = self.principals.get(str(key))
        service_id = model.service_model.service_id.hyphenize()
        api = f"{service_id}:{model.name}"
        if principal is None:
            self.unattributed.append(f"{api} signed by {key!r}")
            return
        if principal == OPERATOR:
            return
        try:
            requests = self._requests(service_id, model.name, context["rehearsal_params"])
        except Exception as exc:  # never break the function under test: report it instead
            self.unattributed.append(f"{api} by {principal}: not understood ({type(exc).__name__}: {exc})")
            return
        self._add([Call(principal, *request, api=api) for request in requests])

    def _requests(self, service: str, operation: str, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        prefix = _IAM_PREFIX.get(service, service)
        action = f"{prefix}:{_IAM_ACTION.get((prefix, operation), operation)}"
        arn = f"arn:aws:{{}}:{REGION}:{ACCOUNT}:{{}}"
        if service == "dynamodb":
            if operation == "TransactWriteItems":
                out = []
                for item in params["TransactItems"]:
                    ((kind, op),) = item.items()
                    out.append(
                        self._dynamodb(f"dynamodb:{_TRANSACT[kind]}", op["TableName"], [op.get("Key") or op["Item"]])
                    )
                return out
            if operation in ("BatchWriteItem", "BatchGetItem"):
                out = []
                for table, requests in params["RequestItems"].items():
                    if operation == "BatchGetItem":
                        keys = requests["Keys"]
                    else:
                        keys = [r.get("PutRequest", {}).get("Item") or r["DeleteRequest"]["Key"] for r in requests]
                    out.append(self._dynamodb(action, table, keys))
                return out
            if operation == "Query":
                return [self._dynamodb(action, params["TableName"], [], query=params)]
            keys = [params[k] for k in ("Key", "Item") if k in params]
            return [self._dynamodb(action, params["TableName"], keys)]
        if service == "dynamodb-streams":
            return [(action, params.get("StreamArn") or str(params.get("ShardIterator", "")).split("|")[0] or "*")]
        if service == "secrets-manager":
            return [(action, params["SecretId"])]
        if service == "sfn":
            return [(action, params.get("stateMachineArn") or params["executionArn"])]
        if service == "bedrock-runtime":
            model_id = params["modelId"]
            profile = _INFERENCE_PROFILE.match(model_id)
            if profile is None:
                return [(action, f"arn:aws:bedrock:{REGION}::foundation-model/{model_id}")]
            return [
                (action, f"arn:aws:bedrock:{REGION}:{ACCOUNT}:inference-profile/{model_id}"),
                (action, f"arn:aws:bedrock:{REGION}::foundation-model/{profile.group(1)}"),
            ]
        if service == "lambda":
            name = params["FunctionName"]
            return [(action, name if name.startswith("arn:") else arn.format("lambda", f"function:{name}"))]
        if service == "sqs":
            name = params["QueueUrl"].rstrip("/").rsplit("/", 1)[-1]
            return [(action, arn.format("sqs", name))]
        if service == "s3":
            bucket = f"arn:aws:s3:::{params['Bucket']}"
            if operation == "ListObjectsV2":
                return [(action, bucket)]
            if operation == "DeleteObjects":  # authorized object by object, as s3:DeleteObject
                return [("s3:DeleteObject", f"{bucket}/{o['Key']}") for o in params["Delete"]["Objects"]]
            if operation == "HeadObject":  # authorized as s3:GetObject
                return [("s3:GetObject", f"{bucket}/{params['Key']}")]
            return [(action, f"{bucket}/{params['Key']}")]
        raise AssertionError(f"the rehearsal has no resource mapping for {service}:{operation}")

    def _dynamodb(
        self, action: str, table: str, keys: Sequence[Mapping[str, Any]], query: Mapping[str, Any] | None = None
    ) -> tuple[Any, ...]:
        resource = table if table.startswith("arn:") else f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table}"
        leading = [str(next(iter(k[self.table_key].values()))) for k in keys if self.table_key in k]
        if query is not None:
            leading.append(self._query_partition(query))
        return (action, resource, (("dynamodb:LeadingKeys", tuple(leading)),))

    def _query_partition(self, query: Mapping[str, Any]) -> str:
        names = {v: k for k, v in (query.get("ExpressionAttributeNames") or {}).items()}
        attribute = names.get(self.table_key, self.table_key)
        found = re.search(rf"{re.escape(attribute)}\s*=\s*(:\w+)", query["KeyConditionExpression"])
        assert found, f"no partition key equality in {query['KeyConditionExpression']}"
        return str(next(iter(query["ExpressionAttributeValues"][found.group(1)].values())))

    # -- OpenSearch HTTP -----------------------------------------------------------------------------

    def http(self, collection_arn: str, collection: str, method: str, url: str, body: Any) -> None:
        principal = getattr(self.current, "principal", None)
        if principal is None or principal == OPERATOR:
            return
        api = f"{method} {url.split('?')[0]}"
        calls = [Call(principal, "aoss:APIAccessAll", collection_arn, api=api)]
        for permission, index in aoss_permissions(method, url, body):
            calls.append(Call(principal, permission, f"index/{collection}/{index}", api=api))
        self._add(calls)


def aoss_permissions(method: str, url: str, body: Any) -> list[tuple[str, str]]:
    """The data-access permissions an OpenSearch Serverless request needs, per index it touches."""
    path = url.split("?")[0].strip("/")
    parts = path.split("/") if path else []
    if parts and parts[-1] == "_bulk":
        return [
            ("aoss:WriteDocument", index) for index in sorted(_bulk_indexes(body, parts[0] if len(parts) > 1 else ""))
        ]
    if not parts or parts[0].startswith("_"):
        raise AssertionError(f"the rehearsal has no aoss mapping for {method} {url}")
    index, rest = parts[0], parts[1:]
    if not rest:
        permission = {"HEAD": "DescribeIndex", "GET": "DescribeIndex", "PUT": "CreateIndex", "DELETE": "DeleteIndex"}
        return [(f"aoss:{permission[method]}", index)]
    if rest[0] in ("_search", "_count", "_msearch", "_mget") or (rest[0] == "_doc" and method in ("GET", "HEAD")):
        return [("aoss:ReadDocument", index)]
    if rest[0] in ("_doc", "_create", "_update", "_delete_by_query", "_update_by_query"):
        return [("aoss:WriteDocument", index)]
    if rest[0] in ("_mapping", "_settings"):
        return [("aoss:DescribeIndex" if method in ("GET", "HEAD") else "aoss:UpdateIndex", index)]
    raise AssertionError(f"the rehearsal has no aoss mapping for {method} {url}")


def _bulk_indexes(body: Any, default: str) -> set[str]:
    """The indexes a bulk body's action lines name (a delete has no source line after it)."""
    text = body.decode() if isinstance(body, bytes) else str(body or "")
    lines = iter(line for line in text.splitlines() if line.strip())
    indexes: set[str] = set()
    for line in lines:
        ((verb, meta),) = json.loads(line).items()
        indexes.add(str(meta.get("_index") or default))
        if verb != "delete":
            next(lines, None)
    return indexes


def data_policy_allows(policies: Sequence[Any], principal: str, permission: str, resource: str) -> bool:
    """OpenSearch Serverless data-access policies: a rule of a policy naming the principal grants it."""
    kind = resource.split("/", 1)[0]
    for policy in policies:
        for block in policy:
            if principal not in block.get("Principal", []):
                continue
            for rule in block["Rules"]:
                if rule["ResourceType"] != kind:
                    continue
                if any(matches(r, resource) for r in rule["Resource"]) and any(
                    matches(p, permission, case_sensitive=False) for p in rule["Permission"]
                ):
                    return True
    return False


class Deployment:
    """One synthesized stack brought up in moto (inside ``deployed()``), its functions invocable."""

    def __init__(self, synthesized: Synthesized, stack: str, *, opensearch_url: str | None = None) -> None:
        self.stack = stack
        self.synthesized = synthesized
        self.template = Template(stack, synthesized.templates[stack])
        self.opensearch_url = opensearch_url
        self.functions: dict[str, Function] = {}
        self.recorder: Recorder | None = None
        self.state_machine_role = ""
        self.state_machine_arn = ""
        self.table_name = ""
        self.stream_arn = ""
        self.collection = ""
        self.collection_arn = ""
        self.data_policies: list[Any] = []
        self._lock = _ENVIRONMENT_LOCK
        self._stream_positions: dict[tuple[str, str], str] = {}
        self.stream_deliveries: dict[str, list[dict[str, Any]]] = {}
        """Function name -> every stream record its mapping's filter let through to it."""
        self.concurrency = ReservedConcurrency()
        self.crashing: Callable[[str, Mapping[str, Any]], bool] | None = None
        """(function name, event) -> whether that invocation's process exits before answering."""
        self._delivered_executions: set[str] = set()
        self.clock = Clock()
        """The time every function's container reads: the wall clock unless a test holds it."""

    # -- bringing it up ------------------------------------------------------------------------------

    @contextmanager
    def deployed(self) -> Iterator[Deployment]:
        import boto3
        import botocore.handlers
        from moto import mock_aws
        from moto.bedrockruntime.responses import BedrockRuntimeResponse
        from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils as lambda_tasks

        from tests.moto_support import serialise_moto_dynamodb

        serialise_moto_dynamodb()
        locked_lambda_task = self.concurrency.admitting(
            _under_the_environment_lock(lambda_tasks.execute_lambda_function_integration)
        )
        self.recorder = Recorder({OPERATOR: OPERATOR})
        hooks = [("provide-client-params", self.recorder.provide_params), ("before-call", self.recorder.before_call)]
        botocore.handlers.BUILTIN_HANDLERS.extend(hooks)  # every botocore session made from now on
        boto3.DEFAULT_SESSION = None
        config = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}
        try:
            with (
                mock_aws(config=config),  # type: ignore[arg-type]
                mock.patch("moto.awslambda_simple.models.LambdaSimpleBackend.invoke", self._route_invoke),
                mock.patch.object(lambda_tasks, "execute_lambda_function_integration", locked_lambda_task),
                mock.patch("moto.bedrockruntime.models.BedrockRuntimeBackend.invoke_model", _titan_embedding),
                mock.patch.object(BedrockRuntimeResponse, "converse", _converse, create=True),
                mock.patch("opensearchpy.transport.Transport.perform_request", self._opensearch_request()),
                self._operator_environment(),
            ):
                self._create_resources()
                self._read_functions()
                self.concurrency.limits = {
                    fn.logical_id: int(self.template.properties(fn.logical_id)["ReservedConcurrentExecutions"])
                    for fn in self.functions.values()
                }
                self.recorder.table_key = self._partition_key
                self.recorder.principals.update({fn.access_key: fn.role for fn in self.functions.values()})
                self.recorder.principals[STATE_MACHINE_KEY] = self.state_machine_role
                yield self
        finally:
            for hook in hooks:
                botocore.handlers.BUILTIN_HANDLERS.remove(hook)
            boto3.DEFAULT_SESSION = None
            from agentmem.container import set_container

            set_container(None)

    @contextmanager
    def _operator_environment(self) -> Iterator[None]:
        """The deployer's shell: its own credentials, no function's settings."""
        with _swapped_environment(
            {
                "AWS_ACCESS_KEY_ID": OPERATOR,
                "AWS_SECRET_ACCESS_KEY": "operator-secret",
                "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION,
            }
        ):
            yield

    def _create_resources(self) -> None:
        import boto3

        t = self.template
        key_id = t.one("AWS::KMS::Key")
        key = boto3.client("kms", region_name=REGION).create_key(Description=key_id)["KeyMetadata"]
        t.bind(key_id, key["KeyId"], Arn=key["Arn"])

        table_id = t.one("AWS::DynamoDB::Table")
        props = t.resolve(t.properties(table_id))
        self.table_name = f"{self.stack}-{table_id}"
        self._partition_key = next(k["AttributeName"] for k in props["KeySchema"] if k["KeyType"] == "HASH")
        stream = props.get("StreamSpecification")
        created = boto3.client("dynamodb", region_name=REGION).create_table(
            TableName=self.table_name,
            KeySchema=props["KeySchema"],
            AttributeDefinitions=props["AttributeDefinitions"],
            BillingMode=props["BillingMode"],
            StreamSpecification=(
                {"StreamEnabled": True, "StreamViewType": stream["StreamViewType"]}
                if stream
                else {"StreamEnabled": False}
            ),
            SSESpecification={
                "Enabled": props["SSESpecification"]["SSEEnabled"],
                "SSEType": props["SSESpecification"]["SSEType"],
                "KMSMasterKeyId": props["SSESpecification"]["KMSMasterKeyId"],
            },
        )["TableDescription"]
        self.stream_arn = created.get("LatestStreamArn", "")
        attributes = {"Arn": created["TableArn"], **({"StreamArn": self.stream_arn} if stream else {})}
        t.bind(table_id, self.table_name, **attributes)

        secret_id = t.one("AWS::SecretsManager::Secret")
        secret = boto3.client("secretsmanager", region_name=REGION).create_secret(
            Name=secret_id, SecretString=uuid.uuid4().hex + uuid.uuid4().hex
        )
        t.bind(secret_id, secret["ARN"])

        for queue_id in t.of_type("AWS::SQS::Queue"):
            sqs = boto3.client("sqs", region_name=REGION)
            url = sqs.create_queue(QueueName=queue_id)["QueueUrl"]
            arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
            t.bind(queue_id, url, Arn=arn, QueueName=queue_id)

        for bucket_id in t.of_type("AWS::S3::Bucket"):
            name = f"{self.stack.lower()}-{bucket_id.lower()}"[:63]
            boto3.client("s3", region_name=REGION).create_bucket(Bucket=name)
            t.bind(bucket_id, name, Arn=f"arn:aws:s3:::{name}")

        for collection_id in t.of_type("AWS::OpenSearchServerless::Collection"):
            self.collection = t.properties(collection_id)["Name"]
            self.collection_arn = f"arn:aws:aoss:{REGION}:{ACCOUNT}:collection/{collection_id.lower()}"
            endpoint = f"https://{collection_id.lower()}.{REGION}.aoss.amazonaws.com"
            t.bind(collection_id, collection_id.lower(), Arn=self.collection_arn, CollectionEndpoint=endpoint)
        self.data_policies = [
            json.loads(t.resolve(props["Policy"]))
            for name, resource in t.of_type("AWS::OpenSearchServerless::AccessPolicy").items()
            if (props := resource["Properties"])["Type"] == "data"
        ]

        machine_id = t.one("AWS::StepFunctions::StateMachine")
        machine = t.properties(machine_id)
        location = t.resolve(machine["DefinitionS3Location"])
        definition = t.substitute(
            self.synthesized.asset(self.stack, location["Key"]).read_text(),
            t.resolve(machine.get("DefinitionSubstitutions", {})),
        )
        self.state_machine_role = machine["RoleArn"]["Fn::GetAtt"][0]
        self.state_machine_arn = boto3.client("stepfunctions", region_name=REGION).create_state_machine(
            name=machine_id,
            definition=definition,
            roleArn=t.resolve(machine["RoleArn"]),
            type=machine["StateMachineType"],
        )["stateMachineArn"]
        t.bind(machine_id, self.state_machine_arn, Name=machine_id)

    def _read_functions(self) -> None:
        t = self.template
        for logical_id, resource in t.of_type("AWS::Lambda::Function").items():
            if logical_id.startswith(CDK_PROVIDERS):  # CDK's own (dev's bucket auto-delete), run only at stack deletion
                continue
            props = resource["Properties"]
            name = props["Handler"].split(".", 1)[0]
            role = props["Role"]["Fn::GetAtt"][0]
            variables = {k: str(v) for k, v in t.resolve(props.get("Environment", {}).get("Variables", {})).items()}
            self.functions[name] = Function(
                logical_id=logical_id,
                name=name,
                role=role,
                role_arn=t.resolve(props["Role"]),
                access_key=f"AKIA{role}",
                variables=variables,
                policy=self.role_policy(role),
            )

    def role_policy(self, role: str) -> Policy:
        """Every identity policy attached to the role in the template (inline, AWS::IAM::Policy, managed)."""
        t = self.template
        role_props = t.properties(role)
        assert not role_props.get("ManagedPolicyArns"), f"{role}: managed policies are not modelled"
        documents = [t.resolve(p["PolicyDocument"]) for p in role_props.get("Policies", [])]
        for policy in t.of_type("AWS::IAM::Policy").values():
            if {"Ref": role} in policy["Properties"].get("Roles", []):
                documents.append(t.resolve(policy["Properties"]["PolicyDocument"]))
        return Policy.from_documents(documents)

    def role_arn(self, role: str) -> str:
        return str(self.template.resolve({"Fn::GetAtt": [role, "Arn"]}))

    # -- running functions ---------------------------------------------------------------------------

    @contextmanager
    def operator(self, **settings: str) -> Iterator[None]:
        """The deployer's shell with these settings (``MEMORY_...``), no function running meanwhile: for the
        operator's commands (``agentmem ...``), which sign with the operator's credentials."""
        with _ENVIRONMENT_LOCK, _swapped_environment(settings, clear=("MEMORY_", "POWERTOOLS_")):
            yield

    def lambda_environment(self, fn: Function) -> dict[str, str]:
        """What the function's process sees: the template's variables, the two overrides, Lambda's own."""
        env = dict(fn.variables)
        if self.opensearch_url is not None and "MEMORY_OPENSEARCH_ENDPOINT" in env:
            env["MEMORY_OPENSEARCH_ENDPOINT"] = self.opensearch_url
        env.update(
            AWS_REGION=REGION,
            AWS_DEFAULT_REGION=REGION,
            AWS_LAMBDA_FUNCTION_NAME=fn.logical_id,
            AWS_EXECUTION_ENV="AWS_Lambda_python3.14",
            AWS_ACCESS_KEY_ID=fn.access_key,
            AWS_SECRET_ACCESS_KEY="lambda-role-secret",
            AWS_SESSION_TOKEN=f"session-of-{fn.role}",
        )
        return env

    def invoke(self, name: str, event: Any) -> Any:
        """Run the function's real handler once, in its environment, as its role."""
        import boto3

        from agentmem.container import Container, set_container
        from agentmem.secrets import read_secret
        from agentmem.settings import Settings

        fn = self.functions[name]
        assert self.recorder is not None
        with self._lock, _swapped_environment(self.lambda_environment(fn), clear=("MEMORY_", "POWERTOOLS_", "AWS_")):
            if fn.session is None:
                fn.session = boto3.Session()
            saved_session, boto3.DEFAULT_SESSION = boto3.DEFAULT_SESSION, fn.session
            if fn.handler is None:
                fn.handler = import_module(f"functions.{name}.handler").handler
            if fn.container is None:
                fn.container = Container(Settings.from_env(), clock=self.clock)
            read_secret.cache_clear()  # a per-process cache: another function's read is not this one's
            set_container(fn.container)
            self.recorder.current.principal = fn.role
            try:
                return fn.handler(event, _LambdaContext(fn.logical_id))
            finally:
                self.recorder.current.principal = None
                set_container(None)
                boto3.DEFAULT_SESSION = saved_session

    def _route_invoke(
        self, function_name: str, qualifier: Any, body: Any, headers: Any, response_headers: Any
    ) -> bytes:
        """moto's Lambda without Docker echoes payloads: run the function the ARN names instead."""
        fn = next(f for f in self.functions.values() if function_name.endswith(f":{f.logical_id}"))
        event = json.loads(body)
        if self.crashing is not None and self.crashing(fn.name, event):
            # Lambda's answer when the function's process exits before it answers (its documented errorType)
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": "Runtime.ExitError", "errorMessage": "exit status 1"}).encode()
        try:
            result = self.invoke(fn.name, event)
        except Exception as exc:
            response_headers["x-amz-function-error"] = "Unhandled"
            return json.dumps({"errorType": type(exc).__name__, "errorMessage": str(exc)}).encode()
        return json.dumps(result).encode()

    def _opensearch_request(self) -> Callable[..., Any]:
        from opensearchpy.transport import Transport

        original = Transport.perform_request
        deployment = self

        def perform_request(
            transport: Any, method: str, url: str, params: Any = None, body: Any = None, **kw: Any
        ) -> Any:
            assert deployment.recorder is not None
            deployment.recorder.http(deployment.collection_arn, deployment.collection, method, url, body)
            return original(transport, method, url, params=params, body=body, **kw)

        return perform_request

    def mapping(self, function: str, source: str) -> Mapping[str, Any]:
        """The template's event source mapping of ``function`` whose source is the table's stream
        (``source="stream"``) or the queue of that logical id."""
        t = self.template
        fn = self.functions[function]
        wanted = (
            {"Fn::GetAtt": [t.one("AWS::DynamoDB::Table"), "StreamArn"]}
            if source == "stream"
            else {"Fn::GetAtt": [source, "Arn"]}
        )
        found = [
            props
            for resource in t.of_type("AWS::Lambda::EventSourceMapping").values()
            if (props := resource["Properties"])["FunctionName"] == {"Ref": fn.logical_id}
            and props["EventSourceArn"] == wanted
        ]
        assert len(found) == 1, f"{self.stack}: {function} has {len(found)} mappings from {source}"
        return found[0]

    def _role_client(self, service: str, fn: Function, **kw: Any) -> Any:
        import boto3

        return boto3.client(
            service,
            region_name=REGION,
            aws_access_key_id=fn.access_key,
            aws_secret_access_key="lambda-role-secret",
            aws_session_token=f"session-of-{fn.role}",
            **kw,
        )

    def pump_stream(self, function: str = "indexer") -> list[dict[str, Any]]:
        """The function's event source mapping from the table's stream: read the new stream records as the
        function's role, keep those its filter criteria let through, invoke it in batches of its batch size
        (its client reads the environment: under the lock, as function runs are)."""
        with _ENVIRONMENT_LOCK:
            return self._pump_stream(function)

    def _pump_stream(self, name: str) -> list[dict[str, Any]]:
        size = int(self.mapping(name, "stream").get("BatchSize", 100))
        responses = []
        for delivered in self._read_stream(name):
            for start in range(0, len(delivered), size):
                batch = delivered[start : start + size]
                response = self.invoke(name, {"Records": batch})
                failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
                processor = getattr(import_module(f"functions.{name}.handler"), "processor", None)
                errors = [repr(e[1]) for e in processor.exceptions if e] if failed and processor else []
                names = [
                    r["eventName"] + " " + str(r["dynamodb"]["Keys"])
                    for r in batch
                    if r["dynamodb"]["SequenceNumber"] in failed
                ]
                responses.append({**response, "failed_records": names, "errors": errors})
        return responses

    def _read_stream(self, name: str) -> Iterator[list[dict[str, Any]]]:
        """Per shard, the new stream records the function's mapping lets through (its filter criteria), read as
        the function's role; the mapping's position moves past them."""
        fn = self.functions[name]
        filters = (self.mapping(name, "stream").get("FilterCriteria") or {}).get("Filters") or []
        streams = self._role_client(
            "dynamodbstreams",
            fn,
            # botocore now resolves account-based endpoints (<account>.streams-ddb...); moto matches the regional one
            endpoint_url=f"https://streams.dynamodb.{REGION}.amazonaws.com",
        )
        for shard in streams.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]["Shards"]:
            shard_id = shard["ShardId"]
            after = self._stream_positions.get((name, shard_id))
            iterator = streams.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard_id,
                **(
                    {"ShardIteratorType": "AFTER_SEQUENCE_NUMBER", "SequenceNumber": after}
                    if after
                    else {"ShardIteratorType": "TRIM_HORIZON"}
                ),
            )["ShardIterator"]
            records: list[dict[str, Any]] = []
            while True:  # the mapping reads the shard until it is caught up, 1,000 records a read at most
                page = streams.get_records(ShardIterator=iterator, Limit=1000)
                records += page["Records"]
                if not page["Records"] or not page.get("NextShardIterator"):
                    break
                iterator = page["NextShardIterator"]
            wired = [{**_wire(r), "eventSourceARN": self.stream_arn} for r in records]
            delivered = [r for r in wired if not filters or passes(filters, r)]
            self.stream_deliveries.setdefault(name, []).extend(delivered)
            if records:
                self._stream_positions[(name, shard_id)] = records[-1]["dynamodb"]["SequenceNumber"]
            yield delivered

    def give_up_stream(self, function: str = "indexer") -> list[str]:
        """The function's stream mapping giving up on the new records (every retry failed, or they grew older than
        its maximum record age): it writes each shard's batch, whole, to its S3 on-failure destination, as Lambda
        documents for S3 destinations (the invocation record: metadata and the payload the function was given),
        with the function's role. moto has no event source mappings: this is modelled from the documentation
        (the object's key and the metadata's exact fields are Lambda's to choose). Returns the keys written."""
        with _ENVIRONMENT_LOCK:
            fn = self.functions[function]
            destination = self.mapping(function, "stream")["DestinationConfig"]["OnFailure"]["Destination"]
            bucket = self.template.resolve(destination).removeprefix("arn:aws:s3:::")
            s3 = self._role_client("s3", fn)
            written = []
            for delivered in self._read_stream(function):
                if not delivered:
                    continue
                record = {
                    "requestContext": {
                        "requestId": str(uuid.uuid4()),
                        "functionArn": self.template.resolve({"Fn::GetAtt": [fn.logical_id, "Arn"]}),
                        "condition": "RetryAttemptsExhausted",
                        "approximateInvokeCount": 11,
                    },
                    "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
                    "version": "1.0",
                    "DDBStreamBatchInfo": {
                        "startSequenceNumber": delivered[0]["dynamodb"]["SequenceNumber"],
                        "endSequenceNumber": delivered[-1]["dynamodb"]["SequenceNumber"],
                        "batchSize": len(delivered),
                        "streamArn": self.stream_arn,
                    },
                    "payload": json.dumps({"Records": delivered}),
                }
                key = f"aws/lambda/{fn.logical_id}/{uuid.uuid4()}"
                s3.put_object(Bucket=bucket, Key=key, Body=json.dumps(record).encode())
                written.append(key)
            return written

    def deliver_queue(self, function: str, queue: str, *, wait_seconds: int = 0) -> dict[str, Any] | None:
        """The function's event source mapping from the queue (its logical id), once: receive a batch as the
        function's role (waiting up to ``wait_seconds`` for a first message), invoke the function with it as
        Lambda shapes an SQS event, and delete the messages it did not report failed. None: nothing came."""
        import time

        with _ENVIRONMENT_LOCK:
            fn = self.functions[function]
            mapping = self.mapping(function, queue)
            url = self.template.physical[queue].ref
            arn = self.template.physical[queue].attributes["Arn"]
            sqs = self._role_client("sqs", fn)
            deadline = time.monotonic() + wait_seconds
            while True:
                received = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=min(10, int(mapping.get("BatchSize", 10))),
                    WaitTimeSeconds=max(0, min(20, round(deadline - time.monotonic()))),
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                ).get("Messages", [])
                if received or time.monotonic() >= deadline:
                    break
            if not received:
                return None
            event = {
                "Records": [
                    {
                        "messageId": m["MessageId"],
                        "receiptHandle": m["ReceiptHandle"],
                        "body": m["Body"],
                        "attributes": m.get("Attributes", {}),
                        "messageAttributes": m.get("MessageAttributes", {}),
                        "md5OfBody": m["MD5OfBody"],
                        "eventSource": "aws:sqs",
                        "eventSourceARN": arn,
                        "awsRegion": REGION,
                    }
                    for m in received
                ]
            }
            response = self.invoke(function, event)
            failed = {f["itemIdentifier"] for f in response["batchItemFailures"]}
            for m in received:
                if m["MessageId"] not in failed:
                    sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
            return {**response, "event": event}

    def operator_client(self, service: str) -> Any:
        """A client signed with the operator's credentials whatever a function run in another thread has swapped
        into the environment meanwhile."""
        import boto3

        with _ENVIRONMENT_LOCK:
            return boto3.client(
                service, region_name=REGION, aws_access_key_id=OPERATOR, aws_secret_access_key="operator-secret"
            )

    def deliver_execution_events(self) -> list[Any]:
        """EventBridge for the state machine's executions, which moto does not model: for each execution that
        stopped since the last call, the "Step Functions Execution Status Change" event as AWS documents it
        (detail: executionArn, stateMachineArn, name, status, startDate and stopDate in epoch milliseconds, the
        input as a string, error, cause) goes to the target of every rule of the template whose pattern it
        matches, invoked as that function's role. Returns what each invocation answered."""

        t = self.template
        rules = [r["Properties"] for r in t.of_type("AWS::Events::Rule").values()]
        client = self.operator_client("stepfunctions")  # the service's own view: not recorded
        answers = []
        pages = client.get_paginator("list_executions").paginate(stateMachineArn=self.state_machine_arn)
        for listed in [e for page in pages for e in page["executions"]]:
            if listed["status"] == "RUNNING" or listed["executionArn"] in self._delivered_executions:
                continue
            self._delivered_executions.add(listed["executionArn"])
            described = client.describe_execution(executionArn=listed["executionArn"])
            event = execution_status_change(described)
            for rule in rules:
                if rule.get("State", "ENABLED") != "ENABLED" or not pattern_matches(
                    t.resolve(rule["EventPattern"]), event
                ):
                    continue
                for target in rule["Targets"]:
                    logical_id = target["Arn"]["Fn::GetAtt"][0]
                    name = next(fn.name for fn in self.functions.values() if fn.logical_id == logical_id)
                    answers.append(self.invoke(name, event))
        return answers

    # -- checking ------------------------------------------------------------------------------------

    def principal_arn(self, role: str) -> str:
        return self.role_arn(role)

    def policy_of(self, role: str) -> Policy:
        for fn in self.functions.values():
            if fn.role == role:
                return fn.policy
        return self.role_policy(role)

    def violations(self) -> list[str]:
        """Every recorded call its principal's role (and, for OpenSearch, the data policy) does not allow."""
        assert self.recorder is not None
        found = [f"a call the rehearsal could not attribute: {u}" for u in self.recorder.unattributed]
        for call in self.recorder.calls:
            if call.resource.startswith("index/"):
                if not data_policy_allows(
                    self.data_policies, self.role_arn(call.principal), call.action, call.resource
                ):
                    found.append(f"{call.principal}: data policy denies {call.action} on {call.resource} ({call.api})")
                continue
            decision = self.policy_of(call.principal).evaluate(call.action, call.resource, call.condition_keys())
            if not decision.allowed:
                found.append(
                    f"{call.principal}: {call.action} on {call.resource} {call.condition_keys()} ({call.api}) "
                    + ("explicitly denied" if decision.denied_by else "not allowed")
                )
        return found

    def unused_grants(self) -> dict[str, list[str]]:
        """Per role: (action, resource) grants of its policies that no recorded call used."""
        assert self.recorder is not None
        roles = {fn.role for fn in self.functions.values()} | {self.state_machine_role}
        unused: dict[str, list[str]] = {}
        for role in sorted(roles):
            calls = [c for c in self.recorder.calls if c.principal == role and not c.resource.startswith("index/")]
            for statement in self.policy_of(role).statements:
                if statement.effect != "Allow":
                    continue
                for action in statement.actions:
                    for resource in statement.resources:
                        if not any(
                            matches(action, c.action, case_sensitive=False) and matches(resource, c.resource)
                            for c in calls
                        ):
                            unused.setdefault(role, []).append(f"{action} on {resource}")
        return unused

    def calls_by_role(self) -> dict[str, list[str]]:
        assert self.recorder is not None
        out: dict[str, set[str]] = {}
        for call in self.recorder.calls:
            out.setdefault(call.principal, set()).add(f"{call.action} on {call.resource}")
        return {role: sorted(calls) for role, calls in sorted(out.items())}


class _LambdaContext:
    def __init__(self, name: str) -> None:
        self.function_name = name
        self.function_version = "$LATEST"
        self.invoked_function_arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{name}"
        self.memory_limit_in_mb = 1024
        self.aws_request_id = str(uuid.uuid4())
        self.log_group_name = f"/aws/lambda/{name}"
        self.log_stream_name = "rehearsal"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


class ReservedConcurrency:
    """Lambda's reserved concurrency on the state machine's invokes, which moto does not enforce. As Lambda
    documents it: a function with N reserved slots runs at most N invocations at once, and an invocation beyond
    them is refused with TooManyRequestsException (429), which Step Functions reports to the Task as
    ``Lambda.TooManyRequestsException`` (moto names every Lambda service error ``Exception``: the model raises
    it under the documented name). An invocation holds its slot from the request until its answer; the
    rehearsal runs functions one at a time, so invocations waiting their turn hold slots as ones running in
    parallel would. ``hold`` keeps admitted invocations from running (their slots held) until it is released:
    a burst that arrives before anything finishes."""

    def __init__(self) -> None:
        self.limits: dict[str, int] = {}
        """Function logical id -> its ReservedConcurrentExecutions in the template."""
        self.in_flight: dict[str, int] = {}
        self.throttled: dict[str, int] = {}
        self.hold = threading.Event()
        self.hold.set()
        self._lock = threading.Lock()

    def admitting(self, task: Callable[..., Any]) -> Callable[..., Any]:
        from moto.stepfunctions.parser.asl.component.state.exec.state_task.lambda_eval_utils import (
            LambdaFunctionErrorException,
        )

        def admitted(env: Any, parameters: dict[str, Any], *args: Any, **kwargs: Any) -> Any:
            function = str(parameters["FunctionName"]).rsplit(":", 1)[-1]
            limit = self.limits.get(function)
            with self._lock:
                if limit is not None and self.in_flight.get(function, 0) >= limit:
                    self.throttled[function] = self.throttled.get(function, 0) + 1
                    refused = {"errorType": "Lambda.TooManyRequestsException", "errorMessage": "Rate Exceeded."}
                    raise LambdaFunctionErrorException("Unhandled", json.dumps(refused))
                self.in_flight[function] = self.in_flight.get(function, 0) + 1
            try:
                self.hold.wait()
                return task(env, parameters, *args, **kwargs)
            finally:
                with self._lock:
                    self.in_flight[function] -= 1

        return admitted


_ENVIRONMENT_LOCK = threading.RLock()
"""The process environment is one for every thread: functions of every deployment run one at a time, and
no swap of the environment interleaves with another (a state machine's worker threads outlive a flow, and
the machine's own AWS_* variables, AWS_CA_BUNDLE for one, are cleared and restored by each function run)."""


def _under_the_environment_lock(task: Callable[..., Any]) -> Callable[..., Any]:
    """moto's state machine runs a Lambda task in its own thread: building the boto3 client that invokes
    it reads the whole environment (botocore looks for proxies in every variable), which a function run
    in another thread may be swapping; such a read failed an erasure's step now and then (a KeyError
    naming a variable being swapped). The task, its client and the invoke run under the lock."""

    def locked(*args: Any, **kwargs: Any) -> Any:
        with _ENVIRONMENT_LOCK:
            return task(*args, **kwargs)

    return locked


@contextmanager
def _swapped_environment(values: Mapping[str, str], clear: Sequence[str] = ()) -> Iterator[None]:
    """Set ``values`` (after removing every variable starting with a ``clear`` prefix); restore on exit."""
    with _ENVIRONMENT_LOCK:
        saved = dict(os.environ)
        for name in [name for name in os.environ if name.startswith(tuple(clear))]:
            os.environ.pop(name, None)
        os.environ.update(values)
    try:
        yield
    finally:
        with _ENVIRONMENT_LOCK:
            for name in [name for name in os.environ if name not in saved]:
                os.environ.pop(name, None)
            os.environ.update(saved)


def _wire(record: Mapping[str, Any]) -> dict[str, Any]:
    """A GetRecords record as the event source mapping delivers it: JSON, Binary as base64, times as epochs."""
    import base64

    def plain(value: Any) -> Any:
        if isinstance(value, bytes):
            return base64.b64encode(value).decode()
        if hasattr(value, "timestamp"):
            return int(value.timestamp())
        raise TypeError(type(value).__name__)

    return json.loads(json.dumps(record, default=plain))  # type: ignore[no-any-return]


class BedrockSwitch:
    """Whether the fake Titan answers (an embedder outage is a ThrottlingException from the service)."""

    down = False


def _titan_embedding(backend: Any, payload: dict[str, Any], model_id: str) -> dict[str, Any]:
    """Titan Text Embeddings v2 as moto does not model it: a deterministic vector of the asked size.

    moto's InvokeModel answers ``{}``; the request shape is checked here as Titan v2 checks it, and the
    answer has Titan's fields (``embedding``, ``inputTextTokenCount``)."""
    from moto.core.exceptions import ServiceException

    from agentmem.embeddings.hashing import HashingEmbedder

    if BedrockSwitch.down:
        raise ServiceException("ThrottlingException", "Too many requests, please wait before trying again.")
    if model_id != "amazon.titan-embed-text-v2:0" or set(payload) - {"inputText", "dimensions", "normalize"}:
        raise ServiceException("ValidationException", f"malformed Titan v2 request for {model_id}")
    dimension = int(payload.get("dimensions", 1024))
    vector = HashingEmbedder(dimension).embed([payload["inputText"]])[0]
    return {"embedding": vector, "inputTextTokenCount": len(payload["inputText"].split())}


class ConverseScript:
    """What the fake Bedrock chat model answers to Converse: per tool name (the answer's schema, e.g.
    ``Facts``), a function of the request's parameters that returns the tool's input; every request kept."""

    def __init__(self) -> None:
        self.answers: dict[str, Callable[[Mapping[str, Any]], Any]] = {}
        self.requests: list[dict[str, Any]] = []

    def reset(self) -> None:
        self.answers.clear()
        self.requests.clear()


CONVERSE = ConverseScript()


def _converse(response: Any) -> Any:
    """Bedrock's Converse as moto does not model it: the request checked as Converse checks a forced tool use
    (messages, tools with a JSON input schema, a tool choice naming one of them), answered with that tool's
    use, its input the script's answer, and the usage Bedrock reports."""
    from moto.core.exceptions import ServiceException
    from moto.core.responses import ActionResult

    params = {
        name: response._get_param(name) for name in ("modelId", "system", "messages", "inferenceConfig", "toolConfig")
    }
    config = params["toolConfig"] or {}
    tools = [tool["toolSpec"] for tool in config.get("tools", [])]
    chosen = (config.get("toolChoice") or {}).get("tool", {}).get("name")
    if (
        not params["modelId"]
        or not params["messages"]
        or chosen not in {tool["name"] for tool in tools}
        or any("json" not in tool.get("inputSchema", {}) for tool in tools)
    ):
        raise ServiceException("ValidationException", "malformed Converse request")
    CONVERSE.requests.append(params)
    answer = CONVERSE.answers.get(chosen)
    if answer is None:
        raise ServiceException("ValidationException", f"the rehearsal scripted no answer for the tool {chosen}")
    tool_input = answer(params)
    asked = len(json.dumps([params["system"], params["messages"]])) // 4
    answered = len(json.dumps(tool_input)) // 4
    return ActionResult(
        {
            "output": {
                "message": {
                    "role": "assistant",
                    "content": [{"toolUse": {"toolUseId": "tooluse_rehearsal", "name": chosen, "input": tool_input}}],
                }
            },
            "stopReason": "tool_use",
            "usage": {"inputTokens": asked, "outputTokens": answered, "totalTokens": asked + answered},
            "metrics": {"latencyMs": 1},
        }
    )


@dataclass(frozen=True)
class Authorizer:
    """An ``AWS::ApiGateway::Authorizer`` of the template (REQUEST type, a Lambda function)."""

    logical_id: str
    function: str
    identity_sources: tuple[str, ...]
    """``method.request.header.x-api-key`` and the like; none: the function is called for every request."""

    def has_identity(self, headers: Mapping[str, str], query: Mapping[str, Sequence[str]]) -> bool:
        """API Gateway calls the function only when every identity source is present and non-empty."""
        lowered = {k.lower(): v for k, v in headers.items()}
        for source in self.identity_sources:
            kind, _, name = source.removeprefix("method.request.").partition(".")
            if kind == "header":
                value = lowered.get(name.lower())
            elif kind == "querystring":
                value = next(iter(query.get(name) or []), None)
            else:
                raise ValueError(f"{self.logical_id}: the rehearsal does not model identity source {source}")
            if not value:
                return False
        return True


@dataclass(frozen=True)
class Method:
    """An ``AWS::ApiGateway::Method``: the resource path it is on, its authorizer and the function it proxies to."""

    http_method: str
    resource: str
    function: str
    authorizer: Authorizer | None


class Gateway:
    """API Gateway in front of the functions, as the template declares it: each request is matched to a
    resource and method of the template (a literal path part before a ``{parameter}``, as API Gateway
    matches), goes through that method's REQUEST authorizer (a missing identity source is a 401 without
    a call; the rehearsal does not model the result cache) and reaches the function its integration names
    (through its alias: the rehearsal runs the function's code, the one version it has),
    with the client's headers as sent. The gateway's own answers are the template's gateway responses.
    Not modelled: usage plans (``ApiKeyRequired``: the tier's keys have no usage-plan key)."""

    def __init__(self, deployment: Deployment) -> None:
        t = deployment.template
        self.deployment = deployment
        self.stage = str(t.properties(t.one("AWS::ApiGateway::Stage"))["StageName"])
        self.api_id = t.one("AWS::ApiGateway::RestApi").lower()
        self.authorizer_calls: list[str] = []
        """The logical id of the authorizer of every call made to an authorizer function."""
        names = {fn.logical_id: fn.name for fn in deployment.functions.values()}
        aliases = {
            logical_id: resource["Properties"]["FunctionName"]["Ref"]
            for logical_id, resource in t.of_type("AWS::Lambda::Alias").items()
        }
        authorizers = {
            logical_id: Authorizer(
                logical_id,
                names[_function_of(props["AuthorizerUri"], names, aliases)],
                tuple(s.strip() for s in str(props.get("IdentitySource") or "").split(",") if s.strip()),
            )
            for logical_id, resource in t.of_type("AWS::ApiGateway::Authorizer").items()
            if (props := resource["Properties"])["Type"] == "REQUEST"
        }
        parts = {i: r["Properties"] for i, r in t.of_type("AWS::ApiGateway::Resource").items()}

        def path_of(reference: Mapping[str, Any]) -> str:
            if "Fn::GetAtt" in reference:  # the RestApi's RootResourceId
                return "/"
            props = parts[reference["Ref"]]
            return path_of(props["ParentId"]).rstrip("/") + "/" + props["PathPart"]

        self.methods: dict[tuple[str, str], Method] = {}
        for resource in t.of_type("AWS::ApiGateway::Method").values():
            props = resource["Properties"]
            path = path_of(props["ResourceId"])
            kind = props.get("AuthorizationType", "NONE")
            assert kind in ("NONE", "CUSTOM"), f"{path}: the rehearsal does not model {kind} authorization"
            self.methods[(props["HttpMethod"], path)] = Method(
                props["HttpMethod"],
                path,
                names[_function_of(props["Integration"]["Uri"], names, aliases)],
                authorizers[props["AuthorizerId"]["Ref"]] if kind == "CUSTOM" else None,
            )
        self.paths = {"/"} | {path_of({"Ref": i}) for i in parts}
        responses = [r["Properties"] for r in t.of_type("AWS::ApiGateway::GatewayResponse").values()]
        self.responses = {  # (DEFAULT_4XX and DEFAULT_5XX keep the status of the answer they dress: none here)
            props["ResponseType"]: (int(props["StatusCode"]), props["ResponseTemplates"]["application/json"])
            for props in responses
            if "StatusCode" in props
        }

    def route(self, path: str) -> tuple[str, dict[str, str]] | None:
        """The template resource a request path reaches, and its path parameters (a greedy ``{name+}`` takes
        the rest of the path)."""
        resource, parameters = "", {}
        parts = [p for p in path.split("/") if p]
        for index, part in enumerate(parts):
            children = [p for p in self.paths if p.rsplit("/", 1)[0] == resource and p != "/"]
            literal = resource + "/" + part
            if literal in children:
                resource = literal
                continue
            variable = next((c for c in children if c.rsplit("/", 1)[1].startswith("{")), None)
            if variable is None:
                return None
            name = variable.rsplit("/", 1)[1].strip("{}")
            if name.endswith("+"):
                parameters[name.rstrip("+")] = "/".join(parts[index:])
                return variable, parameters
            parameters[name] = part
            resource = variable
        return resource or "/", parameters

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        api_key: str | None = None,
        query: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """A JSON request as a REST client sends it (``x-api-key`` when ``api_key`` is given)."""
        from urllib.parse import urlencode

        sent = {"content-type": "application/json", **({"x-api-key": api_key} if api_key else {}), **(headers or {})}
        text = json.dumps(body) if body is not None else None
        return self.send(method, path, query=urlencode(query or {}, doseq=True), headers=sent, body=text)

    def send(self, method: str, path: str, *, query: str = "", headers: Mapping[str, str], body: str | None) -> Any:
        """One HTTP request to the stage (``path`` without the stage prefix), answered as API Gateway would."""
        from agentmem.local.events import rest_event
        from tests.support import Reply

        event = rest_event(method, path, query=query, body=body, stage=self.stage)
        event["headers"] = dict(headers)  # as the client sent them (API Gateway keeps their case)
        event["multiValueHeaders"] = {k: [v] for k, v in headers.items()}
        routed = self.route(path)
        target = (
            (self.methods.get((method.upper(), routed[0])) or self.methods.get(("ANY", routed[0]))) if routed else None
        )
        if routed is None or target is None:
            return self._gateway_response("MISSING_AUTHENTICATION_TOKEN", event)
        event["resource"] = event["requestContext"]["resourcePath"] = target.resource
        event["pathParameters"] = routed[1] or None
        if target.authorizer is not None:
            authorizer = target.authorizer
            if not authorizer.has_identity(event["headers"], event["multiValueQueryStringParameters"] or {}):
                return self._gateway_response("UNAUTHORIZED", event)
            method_arn = f"arn:aws:execute-api:{REGION}:{ACCOUNT}:{self.api_id}/{self.stage}/{method.upper()}{path}"
            self.authorizer_calls.append(authorizer.logical_id)
            try:
                answer = self.deployment.invoke(
                    authorizer.function,
                    {"type": "REQUEST", "methodArn": method_arn, **{k: event[k] for k in _AUTH_FIELDS}},
                )
            except Exception as exc:
                if str(exc) != "Unauthorized":  # API Gateway's 401 is this one message; anything else is a 500
                    raise
                return self._gateway_response("UNAUTHORIZED", event)
            allowed = Policy.from_documents([answer["policyDocument"]]).evaluate("execute-api:Invoke", method_arn)
            if not allowed.allowed:
                return self._gateway_response("ACCESS_DENIED", event)
            context = {k: v if isinstance(v, str | int | bool) else str(v) for k, v in answer["context"].items()}
            event["requestContext"]["authorizer"] = {"principalId": answer["principalId"], **context}
        result = self.deployment.invoke(target.function, event)
        raw = result.get("body") or ""
        if result.get("isBase64Encoded"):
            import base64

            raw = base64.b64decode(raw).decode()
        answered = dict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            answered[name] = ", ".join(values)  # API Gateway sends both kinds of the proxy answer's headers
        return Reply(result["statusCode"], json.loads(raw) if raw else None, answered, raw=raw)

    def _gateway_response(self, response_type: str, event: Mapping[str, Any]) -> Any:
        from tests.support import Reply

        status, template = self.responses[response_type]
        raw = template.replace("$context.requestId", event["requestContext"]["requestId"])
        return Reply(status, json.loads(raw), {"content-type": "application/json"}, raw=raw)


def _function_of(uri: Any, functions: Mapping[str, str], aliases: Mapping[str, str] | None = None) -> str:
    """The logical id of the one function of the template an integration or authorizer URI names (directly, or
    through one of its ``aliases``: alias logical id -> function logical id)."""
    found = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            target = value.get("Fn::GetAtt")
            if isinstance(target, list) and target[0] in functions:
                found.add(target[0])
            if value.get("Ref") in (aliases or {}):
                found.add((aliases or {})[value["Ref"]])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(uri)
    assert len(found) == 1, f"expected one function in {uri}, found {found}"
    return found.pop()


_AUTH_FIELDS = (
    "resource",
    "path",
    "httpMethod",
    "headers",
    "multiValueHeaders",
    "queryStringParameters",
    "multiValueQueryStringParameters",
    "pathParameters",
    "stageVariables",
    "requestContext",
)
