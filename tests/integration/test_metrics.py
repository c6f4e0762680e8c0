"""The API emits CloudWatch metrics (embedded metric format) for stored memories and searches."""

from __future__ import annotations

import json

import pytest

from tests.support import ApiClient, scope_path, text_entry


def _emitted(stdout: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in stdout.splitlines():
        if '"_aws"' not in line:
            continue
        blob = json.loads(line)
        for definition in blob["_aws"]["CloudWatchMetrics"]:
            assert definition["Namespace"] == "AgentMemory"
            for metric in definition["Metrics"]:
                value = blob[metric["Name"]]
                values[metric["Name"]] = values.get(metric["Name"], 0) + (
                    sum(value) if isinstance(value, list) else value
                )
    return values


def test_writes_and_searches_are_counted(
    api: ApiClient, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given metrics enabled, as in Lambda
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    scope = scope_path("metrics-app", "u")
    capsys.readouterr()
    # When a session of two entries, one entry and a search are served
    api.put(f"{scope}/sessions/s/memories", {"entries": [text_entry("one fact"), text_entry("another fact")]})
    api.post(f"{scope}/memories", {"entry": text_entry("third fact")})
    api.post(f"{scope}/memories/search", {"query": "fact", "mode": "keyword"})
    # Then the flushed metrics count them, and hold no memory content
    output = capsys.readouterr().out
    assert _emitted(output) == {"MemoriesStored": 3, "Searches": 1}
    assert "another fact" not in output


def test_metrics_do_not_pile_up_when_disabled(api: ApiClient) -> None:
    # Given metrics off, as on the local server (the test suite's default)
    from agentmem.observability import metrics

    scope = scope_path("metrics-app", "u")
    # When many writes are served
    for i in range(5):
        api.post(f"{scope}/memories", {"entry": text_entry(f"fact {i}")})
    # Then nothing is held back between requests
    assert metrics.metric_set == {}
