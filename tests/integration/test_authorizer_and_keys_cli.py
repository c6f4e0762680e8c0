"""The REQUEST authorizer Lambda and the ``agentmem keys`` console commands, on real stores."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentmem.cli import main
from agentmem.container import set_container
from agentmem.stores.sqlite_table import SqliteTable
from agentmem.stores.table import Table, query_all
from agentmem.tenancy import TenantService
from agentmem.tenancy.keys import TENANT_SK, hash_key, lookup_partition, registry_partition

METHOD_ARN = "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/GET/v1/apps/A/users/u/memories"


def authorize(api_key: str | None) -> dict[str, object]:
    from functions.authorizer.handler import handler

    headers = {"X-Api-Key": api_key} if api_key is not None else {}
    return handler({"type": "REQUEST", "methodArn": METHOD_ARN, "headers": headers}, None)


def test_authorizer_allows_the_stage_and_names_the_app(tenants: TenantService) -> None:
    # Given a key of app A with a usage-plan key recorded for the tenant
    created = tenants.create_key("A", quota_requests_per_day=1000)
    tenants.set_usage_key("A", "usage-plan-key-of-A")
    # When API Gateway asks the authorizer (header name in any case)
    answer = authorize(created.secret)
    # Then it allows every method of the stage (the answer is cached per key) and passes the app on
    statement = answer["policyDocument"]["Statement"][0]  # type: ignore[index]
    assert statement["Effect"] == "Allow"
    assert statement["Resource"] == "arn:aws:execute-api:eu-west-1:123456789012:abc123/prod/*/*"
    assert answer["context"] == {"app": "A", "key_id": created.key.key_id, "quota": 1000, "tier": "standard"}
    assert answer["usageIdentifierKey"] == "usage-plan-key-of-A"


@pytest.mark.parametrize("presented", [None, "", "amk_nope_nope"])
def test_authorizer_rejects_missing_and_unknown_keys(tenants: TenantService, presented: str | None) -> None:
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorize(presented)


def test_a_refused_key_is_counted_apart_from_the_authorizers_failures(
    tenants: TenantService, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given metrics published as Lambda publishes them (EMF lines on stdout)
    from agentmem.observability import metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics.clear_metrics()  # (with metrics off, earlier tests' refusals stayed in the buffer)
    capsys.readouterr()
    # When an unknown key is refused / Then one KeysRejected is published (the stack's authorizer-failure alarm
    # subtracts these from the function's errors, which count every refusal)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorize("amk_nope_nope")
    published = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    (emf,) = [m for m in published if "KeysRejected" in m]
    assert emf["KeysRejected"] in (1.0, [1.0])
    assert emf["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "AgentMemory"
    assert emf["service"] == "agent-memory"
    # And an accepted key publishes no refusal
    authorize(tenants.create_key("A").secret)
    assert "KeysRejected" not in capsys.readouterr().out


def test_authorizer_takes_a_bearer_token_as_mcp_clients_send_it(tenants: TenantService) -> None:
    # Given a key of app A sent as Authorization: Bearer (the MCP route's authorizer has no fixed header)
    from functions.authorizer.handler import handler

    secret = tenants.create_key("A").secret
    answer = handler(
        {"type": "REQUEST", "methodArn": METHOD_ARN, "headers": {"authorization": f"Bearer {secret}"}}, None
    )
    # Then it resolves like x-api-key; another scheme or a bare key there is refused
    assert answer["context"]["app"] == "A"
    for value in (f"Basic {secret}", secret, "Bearer "):
        with pytest.raises(Exception, match=r"^Unauthorized$"):
            handler({"type": "REQUEST", "methodArn": METHOD_ARN, "headers": {"Authorization": value}}, None)


def test_authorizer_answers_the_sample_event(tenants: TenantService) -> None:
    # Given events/authorizer_request.json (the shape `sam local invoke` and API Gateway send) with a real key
    from functions.authorizer.handler import handler
    from tests.support import load_event

    event = load_event("authorizer_request.json")
    event["headers"]["X-Api-Key"] = tenants.create_key("acme").secret
    # Then the stage is allowed for app acme
    answer = handler(event, None)
    assert answer["context"]["app"] == "acme"
    assert answer["policyDocument"]["Statement"][0]["Resource"].endswith("abc123/prod/*/*")


def test_authorizer_rejects_a_revoked_key(tenants: TenantService) -> None:
    created = tenants.create_key("A")
    tenants.revoke_key("A", created.key.key_id)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorize(created.secret)


def test_only_the_hash_of_a_key_is_stored(tenants: TenantService, table: Table) -> None:
    # Given a created key / Then no stored item holds the secret, and the lookup is by its SHA-256
    created = tenants.create_key("A")
    items = query_all(table, registry_partition("A")) + query_all(table, lookup_partition(hash_key(created.secret)))
    assert items
    assert created.secret not in json.dumps(items, default=str)


def test_the_authorizer_trusts_only_tenant_records_in_the_operators_partition(
    tenants: TenantService, table: Table
) -> None:
    # Given a key of app A whose tenant record the operator wrote (quota 1000) in the registry partition
    created = tenants.create_key("A", quota_requests_per_day=1000)
    assert table.get(registry_partition("A"), TENANT_SK) is not None
    # When something that may write the app's own partition (T#A: usage, receipts) writes a tenant record there
    table.put({"pk": "T#A", "sk": TENANT_SK, "app": "A", "status": "active", "quota_requests_per_day": 10**9})
    table.put({"pk": "T#B", "sk": TENANT_SK, "app": "B", "status": "active", "usage_key": "stolen-plan-key"})
    # Then the authorizer still answers with what the operator wrote, and B (no registry record) gets nothing
    assert authorize(created.secret)["context"]["quota"] == 1000
    other = tenants.create_key("B").secret
    assert "usageIdentifierKey" not in authorize(other)


def test_the_operator_still_lists_and_revokes_keys_of_a_store_written_before(
    tenants: TenantService, table: Table
) -> None:
    # Given a key made before tenant and key records moved to the registry: its records in T#A
    created = tenants.create_key("A", quota_requests_per_day=50)
    for sk in (TENANT_SK, f"KEY#{created.key.key_id}"):
        item = table.get(registry_partition("A"), sk)
        assert item is not None
        table.put({**item, "pk": "T#A"})
        table.delete(registry_partition("A"), sk)
    # Then the operator's commands find the key there, and a revocation takes effect; the tenant record
    # there is not trusted (functions may write T#A), so the authorizer answers without its quota
    assert [k.key_id for k in tenants.list_keys("A")] == [created.key.key_id]
    assert tenants.tenant("A") is None
    assert authorize(created.secret)["context"]["quota"] == 0
    tenants.revoke_key("A", created.key.key_id)
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        authorize(created.secret)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_keys_console_commands_create_list_and_revoke(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "memory.db")
    # The command writes the store settings to the environment: let the test restore them.
    monkeypatch.setenv("MEMORY_STORE", "sqlite")
    monkeypatch.setenv("MEMORY_SQLITE_PATH", db)
    try:
        # When a key is created / Then it is printed once, with a warning that it is not kept
        code, out, err = run_cli(capsys, "keys", "create", "--app", "acme", "--db", db)
        assert code == 0
        created = json.loads(out)
        assert created["app"] == "acme"
        assert created["api_key"].startswith("amk_")
        assert "shown once" in err
        # And listing shows the key without its secret
        code, out, _ = run_cli(capsys, "keys", "list", "--app", "acme", "--db", db)
        assert code == 0
        [listed] = [json.loads(line) for line in out.splitlines()]
        assert listed["key_id"] == created["key_id"]
        assert listed["status"] == "active"
        assert created["api_key"] not in out
        # And revoking marks it revoked, after which it no longer resolves
        code, out, _ = run_cli(capsys, "keys", "revoke", created["key_id"], "--app", "acme", "--db", db)
        assert code == 0
        assert json.loads(out)["status"] == "revoked"
        table = SqliteTable(db)
        with pytest.raises(Exception, match="unknown or revoked"):
            TenantService(table).resolve(created["api_key"])
        table.close()
        # And revoking an unknown key fails with a message, not a traceback
        code, _, err = run_cli(capsys, "keys", "revoke", "nope", "--app", "acme", "--db", db)
        assert code == 1
        assert "no key" in err
    finally:
        set_container(None)


# -- plan tiers in the key (issue 41, point 3) -------------------------------------------------------------


@pytest.mark.parametrize("tier", ["starter", "standard", "scale"])
def test_a_key_names_its_tenants_tier_and_the_authorizer_passes_it_on(tenants: TenantService, tier: str) -> None:
    import re

    from agentmem.tenancy.keys import KEY_FORMAT, TIERS, key_tier, tier_key_pattern

    # Given a tenant's key made at a tier
    created = tenants.create_key("T", tier=tier)
    # Then its text says the tier (the edge counts it there) and has the key format
    assert created.secret.startswith(f"amk_{tier}_")
    assert re.match(KEY_FORMAT, created.secret)
    assert key_tier(created.secret) == tier
    assert [t for t in TIERS if re.match(tier_key_pattern(t), created.secret)] == [tier]
    # And the tenant record keeps it, the key says it, and the authorizer passes it on
    assert tenants.tenant("T")["tier"] == tier  # type: ignore[index]
    assert created.key.tier == tenants.resolve(created.secret).tier == tier
    assert authorize(created.secret)["context"]["tier"] == tier  # type: ignore[index]
    # And a later key without a tier keeps the tenant's
    assert tenants.create_key("T").secret.startswith(f"amk_{tier}_")


def test_a_key_made_before_tiers_still_resolves_and_counts_as_the_default_tier(
    tenants: TenantService, table: Table
) -> None:
    import re

    from agentmem.tenancy.keys import DEFAULT_TIER, KEY_FORMAT, TIERS, key_tier, tier_key_pattern

    # Given a key in the format made before tiers, stored as create_key stored it then (no tier on the tenant)
    old = "amk_0a1b2c3d4e5f_" + "Zz9-_" * 8 + "abc"
    tenants.ensure_tenant("Old")
    table.put(
        {"pk": lookup_partition(hash_key(old)), "sk": "K", "app": "Old", "key_id": "0a1b2c3d4e5f", "status": "active"}
    )
    # Then it resolves, at the default tier, and the edge counts it there
    assert tenants.resolve(old).tier == DEFAULT_TIER
    assert authorize(old)["context"]["tier"] == DEFAULT_TIER  # type: ignore[index]
    assert re.match(KEY_FORMAT, old)
    assert key_tier(old) == DEFAULT_TIER
    assert [t for t in TIERS if re.match(tier_key_pattern(t), old)] == [DEFAULT_TIER]


def test_an_unknown_tier_is_refused(tenants: TenantService) -> None:
    from agentmem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="tier"):
        tenants.create_key("T", tier="gold")
    assert tenants.tenant("T") is None


def test_keys_create_takes_a_tier_and_its_usage_plan_from_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agentmem.cli import admin

    db = str(tmp_path / "memory.db")
    monkeypatch.setenv("MEMORY_STORE", "sqlite")
    monkeypatch.setenv("MEMORY_SQLITE_PATH", db)
    plans: list[str] = []
    monkeypatch.setattr(admin, "_usage_plan_key", lambda app, plan: plans.append(plan) or f"usage-key-{plan}")
    try:
        # Given the stack's per-tier plan ids in the environment, and the old single one
        monkeypatch.setenv("MEMORY_USAGE_PLAN_ID", "plan-standard")
        monkeypatch.setenv("MEMORY_USAGE_PLAN_ID_SCALE", "plan-scale")
        # When a scale key is made / Then it names its tier and joins the scale plan
        code, out, _ = run_cli(capsys, "keys", "create", "--app", "big", "--tier", "scale", "--db", db)
        assert code == 0
        assert json.loads(out)["api_key"].startswith("amk_scale_")
        assert json.loads(out)["tier"] == "scale"
        # And without --tier the old variable still names the plan; --usage-plan-id wins over both
        assert run_cli(capsys, "keys", "create", "--app", "mid", "--db", db)[0] == 0
        assert (
            run_cli(capsys, "keys", "create", "--app", "x", "--tier", "scale", "--usage-plan-id", "p", "--db", db)[0]
            == 0
        )
        assert plans == ["plan-scale", "plan-standard", "p"]
        # And a tier whose plan is not given, while another plan is, is refused (no key is made)
        code, _, err = run_cli(capsys, "keys", "create", "--app", "small", "--tier", "starter", "--db", db)
        assert code == 1
        assert "MEMORY_USAGE_PLAN_ID_STARTER" in err
        table = SqliteTable(db)
        assert TenantService(table).tenant("small") is None
        table.close()
    finally:
        set_container(None)


# -- every app's keys (issue 43, point 8d) ------------------------------------------------------------------


def test_every_apps_keys_are_listed_those_of_a_store_written_before_included(
    tenants: TenantService, table: Table
) -> None:
    # Given keys of three apps (one named with the key separators, one whose records are in T#<app> as a store
    # written before kept them), a revoked key, and other partitions with items of their own
    kept = {app: tenants.create_key(app).key.key_id for app in ("acme", "odd#app%25", "old")}
    revoked = tenants.create_key("acme").key.key_id
    tenants.revoke_key("acme", revoked)
    item = table.get(registry_partition("old"), f"KEY#{kept['old']}")
    assert item is not None
    table.put({**item, "pk": "T#old"})
    table.delete(registry_partition("old"), f"KEY#{kept['old']}")
    tenants.create_key("empty")
    tenants.revoke_key("empty", tenants.list_keys("empty")[0].key_id)
    # When every app's keys are listed
    listed = tenants.list_all_keys()
    # Then each key comes once, under its app, with its status, revoked ones included
    assert sorted((k.app, k.key_id, k.status) for k in listed) == sorted(
        [
            ("acme", kept["acme"], "active"),
            ("acme", revoked, "revoked"),
            ("odd#app%25", kept["odd#app%25"], "active"),
            ("old", kept["old"], "active"),
            ("empty", tenants.list_keys("empty")[0].key_id, "revoked"),
        ]
    )


def test_keys_list_all_prints_every_apps_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = str(tmp_path / "memory.db")
    monkeypatch.setenv("MEMORY_STORE", "sqlite")
    monkeypatch.setenv("MEMORY_SQLITE_PATH", db)
    try:
        # Given keys of two apps made by the command
        made = [json.loads(run_cli(capsys, "keys", "create", "--app", app, "--db", db)[1]) for app in ("a1", "b2")]
        # When every app's keys are listed
        code, out, _ = run_cli(capsys, "keys", "list", "--all", "--db", db)
        # Then both are printed, one JSON line each, without their secrets
        assert code == 0
        listed = [json.loads(line) for line in out.splitlines()]
        assert sorted((k["app"], k["key_id"]) for k in listed) == sorted((k["app"], k["key_id"]) for k in made)
        assert not any(k["api_key"] in out for k in made)
        # And list needs one of --app and --all, not both
        for wrong in ([], ["--app", "a1", "--all"]):
            with pytest.raises(SystemExit) as refused:
                main(["keys", "list", *wrong, "--db", db])
            assert refused.value.code == 2
            assert "--app" in capsys.readouterr().err
    finally:
        set_container(None)
