"""Test helpers: an in-process client that calls the Lambda handler with API Gateway events."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from agentmem.clock import utc_now
from agentmem.deletion.runners import LocalRunner
from agentmem.embeddings.hashing import HashingEmbedder
from agentmem.local.events import LocalContext, rest_event

EVENTS_DIR = Path(__file__).resolve().parent.parent / "events"


def inline_deletion_runner() -> LocalRunner:
    """The local runner in the calling thread, without the ASL's waits, on the installed container: each
    erasure has finished when the DELETE returns."""
    from agentmem.container import get_container
    from agentmem.deletion import steps

    return LocalRunner(
        lambda event: steps.run_step(get_container().deletion, event), background=False, sleep=lambda _: None
    )


def scope_path(app: str, user: str) -> str:
    return f"/v1/apps/{quote(app, safe='')}/users/{quote(user, safe='')}"


def text_entry(text: str, *, author: str = "user", timestamp: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"content": {"role": "user", "parts": [{"text": text}]}, "author": author}
    if timestamp:
        entry["timestamp"] = timestamp
    return entry


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]
    wire_bytes: int = 0
    """The size of the handler's answer as Lambda returns it (its JSON, ASCII-escaped)."""
    raw: str = ""

    @property
    def error_code(self) -> str | None:
        """The API's error code: the envelope's, or on ``{scope}/mcp`` the JSON-RPC error's ``data.code``."""
        if isinstance(self.body, dict) and isinstance(self.body.get("error"), dict):
            error = self.body["error"]
            if self.body.get("jsonrpc") == "2.0" and isinstance(error.get("data"), dict):
                return error["data"].get("code")
            return error.get("code")
        return None


