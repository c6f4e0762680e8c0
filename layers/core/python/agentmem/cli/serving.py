"""``agentmem serve`` (the local server, its banner and its workers) and ``agentmem mcp`` (the MCP tools over
stdio, and the Claude Desktop entry that starts them)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentmem.cli.store_options import configure


def serve(args: argparse.Namespace) -> int:
    configure(args)
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


def mcp(args: argparse.Namespace) -> int:
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
        configure(args)
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
    folders = Path(__file__).resolve().parents  # <clone>/layers/core/python/agentmem/cli/serving.py
    root = folders[5] if len(folders) > 5 else None
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
