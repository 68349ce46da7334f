"""The judge protocol: what scorers ask judges, as typed models both sides import.

Each task has a name (`Task`), a payload model (the request as data, for judges that do not
read prompts, like the local judge) and a reply model (what an LLM judge's JSON must match).
Scorers build requests from these; judges answer them; nothing is agreed by string literals.
"""

from __future__ import annotations

from enum import StrEnum
from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.json_schema import SkipJsonSchema

__all__ = [
    "AnalyzePayload",
    "ClaimMode",
    "ClaimVerdict",
    "ClaimVerdicts",
    "Claims",
    "CompletenessPayload",
    "ContextRelevancePayload",
    "ConversationCompletenessPayload",
    "ConversationRequest",
    "ConversationRequests",
    "CriterionScore",
    "CriterionScores",
    "ExtractPayload",
    "Goal",
    "Goals",
    "ItemVerdict",
    "ItemVerdicts",
    "KnowledgeRetentionPayload",
    "Payload",
    "Reason",
    "ReasonPayload",
    "RelevancyPayload",
    "Requirement",
    "Requirements",
    "Retention",
    "RetentionVerdict",
    "RetentionVerdicts",
    "RubricPayload",
    "StatedFact",
    "StatementVerdict",
    "StatementVerdicts",
    "Task",
    "TaskCompletionPayload",
    "ToolChoicePayload",
    "Verdict",
    "VerdictItem",
    "Verdicts",
    "VerifyPayload",
]

ClaimMode = Literal["faithfulness", "hallucination"]


class Task(StrEnum):
    """Every judgement a built-in scorer asks for."""

    EXTRACT = "claims.extract"
    VERIFY = "claims.verify"
    ANALYZE = "claims.analyze"
    REASON = "claims.reason"
    RELEVANCY = "answer.relevancy"
    COMPLETENESS = "answer.completeness"
    RUBRIC = "answer.rubric"
    CONTEXT_RELEVANCE = "context.relevance"
    TOOL_CHOICE = "tools.choice"
    TASK_COMPLETION = "trace.task_completion"
    KNOWLEDGE_RETENTION = "conversation.knowledge_retention"
    CONVERSATION_COMPLETENESS = "conversation.completeness"
    # Several scorers' tasks on one generation in one request (agentscore.scorers.together).
    COMBINED = "combined"


class Verdict(StrEnum):
    YES = "yes"
    NO = "no"
    UNSURE = "unsure"


# Set by code, never asked of an LLM judge: left out of the reply schema it is sent.
Confidence = SkipJsonSchema[float | None]
DecidedBy = SkipJsonSchema[str | None]


# --- replies -------------------------------------------------------------------------------


class ClaimVerdict(BaseModel):
    claim: str = Field(description="One atomic claim, in the answer's own words.")
    verdict: Verdict
    reason: str = Field(description="One short sentence, quoting the context when it can.")
    # How sure the deciding judge is (the local judge sets it; None: not known).
    confidence: Confidence = Field(default=None, ge=0.0, le=1.0)
    # The model name of the judge whose verdict this is (a cascade mixes two).
    decided_by: DecidedBy = None


class ClaimVerdicts(BaseModel):
    """Reply to `claims.verify`: the answer's claims, each with its verdict."""

    claims: list[ClaimVerdict]


class Claims(BaseModel):
    """Reply to `claims.extract`."""

    claims: list[str]


class VerdictItem(BaseModel):
    claim: str
    verdict: Verdict
    reason: str
    confidence: Confidence = Field(default=None, ge=0.0, le=1.0)
    decided_by: DecidedBy = None


class Verdicts(BaseModel):
    """Reply to `claims.analyze`: one verdict per given claim, in order."""

    verdicts: list[VerdictItem]


class Reason(BaseModel):
    """Reply to `claims.reason`."""

    reason: str


class StatementVerdict(BaseModel):
    statement: str = Field(description="One statement of the answer, in its own words.")
    verdict: Verdict = Field(description="yes: addresses the question; no: off-topic.")
    reason: str
    # How sure the judge is (the local judge sets it: below 0.9 it could not tell).
    confidence: Confidence = Field(default=None, ge=0.0, le=1.0)


class StatementVerdicts(BaseModel):
    """Reply to `answer.relevancy`: the answer's statements, each judged against the question."""

    statements: list[StatementVerdict]


class ItemVerdict(BaseModel):
    verdict: Verdict
    reason: str


class ItemVerdicts(BaseModel):
    """One verdict per item given (a claim, a context item, a tool call), in their order."""

    items: list[ItemVerdict]


class Requirement(BaseModel):
    requirement: str = Field(description="One thing the question asks for.")
    verdict: Verdict = Field(description="yes: covered; unsure: partly; no: missing.")
    reason: str


class Requirements(BaseModel):
    """Reply to `answer.completeness`: what the question asks for, each marked covered or not."""

    requirements: list[Requirement]


class CriterionScore(BaseModel):
    score: int = Field(description="An integer from 0 to the scale's top.")
    reason: str


class CriterionScores(BaseModel):
    """Reply to `answer.rubric`: one score per criterion, in the order given."""

    criteria: list[CriterionScore]


