"""The offline demo: a support agent scored live by faithfulness and hallucination scorers."""

from agentscore.demo.run import run_demo

__all__ = ["run_demo"]
