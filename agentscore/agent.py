"""A minimal tool-calling agent over the Chat Completions API, with live scoring attached."""

from __future__ import annotations

import json
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import structlog
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from opentelemetry.trace import Span, Status, StatusCode
from pydantic import BaseModel, ConfigDict, Field

from agentscore._clients import LoopLocalClient, create_chat_completion
from agentscore._redact import register_secret
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals, EvalsLike, SampledScorer, sampled_entries
from agentscore.live._callbacks import call_user, on_loop
from agentscore.live._loop import BackgroundLoop
from agentscore.live.runner import Runner, ScoreJob, default_runner
from agentscore.live.sampling import sample_point, sampled
from agentscore.messages import Message, ToolCall, coerce_messages
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.telemetry import semconv
from agentscore.telemetry.core import Telemetry
from agentscore.telemetry.spans import (
    agent_span,
    chat_span,
    messages_attribute,
    record_chat_response,
    tool_span,
)
from agentscore.tools import Tool

__all__ = ["Agent", "AgentResult", "Usage"]

_log = structlog.get_logger("agentscore.agent")

# Sync callers get their own loop thread, apart from the one that runs scorers, so that
# scoring work never delays an agent's model calls.
_sync_loop = BackgroundLoop("agentscore-agent-sync")


class Usage(BaseModel):
    model_config = ConfigDict(frozen=True)

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class AgentResult(BaseModel):
    """A finished generation: the answer, every message of the run, cost and trace ids."""

    model_config = ConfigDict(frozen=True)

    text: str
    output: list[Message] = Field(description="The messages this generation added.")
    messages: list[Message] = Field(description="The whole conversation, instructions first.")
    usage: Usage
    finish_reason: str
    steps: int
    run_id: str
    response_id: str | None = None
    trace_id: str | None = None
    span_id: str | None = None


