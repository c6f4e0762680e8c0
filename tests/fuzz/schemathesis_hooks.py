"""Schemathesis hooks of the fuzz tier: OpenAPI links between the graph routes, for the stateful phase.

Schemathesis infers links for the memory routes from their response schemas, but not from a created
entity, observation or relation to the routes that take its name or id, so those routes would only
ever see unknown ids (404). These links, added to the document as schemathesis loads it (the served
document is unchanged), let the stateful phase create a fact, then read, supersede, invalidate and
delete it, in the same user and project.
"""

from __future__ import annotations

from typing import Any

import schemathesis

SCOPE = "/v1/apps/{app}/users/{user}"
_SAME_USER = {"path.app": "$request.path.app", "path.user": "$request.path.user"}
_SAME_PROJECT_QUERY = {**_SAME_USER, "query.project_id": "$request.body#/project_id"}
_ENTITY = "$response.body#/entities/0/name"
_OBSERVATION = "$response.body#/entities/0/observations/0/id"
_RELATION = "$response.body#/relations/0/id"

LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    (f"{SCOPE}/graph/entities", "post", "200"): {
        "History": (f"{SCOPE}/graph/entities/{{name}}/history", "get", {**_SAME_PROJECT_QUERY, "path.name": _ENTITY}),
        "AddObservations": (
            f"{SCOPE}/graph/entities/{{name}}/observations",
            "post",
            {**_SAME_USER, "path.name": _ENTITY},
        ),
        "OpenNodes": (f"{SCOPE}/graph/nodes", "get", {**_SAME_PROJECT_QUERY, "query.name": _ENTITY}),
        "DeleteEntity": (f"{SCOPE}/graph/entities/{{name}}", "delete", {**_SAME_PROJECT_QUERY, "path.name": _ENTITY}),
        "Invalidate": (
            f"{SCOPE}/graph/observations/{{obs_id}}/invalidate",
            "post",
            {**_SAME_USER, "path.obs_id": _OBSERVATION},
        ),
        "Supersede": (
            f"{SCOPE}/graph/observations/{{obs_id}}/supersede",
            "post",
            {**_SAME_USER, "path.obs_id": _OBSERVATION},
        ),
        "DeleteObservation": (
            f"{SCOPE}/graph/observations/{{obs_id}}",
            "delete",
            {**_SAME_PROJECT_QUERY, "path.obs_id": _OBSERVATION},
        ),
    },
    (f"{SCOPE}/graph/relations", "post", "200"): {
        "Invalidate": (
            f"{SCOPE}/graph/relations/{{rel_id}}/invalidate",
            "post",
            {**_SAME_USER, "path.rel_id": _RELATION},
        ),
        "DeleteRelation": (
            f"{SCOPE}/graph/relations/{{rel_id}}",
            "delete",
            {**_SAME_PROJECT_QUERY, "path.rel_id": _RELATION},
        ),
    },
    (SCOPE, "delete", "202"): {
        "Status": (
            f"{SCOPE}/deletions/{{deletion_id}}",
            "get",
            {**_SAME_USER, "path.deletion_id": "$response.body#/deletion_id"},
        ),
    },
}


def add_links(document: dict[str, Any]) -> None:
    """Add :data:`LINKS` to ``document`` (targets named by their operationId, read from the document)."""
    paths = document["paths"]
    for (path, method, status), links in LINKS.items():
        response = paths[path][method]["responses"][status]
        response.setdefault("links", {}).update(
            {
                name: {"operationId": paths[target][target_method]["operationId"], "parameters": parameters}
                for name, (target, target_method, parameters) in links.items()
            }
        )


@schemathesis.hook
def before_load_schema(context: Any, raw_schema: dict[str, Any]) -> None:
    add_links(raw_schema)
