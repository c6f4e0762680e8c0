"""The chat model port: the Bedrock Converse adapter (botocore's Stubber), structured answers, and the wiring
from the settings. The OpenAI-compatible adapter speaks HTTP: tests/integration/test_openai_compatible_model.py."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import BaseModel

from agentmem.container import Container
from agentmem.llm.bedrock import BedrockChatModel
from agentmem.llm.port import (
    ChatAnswer,
    ChatModel,
    ChatRequest,
    ModelAnswerInvalid,
    ModelRefused,
    ModelTimedOut,
    ModelUnavailable,
    Usage,
    schema_of,
    structured,
)
from agentmem.settings import Env, Settings

MODEL = "amazon.nova-micro-v1:0"
SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}}}
REQUEST = ChatRequest("You extract facts.", "I moved to Lisbon.", SCHEMA, max_output_tokens=64, schema_name="Facts")


# -- Bedrock Converse through botocore's Stubber -------------------------------------------------------


@pytest.fixture
def bedrock_client():  # type: ignore[no-untyped-def]
    import boto3
    from botocore.config import Config

    return boto3.client("bedrock-runtime", region_name="us-east-1", config=Config(retries={"max_attempts": 1}))


def _converse_response(content: list[dict[str, Any]], stop: str, tokens: tuple[int, int]) -> dict[str, Any]:
    """The Converse response shape (botocore's service model: output, stopReason, usage, metrics)."""
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": {"inputTokens": tokens[0], "outputTokens": tokens[1], "totalTokens": sum(tokens)},
        "metrics": {"latencyMs": 412},
    }


EXPECTED_CONVERSE = {
    "modelId": MODEL,
    "system": [{"text": "You extract facts."}],
    "messages": [{"role": "user", "content": [{"text": "I moved to Lisbon."}]}],
    "inferenceConfig": {"maxTokens": 64, "temperature": 0.0},
    "toolConfig": {
        "tools": [
            {
                "toolSpec": {
                    "name": "Facts",
                    "description": "Give your answer as this tool's input.",
                    "inputSchema": {"json": SCHEMA},
                }
            }
        ],
        "toolChoice": {"tool": {"name": "Facts"}},
    },
}


def test_bedrock_forces_the_answer_tool_and_returns_its_input_as_json(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given Bedrock answering with a call of the answer's tool, after a sentence of text
    content = [
        {"text": "Recording the facts."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "Facts", "input": {"facts": ["lives in Lisbon"]}}},
    ]
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response(content, "tool_use", (321, 17)), EXPECTED_CONVERSE)
        chat = BedrockChatModel(MODEL, client=bedrock_client)
        # When the model is asked
        answer = chat.complete(REQUEST)
        # Then the one Converse call sent the prompts, the schema as the forced tool, maxTokens and temperature 0
        stub.assert_no_pending_responses()
    # And the answer is the tool's input as JSON, with the tokens Bedrock counted
    assert json.loads(answer.text) == {"facts": ["lives in Lisbon"]}
    assert answer.usage == Usage(calls=1, input_tokens=321, output_tokens=17)
    assert answer.truncated is False
    assert isinstance(chat, ChatModel)
    assert chat.model_id == MODEL


def test_bedrock_returns_the_text_when_the_model_answers_without_the_tool(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given Bedrock answering in text (a model that did not call the tool)
    content = [{"text": '```json\n{"facts": []}\n'}, {"text": "```"}]
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response(content, "end_turn", (300, 9)), EXPECTED_CONVERSE)
        # When the model is asked
        answer = BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)
    # Then the answer is the text, for structured() to parse
    assert answer.text == '```json\n{"facts": []}\n```'
    assert answer.usage == Usage(1, 300, 9)


def test_bedrock_marks_an_answer_stopped_at_max_tokens_truncated(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given Bedrock stopping the tool's input at the token bound
    content = [{"toolUse": {"toolUseId": "tooluse_2", "name": "Facts", "input": {}}}]
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response(content, "max_tokens", (300, 64)), EXPECTED_CONVERSE)
        # When the model is asked
        answer = BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)
    # Then the answer is marked truncated, with the output tokens spent
    assert answer.truncated is True
    assert answer.usage.output_tokens == 64


@pytest.mark.parametrize(
    ("code", "status"),
    [
        ("ThrottlingException", 429),
        ("ModelNotReadyException", 429),
        ("ModelTimeoutException", 408),
        ("InternalServerException", 500),
        ("ServiceUnavailableException", 503),
    ],
)
def test_bedrock_throttling_timeouts_and_service_errors_are_unavailable(bedrock_client, code: str, status: int) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given Bedrock failing the call in a way that may pass
    with Stubber(bedrock_client) as stub:
        stub.add_client_error("converse", service_error_code=code, http_status_code=status)
        # When the model is asked / Then the call is unavailable, costing one call
        with pytest.raises(ModelUnavailable) as caught:
            BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)
    assert code in str(caught.value)
    assert caught.value.usage == Usage(calls=1)


