"""A judge backed by any OpenAI-compatible Chat Completions endpoint."""

from __future__ import annotations

import email.utils
import json
import random
import time
from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import anyio
from openai import AsyncOpenAI
from pydantic import BaseModel

from agentscore._options import check_number
from agentscore._redact import known_secrets, redact, register_secret
from agentscore._wire.clients import LoopLocalClient, current_loop_token
from agentscore.adapters import coerce_messages
from agentscore.errors import (
    ConfigurationError,
    JudgeAuthError,
    JudgeConnectionError,
    JudgeError,
    JudgeOutputError,
    JudgeRateLimitError,
    JudgeReplyTooLargeError,
    JudgeRequestError,
    JudgeResponseError,
    JudgeServerError,
    JudgeTimeoutError,
)
from agentscore.judges._cache import ResponseCache, cache_key
from agentscore.judges._chat import BadBody, ChatFailure, ChatReply, own_client, send_chat
from agentscore.judges._structured import parse_reply, strict_schema
from agentscore.judges.base import JudgeReply, JudgeRequest, JudgeUsage
from agentscore.judges.requests import before_request
from agentscore.telemetry.core import current_telemetry
from agentscore.telemetry.semconv import INPUT_MESSAGES
from agentscore.telemetry.spans import chat_span, messages_attribute, record_chat_reply

__all__ = ["DEFAULT_MAX_REPLY_CHARS", "OpenAIJudge", "OutputMode"]

T = TypeVar("T", bound=BaseModel)

OutputMode = Literal["json_schema", "json_object", "prompt"]
_FALLBACK: dict[OutputMode, OutputMode] = {"json_schema": "json_object", "json_object": "prompt"}
_FORMAT_HINTS = ("response_format", "json_schema", "json_object", "structured", "schema")
# Verdicts for 200 claims fit in a fraction of this; a longer reply is a runaway generation,
# and accepting it would keep it in the cache and in every result that quotes it.
DEFAULT_MAX_REPLY_CHARS = 65_536
# The SDK's backoff, used for our retries (the SDK makes none: see `_chat`).
_RETRY_DELAY = 0.5
_MAX_RETRY_DELAY = 8.0
_MAX_RETRY_AFTER = 60.0
_OUTPUT_MODES = ("json_schema", "json_object", "prompt")


