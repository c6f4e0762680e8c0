"""API, workflow, operations and the checks (cdk-nag, cfn-lint) of the synthesized stacks (points 4, 6-8)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from aws_cdk.assertions import Match

from infra.components.routes import (
    AGENTCORE_ROUTES,
    ALL_ROUTES,
    CONSOLE_ROUTES,
    MCP_ROUTES,
    PUBLIC_ROUTES,
    TENANT_ROUTES,
)
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources


def _normalised(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


def _gateway_routes(synthesized: Synthesized, stack_name: str) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> method properties, rebuilding paths from the Resource tree of the template."""
    template = synthesized.templates[stack_name]
    api_resources = resources(template, "AWS::ApiGateway::Resource")

    def path_of(ref: Any) -> str:
        if not isinstance(ref, dict) or "Ref" not in ref:
            return ""
        resource = api_resources[ref["Ref"]]["Properties"]
        return path_of(resource["ParentId"]) + "/" + resource["PathPart"]

    routes = {}
    for method in resources(template, "AWS::ApiGateway::Method").values():
        props = method["Properties"]
        routes[(props["HttpMethod"], path_of(props["ResourceId"]))] = props
    return routes


def test_every_route_of_the_api_contract_is_a_gateway_method(synthesized: Synthesized) -> None:
    # Given the synthesized REST API / Then it has exactly the routes of API.md, the console's and AgentCore's
    routes = _gateway_routes(synthesized, PROD_OPENSEARCH)
    assert set(routes) == set(ALL_ROUTES) | set(CONSOLE_ROUTES) | set(AGENTCORE_ROUTES)
    assert len(ALL_ROUTES) == 46


def test_the_resolver_serves_no_route_the_gateway_lacks() -> None:
    # Given the routes the API handler registers / Then each one is deployed (parameter names aside)
    from agentmem.api.app import app

    served = {(r.method, _normalised(r.openapi_path)) for r in app._static_routes + app._dynamic_routes}
    deployed = {(method, _normalised(path)) for method, path in ALL_ROUTES}
    agentcore = {route for route in served if route[1].startswith("/agentcore/")}  # under /agentcore/{proxy+}
    assert agentcore
    assert served - agentcore <= deployed, served - agentcore - deployed


def test_the_agentcore_data_plane_is_a_tenant_proxy_route_on_the_api_function(synthesized: Synthesized) -> None:
    for stack_name in (PROD_OPENSEARCH, DEV_TABLE):
        routes = _gateway_routes(synthesized, stack_name)
        functions = resources(synthesized.templates[stack_name], "AWS::Lambda::Function")
        # Given /agentcore/{proxy+} / Then any method goes through the tenant authorizer with the usage-plan key
        method = routes[("ANY", "/agentcore/{proxy+}")]
        assert method["AuthorizationType"] == "CUSTOM"
        assert method["AuthorizerId"] == routes[TENANT_ROUTES[0]]["AuthorizerId"]
        assert method["ApiKeyRequired"] is True
        assert method["Integration"]["Type"] == "AWS_PROXY"
        assert functions[_integrated_function(method, synthesized.templates[stack_name])]["Properties"]["Handler"] == (
            "api.handler.handler"
        )


def test_tenant_routes_use_the_request_authorizer_and_a_usage_plan_key(synthesized: Synthesized) -> None:
    # Given the methods / Then tenant routes use the custom authorizer and need the usage-plan key; public ones don't
    routes = _gateway_routes(synthesized, PROD_OPENSEARCH)
    for route in TENANT_ROUTES:
        method = routes[route]
        assert method["AuthorizationType"] == "CUSTOM", route
        assert "AuthorizerId" in method, route
        assert method["ApiKeyRequired"] is True, route
        assert method["Integration"]["Type"] == "AWS_PROXY", route
    for route in PUBLIC_ROUTES:
        assert routes[route]["AuthorizationType"] == "NONE", route


