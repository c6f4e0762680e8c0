"""The stage's WAF web ACL (prod): what reaches API Gateway at all.

Rules, in order (each a monthly rule fee, docs/deploy.md; ``RULE_COUNT`` of them):
1. a rate limit per client address (IP): one client flooding the API, with random keys or none, is refused
   before the authorizer runs for each of its requests;
2. a key on every authenticated route (``/v1/apps/...``, ``/agentcore/...``): a request there whose key (the
   ``x-api-key``, or without one the ``Authorization: Bearer``, as the authorizer reads them) is absent or not of
   the key format (agentmem/tenancy/keys.py ``KEY_FORMAT``) is answered 401 here, so anonymous traffic and junk
   keys never invoke the authorizer (whose slots every tenant's expired cache needs); the public and console
   routes stay open. A random key of the right format still reaches the authorizer: the address's rate bounds it;
3. a rate limit per key for each plan tier and each header the key may come in (``x-api-key``, ``Authorization:
   Bearer``): the tier is read from the key itself (``amk_<tier>_...``; keys made before tiers count as the default
   tier), and each key may send its tier's rate with a fifth to spare, counted over a minute, so a key far past
   its plan is refused here even when the usage plan's best-effort throttle lets it through. A key sent in both
   headers is counted in each (twice its rate at most);
4. a body-size limit under Lambda's: a request whose ``Content-Length`` says more than 6,000,000 bytes, or that has
   a body and no ``Content-Length`` at all (WAF sees only a body's first kilobytes, so a body is sized by its
   header; one without passed), is answered 413 here (API Gateway would pass up to 10 MB, and the function could
   not be invoked with it: the gateway's 5xx for what the client sent);
5. AWS's managed common rule set, its body inspections and its missing-User-Agent rule counted only: a memory is any
   text a person or agent wrote (code, markup, file paths), which those rules would refuse as cross-site scripting
   or file inclusion, and an agent's HTTP client may send no User-Agent;
6. AWS's managed known-bad-inputs rule set (Java deserialization, Log4j and React probes, exploitable paths), its
   body inspections counted only: a memory about Log4Shell quotes the exploit string it is about.
The web ACL's own refusals answer in the API's error body (its custom bodies); a managed group's block is WAF's bare
403, which API Gateway answers in the API's error body with the request's id (infra/components/api.py
``WAF_FILTERED``; a custom response on each managed rule would name every rule of both groups, miss the ones AWS
adds, and carry no request id). The web ACL logs what it blocks or counts (never ``x-api-key`` nor
``Authorization``) to a log group of its own, and its data protection replaces both headers' values wherever WAF
shows them (its logs, its sampled requests, the keys a rate rule counts: the logging redaction covers the logs only).
"""

from __future__ import annotations

import json
import re

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_apigateway as apigw
from aws_cdk import aws_logs as logs
from aws_cdk import aws_wafv2 as wafv2
from constructs import Construct

from agentmem.models.responses import error_body
from agentmem.tenancy.keys import KEY_FORMAT, MISSING_KEY, tier_key_pattern
from infra.components.naming import retained_name
from infra.components.throttling import PLAN_TIERS