class OpenAIJudge:
    """Judge through the `openai` SDK: OpenAI itself, vLLM, Ollama, llama.cpp, LM Studio...

    With no `api_key`/`base_url` the SDK's own configuration applies (OPENAI_API_KEY,
    OPENAI_BASE_URL). Retries with backoff on 408/409/429/5xx, timeouts and connection errors
    honour Retry-After, as the SDK's would. Structured output starts with a JSON schema and falls
    back to JSON mode, then to the schema in the prompt, remembering what the endpoint takes.
    Retries are made here, not by the SDK, so each passes `judges.requests`' gate.
    An invalid reply gets one repair request quoting the problem, then `JudgeOutputError`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        temperature: float = 0.0,
        client: AsyncOpenAI | None = None,
        cache: ResponseCache | None = None,
        use_cache: bool = True,
        output_mode: OutputMode = "json_schema",
        max_reply_chars: int = DEFAULT_MAX_REPLY_CHARS,
    ) -> None:
        check_number("OpenAIJudge timeout", timeout, low=0, open_low=True)
        check_number("OpenAIJudge max_retries", max_retries, low=0, integer=True)
        check_number("OpenAIJudge temperature", temperature, low=0, high=2)
        check_number("OpenAIJudge max_reply_chars", max_reply_chars, low=1, integer=True)
        if output_mode not in _OUTPUT_MODES:
            raise ConfigurationError(
                f"OpenAIJudge output_mode must be one of {', '.join(_OUTPUT_MODES)}, "
                f"not {output_mode!r}"
            )
        if not isinstance(model, str) or not model.strip():
            raise ConfigurationError("OpenAIJudge model must be a non-empty string")
        self._model = model
        self._base_url = base_url
        self._api_key = api_key
        register_secret(api_key)
        register_secret(client.api_key if client is not None else None)
        self._temperature = temperature
        self._client: LoopLocalClient[AsyncOpenAI] = LoopLocalClient(
            lambda: own_client(
                api_key=api_key,
                base_url=base_url,
                timeout=timeout,
                max_retries=max_retries,
                max_reply_chars=max_reply_chars,
            ),
            shared=client,
        )
        # A request's whole deadline, on the judge's own client; a client passed in keeps
        # its own timeouts.
        self._deadline = timeout if client is None else None
        self._cache = (cache if cache is not None else ResponseCache()) if use_cache else None
        self._in_flight: dict[str, tuple[object, anyio.Event]] = {}
        self.output_mode: OutputMode = output_mode
        self._max_reply_chars = max_reply_chars

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def provider_name(self) -> str:
        return "openai"

    @property
    def base_url(self) -> str | None:
        """The endpoint given, or None for the SDK's own configuration (OPENAI_BASE_URL)."""
        return self._base_url

    @property
    def endpoint(self) -> str:
        """Where requests go, without credentials: the client's base URL (the SDK reads
        OPENAI_BASE_URL when `base_url` is not given)."""
        return redact(str(self._client.get().base_url).rstrip("/"), self._api_key)

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self._model!r}, base_url={self._base_url!r})"

    async def complete(self, request: JudgeRequest[T]) -> JudgeReply[T]:
        schema = strict_schema(request.output_type)
        if self._cache is None:
            return await self._request(request, schema)
        key = cache_key(self._model, self._temperature, request.system, request.prompt, schema)
        cached = self._cache.get(key)
        if isinstance(cached, request.output_type):
            return JudgeReply(cached, JudgeUsage(cache_hits=1))
        # Identical requests in flight on this loop wait for the first one instead of paying
        # again: live traffic often scores the same answer twice at once (two scorers, retries).
        loop = current_loop_token()
        pending = self._in_flight.get(key)
        if pending is not None and pending[0] is loop:
            await pending[1].wait()
            cached = self._cache.get(key)
            if isinstance(cached, request.output_type):
                return JudgeReply(cached, JudgeUsage(cache_hits=1))
            return await self._request(request, schema)  # the first one failed: try ourselves
        done = anyio.Event()
        self._in_flight[key] = (loop, done)
        try:
            reply = await self._request(request, schema)
            self._cache.put(key, reply.value)
            return reply
        finally:
            done.set()
            if self._in_flight.get(key, (None, None))[1] is done:
                del self._in_flight[key]

    async def _request(self, request: JudgeRequest[T], schema: dict[str, Any]) -> JudgeReply[T]:
        messages = [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ]
        usage = JudgeUsage()
        try:
            reply_text, call_usage = await self._chat(messages, request.output_type, schema)
            usage += call_usage
            try:
                value = self._accept(reply_text, request)
            except ValueError as first_problem:
                # The bad reply may quote what the judge saw, a key included; the repair
                # request goes back out (and onto the chat span), so it is redacted first.
                messages += [
                    {"role": "assistant", "content": _redact_reply(reply_text or "")},
                    {"role": "user", "content": _repair_prompt(first_problem, schema)},
                ]
                reply_text, call_usage = await self._chat(messages, request.output_type, schema)
                usage += call_usage
                try:
                    value = self._accept(reply_text, request)
                except ValueError as second_problem:
                    raise JudgeOutputError(
                        "invalid judge reply after one repair attempt: "
                        + redact(str(second_problem))
                    ) from None
        except JudgeError as exc:
            exc.usage = usage + (exc.usage or JudgeUsage())
            raise
        return JudgeReply(value, usage)

    @staticmethod
    def _accept(reply_text: str | None, request: JudgeRequest[T]) -> T:
        value = parse_reply(reply_text, request.output_type)
        if request.validate is not None:
            request.validate(value)
        return value

    async def _chat(
        self, messages: list[dict[str, str]], output_type: type[BaseModel], schema: dict[str, Any]
    ) -> tuple[str | None, JudgeUsage]:
        started = time.perf_counter()
        calls = 0
        retries = 0
        # The retries are ours, not the SDK's: each attempt passes the request gate, so a
        # budget counts what the provider sees, and a bad 200 body spends the same budget.
        max_retries = self._client.get().max_retries
        while True:
            calls += 1
            await before_request()
            try:
                response = await self._create(messages, output_type, schema)
            except (ChatFailure, JudgeResponseError) as exc:
                if (
                    isinstance(exc, ChatFailure)
                    and exc.status in (400, 422)
                    and self.output_mode in _FALLBACK
                    and _mentions_format(exc)
                ):
                    self.output_mode = _FALLBACK[self.output_mode]
                    continue
                if retries < max_retries and _retryable(exc):
                    retries += 1
                    await anyio.sleep(_retry_delay(exc, retries))
                    continue
                if isinstance(exc, JudgeResponseError):
                    exc.usage = _spent(calls, started)
                    raise
                raise self._translate(exc, calls, started) from None
            break
        text = response.text
        usage = JudgeUsage(
            calls=calls,
            input_tokens=response.input_tokens or 0,
            output_tokens=response.output_tokens or 0,
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        if text is not None and len(text) > self._max_reply_chars:
            error = JudgeReplyTooLargeError(
                f"the judge's reply has {len(text)} characters, more than max_reply_chars "
                f"({self._max_reply_chars})"
            )
            error.usage = usage
            raise error
        if response.finish_reason == "length":
            text = (text or "") + "\n[reply truncated: the token limit was reached]"
        return text, usage

    async def _create(
        self, messages: list[dict[str, str]], output_type: type[BaseModel], schema: dict[str, Any]
    ) -> ChatReply:
        telemetry = current_telemetry()
        sent = self._with_schema_hint(messages, schema)
        with chat_span(
            telemetry,
            model=self._model,
            provider=self.provider_name,
            temperature=self._temperature,
        ) as span:
            if telemetry.capture_content and span.is_recording():
                span.set_attribute(INPUT_MESSAGES, messages_attribute(coerce_messages(sent)))
            try:
                response = await send_chat(
                    self._client.get(),
                    self._body(sent, output_type, schema),
                    deadline=self._deadline,
                )
            except BadBody as exc:  # a cut body, a proxy's error page, JSON of another shape
                raise self._bad_body(str(exc)) from None
            record_chat_reply(
                span,
                response_id=response.response_id,
                model=response.model,
                finish_reasons=response.finish_reasons,
                input_tokens=response.input_tokens,
                output_tokens=response.output_tokens,
            )
            return response

    def request_body(self, request: JudgeRequest[T]) -> dict[str, Any]:
        """The JSON body the first request for `request` would carry (what `--estimate`
        counts); nothing is sent."""
        schema = strict_schema(request.output_type)
        messages = [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.prompt},
        ]
        sent = self._with_schema_hint(messages, schema)
        return self._body(sent, request.output_type, schema)

    def _body(
        self, sent: list[dict[str, str]], output_type: type[BaseModel], schema: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "model": self._model,
            "messages": sent,
            "temperature": self._temperature,
            **self._format_kwargs(output_type, schema),
        }

    def _bad_body(self, what: str) -> JudgeResponseError:
        return JudgeResponseError(redact(f"judge endpoint answered 200 with {what}", self._api_key))

    def _format_kwargs(
        self, output_type: type[BaseModel], schema: dict[str, Any]
    ) -> dict[str, Any]:
        if self.output_mode == "json_schema":
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": output_type.__name__, "schema": schema, "strict": True},
                }
            }
        if self.output_mode == "json_object":
            return {"response_format": {"type": "json_object"}}
        return {}

    def _with_schema_hint(
        self, messages: list[dict[str, str]], schema: dict[str, Any]
    ) -> list[dict[str, str]]:
        if self.output_mode == "json_schema":
            return messages
        hint = (
            "\n\nReply with one JSON object and nothing else. It must match this JSON schema:\n"
            + json.dumps(schema, separators=(",", ":"))
        )
        first, *rest = messages
        return [{"role": first["role"], "content": first["content"] + hint}, *rest]

    def _translate(self, exc: ChatFailure, calls: int, started: float) -> JudgeError:
        message = redact(str(exc), self._api_key)
        status = exc.status or 0
        error: JudgeError
        if exc.kind == "timeout":
            error = JudgeTimeoutError(f"judge request timed out: {message}")
        elif exc.kind == "connection":
            error = JudgeConnectionError(f"judge endpoint unreachable: {message}")
        elif exc.kind == "too_large":
            error = JudgeReplyTooLargeError(f"the judge's reply is too large: {message}")
        elif status == 429:
            error = JudgeRateLimitError(f"judge endpoint rate-limited the request: {message}")
        elif status in (401, 403):
            error = JudgeAuthError(f"judge endpoint refused the credentials: {message}")
        elif status >= 500:
            error = JudgeServerError(f"judge endpoint failed ({status}): {message}")
        else:
            error = JudgeRequestError(f"judge request rejected: {message}")
        error.usage = _spent(calls, started)
        return error