def _integrated_function(method: dict[str, Any], template: dict[str, Any]) -> str:
    """The logical id of the function a proxy method invokes: the function its integration URI names, or the
    function of the alias it names."""
    uri = json.dumps(method["Integration"]["Uri"])
    direct = re.findall(r'"Fn::GetAtt": \["([^"]+)", "Arn"\]', uri)
    refs = re.findall(r'"Ref": "([^"]+)"', uri)
    aliases = [ref for ref in refs if template["Resources"].get(ref, {}).get("Type") == "AWS::Lambda::Alias"]
    found = direct + [template["Resources"][alias]["Properties"]["FunctionName"]["Ref"] for alias in aliases]
    assert len(found) == 1, uri
    return str(found[0])


def test_the_console_is_public_on_the_apis_origin_and_every_api_route_keeps_its_authorizer(
    synthesized: Synthesized,
) -> None:
    for stack_name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[stack_name]
        routes = _gateway_routes(synthesized, stack_name)
        functions = resources(template, "AWS::Lambda::Function")
        # Given the console's two routes / Then no authorizer, no API key, a proxy to the console function
        for route in CONSOLE_ROUTES:
            method = routes[route]
            assert method["AuthorizationType"] == "NONE", route
            assert "AuthorizerId" not in method, route
            assert not method.get("ApiKeyRequired"), route
            assert method["Integration"]["Type"] == "AWS_PROXY", route
            assert functions[_integrated_function(method, template)]["Properties"]["Handler"] == (
                "console.handler.handler"
            ), route
        # And every tenant and MCP route still goes through an authorizer with the usage-plan key
        for route in TENANT_ROUTES + MCP_ROUTES:
            assert routes[route]["AuthorizationType"] == "CUSTOM", route
            assert routes[route]["AuthorizerId"], route
            assert routes[route]["ApiKeyRequired"] is True, route
            handler_name = functions[_integrated_function(routes[route], template)]["Properties"]["Handler"]
            assert handler_name == "api.handler.handler", route
    # And the function the template names serves the page with its policy, and nothing outside the console
    from functions.console.handler import handler

    page = handler({"httpMethod": "GET", "path": "/console", "headers": {}}, None)
    assert page["statusCode"] == 200
    assert "script-src 'self'" in page["headers"]["Content-Security-Policy"]
    assert handler({"httpMethod": "GET", "path": "/console/../handler.py", "headers": {}}, None)["statusCode"] == 404


def test_mcp_routes_use_an_uncached_authorizer_that_requires_no_fixed_header(synthesized: Synthesized) -> None:
    # Given the MCP endpoint (clients send x-api-key or Authorization: Bearer)
    template = synthesized.templates[PROD_OPENSEARCH]
    authorizers = resources(template, "AWS::ApiGateway::Authorizer")
    routes = _gateway_routes(synthesized, PROD_OPENSEARCH)
    # Then both methods go through a REQUEST authorizer without identity source and without cache,
    for route in MCP_ROUTES:
        method = routes[route]
        assert method["AuthorizationType"] == "CUSTOM", route
        assert method["ApiKeyRequired"] is True, route
        assert method["Integration"]["Type"] == "AWS_PROXY", route
        authorizer = authorizers[method["AuthorizerId"]["Ref"]]["Properties"]
        assert authorizer["Type"] == "REQUEST"
        assert authorizer["AuthorizerResultTtlInSeconds"] == 0
        assert not authorizer.get("IdentitySource")
    # And it is the tenant routes' authorizer function (one key check for both)
    tenant = authorizers[routes[TENANT_ROUTES[0]]["AuthorizerId"]["Ref"]]["Properties"]
    mcp = authorizers[routes[MCP_ROUTES[0]]["AuthorizerId"]["Ref"]]["Properties"]
    assert mcp["AuthorizerUri"] == tenant["AuthorizerUri"]


def test_authorizer_resolves_x_api_key_and_caches_the_result(prod: Any) -> None:
    prod.has_resource_properties(
        "AWS::ApiGateway::Authorizer",
        {"Type": "REQUEST", "IdentitySource": "method.request.header.x-api-key", "AuthorizerResultTtlInSeconds": 60},
    )
    prod.has_resource_properties("AWS::ApiGateway::RestApi", {"ApiKeySourceType": "AUTHORIZER"})


