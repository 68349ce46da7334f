"""A labelled set for answer relevancy: questions, each with an on-topic faithful answer and
an off-topic one, over several domains and answer shapes.

Written for the general case (support desks, facts, code, travel, health, money), not for
the local judge's rules: on-topic answers restate the question, continue with pronouns,
paraphrase it, or answer in a phrase; off-topic answers talk about something else
entirely, answer another question of the same domain, give another order's or account's
details, or start on topic and drift. `PARAPHRASES` are on-topic answers of the hardest
shape for words alone: they answer in entirely other words, without a pronoun pointing back.
`python -m tests.support.relevancy_set` prints how the local judge scores both (the figures in
docs/local-judge.md).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PAIRS", "PARAPHRASES", "Pair", "tally"]


@dataclass(frozen=True, slots=True)
class Pair:
    question: str
    on_topic: str
    off_topic: str
    off_shape: str  # how the off-topic answer misses: unrelated, other_question, other_thing, drift

    @property
    def answers(self) -> tuple[tuple[str, str], ...]:
        return (("on_topic", self.on_topic), ("off_topic", self.off_topic))


PAIRS: tuple[Pair, ...] = (
    Pair(
        "Where is my order 1042?",
        "Order 1042 was shipped with UPS on 2026-11-18. It is expected to arrive on 2026-11-24.",
        "Our office is closed on public holidays.",
        "unrelated",
    ),
    Pair(
        "Has order 2001 shipped yet?",
        "Yes, order 2001 shipped yesterday with FedEx.",
        "Order 3150 was delivered to the front door on Monday.",
        "other_thing",
    ),
    Pair(
        "Can I return shoes I bought 20 days ago?",
        "Yes. Shoes can be returned within 30 days of purchase, so yours are still eligible.",
        "Our loyalty programme gives members double points every weekend.",
        "other_question",
    ),
    Pair(
        "Is shipping free?",
        "Standard shipping is free on orders over $50. Express shipping costs $15.",
        "Gift cards never expire and can be used online or in store.",
        "other_question",
    ),
    Pair(
        "How do I reset my password?",
        "Open Settings, choose Security and click 'Reset password'. A reset link is then "
        "emailed to you.",
        "The mobile app supports dark mode on both Android and iOS.",
        "other_question",
    ),
    Pair(
        "What is the status of ticket 5531?",
        "Ticket 5531 is waiting for a reply from the billing team.",
        "Ticket 5529 was closed last Friday after the refund went through.",
        "other_thing",
    ),
    Pair(
        "When does the Berlin store open on Saturdays?",
        "The Berlin store opens at 9 am on Saturdays and closes at 6 pm.",
        "Parking near the stadium costs eight euros per day.",
        "unrelated",
    ),
    Pair(
        "What is the capital of Australia?",
        "The capital of Australia is Canberra.",
        "Kangaroos can hop at speeds of up to 70 kilometres per hour.",
        "drift",
    ),
    Pair(
        "Who wrote Pride and Prejudice?",
        "Pride and Prejudice was written by Jane Austen and published in 1813.",
        "The Brontë sisters grew up in a parsonage in Yorkshire.",
        "other_question",
    ),
    Pair(
        "How many moons does Mars have?",
        "Mars has two moons, Phobos and Deimos.",
        "Jupiter's Great Red Spot is a storm larger than the Earth.",
        "unrelated",
    ),
    Pair(
        "What year did the Berlin Wall fall?",
        "The Berlin Wall fell in 1989.",
        "Munich hosts the Oktoberfest every autumn.",
        "unrelated",
    ),
    Pair(
        "How do I reverse a list in Python?",
        "Call list.reverse() to reverse a list in place, or use reversed() to get an iterator "
        "in reverse order.",
        "JavaScript arrays are sorted as strings unless a comparator is given.",
        "other_question",
    ),
    Pair(
        "Why does my Docker container exit immediately?",
        "A container exits when its main process ends. Your container's command probably "
        "finishes at once, so give it a long-running process such as a server.",
        "Kubernetes schedules pods onto nodes according to their resource requests.",
        "other_question",
    ),
    Pair(
        "What does HTTP status 404 mean?",
        "Status 404 means the server could not find the requested resource.",
        "Status 503 means the server is temporarily unavailable, usually from overload.",
        "other_thing",
    ),
    Pair(
        "How long should I boil an egg for a soft yolk?",
        "Boil the egg for about six minutes for a soft, runny yolk.",
        "Sourdough bread needs a starter that is fed with flour and water daily.",
        "unrelated",
    ),
    Pair(
        "Is ibuprofen safe to take with coffee?",
        "Yes, ibuprofen can be taken with coffee. Take it with food to protect your stomach.",
        "Green tea contains less caffeine than black tea.",
        "drift",
    ),
    Pair(
        "What are the symptoms of dehydration?",
        "Dehydration causes thirst, dark urine, dizziness and tiredness. Severe cases can "
        "lead to confusion.",
        "Vitamin D is made in the skin when it is exposed to sunlight.",
        "unrelated",
    ),
    Pair(
        "How much is the monthly fee for the premium plan?",
        "The premium plan costs $12 per month, billed monthly.",
        "The basic plan includes 5 GB of storage.",
        "other_thing",
    ),
    Pair(
        "Can I change the delivery address for order 7781?",
        "Yes, the delivery address of order 7781 can be changed until it ships. Update it "
        "under My Orders.",
        "Order 7790 was refunded to your credit card on Tuesday.",
        "other_thing",
    ),
    Pair(
        "Which terminal does flight BA117 leave from?",
        "Flight BA117 leaves from Heathrow Terminal 5.",
        "The airport lounge serves breakfast until 11 am.",
        "drift",
    ),
    Pair(
        "Do I need a visa to visit Japan as a Canadian citizen?",
        "Canadian citizens do not need a visa to visit Japan for stays of up to 90 days.",
        "Cherry blossoms in Kyoto usually bloom in early April.",
        "drift",
    ),
    Pair(
        "What is the baggage allowance on economy tickets?",
        "Economy tickets include one checked bag of up to 23 kg and one cabin bag.",
        "Business class passengers can use the priority security lane.",
        "other_question",
    ),
    Pair(
        "How do I cancel my subscription?",
        "Go to Account, then Subscription, and click Cancel. Your subscription stays active "
        "until the end of the billing period.",
        "We are hiring engineers in Lisbon and Warsaw.",
        "unrelated",
    ),
    Pair(
        "Why was my card declined?",
        "Your card was declined because the billing address did not match the one on file "
        "with your bank.",
        "Our new headphones come in three colours.",
        "unrelated",
    ),
    Pair(
        "What is the interest rate on the savings account?",
        "The savings account pays 3.1% interest per year, paid monthly.",
        "Mortgage applications take about two weeks to review.",
        "other_question",
    ),
    Pair(
        "When is my next payment due on loan 88213?",
        "The next payment on loan 88213 is due on 2026-12-01.",
        "Loan 88107 was paid off in full last March.",
        "other_thing",
    ),
    Pair(
        "How do I connect the printer to Wi-Fi?",
        "Press the Wi-Fi button on the printer, then choose your network on its screen and "
        "enter the network password.",
        "Ink cartridges should be stored upright in a cool place.",
        "other_question",
    ),
    Pair(
        "What time does the pharmacy close tonight?",
        "The pharmacy closes at 10 pm tonight.",
        "Flu vaccines are available without an appointment.",
        "drift",
    ),
    Pair(
        "Who won the 2018 FIFA World Cup?",
        "France won the 2018 FIFA World Cup, beating Croatia 4-2 in the final.",
        "Basketball was invented by James Naismith in 1891.",
        "unrelated",
    ),
    Pair(
        "How tall is Mount Everest?",
        "Mount Everest is 8,849 metres tall.",
        "The Amazon is the largest rainforest on the planet.",
        "unrelated",
    ),
    Pair(
        "What is the boiling point of water at sea level?",
        "At sea level water boils at 100 degrees Celsius.",
        "Salt lowers the freezing point of ice on roads.",
        "other_question",
    ),
    Pair(
        "Where can I find my invoice for order 6620?",
        "The invoice for order 6620 is under My Orders. Click the order and choose Download "
        "invoice.",
        "The invoice for order 6618 was sent to your email on Monday.",
        "other_thing",
    ),
    Pair(
        "How do I install the requests library?",
        "Install requests with pip: run pip install requests in your terminal.",
        "Python 2 reached its end of life in January 2020.",
        "drift",
    ),
    Pair(
        "What does the error 'permission denied' mean when running a script?",
        "'Permission denied' means the script is not executable or you lack the rights to "
        "run it. Make it executable with chmod +x.",
        "Tabs and spaces should not be mixed in Python indentation.",
        "unrelated",
    ),
    Pair(
        "Is the museum open on Mondays?",
        "No, the museum is closed on Mondays. It is open from Tuesday to Sunday.",
        "The gift shop sells posters of the main collection.",
        "drift",
    ),
    Pair(
        "How many vacation days do new employees get?",
        "New employees get 25 vacation days per year.",
        "The office cafeteria serves vegetarian lunches every day.",
        "unrelated",
    ),
    Pair(
        "What is the warranty period for the X200 laptop?",
        "The X200 laptop comes with a two-year warranty. It covers hardware faults but not "
        "accidental damage.",
        "The X300 laptop has a three-year warranty and a larger screen.",
        "other_thing",
    ),
    Pair(
        "Can my dog stay with me at the hotel?",
        "Yes, dogs are welcome at the hotel for a fee of $20 per night.",
        "The hotel pool is heated and open year-round.",
        "drift",
    ),
    Pair(
        "What is photosynthesis?",
        "Photosynthesis is how plants turn light, water and carbon dioxide into sugar and oxygen.",
        "Mushrooms are fungi, not plants.",
        "unrelated",
    ),
    Pair(
        "How do I split a bill in the app?",
        "Open the payment, tap Split and choose the friends to share the bill with. Each of "
        "them receives a request for their part.",
        "You can freeze your card from the Cards tab if you lose it.",
        "other_question",
    ),
    Pair(
        "Where is my parcel?",
        "It left our depot on Monday and the courier will deliver it on Thursday.",
        "Our customer service team answers calls from 8 am to 8 pm.",
        "other_question",
    ),
    Pair(
        "Will it rain in London tomorrow?",
        "Yes, rain is expected in London tomorrow afternoon.",
        "Paris will be sunny and warm all week.",
        "other_thing",
    ),
    Pair(
        "Which programming language is Django written in?",
        "Django is written in Python.",
        "Ruby on Rails popularised convention over configuration.",
        "other_question",
    ),
    Pair(
        "How do I check my account balance?",
        "Your balance is shown on the home screen of the app, and you can also check it at "
        "any ATM.",
        "Transfers between accounts at the same bank are free.",
        "other_question",
    ),
)


# On-topic answers that share no word with their question and open without pointing back.
PARAPHRASES: tuple[tuple[str, str], ...] = (
    (
        "What's the weather like in Oslo today?",
        "Expect light snow this afternoon, with temperatures around minus three.",
    ),
    ("How much does the premium plan cost?", "Twelve dollars a month, billed monthly."),
    ("Who painted the Mona Lisa?", "Leonardo da Vinci, in the early sixteenth century."),
    (
        "Can I bring my bike on the train?",
        "Bicycles are allowed on regional services outside rush hour.",
    ),
    (
        "How do I get to the airport from downtown?",
        "Take the express bus from Central Station; buses leave every 15 minutes.",
    ),
    ("When does the sale end?", "Discounts run until Sunday night."),
    (
        "What should I do if I forget my PIN?",
        "Call your bank and ask for a new code to be sent by post.",
    ),
    ("Why is my laptop so slow?", "Too many programs start at boot and fill the memory."),
)


def tally(judge: str = "local") -> dict[tuple[str, str], int]:
    """How many answers of each kind ("on_topic", "off_topic", "paraphrase") end in each
    outcome ("pass", "fail", "undecided", ...), scored by answer relevancy on `judge`."""
    from agentscore.scorers import create_answer_relevancy_scorer

    scorer = create_answer_relevancy_scorer(judge)
    answers = [
        *((kind, pair.question, answer) for pair in PAIRS for kind, answer in pair.answers),
        *(("paraphrase", question, answer) for question, answer in PARAPHRASES),
    ]
    counts: dict[tuple[str, str], int] = {}
    for kind, question, answer in answers:
        result = scorer.run_sync({"input": question, "output": answer})
        outcome = result.label or result.status.value
        counts[kind, outcome] = counts.get((kind, outcome), 0) + 1
    return counts


if __name__ == "__main__":
    figures = tally()
    for kind in ("on_topic", "off_topic", "paraphrase"):
        shown = ", ".join(
            f"{count} {outcome}" for (k, outcome), count in sorted(figures.items()) if k == kind
        )
        print(f"{kind}: {shown}")
