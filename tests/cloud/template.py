"""Read a synthesized CloudFormation template the way CloudFormation would: resolve intrinsics.

``Ref``, ``Fn::GetAtt``, ``Fn::Join`` and ``Fn::Sub`` are resolved against the physical values of the
resources the rehearsal created (``Physical``) and the pseudo parameters; anything else (an intrinsic or
an attribute the tier does not model) raises, so the tier never runs on a value it made up silently.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::Region": REGION,
    "AWS::AccountId": ACCOUNT,
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::NoValue": None,
}


@dataclass
class Physical:
    """What a resource resolves to: its ``Ref`` value and its attributes."""

    ref: str
    attributes: dict[str, str] = field(default_factory=dict)


class Template:
    def __init__(self, name: str, body: Mapping[str, Any]) -> None:
        self.name = name
        self.body = body
        self.resources: Mapping[str, Mapping[str, Any]] = body["Resources"]
        self.physical: dict[str, Physical] = {}

    def of_type(self, kind: str) -> dict[str, Mapping[str, Any]]:
        return {name: r for name, r in self.resources.items() if r["Type"] == kind}

    def one(self, kind: str) -> str:
        found = list(self.of_type(kind))
        assert len(found) == 1, f"{self.name}: expected one {kind}, found {found}"
        return found[0]

    def properties(self, logical_id: str) -> Mapping[str, Any]:
        return self.resources[logical_id].get("Properties", {})

    def bind(self, logical_id: str, ref: str, **attributes: str) -> Physical:
        physical = Physical(ref, dict(attributes))
        self.physical[logical_id] = physical
        return physical

    def bind_default(self, logical_id: str) -> Physical:
        """Resources the rehearsal does not create in moto get the ARN CloudFormation would give them."""
        kind = self.resources[logical_id]["Type"]
        arn = f"arn:aws:{{}}:{REGION}:{ACCOUNT}:{{}}"
        if kind == "AWS::IAM::Role":
            return self.bind(logical_id, logical_id, Arn=f"arn:aws:iam::{ACCOUNT}:role/{logical_id}")
        if kind == "AWS::Lambda::Function":
            return self.bind(logical_id, logical_id, Arn=arn.format("lambda", f"function:{logical_id}"))
        if kind == "AWS::Lambda::Version":  # (a version CloudFormation publishes: the function's first, here)
            function = str(self.resolve(self.properties(logical_id)["FunctionName"]))
            function_arn = function if function.startswith("arn:") else arn.format("lambda", f"function:{function}")
            return self.bind(logical_id, f"{function_arn}:1", Version="1", FunctionArn=function_arn)
        if kind in ("AWS::CodeDeploy::Application", "AWS::CodeDeploy::DeploymentGroup"):  # (Ref: the name)
            return self.bind(logical_id, logical_id)
        if kind == "AWS::EC2::SecurityGroup":
            group = f"sg-{logical_id.lower()[:17]}"
            return self.bind(logical_id, group, GroupId=group)
        if kind == "AWS::Logs::LogGroup":
            return self.bind(logical_id, logical_id, Arn=arn.format("logs", f"log-group:{logical_id}:*"))
        raise KeyError(f"{self.name}: the rehearsal does not model {kind} ({logical_id})")

    def _physical(self, logical_id: str) -> Physical:
        if logical_id not in self.physical:
            if logical_id not in self.resources:
                raise KeyError(f"{self.name}: no resource {logical_id}")
            self.bind_default(logical_id)
        return self.physical[logical_id]

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, arg),) = value.items()
            if key == "Ref":
                return PSEUDO[arg] if arg in PSEUDO else self._physical(arg).ref
            if key == "Fn::GetAtt":
                logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
                attributes = self._physical(logical_id).attributes
                if attribute not in attributes:
                    raise KeyError(f"{self.name}: {logical_id}.{attribute} is not modelled")
                return attributes[attribute]
            if key == "Fn::Join":
                separator, parts = arg
                return separator.join(str(self.resolve(p)) for p in parts)
            if key == "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                return self.substitute(text, {k: self.resolve(v) for k, v in variables.items()})
            if key.startswith("Fn::"):
                raise ValueError(f"{self.name}: intrinsic {key} is not supported by the rehearsal")
        return {k: self.resolve(v) for k, v in value.items()}

    def substitute(self, text: str, variables: Mapping[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in variables:
                return str(variables[name])
            if name in PSEUDO:
                return str(PSEUDO[name])
            if "." in name:
                return str(self.resolve({"Fn::GetAtt": name.split(".", 1)}))
            return str(self.resolve({"Ref": name}))

        return re.sub(r"\$\{([^}!]+)\}", one, text)