def _spent(calls: int, started: float) -> JudgeUsage:
    return JudgeUsage(calls=calls, duration_ms=(time.perf_counter() - started) * 1000)


def _retryable(exc: ChatFailure | JudgeResponseError) -> bool:
    """What the SDK itself would retry (timeouts, connection errors, 408, 409, 429, 5xx), and
    a 200 whose body is not a chat completion (a proxy's error page is as passing as a 502)."""
    if isinstance(exc, JudgeResponseError) or exc.kind in ("timeout", "connection"):
        return True
    status = exc.status or 0
    return exc.kind == "status" and (status in (408, 409, 429) or status >= 500)


def _retry_delay(exc: ChatFailure | JudgeResponseError, retry: int) -> float:
    """The server's Retry-After (as the SDK reads it: -ms, seconds or a date) when it is
    between 0 and 60 seconds, else exponential backoff with jitter."""
    if isinstance(exc, ChatFailure):
        wait = _retry_after(exc.headers)
        if wait is not None and 0 < wait <= _MAX_RETRY_AFTER:
            return wait
    return _backoff(retry)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    try:
        milliseconds = headers.get("retry-after-ms")
        if milliseconds is not None:
            return float(milliseconds) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            moment = email.utils.parsedate_to_datetime(value)
            return moment.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None


def _backoff(retry: int) -> float:
    return min(_RETRY_DELAY * 2.0 ** (retry - 1), _MAX_RETRY_DELAY) * (1 - 0.25 * random.random())


def _mentions_format(exc: ChatFailure) -> bool:
    text = exc.detail.lower()
    return any(hint in text for hint in _FORMAT_HINTS)


def _redact_reply(text: str) -> str:
    # Not `redact`: its length bound would cut the JSON the judge has to repair.
    for secret in known_secrets():
        text = text.replace(secret, "[REDACTED]")
    return text


def _repair_prompt(problem: ValueError, schema: dict[str, Any]) -> str:
    return (
        f"Your previous reply could not be used: {redact(str(problem))}. Reply again with one "
        "JSON object that matches this JSON schema exactly, and nothing else:\n"
        + json.dumps(schema, separators=(",", ":"))
    )
