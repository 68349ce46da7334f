"""Build benchmarks/data/agent_tool_results.jsonl.gz: agent answers restating JSON tool results.

Generated, not collected: a seeded random generator fills four kinds of tool result (orders,
flights, weather, subscriptions; 1 to 4 records each, as a list under one key) and writes,
per tool result, one grounded answer (two or three facts of one record, each restated from
its fields with a phrasing drawn from a few templates) and one ungrounded answer (the same
facts with exactly one of them wrong: a value changed to another valid value, a value taken
from another record of the same result, or a fact the result does not hold). The label is
known by construction. Each line: `context` (a list holding the tool result's JSON, as an
agent's scorer receives it), `response`, `label` (1 grounded, 0 not), `doc` (the record's
number) and `error` (the kind of change; "" when grounded).

What it is good for: the share of agent-style runs the local judge decides alone (the
cascade's savings) and its accuracy there. What it is not: evidence about real agents'
answers, which paraphrase more freely than these templates.

Usage: python benchmarks/make_agent_set.py [--records N] [--seed N]
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path

OUT = Path(__file__).resolve().parent / "data" / "agent_tool_results.jsonl.gz"

Record = dict[str, object]
CITIES = ("Lyon", "Porto", "Ghent", "Turin", "Leeds", "Bergen", "Graz", "Cork", "Split")
MONTHS = ("March", "April", "May", "June", "July", "September", "October", "November")


def _date(rng: random.Random) -> str:
    return f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"


def order(rng: random.Random, n: int) -> Record:
    return {
        "order_id": 1000 + rng.randrange(9000),
        "status": rng.choice(("shipped", "delivered", "cancelled", "processing")),
        "carrier": rng.choice(("UPS", "DHL", "FedEx", "GLS")),
        "eta": _date(rng),
        "total_eur": round(rng.uniform(5, 400), 2),
    }


def flight(rng: random.Random, n: int) -> Record:
    origin, destination = rng.sample(CITIES, 2)
    return {
        "flight": f"{rng.choice(('AF', 'LH', 'KL', 'IB'))}{rng.randrange(100, 999)}",
        "from": origin,
        "to": destination,
        "departs": f"{rng.randrange(5, 23):02d}:{rng.choice(('00', '15', '30', '45'))}",
        "gate": f"{rng.choice('ABCD')}{rng.randrange(1, 40)}",
        "status": rng.choice(("on time", "delayed", "boarding", "cancelled")),
    }


def weather(rng: random.Random, n: int) -> Record:
    low = rng.randrange(-5, 20)
    return {
        "city": rng.choice(CITIES),
        "date": _date(rng),
        "high_c": low + rng.randrange(3, 12),
        "low_c": low,
        "conditions": rng.choice(("sunny", "cloudy", "rain", "snow", "fog")),
    }


def subscription(rng: random.Random, n: int) -> Record:
    return {
        "account": f"acct-{rng.randrange(10_000, 99_999)}",
        "plan": rng.choice(("Basic", "Team", "Business", "Enterprise")),
        "seats": rng.randrange(1, 60),
        "renews_on": _date(rng),
        "monthly_usd": rng.choice((9, 29, 49, 99, 249)),
    }


# Per kind: (tool name, record maker, list key, the facts an answer may restate). A fact is
# (field, templates); "{id}" is the record's identifier, "{v}" the field's value.
Fact = tuple[str, tuple[str, ...]]
KINDS: dict[str, tuple[Callable[[random.Random, int], Record], str, str, tuple[Fact, ...]]] = {
    "orders": (
        order,
        "orders",
        "order_id",
        (
            ("status", ("Order {id} is {v}.", "Your order {id} has been {v}.")),
            ("carrier", ("Order {id} ships with {v}.", "{v} is the carrier for order {id}.")),
            ("eta", ("Order {id} should arrive on {v}.", "The ETA for order {id} is {v}.")),
            ("total_eur", ("Order {id} costs {v} EUR in total.", "The total is {v} EUR.")),
        ),
    ),
    "flights": (
        flight,
        "flights",
        "flight",
        (
            ("status", ("Flight {id} is {v}.", "Your flight {id} is currently {v}.")),
            ("to", ("Flight {id} goes to {v}.", "{id} flies to {v}.")),
            ("departs", ("Flight {id} departs at {v}.", "{id} leaves at {v}.")),
            ("gate", ("Flight {id} boards at gate {v}.", "The gate for {id} is {v}.")),
        ),
    ),
    "weather": (
        weather,
        "forecast",
        "city",
        (
            ("high_c", ("In {id} the high will be {v} °C.", "{id} reaches {v} °C.")),
            ("low_c", ("The low in {id} is {v} °C.", "{id} drops to {v} °C at night.")),
            ("conditions", ("Expect {v} in {id}.", "The forecast for {id} is {v}.")),
        ),
    ),
    "subscriptions": (
        subscription,
        "subscriptions",
        "account",
        (
            ("plan", ("Account {id} is on the {v} plan.", "{id} uses the {v} plan.")),
            ("seats", ("Account {id} has {v} seats.", "{id} pays for {v} seats.")),
            ("renews_on", ("Account {id} renews on {v}.", "The renewal date of {id} is {v}.")),
            ("monthly_usd", ("Account {id} costs {v} USD a month.", "{id} pays {v} USD monthly.")),
        ),
    ),
}
# Facts no record holds, for the "invented" change.
INVENTED = (
    "Shipping is free for this order.",
    "You will receive a 10% discount.",
    "Breakfast is included on this flight.",
    "The account includes priority support.",
    "It will be the warmest day of the month.",
)


def build(records: int, seed: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    for n in range(records):
        kind = list(KINDS)[n % len(KINDS)]
        make, key, id_field, facts = KINDS[kind]
        items = [make(rng, i) for i in range(rng.randrange(1, 5))]
        if len({str(item[id_field]) for item in items}) < len(items):
            items = items[:1]  # identifiers must tell the records apart
        target = rng.choice(items)
        context = [json.dumps({"tool": kind, "result": {key: items}})]
        chosen = rng.sample(facts, rng.randrange(2, min(3, len(facts)) + 1))
        sentences = [
            rng.choice(templates).format(id=target[id_field], v=target[field])
            for field, templates in chosen
        ]
        rows.append(_row(context, " ".join(sentences), 1, n, ""))
        wrong, error = _wrong(rng, kind, items, target, id_field, chosen, sentences)
        rows.append(_row(context, wrong, 0, n, error))
    return rows


def _wrong(
    rng: random.Random,
    kind: str,
    items: list[Record],
    target: Record,
    id_field: str,
    chosen: list[Fact],
    sentences: list[str],
) -> tuple[str, str]:
    at = rng.randrange(len(chosen))
    field, templates = chosen[at]
    others = [item for item in items if item is not target and item[field] != target[field]]
    change = rng.choice(("value", "other record", "invented") if others else ("value", "invented"))
    out = list(sentences)
    if change == "invented":
        out.append(rng.choice(INVENTED))
        return " ".join(out), change
    if change == "other record":
        value = rng.choice(others)[field]
    else:
        make = KINDS[kind][0]
        value = target[field]
        while value == target[field]:
            value = make(rng, 0)[field]
    out[at] = rng.choice(templates).format(id=target[id_field], v=value)
    return " ".join(out), change


def _row(context: list[str], response: str, label: int, doc: int, error: str) -> dict[str, object]:
    return {"context": context, "response": response, "label": label, "doc": doc, "error": error}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--seed", type=int, default=23)
    args = parser.parse_args()
    rows = build(args.records, args.seed)
    # mtime=0: the same arguments give the same bytes.
    with gzip.GzipFile(OUT, "wb", mtime=0) as raw:
        for row in rows:
            raw.write((json.dumps(row, ensure_ascii=False) + "\n").encode())
    print(f"{len(rows)} answers about {args.records} tool results -> {OUT}")


if __name__ == "__main__":
    main()
