"""Thin wrappers giving the faithfulness scorer the shapes of older and peer APIs.

`agentscore.compat.mastra.FaithfulnessMetric` is Mastra's older metric API;
`agentscore.compat.deepeval.FaithfulnessMetric` with `LLMTestCase` is deepeval's.
"""

__all__: list[str] = []
