"""What extraction's model calls are counted in: the app's metered usage (and its share of the model's tokens
a minute), its month's token budget, and the model's state the calls showed (the app's and the health
check's, agentmem/extraction/model_state.py)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from agentmem.errors import MemoryServiceError
from agentmem.extraction import model_state
from agentmem.llm.port import Usage
from agentmem.observability import logger
from agentmem.stores.table import Table
from agentmem.tenancy import metering
from agentmem.tenancy.admission import ModelShare

if TYPE_CHECKING:
    from agentmem.extraction.config import AppMemory
    from agentmem.extraction.model_calls import Learnt


class Accounting:
    def __init__(self, table: Table, minute_share: ModelShare | None, clock: Callable[[], datetime]) -> None:
        """``table``: unguarded (usage and the model's state are the app's rows, none a user's)."""
        self._raw = table
        self._minute_share = minute_share
        self._clock = clock

    def meter(self, app: str, usage: Usage) -> None:
        if usage.calls:
            if self._minute_share is not None:
                self._minute_share.add(app, usage.input_tokens + usage.output_tokens)
            metering.record_usage(
                self._raw,
                app,
                model_calls=usage.calls,
                model_input_tokens=usage.input_tokens,
                model_output_tokens=usage.output_tokens,
            )

    def note_model(self, app: str, result: Learnt) -> None:
        """Keep what the batch's calls showed of the model for the app's state and the health check."""
        try:
            model_state.note(self._raw, app, failed=result.model_failure, answered=result.answered, now=self._clock())
        except MemoryServiceError as error:  # the state is a report: the batch goes on without it
            logger.warning("the model's state was not kept", app=app, error=error.code)

    def over_budget(self, memory: AppMemory) -> str:
        """Why the app may not spend more tokens this month ("" when it may)."""
        if memory.token_budget is None:
            return ""
        spent = tokens_this_month(self._raw, memory.app, self._clock())
        if spent >= memory.token_budget:
            return f"extraction paused: this month's token budget of {memory.token_budget} is spent ({spent})"
        return ""


def tokens_this_month(table: Table, app: str, now: datetime) -> int:
    month = now.date().isoformat()[:7]
    days = metering.read_usage(table, app, days=31, today=now.date())
    return sum(d.model_input_tokens + d.model_output_tokens for d in days if d.date.startswith(month))
