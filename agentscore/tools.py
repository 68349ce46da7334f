"""Python functions as tools the model can call, with arguments validated by pydantic."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Any, cast, get_type_hints, overload

import anyio.to_thread
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

__all__ = ["Tool", "ToolArgumentsError", "tool"]


class ToolArgumentsError(ValueError):
    """The model's arguments for a tool were not valid JSON or did not fit its signature."""


class Tool:
    """A callable with a name, a description and a pydantic model of its arguments."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        self.description = (description or inspect.getdoc(function) or "").strip()
        self.arguments_model = _arguments_model(function, self.name)
        self._is_async = inspect.iscoroutinefunction(function)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)

    def definition(self) -> dict[str, Any]:
        """The Chat Completions `tools` entry for this tool."""
        schema = self.arguments_model.model_json_schema()
        schema.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }

    def parse_arguments(self, raw: str) -> dict[str, Any]:
        try:
            data = json.loads(raw or "{}")
        except json.JSONDecodeError as exc:
            raise ToolArgumentsError(f"arguments are not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        try:
            validated = self.arguments_model.model_validate(data)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in error['loc'])}: {error['msg']}"
                for error in exc.errors()[:5]
            )
            raise ToolArgumentsError(f"invalid arguments: {problems}") from None
        return {field: getattr(validated, field) for field in type(validated).model_fields}

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Run the tool; sync functions run in a worker thread so they never block the loop."""
        if self._is_async:
            return await cast(Callable[..., Awaitable[Any]], self.function)(**arguments)
        return await anyio.to_thread.run_sync(lambda: self.function(**arguments))


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...
def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a tool of a function; its docstring describes it and its signature types it."""
    if function is not None:
        return Tool(function, name=name, description=description)
    return lambda inner: Tool(inner, name=name, description=description)


def _arguments_model(function: Callable[..., Any], name: str) -> type[BaseModel]:
    hints = get_type_hints(function)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        annotation = hints.get(parameter.name, Any)
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (annotation, default)
    model: type[BaseModel] = create_model(
        f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model
