"""Lambda entry point of the deletion workflow's steps (one function, dispatching on ``event["step"]``).

The steps live in the core layer (``agentmem.deletion.steps``); the local runner calls the same function.
"""

from agentmem.deletion.steps import handle as handler

__all__ = ["handler"]
