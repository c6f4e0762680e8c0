"""What a launch review asked of the synthesized stacks (issue 37): concurrency partitioned, alarms that reach
someone, safe deploys, throttling and a WAF, erasures that always finish. Both shapes (prod with OpenSearch,
dev table-only) as tests/synthesis.py makes them."""

from __future__ import annotations

from typing import Any

import pytest

from infra.components.compute import (
    API_TIMEOUT_SECONDS,
    GATEWAY_TIMEOUT_SECONDS,
    UNRESERVED_FLOOR,
    Concurrency,
)
from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources
from tests.synthesis import ALARM_EMAIL


def _functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Handler name (``api``, ``authorizer``, ...) -> the function's properties."""
    return {
        f["Properties"]["Handler"].split(".", 1)[0]: f["Properties"]
        for f in resources(template, "AWS::Lambda::Function").values()
    }


# -- point 3: concurrency ------------------------------------------------------------------------------------


def test_every_function_has_reserved_concurrency_and_both_stages_fit_in_one_account(synthesized: Synthesized) -> None:
    reserved = {}
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        functions = _functions(synthesized.templates[name])
        # Given each stage / Then every function has its own slots (a floor no other can take, and a cap)
        assert all(f.get("ReservedConcurrentExecutions", 0) >= 1 for f in functions.values()), name
        reserved[name] = {fn: f["ReservedConcurrentExecutions"] for fn, f in functions.items()}
    prod, dev = reserved[PROD_OPENSEARCH], reserved[DEV_TABLE]
    # And the authorizer and the indexer keep slots a tenant's slow requests cannot take
    assert prod["authorizer"] >= 50
    assert prod["indexer"] >= 10
    # And the API is capped below what the account has left: both stages fit in one account of the default
    # quota with Lambda's unreserved floor to spare
    assert sum(prod.values()) + sum(dev.values()) <= 1000 - UNRESERVED_FLOOR
    assert prod["api"] == Concurrency.for_stage(True, account=1000, extraction=prod["extraction"]).api
    assert prod["api"] < 1000 - UNRESERVED_FLOOR - (sum(prod.values()) - prod["api"])


def test_the_concurrency_plan_follows_the_account_quota_and_refuses_one_too_small() -> None:
    small = Concurrency.for_stage(True, account=400, extraction=5)
    assert small.api == int(300 * 0.8) - small.reserved_for_others
    with pytest.raises(ValueError, match="account_concurrency"):
        _ = Concurrency.for_stage(True, account=150, extraction=5).api
    from infra.app import deployment_options

    larger = deployment_options({"account_concurrency": "3000"}.get).concurrency  # (dev: a tenth of the account)
    assert larger.api == int(2900 * 0.1) - larger.reserved_for_others
    assert larger.api > deployment_options({}.get).concurrency.api
    with pytest.raises(ValueError, match="account_concurrency"):
        deployment_options({"account_concurrency": "lots"}.get)


def test_the_api_function_ends_before_the_gateway_gives_up(synthesized: Synthesized) -> None:
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        api = _functions(synthesized.templates[name])["api"]
        # Then the function's own timeout leaves the gateway (29 s) a margin for a cold start and the round trips
        assert api["Timeout"] == API_TIMEOUT_SECONDS
        assert GATEWAY_TIMEOUT_SECONDS - api["Timeout"] >= 3


# -- point 4: alarms that reach someone ----------------------------------------------------------------------


