"""Tenants (apps), their API keys and their metered usage, all kept in the one table.

Layout (partition ``keys.tenant_partition(app)`` = ``T#<app>`` unless said otherwise):

| item | pk | sk | attributes |
|---|---|---|---|
| tenant record | ``K#T#<app>`` | ``TENANT`` | app, status, tier?, quota_requests_per_day, usage_key?, created_at |
| key record | ``K#T#<app>`` | ``KEY#<key_id>`` | key_id, key_hash, status, created_at, revoked_at? |
| key lookup | ``K#<sha256(key)>`` | ``K`` | app, key_id, status |
| usage counters | ``T#<app>`` | ``USAGE#<yyyy-mm-dd>`` | requests (the daily quota reads it back) |
| usage shards | ``T#<app>`` | ``USAGE#<yyyy-mm-dd>#<1..4>`` | what requests consumed (items, embeddings, units) |
| requests in flight | ``T#<app>`` | ``FLIGHT#<30-second window>`` | in_flight, ttl (admission.py) |

The secret key is shown once, when created; only its SHA-256 is stored. The lookup item lets the
authorizer resolve a presented key with one GetItem. Key lookups, tenant records and key records live in
operator partitions (``K#...``), which the operator's commands write and no function role may
(``keys.registry_partition``); stores written before kept tenant and key records in ``T#<app>``: the
operator's commands still list and revoke those keys, and a tenant record there is not trusted.
"""

from agentmem.tenancy.keys import ApiKey, CreatedKey, TenantService, hash_key
from agentmem.tenancy.metering import UsageDay, read_usage, record_usage

__all__ = ["ApiKey", "CreatedKey", "TenantService", "UsageDay", "hash_key", "read_usage", "record_usage"]
