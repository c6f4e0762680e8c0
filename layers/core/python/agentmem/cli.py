"""The ``agentmem`` console command: run the local server and administer the stores."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any


def _serve(args: argparse.Namespace) -> int:
    if args.db:
        os.environ["MEMORY_SQLITE_PATH"] = args.db
    if args.dynamodb_endpoint:
        os.environ["MEMORY_DYNAMODB_ENDPOINT_URL"] = args.dynamodb_endpoint
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    # One BLAS thread per request: exact vector search is a small matrix-vector product, and BLAS threads
    # fighting the server's request threads for 2 cores made it several times slower (docs/adr/0301).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

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
    container.memory.health()  # loads the local embedding model now, not on the first request
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


def _admin_container() -> Any:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from agentmem.container import get_container, set_container

    set_container(None)
    return get_container()


def _create_index(args: argparse.Namespace) -> int:
    container = _admin_container()
    index = container.vector_index
    if index is None or not hasattr(index, "create_index"):
        print("no OpenSearch vector index is configured (MEMORY_EMBEDDER, MEMORY_OPENSEARCH_ENDPOINT)", file=sys.stderr)
        return 2
    dimension = args.dimension or container.embedder.dimension
    created = index.create_index(dimension, engine=args.engine)
    print(f"index {index.index} {'created' if created else 'already exists'} ({dimension} dimensions, {args.engine})")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    from agentmem.keys import UserRef
    from agentmem.vectors.indexing import reindex

    if bool(args.app) != bool(args.user):
        print("give both --app and --user, or neither (everything)", file=sys.stderr)
        return 2
    container = _admin_container()
    if container.vector_index is None:
        print("no vector index is configured: set MEMORY_EMBEDDER (and MEMORY_OPENSEARCH_ENDPOINT)", file=sys.stderr)
        return 2
    user = UserRef.of(args.app, args.user) if args.app else None
    report = reindex(container.table, container.vector_index, container.embedder, user=user, re_embed=args.re_embed)
    print(
        f"reindexed {report.entries} entries in {report.scopes} scopes: {report.indexed} indexed, "
        f"{report.embedded} embedded, {report.removed} old vectors removed"
    )
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

    create_index = commands.add_parser("create-index", help="create the OpenSearch vector index (once per deployment)")
    create_index.add_argument("--dimension", type=int, help="vector size (default: the configured embedder's)")
    create_index.add_argument("--engine", choices=["lucene", "faiss"], default="lucene")
    create_index.set_defaults(run=_create_index)

    rebuild = commands.add_parser("reindex", help="rebuild the vector index from the table (one user or everything)")
    rebuild.add_argument("--app", help="the tenant app of the one user to rebuild")
    rebuild.add_argument("--user", help="the one user to rebuild")
    rebuild.add_argument("--re-embed", action="store_true", help="also re-embed entries of another model")
    rebuild.set_defaults(run=_reindex)

    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
