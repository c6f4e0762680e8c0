"""Names of resources a stack retains when it is deleted.

A retained resource outlives its stack under the name it had: a name fixed at synth (``aws-waf-logs-agentmem-prod``,
or the one CDK derives from the construct path when CloudFormation requires a name) is then taken, and the same
stack cannot be created again. These names end in :func:`unique_suffix` instead.
"""

from __future__ import annotations

from aws_cdk import Fn, Stack
from constructs import Construct


def unique_suffix(scope: Construct) -> str:
    """The last 12 hex digits of the stack's id (``arn:...:stack/<name>/<uuid>``): CloudFormation gives every stack
    it creates a new UUID, so a stack created again after a delete names its resources apart from what the deleted
    one retained. Stable across updates of one stack."""
    uuid = Fn.select(2, Fn.split("/", Stack.of(scope).stack_id))
    return Fn.select(4, Fn.split("-", uuid))


def retained_name(scope: Construct, prefix: str) -> str:
    """``prefix`` and the stack's :func:`unique_suffix`: ``<prefix>-<12 hex digits>``."""
    return Fn.join("-", [prefix, unique_suffix(scope)])
