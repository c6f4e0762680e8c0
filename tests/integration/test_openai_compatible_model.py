"""The OpenAI-compatible chat model against a scripted endpoint on 127.0.0.1 (real HTTP, no model)."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from typing import Any

import pytest

from agentmem.llm.openai_compatible import MAX_ANSWER_BYTES, OpenAICompatibleChatModel
from agentmem.llm.port import ChatModel, ChatRequest, ModelRefused, ModelTimedOut, ModelUnavailable, Usage
from tests.e2e.conftest import free_port
from tests.scripted_model import (
    Reply,
    ScriptedDelay,
    ScriptedFailure,
    ScriptedModelServer,
    scripted_answers,
)

SCHEMA = {"type": "object", "properties": {"facts": {"type": "array", "items": {"type": "string"}}}}
REQUEST = ChatRequest("You extract facts.", "I moved to Lisbon.", SCHEMA, max_output_tokens=64, schema_name="Facts")
ANSWER = '{"facts": ["lives in Lisbon"]}'


def _completion(content: str, **extra: Any) -> str:
    """A chat-completions body as an endpoint writes it (for answers the scripted server does not build)."""
    return json.dumps(
        {"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}
        | extra
    )


def test_the_request_carries_both_prompts_the_schema_and_the_token_bound() -> None:
    # Given an endpoint that answers with JSON
    with ScriptedModelServer(scripted_answers(ANSWER), model="qwen2.5:0.5b") as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked once
        answer = chat.complete(REQUEST)
    # Then one request went out, with the system and user prompts, the schema as a json_schema (not strict:
    # OpenAI's strict mode takes only closed objects whose every property is required)
    # response_format, max_tokens from the request and temperature 0; the answer is the message content
    [sent] = server.requests
    assert sent == {
        "model": "qwen2.5:0.5b",
        "messages": [
            {"role": "system", "content": "You extract facts."},
            {"role": "user", "content": "I moved to Lisbon."},
        ],
        "max_tokens": 64,
        "temperature": 0,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Facts", "schema": SCHEMA, "strict": False},
        },
    }
    assert answer.text == ANSWER
    assert answer.truncated is False
    assert isinstance(chat, ChatModel)
    assert chat.model_id == "qwen2.5:0.5b"


def test_the_api_key_is_sent_as_a_bearer_token_and_only_when_given() -> None:
    # Given an endpoint, and two models on it: one with an API key, one without
    with ScriptedModelServer(scripted_answers(ANSWER, ANSWER)) as server:
        keyed = OpenAICompatibleChatModel(server.url + "/", server.model, api_key="sk-test")
        bare = OpenAICompatibleChatModel(server.url, server.model)
        # When each is asked once
        keyed.complete(REQUEST)
        bare.complete(REQUEST)
    # Then the first sent the key as a bearer token and the second no Authorization header at all
    assert server.headers[0]["authorization"] == "Bearer sk-test"
    assert "authorization" not in server.headers[1]
    assert server.headers[0]["content-type"] == "application/json"


def test_usage_is_what_the_endpoint_reports() -> None:
    # Given an endpoint that reports its own token counts
    body = _completion(ANSWER, usage={"prompt_tokens": 123, "completion_tokens": 45, "total_tokens": 168})
    with ScriptedModelServer(scripted_answers(ScriptedFailure(200, body))) as server:
        # When the model is asked
        answer = OpenAICompatibleChatModel(server.url, server.model).complete(REQUEST)
    # Then the usage is one call with exactly those counts
    assert answer.usage == Usage(calls=1, input_tokens=123, output_tokens=45)
    assert answer.text == ANSWER


def test_usage_is_estimated_from_characters_when_the_endpoint_reports_none() -> None:
    # Given an endpoint that reports no usage
    with ScriptedModelServer(scripted_answers(ANSWER), report_usage=False) as server:
        # When the model is asked
        answer = OpenAICompatibleChatModel(server.url, server.model).complete(REQUEST)
    # Then the tokens are estimated at four characters a token, of both prompts and of the answer
    prompts = len(REQUEST.system) + len(REQUEST.prompt)
    assert answer.usage == Usage(1, math.ceil(prompts / 4), math.ceil(len(ANSWER) / 4))


def test_an_answer_cut_at_max_tokens_is_marked_truncated() -> None:
    # Given an endpoint whose answer is longer than the request's max_tokens (it cuts it, finish_reason length)
    long_answer = '{"facts": [' + ", ".join(['"a fact that goes on"'] * 40) + "]}"
    request = ChatRequest(REQUEST.system, REQUEST.prompt, SCHEMA, max_output_tokens=8)
    with ScriptedModelServer(scripted_answers(long_answer)) as server:
        # When the model is asked
        answer = OpenAICompatibleChatModel(server.url, server.model).complete(request)
    # Then the answer is what came back, marked truncated, and its output tokens are the bound
    assert answer.truncated is True
    assert answer.text == long_answer[:32]
    assert answer.usage.output_tokens == 8


@pytest.mark.parametrize("status", [429, 500, 502, 503])
def test_throttling_and_server_errors_are_unavailable(status: int) -> None:
    # Given an endpoint that answers with a throttling or server error
    body = json.dumps({"error": {"message": "try later"}})
    with ScriptedModelServer(scripted_answers(ScriptedFailure(status, body))) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked / Then the call is unavailable (a retry may succeed), costing one call
        with pytest.raises(ModelUnavailable) as caught:
            chat.complete(REQUEST)
    assert f"answered {status}: try later" in str(caught.value)
    assert caught.value.usage == Usage(calls=1)
    assert len(server.requests) == 1


@pytest.mark.parametrize("status", [401, 403, 404])
def test_other_client_errors_are_refusals_asked_once(status: int) -> None:
    # Given an endpoint that refuses the request (no access, an unknown model)
    body = json.dumps({"error": {"message": "model 'nope' not found"}})
    with ScriptedModelServer(scripted_answers(ScriptedFailure(status, body))) as server:
        chat = OpenAICompatibleChatModel(server.url, "nope")
        # When the model is asked / Then it is refused (a retry would not help) after one request
        with pytest.raises(ModelRefused) as caught:
            chat.complete(REQUEST)
    assert f"answered {status}: model 'nope' not found" in str(caught.value)
    assert caught.value.usage == Usage(calls=1)
    assert len(server.requests) == 1


def test_a_bad_request_refused_with_and_without_the_schema_is_a_refusal() -> None:
    # Given an endpoint that answers 400 to any request (the prompt is too long for it, say)
    with ScriptedModelServer(scripted_answers(ScriptedFailure(400), ScriptedFailure(400))) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked / Then it is refused after one try without response_format, two calls in all
        with pytest.raises(ModelRefused) as caught:
            chat.complete(REQUEST)
    assert caught.value.usage == Usage(calls=2)
    assert ["response_format" in sent for sent in server.requests] == [True, False]
    # And the endpoint is not taken for one that refuses json_schema: the 400 was not about the schema
    assert chat.takes_json_schema is True


def test_an_endpoint_refusing_json_schema_is_asked_without_it_and_remembered() -> None:
    # Given an endpoint that answers 400 to response_format json_schema and answers plain requests
    def answer(request: dict[str, Any]) -> Reply:
        if "response_format" in request:
            return ScriptedFailure(400, json.dumps({"error": {"message": "response_format is not supported"}}))
        return ANSWER

    with ScriptedModelServer(answer) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked twice
        first = chat.complete(REQUEST)
        second = chat.complete(REQUEST)
    # Then the first call was sent again without response_format (two calls, the answer's tokens), and the
    # second went without it straight away
    assert ["response_format" in sent for sent in server.requests] == [True, False, False]
    assert first.text == second.text == ANSWER
    assert first.usage.calls == 2
    assert second.usage.calls == 1
    assert first.usage.input_tokens == second.usage.input_tokens > 0
    assert chat.takes_json_schema is False


def test_a_slow_endpoint_times_out_as_unavailable_quickly() -> None:
    # Given an endpoint that takes 10 seconds to answer, and a model with a 0.3 s timeout
    with ScriptedModelServer(scripted_answers(ScriptedDelay(10.0, ANSWER))) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model, timeout_seconds=0.3)
        started = time.monotonic()
        # When the model is asked / Then the call timed out (a kind of unavailable, retried later: not
        # "unreachable"), with its limit, well before the endpoint would answer
        with pytest.raises(ModelTimedOut) as caught:
            chat.complete(REQUEST)
        elapsed = time.monotonic() - started
    assert elapsed < 2.0
    assert isinstance(caught.value, ModelUnavailable)
    assert "timed out: it did not answer within 0.3 s" in str(caught.value)
    assert "unreachable" not in str(caught.value)
    assert caught.value.timeout_seconds == 0.3
    assert caught.value.usage == Usage(calls=1)


def test_an_endpoint_trickling_its_answer_times_out_at_the_deadline() -> None:
    # Given an endpoint that sends its answer's head at once, then one byte of its body every 0.1 s
    stop = threading.Event()
    with socket.create_server(("127.0.0.1", 0)) as listener:

        def trickle() -> None:
            connection, _ = listener.accept()
            with connection:
                connection.recv(65536)
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n"
                )
                while not stop.wait(0.1):
                    connection.sendall(b" ")

        sender = threading.Thread(target=trickle, daemon=True)
        sender.start()
        chat = OpenAICompatibleChatModel(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", "m", timeout_seconds=0.5)
        started = time.monotonic()
        # When the model is asked (no single read waits as long as the timeout)
        with pytest.raises(ModelUnavailable) as caught:
            chat.complete(REQUEST)
        elapsed = time.monotonic() - started
        stop.set()
        sender.join(timeout=2)
    # Then the call ends at its deadline, unavailable, and does not wait for the 10,000 bytes (100 s)
    assert "timed out: it did not finish its answer within 0.5 s" in str(caught.value)
    assert 0.5 <= elapsed < 1.5


def test_an_endpoint_nobody_listens_on_is_unavailable() -> None:
    # Given a base URL where nothing listens
    chat = OpenAICompatibleChatModel(f"http://127.0.0.1:{free_port()}/v1", "m", timeout_seconds=2)
    # When the model is asked / Then the call is unavailable
    with pytest.raises(ModelUnavailable) as caught:
        chat.complete(REQUEST)
    assert "unreachable" in str(caught.value)
    assert "ConnectionRefusedError" in str(caught.value)


@pytest.mark.parametrize(
    "body",
    [
        "<html><body>502 Bad Gateway</body></html>",
        json.dumps({"object": "list", "data": []}),
        json.dumps({"choices": []}),
        json.dumps({"choices": [{"message": {"content": ["not", "text"]}}]}),
    ],
    ids=["html", "another-api", "no-choice", "content-not-text"],
)
def test_a_body_that_is_not_a_chat_completion_is_unavailable(body: str) -> None:
    # Given an endpoint that answers 200 with something other than a chat completion
    with ScriptedModelServer(scripted_answers(ScriptedFailure(200, body))) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked / Then the call is unavailable, saying what was wrong
        with pytest.raises(ModelUnavailable) as caught:
            chat.complete(REQUEST)
    assert "answered without a chat completion" in str(caught.value)


def test_an_answer_body_is_read_only_up_to_its_bound() -> None:
    # Given an endpoint whose answer body is larger than the adapter reads
    huge = _completion("x" * MAX_ANSWER_BYTES)
    with ScriptedModelServer(scripted_answers(ScriptedFailure(200, huge))) as server:
        chat = OpenAICompatibleChatModel(server.url, server.model)
        # When the model is asked / Then the call is unavailable and says why
        with pytest.raises(ModelUnavailable) as caught:
            chat.complete(REQUEST)
    assert f"more than {MAX_ANSWER_BYTES} bytes" in str(caught.value)


def test_only_an_http_base_url_is_taken() -> None:
    # Given a base URL that urllib would open as a local file / Then the model is not built
    with pytest.raises(ValueError, match="http or https"):
        OpenAICompatibleChatModel("file:///etc/v1", "m")
    # And neither is one without a host, nor one whose port is not a number
    with pytest.raises(ValueError, match="http or https"):
        OpenAICompatibleChatModel("http:///v1", "m")
    with pytest.raises(ValueError, match="Port could not be cast"):
        OpenAICompatibleChatModel("http://127.0.0.1:11434x/v1", "m")


def test_the_scripted_server_fails_the_test_on_a_call_it_was_not_given_an_answer_for() -> None:
    # Given a script of one answer
    server = ScriptedModelServer(scripted_answers(ANSWER))
    chat = OpenAICompatibleChatModel(server.start().url, server.model)
    chat.complete(REQUEST)
    # When a second call is made, the endpoint answers 500 (the adapter sees an unavailable model)
    with pytest.raises(ModelUnavailable):
        chat.complete(REQUEST)
    # Then stopping the server raises the script's own error
    with pytest.raises(AssertionError, match="asked more than the 1 answers scripted"):
        server.stop()


def test_strict_mode_is_asked_only_for_schemas_it_takes() -> None:
    from agentmem.llm.openai_compatible import strict_schema

    closed = {
        "type": "object",
        "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
        "required": ["facts"],
        "additionalProperties": False,
    }
    # Given closed objects with every property required, strict mode is asked; else it is not
    assert strict_schema(closed)
    assert not strict_schema({**closed, "required": []})
    assert not strict_schema({k: v for k, v in closed.items() if k != "additionalProperties"})
    nested_open = {**closed, "properties": {"facts": {"type": "array", "items": {"type": "object", "properties": {}}}}}
    assert not strict_schema(nested_open)
