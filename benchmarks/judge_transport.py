"""CPU per judge request: the judge's own HTTP client against the `openai` SDK (and bare
`httpx2`/`httpx`, the SDK's own transport, as the floor of that stack).

A canned Chat Completions server runs in its own process on 127.0.0.1 (so its CPU is not
counted) and answers every POST at once with the same 1.2 KB verdicts reply. Each client
sends the same 6 KB request body sequentially on one kept-alive connection; the figure is
this process's CPU time (user + system, `time.process_time`) per request after a warm-up,
the reply read into a `ChatReply` as a judge reads it. Rounds alternate the clients, so a
change in the machine's load touches all of them.

Usage: python benchmarks/judge_transport.py [--requests 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable

import anyio
from _machine import print_machine
from openai import AsyncOpenAI

from agentscore.judges._completion import read_chat_reply
from agentscore.judges._transport import ChatTransport, direct_or_sdk, sdk_transport

_SERVER = textwrap.dedent(
    """
    import asyncio, json
    verdicts = [{"claim": f"claim {n}", "verdict": "yes", "reason": "stated"} for n in range(8)]
    message = {"role": "assistant", "content": json.dumps({"claims": verdicts})}
    body = json.dumps({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 120, "total_tokens": 1020},
    }).encode()
    head = b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\n"
    reply = head + b"content-length: %d\\r\\n\\r\\n%s" % (len(body), body)

    async def serve(reader, writer):
        try:
            while True:
                head = await reader.readuntil(b"\\r\\n\\r\\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\\r\\n")
                              if line.lower().startswith(b"content-length:"))
                await reader.readexactly(length)
                writer.write(reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main():
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        print(server.sockets[0].getsockname()[1], flush=True)
        await server.serve_forever()

    asyncio.run(main())
    """
)
BODY = {
    "model": "m",
    "temperature": 0.0,
    "messages": [
        {"role": "system", "content": "You check claims against a context. " * 60},
        {"role": "user", "content": "Context: order 1042 shipped with UPS. " * 100},
    ],
}


def sdk_client(url: str) -> ChatTransport:
    return sdk_transport(AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0))


def own_client(url: str) -> ChatTransport:
    client = AsyncOpenAI(api_key="sk-bench", base_url=url, max_retries=0, timeout=60)
    return direct_or_sdk(client, timeout=60, max_reply_chars=65_536)


async def bare_httpx(url: str, requests: int, warmup: int) -> float:
    """The SDK's HTTP library alone, with the reply read as the judge reads it."""
    try:
        import httpx2 as httpx
    except ImportError:
        import httpx  # type: ignore[no-redef]
    payload = json.dumps(BODY).encode()
    headers = {"authorization": "Bearer sk-bench", "content-type": "application/json"}
    async with httpx.AsyncClient() as client:
        for n in range(warmup + requests):
            if n == warmup:
                started = time.process_time()
            response = await client.post(
                f"{url}/chat/completions", content=payload, headers=headers
            )
            read_chat_reply(response)
    return (time.process_time() - started) / requests


async def through(
    make: Callable[[str], ChatTransport], url: str, requests: int, warmup: int
) -> float:
    transport = make(url)
    try:
        for n in range(warmup + requests):
            if n == warmup:
                started = time.process_time()
            await transport.post(BODY)
    finally:
        await transport.close()
    return (time.process_time() - started) / requests


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print_machine()
    server = subprocess.Popen([sys.executable, "-c", _SERVER], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/v1"
        arms: dict[str, Callable[[], Awaitable[float]]] = {
            "openai SDK (post, raw reply)": lambda: through(sdk_client, url, args.requests, 200),
            "bare httpx (SDK's transport)": lambda: bare_httpx(url, args.requests, 200),
            "agentscore's own client": lambda: through(own_client, url, args.requests, 200),
        }
        figures: dict[str, list[float]] = {name: [] for name in arms}
        for _ in range(args.rounds):
            for name, arm in arms.items():
                figures[name].append(asyncio.run(arm()) * 1e6)
        trio_figure = anyio.run(through, own_client, url, args.requests, 200, backend="trio")
    finally:
        server.kill()
        server.wait()
    own = statistics.median(figures["agentscore's own client"])
    print(f"{args.requests} requests a round, {args.rounds} rounds; CPU µs per request:")
    print(f"  {'client':32} {'min':>7} {'median':>7}  median vs own client")
    for name, values in figures.items():
        median = statistics.median(values)
        print(f"  {name:32} {min(values):7.0f} {median:7.0f}  x{median / own:.2f}")
    print(f"  {'own client on trio (one round)':32} {trio_figure * 1e6:7.0f}")
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
