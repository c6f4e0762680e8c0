"""A Bedrock model through the ``bedrock-runtime`` Converse API (boto3 imported lazily, client built on first use).

Converse speaks to every Bedrock chat model the same way. The answer's schema travels as the input schema
of one tool the model is made to call (``toolChoice: {"tool": ...}``), which is how Converse gets
structured output from Nova, Claude, Mistral and Llama alike; the tool's input is the answer, returned as
JSON text. A model that answers in text instead has its text returned, for
:func:`~agentmem.llm.port.structured` to parse or ask again.
"""

from __future__ import annotations

import json
from typing import Any

from agentmem.llm.port import (
    DEFAULT_TIMEOUT_SECONDS,
    ChatAnswer,
    ChatRequest,
    ModelRefused,
    ModelTimedOut,
    ModelUnavailable,
    Usage,
    wire_name,
)

MAX_ATTEMPTS = 2
"""botocore's attempts per call, the first included (``total_max_attempts``: its ``max_attempts`` counts
retries only). Standard mode tries throttling, 5xx, connection errors and timeouts once more;
``timeout_seconds`` bounds each attempt, so a call that never answers takes about twice it."""
CONNECT_TIMEOUT_SECONDS = 5.0
_UNAVAILABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "InternalServerException",
        "ModelErrorException",  # 424: the model failed while answering; another attempt may succeed
    }
)
_TRUNCATED = frozenset({"max_tokens", "model_context_window_exceeded"})
_FILTERED = frozenset({"guardrail_intervened", "content_filtered"})
_TOOL_DESCRIPTION = "Give your answer as this tool's input."


class BedrockChatModel:
    """A :class:`~agentmem.llm.port.ChatModel` answered by a Bedrock model (a model id or an inference
    profile, e.g. ``amazon.nova-micro-v1:0``); ``client`` is a ``bedrock-runtime`` client (tests pass one
    with a Stubber), built on the first call otherwise."""

    def __init__(
        self,
        model_id: str,
        *,
        region_name: str | None = None,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        client: Any = None,
    ) -> None:
        self.model_id = model_id
        self._region = region_name
        self._timeout = timeout_seconds
        self._client = client

    @property
    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "bedrock-runtime",
                region_name=self._region,
                config=Config(
                    connect_timeout=min(CONNECT_TIMEOUT_SECONDS, self._timeout),
                    read_timeout=self._timeout,
                    retries={"total_max_attempts": MAX_ATTEMPTS, "mode": "standard"},
                ),
            )
        return self._client

    def complete(self, request: ChatRequest) -> ChatAnswer:
        from botocore.exceptions import (
            BotoCoreError,
            ClientError,
            NoCredentialsError,
            NoRegionError,
            ParamValidationError,
            ReadTimeoutError,
        )

        try:
            response = self.client.converse(**self.converse_input(request))
        except ClientError as error:
            raise self._translated(error) from None
        except (ParamValidationError, NoCredentialsError, NoRegionError) as error:
            # Nothing was sent: the same call would fail the same way.
            raise ModelRefused(f"Bedrock model {self.model_id} not called: {error}", usage=Usage()) from None
        except ReadTimeoutError:  # reached, but no answer in time (after botocore's retry): slow, not unreachable
            message = f"Bedrock model {self.model_id} timed out: it did not answer within {self._timeout:g} s"
            raise ModelTimedOut(message, timeout_seconds=self._timeout) from None
        except BotoCoreError as error:  # connection errors, after botocore's retry
            raise ModelUnavailable(f"Bedrock model {self.model_id} unreachable: {type(error).__name__}") from None
        return self._answer(response)

    def converse_input(self, request: ChatRequest) -> dict[str, Any]:
        """The Converse parameters for ``request`` (public so that tests state the exact request)."""
        tool = wire_name(request.schema_name)
        return {
            "modelId": self.model_id,
            "system": [{"text": request.system}],
            "messages": [{"role": "user", "content": [{"text": request.prompt}]}],
            "inferenceConfig": {"maxTokens": request.max_output_tokens, "temperature": 0.0},
            "toolConfig": {
                "tools": [
                    {
                        "toolSpec": {
                            "name": tool,
                            "description": _TOOL_DESCRIPTION,
                            "inputSchema": {"json": request.schema},
                        }
                    }
                ],
                "toolChoice": {"tool": {"name": tool}},
            },
        }

    def _answer(self, response: dict[str, Any]) -> ChatAnswer:
        reported = response.get("usage") or {}
        usage = Usage(1, int(reported.get("inputTokens", 0)), int(reported.get("outputTokens", 0)))
        stop = response.get("stopReason", "")
        if stop in _FILTERED:
            raise ModelRefused(f"Bedrock model {self.model_id} withheld its answer: {stop}", usage=usage)
        message = (response.get("output") or {}).get("message")
        if not isinstance(message, dict):
            raise ModelUnavailable(f"Bedrock model {self.model_id} answered without a message", usage=usage)
        blocks = [block for block in message.get("content", []) if isinstance(block, dict)]
        tool_input = next((block["toolUse"]["input"] for block in blocks if "toolUse" in block), None)
        if tool_input is not None:
            text = json.dumps(tool_input, ensure_ascii=False)
        else:
            text = "".join(str(block["text"]) for block in blocks if "text" in block)
        return ChatAnswer(text, usage, truncated=stop in _TRUNCATED)

    def _translated(self, error: Any) -> ModelUnavailable | ModelRefused:
        """Throttling, timeouts and the service's own failures may pass; a refusal (no access, a bad model
        id, a request the model cannot take) would be refused again."""
        details = error.response.get("Error", {})
        code = str(details.get("Code", "")) or "error"
        message = str(details.get("Message", ""))[:200]
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
        if code in _UNAVAILABLE_CODES or status in (408, 429) or status >= 500:
            return ModelUnavailable(f"Bedrock model {self.model_id} unavailable: {code}")
        return ModelRefused(f"Bedrock model {self.model_id} refused the request: {code} {message}".rstrip())