WINDOW_SECONDS = 300
IP_LIMIT = 20_000
"""Requests per client address in 5 minutes (about 66 a second): several agents behind one NAT fit; a flood does
not. Raise it for a tenant that calls from one address at more than that."""
KEY_WINDOW_SECONDS = 60
"""The per-key rules count over WAF's shortest window, so a key's burst is caught within a minute."""
KEY_HEADERS = ("x-api-key", "authorization")
"""Where a key may come: ``x-api-key``, or ``Authorization: Bearer <key>`` (MCP clients)."""
WAF_MINIMUM_LIMIT = 10
"""The smallest limit a rate-based rule takes."""
TIER_KEY_LIMITS = {
    tier.name: max(WAF_MINIMUM_LIMIT, tier.rate_limit * KEY_WINDOW_SECONDS * 6 // 5) for tier in PLAN_TIERS
}
"""Requests per key of each tier in a minute: the tier's rate with a fifth to spare (its usage plan answers 429
before, when its best effort holds)."""
AUTHENTICATED_PREFIXES = ("v1/apps", "agentcore")
"""The paths under which every route needs a key (infra/components/routes.py: TENANT_ROUTES, MCP_ROUTES,
AGENTCORE_ROUTES); the public routes (``/v1/health``, ...) and the console's files lie elsewhere."""
RULE_COUNT = 5 + 2 * len(PLAN_TIERS)
"""The address's rate, the key requirement, a per-key rate per tier and header, the body size, two managed groups."""
BODY_LIMIT_BYTES = 6_000_000
"""Bodies above this are refused: Lambda's invocation payload is 6 MB (6,291,456 bytes) with the event around the
body, so anything larger could never reach the function."""
COUNTED_COMMON_RULES = (
    "SizeRestrictions_BODY",
    "CrossSiteScripting_BODY",
    "GenericLFI_BODY",
    "GenericRFI_BODY",
    "EC2MetaDataSSRF_BODY",
    "NoUserAgent_HEADER",
)
"""The common rule set's body inspections, counted (logged), not blocking: memory content is free text (a body over
8 KB, a legitimate batch of memories, is the API's to limit: 6 MB, rule 4); and its rule against requests without a
User-Agent: agents' HTTP clients need not send one."""
COUNTED_BAD_INPUT_RULES = ("JavaDeserializationRCE_BODY", "Log4JRCE_BODY", "ReactJSRCE_BODY")
"""The known-bad-inputs rule set's body inspections, counted: a memory may quote an exploit string (a note about
Log4Shell holds ``${jndi:ldap://...}``), which the API stores as text and never evaluates. Its header, path and query
rules still block."""
REDACTED_HEADERS = ("x-api-key", "authorization")
REFUSED = "the request was refused by the firewall"
"""What a request the web ACL blocked is told: in its own ``forbidden`` body, and in API Gateway's answer to a block by
AWS's managed rule groups (infra/components/api.py ``WAF_FILTERED``)."""


def bearer(pattern: str) -> str:
    """``pattern`` (a key regex anchored at the start) as the value of ``Authorization: Bearer``, matched after
    WAF's LOWERCASE transformation (the scheme's case is free; key regexes match lowercased keys)."""
    return r"^bearer\s+" + pattern.removeprefix("^").removesuffix("$") + (r"\s*$" if pattern.endswith("$") else "")


def authenticated_path(stage: str) -> str:
    """The URI paths of the authenticated routes, as WAF sees them on the stage (with or without the stage's
    name before them: the execute-api URL has it, a custom domain's mapping not)."""
    return rf"^(/{re.escape(stage)})?/({'|'.join(AUTHENTICATED_PREFIXES)})/"


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
        stage_name: str,
        name: str,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        self.stage_name = stage_name  # (the stage's own attribute is a token: the path rule needs the text)
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
                    (
                        "payload_too_large",
                        f"the request body exceeds {BODY_LIMIT_BYTES} bytes, or comes without a Content-Length",
                    ),
                    ("unauthorized", MISSING_KEY),
                    ("forbidden", REFUSED),
                )
            },
        )
        self.web_acl.add_property_override("Rules", self.rules())
        # The keys' values replaced wherever WAF shows a request (logs, sampled requests, the rate rules' keys): the
        # logging configuration's redaction below covers the logs only.
        self.web_acl.add_property_override(
            "DataProtectionConfig",
            {
                "DataProtections": [
                    {
                        "Field": {"FieldType": "SINGLE_HEADER", "FieldKeys": list(REDACTED_HEADERS)},
                        "Action": "SUBSTITUTION",
                        "ExcludeRuleMatchDetails": False,
                        "ExcludeRateBasedDetails": False,
                    }
                ]
            },
        )
        wafv2.CfnWebACLAssociation(self, "Association", resource_arn=stage.stage_arn, web_acl_arn=self.web_acl.attr_arn)
        # WAF delivers to a log group whose name starts with aws-waf-logs-; only what it blocked or counted. The group
        # is retained with the stack: its name ends in the stack's own suffix, so creating the stack again after a
        # delete does not collide with what the deleted one left (a fixed name did).
        log_name = retained_name(self, f"aws-waf-logs-{name}")
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
                    resource_name=self.logs.log_group_name,
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
        rules: list[dict[str, object]] = [
            {
                "Name": "RatePerClientAddress",
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
                "Name": "KeyRequired",
                "Action": {"Block": {"CustomResponse": {"ResponseCode": 401, "CustomResponseBodyKey": "unauthorized"}}},
                "Statement": {
                    "AndStatement": {
                        "Statements": [
                            _regex({"UriPath": {}}, authenticated_path(self.stage_name), "URL_DECODE"),
                            # no well-formed x-api-key, and either a malformed one (the authorizer reads it
                            # first) or no well-formed Bearer
                            {"NotStatement": {"Statement": _key_match("x-api-key", KEY_FORMAT)}},
                            {
                                "OrStatement": {
                                    "Statements": [
                                        _present("x-api-key"),
                                        {"NotStatement": {"Statement": _key_match("authorization", KEY_FORMAT)}},
                                    ]
                                }
                            },
                        ]
                    }
                },
                "VisibilityConfig": _visibility("KeyRequired"),
            },
        ]
        for tier in PLAN_TIERS:
            for header in KEY_HEADERS:
                name = f"Rate{tier.name.capitalize()}Key{'Bearer' if header == 'authorization' else 'Header'}"
                rules.append(
                    {
                        "Name": name,
                        "Action": block_429,
                        "Statement": {
                            "RateBasedStatement": {
                                "Limit": TIER_KEY_LIMITS[tier.name],
                                "EvaluationWindowSec": KEY_WINDOW_SECONDS,
                                "AggregateKeyType": "CUSTOM_KEYS",
                                "CustomKeys": [
                                    {
                                        "Header": {
                                            "Name": header,
                                            "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
                                        }
                                    }
                                ],
                                "ScopeDownStatement": _key_match(header, tier_key_pattern(tier.name)),
                            }
                        },
                        "VisibilityConfig": _visibility(name),
                    }
                )
        rules += [
            {
                "Name": "BodyUnderLambdaLimit",
                "Action": {
                    "Block": {"CustomResponse": {"ResponseCode": 413, "CustomResponseBodyKey": "payload_too_large"}}
                },
                # One rule, both refusals (each rule is a monthly fee): a length over the limit, or a body whose
                # length WAF cannot know (it inspects a body's first kilobytes only; Body's OversizeHandling MATCH makes
                # a longer one count as present)
                "Statement": {
                    "OrStatement": {
                        "Statements": [
                            _regex({"SingleHeader": {"Name": "content-length"}}, at_least(BODY_LIMIT_BYTES + 1)),
                            {
                                "AndStatement": {
                                    "Statements": [
                                        _has_body(),
                                        {"NotStatement": {"Statement": _present("content-length")}},
                                    ]
                                }
                            },
                        ]
                    }
                },
                "VisibilityConfig": _visibility("BodyUnderLambdaLimit"),
            },
            _managed(
                "AWSManagedRulesCommonRuleSet",
                overrides=[{"Name": rule, "ActionToUse": {"Count": {}}} for rule in COUNTED_COMMON_RULES],
            ),
            _managed(
                "AWSManagedRulesKnownBadInputsRuleSet",
                overrides=[{"Name": rule, "ActionToUse": {"Count": {}}} for rule in COUNTED_BAD_INPUT_RULES],
            ),
        ]
        assert len(rules) == RULE_COUNT
        return [{**rule, "Priority": priority} for priority, rule in enumerate(rules, start=1)]


