"""Backups outside the account (prod): AWS Backup copies the table, every day, into a vault of another account.

Point-in-time recovery (the table's own) restores within the account, which an account compromised or closed
takes with it. In prod a daily AWS Backup of the table goes to a vault here (encrypted with the data key, kept
35 days) and, with ``-c backup_copy_vault=<vault ARN in another account>``, a copy to that vault (kept 90 days);
the data key lets that account use it through AWS Backup only. Without the context the synth warns: the backup
then stays in the account.

The vault is locked (AWS Backup Vault Lock, compliance mode): no recovery point can be deleted before the plan's
35 days, nor the vault while it holds one, by anyone, the account's root included, once the lock's grace of
:data:`LOCK_GRACE` after the first deploy has passed (until then ``aws backup delete-backup-vault-lock-configuration``
removes it). Alarms on failed backup and copy jobs and on a day without a completed backup:
infra/components/operations.py.

One-time settings outside this stack (docs/deploy.md): AWS Backup's cross-account backup enabled in the
organization, DynamoDB's advanced AWS Backup features enabled in this account (they make the vault's key encrypt
the copy), and the destination vault's access policy admitting copies from this account.
"""

from __future__ import annotations

import re

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_backup as backup
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_events as events
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from infra.components.naming import retained_name

KEPT_HERE = Duration.days(35)
KEPT_THERE = Duration.days(90)
LOCK_GRACE = Duration.days(3)
"""How long after it is first set the vault's lock can still be removed (AWS's shortest grace for compliance mode):
time to undo a wrong first deploy. After it the lock, and its minimum retention, can no longer change."""
START_WINDOW = Duration.hours(1)
"""The daily job starts within an hour of 03:00 UTC (AWS Backup's default is 8 hours): the alarm on a day without a
completed backup can then wait a day and a few hours, not a day and eight (infra/components/operations.py)."""
_VAULT_ARN = re.compile(r"^arn:aws[a-z-]*:backup:[a-z0-9-]+:\d{12}:backup-vault:[A-Za-z0-9_.-]+$")


def check_copy_vault(arn: str) -> str:
    if not _VAULT_ARN.match(arn):
        raise ValueError(f"context backup_copy_vault must be a backup vault ARN (arn:aws:backup:...), not {arn!r}")
    return arn


class Backups(Construct):
    def __init__(
        self, scope: Construct, construct_id: str, *, table: dynamodb.ITable, key: kms.Key, copy_vault: str | None
    ) -> None:
        super().__init__(scope, construct_id)
        # The lock's minimum is what the plan keeps here: a job whose recovery point would be kept less fails (and
        # alarms) instead of making a copy that could be deleted early.
        # Retained with the stack, so named apart from what a deleted stack of the same name left: CloudFormation
        # requires a name, and the one CDK derives from the construct path collided on a re-create.
        self.vault = backup.BackupVault(
            self,
            "Vault",
            backup_vault_name=retained_name(self, "agentmem-backups"),
            encryption_key=key,
            removal_policy=RemovalPolicy.RETAIN,
            lock_configuration=backup.LockConfiguration(min_retention=KEPT_HERE, changeable_for=LOCK_GRACE),
        )
        self.copy_vault = copy_vault
        """The other account's vault each backup is copied to (None: no copy)."""
        copies = []
        if copy_vault is not None:
            copies.append(
                backup.BackupPlanCopyActionProps(
                    destination_backup_vault=backup.BackupVault.from_backup_vault_arn(self, "CopyVault", copy_vault),
                    delete_after=KEPT_THERE,
                )
            )
            account = check_copy_vault(copy_vault).split(":")[4]
            key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.AccountPrincipal(account)],
                    actions=["kms:Decrypt", "kms:DescribeKey", "kms:CreateGrant"],
                    resources=["*"],
                    conditions={"StringEquals": {"kms:ViaService": f"backup.{Stack.of(self).region}.amazonaws.com"}},
                )
            )
        else:
            Annotations.of(self).add_warning_v2(
                "agentmem:backup-in-account",
                "no -c backup_copy_vault: the table's backups stay in this account (docs/deploy.md)",
            )
        self.plan = backup.BackupPlan(self, "Plan", backup_vault=self.vault)
        self.plan.add_rule(
            backup.BackupPlanRule(
                rule_name="Daily",
                schedule_expression=events.Schedule.cron(hour="3", minute="0"),
                start_window=START_WINDOW,
                delete_after=KEPT_HERE,
                copy_actions=copies,
            )
        )
        self.selection = self.plan.add_selection("Table", resources=[backup.BackupResource.from_dynamo_db_table(table)])
