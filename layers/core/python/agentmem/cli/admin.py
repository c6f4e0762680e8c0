"""The operator's commands on the stores: the table (``create-table`` for DynamoDB, ``sweep`` of a SQLite file's
expired entries), tenant API keys (``keys``), the vector index (``create-index``, ``reindex``,
``replay-index-failures``) and the local model's engine (``tune-engine``)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from agentmem.cli.store_options import admin_container, configure


def create_table(args: argparse.Namespace) -> int:
    from agentmem.stores.dynamo_table import DynamoTable

    DynamoTable(args.table, endpoint_url=args.endpoint).create()
    print(f"table {args.table} ready")
    return 0


def keys(args: argparse.Namespace) -> int:
    """``agentmem keys create|list|revoke``: tenant API keys in the configured store."""
    from agentmem.container import get_container, set_container
    from agentmem.errors import MemoryServiceError

    configure(args)
    set_container(None)
    tenants = get_container().tenants
    try:
        if args.keys_command == "create":
            plan = _usage_plan_id(args.usage_plan_id, args.tier)
            created = tenants.create_key(args.app, quota_requests_per_day=args.quota, tier=args.tier)
            if plan:
                tenants.set_usage_key(args.app, _usage_plan_key(args.app, plan))
            print(json.dumps({**created.key.to_json(), "api_key": created.secret}, ensure_ascii=False), flush=True)
            # After the key's own line (flushed first: a terminal or a 2>&1 pipe shows them in this order).
            print("store this key now: it is shown once and only its hash is kept", file=sys.stderr, flush=True)
        elif args.keys_command == "list":
            for key in tenants.list_all_keys() if args.all else tenants.list_keys(args.app):
                print(json.dumps(key.to_json(), ensure_ascii=False))
        else:
            print(json.dumps(tenants.revoke_key(args.app, args.key_id).to_json(), ensure_ascii=False))
    except MemoryServiceError as exc:
        print(f"agentmem keys: {exc.message}", file=sys.stderr)
        return 1
    return 0


def _usage_plan_id(given: str | None, tier: str | None) -> str | None:
    """The usage plan a new key joins: ``--usage-plan-id``; else, with ``--tier``, ``MEMORY_USAGE_PLAN_ID_<TIER>``
    (the stack's ``UsagePlanId<Tier>`` output); else ``MEMORY_USAGE_PLAN_ID``. A tier whose plan is not given while
    another plan is refuses: the key would join a plan of another tier."""
    from agentmem.errors import InvalidInput

    if given:
        return given
    generic = os.environ.get("MEMORY_USAGE_PLAN_ID")
    if tier is None:
        return generic
    plan = os.environ.get(f"MEMORY_USAGE_PLAN_ID_{tier.upper()}")
    if plan is None and generic:
        raise InvalidInput(
            f"--tier {tier}: name its usage plan with --usage-plan-id or MEMORY_USAGE_PLAN_ID_{tier.upper()} (the "
            f"stack's UsagePlanId{tier.capitalize()} output); MEMORY_USAGE_PLAN_ID may be another tier's"
        )
    return plan


def _usage_plan_key(app: str, usage_plan_id: str) -> str:
    """Create the tenant's API Gateway key (the usage identifier the authorizer returns) in a usage plan."""
    import secrets

    import boto3

    client = boto3.client("apigateway")
    value = secrets.token_urlsafe(30)
    key = client.create_api_key(name=f"tenant-{app}"[:128], value=value, enabled=True)
    client.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
    return value


def sweep(args: argparse.Namespace) -> int:
    from agentmem.memory import expiry

    container = admin_container(args)
    print(f"removed {expiry.sweep(container.table, container.memory)} expired entries")
    return 0


def create_index(args: argparse.Namespace) -> int:
    container = admin_container(args)
    index = container.vector_index
    if index is None or not hasattr(index, "create_index"):
        print("no OpenSearch vector index is configured (MEMORY_EMBEDDER, MEMORY_OPENSEARCH_ENDPOINT)", file=sys.stderr)
        return 2
    from agentmem.errors import MemoryServiceError

    try:
        dimension = args.dimension or container.embedder.dimension
        created = index.create_index(dimension)
    except MemoryServiceError as refused:  # another size than the index's, the embedder unreachable
        print(refused.message, file=sys.stderr)
        return 2
    print(f"index {index.index} {'created' if created else 'already exists'} ({dimension} dimensions, {index.engine})")
    return 0


def reindex(args: argparse.Namespace) -> int:
    from agentmem.keys import UserRef
    from agentmem.vectors import indexing

    if bool(args.app) != bool(args.user):
        print("give both --app and --user, or neither (everything)", file=sys.stderr)
        return 2
    container = admin_container(args)
    if container.vector_index is None:
        print("no vector index is configured: set MEMORY_EMBEDDER (and MEMORY_OPENSEARCH_ENDPOINT)", file=sys.stderr)
        return 2
    user = UserRef.of(args.app, args.user) if args.app else None
    report = indexing.reindex(
        container.table, container.vector_index, container.embedder, user=user, re_embed=args.re_embed
    )
    print(
        f"reindexed {report.entries} entries in {report.scopes} scopes: {report.indexed} indexed, "
        f"{report.embedded} embedded, {report.removed} old vectors removed"
    )
    return 0


def replay_index_failures(args: argparse.Namespace) -> int:
    """``agentmem replay-index-failures --bucket B``: the users the indexer's given-up batches name, each rebuilt
    from the table (docs/deploy.md's runbook); ``--delete`` removes each object once its users are rebuilt."""
    import boto3

    from agentmem.keys import UserRef
    from agentmem.vectors import indexing
    from agentmem.vectors.failures import users_named

    container = admin_container(args)
    if container.vector_index is None:
        print("no vector index is configured: set MEMORY_EMBEDDER and MEMORY_OPENSEARCH_ENDPOINT", file=sys.stderr)
        return 2
    s3 = boto3.client("s3")
    objects = [
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket)
        for item in page.get("Contents", [])
    ]
    rebuilt: set[UserRef] = set()
    for key in objects:
        record = json.loads(s3.get_object(Bucket=args.bucket, Key=key)["Body"].read())
        for user in sorted(users_named(record) - rebuilt, key=lambda u: (u.app, u.user)):
            indexing.reindex(container.table, container.vector_index, container.embedder, user=user)
            rebuilt.add(user)
        if args.delete:
            s3.delete_object(Bucket=args.bucket, Key=key)
    print(f"replayed {len(objects)} failed batches: {len(rebuilt)} users rebuilt from the table")
    return 0


def tune_engine(args: argparse.Namespace) -> int:
    from agentmem.embeddings.engine import tune

    try:
        path, what = tune()
    except ImportError:
        print("the local embedding model is not installed (pip install 'agentmem[local]')", file=sys.stderr)
        return 0 if args.if_possible else 2
    print(f"agentmem tune-engine: {what}", file=sys.stderr)
    return 0 if path is not None or args.if_possible else 1
