"""API keys bound to one tenant (app): create (shown once), list, revoke, resolve."""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.clock import format_timestamp, utc_now
from agentmem.errors import NotFound, Unauthorized
from agentmem.keys import tenant_partition, validate_id
from agentmem.stores.table import Condition, Item, Put, Table, query_all

KEY_PREFIX = "amk_"
TENANT_SK = "TENANT"
KEY_SK_PREFIX = "KEY#"
LOOKUP_SK = "K"
ACTIVE = "active"
REVOKED = "revoked"
KEYS_CREATED = ("K#", "CREATED")
"""An item written before the first key of any app: the store holds keys (a local server with none
configured then requires them)."""
MISSING_KEY = (
    "an API key is required: send it as an x-api-key header or as Authorization: Bearer <key> "
    "(keys: agentmem keys create --app <app>)"
)


_BEARER = re.compile(r"^Bearer\s+(\S+)\s*$", re.IGNORECASE)


def presented_key(headers: Mapping[str, Any] | None) -> str | None:
    """The key a request carries: ``x-api-key``, or else ``Authorization: Bearer <key>`` (as MCP clients send it)."""
    lowered = {str(k).lower(): v for k, v in (headers or {}).items()}
    key = lowered.get("x-api-key")
    if key:
        return str(key)
    match = _BEARER.match(str(lowered.get("authorization") or ""))
    return match.group(1) if match else None


