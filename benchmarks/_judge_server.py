"""A local OpenAI-compatible judge for the peers benchmark (standard library only).

`POST /v1/chat/completions` waits a fixed latency, then answers the prompt it recognises
with a valid structured reply in the shape that prompt asks for:

- agentscore: one-call verify, stepwise extract / analyze / reason;
- deepeval FaithfulnessMetric: claims, truths, verdicts, reason;
- ragas Faithfulness: statement generation, NLI verdicts.

Every library gets the same decisions: claims are the output's sentences, split by one
rule, and a claim is supported ("yes", 1) when at least 60% of its content words appear in
the context, else "no" (0). Same claims and verdicts, so the three libraries should reach
the same scores, and the orchestrator checks that they do.

Per run (header `X-Bench-Run`, else the bearer API key) the server counts requests, the
characters of the messages' content ("prompt characters"), request body bytes, requests by
prompt kind, and keeps each request's (start, end) per case (header `X-Bench-Case`) so the
sequential round trips on a case's critical path can be measured. `GET /stats` returns it
all as JSON; `POST /reset` clears it. A prompt it does not recognise gets a 400 and is
counted as `unrecognised`, so it cannot go unnoticed.

Usage: python benchmarks/_judge_server.py [--latency 0.2] [--port 0]  (prints "PORT <n>")
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import contextlib
import json
import re
import time
from collections import defaultdict
from typing import Any

SUPPORT_SHARE = 0.6
_WORD = re.compile(r"[^\W_]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[a-z0-9)][.!?])(?=[A-Z])")
_BLOCK = re.compile(r"<<BEGIN (\w+) ([0-9a-f]+)>>\n(.*?)\n<<END \1 \2>>", re.DOTALL)
_STOPWORDS = frozenset(
    re.findall(
        r"\w+",
        """a an and are as at be been but by did do does for from had has have he her his i in
        is it its of on or she so than that the their them then there they this to was were
        what which who whom whose will with would you your not no yes also after before over
        into about more most""",
    )
)


# -- the decisions, shared by every library ----------------------------------------------


def split_claims(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE.split(text.strip()) if part.strip()]


def _content_words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]


def supported(claim: str, context: str) -> tuple[bool, str]:
    words = _content_words(claim)
    if not words:
        return True, "The claim has no content words to check."
    known = set(_WORD.findall(context.lower()))
    found = sum(1 for word in words if word in known)
    share = found / len(words)
    verdict = share >= SUPPORT_SHARE
    reason = f"{found} of {len(words)} content words of the claim appear in the context" + (
        ", so the context supports it." if verdict else "; the context does not support it."
    )
    return verdict, reason


def _score(verdicts: list[bool]) -> float:
    return round(sum(verdicts) / len(verdicts), 2) if verdicts else 0.0


# -- prompt recognition ------------------------------------------------------------------


class Unrecognised(Exception):
    pass


def _between(text: str, start: str, end: str, *, last: bool = True) -> str:
    at = text.rfind(start) if last else text.find(start)
    if at < 0:
        raise Unrecognised(f"marker {start!r} not found")
    at += len(start)
    stop = text.find(end, at)
    return text[at : stop if stop >= 0 else len(text)].strip()


def _blocks(text: str) -> dict[str, str]:
    return {label: body for label, _digest, body in _BLOCK.findall(text)}


def _numbered(text: str) -> list[str]:
    return [re.sub(r"^\d+\.\s*", "", line).strip() for line in text.splitlines() if line.strip()]


def _context_lines(text: str) -> str:
    return "\n".join(re.sub(r"^\[\d+\]\s*", "", line) for line in text.splitlines())


def answer(prompt: str) -> tuple[str, dict[str, Any]]:
    """(kind, reply object) for the concatenated message contents of one request."""
    # agentscore: data sits in <<BEGIN LABEL digest>> blocks.
    if "<<BEGIN " in prompt:
        blocks = _blocks(prompt)
        if "VERDICTS" in blocks:
            match = re.search(r"score is ([0-9.]+) on a scale", prompt)
            score = match.group(1) if match else "0"
            return "agentscore.reason", {
                "reason": f"The score is {score} because of the verdicts listed."
            }
        if "CLAIMS" in blocks:
            context = _context_lines(blocks["CONTEXT"])
            verdicts = []
            for claim in _numbered(blocks["CLAIMS"]):
                ok, why = supported(claim, context)
                verdicts.append({"claim": claim, "verdict": "yes" if ok else "no", "reason": why})
            return "agentscore.analyze", {"verdicts": verdicts}
        if "ANSWER" in blocks and "CONTEXT" in blocks:
            context = _context_lines(blocks["CONTEXT"])
            claims = []
            for claim in split_claims(blocks["ANSWER"]):
                ok, why = supported(claim, context)
                claims.append({"claim": claim, "verdict": "yes" if ok else "no", "reason": why})
            return "agentscore.verify", {"claims": claims}
        if "ANSWER" in blocks:
            return "agentscore.extract", {"claims": split_claims(blocks["ANSWER"])}
        raise Unrecognised("agentscore blocks without a known task")

    # deepeval FaithfulnessMetric (templates in deepeval/metrics/faithfulness/templates).
    if "can inferred from the provided actual AI output" in prompt:
        output = _between(prompt, "AI Output:\n", "\n\nJSON:")
        return "deepeval.claims", {"claims": split_claims(output)}
    if '"truths" key' in prompt:
        context = _between(prompt, "\nText:\n", "\n\nJSON:")
        return "deepeval.truths", {"truths": split_claims(context)}
    if "indicate whether EACH claim" in prompt:
        context = _between(prompt, "Retrieval Contexts:\n", "\n\nClaims:\n")
        raw_claims = _between(prompt, "\n\nClaims:\n", "\n\nJSON:")
        try:
            claims = ast.literal_eval(raw_claims)
        except (ValueError, SyntaxError):
            claims = json.loads(raw_claims)
        verdicts: list[dict[str, Any]] = []
        for claim in claims:
            ok, why = supported(str(claim), context)
            verdicts.append({"verdict": "yes"} if ok else {"verdict": "no", "reason": why})
        return "deepeval.verdicts", {"verdicts": verdicts}
    if "Contradictions:" in prompt and "Faithfulness Score:" in prompt:
        score = _between(prompt, "Faithfulness Score:\n", "\n")
        return "deepeval.reason", {"reason": f"The score is {score} because of the verdicts."}

    # ragas Faithfulness (ragas/metrics/collections/faithfulness/util.py).
    if "fully understandable statements" in prompt:
        data = json.loads(_between(prompt, "input: ", "\nOutput: "))
        return "ragas.statements", {"statements": split_claims(data["answer"])}
    if "judge the faithfulness of a series of statements" in prompt:
        data = json.loads(_between(prompt, "input: ", "\nOutput: "))
        judged = []
        for statement in data["statements"]:
            ok, why = supported(statement, data["context"])
            judged.append({"statement": statement, "reason": why, "verdict": int(ok)})
        return "ragas.nli", {"statements": judged}

    raise Unrecognised("no known prompt")


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return ""


def _schema_problem(request: dict[str, Any], reply: dict[str, Any]) -> str | None:
    """A light check that the reply fits a requested JSON schema's top-level keys."""
    response_format = request.get("response_format") or {}
    if response_format.get("type") != "json_schema":
        return None
    schema = (response_format.get("json_schema") or {}).get("schema") or {}
    properties = set(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    keys = set(reply)
    if not required <= keys or (properties and not keys <= properties):
        return f"reply keys {sorted(keys)} vs schema {sorted(properties)}"
    return None


# -- HTTP --------------------------------------------------------------------------------


class JudgeServer:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.reset()

    def reset(self) -> None:
        self.runs: dict[str, dict[str, Any]] = defaultdict(
            lambda: {
                "requests": 0,
                "prompt_chars": 0,
                "body_bytes": 0,
                "kinds": defaultdict(int),
                "unrecognised": 0,
                "schema_mismatch": 0,
                "cases": defaultdict(list),
            }
        )

    async def chat(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        started = time.monotonic()
        request = json.loads(body)
        run_name = headers.get("x-bench-run") or headers.get("authorization", "").removeprefix(
            "Bearer "
        )
        stats = self.runs[run_name or "anonymous"]
        messages = request.get("messages") or []
        texts = [_message_text(message.get("content")) for message in messages]
        stats["requests"] += 1
        stats["prompt_chars"] += sum(len(text) for text in texts)
        stats["body_bytes"] += len(body)
        await asyncio.sleep(self.latency)
        try:
            kind, reply = answer("\n\n".join(texts))
        except (Unrecognised, KeyError, ValueError) as exc:
            stats["unrecognised"] += 1
            return 400, {"error": {"message": f"judge server: {exc}", "type": "invalid_request"}}
        stats["kinds"][kind] += 1
        if _schema_problem(request, reply):
            stats["schema_mismatch"] += 1
        content = json.dumps(reply, ensure_ascii=False)
        if "x-bench-case" in headers:
            stats["cases"][headers["x-bench-case"]].append([started, time.monotonic()])
        prompt_tokens = sum(len(text) for text in texts) // 4
        return 200, {
            "id": f"chatcmpl-bench{stats['requests']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model", "judge"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": None},
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(content) // 4,
                "total_tokens": prompt_tokens + len(content) // 4,
            },
        }

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, path, _version = line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    header = await reader.readline()
                    if header in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = header.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, payload = await self.route(method, path.split("?", 1)[0], headers, body)
                data = json.dumps(payload).encode()
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    "Content-Type: application/json\r\n"
                    f"Content-Length: {len(data)}\r\n"
                    "Connection: keep-alive\r\n\r\n".encode()
                    + data
                )
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def route(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, dict[str, Any]]:
        if method == "POST" and path.endswith("/chat/completions"):
            return await self.chat(headers, body)
        if method == "GET" and path == "/stats":
            return 200, json.loads(json.dumps(self.runs))
        if method == "POST" and path == "/reset":
            self.reset()
            return 200, {"ok": True}
        run_name = headers.get("x-bench-run") or "anonymous"
        self.runs[run_name]["unrecognised"] += 1
        return 404, {"error": {"message": f"judge server: no route {method} {path}"}}


async def serve(latency: float, port: int) -> None:
    judge = JudgeServer(latency)
    server = await asyncio.start_server(judge.handle, "127.0.0.1", port, backlog=256)
    print(f"PORT {server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.latency, args.port))


if __name__ == "__main__":
    main()