class Goal(BaseModel):
    goal: str = Field(description="One thing the user asked the agent to get done.")
    verdict: Verdict = Field(description="yes: done; unsure: partly done; no: not done.")
    steps: list[int] = Field(
        default_factory=list,
        description="The numbers of the STEPS that show it done, or show it failing.",
    )
    reason: str


class Goals(BaseModel):
    """Reply to `trace.task_completion`: what the user asked for, each done or not, with the
    steps that show it."""

    goals: list[Goal]


Retention = Literal["keeps", "forgets", "contradicts"]


class StatedFact(BaseModel):
    turn: int = Field(description="The number of the TURN that states it.")
    fact: str = Field(description="One fact the user or a tool stated, in its own words.")


class RetentionVerdict(BaseModel):
    turn: int = Field(description="The number of the TURN whose answer this judges.")
    verdict: Retention = Field(
        description="keeps: the answer is consistent with every fact stated so far (or "
        "needs none); forgets: it ignores or asks again for a fact already stated; "
        "contradicts: it says the opposite of one."
    )
    facts: list[int] = Field(
        default_factory=list,
        description="For forgets and contradicts: the numbers (from 1) of the `facts` it "
        "forgets or contradicts; empty for keeps.",
    )
    reason: str


class RetentionVerdicts(BaseModel):
    """Reply to `conversation.knowledge_retention`: the facts stated, and one verdict per
    turn's answer."""

    facts: list[StatedFact]
    answers: list[RetentionVerdict]


class ConversationRequest(BaseModel):
    request: str = Field(description="One thing the user asked for, in their own words.")
    turn: int = Field(description="The number of the TURN where the user asked it.")
    verdict: Verdict = Field(description="yes: satisfied; unsure: partly; no: never satisfied.")
    satisfied_in: int | None = Field(
        default=None,
        description="The number of the TURN whose answer satisfies it (partly, for unsure); "
        "null when no answer does.",
    )
    reason: str


class ConversationRequests(BaseModel):
    """Reply to `conversation.completeness`: the user's requests across the turns, each
    satisfied or not."""

    requests: list[ConversationRequest]


# --- payloads ------------------------------------------------------------------------------


class _Payload(BaseModel):
    model_config = ConfigDict(frozen=True)
    task: ClassVar[Task]
    # Set by the scorer pipeline: the run a request belongs to. It may come from the sender
    # (trace and span ids in `agentscore serve`), so nothing a check relies on is chosen by it.
    run_id: str | None = None


class ExtractPayload(_Payload):
    task: ClassVar[Task] = Task.EXTRACT
    output: str


class VerifyPayload(_Payload):
    task: ClassVar[Task] = Task.VERIFY
    mode: ClaimMode
    output: str
    context: tuple[str, ...]


class AnalyzePayload(_Payload):
    task: ClassVar[Task] = Task.ANALYZE
    mode: ClaimMode
    claims: tuple[str, ...]
    context: tuple[str, ...]


class ReasonPayload(_Payload):
    task: ClassVar[Task] = Task.REASON
    mode: ClaimMode
    score: float
    verdicts: tuple[VerdictItem, ...]
    unsure_counts_as_supported: bool = False


class RelevancyPayload(_Payload):
    task: ClassVar[Task] = Task.RELEVANCY
    question: str
    output: str


class CompletenessPayload(_Payload):
    task: ClassVar[Task] = Task.COMPLETENESS
    question: str
    output: str


class RubricPayload(_Payload):
    task: ClassVar[Task] = Task.RUBRIC
    question: str
    output: str
    criteria: tuple[str, ...]
    points: int


class ContextRelevancePayload(_Payload):
    task: ClassVar[Task] = Task.CONTEXT_RELEVANCE
    question: str
    context: tuple[str, ...]


class ToolChoicePayload(_Payload):
    task: ClassVar[Task] = Task.TOOL_CHOICE
    question: str
    calls: tuple[str, ...]
    tools: tuple[str, ...]


class TaskCompletionPayload(_Payload):
    """A whole run's trajectory: what the user asked, each step in order (rendered as text,
    numbered from 1), and the final answer."""

    task: ClassVar[Task] = Task.TASK_COMPLETION
    request: str
    steps: tuple[str, ...]
    answer: str


class KnowledgeRetentionPayload(_Payload):
    """A conversation's turns in order (each rendered as text, numbered from 1)."""

    task: ClassVar[Task] = Task.KNOWLEDGE_RETENTION
    turns: tuple[str, ...]


class ConversationCompletenessPayload(_Payload):
    """A conversation's turns in order (each rendered as text, numbered from 1)."""

    task: ClassVar[Task] = Task.CONVERSATION_COMPLETENESS
    turns: tuple[str, ...]


Payload = (
    ExtractPayload
    | VerifyPayload
    | AnalyzePayload
    | ReasonPayload
    | RelevancyPayload
    | CompletenessPayload
    | RubricPayload
    | ContextRelevancePayload
    | ToolChoicePayload
    | TaskCompletionPayload
    | KnowledgeRetentionPayload
    | ConversationCompletenessPayload
)
