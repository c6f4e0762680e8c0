"""Powertools observability singletons, beside the domain so every layer may log without importing a handler.

Never log memory content: log ids, counts and codes only.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

SERVICE = "agent-memory"

logger = Logger(service=SERVICE)
tracer = Tracer(service=SERVICE)
metrics = Metrics(namespace="AgentMemory", service=SERVICE)
