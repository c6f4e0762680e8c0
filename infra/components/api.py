"""API: API Gateway REST API with every route of API.md, the REQUEST authorizer and usage plans.

- Tenant routes go through the Lambda REQUEST authorizer (identity source ``x-api-key``, result
  cached per key) and require the tenant's usage-plan key, which the authorizer returns as
  ``usageIdentifierKey`` (API key source AUTHORIZER): the usage plan enforces per-tenant quotas.
- ``{scope}/mcp`` (MCP clients send ``Authorization: Bearer <key>`` or ``x-api-key``) goes through the
  same authorizer function without a result cache, so neither header is required by the gateway: the
  function reads whichever is present (a cached authorizer would need one fixed identity header).
- ``/agentcore/{proxy+}`` (the AgentCore Memory data plane, docs/agentcore.md) is a tenant route: the same
  authorizer and usage-plan key; SigV4-signing clients add ``x-api-key`` with a botocore hook.
- Health, capabilities and the OpenAPI document are public; so are ``GET /console`` and
  ``GET /console/{proxy+}``, the web console's files, served by the console function (docs/console.md) on
  the API's own origin: its page calls the tenant routes above with the user's key.
- Throttling (infra/components/throttling.py): plan tiers (one usage plan each), the stage's limit sized from the
  tenants and their plans, heavy routes limited per key in each plan (their stage limits the aggregate ceiling),
  public routes limited on the stage; in prod a WAF web ACL in front
  (infra/components/firewall.py).
- Stage: access logs (JSON), execution logs at ERROR, X-Ray, throttling; no per-method metrics (a
  monthly cost of their own: docs/deploy.md). Request size: API Gateway
  refuses bodies over 10 MB (REQUEST_TOO_LARGE, answered 413 in the API's error shape) and the handler
  answers 413 above 6 MB (Lambda's payload limit), before any parsing.
- Gateway errors use the API's error body: 401, 403, 404, 413, 429, the WAF's blocks (403), the authorizer's failures
  (503: the key could not be checked), the integration's timeout (504), and every other 4xx and 5xx API Gateway
  answers itself (DEFAULT_4XX, DEFAULT_5XX, which keep their own status).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from agentmem.models.responses import error_body
from infra.components.compute import GATEWAY_TIMEOUT_SECONDS
from infra.components.firewall import REFUSED, Firewall
from infra.components.routes import AGENTCORE_ROUTES, CONSOLE_ROUTES, MCP_ROUTES, PUBLIC_ROUTES, TENANT_ROUTES
from infra.components.throttling import (
    DEFAULT_TIER,
    PLAN_TIERS,
    TENANTS,
    StageLimit,
    key_route_limits,
    stage_limit,
    stage_route_limits,
)


@dataclass(frozen=True)
class ApiSettings:
    stage: str
    production: bool
    log_retention: logs.RetentionDays
    tenants: Mapping[str, int] = field(default_factory=dict)
    """How many tenants of each plan tier the stage is sized for (infra/components/throttling.py)."""

    @property
    def sized_for(self) -> Mapping[str, int]:
        """The tenants per tier the stage is sized for: the context's, or the stage's default."""
        return self.tenants or TENANTS[self.stage]

    @property
    def stage_limit(self) -> StageLimit:
        return stage_limit(self.sized_for)


ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "integrationLatency": "$context.integrationLatency",
    "app": "$context.authorizer.app",
    "keyId": "$context.authorizer.key_id",
    "authorizerError": "$context.authorizer.error",
    "wafResponse": "$context.wafResponseCode",
}
"""One JSON line per request: who (the tenant app and key id the authorizer resolved; never the key itself),
what, how it ended (a 429 is counted from ``status`` by the stack's throttling alarm) and what refused it."""


def _error_template(code: str, message: str) -> dict[str, str]:
    """API Gateway's own answers carry the API's error envelope (built by the library, as every other)."""
    return {"application/json": json.dumps(error_body(code, message, "$context.requestId"))}


GATEWAY_ERRORS: list[tuple[apigw.ResponseType, str | None, str, str]] = [
    (
        apigw.ResponseType.UNAUTHORIZED,
        "401",
        "unauthorized",
        "a valid API key is required: x-api-key, or Authorization: Bearer on {scope}/mcp",
    ),
    (apigw.ResponseType.ACCESS_DENIED, "403", "forbidden", "this API key may not call this route"),
    (apigw.ResponseType.INVALID_API_KEY, "403", "forbidden", "this tenant has no usage plan"),
    (apigw.ResponseType.MISSING_AUTHENTICATION_TOKEN, "404", "route_not_found", "no such route"),
    (apigw.ResponseType.REQUEST_TOO_LARGE, "413", "payload_too_large", "the request body is too large"),
    (apigw.ResponseType.THROTTLED, "429", "rate_limited", "too many requests; retry later"),
    (apigw.ResponseType.QUOTA_EXCEEDED, "429", "rate_limited", "the quota of this API key is used up"),
    # A block by AWS's managed rule groups (the web ACL's own rules answer in their custom bodies, which take
    # precedence: infra/components/firewall.py); this one names the request, which WAF's static bodies cannot.
    (apigw.ResponseType.WAF_FILTERED, "403", "forbidden", REFUSED),
    # The authorizer crashed, timed out, was throttled or could not read its table: the key was not checked. A
    # dependency down is 503 in API.md (clients retry it), not the gateway's bare 500.
    (
        apigw.ResponseType.AUTHORIZER_FAILURE,
        "503",
        "dependency_unavailable",
        "the API key could not be checked; retry later",
    ),
    (
        apigw.ResponseType.AUTHORIZER_CONFIGURATION_ERROR,
        "503",
        "dependency_unavailable",
        "the API key could not be checked; retry later",
    ),
    (
        apigw.ResponseType.INTEGRATION_TIMEOUT,
        "504",
        "deadline_exceeded",
        f"the API did not answer within the gateway's {GATEWAY_TIMEOUT_SECONDS} seconds; a write may have happened: "
        "retry it with the same Idempotency-Key",
    ),
    # Every other answer of the gateway's own, with its own status (no status here: a default's status would
    # replace every status of its class)
    (apigw.ResponseType.DEFAULT_4_XX, None, "request_refused", "the gateway refused the request"),
    (apigw.ResponseType.DEFAULT_5_XX, None, "internal_error", "the gateway could not get an answer from the API"),
]
"""Each answer API Gateway makes itself: its type, its status (None: the one API Gateway gives), and the API's error
code and message for it."""


class Api(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        settings: ApiSettings,
        handler: lambda_.IFunction,
        authorizer_function: lambda_.IFunction,
        console_function: lambda_.IFunction,
    ) -> None:
        super().__init__(scope, construct_id)
        self.access_logs = logs.LogGroup(
            self,
            "AccessLogs",
            retention=settings.log_retention,
            removal_policy=RemovalPolicy.RETAIN if settings.production else RemovalPolicy.DESTROY,
        )
        self.rest_api = apigw.RestApi(
            self,
            "RestApi",
            rest_api_name=f"agent-memory-{settings.stage}",
            description="Long-term memory for AI agents (API.md)",
            endpoint_types=[apigw.EndpointType.REGIONAL],
            api_key_source_type=apigw.ApiKeySourceType.AUTHORIZER,
            # The account's API Gateway logging role is the account's (infra/account.py), not a stage's: deleting
            # either stage's stack must not take execution logging away from the other.
            cloud_watch_role=False,
            deploy_options=apigw.StageOptions(
                stage_name=settings.stage,
                access_log_destination=apigw.LogGroupLogDestination(self.access_logs),
                access_log_format=apigw.AccessLogFormat.custom(json.dumps(ACCESS_LOG_FIELDS)),
                logging_level=apigw.MethodLoggingLevel.ERROR,
                data_trace_enabled=False,
                # Per-method metrics are CloudWatch custom metrics: 5 for each of the ~40 methods, about $60 a
                # month before the first call (make bench ONLY=cost). The API's own metrics (requests,
                # errors, latency), which the alarms and the dashboard read, come free.
                metrics_enabled=False,
                tracing_enabled=True,
                throttling_rate_limit=settings.stage_limit.rate_limit,
                throttling_burst_limit=settings.stage_limit.burst_limit,
                method_options={
                    f"{path}/{method}": apigw.MethodDeploymentOptions(
                        throttling_rate_limit=limit.rate_limit,
                        throttling_burst_limit=limit.burst_limit,
                        logging_level=apigw.MethodLoggingLevel.ERROR,
                        data_trace_enabled=False,
                        metrics_enabled=False,
                    )
                    for (method, path), limit in stage_route_limits(settings.sized_for).items()
                },
            ),
        )
        # x-api-key is the identity source: a REST request without it is answered 401 by API Gateway before the
        # authorizer runs (in dev too, which has no WAF), and the answer is cached per key.
        self.authorizer = apigw.RequestAuthorizer(
            self,
            "ApiKeyAuthorizer",
            handler=authorizer_function,
            identity_sources=[apigw.IdentitySource.header("x-api-key")],
            results_cache_ttl=Duration.seconds(60),
        )
        # No identity source on {scope}/mcp, on purpose: API Gateway requires EVERY identity source of a REQUEST
        # authorizer to be present, and MCP clients send the key either as Authorization: Bearer (the SDK's
        # clients, docs/mcp.md) or as x-api-key, so naming either header would refuse the other's clients; and
        # without one there is no result cache (TTL 0). So every /mcp call invokes the authorizer: in prod the
        # WAF's KeyRequired rule refuses a request whose key is absent or malformed before it does
        # (infra/components/firewall.py); in dev (no WAF) the authorizer's own reservation bounds it.
        self.mcp_authorizer = apigw.RequestAuthorizer(
            self,
            "McpAuthorizer",
            handler=authorizer_function,
            identity_sources=[],
            results_cache_ttl=Duration.seconds(0),
        )
        self.validator = self.rest_api.add_request_validator(
            "RequestValidator", validate_request_parameters=True, validate_request_body=True
        )
        integration = apigw.LambdaIntegration(
            handler, proxy=True, allow_test_invoke=False, scope_permission_to_method=False
        )
        self.methods: dict[tuple[str, str], apigw.Method] = {}
        for method, path in TENANT_ROUTES + AGENTCORE_ROUTES:
            self.methods[(method, path)] = self.rest_api.root.resource_for_path(path).add_method(
                method,
                integration,
                authorizer=self.authorizer,
                authorization_type=apigw.AuthorizationType.CUSTOM,
                api_key_required=True,
                request_validator=self.validator,
            )
        for method, path in MCP_ROUTES:
            self.methods[(method, path)] = self.rest_api.root.resource_for_path(path).add_method(
                method,
                integration,
                authorizer=self.mcp_authorizer,
                authorization_type=apigw.AuthorizationType.CUSTOM,
                api_key_required=True,
                request_validator=self.validator,
            )
        for method, path in PUBLIC_ROUTES:
            self.methods[(method, path)] = self.rest_api.root.resource_for_path(path).add_method(
                method,
                integration,
                authorization_type=apigw.AuthorizationType.NONE,
                request_validator=self.validator,
            )
        console = apigw.LambdaIntegration(
            console_function, proxy=True, allow_test_invoke=False, scope_permission_to_method=False
        )
        for method, path in CONSOLE_ROUTES:
            self.methods[(method, path)] = self.rest_api.root.resource_for_path(path).add_method(
                method, console, authorization_type=apigw.AuthorizationType.NONE
            )
        for number, (response_type, status, code, message) in enumerate(GATEWAY_ERRORS):
            self.rest_api.add_gateway_response(
                f"GatewayError{number}",
                type=response_type,
                status_code=status,
                templates=_error_template(code, message),
            )
        self.usage_plans: dict[str, apigw.UsagePlan] = {}
        for tier in PLAN_TIERS:
            self.usage_plans[tier.name] = self.rest_api.add_usage_plan(
                f"{tier.name.capitalize()}Plan",
                name=f"agent-memory-{settings.stage}-{tier.name}",
                description=f"The {tier.name} tier: per-key throttle and daily quota (agentmem keys create)",
                throttle=apigw.ThrottleSettings(rate_limit=tier.rate_limit, burst_limit=tier.burst_limit),
                quota=apigw.QuotaSettings(limit=tier.requests_per_day, period=apigw.Period.DAY),
                api_stages=[
                    apigw.UsagePlanPerApiStage(
                        api=self.rest_api,
                        stage=self.rest_api.deployment_stage,
                        # The heavy routes' limits per key of this tier (the stage's are their aggregate ceiling)
                        throttle=[
                            apigw.ThrottlingPerMethod(
                                method=self.methods[route],
                                throttle=apigw.ThrottleSettings(
                                    rate_limit=limit.rate_limit, burst_limit=limit.burst_limit
                                ),
                            )
                            for route, limit in key_route_limits(tier).items()
                        ],
                    )
                ],
            )
        self.usage_plan = self.usage_plans[DEFAULT_TIER]
        self.firewall = (
            Firewall(
                self,
                "Firewall",
                stage=self.rest_api.deployment_stage,
                stage_name=settings.stage,
                name=f"agentmem-{settings.stage}",
                log_retention=settings.log_retention,
            )
            if settings.production
            else None
        )
