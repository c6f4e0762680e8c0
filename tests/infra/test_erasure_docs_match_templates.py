"""docs/erasure.md's table of where a user's data lives says what the templates make (issue 42, point 7).

The table "Where a user's data lives, and for how long after an erasure" is read from the document: each row
names a copy, which stacks deploy it (*deployed*), how long it keeps what it holds (the bold figure of *how
long*, ``dev X, prod Y`` where the stages differ) and whether the erasure reaches it. For each synthesized stack
(prod with OpenSearch, extraction and a backup copy vault; dev with the table backend, without extraction:
tests/synthesis.py) every row is checked against the template:

- the copy is in the template exactly when its *deployed* condition holds for the stack's options;
- its figure is the template's: the backup plan rule's ``DeleteAfterDays`` and its copy action's, the buckets'
  ``ExpirationInDays``, the queues' ``MessageRetentionPeriod`` (SQS's 4 days when unset), point-in-time
  recovery (on, and its window), the log groups' ``RetentionInDays``; where the figure is an AWS service's own
  (the stream's 24 hours, X-Ray's 30 days, Step Functions' 90 days, WAF's 3 hours of samples, the backup of a
  deleted table), what the template turns on that makes the copy;
- "erasure reaches it" is what the erasure steps' role may do: delete the table's items, the bucket's objects,
  the collection's documents.

Every row is of a copy at least one of the two stacks deploys, and every copy the test knows is a row: a copy
added to the templates or the table, or a figure changed on either side, fails here until both say the same.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.infra.conftest import DEV_TABLE, PROD_OPENSEARCH, Synthesized, resources

DOC = Path(__file__).resolve().parents[2] / "docs" / "erasure.md"
HEADING = "## Where a user's data lives, and for how long after an erasure"
COLUMNS = ["copy", "deployed", "what it holds about the user", "how long", "erasure reaches it"]
STACKS = (PROD_OPENSEARCH, DEV_TABLE)
SQS_DEFAULT_RETENTION = 4 * 86_400
"""What SQS keeps a message for when the queue does not say (``MessageRetentionPeriod`` unset)."""

Template = dict[str, Any]
Options = Any


# -- the document ---------------------------------------------------------------------------------------------


def documented_rows() -> dict[str, dict[str, str]]:
    """The table's rows, by copy: each a mapping of :data:`COLUMNS` to the cell's text."""
    text = DOC.read_text(encoding="utf-8")
    assert HEADING in text, f"docs/erasure.md has no section {HEADING!r}"
    section = text.split(HEADING, 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header == COLUMNS, header
    rows: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == len(COLUMNS), f"a row of {len(cells)} cells: {line}"
        row = dict(zip(COLUMNS, cells, strict=True))
        assert row["copy"] not in rows, f"two rows for {row['copy']}"
        rows[row["copy"]] = row
    return rows


FIGURE = re.compile(r"^\*\*(?P<figure>[^*]+)\*\*")
STAGED = re.compile(r"^dev (?P<dev>.+), prod (?P<prod>.+)$")


def documented_figure(row: dict[str, str], stage: str) -> str:
    """The bold figure that opens the *how long* cell, for ``stage`` when it says ``dev X, prod Y``."""
    found = FIGURE.match(row["how long"])
    assert found, f"{row['copy']}: *how long* must open with its figure in bold, not {row['how long']!r}"
    staged = STAGED.match(found["figure"])
    return staged[stage] if staged else found["figure"]


# -- the templates ------------------------------------------------------------------------------------------


def days(count: int) -> str:
    return f"{count} day" if count == 1 else f"{count} days"


def duration(seconds: int) -> str:
    if seconds % 86_400 == 0:
        return days(seconds // 86_400)
    assert seconds % 3600 == 0, seconds
    return f"{seconds // 3600} hours"


def target(value: Any) -> str:
    """The logical id a ``Ref`` or ``Fn::GetAtt`` names."""
    if "Ref" in value:
        return str(value["Ref"])
    return str(value["Fn::GetAtt"][0])


def one(template: Template, kind: str) -> tuple[str, dict[str, Any]] | None:
    found = resources(template, kind)
    assert len(found) <= 1, f"more than one {kind}: {sorted(found)}"
    return next(((name, r["Properties"]) for name, r in found.items()), None)


def table(template: Template) -> tuple[str, dict[str, Any]]:
    found = one(template, "AWS::DynamoDB::Table")
    assert found is not None
    return found


def function(template: Template, handler: str) -> str | None:
    """The logical id of the function whose handler lives in ``functions/<handler>``."""
    found = [
        name
        for name, f in resources(template, "AWS::Lambda::Function").items()
        if f["Properties"]["Handler"].split(".", 1)[0] == handler
    ]
    return found[0] if found else None


def mappings(template: Template, handler: str) -> list[dict[str, Any]]:
    """The event source mappings of a function."""
    name = function(template, handler)
    return [
        m["Properties"]
        for m in resources(template, "AWS::Lambda::EventSourceMapping").values()
        if name is not None and target(m["Properties"]["FunctionName"]) == name
    ]


def queue_retention(template: Template, logical: str) -> str:
    queue = resources(template, "AWS::SQS::Queue")[logical]["Properties"]
    return duration(int(queue.get("MessageRetentionPeriod", SQS_DEFAULT_RETENTION)))


def bucket_expiry(template: Template, logical: str) -> str:
    bucket = resources(template, "AWS::S3::Bucket")[logical]["Properties"]
    assert "VersioningConfiguration" not in bucket, f"{logical}: a versioned bucket keeps what is deleted"
    (rule,) = bucket["LifecycleConfiguration"]["Rules"]
    assert rule["Status"] == "Enabled"
    return days(int(rule["ExpirationInDays"]))


def log_retention(template: Template, logical: str) -> str:
    group = resources(template, "AWS::Logs::LogGroup")[logical]["Properties"]
    assert "RetentionInDays" in group, f"{logical}: a log group without retention keeps everything"
    return days(int(group["RetentionInDays"]))


def pitr(template: Template) -> dict[str, Any] | None:
    spec = table(template)[1].get("PointInTimeRecoverySpecification") or {}
    return spec if spec.get("PointInTimeRecoveryEnabled") else None


def backup_rule(template: Template) -> dict[str, Any] | None:
    """The backup plan's one rule, when a selection of the plan holds the table."""
    plan = one(template, "AWS::Backup::BackupPlan")
    if plan is None:
        return None
    table_id = table(template)[0]
    selections = [
        s["Properties"]["BackupSelection"]
        for s in resources(template, "AWS::Backup::BackupSelection").values()
        if target(s["Properties"]["BackupPlanId"]) == plan[0]
    ]
    assert any(target(r) == table_id for s in selections for r in s.get("Resources", [])), (
        "the backup plan does not select the table"
    )
    (rule,) = plan[1]["BackupPlan"]["BackupPlanRule"]
    return rule