def _regex(field: dict[str, object], pattern: str, transformation: str = "NONE") -> dict[str, object]:
    return {
        "RegexMatchStatement": {
            "RegexString": pattern,
            "FieldToMatch": field,
            "TextTransformations": [{"Priority": 0, "Type": transformation}],
        }
    }


def _present(header: str) -> dict[str, object]:
    """``header`` sent with a value (WAF matches no statement on a header that is absent)."""
    return {
        "SizeConstraintStatement": {
            "FieldToMatch": {"SingleHeader": {"Name": header}},
            "ComparisonOperator": "GT",
            "Size": 0,
            "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
        }
    }


def _has_body() -> dict[str, object]:
    """A request with a body: at least one byte of it (one past what WAF inspects counts too)."""
    return {
        "SizeConstraintStatement": {
            "FieldToMatch": {"Body": {"OversizeHandling": "MATCH"}},
            "ComparisonOperator": "GT",
            "Size": 0,
            "TextTransformations": [{"Priority": 0, "Type": "NONE"}],
        }
    }


def _key_match(header: str, pattern: str) -> dict[str, object]:
    """A key of ``pattern`` in ``header``: as is in ``x-api-key``, after ``Bearer`` (any case) in ``Authorization``."""
    if header == "authorization":
        return _regex({"SingleHeader": {"Name": header}}, bearer(pattern), "LOWERCASE")
    return _regex({"SingleHeader": {"Name": header}}, pattern)


def _managed(group: str, overrides: list[dict[str, object]] | None = None) -> dict[str, object]:
    statement: dict[str, object] = {"VendorName": "AWS", "Name": group}
    if overrides:
        statement["RuleActionOverrides"] = overrides
    return {
        "Name": group,
        "OverrideAction": {"None": {}},
        "Statement": {"ManagedRuleGroupStatement": statement},
        "VisibilityConfig": _visibility(group),
    }


def _visibility(name: str) -> dict[str, object]:
    return {"SampledRequestsEnabled": True, "CloudWatchMetricsEnabled": True, "MetricName": name}
