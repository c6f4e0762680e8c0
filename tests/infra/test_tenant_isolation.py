"""Many tenants, one stack (issue 41): what the synthesized templates do so that no tenant's load becomes another
tenant's outage. Both shapes (prod with OpenSearch and a WAF, dev table-only) as tests/synthesis.py makes them."""

from __future__ import annotations

from typing import Any

from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, function_ids, resources
from tests.infra.waf import Request, matches

STAGES = ((PROD_OPENSEARCH, "prod"), (DEV_TABLE, "dev"))


def _stage_settings(template: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(method, path) -> the stage's method setting (``*`` / ``/*`` for the stage's default)."""
    (stage,) = resources(template, "AWS::ApiGateway::Stage").values()
    return {
        (
            m["HttpMethod"],
            m["ResourcePath"] if m["ResourcePath"] == "/*" else m["ResourcePath"][1:].replace("~1", "/"),
        ): m
        for m in stage["Properties"]["MethodSettings"]
    }


def _plans(template: dict[str, Any], stage_name: str) -> dict[str, dict[str, Any]]:
    """Tier name -> its usage plan's properties."""
    prefix = f"agent-memory-{stage_name}-"
    return {
        p["Properties"]["UsagePlanName"].removeprefix(prefix): p["Properties"]
        for p in resources(template, "AWS::ApiGateway::UsagePlan").values()
    }


# -- point 2: route limits per key ---------------------------------------------------------------------------


def test_every_plan_limits_each_heavy_route_per_key_sized_to_its_tier(synthesized: Synthesized) -> None:
    from infra.components.throttling import HEAVY_ROUTES, PLAN_TIERS, key_route_limits

    top = max(PLAN_TIERS, key=lambda t: t.rate_limit)
    for stack, stage_name in STAGES:
        plans = _plans(synthesized.templates[stack], stage_name)
        for tier in PLAN_TIERS:
            (api_stage,) = plans[tier.name]["ApiStages"]
            throttles = {
                (key.rsplit("/", 1)[1], key.rsplit("/", 1)[0]): value for key, value in api_stage["Throttle"].items()
            }
            # Given each plan / Then every heavy route has a per-method throttle of its own (per key of the plan)
            assert set(throttles) == set(HEAVY_ROUTES), (stack, tier.name)
            for route, limit in key_route_limits(tier).items():
                assert throttles[route] == {"RateLimit": limit.rate_limit, "BurstLimit": limit.burst_limit}
                # And it is the top tier's route limit scaled by the tier's rate, at least 1 a second, within the plan
                expected = max(1, int(HEAVY_ROUTES[route].rate_limit * tier.rate_limit / top.rate_limit))
                assert limit.rate_limit == min(expected, tier.rate_limit)
                assert 1 <= limit.rate_limit <= limit.burst_limit
    starter = key_route_limits(next(t for t in PLAN_TIERS if t.name == "starter"))
    scale = key_route_limits(top)
    assert all(starter[route].rate_limit <= scale[route].rate_limit for route in HEAVY_ROUTES)
    assert any(starter[route].rate_limit < scale[route].rate_limit for route in HEAVY_ROUTES)


def test_the_stage_route_buckets_hold_every_sized_for_tenant_and_one_starter_cannot_take_them(
    synthesized: Synthesized,
) -> None:
    from infra.components.routes import SCOPE
    from infra.components.throttling import HEAVY_ROUTES, PLAN_TIERS, TENANTS, key_route_limits, stage_limit

    for stack, stage_name in STAGES:
        template = synthesized.templates[stack]
        settings = _stage_settings(template)
        stage = settings[("*", "/*")]
        tenants = TENANTS[stage_name]
        cap = stage_limit(tenants)
        assert stage["ThrottlingRateLimit"] == cap.rate_limit
        for route in HEAVY_ROUTES:
            bucket = settings[route]
            # Given every tenant the stage is sized for at its per-key limit of the route at once
            wanted = sum(key_route_limits(t)[route].rate_limit * tenants.get(t.name, 0) for t in PLAN_TIERS)
            # Then the stage's bucket holds them all (and two top-tier keys), or is the stage's own limit (the cap)
            floor = max(wanted, 2 * HEAVY_ROUTES[route].rate_limit)
            assert bucket["ThrottlingRateLimit"] == min(floor, cap.rate_limit), (stack, route)
            assert bucket["ThrottlingRateLimit"] >= min(wanted, cap.rate_limit)
        # And one starter tenant at its own limit of DELETE {scope} (an erasure) cannot take the stage's bucket
        plans = _plans(template, stage_name)
        (api_stage,) = plans["starter"]["ApiStages"]
        starter_delete = api_stage["Throttle"][f"{SCOPE}/DELETE"]
        assert starter_delete["RateLimit"] < settings[("DELETE", SCOPE)]["ThrottlingRateLimit"]
        assert starter_delete["BurstLimit"] < settings[("DELETE", SCOPE)]["ThrottlingBurstLimit"]
        # Nor does a scale tenant fill session uploads
        (scale_stage,) = plans["scale"]["ApiStages"]
        uploads = (SCOPE + "/sessions/{session}/memories", "PUT")
        assert (
            scale_stage["Throttle"]["/".join(uploads)]["RateLimit"]
            < settings[(uploads[1], uploads[0])]["ThrottlingRateLimit"]
        )