def test_prod_alarms_email_someone_and_prod_refuses_to_synthesize_without_an_address(synthesized: Synthesized) -> None:
    from infra.app import deployment_options

    # Given prod / Then its alarm topic emails the address it was given; dev, given none, has no subscription
    (topic_id,) = resources(synthesized.templates[PROD_OPENSEARCH], "AWS::SNS::Topic")
    (subscription,) = resources(synthesized.templates[PROD_OPENSEARCH], "AWS::SNS::Subscription").values()
    assert subscription["Properties"] == {"Protocol": "email", "Endpoint": ALARM_EMAIL, "TopicArn": {"Ref": topic_id}}
    assert resources(synthesized.templates[DEV_TABLE], "AWS::SNS::Subscription") == {}
    # And prod without an address (make synth STAGE=prod, or -c stage=prod for cdk deploy) stops the synth
    for context in ({"stage": "prod"}, {"stage": "prod", "alarm_email": ""}):
        with pytest.raises(ValueError, match="ALARM_EMAIL"):
            deployment_options(context.get)
    with pytest.raises(ValueError, match="alarm_email"):
        deployment_options({"stage": "prod", "alarm_email": "nobody"}.get)
    assert deployment_options({"stage": "prod", "alarm_email": "a@b.example"}.get).alarm_email == "a@b.example"
    assert deployment_options({}.get).alarm_email is None  # make synth's default (dev) needs none


