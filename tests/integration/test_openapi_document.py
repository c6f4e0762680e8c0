"""``/v1/openapi.json`` describes what the API does: every route of docs/api.md with its status codes
(and no other route), typed success and error bodies, id constraints in the schema, and answers that
conform to it (checked on real answers through the handler, on SQLite and on DynamoDB)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate as validate_spec

from tests.support import ApiClient, Reply, scope_path, text_entry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
SCOPE = "/v1/apps/{app}/users/{user}"
_ROW = re.compile(r"^\|\s*(GET|POST|PUT|DELETE|PATCH)\s*\|\s*`([^`]+)`\s*\|(.*)\|\s*$")


def _shape(path: str) -> str:
    """A path with its parameters unnamed: docs/api.md says ``{id}`` where the code says ``{entry_id}``."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def _documented_routes() -> dict[tuple[str, str], set[int]]:
    """(method, path shape) -> the status codes docs/api.md gives each route (in its last column)."""
    routes: dict[tuple[str, str], set[int]] = {}
    prefix = ""
    for line in DOCS.read_text(encoding="utf-8").replace("\\|", "/").splitlines():
        if line.startswith("## "):
            prefix = SCOPE if "`{scope}/graph`" in line else ""
        match = _ROW.match(line)
        if match is None:
            continue
        method, path, rest = match.groups()
        path = path.replace("{scope}", SCOPE)
        if path.startswith("/graph"):
            path = prefix + path
        success = rest.split("|")[-1]
        routes[(method, _shape(path))] = {int(code) for code in re.findall(r"\b([1-5]\d\d)\b", success)}
    return routes


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    reply = ApiClient().get("/v1/openapi.json")
    assert reply.status == 200
    return reply.body  # type: ignore[no-any-return]


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), _shape(path)): operation
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    }


def test_the_document_is_valid_openapi(document: dict[str, Any]) -> None:
    validate_spec(document)


def test_docs_api_md_and_the_document_list_the_same_routes_and_statuses(document: dict[str, Any]) -> None:
    documented = _documented_routes()
    operations = _operations(document)
    assert len(documented) > 30
    assert set(documented) == set(operations)
    for route, codes in documented.items():
        served = {int(code) for code in operations[route]["responses"]}
        assert codes, f"docs/api.md gives no status for {route}"
        assert codes <= served, f"{route}: docs/api.md says {codes}, the document {served}"
        successes = {code for code in served if code < 300}
        assert successes == {code for code in codes if code < 300}, route


