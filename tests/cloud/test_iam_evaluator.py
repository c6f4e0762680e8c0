"""The rehearsal tier's IAM evaluator, on the rules it claims (tests/cloud/iam.py)."""

from __future__ import annotations

import pytest

from tests.cloud.iam import Policy

TABLE = "arn:aws:dynamodb:us-east-1:123456789012:table/memory"


def policy(*statements: dict[str, object]) -> Policy:
    return Policy.from_documents([{"Version": "2012-10-17", "Statement": list(statements)}])


def test_nothing_is_allowed_without_a_matching_allow() -> None:
    p = policy({"Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": TABLE})
    assert p.evaluate("dynamodb:GetItem", TABLE).allowed
    assert not p.evaluate("dynamodb:PutItem", TABLE).allowed
    assert not p.evaluate("dynamodb:GetItem", TABLE + "-other").allowed
    assert not Policy().evaluate("dynamodb:GetItem", TABLE).allowed


def test_action_wildcards_match_case_insensitively_resource_wildcards_case_sensitively() -> None:
    p = policy({"Effect": "Allow", "Action": ["dynamodb:Get*", "sqs:?endMessage"], "Resource": "arn:aws:*:table/mem*"})
    assert p.evaluate("DynamoDB:getitem", TABLE).allowed
    assert p.evaluate("sqs:SendMessage", "arn:aws:sqs:x:table/memq").allowed
    assert not p.evaluate("sqs:SSendMessage", TABLE).allowed
    assert not p.evaluate("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/Memory").allowed


def test_an_explicit_deny_wins_over_any_allow() -> None:
    p = policy(
        {"Effect": "Allow", "Action": "dynamodb:*", "Resource": "*"},
        {"Effect": "Deny", "Action": "dynamodb:Query", "Resource": TABLE},
    )
    assert p.evaluate("dynamodb:GetItem", TABLE).allowed
    decision = p.evaluate("dynamodb:Query", TABLE)
    assert not decision.allowed
    assert decision.denied_by


def test_not_action_and_not_resource() -> None:
    p = policy(
        {"Effect": "Allow", "NotAction": "dynamodb:DeleteItem", "Resource": "*"},
        {"Effect": "Deny", "Action": "*", "NotResource": [TABLE, "arn:aws:sqs:*"]},
    )
    assert p.evaluate("dynamodb:GetItem", TABLE).allowed
    assert not p.evaluate("dynamodb:DeleteItem", TABLE).allowed
    assert not p.evaluate("dynamodb:GetItem", "arn:aws:dynamodb:us-east-1:123456789012:table/x").allowed
    assert p.evaluate("sqs:SendMessage", "arn:aws:sqs:us-east-1:1:q").allowed


LEADING = {
    "Effect": "Allow",
    "Action": "dynamodb:GetItem",
    "Resource": TABLE,
    "Condition": {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["K#*", "T#*"]}},
}


def test_for_all_values_string_like_on_leading_keys() -> None:
    p = policy(LEADING)
    assert p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["K#abc"]}).allowed
    assert p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["K#abc", "T#shop"]}).allowed
    assert not p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["S#shop#ana#"]}).allowed
    assert not p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["K#abc", "S#x"]}).allowed


def test_a_condition_that_fails_makes_a_deny_not_apply_either() -> None:
    p = policy(
        {"Effect": "Allow", "Action": "dynamodb:*", "Resource": TABLE},
        {**LEADING, "Effect": "Deny", "Condition": {"ForAnyValue:StringLike": {"dynamodb:LeadingKeys": ["S#*"]}}},
    )
    assert p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["K#abc"]}).allowed
    assert not p.evaluate("dynamodb:GetItem", TABLE, {"dynamodb:LeadingKeys": ["S#shop"]}).allowed


def test_plain_operators_and_missing_keys() -> None:
    p = policy(
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*", "Condition": {"StringEquals": {"k": "v"}}}
    )
    assert p.evaluate("s3:GetObject", "arn:aws:s3:::b/o", {"k": ["v"]}).allowed
    assert not p.evaluate("s3:GetObject", "arn:aws:s3:::b/o", {"k": ["w"]}).allowed
    assert not p.evaluate("s3:GetObject", "arn:aws:s3:::b/o").allowed
    negated = policy({"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"StringNotLike": {"k": "a*"}}})
    assert negated.evaluate("s3:GetObject", "x").allowed
    assert not negated.evaluate("s3:GetObject", "x", {"k": ["abc"]}).allowed


def test_an_unknown_condition_operator_raises_instead_of_allowing() -> None:
    p = policy({"Effect": "Allow", "Action": "*", "Resource": "*", "Condition": {"NumericLessThan": {"n": "3"}}})
    with pytest.raises(ValueError, match="NumericLessThan"):
        p.evaluate("s3:GetObject", "x", {"n": ["1"]})