@pytest.mark.parametrize(
    ("code", "status"),
    [("AccessDeniedException", 403), ("ValidationException", 400), ("ResourceNotFoundException", 404)],
)
def test_bedrock_refusals_are_refused(bedrock_client, code: str, status: int) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given Bedrock refusing the call (no model access, a request it cannot take, an unknown model)
    with Stubber(bedrock_client) as stub:
        stub.add_client_error(
            "converse", service_error_code=code, service_message="You don't have access", http_status_code=status
        )
        # When the model is asked / Then it is refused: a retry would be refused too
        with pytest.raises(ModelRefused) as caught:
            BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)
    assert f"{code} You don't have access" in str(caught.value)
    assert caught.value.http_status == 502


def test_bedrock_out_of_reach_is_unavailable(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.exceptions import EndpointConnectionError

    # Given a connection to Bedrock that cannot be made
    def refuse(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    bedrock_client.meta.events.register("before-send.bedrock-runtime.Converse", refuse)
    # When the model is asked / Then the call is unavailable
    with pytest.raises(ModelUnavailable, match="EndpointConnectionError"):
        BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)


def test_bedrock_that_does_not_answer_in_time_has_timed_out_not_gone_out_of_reach(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.exceptions import ReadTimeoutError

    # Given a connection to Bedrock whose answer does not come within the read timeout
    def slow(**_: Any) -> None:
        raise ReadTimeoutError(endpoint_url="https://bedrock-runtime.us-east-1.amazonaws.com")

    bedrock_client.meta.events.register("before-send.bedrock-runtime.Converse", slow)
    # When the model is asked / Then the call timed out (a kind of unavailable: retried), with its limit
    with pytest.raises(ModelTimedOut) as caught:
        BedrockChatModel(MODEL, client=bedrock_client, timeout_seconds=20).complete(REQUEST)
    assert isinstance(caught.value, ModelUnavailable)
    assert str(caught.value) == f"Bedrock model {MODEL} timed out: it did not answer within 20 s"
    assert caught.value.timeout_seconds == 20


def test_bedrock_withheld_answers_are_refused_with_their_usage(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    from botocore.stub import Stubber

    # Given a guardrail or content filter stopping the answer
    content = [{"text": "Sorry, I cannot help with that."}]
    with Stubber(bedrock_client) as stub:
        stub.add_response("converse", _converse_response(content, "content_filtered", (300, 8)), EXPECTED_CONVERSE)
        # When the model is asked / Then it is refused (asking again gets the same), with what it cost
        with pytest.raises(ModelRefused, match="content_filtered") as caught:
            BedrockChatModel(MODEL, client=bedrock_client).complete(REQUEST)
    assert caught.value.usage == Usage(1, 300, 8)


def test_bedrock_names_the_tool_as_bedrock_takes_tool_names(bedrock_client) -> None:  # type: ignore[no-untyped-def]
    # Given a generic answer model's name, which Bedrock's tool-name pattern refuses
    request = ChatRequest("s", "p", SCHEMA, schema_name="Page[Fact]")
    # When the Converse input is built / Then the tool is named with the characters Bedrock takes
    sent = BedrockChatModel(MODEL, client=bedrock_client).converse_input(request)
    assert sent["toolConfig"]["toolChoice"] == {"tool": {"name": "Page_Fact_"}}
    assert sent["toolConfig"]["tools"][0]["toolSpec"]["name"] == "Page_Fact_"


def test_bedrock_builds_its_client_on_first_use_with_the_timeout() -> None:
    # Given a model built without a client
    chat = BedrockChatModel(MODEL, region_name="eu-west-1", timeout_seconds=12.5)
    # When its client is first needed
    client = chat.client
    # Then it is a bedrock-runtime client in that region, bounded by the timeout, with one retry at most
    assert client.meta.service_model.service_name == "bedrock-runtime"
    assert client.meta.region_name == "eu-west-1"
    assert client.meta.config.read_timeout == 12.5
    assert client.meta.config.connect_timeout == 5.0
    assert client.meta.config.retries == {"total_max_attempts": 2, "mode": "standard"}
    assert chat.client is client


# -- structured answers --------------------------------------------------------------------------------


class Fact(BaseModel):
    title: str
    confidence: float = 1.0


class Facts(BaseModel):
    facts: list[Fact]


@dataclass
class ScriptedChat:
    """A ChatModel that answers from a list, in turn, and keeps the requests it was sent."""

    answers: list[ChatAnswer | Exception]
    model_id: str = "scripted"
    requests: list[ChatRequest] = field(default_factory=list)

    def complete(self, request: ChatRequest) -> ChatAnswer:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


VALID = '{"facts": [{"title": "lives in Lisbon", "confidence": 0.9}]}'
EXPECTED = Facts(facts=[Fact(title="lives in Lisbon", confidence=0.9)])


def test_structured_returns_the_validated_answer_and_sends_its_schema() -> None:
    # Given a model that answers valid JSON
    chat = ScriptedChat([ChatAnswer(VALID, Usage(1, 100, 20))])
    # When a structured answer is asked for
    result = structured(chat, Facts, system="sys", prompt="text", max_output_tokens=256)
    # Then the answer is the parsed model, with one call's usage, and the request carried the inlined schema
    assert result.answer == EXPECTED
    assert result.usage == Usage(1, 100, 20)
    [request] = chat.requests
    assert request == ChatRequest("sys", "text", schema_of(Facts), 256, "Facts")
    assert isinstance(chat, ChatModel)


def test_structured_reads_an_answer_wrapped_in_a_code_fence() -> None:
    # Given a model that wraps its JSON in a fenced block with a sentence before it
    chat = ScriptedChat([ChatAnswer(f"Here are the facts:\n```json\n{VALID}\n```", Usage(1, 100, 30))])
    # When a structured answer is asked for / Then the JSON inside is the answer, from one call
    result = structured(chat, Facts, system="sys", prompt="text")
    assert result.answer == EXPECTED
    assert len(chat.requests) == 1


def test_structured_asks_again_after_an_invalid_answer_and_sums_the_usage() -> None:
    # Given a model whose first answer does not match the schema and whose second does
    chat = ScriptedChat([ChatAnswer('{"facts": "none"}', Usage(1, 100, 5)), ChatAnswer(VALID, Usage(1, 100, 20))])
    # When a structured answer is asked for
    result = structured(chat, Facts, system="sys", prompt="text")
    # Then the second answer is the answer, after two calls whose usage is summed
    assert result.answer == EXPECTED
    assert len(chat.requests) == 2
    assert result.usage == Usage(2, 200, 25)


def test_structured_gives_up_after_two_invalid_answers_with_their_usage() -> None:
    # Given a model that answers prose, then JSON of another shape
    chat = ScriptedChat([ChatAnswer("I cannot", Usage(1, 100, 3)), ChatAnswer('{"fact": 1}', Usage(1, 100, 4))])
    # When a structured answer is asked for / Then it is invalid, carrying both calls' usage
    with pytest.raises(ModelAnswerInvalid) as caught:
        structured(chat, Facts, system="sys", prompt="text")
    assert caught.value.usage == Usage(2, 200, 7)
    assert caught.value.http_status == 502
    assert len(chat.requests) == 2


def test_structured_says_an_invalid_answer_was_cut_at_the_token_bound() -> None:
    # Given a model whose answers stop at max_output_tokens, mid-JSON
    cut = ChatAnswer('{"facts": [{"title": "li', Usage(1, 100, 8), truncated=True)
    chat = ScriptedChat([cut, cut])
    # When a structured answer is asked for / Then the error says it was cut there
    with pytest.raises(ModelAnswerInvalid, match="cut at 8 tokens"):
        structured(chat, Facts, system="sys", prompt="text", max_output_tokens=8)


def test_structured_passes_an_unavailable_model_through_with_the_usage_spent_before() -> None:
    # Given a model that answers invalid JSON, then is throttled
    chat = ScriptedChat([ChatAnswer("no", Usage(1, 100, 1)), ModelUnavailable("throttled")])
    # When a structured answer is asked for / Then the outage passes through, with both calls' usage
    with pytest.raises(ModelUnavailable) as caught:
        structured(chat, Facts, system="sys", prompt="text")
    assert caught.value.usage == Usage(2, 100, 1)


def test_the_schema_is_inlined_and_keeps_a_property_named_title() -> None:
    # Given an answer model nesting another, one of whose fields is named "title"
    schema = schema_of(Facts)
    # Then the nested model is inlined (no $ref, no $defs), schema titles are gone, the field is kept
    item = schema["properties"]["facts"]["items"]
    assert "$defs" not in schema
    assert "$ref" not in json.dumps(schema)
    assert "title" not in schema
    assert item["properties"]["title"] == {"type": "string"}
    assert item["required"] == ["title"]


# -- settings and the container ------------------------------------------------------------------------


def test_no_model_is_configured_by_default() -> None:
    # Given no MEMORY_MODEL / Then the settings name none and the container has no model
    settings = Settings.from_env({})
    assert settings.model == "none"
    assert Container(settings).model is None


def test_an_openai_model_needs_its_url_and_model_name() -> None:
    # Given MEMORY_MODEL=openai without an endpoint or without a model name / Then the settings are refused
    with pytest.raises(ValueError, match="MEMORY_MODEL_URL"):
        Settings.from_env({Env.MODEL: "openai", Env.MODEL_ID: "qwen2.5:0.5b"})
    with pytest.raises(ValueError, match="MEMORY_MODEL_ID"):
        Settings.from_env({Env.MODEL: "openai", Env.MODEL_URL: "http://127.0.0.1:11434/v1"})
    # And a URL that is not http(s), an unknown kind and a timeout that is not a positive number are refused
    with pytest.raises(ValueError, match="MEMORY_MODEL_URL"):
        Settings.from_env({Env.MODEL: "openai", Env.MODEL_ID: "m", Env.MODEL_URL: "127.0.0.1:11434/v1"})
    with pytest.raises(ValueError, match="MEMORY_MODEL must be"):
        Settings.from_env({Env.MODEL: "ollama"})
    for timeout in ("0", "-1", "soon", "inf", "nan"):
        with pytest.raises(ValueError, match="MEMORY_MODEL_TIMEOUT_SECONDS"):
            Settings.from_env({Env.MODEL_TIMEOUT_SECONDS: timeout})


def test_the_container_builds_a_bedrock_model_without_calling_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import boto3

    # Given MEMORY_MODEL=bedrock with its defaults and a timeout, and no AWS client may be built
    def no_client(*_: Any, **__: Any) -> None:
        raise AssertionError("a client was built")

    monkeypatch.setattr(boto3, "client", no_client)
    settings = Settings.from_env({Env.MODEL: "bedrock", Env.MODEL_TIMEOUT_SECONDS: "20", "AWS_REGION": "eu-west-1"})
    # When the container's model is built
    model = Container(settings).model
    # Then it is the Bedrock adapter on Nova Micro, with the region and the timeout, and nothing was called
    assert isinstance(model, BedrockChatModel)
    assert model.model_id == "amazon.nova-micro-v1:0"
    assert model._region == "eu-west-1"
    assert model._timeout == 20.0


def test_the_container_builds_an_openai_model_without_calling_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import urllib.request

    from agentmem.llm.openai_compatible import OpenAICompatibleChatModel

    # Given MEMORY_MODEL=openai with an endpoint, a model name and a key, and no HTTP request may be made
    def no_request(*_: Any, **__: Any) -> None:
        raise AssertionError("a request was made")

    monkeypatch.setattr(urllib.request, "urlopen", no_request)
    env = {
        Env.MODEL: "openai",
        Env.MODEL_URL: "http://127.0.0.1:11434/v1",
        Env.MODEL_ID: "qwen2.5:0.5b",
        Env.MODEL_API_KEY: "sk-local",
    }
    settings = Settings.from_env(env)
    # When the container's model is built
    model = Container(settings).model
    # Then it is the OpenAI-compatible adapter on that endpoint and model, and the key stays out of reprs
    assert isinstance(model, OpenAICompatibleChatModel)
    assert model.url == "http://127.0.0.1:11434/v1/chat/completions"
    assert model.model_id == "qwen2.5:0.5b"
    assert model._api_key == "sk-local"
    assert "sk-local" not in repr(settings)


def test_a_container_given_a_model_uses_it() -> None:
    # Given a container built with a model of the test's own, over settings that name another
    double = ScriptedChat([])
    settings = Settings(model="bedrock")
    # Then that model is the container's
    assert Container(settings, model=double).model is double


def test_the_schema_sent_leaves_long_bounds_to_the_answers_validation() -> None:
    from pydantic import BaseModel, Field

    from agentmem.llm.port import GRAMMAR_MAX_LENGTH, schema_of

    class Long(BaseModel):
        summary: str = Field(max_length=4000)
        title: str = Field(max_length=80)
        items: list[int] = Field(max_length=8)

    # Given bounds a grammar would unroll into thousands of rules / Then the sent schema omits them, keeps the rest
    sent = schema_of(Long)["properties"]
    assert "maxLength" not in sent["summary"]
    assert sent["title"]["maxLength"] == 80 <= GRAMMAR_MAX_LENGTH
    assert sent["items"]["maxItems"] == 8
    # And the answer's model still refuses what is too long
    with pytest.raises(ValueError, match="at most 4000"):
        Long.model_validate({"summary": "x" * 4001, "title": "t", "items": []})
