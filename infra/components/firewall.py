"""The stage's WAF web ACL (prod): what reaches API Gateway at all.

Rules, in order (each a monthly rule fee, docs/deploy.md):
1. a rate limit per client address (IP): one client flooding the API, with random keys or none, is refused
   before the authorizer runs for each of its requests;
2. a rate limit per ``x-api-key``: one key far beyond its plan's top tier is refused at the edge;
3. a body-size limit under Lambda's: a request whose ``Content-Length`` says more than 6,000,000 bytes is
   answered 413 here (API Gateway would pass up to 10 MB, and the function could not be invoked with it);
4. AWS's managed common rule set, its body inspections counted only: a memory is any text a person or agent
   wrote (code, markup, file paths), which those rules would refuse as cross-site scripting or file inclusion;
5. AWS's managed known-bad-inputs rule set (Log4j and Java deserialization probes, exploitable paths).
Refusals answer in the API's error body. The web ACL logs what it blocks or counts (never ``x-api-key`` nor
``Authorization``) to a log group of its own.
"""

from __future__ import annotations

import json

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from agentmem.models.responses import error_body
from infra.components.throttling import PLAN_TIERS

WINDOW_SECONDS = 300
IP_LIMIT = 20_000
"""Requests per client address in 5 minutes (about 66 a second): several agents behind one NAT fit; a flood does
not. Raise it for a tenant that calls from one address at more than that."""
KEY_LIMIT = max(tier.rate_limit for tier in PLAN_TIERS) * WINDOW_SECONDS * 6 // 5
"""Requests per key in 5 minutes: the top tier's rate with a fifth to spare (its usage plan answers 429 before)."""
BODY_LIMIT_BYTES = 6_000_000
"""Bodies above this are refused: Lambda's invocation payload is 6 MB (6,291,456 bytes) with the event around the
body, so anything larger could never reach the function."""
COUNTED_COMMON_RULES = (
    "SizeRestrictions_BODY",
    "CrossSiteScripting_BODY",
    "GenericLFI_BODY",
    "GenericRFI_BODY",
    "EC2MetaDataSSRF_BODY",
)
"""The common rule set's body inspections, counted (logged), not blocking: memory content is free text."""
REDACTED_HEADERS = ("x-api-key", "authorization")


def at_least(number: int) -> str:
    """A regular expression that matches exactly the decimal integers at or above ``number`` (leading zeros
    allowed): more digits, or as many with a larger digit after an equal prefix, or the number itself."""
    digits = str(number)
    alternatives = [rf"[1-9]\d{{{len(digits)},}}"]
    for position, digit in enumerate(digits):
        if digit != "9":
            rest = len(digits) - position - 1
            alternatives.append(f"{digits[:position]}[{int(digit) + 1}-9]" + (rf"\d{{{rest}}}" if rest else ""))
    alternatives.append(digits)
    return "^0*(" + "|".join(alternatives) + ")$"