def test_stage_has_access_logs_throttling_tracing_and_a_usage_plan(prod: Any) -> None:
    prod.has_resource_properties(
        "AWS::ApiGateway::Stage",
        {
            "StageName": "prod",
            "TracingEnabled": True,
            "AccessLogSetting": {"DestinationArn": Match.any_value(), "Format": Match.string_like_regexp("requestId")},
            "MethodSettings": Match.array_with(
                [
                    Match.object_like(
                        {
                            "ThrottlingRateLimit": Match.any_value(),
                            "ThrottlingBurstLimit": Match.any_value(),
                            "LoggingLevel": "ERROR",
                            "DataTraceEnabled": False,
                            # per-method metrics are custom metrics, a monthly cost of their own (docs/deploy.md)
                            "MetricsEnabled": False,
                        }
                    )
                ]
            ),
        },
    )
    prod.has_resource_properties(
        "AWS::ApiGateway::UsagePlan",
        {
            "Quota": {"Limit": Match.any_value(), "Period": "DAY"},
            "Throttle": {"RateLimit": Match.any_value(), "BurstLimit": Match.any_value()},
        },
    )
    prod.has_resource_properties(
        "AWS::ApiGateway::RequestValidator", {"ValidateRequestBody": True, "ValidateRequestParameters": True}
    )


def test_gateway_errors_use_the_api_error_body(synthesized: Synthesized) -> None:
    # Given the gateway responses / Then 401, 403, 404, 413 and 429 answer the API's error shape (the rest of the
    # gateway's answers: tests/infra/test_first_deploy.py)
    template = synthesized.templates[PROD_OPENSEARCH]
    answered = {}
    for response in resources(template, "AWS::ApiGateway::GatewayResponse").values():
        props = response["Properties"]
        body = json.loads(props["ResponseTemplates"]["application/json"])
        answered[props["ResponseType"]] = (props.get("StatusCode"), body["error"]["code"])
        assert body["error"]["request_id"] == "$context.requestId"
    assert answered["UNAUTHORIZED"] == ("401", "unauthorized")
    assert answered["ACCESS_DENIED"] == ("403", "forbidden")
    assert answered["MISSING_AUTHENTICATION_TOKEN"] == ("404", "route_not_found")
    assert answered["REQUEST_TOO_LARGE"] == ("413", "payload_too_large")
    assert answered["THROTTLED"] == ("429", "rate_limited")
    assert answered["QUOTA_EXCEEDED"] == ("429", "rate_limited")


def test_deletion_state_machine_comes_from_the_asl_file_with_logging_all_and_tracing(
    prod: Any, synthesized: Synthesized
) -> None:
    prod.has_resource_properties(
        "AWS::StepFunctions::StateMachine",
        {
            "StateMachineType": "STANDARD",
            "TracingConfiguration": {"Enabled": True},
            "LoggingConfiguration": {"Level": "ALL", "IncludeExecutionData": False, "Destinations": Match.any_value()},
            "DefinitionSubstitutions": {"DeletionStepsFunctionArn": Match.any_value()},
        },
    )
    from infra.components.workflow import ASL_FILE

    # The definition ships as an asset (DefinitionS3Location) that is the ASL file itself.
    machine = next(iter(resources(synthesized.templates[PROD_OPENSEARCH], "AWS::StepFunctions::StateMachine").values()))
    assert "DefinitionS3Location" in machine["Properties"]
    staged = [p.read_text() for p in synthesized.outdir.glob("asset.*.json")]
    assert ASL_FILE.read_text() in staged


def test_the_api_starts_deletions_from_the_state_machine_arn(prod: Any) -> None:
    prod.has_resource_properties(
        "AWS::Lambda::Function",
        {
            "Handler": "api.handler.handler",
            "Environment": {"Variables": Match.object_like({"MEMORY_DELETION_STATE_MACHINE_ARN": Match.any_value()})},
        },
    )
    prod.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [Match.object_like({"Action": "states:StartExecution", "Resource": Match.any_value()})]
                )
            }
        },
    )


def _alarm_metrics(template: dict[str, Any]) -> list[str]:
    names = []
    for alarm in resources(template, "AWS::CloudWatch::Alarm").values():
        props = alarm["Properties"]
        assert props["AlarmActions"], "every alarm notifies the topic"
        if "MetricName" in props:
            names.append(props["MetricName"] + ":" + str(props.get("ExtendedStatistic", props.get("Statistic"))))
        for query in props.get("Metrics", []):
            if "MetricStat" in query:
                names.append(query["MetricStat"]["Metric"]["MetricName"])
    return names