def hash_key(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8", "surrogatepass")).hexdigest()


def lookup_partition(key_hash: str) -> str:
    return f"K#{key_hash}"


def registry_partition(app: str) -> str:
    """Where the tenant's record (quota, usage-plan key, status) and its key records live: ``K#T#<app>``, an
    operator partition like the key lookups (a hash has no ``#``, so the two never meet). No function role
    may write there and only the authorizer may read it (infra/components/storage.py), so a compromised
    function cannot raise a tenant's quota or swap its usage-plan key. Stores written before kept them in
    ``T#<app>``: the operator's commands still list and revoke the key records there, and a tenant record
    there is not trusted (set the quota again with ``agentmem keys create --quota``)."""
    return lookup_partition(tenant_partition(app))


@dataclass(frozen=True, slots=True)
class ApiKey:
    """What the service knows about a key: never the secret itself."""

    app: str
    key_id: str
    status: str
    created_at: str
    revoked_at: str | None = None
    quota_requests_per_day: int | None = None
    usage_key: str | None = None

    @property
    def active(self) -> bool:
        return self.status == ACTIVE

    def to_json(self) -> dict[str, object]:
        return {
            "app": self.app,
            "key_id": self.key_id,
            "status": self.status,
            "created_at": self.created_at,
            "revoked_at": self.revoked_at,
        }


@dataclass(frozen=True, slots=True)
class CreatedKey:
    key: ApiKey
    secret: str
    """The API key to hand to the tenant: shown once, not recoverable."""


class TenantService:
    def __init__(self, table: Table) -> None:
        self._table = table

    def tenant(self, app: str) -> Item | None:
        """The tenant record, as the operator wrote it in the registry (never one found in ``T#<app>``, which
        functions may write)."""
        return self._table.get(registry_partition(validate_id(app, "app")), TENANT_SK)

    def ensure_tenant(self, app: str, *, quota_requests_per_day: int | None = None) -> Item:
        """The tenant record, created on first use; a given quota replaces the stored one."""
        app = validate_id(app, "app")
        existing = self.tenant(app)
        if existing is not None and quota_requests_per_day is None:
            return existing
        record: Item = dict(existing or {"pk": registry_partition(app), "sk": TENANT_SK, "app": app, "status": ACTIVE})
        record.setdefault("created_at", format_timestamp(utc_now()))
        if quota_requests_per_day is not None:
            record["quota_requests_per_day"] = int(quota_requests_per_day)
        self._table.put(record)
        return record

    def set_usage_key(self, app: str, usage_key: str) -> None:
        """Remember the API Gateway usage-plan key of the tenant (the authorizer returns it)."""
        record = dict(self.ensure_tenant(app))
        record["usage_key"] = usage_key
        self._table.put(record)

    def create_key(self, app: str, *, quota_requests_per_day: int | None = None) -> CreatedKey:
        app = validate_id(app, "app")
        tenant = self.ensure_tenant(app, quota_requests_per_day=quota_requests_per_day)
        key_id = secrets.token_hex(6)
        secret = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
        key_hash = hash_key(secret)
        created_at = format_timestamp(utc_now())
        record: Item = {
            "pk": registry_partition(app),
            "sk": KEY_SK_PREFIX + key_id,
            "key_id": key_id,
            "key_hash": key_hash,
            "status": ACTIVE,
            "created_at": created_at,
        }
        lookup: Item = {
            "pk": lookup_partition(key_hash),
            "sk": LOOKUP_SK,
            "app": app,
            "key_id": key_id,
            "status": ACTIVE,
        }
        self._table.put({"pk": KEYS_CREATED[0], "sk": KEYS_CREATED[1], "at": created_at})
        self._table.transact_write([Put(record, Condition(exists=False)), Put(lookup, Condition(exists=False))])
        return CreatedKey(self._key_from(app, record, tenant), secret)

    def holds_keys(self) -> bool:
        """Whether a key was ever created in this store (one created before the mark existed is found by a
        scan of key records: the local server asks once, at start)."""
        if self._table.get(*KEYS_CREATED) is not None:
            return True
        scan = getattr(self._table, "scan_keys", None)
        return scan is not None and next(iter(scan(KEY_SK_PREFIX)), None) is not None

    def list_keys(self, app: str) -> list[ApiKey]:
        app = validate_id(app, "app")
        tenant = self.tenant(app)
        items = query_all(self._table, registry_partition(app), KEY_SK_PREFIX)
        items += query_all(self._table, tenant_partition(app), KEY_SK_PREFIX)  # a store written before
        return [self._key_from(app, item, tenant) for item in items]

    def revoke_key(self, app: str, key_id: str) -> ApiKey:
        """Mark the key revoked (record and lookup): it answers 401 from the next request on."""
        app = validate_id(app, "app")
        record = self._table.get(registry_partition(app), KEY_SK_PREFIX + key_id) or self._table.get(
            tenant_partition(app), KEY_SK_PREFIX + key_id
        )
        if record is None:
            raise NotFound(f"no key {key_id} for this app")
        revoked = {**record, "status": REVOKED, "revoked_at": record.get("revoked_at") or format_timestamp(utc_now())}
        lookup = self._table.get(lookup_partition(str(record["key_hash"])), LOOKUP_SK)
        ops = [Put(revoked)]
        if lookup is not None:
            ops.append(Put({**lookup, "status": REVOKED}))
        self._table.transact_write(ops)
        return self._key_from(app, revoked, self.tenant(app))

    def resolve(self, api_key: str | None) -> ApiKey:
        """The active key behind a presented secret; Unauthorized when missing, unknown or revoked."""
        if not api_key:
            raise Unauthorized(MISSING_KEY)
        lookup = self._table.get(lookup_partition(hash_key(api_key)), LOOKUP_SK)
        if lookup is None or lookup.get("status") != ACTIVE:
            raise Unauthorized(
                "the API key is unknown or revoked (send a key of this app as x-api-key or Authorization: Bearer)"
            )
        app = str(lookup["app"])
        tenant = self.tenant(app)
        if tenant is not None and tenant.get("status", ACTIVE) != ACTIVE:
            raise Unauthorized("the tenant of this API key is suspended")
        return ApiKey(
            app=app,
            key_id=str(lookup["key_id"]),
            status=ACTIVE,
            created_at="",
            quota_requests_per_day=_quota(tenant),
            usage_key=_usage_key(tenant),
        )

    @staticmethod
    def _key_from(app: str, record: Item, tenant: Item | None) -> ApiKey:
        return ApiKey(
            app=app,
            key_id=str(record["key_id"]),
            status=str(record["status"]),
            created_at=str(record["created_at"]),
            revoked_at=record.get("revoked_at"),
            quota_requests_per_day=_quota(tenant),
            usage_key=_usage_key(tenant),
        )


def _quota(tenant: Item | None) -> int | None:
    value = (tenant or {}).get("quota_requests_per_day")
    return int(value) if isinstance(value, int) else None


def _usage_key(tenant: Item | None) -> str | None:
    value = (tenant or {}).get("usage_key")
    return str(value) if value else None