def backup_here(template: Template) -> str | None:
    rule = backup_rule(template)
    return None if rule is None else days(int(rule["Lifecycle"]["DeleteAfterDays"]))


def backup_there(template: Template) -> str | None:
    rule = backup_rule(template)
    copies = (rule or {}).get("CopyActions") or []
    if not copies:
        return None
    (copy,) = copies
    return days(int(copy["Lifecycle"]["DeleteAfterDays"]))


def stream(template: Template) -> str | None:
    spec = table(template)[1].get("StreamSpecification")
    if spec is None:
        return None
    assert spec["StreamViewType"] == "NEW_AND_OLD_IMAGES"
    return "24 hours"  # DynamoDB Streams keeps a record 24 hours


def indexer_failures_bucket(template: Template) -> str | None:
    found = mappings(template, "indexer")
    if not found:
        return None
    (mapping,) = found
    return target(mapping["DestinationConfig"]["OnFailure"]["Destination"])


def snapshots_bucket(template: Template) -> str | None:
    output = template.get("Outputs", {}).get("SnapshotsBucket")
    return None if output is None else target(output["Value"])


def queue_mapping(template: Template, handler: str) -> dict[str, Any] | None:
    """The mapping of ``handler``'s function that reads a queue of the stack."""
    queues = resources(template, "AWS::SQS::Queue")
    found = [m for m in mappings(template, handler) if target(m["EventSourceArn"]) in queues]
    assert len(found) <= 1
    return found[0] if found else None


