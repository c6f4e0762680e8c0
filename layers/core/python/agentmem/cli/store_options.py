"""A command's store options (``--db``, ``--table``, ``--dynamodb-endpoint``, ``--auth``) as settings, and the
container they configure."""

from __future__ import annotations

import argparse
import os
import warnings
from typing import Any

_OPTION_ENV = {
    "db": "MEMORY_SQLITE_PATH",
    "table": "MEMORY_TABLE_NAME",
    "dynamodb_endpoint": "MEMORY_DYNAMODB_ENDPOINT_URL",
    "auth": "MEMORY_AUTH",
}


def configure(args: argparse.Namespace) -> None:
    """Turn the store options a command was given into settings, and quiet Powertools for a terminal."""
    for option, variable in _OPTION_ENV.items():
        value = getattr(args, option, None)
        if value:
            os.environ[variable] = value
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    warnings.filterwarnings("ignore", message="No application metrics to publish")


def admin_container(args: argparse.Namespace) -> Any:
    """A new container on the settings the command's options make."""
    configure(args)
    from agentmem.container import get_container, set_container

    set_container(None)
    return get_container()
