"""The ``agentmem`` console command: run the local server and administer the stores."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentmem import keys
    from agentmem.settings import Settings
    from agentmem.stores.table import Table

_OPTION_ENV = {
    "db": "MEMORY_SQLITE_PATH",
    "table": "MEMORY_TABLE_NAME",
    "dynamodb_endpoint": "MEMORY_DYNAMODB_ENDPOINT_URL",
    "auth": "MEMORY_AUTH",
}


def _configure(args: argparse.Namespace) -> None:
    """Turn the store options a command was given into settings, and quiet Powertools for a terminal."""
    for option, variable in _OPTION_ENV.items():
        value = getattr(args, option, None)
        if value:
            os.environ[variable] = value
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    warnings.filterwarnings("ignore", message="No application metrics to publish")


def _serve(args: argparse.Namespace) -> int:
    _configure(args)
    # One BLAS thread per worker: exact vector search is a small matrix-vector product, and BLAS threads
    # fighting the worker processes for 2 cores made it several times slower (docs/adr/0301).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # A process new to a user starts from the snapshot of its search index, written in the background.
    os.environ.setdefault("MEMORY_SNAPSHOTS", "files")

    from agentmem.container import get_container, set_container
    from agentmem.local.server import LocalServer, address_in_use, default_workers, is_loopback_name

    # The embedding engine's threads: the cores shared out among the workers (one each by default). A short
    # query or one passage is faster on one thread than two (make bench ONLY=embedding), and a worker's
    # threads would only take the cores its siblings need.
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, default_workers() // (args.workers or default_workers()))))

    if args.workers < 0:
        print("agentmem serve: --workers must be 1 or more (0: one per core)", file=sys.stderr)
        return 2
    if address_in_use(args.host, args.port):
        print(
            f"agentmem serve: port {args.port} on {args.host} is already in use (another `agentmem serve` or "
            f"`make serve`?). Stop it, or serve on another port: make serve PORT={args.port + 1} "
            f"(agentmem serve --port {args.port + 1}).",
            file=sys.stderr,
        )
        return 2
    set_container(None)
    container = get_container()
    settings = container.settings
    # Check the store once before forking (the workers open their own connections: none crosses a fork).
    if settings.store == "dynamodb" and settings.dynamodb_endpoint_url:
        from agentmem.stores.dynamo_table import DynamoTable

        table = container.table
        assert isinstance(table, DynamoTable)
        table.create()
    container.table.ping()
    auth_note = _resolve_auth(container)
    if (
        os.environ["MEMORY_AUTH"] == "none"
        and not is_loopback_name(args.host)
        and not args.allow_unauthenticated_network
    ):
        print(
            f"agentmem serve: refusing to serve {args.host} without authentication: anyone on the network could "
            "read and erase every app's data. Use --auth required (with keys from `agentmem keys create`), "
            "or pass --allow-unauthenticated-network if that is really what you want.",
            file=sys.stderr,
        )
        return 2
    if settings.store == "sqlite":  # expired entries leave the file (DynamoDB: its TTL removes them)
        from agentmem.memory.expiry import sweep

        sweep(container.table, container.memory)
    close = getattr(container.table, "close", None)
    if close is not None:
        close()
    set_container(None)
    where = settings.sqlite_path if settings.store == "sqlite" else settings.table_name
    server = LocalServer(
        args.host,
        args.port,
        args.workers or default_workers(),
        _worker_handler,
        banner=f"; {settings.store}: {where}; {auth_note}; {_model_note(settings)}",
        access_log=args.access_log,
        allowed_origins=args.allow_origin,
        read_timeout=args.read_timeout,
    )
    server.run()  # gunicorn's master: returns or exits when stopped (SIGTERM, SIGINT)
    return 0


def _model_note(settings: Any) -> str:
    """The banner's words for the extraction model: which one, and whether its endpoint takes a connection now
    (a connection only: nothing is asked, no token spent)."""
    if settings.model == "none":
        return "extraction model: none (MEMORY_MODEL; docs/extraction.md)"
    if settings.model == "bedrock":
        return f"extraction model: Bedrock {settings.model_id}"
    from agentmem.llm.openai_compatible import connection_refused

    note = f"extraction model: {settings.model_id} at {settings.model_url}"
    why = connection_refused(settings.model_url)
    return f"{note} (NOT REACHABLE now: {why}; learning waits and retries)" if why else note


def _resolve_auth(container: Any) -> str:
    """Decide the server's auth when MEMORY_AUTH (``--auth``) does not: required once the store holds an API
    key, else none. Returns the banner's words for it; a store with keys served without them is said
    loudly."""
    from agentmem.container import set_container

    explicit = os.environ.get("MEMORY_AUTH")
    holds_keys = container.tenants.holds_keys()
    if not explicit:
        os.environ["MEMORY_AUTH"] = "required" if holds_keys else "none"
        set_container(None)  # the workers' containers read it
    if os.environ["MEMORY_AUTH"] == "required":
        origin = "--auth required" if explicit else "this store holds API keys"
        return f"auth: required ({origin}): send a key as x-api-key or Authorization: Bearer"
    if holds_keys:
        print(
            "agentmem serve: WARNING: this store holds API keys, but --auth none serves every app's data to any "
            "request without one. Leave --auth unset (or --auth required) to require them.",
            file=sys.stderr,
        )
        return "auth: NONE although this store holds API keys (--auth none): no key is checked"
    return "auth: none (no API key in this store; `agentmem keys create` makes one, then restart)"


def _mcp(args: argparse.Namespace) -> int:
    """``agentmem mcp``: the MCP tools over stdio, on the embedded store or a remote API (``--url``)."""
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # stdout carries the protocol only: anything else printed goes to stderr
    from agentmem.keys import UserRef
    from agentmem.mcp import stdio

    if args.print_config:
        sys.stdout = protocol_out
        config = _desktop_config(args)
        print(json.dumps(config, indent=2, ensure_ascii=False))
        store = _named_store(config["mcpServers"]["memory"]["args"])
        if store is not None and not os.path.exists(store):
            print(
                f"agentmem mcp: there is no store at {store} yet, and the entry refuses to start until there is one: "
                "`make serve` in the repository makes it, --db names the file your server uses, or add --create to "
                "the entry's args to start a new, empty store there.",
                file=sys.stderr,
            )
        return 0
    if args.url:
        answer = stdio.remote(stdio.endpoint_url(args.url, args.app, args.user, args.project), args.api_key)
    else:
        _configure(args)
        missing = _missing_store()
        if missing is not None and not args.create:
            print(
                f"agentmem mcp: there is no store at {missing}. Give --db the file your server uses (`make serve` "
                f"keeps it in .data/memory.db of the repository: an absolute path works from any directory), "
                "or pass --create to start a new, empty one there.",
                file=sys.stderr,
            )
            return 2
        from agentmem.container import get_container, set_container
        from agentmem.errors import MemoryServiceError
        from agentmem.mcp.protocol import McpServer

        set_container(None)
        try:
            scope = UserRef.of(args.app, args.user).scope(args.project)
            answer = stdio.embedded(McpServer(get_container(), scope))
        except MemoryServiceError as exc:
            print(f"agentmem mcp: {exc.message}", file=sys.stderr)
            return 2
    with contextlib.suppress(KeyboardInterrupt):
        stdio.serve(answer, sys.stdin, protocol_out)
    return 0


def _missing_store() -> str | None:
    """The absolute path of the embedded store the settings name, when that file does not exist (None when it
    does, or the store is not a SQLite file)."""
    from agentmem.settings import get_settings

    get_settings.cache_clear()
    settings = get_settings()
    if settings.store != "sqlite" or settings.sqlite_path == ":memory:":
        return None
    path = os.path.abspath(settings.sqlite_path)
    return None if os.path.exists(path) else path


def _desktop_config(args: argparse.Namespace) -> dict[str, Any]:
    """A ``claude_desktop_config.json`` entry that starts this very command from any directory: the
    executable and the store by absolute paths (an API's URL as given, its key from MEMORY_API_KEY)."""
    launcher = os.path.abspath(sys.argv[0]) if os.path.basename(sys.argv[0]) == "agentmem" else None
    command, prefix = (launcher, []) if launcher else (sys.executable, ["-m", "agentmem.cli"])
    options = ["mcp", "--app", args.app, "--user", args.user]
    if args.project:
        options += ["--project", args.project]
    server: dict[str, Any] = {"command": command}
    if args.url:
        options += ["--url", args.url]
        server["env"] = {"MEMORY_API_KEY": args.api_key or "amk_..."}
    elif args.dynamodb_endpoint:
        options += ["--dynamodb-endpoint", args.dynamodb_endpoint]
    else:
        options += ["--db", _desktop_store(args.db or os.environ.get("MEMORY_SQLITE_PATH"))]
    server["args"] = [*prefix, *options]
    return {"mcpServers": {"memory": server}}


def _desktop_store(given: str | None) -> str:
    """The store the entry names, by absolute path: the one given; else the store `make serve` keeps in the
    clone this command runs from (.data/memory.db of the repository), from whatever directory it is run;
    else .data/memory.db here (a package installed outside a clone)."""
    if given:
        return os.path.abspath(given)
    folders = Path(__file__).resolve().parents  # <clone>/layers/core/python/agentmem/cli.py
    root = folders[4] if len(folders) > 4 else None
    if root is not None and (root / "Makefile").is_file() and (root / "requirements-serve.txt").is_file():
        return str(root / ".data" / "memory.db")
    return os.path.abspath(os.path.join(".data", "memory.db"))


def _named_store(options: Sequence[str]) -> str | None:
    return options[options.index("--db") + 1] if "--db" in options else None


def _worker_handler() -> Any:
    """In each worker process: its own container, warmed like a Lambda init (the model loads now)."""
    from agentmem import in_flight
    from agentmem.api.app import lambda_handler
    from agentmem.container import get_container, set_container

    set_container(None)
    container = get_container()
    settings = container.settings
    # The workers share the store: an erasure any of them runs waits only for the user's requests in flight.
    identity = in_flight.store_identity(
        settings.store, settings.sqlite_path, settings.table_name, settings.dynamodb_endpoint_url
    )
    in_flight.track(in_flight.UserLocks.for_store(identity))
    container.table.ping()
    container.memory.health()
    if container.learns_locally:  # extraction's pending work, after a restart too (docs/extraction.md)
        container.local_extraction.resume()
    return lambda_handler


def _create_table(args: argparse.Namespace) -> int:
    from agentmem.stores.dynamo_table import DynamoTable

    DynamoTable(args.table, endpoint_url=args.endpoint).create()
    print(f"table {args.table} ready")
    return 0


def _keys(args: argparse.Namespace) -> int:
    """``agentmem keys create|list|revoke``: tenant API keys in the configured store."""
    from agentmem.container import get_container, set_container
    from agentmem.errors import MemoryServiceError

    _configure(args)
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


def _admin_container(args: argparse.Namespace) -> Any:
    _configure(args)
    from agentmem.container import get_container, set_container

    set_container(None)
    return get_container()


def _sweep(args: argparse.Namespace) -> int:
    from agentmem.memory.expiry import sweep

    container = _admin_container(args)
    print(f"removed {sweep(container.table, container.memory)} expired entries")
    return 0


def _create_index(args: argparse.Namespace) -> int:
    container = _admin_container(args)
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


def _reindex(args: argparse.Namespace) -> int:
    from agentmem.keys import UserRef
    from agentmem.vectors.indexing import reindex

    if bool(args.app) != bool(args.user):
        print("give both --app and --user, or neither (everything)", file=sys.stderr)
        return 2
    container = _admin_container(args)
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


def _replay_index_failures(args: argparse.Namespace) -> int:
    """``agentmem replay-index-failures --bucket B``: the users the indexer's given-up batches name, each rebuilt
    from the table (docs/deploy.md's runbook); ``--delete`` removes each object once its users are rebuilt."""
    import json

    import boto3

    from agentmem.keys import UserRef
    from agentmem.vectors.failures import users_named
    from agentmem.vectors.indexing import reindex

    container = _admin_container(args)
    if container.vector_index is None:
        print("no vector index is configured: set MEMORY_EMBEDDER and MEMORY_OPENSEARCH_ENDPOINT", file=sys.stderr)
        return 2
    s3 = boto3.client("s3")
    keys = [
        item["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=args.bucket)
        for item in page.get("Contents", [])
    ]
    rebuilt: set[UserRef] = set()
    for key in keys:
        record = json.loads(s3.get_object(Bucket=args.bucket, Key=key)["Body"].read())
        for user in sorted(users_named(record) - rebuilt, key=lambda u: (u.app, u.user)):
            reindex(container.table, container.vector_index, container.embedder, user=user)
            rebuilt.add(user)
        if args.delete:
            s3.delete_object(Bucket=args.bucket, Key=key)
    print(f"replayed {len(keys)} failed batches: {len(rebuilt)} users rebuilt from the table")
    return 0


def _erasures(args: argparse.Namespace) -> int:
    """``agentmem erasures list|retry --table T --state-machine ARN``: the accepted erasures no re-drive will
    finish (their latest attempt failed, timed out or was aborted and they still have work), and the retry of
    one (its next attempt now; docs/deploy.md's runbook)."""
    os.environ["MEMORY_STORE"] = "dynamodb"
    from agentmem.deletion.redrive import failed_erasures, retry
    from agentmem.deletion.runners import StepFunctionsRunner

    container = _admin_container(args)
    runner = StepFunctionsRunner(args.state_machine, region_name=container.settings.aws_region)
    if args.erasures_command == "list":
        failed = failed_erasures(runner, container.table)
        for execution in failed:
            print(
                f"{execution.deletion_id}\tapp={execution.app}\tattempt={execution.attempt}\t"
                f"{execution.status}\t{execution.stopped_at or ''}\t{execution.error or ''}"
            )
        print(f"{len(failed)} erasures need a retry", file=sys.stderr)
        return 0
    try:
        started = retry(runner, container.table, args.deletion_id)
    except ValueError as refused:
        print(str(refused), file=sys.stderr)
        return 1
    print(f"erasure {started.deletion_id}: attempt {started.attempt} started")
    return 0


def _erasures_since(args: argparse.Namespace) -> int:
    """``agentmem erasures since TIME``: the receipts of the erasures a copy of the table taken at TIME predates
    (ended at or after it, or not ended); with ``--restored-db``/``--restored-table``, the user of each that the
    restored store still holds (an erasure it holds as ended is in the copy already); with ``--erase``, erase those
    users there (docs/erasure.md, "After restoring a backup")."""
    from agentmem.clock import format_timestamp, parse_timestamp
    from agentmem.deletion import receipts
    from agentmem.settings import Settings

    def refuse(why: str) -> int:
        print(f"agentmem erasures since: {why}", file=sys.stderr)
        return 2

    try:
        since = parse_timestamp(args.time)
    except ValueError:
        return refuse(f"{args.time!r} is not an RFC 3339 time with a zone (2026-06-01T03:00:00Z)")
    if args.erase and not (args.restored_db or args.restored_table):
        return refuse("--erase needs the restored store (--restored-db or --restored-table)")
    _configure(args)
    settings = Settings.from_env()
    running = _StoreName("dynamodb", args.table) if args.table else _StoreName.file(settings.sqlite_path)
    restored_name = None
    if args.restored_table:
        restored_name = _StoreName("dynamodb", args.restored_table)
    elif args.restored_db:
        restored_name = _StoreName.file(args.restored_db)
    if restored_name == running:
        return refuse("the restored store is the running one: erasing again there would erase what users wrote since")
    for name in (running, restored_name):
        if name is not None and name.kind == "sqlite" and not os.path.exists(name.name):
            return refuse(f"there is no store at {name.name}")
    live = running.open(settings)
    restored = restored_name.open(settings) if restored_name is not None else None
    try:
        found = receipts.receipts_since(live, since)
        ended = receipts.ended_in(restored, found) if restored is not None else set()
        unknown = [r for r in found if r.deletion_id not in ended]
        held = receipts.users_held(restored, settings.resolved_receipt_key(), unknown) if restored is not None else {}
        for receipt in found:
            columns = [
                receipt.deletion_id,
                f"app={receipt.app}",
                receipt.status,
                f"started={receipt.started_at}",
                f"finished={receipt.finished_at or '-'}",
                f"user_hash={receipt.user_hash}",
            ]
            if receipt.deletion_id in ended:
                columns.append("ended in the restored store")
            elif restored is not None:
                user = held.get(receipt.deletion_id)
                columns.append(f"user={user.user}" if user is not None else "not in the restored store")
            print("\t".join(columns))
        targets = sorted(set(held.values()), key=lambda u: (u.app, u.user))
        summary = f"{len(found)} erasures ended since {format_timestamp(since)} or have not ended"
        if restored is not None:
            summary += f"; the restored store holds {len(targets)} of their users"
            if unknown and not held:
                summary += " (if it should hold some: is MEMORY_RECEIPT_KEY the deployment's key?)"
        print(summary, file=sys.stderr)
        if args.erase and restored is not None:
            return _erase_again(restored, settings, targets)
        return 0
    finally:
        for table in (live, restored):
            close = getattr(table, "close", None)
            if close is not None:
                close()


@dataclass(frozen=True)
class _StoreName:
    """Which store a command reads: a SQLite file (``kind`` ``sqlite``, its absolute path) or a DynamoDB table."""

    kind: str
    name: str

    @classmethod
    def file(cls, path: str) -> _StoreName:
        return cls("sqlite", os.path.abspath(path))

    def open(self, settings: Settings) -> Table:
        if self.kind == "dynamodb":
            from agentmem.stores.dynamo_table import DynamoTable

            return DynamoTable(self.name, endpoint_url=settings.dynamodb_endpoint_url, region_name=settings.aws_region)
        from agentmem.stores.sqlite_table import SqliteTable

        return SqliteTable(self.name)


def _erase_again(table: Table, settings: Settings, targets: Sequence[keys.UserRef]) -> int:
    """Erase each user of ``targets`` from the restored ``table`` in this process (the workflow interpreted inline, as
    ``make serve`` runs it), touching nothing else: no vector index and no snapshots (they belong to the running
    deployment, which erased the user already), and no drain (nothing serves the restored table)."""
    from agentmem.deletion import steps
    from agentmem.deletion.runners import LocalRunner, start_erasure
    from agentmem.deletion.service import DeletionService

    service = DeletionService(
        table, receipt_key=settings.resolved_receipt_key(), batch_size=settings.deletion_batch_size, drain_seconds=0
    )
    runner = LocalRunner(lambda event: steps.run_step(service, event), background=False)
    failed = 0
    for user in targets:
        started = start_erasure(service, runner, user)
        status = service.status(user, started.deletion_id)
        counts = " ".join(f"{name}={count}" for name, count in status["deleted"].items())
        print(f"erased again\tapp={user.app}\tuser={user.user}\t{started.deletion_id}\t{status['status']}\t{counts}")
        failed += status["status"] != "SUCCEEDED"
    print(f"{len(targets) - failed} users erased again in the restored store, {failed} failed", file=sys.stderr)
    return 1 if failed else 0


def _tune_engine(args: argparse.Namespace) -> int:
    from agentmem.embeddings.engine import tune

    try:
        path, what = tune()
    except ImportError:
        print("the local embedding model is not installed (pip install 'agentmem[local]')", file=sys.stderr)
        return 0 if args.if_possible else 2
    print(f"agentmem tune-engine: {what}", file=sys.stderr)
    return 0 if path is not None or args.if_possible else 1


def main(argv: Sequence[str] | None = None) -> int:
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
    serve.set_defaults(run=_serve)

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
    mcp.set_defaults(run=_mcp)

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
        sub.set_defaults(run=_keys)

    create_index = commands.add_parser(
        "create-index",
        help="create the OpenSearch vector index (once per deployment; engine: MEMORY_OPENSEARCH_ENGINE)",
    )
    create_index.add_argument("--dimension", type=int, help="vector size (default: the configured embedder's)")
    create_index.set_defaults(run=_create_index)

    sweeper = commands.add_parser("sweep", help="delete expired entries from the SQLite store (DynamoDB: TTL does it)")
    sweeper.add_argument("--db", help="SQLite file of the embedded store (MEMORY_SQLITE_PATH)")
    sweeper.set_defaults(run=_sweep)

    rebuild = commands.add_parser("reindex", help="rebuild the vector index from the table (one user or everything)")
    rebuild.add_argument("--app", help="the tenant app of the one user to rebuild")
    rebuild.add_argument("--user", help="the one user to rebuild")
    rebuild.add_argument("--re-embed", action="store_true", help="also re-embed entries of another model")
    rebuild.set_defaults(run=_reindex)

    replay = commands.add_parser(
        "replay-index-failures",
        help="rebuild from the table every user named by a stream batch the indexer gave up on (its S3 bucket)",
    )
    replay.add_argument("--bucket", required=True, help="the indexer's failure bucket (IndexerFailuresBucket output)")
    replay.add_argument("--delete", action="store_true", help="delete each failure record once it is replayed")
    replay.set_defaults(run=_replay_index_failures)

    erasures = commands.add_parser(
        "erasures",
        help="list the accepted erasures that failed for good and retry one (Step Functions); list those a restored "
        "backup predates and erase their users again",
    )
    erasures_commands = erasures.add_subparsers(dest="erasures_command", required=True)
    failed = erasures_commands.add_parser("list", help="erasures whose latest attempt failed and still have work")
    again = erasures_commands.add_parser("retry", help="start an erasure's next attempt now")
    again.add_argument("deletion_id")
    for sub in (failed, again):
        sub.add_argument("--table", required=True, help="the stack's table (TableName output)")
        sub.add_argument("--state-machine", required=True, help="the erasure workflow (DeletionStateMachineArn output)")
        sub.set_defaults(run=_erasures)
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
    since.set_defaults(run=_erasures_since)

    tuner = commands.add_parser(
        "tune-engine", help="build the local model's engine for this CPU (checked against the shipped build)"
    )
    tuner.add_argument(
        "--if-possible", action="store_true", help="exit 0 when no tuned build can be made (the shipped one is used)"
    )
    tuner.set_defaults(run=_tune_engine)

    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