def queue_of(template: Template, handler: str) -> str | None:
    mapping = queue_mapping(template, handler)
    return None if mapping is None else target(mapping["EventSourceArn"])


def dead_letters_of(template: Template, handler: str) -> str | None:
    queue = queue_of(template, handler)
    if queue is None:
        return None
    policy = resources(template, "AWS::SQS::Queue")[queue]["Properties"]["RedrivePolicy"]
    return target(policy["deadLetterTargetArn"])


def extraction_stream_failures(template: Template) -> str | None:
    table_id = table(template)[0]
    found = [m for m in mappings(template, "extraction") if target(m["EventSourceArn"]) == table_id]
    if not found:
        return None
    (mapping,) = found
    return target(mapping["DestinationConfig"]["OnFailure"]["Destination"])


def undelivered_redrives(template: Template) -> str | None:
    redrive = function(template, "redrive")
    for rule in resources(template, "AWS::Events::Rule").values():
        for rule_target in rule["Properties"].get("Targets", []):
            if target(rule_target["Arn"]) == redrive:
                return target(rule_target["DeadLetterConfig"]["Arn"])
    return None


def function_and_workflow_logs(template: Template) -> str:
    groups = {
        target(f["Properties"]["LoggingConfig"]["LogGroup"])
        for f in resources(template, "AWS::Lambda::Function").values()
    }
    for machine in resources(template, "AWS::StepFunctions::StateMachine").values():
        config = machine["Properties"]["LoggingConfiguration"]
        assert config["IncludeExecutionData"] is False
        groups |= {target(d["CloudWatchLogsLogGroup"]["LogGroupArn"]) for d in config["Destinations"]}
    (figure,) = {log_retention(template, group) for group in groups}
    return figure


def stage(template: Template) -> dict[str, Any]:
    found = one(template, "AWS::ApiGateway::Stage")
    assert found is not None
    return found[1]


def access_logs(template: Template) -> str:
    setting = stage(template)["AccessLogSetting"]
    assert "$context.path" not in setting["Format"]  # the route template only: no path values
    return log_retention(template, target(setting["DestinationArn"]))


def execution_logs(template: Template) -> str | None:
    settings = stage(template).get("MethodSettings", [])
    if all(s.get("LoggingLevel", "OFF") == "OFF" for s in settings):
        return None
    assert all(s.get("DataTraceEnabled") is False for s in settings), "data traces log request and response bodies"
    named = [
        name
        for name, g in resources(template, "AWS::Logs::LogGroup").items()
        if "API-Gateway-Execution-Logs" in json.dumps(g["Properties"].get("LogGroupName", ""))
    ]
    return log_retention(template, named[0]) if named else "no expiry"


def waf_logs(template: Template) -> str | None:
    logging = one(template, "AWS::WAFv2::LoggingConfiguration")
    if logging is None:
        return None
    destinations = json.dumps(logging[1]["LogDestinationConfigs"])

    def named(logical: str, group: dict[str, Any]) -> bool:
        """The destination names the group: by reference, or by its name written out."""
        name = group["Properties"].get("LogGroupName")
        return f'"{logical}"' in destinations or (isinstance(name, str) and name in destinations)

    (group,) = [logical for logical, g in resources(template, "AWS::Logs::LogGroup").items() if named(logical, g)]
    return log_retention(template, group)


def waf_samples(template: Template) -> str | None:
    acl = one(template, "AWS::WAFv2::WebACL")
    if acl is None or not acl[1]["VisibilityConfig"]["SampledRequestsEnabled"]:
        return None
    return "3 hours"  # WAF shows the samples of the last 3 hours


