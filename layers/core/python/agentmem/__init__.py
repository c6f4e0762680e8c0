"""agentmem: serverless long-term memory for AI agents (the domain library, shipped as a Lambda layer)."""

__version__ = "0.1.0"