def test_make_passes_the_alarm_address_to_synth_and_deploy() -> None:
    import subprocess

    # make -n prints the recipes without running them (nothing is installed or deployed)
    def recipe(target: str) -> str:
        return subprocess.run(
            [
                "make",
                "-n",
                "-o",
                ".venv/.dev",
                "-o",
                ".venv/.infra",
                "-o",
                "layer",
                target,
                "STAGE=prod",
                "ALARM_EMAIL=oncall@example.com",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout

    assert '"alarm_email":"oncall@example.com"' in recipe("synth")
    assert "-c alarm_email=oncall@example.com" in recipe("deploy")


def _alarms(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: a["Properties"] for name, a in resources(template, "AWS::CloudWatch::Alarm").items()}


def _metrics_of(alarm: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Metric name -> its MetricStat metric (single-metric alarms: name -> the alarm's own fields)."""
    if "MetricName" in alarm:
        return {alarm["MetricName"]: {"Namespace": alarm["Namespace"], "Dimensions": alarm.get("Dimensions", [])}}
    return {
        q["MetricStat"]["Metric"]["MetricName"]: q["MetricStat"]["Metric"]
        for q in alarm["Metrics"]
        if "MetricStat" in q
    }


def _alarm(template: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [a for logical_id, a in _alarms(template).items() if name in logical_id]
    return found


def test_the_likeliest_incidents_have_alarms_on_the_topic(synthesized: Synthesized) -> None:
    for stack in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[stack]
        (topic_id,) = resources(template, "AWS::SNS::Topic")
        (table_id,) = resources(template, "AWS::DynamoDB::Table")
        for alarm in _alarms(template).values():
            assert alarm["AlarmActions"] == [{"Ref": topic_id}]
        # 429 surges: counted from the access log's status by a metric filter
        throttled = _alarm(template, "ApiThrottled")
        (metric_filter,) = resources(template, "AWS::Logs::MetricFilter").values()
        (transformation,) = metric_filter["Properties"]["MetricTransformations"]
        assert metric_filter["Properties"]["FilterPattern"] == '{ $.status = "429" }'
        assert metric_filter["Properties"]["LogGroupName"]["Ref"].startswith("ApiAccessLogs")
        assert transformation["MetricName"] in _metrics_of(throttled)
        # DynamoDB throttling of the table
        table = _metrics_of(_alarm(template, "TableThrottles"))
        assert set(table) == {"ReadThrottleEvents", "WriteThrottleEvents"}
        assert all(m["Dimensions"] == [{"Name": "TableName", "Value": {"Ref": table_id}}] for m in table.values())
        # Authorizer failures: its errors less the keys it refused (both of the authorizer)
        failures = _alarm(template, "AuthorizerFailures")
        assert [q["Expression"] for q in failures["Metrics"] if "Expression" in q] == ["errors-rejected"]
        assert set(_metrics_of(failures)) == {"Errors", "KeysRejected"}
        # Degraded searches, which the API already counts
        degraded = _metrics_of(_alarm(template, "SearchesDegraded"))["SearchesDegraded"]
        assert degraded["Namespace"] == "AgentMemory"
        assert degraded["Dimensions"] == [{"Name": "service", "Value": "agent-memory"}]
        # Concurrency near the account's quota
        near = _alarm(template, "ConcurrencyNearQuota")
        assert (near["Namespace"], near["MetricName"], near["Threshold"]) == ("AWS/Lambda", "ConcurrentExecutions", 900)


def test_access_logs_name_the_tenant(synthesized: Synthesized) -> None:
    import json

    for stack in (PROD_OPENSEARCH, DEV_TABLE):
        (stage,) = resources(synthesized.templates[stack], "AWS::ApiGateway::Stage").values()
        fields = json.loads(stage["Properties"]["AccessLogSetting"]["Format"])
        assert fields["app"] == "$context.authorizer.app"
        assert fields["keyId"] == "$context.authorizer.key_id"
        assert fields["status"] == "$context.status"
        assert "x-api-key" not in json.dumps(fields).lower()  # the key itself is never logged


# -- point 2: every accepted erasure ends SUCCEEDED ----------------------------------------------------------

_THROTTLE = "Lambda.TooManyRequestsException"
_TIMEOUTS = ("Sandbox.Timedout", "States.Timeout", "Lambda.Unknown")


def _states(definition: dict[str, Any], inside: str = "") -> list[tuple[str, str, dict[str, Any]]]:
    """Every state of the definition with the top-level state it lies in ('' at the top)."""
    found = []
    for name, state in definition["States"].items():
        found.append((name, inside, state))
        for branch in state.get("Branches", []):
            found += _states(branch, inside or name)
        if "ItemProcessor" in state:
            found += _states(state["ItemProcessor"], inside or name)
    return found


def _longest_wait(rule: dict[str, Any]) -> float:
    """Seconds a retry rule spends waiting at most (its delays before jitter, capped by MaxDelaySeconds)."""
    cap = rule.get("MaxDelaySeconds", float("inf"))
    return sum(
        min(rule.get("IntervalSeconds", 1) * rule.get("BackoffRate", 2.0) ** n, cap)
        for n in range(rule.get("MaxAttempts", 3))
    )


def test_every_state_of_the_erasure_workflow_is_caught_and_retries_throttles_and_timeouts() -> None:
    import json

    from infra.components.workflow import ASL_FILE

    definition = json.loads(ASL_FILE.read_text())
    states = _states(definition)
    top = definition["States"]
    # Given every Task of the workflow
    tasks = [(name, inside, state) for name, inside, state in states if state["Type"] == "Task"]
    assert len(tasks) >= 9
    for name, inside, state in tasks:
        rules = state["Retry"]
        throttled = [r for r in rules if _THROTTLE in r["ErrorEquals"]]
        timed_out = [r for r in rules if set(_TIMEOUTS) <= set(r["ErrorEquals"])]
        # Then throttling is retried for half an hour at least (ten reserved slots, a burst of erasures)
        assert throttled, name
        assert _longest_wait(throttled[0]) >= 30 * 60, name
        assert throttled[0]["JitterStrategy"] == "FULL", name
        # And a timed-out invocation is retried (it was not)
        assert timed_out, name
        assert timed_out[0]["MaxAttempts"] >= 2, name
        # And every failure is caught: by the Task itself, or by the Parallel around it
        catcher = state if not inside else top[inside]
        assert [c["Next"] for c in catcher["Catch"] if c["ErrorEquals"] == ["States.ALL"]], name
    # And so is RecordFailure (it had no catch): its own failure still ends the execution at DeletionFailed,
    # which the re-drive rule sees
    assert [c["Next"] for c in top["RecordFailure"]["Catch"]] == ["DeletionFailed"]
    assert top["DeletionFailed"]["Type"] == "Fail"
    # And an execution is bounded (TIMED_OUT is re-driven too): a day, longer than the longest backoff
    from agentmem.deletion.redrive import REDRIVE_DELAYS

    assert max(REDRIVE_DELAYS) + 3600 < definition["TimeoutSeconds"] <= 24 * 3600
    # And the first state waits the attempt's backoff
    assert top[definition["StartAt"]] == {
        **top[definition["StartAt"]],
        "Type": "Wait",
        "SecondsPath": "$.delay_seconds",
    }


def test_failed_and_timed_out_erasures_are_redriven_by_a_function_that_may_only_start_them(
    synthesized: Synthesized,
) -> None:
    from agentmem.deletion.redrive import ERASURES_GIVEN_UP, REDRIVE_DELAYS

    # Given the re-drive's schedule: six re-drives, the last more than half a day after the failure
    assert len(REDRIVE_DELAYS) == 6
    assert sum(REDRIVE_DELAYS) >= 12 * 3600
    assert list(REDRIVE_DELAYS) == sorted(REDRIVE_DELAYS)
    for name in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[name]
        (machine,) = resources(template, "AWS::StepFunctions::StateMachine")
        functions = {
            logical: f["Properties"]
            for logical, f in resources(template, "AWS::Lambda::Function").items()
            if f["Properties"]["Handler"] == "redrive.handler.handler"
        }
        ((redrive_id, redrive),) = functions.items()
        assert redrive["Environment"]["Variables"]["MEMORY_DELETION_STATE_MACHINE_ARN"] == {"Ref": machine}
        assert redrive["ReservedConcurrentExecutions"] >= 1
        # Then an EventBridge rule sends the machine's FAILED and TIMED_OUT executions to it
        (rule,) = [r["Properties"] for r in resources(template, "AWS::Events::Rule").values()]
        assert rule["EventPattern"] == {
            "source": ["aws.states"],
            "detail-type": ["Step Functions Execution Status Change"],
            "detail": {"status": ["FAILED", "TIMED_OUT"], "stateMachineArn": [{"Ref": machine}]},
        }
        (target,) = rule["Targets"]
        assert target["Arn"] == {"Fn::GetAtt": [redrive_id, "Arn"]}
        # And an event EventBridge cannot deliver is retried for a day, then kept in a queue
        assert target["RetryPolicy"] == {"MaximumEventAgeInSeconds": 86400, "MaximumRetryAttempts": 185}
        queue = target["DeadLetterConfig"]["Arn"]["Fn::GetAtt"][0]
        # And so is an event the function failed on (Lambda's asynchronous retries, then its destination)
        (invoke_config,) = [
            c["Properties"]
            for c in resources(template, "AWS::Lambda::EventInvokeConfig").values()
            if c["Properties"]["FunctionName"] == {"Ref": redrive_id}
        ]
        assert invoke_config["DestinationConfig"]["OnFailure"]["Destination"] == {"Fn::GetAtt": [queue, "Arn"]}
        # And the alarm counts both the erasures given up and the events no re-drive received
        (alarm,) = [
            a["Properties"]
            for logical, a in resources(template, "AWS::CloudWatch::Alarm").items()
            if logical.startswith("OperationsErasuresGivenUp")
        ]
        watched = {q["MetricStat"]["Metric"]["MetricName"] for q in alarm["Metrics"] if "MetricStat" in q}
        assert watched == {ERASURES_GIVEN_UP, "ApproximateNumberOfMessagesVisible"}
        assert alarm["Threshold"] == 1
        # And the function's role may start executions of this machine, read deletion requests (T#) and send
        # to its queue: nothing else
        role = redrive["Role"]["Fn::GetAtt"][0]
        statements = [
            statement
            for policy in resources(template, "AWS::IAM::Policy").values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]
            if statement["Effect"] == "Allow"
        ]
        actions = {a for s in statements for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])}
        assert "states:StartExecution" in actions
        assert not {a for a in actions if a.startswith("states:")} - {"states:StartExecution"}
        assert not {a for a in actions if a.startswith("dynamodb:")} - {"dynamodb:GetItem"}
        starts = [s for s in statements if s["Action"] == "states:StartExecution"]
        assert [s["Resource"] for s in starts] == [{"Ref": machine}]
        reads = [s for s in statements if s["Action"] == "dynamodb:GetItem"]
        assert [s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] for s in reads] == [["T#*"]]


# -- point 5: safe deploys -----------------------------------------------------------------------------------


def test_the_api_and_the_authorizer_run_behind_an_alias_that_codedeploy_shifts(synthesized: Synthesized) -> None:
    import json

    for stack in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[stack]
        functions = {k: f["Properties"]["Handler"] for k, f in resources(template, "AWS::Lambda::Function").items()}
        aliases = resources(template, "AWS::Lambda::Alias")
        versions = resources(template, "AWS::Lambda::Version")
        alarms = resources(template, "AWS::CloudWatch::Alarm")
        groups = resources(template, "AWS::CodeDeploy::DeploymentGroup")
        by_handler = {}
        for alias_id, alias in aliases.items():
            props = alias["Properties"]
            # Given each alias / Then it points at a published version of its function, never $LATEST
            version_id = props["FunctionVersion"]["Fn::GetAtt"][0]
            assert versions[version_id]["Properties"]["FunctionName"] == props["FunctionName"]
            handler = functions[props["FunctionName"]["Ref"]]
            by_handler[handler] = alias_id
            # And CodeDeploy moves it: a deployment group of its own, named in the alias's update policy
            group_id = alias["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]["DeploymentGroupName"]["Ref"]
            group = groups[group_id]["Properties"]
            expected = (
                "CodeDeployDefault.LambdaCanary10Percent15Minutes"
                if stack == PROD_OPENSEARCH
                else ("CodeDeployDefault.LambdaAllAtOnce")
            )
            assert group["DeploymentConfigName"] == expected, (stack, handler)
            # And a deployment in alarm (or failed, or stopped) goes back to the previous version
            assert set(group["AutoRollbackConfiguration"]["Events"]) == {
                "DEPLOYMENT_FAILURE",
                "DEPLOYMENT_STOP_ON_ALARM",
                "DEPLOYMENT_STOP_ON_REQUEST",
            }
            assert group["AutoRollbackConfiguration"]["Enabled"] is True
            watched = {a["Name"]["Ref"] for a in group["AlarmConfiguration"]["Alarms"]}
            assert group["AlarmConfiguration"]["Enabled"] is True
            assert watched <= set(alarms)
            if handler == "api.handler.handler":
                # (the new version's own error rate and duration, and the API-wide 5xx rate: test_tenant_isolation.py)
                assert {n for n in watched if "ApiVersion" in n or "Api5xxRate" in n} == watched
                assert len(watched) == 3
            else:
                assert any("AuthorizerFailures" in name for name in watched)
        assert set(by_handler) == {"api.handler.handler", "authorizer.handler.handler"}
        # And API Gateway invokes the aliases: every method of the API and both authorizers
        for method in resources(template, "AWS::ApiGateway::Method").values():
            uri = json.dumps(method["Properties"]["Integration"]["Uri"])
            if "console" in uri.lower():
                continue
            assert by_handler["api.handler.handler"] in uri
        for authorizer in resources(template, "AWS::ApiGateway::Authorizer").values():
            assert by_handler["authorizer.handler.handler"] in json.dumps(authorizer["Properties"]["AuthorizerUri"])


def test_the_account_level_logging_role_belongs_to_no_stage(synthesized: Synthesized) -> None:
    import json

    # Given each stage's template / Then it holds no API Gateway account setting and no logging role for it
    for stack in (PROD_OPENSEARCH, DEV_TABLE):
        template = synthesized.templates[stack]
        assert resources(template, "AWS::ApiGateway::Account") == {}
        assert "AmazonAPIGatewayPushToCloudWatchLogs" not in json.dumps(template)
        assert "CloudWatchRoleArn" not in json.dumps(resources(template, "AWS::ApiGateway::RestApi"))
        # And it depends on the account's stack, which CDK deploys first
        assert [d.stack_name for d in synthesized.stacks[stack].dependencies] == ["AgentMemory-account"]
    # And the account's stack holds them, retained whatever happens to it
    account = synthesized.account
    assert account is not None
    (setting,) = resources(account, "AWS::ApiGateway::Account").items()
    (role_id, role) = next(iter(resources(account, "AWS::IAM::Role").items()))
    assert setting[1]["Properties"]["CloudWatchRoleArn"] == {"Fn::GetAtt": [role_id, "Arn"]}
    assert (setting[1]["DeletionPolicy"], role["DeletionPolicy"]) == ("Retain", "Retain")
    assert "AmazonAPIGatewayPushToCloudWatchLogs" in json.dumps(role["Properties"]["ManagedPolicyArns"])


# -- point 1: no tenant can starve the others ----------------------------------------------------------------


def _stage(template: dict[str, Any]) -> dict[str, Any]:
    (stage,) = resources(template, "AWS::ApiGateway::Stage").values()
    return dict(stage["Properties"])


def test_the_stage_limit_is_sized_from_the_tenants_and_their_plan_tiers(synthesized: Synthesized) -> None:
    from infra.components.throttling import PLAN_TIERS, TENANTS

    tiers = {tier.name: tier for tier in PLAN_TIERS}
    for stack, stage_name in ((PROD_OPENSEARCH, "prod"), (DEV_TABLE, "dev")):
        template = synthesized.templates[stack]
        # Given the tenants each stage is sized for / Then its default limit is all of them at their plans' rates
        default = next(m for m in _stage(template)["MethodSettings"] if m["ResourcePath"] == "/*")
        tenants = TENANTS[stage_name]
        assert default["ThrottlingRateLimit"] == sum(tiers[t].rate_limit * n for t, n in tenants.items())
        assert default["ThrottlingBurstLimit"] == sum(tiers[t].burst_limit * n for t, n in tenants.items())
        # And plans come in tiers: one usage plan each, on the stage, with its per-key throttle and daily quota
        plans = {
            p["Properties"]["UsagePlanName"]: p["Properties"]
            for p in resources(template, "AWS::ApiGateway::UsagePlan").values()
        }
        assert set(plans) == {f"agent-memory-{stage_name}-{tier}" for tier in tiers}
        for name, tier in tiers.items():
            plan = plans[f"agent-memory-{stage_name}-{name}"]
            assert plan["Throttle"] == {"RateLimit": tier.rate_limit, "BurstLimit": tier.burst_limit}
            assert plan["Quota"] == {"Limit": tier.requests_per_day, "Period": "DAY"}
            assert len(plan["ApiStages"]) == 1
            assert f"UsagePlanId{name.capitalize()}" in template["Outputs"]
    assert tiers["starter"].rate_limit < tiers["standard"].rate_limit < tiers["scale"].rate_limit


def test_heavy_and_public_routes_have_limits_of_their_own_below_the_stages(synthesized: Synthesized) -> None:
    from infra.components.routes import CONSOLE_ROUTES, PUBLIC_ROUTES
    from infra.components.throttling import HEAVY_ROUTES, PUBLIC_LIMIT, TENANTS, stage_route_limits

    assert set(PUBLIC_ROUTES + CONSOLE_ROUTES) <= set(stage_route_limits(TENANTS["dev"]))
    assert ("GET", "/v1/apps/{app}/users/{user}/export") in HEAVY_ROUTES
    for stack, stage_name in ((PROD_OPENSEARCH, "prod"), (DEV_TABLE, "dev")):
        settings = _stage(synthesized.templates[stack])["MethodSettings"]
        default = next(m for m in settings if m["ResourcePath"] == "/*")
        by_route = {
            (m["HttpMethod"], m["ResourcePath"][1:].replace("~1", "/")): m
            for m in settings
            if m["ResourcePath"] != "/*"
        }
        # Given each limited route / Then a method setting of its own, at most the stage's, logging as the rest
        for (method, path), limit in stage_route_limits(TENANTS[stage_name]).items():
            setting = by_route[(method, path)]
            assert (setting["ThrottlingRateLimit"], setting["ThrottlingBurstLimit"]) == (
                limit.rate_limit,
                limit.burst_limit,
            )
            assert setting["ThrottlingRateLimit"] <= default["ThrottlingRateLimit"], (stack, path)
            assert (setting["LoggingLevel"], setting["MetricsEnabled"]) == ("ERROR", False)
        assert by_route[("GET", "/v1/health")]["ThrottlingRateLimit"] == PUBLIC_LIMIT.rate_limit


def test_the_tenants_context_sizes_the_stage_and_refuses_what_it_cannot_read() -> None:
    from infra.app import deployment_options
    from infra.components.throttling import ACCOUNT_RATE_LIMIT, stage_limit

    options = deployment_options({"tenants": "starter:10, scale:1"}.get)
    assert stage_limit(options.tenants).rate_limit == 10 * 5 + 1 * 100
    assert stage_limit({"scale": 1000}).rate_limit == ACCOUNT_RATE_LIMIT  # never above the account's limit
    for value, message in (("gold:3", "no such plan tier"), ("starter", "tier"), ("starter:0", "no tenant")):
        with pytest.raises(ValueError, match=message):
            deployment_options({"tenants": value}.get)


def _rules(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    (acl,) = resources(template, "AWS::WAFv2::WebACL").values()
    return {rule["Name"]: rule for rule in acl["Properties"]["Rules"]}


def test_prod_has_a_waf_web_acl_on_its_stage_with_the_rules_a_launch_needs(synthesized: Synthesized) -> None:
    import json

    from infra.components.firewall import BODY_LIMIT_BYTES, COUNTED_COMMON_RULES, IP_LIMIT, TIER_KEY_LIMITS

    template = synthesized.templates[PROD_OPENSEARCH]
    (acl_id, acl) = next(iter(resources(template, "AWS::WAFv2::WebACL").items()))
    (stage_id,) = resources(template, "AWS::ApiGateway::Stage")
    (association,) = resources(template, "AWS::WAFv2::WebACLAssociation").values()
    # Given prod / Then a regional web ACL is associated with its stage
    assert acl["Properties"]["Scope"] == "REGIONAL"
    assert association["Properties"]["WebACLArn"] == {"Fn::GetAtt": [acl_id, "Arn"]}
    assert {"Ref": stage_id} in association["Properties"]["ResourceArn"]["Fn::Join"][1]
    rules = _rules(template)
    # And it limits each client address and each key (per tier: tests/infra/test_tenant_isolation.py), answering
    # 429 in the API's error body
    per_ip = rules["RatePerClientAddress"]["Statement"]["RateBasedStatement"]
    assert (per_ip["AggregateKeyType"], per_ip["Limit"]) == ("IP", IP_LIMIT)
    per_key = rules["RateStandardKeyHeader"]["Statement"]["RateBasedStatement"]
    assert per_key["AggregateKeyType"] == "CUSTOM_KEYS"
    assert per_key["CustomKeys"][0]["Header"]["Name"] == "x-api-key"
    assert per_key["Limit"] == TIER_KEY_LIMITS["standard"]
    for name in ("RatePerClientAddress", "RateStandardKeyHeader"):
        response = rules[name]["Action"]["Block"]["CustomResponse"]
        assert response["ResponseCode"] == 429
        body = json.loads(acl["Properties"]["CustomResponseBodies"][response["CustomResponseBodyKey"]]["Content"])
        assert body["error"]["code"] == "rate_limited"
    # And it refuses bodies larger than Lambda could be invoked with, with 413
    size = rules["BodyUnderLambdaLimit"]
    by_length = size["Statement"]["OrStatement"]["Statements"][0]  # (or without a length: test_first_deploy.py)
    assert by_length["RegexMatchStatement"]["FieldToMatch"] == {"SingleHeader": {"Name": "content-length"}}
    assert size["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 413
    assert BODY_LIMIT_BYTES < 6 * 1024 * 1024
    # And AWS's common and known-bad-inputs rule sets, the common set's body inspections counted only
    common = rules["AWSManagedRulesCommonRuleSet"]["Statement"]["ManagedRuleGroupStatement"]
    overrides = {o["Name"]: o["ActionToUse"] for o in common["RuleActionOverrides"]}
    assert overrides == {rule: {"Count": {}} for rule in COUNTED_COMMON_RULES}
    assert "AWSManagedRulesKnownBadInputsRuleSet" in rules
    # And it logs what it blocks or counts, never a key
    (logging,) = resources(template, "AWS::WAFv2::LoggingConfiguration").values()
    assert {f["SingleHeader"]["Name"] for f in logging["Properties"]["RedactedFields"]} == {
        "x-api-key",
        "authorization",
    }
    assert logging["Properties"]["LoggingFilter"]["DefaultBehavior"] == "DROP"
    # And dev, which pays for no web ACL, has none
    assert resources(synthesized.templates[DEV_TABLE], "AWS::WAFv2::WebACL") == {}


@pytest.mark.parametrize("limit", [6_000_001, 1, 10, 99, 100, 1009, 5_999_990])
def test_the_body_size_rule_matches_exactly_the_lengths_above_the_limit(limit: int) -> None:
    import random
    import re

    from infra.components.firewall import at_least

    pattern = re.compile(at_least(limit))
    rng = random.Random(limit)
    samples = {0, 1, limit - 1, limit, limit + 1, 10 * limit, 6_291_456, 10_485_760}
    samples |= {rng.randrange(0, 20 * limit + 10) for _ in range(3000)}
    for value in samples:
        assert bool(pattern.match(str(value))) == (value >= limit), value
        assert bool(pattern.match("00" + str(value))) == (value >= limit), value
    for text in ("", "12a", "-7000000", "6e9"):
        assert not pattern.match(text), text


# -- point 8: a backup outside the account -------------------------------------------------------------------


def test_prod_backs_the_table_up_daily_and_copies_it_to_another_accounts_vault(synthesized: Synthesized) -> None:
    import json

    from tests.synthesis import BACKUP_COPY_VAULT

    template = synthesized.templates[PROD_OPENSEARCH]
    (table_id,) = resources(template, "AWS::DynamoDB::Table")
    (key_id,) = resources(template, "AWS::KMS::Key")
    (vault_id, vault) = next(iter(resources(template, "AWS::Backup::BackupVault").items()))
    (plan,) = resources(template, "AWS::Backup::BackupPlan").values()
    (selection,) = resources(template, "AWS::Backup::BackupSelection").values()
    # Given prod / Then a daily backup of the table into a vault encrypted with the data key, kept here 35 days
    assert vault["Properties"]["EncryptionKeyArn"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert vault["DeletionPolicy"] == "Retain"
    (rule,) = plan["Properties"]["BackupPlan"]["BackupPlanRule"]
    assert rule["ScheduleExpression"] == "cron(0 3 * * ? *)"
    assert rule["TargetBackupVault"] == {"Fn::GetAtt": [vault_id, "BackupVaultName"]}
    assert rule["Lifecycle"]["DeleteAfterDays"] == 35
    assert {"Fn::GetAtt": [table_id, "Arn"]} in selection["Properties"]["BackupSelection"]["Resources"]
    # And a copy of each into the other account's vault, kept 90 days
    (copy,) = rule["CopyActions"]
    assert copy["DestinationBackupVaultArn"] == BACKUP_COPY_VAULT
    assert copy["Lifecycle"]["DeleteAfterDays"] == 90
    # And that account may use the data key through AWS Backup only
    account = BACKUP_COPY_VAULT.split(":")[4]
    statements = template["Resources"][key_id]["Properties"]["KeyPolicy"]["Statement"]
    (shared,) = [s for s in statements if account in json.dumps(s.get("Principal"))]
    assert set(shared["Action"]) == {"kms:Decrypt", "kms:DescribeKey", "kms:CreateGrant"}
    assert "backup." in json.dumps(shared["Condition"]["StringEquals"]["kms:ViaService"])
    # And dev keeps none (point-in-time recovery only)
    assert resources(synthesized.templates[DEV_TABLE], "AWS::Backup::BackupPlan") == {}


def test_the_copy_vault_context_is_checked() -> None:
    from infra.app import deployment_options

    prod = {"stage": "prod", "alarm_email": "a@b.example"}
    for value, message in (("vault-1", "backup vault ARN"), ("arn:aws:s3:::bucket", "backup vault ARN")):
        with pytest.raises(ValueError, match=message):
            deployment_options({**prod, "backup_copy_vault": value}.get)
    with pytest.raises(ValueError, match="stage=prod"):
        deployment_options({"backup_copy_vault": "arn:aws:backup:us-east-1:210987654321:backup-vault:v"}.get)
