"""The ``agentmem`` command line: its commands, their options and the function each runs."""

from __future__ import annotations

import argparse
import os

from agentmem.cli import admin, erasures, serving


def build_parser() -> argparse.ArgumentParser:
    """The ``agentmem`` parser: each command's options, and (``run``) the function that runs it."""
    from agentmem.tenancy.keys import DEFAULT_TIER, TIERS

    parser = argparse.ArgumentParser(prog="agentmem", description="Long-term memory for AI agents")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve the API on this machine")
    serve.add_argument("--host", default=os.environ.get("MEMORY_HOST", "127.0.0.1"))
    serve.add_argument("--port", type=int, default=int(os.environ.get("MEMORY_PORT", "8000")))
    serve.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    serve.add_argument("--dynamodb-endpoint", help="serve from DynamoDB at this endpoint instead")
    serve.add_argument(
        "--auth",
        choices=["none", "required"],
        help="require a key of the path's app, as x-api-key or Authorization: Bearer (MEMORY_AUTH; "
        "default: required once the store holds a key, else none)",
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=0,
        help="worker processes, each serving one request at a time (default 0: one per core)",
    )
    serve.add_argument(
        "--allow-unauthenticated-network",
        action="store_true",
        help="serve a non-loopback --host with --auth none (every app's data open to the network)",
    )
    serve.add_argument("--access-log", action="store_true", help="print one line per request (worker pid first)")
    serve.add_argument(
        "--read-timeout",
        type=float,
        default=15.0,
        metavar="SECONDS",
        help="answer 408 and close when a request has not fully arrived this long after its first byte (default 15)",
    )
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a web origin (e.g. http://localhost:3000) whose pages may call this server; repeatable. Others: 403",
    )
    serve.set_defaults(run=serving.serve)

    mcp = commands.add_parser("mcp", help="serve the MCP tools over stdio (for clients that launch a command)")
    mcp.add_argument("--app", required=True, help="the tenant app")
    mcp.add_argument("--user", required=True, help="the end user whose memory the tools use")
    mcp.add_argument("--project", help="scope every tool to this project (default: the user's global scope)")
    mcp.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    mcp.add_argument("--dynamodb-endpoint", help="use DynamoDB at this endpoint instead")
    mcp.add_argument("--url", help="use a remote memory API instead of the embedded store (e.g. https://.../dev)")
    mcp.add_argument("--api-key", default=os.environ.get("MEMORY_API_KEY"), help="the key for --url (MEMORY_API_KEY)")
    mcp.add_argument(
        "--create", action="store_true", help="start a new, empty store when --db names no file (else: refused)"
    )
    mcp.add_argument(
        "--print-config",
        action="store_true",
        help="print a Claude Desktop configuration that runs this command, by absolute paths, and exit",
    )
    mcp.set_defaults(run=serving.mcp)

    table = commands.add_parser("create-table", help="create the DynamoDB table (local endpoints, tests)")
    table.add_argument("--table", default=os.environ.get("MEMORY_TABLE_NAME", "agent-memory"))
    table.add_argument("--endpoint", default=os.environ.get("MEMORY_DYNAMODB_ENDPOINT_URL"))
    table.set_defaults(run=admin.create_table)

    keys = commands.add_parser("keys", help="create, list and revoke tenant API keys")
    keys_commands = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_commands.add_parser("create", help="create a key bound to one app (shown once)")
    create.add_argument("--quota", type=int, help="requests per day for the app (429 beyond)")
    create.add_argument(
        "--usage-plan-id",
        help="also give the tenant a key in this API Gateway usage plan (cloud quotas; default: "
        "MEMORY_USAGE_PLAN_ID_<TIER> with --tier, else MEMORY_USAGE_PLAN_ID)",
    )
    create.add_argument(
        "--tier",
        choices=TIERS,
        help=f"the tenant's plan tier, named in the key (default: the tenant's, else {DEFAULT_TIER}); with no "
        "--usage-plan-id its plan comes from MEMORY_USAGE_PLAN_ID_<TIER>",
    )
    listing = keys_commands.add_parser("list", help="the keys of one app, or of every app (never the secrets)")
    revoke = keys_commands.add_parser("revoke", help="revoke a key: 401 from then on")
    revoke.add_argument("key_id")
    for sub in (create, revoke):
        sub.add_argument("--app", required=True)
    which = listing.add_mutually_exclusive_group(required=True)
    which.add_argument("--app")
    which.add_argument("--all", action="store_true", help="every app's keys (a scan of the table)")
    for sub in (create, listing, revoke):
        sub.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
        sub.add_argument("--table", help="DynamoDB table (MEMORY_TABLE_NAME; set MEMORY_STORE=dynamodb)")
        sub.add_argument("--dynamodb-endpoint", help="a DynamoDB-compatible endpoint")
        sub.set_defaults(run=admin.keys)

    create_index = commands.add_parser(
        "create-index",
        help="create the OpenSearch vector index (once per deployment; engine: MEMORY_OPENSEARCH_ENGINE)",
    )
    create_index.add_argument("--dimension", type=int, help="vector size (default: the configured embedder's)")
    create_index.set_defaults(run=admin.create_index)

    sweeper = commands.add_parser("sweep", help="delete expired entries from the SQLite store (DynamoDB: TTL does it)")
    sweeper.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    sweeper.set_defaults(run=admin.sweep)

    rebuild = commands.add_parser("reindex", help="rebuild the vector index from the table (one user or everything)")
    rebuild.add_argument("--app", help="the tenant app of the one user to rebuild")
    rebuild.add_argument("--user", help="the one user to rebuild")
    rebuild.add_argument("--re-embed", action="store_true", help="also re-embed entries of another model")
    rebuild.set_defaults(run=admin.reindex)

    replay = commands.add_parser(
        "replay-index-failures",
        help="rebuild from the table every user named by a stream batch the indexer gave up on (its S3 bucket)",
    )
    replay.add_argument("--bucket", required=True, help="the indexer's failure bucket (IndexerFailuresBucket output)")
    replay.add_argument("--delete", action="store_true", help="delete each failure record once it is replayed")
    replay.set_defaults(run=admin.replay_index_failures)

    erasures_parser = commands.add_parser(
        "erasures",
        help="list the accepted erasures that failed for good and retry one (Step Functions); list those a restored "
        "backup predates and erase their users again",
    )
    erasures_commands = erasures_parser.add_subparsers(dest="erasures_command", required=True)
    failed = erasures_commands.add_parser("list", help="erasures whose latest attempt failed and still have work")
    again = erasures_commands.add_parser("retry", help="start an erasure's next attempt now")
    again.add_argument("deletion_id")
    for sub in (failed, again):
        sub.add_argument("--table", required=True, help="the stack's table (TableName output)")
        sub.add_argument("--state-machine", required=True, help="the erasure workflow (DeletionStateMachineArn output)")
        sub.set_defaults(run=erasures.list_or_retry)
    since = erasures_commands.add_parser(
        "since",
        help="the erasures a restored backup predates (ended at or after TIME, or not ended), the users the restored "
        "store still holds for them, and (--erase) their erasure there",
    )
    since.add_argument("time", help="when the backup was taken (RFC 3339 with a zone: 2026-06-01T03:00:00Z)")
    since.add_argument("--db", help="the running SQLite store (MEMORY_SQLITE_PATH)")
    since.add_argument("--table", help="the running DynamoDB table (TableName output)")
    since.add_argument("--restored-db", help="the restored SQLite store")
    since.add_argument("--restored-table", help="the table the backup was restored to")
    since.add_argument("--dynamodb-endpoint", help="a DynamoDB-compatible endpoint (both tables)")
    since.add_argument(
        "--erase", action="store_true", help="erase those users in the restored store (nothing else is touched)"
    )
    since.set_defaults(run=erasures.since)

    tuner = commands.add_parser(
        "tune-engine", help="build the local model's engine for this CPU (checked against the shipped build)"
    )
    tuner.add_argument(
        "--if-possible", action="store_true", help="exit 0 when no tuned build can be made (the shipped one is used)"
    )
    tuner.set_defaults(run=admin.tune_engine)

    return parser
