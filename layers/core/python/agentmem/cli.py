"""The ``agentmem`` console command: run the local server and administer the stores."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence


def _serve(args: argparse.Namespace) -> int:
    if args.db:
        os.environ["MEMORY_SQLITE_PATH"] = args.db
    if args.dynamodb_endpoint:
        os.environ["MEMORY_DYNAMODB_ENDPOINT_URL"] = args.dynamodb_endpoint
    if args.auth:
        os.environ["MEMORY_AUTH"] = args.auth
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")

    from agentmem.api.app import lambda_handler
    from agentmem.container import get_container, set_container
    from agentmem.local.server import make_server

    set_container(None)
    container = get_container()
    if container.settings.store == "dynamodb" and container.settings.dynamodb_endpoint_url:
        from agentmem.stores.dynamo_table import DynamoTable

        table = container.table
        assert isinstance(table, DynamoTable)
        table.create()
    container.table.ping()
    server = make_server(args.host, args.port, lambda_handler)
    where = container.settings.sqlite_path if container.settings.store == "sqlite" else container.settings.table_name
    print(
        f"agent memory API on http://{args.host}:{server.server_address[1]} ({container.settings.store}: {where})",
        flush=True,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _create_table(args: argparse.Namespace) -> int:
    from agentmem.stores.dynamo_table import DynamoTable

    DynamoTable(args.table, endpoint_url=args.endpoint).create()
    print(f"table {args.table} ready")
    return 0


def _store_from_args(args: argparse.Namespace) -> None:
    if args.db:
        os.environ["MEMORY_SQLITE_PATH"] = args.db
    if args.table:
        os.environ["MEMORY_TABLE_NAME"] = args.table
    if args.dynamodb_endpoint:
        os.environ["MEMORY_DYNAMODB_ENDPOINT_URL"] = args.dynamodb_endpoint


def _keys(args: argparse.Namespace) -> int:
    """``agentmem keys create|list|revoke``: tenant API keys in the configured store."""
    import json

    from agentmem.container import get_container, set_container
    from agentmem.errors import MemoryServiceError

    _store_from_args(args)
    set_container(None)
    tenants = get_container().tenants
    try:
        if args.keys_command == "create":
            created = tenants.create_key(args.app, quota_requests_per_day=args.quota)
            if args.usage_plan_id:
                tenants.set_usage_key(args.app, _usage_plan_key(args.app, args.usage_plan_id))
            print(json.dumps({**created.key.to_json(), "api_key": created.secret}, ensure_ascii=False))
            print("store this key now: it is shown once and only its hash is kept", file=sys.stderr)
        elif args.keys_command == "list":
            for key in tenants.list_keys(args.app):
                print(json.dumps(key.to_json(), ensure_ascii=False))
        else:
            print(json.dumps(tenants.revoke_key(args.app, args.key_id).to_json(), ensure_ascii=False))
    except MemoryServiceError as exc:
        print(f"agentmem keys: {exc.message}", file=sys.stderr)
        return 1
    return 0


def _usage_plan_key(app: str, usage_plan_id: str) -> str:
    """Create the tenant's API Gateway key (the usage identifier the authorizer returns) in a usage plan."""
    import secrets

    import boto3

    client = boto3.client("apigateway")
    value = secrets.token_urlsafe(30)
    key = client.create_api_key(name=f"tenant-{app}"[:128], value=value, enabled=True)
    client.create_usage_plan_key(usagePlanId=usage_plan_id, keyId=key["id"], keyType="API_KEY")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentmem", description="Long-term memory for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API on this machine")
    serve.add_argument("--host", default=os.environ.get("MEMORY_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("MEMORY_PORT", "8000")))
    serve.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    serve.add_argument("--dynamodb-endpoint", help="serve from DynamoDB at this endpoint instead")
    serve.add_argument(
        "--auth", choices=["none", "required"], help="require an x-api-key of the path's app (MEMORY_AUTH)"
    )
    serve.set_defaults(run=_serve)

    table = commands.add_parser("create-table", help="create the DynamoDB table (local endpoints, tests)")
    table.add_argument("--table", default=os.environ.get("MEMORY_TABLE_NAME", "agent-memory"))
    table.add_argument("--endpoint", default=os.environ.get("MEMORY_DYNAMODB_ENDPOINT_URL"))
    table.set_defaults(run=_create_table)

    keys = commands.add_parser("keys", help="create, list and revoke tenant API keys")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_commands.add_parser("create", help="create a key bound to one app (shown once)")
    create.add_argument("--quota", type=int, help="requests per day for the app (429 beyond)")
    create.add_argument(
        "--usage-plan-id",
        default=os.environ.get("MEMORY_USAGE_PLAN_ID"),
        help="also give the tenant a key in this API Gateway usage plan (cloud quotas)",
    )
    listing = keys_commands.add_parser("list", help="the keys of one app (never the secrets)")
    revoke = keys_commands.add_parser("revoke", help="revoke a key: 401 from then on")
    revoke.add_argument("key_id")
    for sub in (create, listing, revoke):
        sub.add_argument("--app", required=True)
        sub.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
        sub.add_argument("--table", help="DynamoDB table (MEMORY_TABLE_NAME; set MEMORY_STORE=dynamodb)")
        sub.add_argument("--dynamodb-endpoint", help="a DynamoDB-compatible endpoint")
        sub.set_defaults(run=_keys)

    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