class Firewall(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        stage: apigw.Stage,
        name: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.web_acl = wafv2.CfnWebACL(
            self,
            "WebAcl",
            name=name,
            scope="REGIONAL",
            default_action=wafv2.CfnWebACL.DefaultActionProperty(allow={}),
            visibility_config=wafv2.CfnWebACL.VisibilityConfigProperty(
                sampled_requests_enabled=True, cloud_watch_metrics_enabled=True, metric_name=name
            ),
        )
        self.web_acl.add_property_override(
            "CustomResponseBodies",
            {
                code: {"ContentType": "APPLICATION_JSON", "Content": json.dumps(error_body(code, message, ""))}
                for code, message in (
                    ("rate_limited", "too many requests from this client or key; retry later"),
                    ("payload_too_large", f"the request body exceeds {BODY_LIMIT_BYTES} bytes"),
                    ("forbidden", "the request was refused by the firewall"),
                )
            },
        )
        self.web_acl.add_property_override("Rules", self.rules())
        wafv2.CfnWebACLAssociation(self, "Association", resource_arn=stage.stage_arn, web_acl_arn=self.web_acl.attr_arn)
        # WAF delivers to a log group whose name starts with aws-waf-logs-; only what it blocked or counted.
        log_name = f"aws-waf-logs-{name}"
        self.logs = logs.LogGroup(
            self, "Logs", log_group_name=log_name, retention=log_retention, removal_policy=RemovalPolicy.RETAIN
        )
        logging = wafv2.CfnLoggingConfiguration(
            self,
            "Logging",
            resource_arn=self.web_acl.attr_arn,
            log_destination_configs=[
                Stack.of(self).format_arn(
                    service="logs",
                    resource="log-group",
                    resource_name=log_name,
                    arn_format=ArnFormat.COLON_RESOURCE_NAME,
                )
            ],
        )
        logging.add_property_override(
            "RedactedFields", [{"SingleHeader": {"Name": header}} for header in REDACTED_HEADERS]
        )
        logging.add_property_override(
            "LoggingFilter",
            {
                "DefaultBehavior": "DROP",
                "Filters": [
                    {
                        "Behavior": "KEEP",
                        "Requirement": "MEETS_ANY",
                        "Conditions": [{"ActionCondition": {"Action": action}} for action in ("BLOCK", "COUNT")],
                    }
                ],
            },
        )
        logging.node.add_dependency(self.logs)

    def rules(self) -> list[dict[str, object]]:
        block_429 = {"Block": {"CustomResponse": {"ResponseCode": 429, "CustomResponseBodyKey": "rate_limited"}}}
        return [
            {
                "Name": "RatePerClientAddress",
                "Priority": 1,
                "Action": block_429,
                "Statement": {
                    "RateBasedStatement": {
                        "Limit": IP_LIMIT,
                        "EvaluationWindowSec": WINDOW_SECONDS,
                        "AggregateKeyType": "IP",
                    }
                },
                "VisibilityConfig": _visibility("RatePerClientAddress"),
            },
            {
                "Name": "RatePerApiKey",
                "Priority": 2,
                "Action": block_429,
                "Statement": {
                    "RateBasedStatement": {
                        "Limit": KEY_LIMIT,
                        "EvaluationWindowSec": WINDOW_SECONDS,
                        "AggregateKeyType": "CUSTOM_KEYS",
                        "CustomKeys": [
                            {
                                "Header": {
                                    "Name": "x-api-key",
                                    "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
                                }
                            }
                        ],
                    }
                },
                "VisibilityConfig": _visibility("RatePerApiKey"),
            },
            {
                "Name": "BodyUnderLambdaLimit",
                "Priority": 3,
                "Action": {
                    "Block": {"CustomResponse": {"ResponseCode": 413, "CustomResponseBodyKey": "payload_too_large"}}
                },
                "Statement": {
                    "RegexMatchStatement": {
                        "RegexString": at_least(BODY_LIMIT_BYTES + 1),
                        "FieldToMatch": {"SingleHeader": {"Name": "content-length"}},
                        "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
                    }
                },
                "VisibilityConfig": _visibility("BodyUnderLambdaLimit"),
            },
            _managed(
                "AWSManagedRulesCommonRuleSet",
                4,
                overrides=[{"Name": rule, "ActionToUse": {"Count": {}}} for rule in COUNTED_COMMON_RULES],
            ),
            _managed("AWSManagedRulesKnownBadInputsRuleSet", 5),
        ]


def _managed(group: str, priority: int, overrides: list[dict[str, object]] | None = None) -> dict[str, object]:
    statement: dict[str, object] = {"VendorName": "AWS", "Name": group}
    if overrides:
        statement["RuleActionOverrides"] = overrides
    return {
        "Name": group,
        "Priority": priority,
        "OverrideAction": {"None": {}},
        "Statement": {"ManagedRuleGroupStatement": statement},
        "VisibilityConfig": _visibility(group),
    }


def _visibility(name: str) -> dict[str, object]:
    return {"SampledRequestsEnabled": True, "CloudWatchMetricsEnabled": True, "MetricName": name}