class ApiClient:
    """Calls the handler exactly as API Gateway would (the same module Lambda loads)."""

    def __init__(self) -> None:
        from functions.api.handler import handler

        self._handler = handler

    def invoke(self, event: dict[str, Any]) -> Reply:
        result = self._handler(event, LocalContext())
        raw = result.get("body") or ""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw
        headers = dict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            headers[name] = ", ".join(values)
        return Reply(result["statusCode"], body, headers, len(json.dumps(result)), raw)

    def request(
        self,
        method: str,
        path: str,
        json_body: Any = None,
        *,
        raw_body: str | None = None,
        query: dict[str, Any] | list[tuple[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        body = raw_body if raw_body is not None else (json.dumps(json_body) if json_body is not None else None)
        query_string = urlencode(query, doseq=True) if query else ""
        return self.invoke(rest_event(method, path, query=query_string, headers=headers, body=body))

    def get(self, path: str, **kw: Any) -> Reply:
        return self.request("GET", path, **kw)

    def post(self, path: str, json_body: Any = None, **kw: Any) -> Reply:
        return self.request("POST", path, json_body, **kw)

    def put(self, path: str, json_body: Any = None, **kw: Any) -> Reply:
        return self.request("PUT", path, json_body, **kw)

    def patch(self, path: str, json_body: Any = None, **kw: Any) -> Reply:
        return self.request("PATCH", path, json_body, **kw)

    def delete(self, path: str, **kw: Any) -> Reply:
        return self.request("DELETE", path, **kw)


def load_event(name: str) -> dict[str, Any]:
    return json.loads((EVENTS_DIR / name).read_text())  # type: ignore[no-any-return]


def stored_keys(table: object) -> list[tuple[str, str]]:
    """Every (pk, sk) the store holds, sorted (to prove a rejected request wrote nothing).

    The tenant's daily usage counters are left out: metering counts every request, rejected ones
    included, and is bookkeeping of the tenant, not data of the user.
    """
    from agentmem.stores.dynamo_table import DynamoTable
    from agentmem.stores.sqlite_table import SqliteTable
    from agentmem.tenancy.metering import USAGE_SK_PREFIX

    if isinstance(table, SqliteTable):
        rows = table._connection().execute("SELECT pk, sk FROM items").fetchall()
    elif isinstance(table, DynamoTable):
        rows = []
        pages = table.client.get_paginator("scan").paginate(TableName=table.table_name, ProjectionExpression="pk, sk")
        for page in pages:
            rows += [(item["pk"]["S"], item["sk"]["S"]) for item in page["Items"]]
    else:
        raise TypeError(f"unknown table {type(table).__name__}")
    return sorted((pk, sk) for pk, sk in rows if not (pk.startswith("T#") and sk.startswith(USAGE_SK_PREFIX)))


def count_items(table: object) -> int:
    """How many items the store holds (see :func:`stored_keys`)."""
    return len(stored_keys(table))


def stream_image(item: dict[str, Any]) -> dict[str, Any]:
    """An item as a DynamoDB stream record's image in the Lambda event (JSON: Binary as base64)."""
    return {name: _stream_value(value) for name, value in item.items()}


def _stream_value(value: object) -> dict[str, object]:
    if value is None:
        return {"NULL": True}
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, bytes):
        return {"B": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return {"L": [_stream_value(v) for v in value]}
    return {"S": str(value)}


def make_plan(*arguments: str, env: dict[str, str] | None = None) -> str:
    """What `make -n` would run from the repository root, printed as a top-level make prints it: when the
    suite itself runs under `make test`, the inherited MAKELEVEL and MAKEFLAGS would otherwise add
    "make[1]: Entering/Leaving directory" lines around the plan."""
    import os
    import subprocess

    inherited = {k: v for k, v in (env or os.environ).items() if k not in {"MAKELEVEL", "MAKEFLAGS", "MFLAGS"}}
    return subprocess.run(
        ["make", "--no-print-directory", "-n", *arguments],
        cwd=EVENTS_DIR.parent,
        env=inherited,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def execution_status_change(described: dict[str, Any]) -> dict[str, Any]:
    """The event EventBridge delivers for a Step Functions execution's last status change, as AWS documents it
    (events/redrive_execution_failed.json), with the values of ``described`` (a DescribeExecution answer)."""
    import uuid
    from datetime import UTC, datetime

    def millis(moment: datetime | None) -> int | None:
        return int(moment.timestamp() * 1000) if moment else None

    sample = load_event("redrive_execution_failed.json")
    return {
        **sample,
        "id": str(uuid.uuid4()),
        "time": (described.get("stopDate") or datetime.now(UTC)).isoformat(),
        "resources": [described["executionArn"]],
        "detail": {
            **sample["detail"],
            "executionArn": described["executionArn"],
            "stateMachineArn": described["stateMachineArn"],
            "name": described["name"],
            "status": described["status"],
            "startDate": millis(described.get("startDate")),
            "stopDate": millis(described.get("stopDate")),
            "input": described["input"],
            "output": described.get("output"),
            "error": described.get("error"),
            "cause": described.get("cause"),
        },
    }


class Clock:
    """The time a container reads (extraction's triggers and retries), as a test moves it: the wall clock until
    :meth:`hold`, then a moment that only :meth:`advance` moves. A test that needs "before the idle trigger" then
    "after it" says so, however slowly the machine runs. Released, it follows the wall clock again but never
    goes back before the moment it was held at."""

    def __init__(self, now: datetime | None = None) -> None:
        self.now = now
        self._floor: datetime | None = None

    def __call__(self) -> datetime:
        if self.now is not None:
            return self.now
        wall = utc_now()
        return wall if self._floor is None or wall >= self._floor else self._floor

    def hold(self) -> None:
        self.now = self()

    def advance(self, seconds: float) -> None:
        self.now = self() + timedelta(seconds=seconds)

    def release(self) -> None:
        self._floor, self.now = self(), None


class ArmedEmbedder(HashingEmbedder):
    """The hashing embedder, counting its calls; once armed (``action``), its next call first runs ``action`` to
    the end in another thread: another request landing exactly while this one is between its read and its write."""

    def __init__(self, dimension: int) -> None:
        super().__init__(dimension)
        self.calls = 0
        self.action: Callable[[], None] | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        action, self.action = self.action, None
        if action is not None:
            worker = threading.Thread(target=action)
            worker.start()
            worker.join(timeout=60)
        return super().embed(texts)
