"""Lambda entry point of the REST API (API Gateway REST proxy integration).

The resolver, routes and services live in the core layer (``agentmem.api.app``); the local server
calls the very same function.
"""

from agentmem.api.app import lambda_handler as handler

__all__ = ["handler"]
