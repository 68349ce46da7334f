"""Ctrl-C reaches a caller blocked on agentscore's background loop, whichever thread the
kernel handed the signal to (it may pick any thread of the process, not the main one)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# SIGINT sent to the background loop's own thread, as the kernel may do with a Ctrl-C: the
# main thread, blocked in a wait, must still raise KeyboardInterrupt, and soon.
BLOCKED_CALLERS = {
    "loop call": """
        async def forever() -> None:
            await anyio.sleep(60)

        background_loop.call(forever)
    """,
    "agent stream": """
        from agentscore import Agent
        from agentscore.testing import ScriptedEndpoint, ScriptedReply

        def never(body):
            time.sleep(60)
            return ScriptedReply(status=500)

        endpoint = ScriptedEndpoint(never)
        agent = Agent("support", "m", client=endpoint.client(max_retries=0))
        for _ in agent.stream_sync("Where is order 1042?"):
            pass
    """,
}
PREAMBLE = """
    import signal, threading, time
    # As in a terminal, even when the test runs as a background job (SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import anyio
    from agentscore._runtime.loop import background_loop
    from agentscore import agent as agent_module

    def poke() -> None:
        time.sleep(1.0)
        for loop in (background_loop, agent_module._sync_loop):
            if loop.thread is not None:
                signal.pthread_kill(loop.thread.ident, signal.SIGINT)

    threading.Thread(target=poke, daemon=True).start()
    started = time.monotonic()
    try:
"""
EPILOGUE = """
    except KeyboardInterrupt:
        print(f"interrupted after {time.monotonic() - started:.1f}s")
"""


@pytest.mark.parametrize("caller", sorted(BLOCKED_CALLERS))
def test_ctrl_c_delivered_to_another_thread_interrupts_the_waiting_caller(caller: str) -> None:
    body = textwrap.indent(textwrap.dedent(BLOCKED_CALLERS[caller]), "    ")
    script = textwrap.dedent(PREAMBLE) + body + textwrap.dedent(EPILOGUE)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.stdout.startswith("interrupted after"), done.stderr[-2000:]
    assert float(done.stdout.split()[-1].rstrip("s")) < 5
