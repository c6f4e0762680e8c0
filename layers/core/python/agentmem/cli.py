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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentmem", description="Long-term memory for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API on this machine")
    serve.add_argument("--host", default=os.environ.get("MEMORY_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("MEMORY_PORT", "8000")))
    serve.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    serve.add_argument("--dynamodb-endpoint", help="serve from DynamoDB at this endpoint instead")
    serve.set_defaults(run=_serve)

    table = commands.add_parser("create-table", help="create the DynamoDB table (local endpoints, tests)")
    table.add_argument("--table", default=os.environ.get("MEMORY_TABLE_NAME", "agent-memory"))
    table.add_argument("--endpoint", default=os.environ.get("MEMORY_DYNAMODB_ENDPOINT_URL"))
    table.set_defaults(run=_create_table)

    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
