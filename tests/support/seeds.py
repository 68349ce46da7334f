"""The reference documents' worked examples, with the verdicts a correct judge gives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SeedExample:
    name: str
    context: list[str]
    query: str
    response: str
    verdicts: list[tuple[str, str]]  # (claim, verdict) as a correct judge returns them
    faithfulness: float
    hallucination: float


TESLA = SeedExample(
    name="tesla",
    context=[
        "The Tesla Model 3 was launched in 2017.",
        "It has a range of up to 358 miles.",
        "The base model accelerates 0-60 mph in 5.8 seconds.",
    ],
    query="Tell me about the Tesla Model 3.",
    response=(
        "The Tesla Model 3 was introduced in 2017. It can travel up to 358 miles on a single "
        "charge and the base version goes from 0 to 60 mph in 5.8 seconds."
    ),
    verdicts=[
        ("The Tesla Model 3 was introduced in 2017.", "yes"),
        ("The Tesla Model 3 can travel up to 358 miles on a single charge.", "yes"),
        ("The base Tesla Model 3 goes from 0 to 60 mph in 5.8 seconds.", "yes"),
    ],
    faithfulness=1.0,
    hallucination=0.0,
)
PYTHON = SeedExample(
    name="python",
    context=[
        "Python was created by Guido van Rossum.",
        "The first version was released in 1991.",
        "Python emphasizes code readability.",
    ],
    query="What can you tell me about Python?",
    response=(
        "Python was created by Guido van Rossum and released in 1991. It is the most popular "
        "programming language today and is used by millions of developers worldwide."
    ),
    verdicts=[
        ("Python was created by Guido van Rossum.", "yes"),
        ("Python was released in 1991.", "yes"),
        ("Python is the most popular programming language today.", "unsure"),
        ("Python is used by millions of developers worldwide.", "unsure"),
    ],
    faithfulness=0.5,
    hallucination=0.5,
)
MARS = SeedExample(
    name="mars",
    context=[
        "Mars is the fourth planet from the Sun.",
        "It has a thin atmosphere of mostly carbon dioxide.",
        "Two small moons orbit Mars: Phobos and Deimos.",
    ],
    query="What do we know about Mars?",
    response=(
        "Mars is the third planet from the Sun. It has a thick atmosphere rich in oxygen and "
        "nitrogen, and is orbited by three large moons."
    ),
    verdicts=[
        ("Mars is the third planet from the Sun.", "no"),
        ("Mars has a thick atmosphere rich in oxygen and nitrogen.", "no"),
        ("Mars is orbited by three large moons.", "no"),
    ],
    faithfulness=0.0,
    hallucination=1.0,
)
GROWTH = SeedExample(
    name="company-growth",
    context=[
        "The company had 100 employees in 2020.",
        "Current employee count is approximately 500.",
    ],
    query="What's the company's growth like?",
    response=(
        "The company has grown from 100 employees in 2020 to 500 now, and might expand to "
        "1000 by next year."
    ),
    verdicts=[
        ("The company had 100 employees in 2020.", "yes"),
        ("The company has 500 employees now.", "yes"),
        ("The company might expand to 1000 employees by next year.", "unsure"),
    ],
    faithfulness=0.67,
    hallucination=0.33,
)
FOUNDED = SeedExample(
    name="company-founded",
    context=["The company was established in 1995.", "Currently employs around 450-550 people."],
    query="Tell me about the company.",
    response="The company was founded in 1995 and has 500 employees.",
    verdicts=[
        ("The company was founded in 1995.", "yes"),
        ("The company has 500 employees.", "yes"),
    ],
    faithfulness=1.0,
    hallucination=0.0,
)
ALL = [TESLA, PYTHON, MARS, GROWTH, FOUNDED]


def verify_reply(example: SeedExample) -> dict[str, object]:
    """The one-call judge reply for an example."""
    return {
        "claims": [
            {"claim": claim, "verdict": verdict, "reason": f"judged {verdict} from the context"}
            for claim, verdict in example.verdicts
        ]
    }