class Agent:
    """An agent that calls tools until the model answers, then hands the run to its scorers.

    `model` is served by `client` (an `AsyncOpenAI`), or by a client built from `base_url`
    and `api_key`, or from the SDK's environment (OPENAI_API_KEY, OPENAI_BASE_URL).
    `evals` attaches scorers: `{"scorers": [...], "sampling": 0.1}` or an `Evals`.
    """

    def __init__(
        self,
        name: str,
        model: str,
        instructions: str = "",
        tools: Sequence[Tool] = (),
        *,
        client: AsyncOpenAI | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        evals: EvalsLike = None,
        max_steps: int = 10,
        temperature: float | None = None,
        telemetry: Telemetry | None = None,
        provider_name: str = "openai",
        keep_scores: int = 1000,
    ) -> None:
        if not name:
            raise ConfigurationError("an agent needs a name")
        if max_steps < 1:
            raise ConfigurationError("max_steps must be at least 1")
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ConfigurationError(f"tool names must be unique, got {names}")
        self.name = name
        self.model = model
        self.instructions = instructions
        self.tools = {t.name: t for t in tools}
        self.max_steps = max_steps
        self.temperature = temperature
        self.provider_name = provider_name
        self.evals = Evals.coerce(evals)
        self.telemetry = telemetry or Telemetry()
        self.runner: Runner = self.evals.runner or default_runner()
        register_secret(api_key)
        register_secret(client.api_key if client is not None else None)
        self._client = LoopLocalClient(
            lambda: AsyncOpenAI(api_key=api_key, base_url=base_url), shared=client
        )
        self._tool_definitions = [t.definition() for t in tools]
        self._scores: deque[ScoreResult] = deque(maxlen=keep_scores)

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model!r}, tools={list(self.tools)})"

    @property
    def scores(self) -> list[ScoreResult]:
        """The most recent score results of this agent's runs, oldest first."""
        return list(self._scores)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait for pending scores (of every agent sharing the runner)."""
        return self.runner.flush(timeout)

    async def aflush(self, timeout: float | None = None) -> bool:
        return await self.runner.aflush(timeout)

    def generate_sync(
        self,
        prompt: str | Sequence[Message | Mapping[str, Any]],
        *,
        scorers: Sequence[Scorer | SampledScorer] | None = None,
        conversation_id: str | None = None,
        request_context: Mapping[str, Any] | None = None,
        ground_truth: Any = None,
    ) -> AgentResult:
        """Blocking `generate`, usable from sync code and from inside a running event loop."""

        async def call() -> AgentResult:
            return await self.generate(
                prompt,
                scorers=scorers,
                conversation_id=conversation_id,
                request_context=request_context,
                ground_truth=ground_truth,
            )

        return _sync_loop.call(call)

    async def generate(
        self,
        prompt: str | Sequence[Message | Mapping[str, Any]],
        *,
        scorers: Sequence[Scorer | SampledScorer] | None = None,
        conversation_id: str | None = None,
        request_context: Mapping[str, Any] | None = None,
        ground_truth: Any = None,
    ) -> AgentResult:
        """Run the tool loop to an answer. `scorers` replaces the agent's scorers for this call
        (a `Scorer` runs on every call, a `SampledScorer` at its own rate); `scorers=[]`
        disables scoring for it. A wrong scorer type raises `ConfigurationError` here, before
        any model call."""
        entries = self.evals.entries if scorers is None else sampled_entries(scorers, 1.0)
        input_messages = coerce_messages(prompt, default_role="user")
        system = [Message(role="system", content=self.instructions)] if self.instructions else []
        conversation = system + input_messages
        run_id = uuid.uuid4().hex
        with agent_span(
            self.telemetry,
            agent_name=self.name,
            model=self.model,
            provider=self.provider_name,
            conversation_id=conversation_id,
        ) as span:
            output, usage, response_id, finish_reason, steps = await self._loop(conversation)
            context = span.get_span_context()
            trace_id = f"{context.trace_id:032x}" if context.is_valid else None
            span_id = f"{context.span_id:016x}" if context.is_valid else None
            self._record_agent_outcome(span, conversation, output, usage, response_id)
        result = AgentResult(
            text=_final_text(output),
            output=output,
            messages=conversation + output,
            usage=usage,
            finish_reason=finish_reason,
            steps=steps,
            run_id=run_id,
            response_id=response_id,
            trace_id=trace_id,
            span_id=span_id,
        )
        try:
            await self._submit_scoring(
                result, input_messages, entries, conversation_id, request_context, ground_truth
            )
        except Exception as exc:  # scoring must never cost the caller its answer
            _log.error("scoring_submit_failed", agent=self.name, error_type=type(exc).__name__)
        return result

    async def _loop(
        self, conversation: list[Message]
    ) -> tuple[list[Message], Usage, str | None, str, int]:
        output: list[Message] = []
        usage = Usage()
        response_id: str | None = None
        finish_reason = "max_steps"
        for step in range(1, self.max_steps + 1):
            response = await self._chat(conversation + output)
            response_id = response.id or response_id
            usage = Usage(
                requests=usage.requests + 1,
                input_tokens=usage.input_tokens
                + (response.usage.prompt_tokens if response.usage else 0),
                output_tokens=usage.output_tokens
                + (response.usage.completion_tokens if response.usage else 0),
            )
            choice = response.choices[0]
            message = _assistant_message(choice.message)
            output.append(message)
            if not message.tool_calls:
                return output, usage, response_id, choice.finish_reason or "stop", step
            output.extend(await self._run_tools(message.tool_calls))
        return output, usage, response_id, finish_reason, self.max_steps

    async def _chat(self, messages: list[Message]) -> ChatCompletion:
        with chat_span(
            self.telemetry,
            model=self.model,
            provider=self.provider_name,
            temperature=self.temperature,
            agent_name=self.name,
        ) as span:
            if self.telemetry.capture_content and span.is_recording():
                span.set_attribute(semconv.INPUT_MESSAGES, messages_attribute(messages))
            body: dict[str, Any] = {
                "model": self.model,
                "messages": [message.to_openai() for message in messages],
            }
            if self._tool_definitions:
                body["tools"] = self._tool_definitions
            if self.temperature is not None:
                body["temperature"] = self.temperature
            response = await create_chat_completion(self._client.get(), body)
            record_chat_response(span, response)
            if self.telemetry.capture_content and span.is_recording() and response.choices:
                reply = _assistant_message(response.choices[0].message)
                span.set_attribute(semconv.OUTPUT_MESSAGES, messages_attribute([reply]))
            return response

    async def _run_tools(self, calls: Sequence[ToolCall]) -> list[Message]:
        results: list[Message | None] = [None] * len(calls)

        async def run_one(index: int, call: ToolCall) -> None:
            results[index] = await self._run_tool(call)

        async with anyio.create_task_group() as task_group:
            for index, call in enumerate(calls):
                task_group.start_soon(run_one, index, call)
        return [message for message in results if message is not None]

    async def _run_tool(self, call: ToolCall) -> Message:
        """Run one call; every failure becomes an error message the model can read."""
        with tool_span(self.telemetry, tool_name=call.name, call_id=call.id) as span:
            capture = self.telemetry.capture_content and span.is_recording()
            if capture:
                span.set_attribute(semconv.TOOL_CALL_ARGUMENTS, call.arguments)
            content = await self._tool_output(call, span)
            if capture:
                span.set_attribute(semconv.TOOL_CALL_RESULT, content)
        return Message(role="tool", content=content, tool_call_id=call.id, name=call.name)

    async def _tool_output(self, call: ToolCall, span: Span) -> str:
        tool = self.tools.get(call.name)
        try:
            if tool is None:
                raise LookupError(
                    f"unknown tool {call.name!r}; available: {sorted(self.tools) or 'none'}"
                )
            value = await tool.invoke(tool.parse_arguments(call.arguments))
            return _tool_text(value)
        except Exception as exc:  # the model sees the failure and can recover
            span.set_attribute(semconv.ERROR_TYPE, type(exc).__qualname__)
            span.set_status(Status(StatusCode.ERROR, type(exc).__qualname__))
            return json.dumps({"error": type(exc).__name__, "message": str(exc)[:1000]})

    def _record_agent_outcome(
        self,
        span: Span,
        conversation: list[Message],
        output: list[Message],
        usage: Usage,
        response_id: str | None,
    ) -> None:
        if not span.is_recording():
            return
        span.set_attribute(semconv.USAGE_INPUT_TOKENS, usage.input_tokens)
        span.set_attribute(semconv.USAGE_OUTPUT_TOKENS, usage.output_tokens)
        if response_id:
            span.set_attribute(semconv.RESPONSE_ID, response_id)
        if self.telemetry.capture_content:
            span.set_attribute(semconv.INPUT_MESSAGES, messages_attribute(conversation))
            span.set_attribute(semconv.OUTPUT_MESSAGES, messages_attribute(output))

    async def _submit_scoring(
        self,
        result: AgentResult,
        input_messages: list[Message],
        entries: tuple[SampledScorer, ...],
        conversation_id: str | None,
        request_context: Mapping[str, Any] | None,
        ground_truth: Any,
    ) -> None:
        if not entries:
            return
        point = sample_point(result.trace_id, result.run_id)
        chosen = [entry.scorer for entry in entries if sampled(entry.sampling, point)]
        if not chosen:
            return
        # Built without re-validation: every field is already the right type.
        run = ScorerRun.model_construct(
            run_id=result.run_id,
            input=input_messages,
            output=result.output,
            ground_truth=ground_truth,
            request_context=dict(request_context or {}),
            agent_name=self.name,
            conversation_id=conversation_id,
            trace_id=result.trace_id,
            span_id=result.span_id,
            response_id=result.response_id,
        )
        if self.evals.filter is not None and not await _accepts(self.evals.filter, run):
            return
        for scorer in chosen:
            self.runner.submit(ScoreJob(scorer, run, self.telemetry, self._record_score))

    @on_loop
    def _record_score(self, result: ScoreResult) -> object:
        self._scores.append(result)
        # The runner awaits what this returns: on_score, in a worker thread when it is sync.
        return None if self.evals.on_score is None else call_user(self.evals.on_score, result)


async def _accepts(filter_: Any, run: ScorerRun) -> bool:
    try:
        # In a worker thread: generate_sync callers share one loop, which a slow filter
        # would hold for all of them.
        return bool(await call_user(filter_, run))
    except Exception as exc:  # a broken filter skips scoring; it must not break the agent
        _log.error("evals_filter_failed", error_type=type(exc).__name__)
        return False


def _assistant_message(message: Any) -> Message:
    return Message(
        role="assistant",
        content=message.content,
        tool_calls=tuple(
            ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
            for call in (message.tool_calls or ())
            if getattr(call, "function", None) is not None
        ),
    )


def _final_text(output: Sequence[Message]) -> str:
    for message in reversed(output):
        if message.role == "assistant" and message.content:
            return message.content
    return ""


def _tool_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return json.dumps(value, ensure_ascii=False, default=str)
