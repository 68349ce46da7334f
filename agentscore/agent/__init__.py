"""A minimal tool-calling agent over the Chat Completions API, with live scoring attached."""

from __future__ import annotations

import contextlib
import json
import queue
import time
import uuid
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Generator, Mapping, Sequence
from typing import Any

import anyio
import structlog
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletion
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode
from pydantic import BaseModel, ConfigDict, Field

from agentscore._options import check_mapping, check_text
from agentscore._redact import redact_exception, register_secret
from agentscore._runtime.callbacks import call_user, on_loop
from agentscore._runtime.loop import SIGNAL_POLL, BackgroundLoop
from agentscore._wire.clients import LoopLocalClient, create_chat_completion
from agentscore.adapters import coerce_messages
from agentscore.agent.streaming import (
    ChunkAccumulator,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallEvent,
    ToolResultEvent,
)
from agentscore.errors import ConfigurationError
from agentscore.evals import Evals, EvalsLike, SampledScorer, sampled_entries
from agentscore.messages import Message, ToolCall
from agentscore.pipeline.runner import JobRunner, default_runner
from agentscore.result import ScoreResult
from agentscore.run import ScorerRun
from agentscore.scorers.base import Scorer
from agentscore.telemetry import semconv
from agentscore.telemetry.core import Telemetry
from agentscore.telemetry.ledger import ABANDONED
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
        self.runner: JobRunner = self.evals.runner or default_runner()
        register_secret(api_key)
        register_secret(client.api_key if client is not None else None)
        self._client = LoopLocalClient(
            lambda: AsyncOpenAI(api_key=api_key, base_url=base_url), shared=client
        )
        self._tool_definitions = [t.definition() for t in tools]
        self._scores: deque[ScoreResult] = deque(maxlen=keep_scores)
        self._abandoned_streams = 0

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
        _check_call_options(request_context, conversation_id)
        input_messages = coerce_messages(prompt, default_role="user")
        conversation = self._conversation(input_messages)
        run_id = uuid.uuid4().hex
        with agent_span(
            self.telemetry,
            agent_name=self.name,
            model=self.model,
            provider=self.provider_name,
            conversation_id=conversation_id,
        ) as span:
            output, usage, response_id, finish_reason, steps = await self._loop(conversation)
            result = self._finish(
                span, conversation, output, usage, response_id, finish_reason, steps, run_id
            )
        await self._submit_scoring(
            result, input_messages, entries, conversation_id, request_context, ground_truth
        )
        return result

    def _conversation(self, input_messages: list[Message]) -> list[Message]:
        system = [Message(role="system", content=self.instructions)] if self.instructions else []
        return system + input_messages

    def _finish(
        self,
        span: Span,
        conversation: list[Message],
        output: list[Message],
        usage: Usage,
        response_id: str | None,
        finish_reason: str,
        steps: int,
        run_id: str,
    ) -> AgentResult:
        """Record the run on its span and build the result the caller gets."""
        context = span.get_span_context()
        self._record_agent_outcome(span, conversation, output, usage, response_id)
        return AgentResult(
            text=_final_text(output),
            output=output,
            messages=conversation + output,
            usage=usage,
            finish_reason=finish_reason,
            steps=steps,
            run_id=run_id,
            response_id=response_id,
            trace_id=f"{context.trace_id:032x}" if context.is_valid else None,
            span_id=f"{context.span_id:016x}" if context.is_valid else None,
        )

    async def stream(
        self,
        prompt: str | Sequence[Message | Mapping[str, Any]],
        *,
        scorers: Sequence[Scorer | SampledScorer] | None = None,
        conversation_id: str | None = None,
        request_context: Mapping[str, Any] | None = None,
        ground_truth: Any = None,
    ) -> AsyncGenerator[StreamEvent, None]:
        """`generate`, streamed: text deltas, whole tool calls, tool results, then `StreamDone`.

        The run is scored once the stream completes, exactly like `generate`. Leaving early
        (`break`, cancellation, an error) ends the spans with an error status, scores nothing
        and counts the run in `abandoned_streams`; wrap the stream in
        `contextlib.aclosing(...)` to have that happen at once rather than when it is
        garbage-collected.
        """
        entries = self.evals.entries if scorers is None else sampled_entries(scorers, 1.0)
        _check_call_options(request_context, conversation_id)
        input_messages = coerce_messages(prompt, default_role="user")
        conversation = self._conversation(input_messages)
        run_id = uuid.uuid4().hex
        completed = False
        try:
            # Held open across yields, so neither span is made current: the consumer's code
            # runs between events and must not find itself inside our spans.
            with agent_span(
                self.telemetry,
                agent_name=self.name,
                model=self.model,
                provider=self.provider_name,
                conversation_id=conversation_id,
                current=False,
            ) as span:
                output: list[Message] = []
                usage = Usage()
                response_id: str | None = None
                finish_reason, steps = "max_steps", self.max_steps
                for step in range(1, self.max_steps + 1):
                    accumulator = ChunkAccumulator()
                    async for piece in self._chat_stream(conversation + output, accumulator, span):
                        yield TextDelta(piece)
                    response = accumulator.completion()
                    response_id = response.id or response_id
                    usage = _add_usage(usage, response)
                    message = _assistant_message(response.choices[0].message)
                    output.append(message)
                    if not message.tool_calls:
                        finish_reason, steps = response.choices[0].finish_reason or "stop", step
                        break
                    for call in message.tool_calls:
                        yield ToolCallEvent(call)
                    with trace.use_span(
                        span,
                        end_on_exit=False,
                        record_exception=False,
                        set_status_on_exception=False,
                    ):
                        results = await self._run_tools(message.tool_calls)
                    output.extend(results)
                    for result_message in results:
                        yield ToolResultEvent(result_message)
                result = self._finish(
                    span,
                    conversation,
                    output,
                    usage,
                    response_id,
                    finish_reason,
                    steps,
                    run_id,
                )
            await self._submit_scoring(
                result, input_messages, entries, conversation_id, request_context, ground_truth
            )
            completed = True
        finally:
            if not completed:
                self._count_abandoned()
        yield StreamDone(result)

    def stream_sync(
        self,
        prompt: str | Sequence[Message | Mapping[str, Any]],
        *,
        scorers: Sequence[Scorer | SampledScorer] | None = None,
        conversation_id: str | None = None,
        request_context: Mapping[str, Any] | None = None,
        ground_truth: Any = None,
    ) -> Generator[StreamEvent, None, None]:
        """Blocking `stream` for sync code: events arrive as the model writes them.

        Closing the iterator early (a `break`) cancels the run, which counts as abandoned.
        """
        events: queue.SimpleQueue[StreamEvent | BaseException | None] = queue.SimpleQueue()

        async def produce() -> None:
            try:
                async for event in self.stream(
                    prompt,
                    scorers=scorers,
                    conversation_id=conversation_id,
                    request_context=request_context,
                    ground_truth=ground_truth,
                ):
                    events.put(event)
            except Exception as exc:  # handed to the consumer's thread, raised there
                events.put(exc)
            finally:
                events.put(None)

        future = _sync_loop.portal().start_task_soon(produce)
        try:
            while (event := _next_event(events)) is not None:
                if isinstance(event, BaseException):
                    raise event
                yield event
        finally:
            future.cancel()

    @property
    def abandoned_streams(self) -> int:
        """Streams left before they completed: their runs were not scored."""
        return self._abandoned_streams

    def _count_abandoned(self) -> None:
        self._abandoned_streams += 1
        _log.warning("stream_abandoned", agent=self.name)
        with contextlib.suppress(Exception):
            self.telemetry.ledger.add(ABANDONED, ("",), self.name)

    async def _chat_stream(
        self, messages: list[Message], accumulator: ChunkAccumulator, parent: Span
    ) -> AsyncIterator[str]:
        with chat_span(
            self.telemetry,
            model=self.model,
            provider=self.provider_name,
            temperature=self.temperature,
            agent_name=self.name,
            parent=parent,
        ) as span:
            if self.telemetry.capture_content and span.is_recording():
                span.set_attribute(semconv.INPUT_MESSAGES, messages_attribute(messages))
            body = self._chat_body(messages)
            started = time.perf_counter()
            first = True
            try:
                stream = await self._client.get().chat.completions.create(
                    **body, stream=True, stream_options={"include_usage": True}
                )
                async for chunk in stream:
                    piece = accumulator.add(chunk)
                    if first and (piece or accumulator.calls):
                        first = False
                        span.set_attribute(
                            semconv.TIME_TO_FIRST_CHUNK, time.perf_counter() - started
                        )
                    if piece:
                        yield piece
            except Exception as exc:
                redact_exception(exc)  # a 401 may quote the key it refused
                raise
            response = accumulator.completion()
            record_chat_response(span, response)
            if self.telemetry.capture_content and span.is_recording():
                reply = _assistant_message(response.choices[0].message)
                span.set_attribute(semconv.OUTPUT_MESSAGES, messages_attribute([reply]))

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
            usage = _add_usage(usage, response)
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
            try:
                response = await create_chat_completion(
                    self._client.get(), self._chat_body(messages)
                )
            except Exception as exc:
                redact_exception(exc)  # a 401 may quote the key it refused
                raise
            record_chat_response(span, response)
            if self.telemetry.capture_content and span.is_recording() and response.choices:
                reply = _assistant_message(response.choices[0].message)
                span.set_attribute(semconv.OUTPUT_MESSAGES, messages_attribute([reply]))
            return response

    def _chat_body(self, messages: list[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [message.to_openai() for message in messages],
        }
        if self._tool_definitions:
            body["tools"] = self._tool_definitions
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

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
        # Built without re-validation: every field is already the right type.
        run = ScorerRun.unchecked(
            run_id=result.run_id,
            input=input_messages,
            output=result.output,
            documents=[],
            ground_truth=ground_truth,
            request_context=dict(request_context or {}),
            agent_name=self.name,
            tools=self._tool_definitions,
            conversation_id=conversation_id,
            trace_id=result.trace_id,
            span_id=result.span_id,
            response_id=result.response_id,
            read_error=None,
        )
        try:
            await self.evals.asubmit_run(
                run, entries=entries, telemetry=self.telemetry, on_result=self._record_score
            )
        except Exception as exc:  # scoring must never cost the caller its answer
            _log.error("scoring_submit_failed", agent=self.name, error_type=type(exc).__name__)

    @on_loop
    def _record_score(self, result: ScoreResult) -> object:
        self._scores.append(result)
        # The runner awaits what this returns: on_score, in a worker thread when it is sync.
        return None if self.evals.on_score is None else call_user(self.evals.on_score, result)


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


def _check_call_options(request_context: object, conversation_id: object) -> None:
    # Before any model call: a wrong type found while scoring would cost the caller the
    # answer it already paid for.
    check_mapping("request_context", request_context)
    check_text("conversation_id", conversation_id)


def _add_usage(usage: Usage, response: ChatCompletion) -> Usage:
    tokens = response.usage
    return Usage(
        requests=usage.requests + 1,
        input_tokens=usage.input_tokens + (tokens.prompt_tokens if tokens else 0),
        output_tokens=usage.output_tokens + (tokens.completion_tokens if tokens else 0),
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


def _next_event(
    events: queue.SimpleQueue[StreamEvent | BaseException | None],
) -> StreamEvent | BaseException | None:
    # With a timeout, so Ctrl-C reaches the consumer even when another thread got the signal.
    while True:
        try:
            return events.get(timeout=SIGNAL_POLL)
        except queue.Empty:
            continue