def api_environment(template: Template) -> dict[str, Any]:
    api = function(template, "api")
    assert api is not None
    return resources(template, "AWS::Lambda::Function")[api]["Properties"]["Environment"]["Variables"]


def maybe(logical: Callable[[Template], str | None], figure: Callable[[Template, str], str]) -> Callable[..., Any]:
    return lambda t: None if (found := logical(t)) is None else figure(t, found)


FIGURES: dict[str, Callable[[Template], str | None]] = {
    "the table": lambda t: "until erased",
    "the receipts": lambda t: "no expiry",
    "point-in-time recovery": lambda t: (
        None if (s := pitr(t)) is None else days(int(s.get("RecoveryPeriodInDays", 35)))
    ),
    "the backup of a deleted table": lambda t: None if pitr(t) is None else "35 days",
    "AWS Backup, this account's vault": backup_here,
    "AWS Backup, the other account's vault": backup_there,
    "the table's stream": stream,
    "the indexer's failure bucket": maybe(indexer_failures_bucket, bucket_expiry),
    "the OpenSearch collection": lambda t: "until erased" if one(t, "AWS::OpenSearchServerless::Collection") else None,
    "OpenSearch Serverless's snapshots": lambda t: (
        "the service's" if one(t, "AWS::OpenSearchServerless::Collection") else None
    ),
    "the snapshots bucket": maybe(snapshots_bucket, bucket_expiry),
    "the snapshot requests queue": maybe(lambda t: queue_of(t, "snapshots"), queue_retention),
    "the snapshot requests' dead-letter queue": maybe(lambda t: dead_letters_of(t, "snapshots"), queue_retention),
    "extraction's wake queue": maybe(lambda t: queue_of(t, "extraction"), queue_retention),
    "extraction's wake dead-letter queue": maybe(lambda t: dead_letters_of(t, "extraction"), queue_retention),
    "extraction's stream failure queue": maybe(extraction_stream_failures, queue_retention),
    "the re-drive's undelivered events": maybe(undelivered_redrives, queue_retention),
    "Step Functions execution history": lambda t: (
        "90 days"  # a Standard workflow's, after it ends
        if all(
            m["Properties"]["StateMachineType"] == "STANDARD"
            for m in resources(t, "AWS::StepFunctions::StateMachine").values()
        )
        else None
    ),
    "the functions' and the workflow's logs": function_and_workflow_logs,
    "the API's access logs": access_logs,
    "API Gateway's execution logs": execution_logs,
    "the WAF's logs": waf_logs,
    "the WAF's sampled requests": waf_samples,
    "X-Ray traces": lambda t: "30 days" if stage(t).get("TracingEnabled") else None,  # X-Ray keeps a trace 30 days
    "Amazon Bedrock": lambda t: "not kept" if api_environment(t).get("MEMORY_EMBEDDER") == "bedrock" else None,
}
"""Per documented copy: its figure in a template, or None when the template does not make it."""

DEPLOYED: dict[str, Callable[[Options], bool]] = {
    "always": lambda o: True,
    "prod": lambda o: o.production,
    "prod, with a copy vault": lambda o: o.production and o.backup_copy_vault is not None,
    "OpenSearch backend": lambda o: o.search_backend == "opensearch",
    "table backend": lambda o: o.search_backend == "table",
    "extraction on": lambda o: o.extraction_model is not None,
    "OpenSearch or extraction": lambda o: o.reads_the_stream,
}
"""The words of the *deployed* column, as conditions on a stack's options (infra/stack.py DeploymentOptions)."""


# -- what the erasure steps may delete ------------------------------------------------------------------------


def deletion_statements(template: Template) -> list[dict[str, Any]]:
    steps = function(template, "deletion")
    assert steps is not None
    role = target(resources(template, "AWS::Lambda::Function")[steps]["Properties"]["Role"])
    return [
        statement
        for policy in resources(template, "AWS::IAM::Policy").values()
        if any(target(r) == role for r in policy["Properties"]["Roles"])
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]
        if statement.get("Effect", "Allow") == "Allow"
    ]


