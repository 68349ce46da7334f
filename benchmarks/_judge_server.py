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


def relevant(statement: str, question: str) -> tuple[bool, str]:
    """A statement addresses the question when it shares a content word with it."""
    shared = sorted(set(_content_words(statement)) & set(_content_words(question)))
    if shared:
        return True, f"It shares {', '.join(shared[:3])} with the question."
    return False, "It shares no content word with the question."


def covered(question: str, answer: str) -> tuple[bool, str]:
    """The question (one requirement) is covered when the answer supports its content words,
    by the same 60% rule as a claim and its context."""
    return supported(question, answer)


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
    # agentscore's start-up judge check (`agentscore.judges.check`): a known JSON to echo.
    if "You are a health check." in prompt and '{"ok": true}' in prompt:
        return "agentscore.check", {"ok": True}
    # agentscore: data sits in <<BEGIN LABEL digest>> blocks.
    if "<<BEGIN " in prompt:
        blocks = _blocks(prompt)
        if 'Section "s1"' in prompt:
            return "agentscore.combined", _combined(prompt, blocks)
        if "addresses the QUESTION" in prompt:
            statements = []
            for claim in split_claims(blocks["ANSWER"]):
                ok, why = relevant(claim, blocks["QUESTION"])
                statements.append(
                    {"statement": claim, "verdict": "yes" if ok else "no", "reason": why}
                )
            return "agentscore.relevancy", {"statements": statements}
        if "List every distinct thing the QUESTION asks for" in prompt:
            return "agentscore.completeness", _requirements(blocks["QUESTION"], blocks["ANSWER"])
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

    # deepeval HallucinationMetric, AnswerRelevancyMetric and GEval (their templates/*.txt).
    if "agrees with EACH context" in prompt:
        output = _between(prompt, "Actual Output:\n", "\n\nJSON:")
        raw = _between(prompt, "Contexts:\n", "\n\nActual Output:")
        contexts = _literal_list(raw)
        claims = split_claims(output)
        verdicts = []
        for context in contexts:
            ok = any(supported(claim, str(context))[0] for claim in claims)
            why = "The output agrees with the context." if ok else "No claim agrees with it."
            verdicts.append({"verdict": "yes" if ok else "no", "reason": why})
        return "deepeval.hallucination_verdicts", {"verdicts": verdicts}
    if "reason for the hallucination score" in prompt:
        return "deepeval.hallucination_reason", {"reason": "The score is what the verdicts say."}
    if "breakdown and generate a list of statements presented" in prompt:
        output = _between(prompt, "Text:\n", "\n\nJSON:")
        return "deepeval.statements", {"statements": split_claims(output)}
    if "whether each statement is relevant to address the input" in prompt:
        question = _between(prompt, "Input:\n", "\n\nStatements:")
        statements = _literal_list(_between(prompt, "Statements:\n", "\n\nJSON:"))
        relevancy = []
        for statement in statements:
            ok, why = relevant(str(statement), question)
            relevancy.append({"verdict": "yes"} if ok else {"verdict": "no", "reason": why})
        return "deepeval.relevancy_verdicts", {"verdicts": relevancy}
    if "Given the answer relevancy score" in prompt:
        return "deepeval.relevancy_reason", {"reason": "The score is what the verdicts say."}
    if "Given the following evaluation steps" in prompt:
        question = _between(prompt, "Input:\n", "\n\nActual Output:", last=False)
        output = _between(prompt, "Actual Output:\n", "\n\n", last=False)
        ok, why = covered(question, output)
        return "deepeval.geval", {"reason": why, "score": 10 if ok else 0}

    # ragas AnswerRelevancy and DomainSpecificRubrics (metrics/collections/*/util.py).
    if "Generate a question for the given answer" in prompt:
        data = json.loads(_between(prompt, "input: ", "\nOutput: "))
        words = _content_words(data["response"])[:6]
        return "ragas.question", {"question": f"What about {' '.join(words)}?", "noncommittal": 0}
    if "assign an appropriate score and provide feedback" in prompt:
        data = json.loads(_between(prompt, "input: ", "\nOutput: "))
        ok, why = covered(data["user_input"], data["response"])
        return "ragas.rubric", {"feedback": why, "score": 5 if ok else 1}

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


_SECTION = re.compile(r'Section "(s\d+)": (.*?)(?=\n\nSection "|\n\n<<BEGIN |\Z)', re.DOTALL)


def _combined(prompt: str, blocks: dict[str, str]) -> dict[str, Any]:
    """agentscore's shared request: claims once, then a section per scorer."""
    claims = split_claims(blocks["ANSWER"])
    reply: dict[str, Any] = {"claims": claims}
    for key, text in _SECTION.findall(prompt):
        if "Judge each claim against" in text:
            label = re.search(r"against (CONTEXT(?: \d+)?) only", text)
            context = _context_lines(blocks[label.group(1) if label else "CONTEXT"])
            judged = [supported(claim, context) for claim in claims]
        elif "as a statement of the ANSWER" in text:
            judged = [relevant(claim, blocks["QUESTION"]) for claim in claims]
        elif "List every distinct thing the QUESTION asks for" in text:
            reply[key] = _requirements(blocks["QUESTION"], blocks["ANSWER"])
            continue
        else:
            raise Unrecognised(f"agentscore section {key} of no known kind")
        reply[key] = {
            "items": [{"verdict": "yes" if ok else "no", "reason": why} for ok, why in judged]
        }
    return reply


def _requirements(question: str, answer: str) -> dict[str, Any]:
    ok, why = covered(question, answer)
    verdict = "yes" if ok else "no"
    return {"requirements": [{"requirement": question, "verdict": verdict, "reason": why}]}


def _literal_list(raw: str) -> list[Any]:
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = json.loads(raw)
    return list(value)


def embedding(text: str, size: int = 64) -> list[float]:
    """A bag of content words hashed into `size` dimensions: deterministic, dependency-free."""
    vector = [0.0] * size
    for word in _content_words(text):
        vector[sum(map(ord, word)) % size] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (size - 1)


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
                "prompt_tokens": 0,
                "completion_tokens": 0,
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
        stats["prompt_tokens"] += sum(len(text) for text in texts) // 4
        stats["completion_tokens"] += len(json.dumps(reply, ensure_ascii=False)) // 4
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

    async def embeddings(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, Any]]:
        """Embedding requests count as requests too: the provider sees each one."""
        request = json.loads(body)
        texts = request.get("input") or []
        texts = [texts] if isinstance(texts, str) else texts
        run_name = headers.get("x-bench-run") or "anonymous"
        stats = self.runs[run_name]
        stats["requests"] += 1
        stats["body_bytes"] += len(body)
        stats["kinds"]["embeddings"] += 1
        tokens = sum(len(str(text)) for text in texts) // 4
        stats["prompt_tokens"] += tokens
        started = time.monotonic()
        await asyncio.sleep(self.latency)
        if "x-bench-case" in headers:
            stats["cases"][headers["x-bench-case"]].append([started, time.monotonic()])
        data = [
            {"object": "embedding", "index": index, "embedding": embedding(str(text))}
            for index, text in enumerate(texts)
        ]
        usage = {"prompt_tokens": tokens, "total_tokens": tokens}
        return 200, {"object": "list", "data": data, "model": request.get("model"), "usage": usage}

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
        if method == "POST" and path.endswith("/embeddings"):
            return await self.embeddings(headers, body)
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
