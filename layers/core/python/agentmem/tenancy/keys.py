"""API keys bound to one tenant (app): create (shown once), list, revoke, resolve.

A key's secret names its tenant's plan tier: ``amk_<tier>_<key id>_<token>`` (``amk_starter_0a1b2c3d4e5f_...``),
so that the edge (the prod stage's WAF, infra/components/firewall.py) can hold each tier's rate from the key
alone, without a lookup. Keys made before tiers (``amk_<key id>_<token>``) still resolve (a key is found by its
hash, whatever its text) and count as ``DEFAULT_TIER`` at the edge. The tier that decides a request's usage plan
is the tenant record's (``TenantService.ensure_tenant``); a tenant moved to another tier gets new keys
(``agentmem keys create --tier``) and its old ones revoked, or the edge keeps counting them at the old tier.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentmem.clock import format_timestamp, utc_now
from agentmem.errors import InvalidInput, NotFound, Unauthorized
from agentmem.keys import tenant_partition, unescape, validate_id
from agentmem.stores.table import Condition, Item, Put, Table, query_all

KEY_PREFIX = "amk_"
TIERS = ("starter", "standard", "scale")
"""The plan tiers, smallest first (infra/components/throttling.py PLAN_TIERS has one usage plan for each)."""
DEFAULT_TIER = "standard"
"""The tier of a tenant or key that names none (keys and tenants made before tiers)."""
KEY_ID_HEX = 12
TOKEN_CHARS = 43
"""``secrets.token_urlsafe(32)``: 43 characters of the URL-safe alphabet."""
KEY_FORMAT = rf"^{KEY_PREFIX}(({'|'.join(TIERS)})_)?[0-9a-f]{{{KEY_ID_HEX}}}_[A-Za-z0-9_-]{{{TOKEN_CHARS}}}$"
"""Every key ``create_key`` ever made, tiered or not: anything else is not a key (the edge refuses it)."""


def tier_key_pattern(tier: str) -> str:
    """A regular expression that matches the beginning of every key counted at ``tier``, and of no other: for the
    default tier also every key made before tiers (their key id, hexadecimal, never begins with a tier's name)."""
    if tier not in TIERS:
        raise InvalidInput(f"no such tier {tier!r} (tiers: {', '.join(TIERS)})")
    named = f"({tier}_)?" if tier == DEFAULT_TIER else f"{tier}_"
    return rf"^{KEY_PREFIX}{named}[0-9a-f]{{{KEY_ID_HEX}}}_"


def key_tier(secret: str) -> str:
    """The tier a key's text names (``DEFAULT_TIER`` for a key made before tiers)."""
    for tier in TIERS:
        if secret.startswith(f"{KEY_PREFIX}{tier}_"):
            return tier
    return DEFAULT_TIER


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
    tier: str = DEFAULT_TIER
    """The tenant's plan tier (one of ``TIERS``): the authorizer passes it on as ``tier``."""

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
            "tier": self.tier,
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

    def ensure_tenant(self, app: str, *, quota_requests_per_day: int | None = None, tier: str | None = None) -> Item:
        """The tenant record, created on first use; a given quota or tier replaces the stored one."""
        app = validate_id(app, "app")
        if tier is not None:
            tier_key_pattern(tier)  # refuses an unknown tier
        existing = self.tenant(app)
        if existing is not None and quota_requests_per_day is None and (tier is None or existing.get("tier") == tier):
            return existing
        record: Item = dict(existing or {"pk": registry_partition(app), "sk": TENANT_SK, "app": app, "status": ACTIVE})
        record.setdefault("created_at", format_timestamp(utc_now()))
        if quota_requests_per_day is not None:
            record["quota_requests_per_day"] = int(quota_requests_per_day)
        if tier is not None:
            record["tier"] = tier
        self._table.put(record)
        return record

    def set_usage_key(self, app: str, usage_key: str) -> None:
        """Remember the API Gateway usage-plan key of the tenant (the authorizer returns it)."""
        record = dict(self.ensure_tenant(app))
        record["usage_key"] = usage_key
        self._table.put(record)

    def create_key(self, app: str, *, quota_requests_per_day: int | None = None, tier: str | None = None) -> CreatedKey:
        """A new key of ``app``, its secret naming the tenant's tier (``tier`` sets it; else the one stored, else
        ``DEFAULT_TIER``)."""
        app = validate_id(app, "app")
        tenant = self.ensure_tenant(app, quota_requests_per_day=quota_requests_per_day, tier=tier)
        key_id = secrets.token_hex(KEY_ID_HEX // 2)
        secret = f"{KEY_PREFIX}{_tier(tenant)}_{key_id}_{secrets.token_urlsafe(32)}"
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

    def list_all_keys(self) -> list[ApiKey]:
        """Every app's keys, app by app (``agentmem keys list --all``): a scan of the table's keys, for the
        operator's commands only (a table without a scan lists none)."""
        scan = getattr(self._table, "scan_keys", None)
        keyed = scan(KEY_SK_PREFIX) if scan is not None else ()
        apps = {app for pk, _ in keyed if (app := _app_of(pk)) is not None}
        return [key for app in sorted(apps) for key in self.list_keys(app)]

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
            tier=_tier(tenant),
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
            tier=_tier(tenant),
        )


def _app_of(partition: str) -> str | None:
    """The app whose key records a partition holds (its registry ``K#T#<app>``, or ``T#<app>`` of a store
    written before); None for any other partition."""
    tenant = partition.removeprefix(lookup_partition(""))
    prefix = tenant_partition("")
    return unescape(tenant.removeprefix(prefix)) if tenant.startswith(prefix) else None


def _tier(tenant: Item | None) -> str:
    value = (tenant or {}).get("tier")
    return str(value) if value in TIERS else DEFAULT_TIER


def _quota(tenant: Item | None) -> int | None:
    value = (tenant or {}).get("quota_requests_per_day")
    return int(value) if isinstance(value, int) else None


def _usage_key(tenant: Item | None) -> str | None:
    value = (tenant or {}).get("usage_key")
    return str(value) if value else None