def may(template: Template, action: str, logical: str) -> bool:
    """Whether the erasure steps' role is allowed ``action`` on a resource of ``logical`` (or its objects)."""
    for statement in deletion_statements(template):
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        named = json.dumps(statement["Resource"])
        if action in actions and f'"{logical}"' in named:
            return True
    return False


def may_write_documents(template: Template) -> bool:
    steps = function(template, "deletion")
    assert steps is not None
    role = target(resources(template, "AWS::Lambda::Function")[steps]["Properties"]["Role"])
    for policy in resources(template, "AWS::OpenSearchServerless::AccessPolicy").values():
        parts = policy["Properties"]["Policy"]["Fn::Join"][1]
        for before, part in itertools.pairwise(parts):
            if isinstance(part, dict) and target(part) == role:
                permissions = before.rsplit('"Permission":', 1)[1]
                return "aoss:WriteDocument" in permissions
    return False


REACHES: dict[str, Callable[[Template], bool]] = {
    "the table": lambda t: may(t, "dynamodb:BatchWriteItem", table(t)[0]),
    "the indexer's failure bucket": lambda t: may(t, "s3:DeleteObject", indexer_failures_bucket(t) or "-"),
    "the snapshots bucket": lambda t: may(t, "s3:DeleteObject", snapshots_bucket(t) or "-"),
    "the OpenSearch collection": may_write_documents,
}
"""Copies whose *erasure reaches it* (``yes`` or ``no``) is checked against the erasure steps' grants."""


# -- the checks ------------------------------------------------------------------------------------------------


def test_every_documented_copy_is_one_the_test_checks() -> None:
    rows = documented_rows()
    assert sorted(rows) == sorted(FIGURES), "a copy documented and not checked, or checked and not documented"
    for name, row in rows.items():
        assert row["deployed"] in DEPLOYED, f"{name}: deployed {row['deployed']!r} is none of {sorted(DEPLOYED)}"
        assert row["erasure reaches it"].split(":", 1)[0].split(" ", 1)[0] in ("yes", "no", "nothing", "it"), name


@pytest.mark.parametrize("stack", STACKS)
def test_each_copy_and_its_figure_are_the_templates(synthesized: Synthesized, stack: str) -> None:
    template = synthesized.templates[stack]
    options = synthesized.stacks[stack].options
    for name, row in documented_rows().items():
        figure = FIGURES[name](template)
        # Then the copy is made exactly where the document says
        deployed = DEPLOYED[row["deployed"]](options)
        assert (figure is not None) == deployed, f"{stack}: {name} is {'not ' if deployed else ''}in the template"
        # And it keeps what it holds as long as the document says
        if figure is not None:
            assert figure == documented_figure(row, options.stage), f"{stack}: {name}"


def test_every_copy_is_checked_in_at_least_one_stack(synthesized: Synthesized) -> None:
    for name in documented_rows():
        assert any(FIGURES[name](synthesized.templates[stack]) is not None for stack in STACKS), name


@pytest.mark.parametrize("stack", STACKS)
def test_what_the_erasure_reaches_is_what_its_role_may_delete(synthesized: Synthesized, stack: str) -> None:
    template = synthesized.templates[stack]
    rows = documented_rows()
    for name, reaches in REACHES.items():
        if FIGURES[name](template) is None:
            continue
        said = rows[name]["erasure reaches it"].split(":", 1)[0]
        assert said in ("yes", "no"), f"{name}: {said!r}"
        assert reaches(template) == (said == "yes"), f"{stack}: {name}: the document says {said!r}"


def test_the_stage_figures_are_written_per_stage_where_the_templates_differ(synthesized: Synthesized) -> None:
    # A figure that differs between the stacks' templates (both of which make the copy) must be written
    # "dev X, prod Y": a single figure would be wrong for one of them
    for name, row in documented_rows().items():
        figures = {synthesized.stacks[s].options.stage: FIGURES[name](synthesized.templates[s]) for s in STACKS}
        if None not in figures.values() and len(set(figures.values())) > 1:
            assert STAGED.match(FIGURE.match(row["how long"])["figure"]), name