def test_alarms_cover_5xx_latency_dlq_throttles_and_failed_deletions(synthesized: Synthesized) -> None:
    prod_metrics = _alarm_metrics(synthesized.templates[PROD_OPENSEARCH])
    for expected in (
        "5XXError:Average",
        "Latency:p95",
        "OnFailureDestinationDeliveredEventCount",  # the indexer's batches given up (to its failure bucket)
        "Throttles",
        "ExecutionsFailed",
        "IteratorAge:Maximum",
    ):
        assert expected in prod_metrics, expected
    dev_metrics = _alarm_metrics(synthesized.templates[DEV_TABLE])
    assert "OnFailureDestinationDeliveredEventCount" not in dev_metrics  # (no indexer on the table backend)
    # dev's two queues are the re-drive's dead-letter queue (test_production_readiness.py), beside its given-up
    # erasures, and the snapshot requests' (tests/infra/test_first_deploy.py), alone
    assert dev_metrics.count("ApproximateNumberOfMessagesVisible") == 1
    assert dev_metrics.count("ApproximateNumberOfMessagesVisible:Maximum") == 1
    assert "ExecutionsFailed" in dev_metrics


def test_alarm_topic_is_encrypted_and_a_dashboard_exists(prod: Any) -> None:
    prod.has_resource_properties("AWS::SNS::Topic", {"KmsMasterKeyId": Match.any_value()})
    prod.resource_count_is("AWS::CloudWatch::Dashboard", 1)


def test_cdk_nag_aws_solutions_passes_and_every_acknowledgement_has_a_reason(synthesized: Synthesized) -> None:
    # Given the session synth ran with AwsSolutionsChecks (a finding would have failed it) / Then the report agrees
    report = json.loads((synthesized.outdir / "validation-report.json").read_text())
    nag = next(r for r in report["pluginReports"] if r["pluginName"] == "AwsSolutions")
    assert nag["conclusion"] == "success"
    assert nag["violations"] == []
    assert nag["suppressedViolations"], "the acknowledgements are recorded"
    for suppressed in nag["suppressedViolations"]:
        assert len(suppressed["reason"]) > 40, suppressed["ruleName"]


def test_cdk_nag_is_live_it_rejects_an_unencrypted_queue(tmp_path: Any) -> None:
    # Given a stack with a plainly non-compliant queue / When synthesized with the same checks / Then synth fails
    import pytest
    from aws_cdk import App, Stack, Validations
    from aws_cdk import aws_sqs as sqs
    from cdk_nag import AwsSolutionsChecks

    app = App(outdir=str(tmp_path))
    stack = Stack(app, "NonCompliant")
    sqs.Queue(stack, "Plain", encryption=sqs.QueueEncryption.UNENCRYPTED)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    with pytest.raises(RuntimeError, match=r"ValidationFailed(.|\n)*AwsSolutions-SQS2"):
        app.synth()


def test_cfn_lint_passes_on_both_templates(synthesized: Synthesized) -> None:
    # Given the synthesized templates / When cfn-lint checks them / Then no error or warning
    # (W3005, a redundant DependsOn that CDK emits for every role's default policy, is ignored).
    paths = [str(synthesized.template_path(name)) for name in (PROD_OPENSEARCH, DEV_TABLE)]
    result = subprocess.run(
        [str(Path(sys.executable).parent / "cfn-lint"), "--ignore-checks", "W3005", "--", *paths],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_an_erasure_drains_at_least_as_long_as_an_api_request_can_run(synthesized: Synthesized) -> None:
    # Given each synthesized template
    for template in synthesized.templates.values():
        functions = resources(template, "AWS::Lambda::Function")
        by_description = {f["Properties"].get("Description", ""): f["Properties"] for f in functions.values()}
        api = next(p for d, p in by_description.items() if d.endswith("REST API (API.md)"))
        steps = next(p for d, p in by_description.items() if d.endswith("user erasure steps"))
        # Then the deletion steps wait longer after the mark than the API function's timeout
        assert int(steps["Environment"]["Variables"]["MEMORY_DELETION_DRAIN_SECONDS"]) > int(api["Timeout"])
