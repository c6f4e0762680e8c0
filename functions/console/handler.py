"""Lambda entry point of the web console (``GET /console`` and ``GET /console/{proxy+}``, no authorizer).

The files come from the core layer's ``agentmem/console`` folder (agentmem.console.assets); the page calls
the REST API of the same origin with the user's key. Importing this reads no file: the allow-list of the
console's files is built at the first request.
"""

from agentmem.console.assets import handler

__all__ = ["handler"]
