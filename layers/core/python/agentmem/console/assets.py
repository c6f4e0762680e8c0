"""Serve the console's files as API Gateway proxy results: ``GET /console`` and ``GET /console/<file>``.

- Only files of this package's folder with a known suffix are served. The allow-list is built at the first
  request (a cold start reads no file); a request path is looked up in it as a key, never joined to a file
  system path, so no path (``..``, ``%2e%2e``, ``\\``, an absolute path) reaches another file.
- No auth: the files hold no data; the page's API calls carry the user's key and meet the API's own rules.
- Every answer carries a strict Content-Security-Policy (scripts, styles and fetches from this origin
  only, no inline script or style, no framing), ``nosniff`` and ``no-referrer``.
- ``/console`` is the page. Its assets are linked relatively (``console/app.js``), so the page works under
  a stage prefix (``/prod/console``) as locally; ``/console/`` redirects to ``/console`` to keep that true.
"""

from __future__ import annotations

import hashlib
import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any
from urllib.parse import urlencode

PREFIX = "/console"
INDEX = "index.html"
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-cache",
}


@dataclass(frozen=True, slots=True)
class Asset:
    body: str
    content_type: str
    etag: str


_catalog: dict[str, Asset] | None = None
_catalog_lock = threading.Lock()


def is_console_path(path: str) -> bool:
    return path == PREFIX or path.startswith(PREFIX + "/")


def catalog() -> Mapping[str, Asset]:
    """Every servable file, by its path under ``/console/`` (``app.js``, ``vendor/cytoscape.min.js``)."""
    global _catalog
    if _catalog is None:
        with _catalog_lock:
            if _catalog is None:
                found: dict[str, Asset] = {}
                _collect(resources.files(__package__), "", found)
                _catalog = found
    return _catalog


def _collect(folder: Traversable, prefix: str, out: dict[str, Asset]) -> None:
    for child in folder.iterdir():
        if child.is_dir():
            if not child.name.startswith(("_", ".")):
                _collect(child, f"{prefix}{child.name}/", out)
            continue
        suffix = "." + child.name.rsplit(".", 1)[-1] if "." in child.name else ""
        content_type = CONTENT_TYPES.get(suffix)
        if content_type is None:
            continue
        data = child.read_bytes()
        etag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
        out[prefix + child.name] = Asset(data.decode("utf-8"), content_type, etag)


def _error(status: int, code: str, message: str, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    from agentmem.budget import dumps
    from agentmem.models.responses import error_body

    headers = {"Content-Type": "application/json", **SECURITY_HEADERS, **(extra or {})}
    body = dumps(error_body(code, message, str(uuid.uuid4())))
    return {"statusCode": status, "headers": headers, "body": body, "isBase64Encoded": False}


def _query_string(event: Mapping[str, Any]) -> str:
    multi = event.get("multiValueQueryStringParameters") or {
        k: [v] for k, v in (event.get("queryStringParameters") or {}).items()
    }
    return urlencode(multi, doseq=True)


def _header(event: Mapping[str, Any], name: str) -> str | None:
    for key, value in (event.get("headers") or {}).items():
        if key.lower() == name:
            return str(value)
    return None


def respond(event: Mapping[str, Any]) -> dict[str, Any]:
    """The proxy result for one API Gateway REST event whose path is under ``/console``."""
    method = str(event.get("httpMethod") or "GET").upper()
    path = str(event.get("path") or "")
    if method not in ("GET", "HEAD"):
        return _error(405, "method_not_allowed", "the console's files are read with GET", {"Allow": "GET, HEAD"})
    if path == PREFIX + "/":
        query = _query_string(event)
        location = "../console" + (f"?{query}" if query else "")
        return {"statusCode": 308, "headers": {"Location": location, **SECURITY_HEADERS}, "body": ""}
    name = INDEX if path == PREFIX else path[len(PREFIX) + 1 :]
    asset = catalog().get(name) if is_console_path(path) else None
    if asset is None:
        return _error(404, "not_found", "no such file in the console; open /console")
    headers = {"Content-Type": asset.content_type, "ETag": asset.etag, **SECURITY_HEADERS}
    if _header(event, "if-none-match") == asset.etag:
        return {"statusCode": 304, "headers": headers, "body": "", "isBase64Encoded": False}
    return {"statusCode": 200, "headers": headers, "body": asset.body, "isBase64Encoded": False}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    """The console function's Lambda entry point (and the local server's for ``/console`` paths)."""
    return respond(event)
