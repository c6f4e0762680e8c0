"""Tenants (apps), their API keys and their metered usage, all kept in the one table.

Layout (partition ``keys.tenant_partition(app)`` = ``T#<app>`` unless said otherwise):

| item | pk | sk | attributes |
|---|---|---|---|
| tenant record | ``T#<app>`` | ``TENANT`` | app, status, quota_requests_per_day, usage_key?, created_at |
| key record | ``T#<app>`` | ``KEY#<key_id>`` | key_id, key_hash, status, created_at, revoked_at? |
| key lookup | ``K#<sha256(key)>`` | ``K`` | app, key_id, status |
| usage counters | ``T#<app>`` | ``USAGE#<yyyy-mm-dd>`` | requests, items_stored, embeddings |

The secret key is shown once, when created; only its SHA-256 is stored. The lookup item lets the
authorizer resolve a presented key with one GetItem.
"""

from agentmem.tenancy.keys import ApiKey, CreatedKey, TenantService, hash_key
from agentmem.tenancy.metering import UsageDay, read_usage, record_usage

__all__ = ["ApiKey", "CreatedKey", "TenantService", "UsageDay", "hash_key", "read_usage", "record_usage"]
