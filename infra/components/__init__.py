"""One construct per capability: storage, search, compute, api, workflow, operations."""