# -- point 3: each tier's rate at the edge -------------------------------------------------------------------


def test_the_plan_tiers_are_the_tiers_keys_name() -> None:
    from agentmem.tenancy import keys
    from infra.components import throttling

    assert tuple(tier.name for tier in throttling.PLAN_TIERS) == keys.TIERS
    assert throttling.DEFAULT_TIER == keys.DEFAULT_TIER


def _waf_rules(template: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    (acl,) = resources(template, "AWS::WAFv2::WebACL").values()
    return acl["Properties"]["Rules"], acl["Properties"]["CustomResponseBodies"]


def _made_keys(tmp_path: Any) -> dict[str, str]:
    """A key of each tier as ``agentmem keys create`` makes it, and one made before tiers (``old``)."""
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.tenancy import TenantService

    table = SqliteTable(str(tmp_path / "keys.db"))
    service = TenantService(table)
    made = {tier: service.create_key(f"app-{tier}", tier=tier).secret for tier in ("starter", "standard", "scale")}
    table.close()
    return {**made, "old": "amk_0a1b2c3d4e5f_" + "Zz9-_" * 8 + "abc"}


def test_prod_waf_holds_each_tiers_rate_per_key_on_either_header(synthesized: Synthesized, tmp_path: Any) -> None:
    from infra.components.firewall import KEY_WINDOW_SECONDS, RULE_COUNT, TIER_KEY_LIMITS, WAF_MINIMUM_LIMIT
    from infra.components.throttling import PLAN_TIERS

    rules, bodies = _waf_rules(synthesized.templates[PROD_OPENSEARCH])
    # Given prod's web ACL / Then its rules have unique priorities and are the ones the cost notes count
    assert sorted(r["Priority"] for r in rules) == list(range(1, len(rules) + 1))
    assert len(rules) == RULE_COUNT == 11
    by_name = {r["Name"]: r for r in rules}
    per_key = {}
    for tier in PLAN_TIERS:
        for header, suffix in (("x-api-key", "Header"), ("authorization", "Bearer")):
            rule = by_name[f"Rate{tier.name.capitalize()}Key{suffix}"]
            statement = rule["Statement"]["RateBasedStatement"]
            # And a rule per tier and header counts each key of that tier over a minute, at its rate and a fifth
            assert statement["EvaluationWindowSec"] == KEY_WINDOW_SECONDS == 60
            assert statement["Limit"] == TIER_KEY_LIMITS[tier.name] == tier.rate_limit * 60 * 6 // 5
            assert statement["Limit"] >= WAF_MINIMUM_LIMIT
            assert statement["AggregateKeyType"] == "CUSTOM_KEYS"
            assert [k["Header"]["Name"] for k in statement["CustomKeys"]] == [header]
            assert rule["Action"]["Block"]["CustomResponse"]["ResponseCode"] == 429
            per_key[(tier.name, header)] = statement["ScopeDownStatement"]
    assert bodies["rate_limited"]
    # And a key made for a tier is counted by that tier's rule only, in either header; one made before tiers by
    # the default tier's; junk by none
    keys = _made_keys(tmp_path)
    for made_as, key in keys.items():
        expected = "standard" if made_as == "old" else made_as
        for header, value in (
            ("x-api-key", key),
            ("authorization", f"Bearer {key}"),
            ("authorization", f"bearer  {key}"),
        ):
            counted = [
                t
                for (t, h), scope in per_key.items()
                if h == header and matches(scope, Request(headers={header: value}))
            ]
            assert counted == [expected], (made_as, header)
    for junk in ("", "amk_nope_nope", "amk_gold_0a1b2c3d4e5f_x", "Bearer", keys["scale"].replace("amk_", "amx_")):
        for header in ("x-api-key", "authorization"):
            assert not any(
                matches(scope, Request(headers={header: junk})) for (_, h), scope in per_key.items() if h == header
            )


# -- point 4: anonymous traffic cannot exhaust the authorizer ------------------------------------------------


def test_prod_waf_refuses_requests_to_authenticated_routes_without_a_key_of_the_key_format(
    synthesized: Synthesized, tmp_path: Any
) -> None:
    import json

    rules, bodies = _waf_rules(synthesized.templates[PROD_OPENSEARCH])
    (rule,) = [r for r in rules if r["Name"] == "KeyRequired"]
    # Given the rule / Then it answers 401 with the API's error body for a missing key, before the tier rules
    response = rule["Action"]["Block"]["CustomResponse"]
    assert response["ResponseCode"] == 401
    assert json.loads(bodies[response["CustomResponseBodyKey"]]["Content"])["error"]["code"] == "unauthorized"
    assert rule["Priority"] < min(r["Priority"] for r in rules if r["Name"].startswith("RateStarter"))
    keys = _made_keys(tmp_path)

    def refused(path: str, headers: dict[str, str]) -> bool:
        return matches(rule["Statement"], Request(path, headers))

    tenant_paths = [
        "/prod/v1/apps/acme/users/u/memories/search",
        "/v1/apps/acme/users/u/mcp",  # (a custom domain's mapping: no stage in the path)
        "/prod/v1/apps/acme/usage",
        "/prod/agentcore/memories/m/events",
        "/prod/v1/%61pps/acme/usage",
    ]
    for path in tenant_paths:
        # And real keys pass, in x-api-key or as a Bearer in any case
        for key in keys.values():
            assert not refused(path, {"x-api-key": key}), (path, key)
            assert not refused(path, {"Authorization": f"Bearer {key}"}), (path, key)
            assert not refused(path, {"authorization": f"BEARER {key}"}), (path, key)
        # And no key, an empty one, junk, a truncated key, or a junk x-api-key beside a good Bearer (the
        # authorizer would read the junk) are refused
        for headers in (
            {},
            {"x-api-key": ""},
            {"x-api-key": "amk_nope_nope"},
            {"x-api-key": keys["scale"][:-1]},
            {"x-api-key": keys["scale"] + "x"},
            {"x-api-key": "' OR 1=1 --"},
            {"Authorization": "Bearer amk_nope_nope"},
            {"Authorization": f"Basic {keys['scale']}"},
            {"Authorization": keys["scale"]},
            {"x-api-key": "junk", "Authorization": f"Bearer {keys['scale']}"},
        ):
            assert refused(path, headers), (path, headers)
    # And the public and console routes stay open without a key
    for path in (
        "/prod/v1/health",
        "/prod/v1/openapi.json",
        "/prod/console",
        "/prod/console/v1/apps/x.js",
        "/v1/capabilities",
    ):
        assert not refused(path, {})


def test_dev_refuses_a_rest_request_without_x_api_key_before_the_authorizer_runs(synthesized: Synthesized) -> None:
    for stack in (PROD_OPENSEARCH, DEV_TABLE):
        authorizers = {
            a["Properties"]["Name"]: a["Properties"]
            for a in resources(synthesized.templates[stack], "AWS::ApiGateway::Authorizer").values()
        }
        rest = [a for a in authorizers.values() if a.get("IdentitySource")]
        # Given the REST routes' authorizer / Then API Gateway needs x-api-key before it calls it, and caches
        (authorizer,) = rest
        assert authorizer["IdentitySource"] == "method.request.header.x-api-key"
        assert authorizer["AuthorizerResultTtlInSeconds"] == 60


def _alarm_props(template: dict[str, Any], name: str) -> dict[str, Any]:
    (found,) = [a["Properties"] for k, a in resources(template, "AWS::CloudWatch::Alarm").items() if name in k]
    return found


def test_the_api_functions_and_the_authorizers_throttles_alarm_apart(synthesized: Synthesized) -> None:
    for stack, _ in STAGES:
        template = synthesized.templates[stack]
        ids = function_ids(template)
        (topic,) = resources(template, "AWS::SNS::Topic")
        for alarm_name, handler in (("ApiFunctionThrottles", "api"), ("AuthorizerThrottles", "authorizer")):
            alarm = _alarm_props(template, alarm_name)
            # Given each / Then its own function's Throttles, at the first throttled call, to the topic
            assert (alarm["Namespace"], alarm["MetricName"], alarm["Statistic"]) == ("AWS/Lambda", "Throttles", "Sum")
            assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": ids[handler]}}]
            assert (alarm["Threshold"], alarm["EvaluationPeriods"]) == (1, 1)
            assert alarm["AlarmActions"] == [{"Ref": topic}]
        # And the other functions' throttles alarm together, without those two (no double alarm)
        others = _alarm_props(template, "LambdaThrottles")
        summed = [
            d["Value"] for m in others["Metrics"] if "MetricStat" in m for d in m["MetricStat"]["Metric"]["Dimensions"]
        ]
        assert {"Ref": ids["api"]} not in summed
        assert {"Ref": ids["authorizer"]} not in summed


# -- point 6: a canary that can see its own version ------------------------------------------------------------


def test_codedeploy_watches_the_new_versions_own_errors_and_duration(synthesized: Synthesized) -> None:
    for stack, _ in STAGES:
        template = synthesized.templates[stack]
        ids = function_ids(template)
        (alias_id,) = [
            k
            for k, a in resources(template, "AWS::Lambda::Alias").items()
            if a["Properties"]["FunctionName"] == {"Ref": ids["api"]}
        ]
        alias = template["Resources"][alias_id]["Properties"]
        version_id = alias["FunctionVersion"]["Fn::GetAtt"][0]
        expected = [
            {"Name": "ExecutedVersion", "Value": {"Fn::GetAtt": [version_id, "Version"]}},
            {"Name": "FunctionName", "Value": {"Ref": ids["api"]}},
            {"Name": "Resource", "Value": {"Fn::Join": ["", [{"Ref": ids["api"]}, ":live"]]}},
        ]
        # Given the new version's alarms / Then they read the version the alias runs, not the API as a whole
        rate = _alarm_props(template, "ApiVersionErrorRate")
        assert [q["Expression"] for q in rate["Metrics"] if "Expression" in q] == ["errors/invocations"]
        stats = {
            q["MetricStat"]["Metric"]["MetricName"]: q["MetricStat"]["Metric"]
            for q in rate["Metrics"]
            if "MetricStat" in q
        }
        assert set(stats) == {"Errors", "Invocations"}
        assert all(m["Dimensions"] == expected and m["Namespace"] == "AWS/Lambda" for m in stats.values())
        assert rate["Threshold"] == 0.01
        duration = _alarm_props(template, "ApiVersionDurationP95")
        assert (duration["MetricName"], duration["ExtendedStatistic"], duration["Threshold"]) == (
            "Duration",
            "p95",
            2000,
        )
        assert duration["Dimensions"] == expected
        # And a period without a call of the new version is not breaching (its dimensions move to each new version
        # before its first call); the pre-traffic hook is what makes a quiet canary call it
        assert rate["TreatMissingData"] == duration["TreatMissingData"] == "notBreaching"
        # And the API's deployment group watches them and the API-wide 5xx rate, and runs the pre-traffic hook
        group_id = template["Resources"][alias_id]["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"][
            "DeploymentGroupName"
        ]["Ref"]
        watched = {
            a["Name"]["Ref"] for a in template["Resources"][group_id]["Properties"]["AlarmConfiguration"]["Alarms"]
        }
        assert {w.removeprefix("Operations")[:-8] for w in watched} == {
            "ApiVersionErrorRate",
            "ApiVersionDurationP95",
            "Api5xxRate",
        }
        hooks = template["Resources"][alias_id]["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
        assert hooks["BeforeAllowTrafficHook"] == {"Ref": ids["prehook"]}
        # And the authorizer's alias runs the same hook (its new version must refuse a key that was never made)
        (authorizer_alias,) = [
            k
            for k, v in resources(template, "AWS::Lambda::Alias").items()
            if v["Properties"]["FunctionName"] == {"Ref": ids["authorizer"]}
        ]
        authorizer_hooks = template["Resources"][authorizer_alias]["UpdatePolicy"]["CodeDeployLambdaAliasUpdate"]
        assert authorizer_hooks["BeforeAllowTrafficHook"] == {"Ref": ids["prehook"]}


def test_the_pre_traffic_hook_may_invoke_only_the_new_version_and_report_only_to_its_group(
    synthesized: Synthesized,
) -> None:
    from agentmem.release_hook import AUTHORIZER_TARGET_ENV, TARGET_ENV
    from infra.components.compute import Concurrency

    for stack, stage_name in STAGES:
        template = synthesized.templates[stack]
        ids = function_ids(template)
        hook = template["Resources"][ids["prehook"]]["Properties"]
        (version_id,) = [
            k
            for k, v in resources(template, "AWS::Lambda::Version").items()
            if v["Properties"]["FunctionName"] == {"Ref": ids["api"]}
        ]
        (authorizer_version,) = [
            k
            for k, v in resources(template, "AWS::Lambda::Version").items()
            if v["Properties"]["FunctionName"] == {"Ref": ids["authorizer"]}
        ]
        # Given the hook function / Then it checks the versions being deployed, one check at a time, taken from the
        # stage's share (the API's reservation is one less)
        assert hook["Environment"]["Variables"][TARGET_ENV] == {"Ref": version_id}
        assert hook["Environment"]["Variables"][AUTHORIZER_TARGET_ENV] == {"Ref": authorizer_version}
        assert hook["ReservedConcurrentExecutions"] == 1
        plan = Concurrency.for_stage(
            stage_name == "prod",
            account=1000,
            extraction=5 if stage_name == "prod" else 0,
            snapshots=stage_name == "dev",
        )
        assert plan.prehook == 1
        assert template["Resources"][ids["api"]]["Properties"]["ReservedConcurrentExecutions"] == plan.api
        # And its role may invoke that version and put its status on the API's deployment group: nothing else
        role = hook["Role"]["Fn::GetAtt"][0]
        statements = [
            s
            for policy in resources(template, "AWS::IAM::Policy").values()
            if {"Ref": role} in policy["Properties"]["Roles"]
            for s in policy["Properties"]["PolicyDocument"]["Statement"]
        ]
        by_action = {}
        for s in statements:
            for action in [s["Action"]] if isinstance(s["Action"], str) else s["Action"]:
                by_action[action] = s["Resource"]
        assert sorted(json_text(r) for r in by_action["lambda:InvokeFunction"]) == sorted(
            json_text({"Ref": v}) for v in (version_id, authorizer_version)
        )
        group_arns = json_text(statuses(statements))
        assert ":deploymentgroup:" in group_arns
        groups = list(resources(template, "AWS::CodeDeploy::DeploymentGroup"))
        assert len(groups) == 2  # the API's and the authorizer's: the hook reports to both, and to nothing else
        assert all(g in group_arns for g in groups)
        assert not {a for a in by_action if a.startswith(("dynamodb:", "kms:", "s3:", "secretsmanager:", "bedrock:"))}
        assert set(by_action) <= {
            "lambda:InvokeFunction",
            "codedeploy:PutLifecycleEventHookExecutionStatus",
            "logs:CreateLogStream",
            "logs:PutLogEvents",
            "xray:PutTraceSegments",
            "xray:PutTelemetryRecords",
        }


def statuses(statements: list[dict[str, Any]]) -> list[Any]:
    """The resources of every statement that allows reporting a hook's status."""
    found: list[Any] = []
    for s in statements:
        actions = [s["Action"]] if isinstance(s["Action"], str) else s["Action"]
        if "codedeploy:PutLifecycleEventHookExecutionStatus" in actions:
            found += s["Resource"] if isinstance(s["Resource"], list) else [s["Resource"]]
    return found


def json_text(value: Any) -> str:
    import json

    return json.dumps(value)


# -- point 5: hot keys ---------------------------------------------------------------------------------------


def test_prod_names_the_tables_throttled_keys_and_dev_pays_for_none(synthesized: Synthesized) -> None:
    for stack, stage_name in STAGES:
        (table,) = resources(synthesized.templates[stack], "AWS::DynamoDB::Table").values()
        insights = table["Properties"].get("ContributorInsightsSpecification")
        # Given prod / Then Contributor Insights on the table, in the mode meant to stay on; dev has none
        if stage_name == "prod":
            assert insights == {"Enabled": True, "Mode": "THROTTLED_KEYS"}
        else:
            assert insights is None