def test_every_answer_has_a_typed_body(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for route, operation in _operations(document).items():
        for code, response in operation["responses"].items():
            if code == "204":
                assert not response.get("content"), route
                continue
            ref = response["content"]["application/json"]["schema"].get("$ref", "")
            name = ref.rsplit("/", 1)[-1]
            if route == ("GET", "/v1/openapi.json") and code == "200":
                continue  # the document itself: a JSON object
            assert name in schemas, (route, code, ref)
            assert schemas[name].get("properties"), (route, code, ref)
            if int(code) >= 400 and route != ("GET", "/v1/health"):
                assert name == "ErrorBody", (route, code)
    for code in ("400", "401", "403", "404", "409", "413", "422", "429", "503"):
        assert any(code in op["responses"] for op in _operations(document).values()), code


def test_ids_and_limits_are_in_the_schema(document: dict[str, Any]) -> None:
    for path, methods in document["paths"].items():
        for operation in methods.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "path":
                    continue
                schema = parameter["schema"]
                assert (schema["minLength"], schema["maxLength"]) == (1, 256), (path, parameter["name"])
                assert re.fullmatch(schema["pattern"].encode().decode("unicode_escape"), "a\x01b") is None
                assert re.fullmatch(schema["pattern"].encode().decode("unicode_escape"), "a/b é#%") is not None
    listing = document["paths"][SCOPE + "/memories"]["get"]["parameters"]
    limit = next(p for p in listing if p["name"] == "limit")["schema"]
    assert (limit["minimum"], limit["maximum"]) == (1, 100)
    search = document["components"]["schemas"]["SearchRequest"]["properties"]
    assert (search["top_k"]["minimum"], search["top_k"]["maximum"]) == (1, 100)
    project = document["components"]["schemas"]["SearchRequest"]["properties"]["project_id"]
    assert any(s.get("maxLength") == 256 and s.get("pattern") for s in project.get("anyOf", [project]))


class _Checked(ApiClient):
    """An API client that checks every answer against the document (status listed, body conforming)."""

    def __init__(self, document: dict[str, Any]) -> None:
        super().__init__()
        self.document = document
        self.routes = [
            (method.upper(), re.compile("^" + re.sub(r"\{[^}]+\}", "[^/]+", path) + "$"), operation)
            for path, methods in document["paths"].items()
            for method, operation in methods.items()
        ]
        self.checked: set[tuple[str, str]] = set()

    def request(self, method: str, path: str, json_body: Any = None, **kw: Any) -> Reply:
        reply = super().request(method, path, json_body, **kw)
        matches = [(p, op) for m, p, op in self.routes if m == method and p.match(path)]
        assert matches, (method, path)
        pattern, operation = max(matches, key=lambda m: len(m[0].pattern))
        responses = operation["responses"]
        assert str(reply.status) in responses, (method, path, reply.status, reply.body)
        content = responses[str(reply.status)].get("content") or {}
        if reply.status == 204:
            assert reply.raw == ""
        else:
            schema = {**content["application/json"]["schema"], "components": self.document["components"]}
            errors = sorted(Draft202012Validator(schema).iter_errors(reply.body), key=str)
            assert not errors, (method, path, reply.status, [e.message for e in errors[:3]])
        self.checked.add((method, pattern.pattern))
        return reply


def test_answers_conform_to_the_document(container: object, document: dict[str, Any]) -> None:
    api = _Checked(document)
    scope = scope_path("demo", "ali/ce")
    graph = scope + "/graph"
    entry = api.post(scope + "/memories", {"entry": text_entry("I prefer dark mode")}, headers={"Idempotency-Key": "k"})
    assert entry.status == 201
    api.post(scope + "/memories", {"entry": text_entry("I prefer dark mode")}, headers={"Idempotency-Key": "k"})
    api.put(scope + "/sessions/s1/memories", {"entries": [text_entry("tea please"), text_entry("a cat")]})
    api.post(scope + "/memories/search", {"query": "dark mode", "top_k": 5})
    api.post(scope + "/memories/query", {"filter": {"author": "user"}, "limit": 1})
    api.post(scope + "/memories/query", {"filter": {"author": {"$near": 1}}})
    api.get(scope + "/memories", query={"limit": 1})
    api.get(scope + "/memories/" + entry.body["id"])
    api.get(scope + "/memories/nope")
    fixed = {"content": {"role": "user", "parts": [{"text": "I prefer light mode"}]}, "revision": 1}
    api.patch(scope + "/memories/" + entry.body["id"], fixed)
    api.patch(scope + "/memories/" + entry.body["id"], fixed)
    api.patch(scope + "/memories/" + entry.body["id"], {})
    api.patch(scope + "/memories/nope", fixed)
    api.get(scope + "/memories/" + entry.body["id"] + "/history")
    api.get(scope + "/memories/nope/history")
    api.get(scope + "/memories", query={"limit": 0})
    api.get(scope + "/memories", query={"cursor": "!!"})
    api.post(scope + "/memories/search", raw_body="{not json")
    api.post(scope + "/memories/delete", {"query": "tea"})
    api.delete(scope + "/memories/" + entry.body["id"])
    api.delete(scope + "/sessions/s1")
    [alice] = api.post(graph + "/entities", {"entities": [{"name": "Alice", "observations": ["likes tea"]}]}).body[
        "entities"
    ]
    added = api.post(graph + "/entities/Alice/observations", {"observations": ["has a cat"]}).body["observations"]
    api.post(graph + "/entities/Nobody/observations", {"observations": ["x"]})
    [relation] = api.post(
        graph + "/relations", {"relations": [{"source": "Alice", "relation_type": "knows", "target": "Bob"}]}
    ).body["relations"]
    api.post(graph + "/observations/" + added[0]["id"] + "/supersede", {"content": "has two cats"})
    api.post(graph + "/observations/" + alice["observations"][0]["id"] + "/invalidate", {})
    api.post(graph + "/relations/" + relation["id"] + "/invalidate", {})
    api.get(graph + "/entities/Alice/history")
    api.get(graph + "/search", query={"q": "cats"})
    api.get(graph + "/nodes", query=[("name", "Alice"), ("name", "Bob")])
    api.get(graph, query={"as_of": "2020-01-01T00:00:00Z"})
    api.get(graph)
    api.get(graph + "/profile-card")
    api.post(graph + "/episodes", {"session_id": "s1", "entries": [text_entry("we met in Paris")]})
    api.get(graph + "/episodes", query={"q": "Paris"})
    api.get(graph + "/episodes")
    api.post(graph + "/tools/remember", {"entity": "Bob", "facts": ["plays chess"]})
    api.post(graph + "/tools/relate", {"source": "Bob", "relation": "knows", "target": "Alice"})
    api.delete(graph + "/relations/" + relation["id"])
    api.delete(graph + "/observations/" + added[0]["id"])
    api.delete(graph + "/entities/Bob")
    api.delete(scope + "/projects/p1")
    api.get(scope + "/export")
    api.get(scope + "/projects", query={"limit": 1})
    api.get(scope + "/projects", query={"cursor": ""})
    api.get("/v1/apps/demo/usage")
    api.get("/v1/apps/demo/users", query={"limit": 1})
    api.get("/v1/apps/demo/users", query={"limit": 0})
    api.put("/v1/apps/demo/extraction", {"strategies": [{"type": "SEMANTIC", "name": "facts"}]})
    api.get("/v1/apps/demo/extraction")
    api.get("/v1/apps/demo/extraction/jobs", query={"limit": 1})
    api.get("/v1/apps/demo/extraction/jobs", query={"cursor": "!!"})
    api.post(scope + "/sessions/s1/extract", {})
    store = "/v1/apps/demo/store/batch"
    put = {"op": "put", "user": "ali/ce", "namespace": ["prefs"], "key": "k", "value": {"text": "dark mode", "n": 1}}
    api.post(store, {"ops": [put]})
    reads: list[dict[str, Any]] = [
        {"op": "get", "user": "ali/ce", "namespace": ["prefs"], "key": "k"},
        {"op": "get", "user": "ali/ce", "namespace": ["prefs"], "key": "missing"},
        {"op": "search", "user": "ali/ce", "namespace_prefix": [], "query": "dark mode"},
        {"op": "search", "user": "ali/ce", "namespace_prefix": ["prefs"], "filter": {"n": {"$gte": 1}}},
        {"op": "list_namespaces", "user": "ali/ce"},
    ]
    assert [r is not None for r in api.post(store, {"ops": reads}).body["results"]] == [True, False, True, True, True]
    api.post(store, {"ops": [{**put, "namespace": ["a.b"]}]})
    api.get("/v1/health")
    api.get("/v1/capabilities")
    api.get("/v1/openapi.json")
    api.get(scope_path("demo", "x\x01") + "/memories")
    deletion = api.delete(scope)
    assert deletion.status == 202
    api.post(scope + "/memories", {"entry": text_entry("during erasure")})
    api.get(scope + "/deletions/" + deletion.body["deletion_id"])
    api.get(scope + "/deletions/nope")
    # Every operation of the document answered at least once
    assert len(api.checked) == len(api.routes)
