"""Word lists for the local grounding judge: small, hand-made, English-only.

Kept apart from the logic so they can grow without touching it; each list says why it exists.
"""

from __future__ import annotations

import re

__all__ = [
    "ABBREVIATIONS",
    "ANTONYM_PAIRS",
    "CALENDAR",
    "COMPUTING",
    "CURRENCY_WORDS",
    "DETERMINERS",
    "FRAMING",
    "HEDGES",
    "HEDGE_PHRASES",
    "HEDGE_WORDS",
    "INSTRUCTION_VERBS",
    "IRREGULAR_FORMS",
    "KEY_WORDS",
    "NEGATIONS",
    "NOT_FOUND",
    "SPECULATIVE",
    "SPECULATIVE_PHRASES",
    "STATES",
    "STOPWORDS",
    "SUBJECTIVE",
    "SYNONYM_GROUPS",
    "TIME_WORDS",
]


def _bag(text: str) -> frozenset[str]:
    return frozenset(text.split())


def _groups(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(group.split("/")) for group in text.split())


# Abbreviations whose trailing period does not end a sentence.
ABBREVIATIONS = _bag(
    """
    mr mrs ms dr prof st jr sr vs etc e.g i.e no inc ltd co corp approx fig al u.s est
    """
)

# Function words and vague verbs: they carry no checkable content.
STOPWORDS = _bag(
    """
    a an the and or but nor so yet of in on at to for from by with without about as into
    onto over under than then that this these those there here it its it's itself he him his
    she her hers they them their theirs we us our ours you your yours i me my mine who whom
    whose which what when where why how all any both each other some such only own too very
    just also is are was were be been being am has have had having do does did doing can
    could will would shall should may might must not no never n't if because while although
    though until unless since out off again further once s t don isn't wasn't aren't weren't
    doesn't didn't can't cannot won't there's let's one ones currently now today still
    already even well much many lot lots per via etc upon among between through
    during like get got gets make made makes go going went goes come came say said says told
    tell
    """
)

# Words before a noun that say which one, not what: skipped to reach a claim's subject.
DETERMINERS = _bag("the a an this that these those our your their its his her")

# Polarity words: kept out of content overlap and compared separately.
NEGATIONS = _bag(
    """
    not no never n't cannot none neither nor without nobody nothing isn't wasn't aren't
    weren't doesn't didn't can't won't don't hasn't haven't hadn't couldn't shouldn't
    wouldn't
    """
)

# Hedged or forecast language: a possibility is not a stated fact.
SPECULATIVE = _bag(
    """
    might may could possibly perhaps likely unlikely probably potentially maybe perhaps
    presumably supposedly allegedly
    """
)

# Hedges that leave a claim's content as it is: "is expected to arrive on the 24th" says
# what "arrives on the 24th" says, so whether the context states that content decides, in
# either mode. Doubt is not a hedge of this kind ("unlikely to arrive", "allegedly stole"
# question the content), nor is a time ("next year" is content) or a phrase that is often
# literal ("going to Paris"). Matched lower-case only: "Will" and "May" start names and dates.
HEDGE_WORDS = _bag(
    """
    might may could should would possibly perhaps likely probably potentially maybe
    presumably expected scheduled anticipated
    """
)
HEDGE_PHRASES = re.compile(
    r"\b(?:plans? to|planning to|intends? to|expected to|scheduled (?:to|for)|"
    r"(?:is|are) set to|slated to|poised to|on track to|aims? to)\b"
)

# Words that say a number was computed from others ("a total of 50,000", "averaging 25 points
# a game", "won by a margin of 7"): the local judge does no arithmetic, so a number such a
# claim gives and the context lacks is never decided. Not "per": mostly "per cent".
COMPUTING = _bag(
    """
    total totals totalled totaled totaling totalling combined combine combining average
    averages averaged averaging mean median sum altogether overall aggregate cumulative
    difference margin ratio
    """
)

# Evaluative words: an opinion is only grounded if the context voices it too.
SUBJECTIVE = _bag(
    """
    best worst amazing awesome great greatest excellent wonderful terrible horrible
    incredible outstanding perfect fantastic impressive remarkable superior
    beautiful stunning brilliant superb exceptional magnificent popular
    renowned legendary iconic revolutionary groundbreaking innovative premier
    unparalleled unmatched finest top-notch
    """
)

# Calendar words are capitalised but are not names.
CALENDAR = _bag(
    """
    january february march april may june july august september october november december
    jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday thursday friday
    saturday sunday
    """
)

# Words of a time or a duration, besides the calendar's: what an answer to "when" holds.
TIME_WORDS = CALENDAR | _bag(
    """
    today tomorrow tonight yesterday morning afternoon evening night noon midnight weekend
    minute minutes hour hours day days week weeks month months year years until am pm
    """
)

# Words of money: what an answer to "how much" holds when it spells the amount out.
CURRENCY_WORDS = _bag("dollar dollars euro euros pound pounds cent cents usd eur gbp free")

# Verbs an instruction opens with: what an answer to "how do I" starts with.
INSTRUCTION_VERBS = _bag(
    """
    open go click tap press select choose call contact visit email send enter type use run
    install take try restart turn log sign set add remove delete download update check ask
    follow make pick book fill submit write
    """
)

# Framing words of summaries and answers ("the speakers discussed", "according to the
# document"): they describe the text, not the world, so they are neither support nor gap.
FRAMING = _bag(
    """
    discuss mention according context document passage article text summary speaker
    conversation meeting talk explain describe believe think suggest propose highlight
    emphasize express various several certain specific particular overall also
    """
)

# Approximation markers: allow a tolerance when comparing numbers.
HEDGES = _bag(
    """
    about approximately around roughly nearly almost some approx estimated circa over under
    ~ close
    """
)

# Multi-word forecasts and intentions: a stated plan is not a fact about the present.
SPECULATIVE_PHRASES = re.compile(
    rf"{HEDGE_PHRASES.pattern}|"
    r"\b(?:going to|by next (?:year|month|week|quarter|decade)|next year|in the future)\b",
    re.IGNORECASE,
)

# Words read as one concept, so paraphrase does not look like new content.
SYNONYM_GROUPS = _groups(
    """
    arrive/arrival/eta/delivery/deliver ship/dispatch
    launch/introduce/release/debut/unveil found/establish/create/start/form
    increase/raise/augment/grow/rise/boost/expand/climb
    decrease/reduce/lower/cut/decline/drop/fall/shrink/diminish
    big/large/huge/enormous/sizable small/little/tiny/minor buy/purchase/acquire
    begin/commence end/finish/conclude/complete show/demonstrate/indicate/reveal
    use/utilize help/assist/aid/support car/vehicle/automobile
    firm/company/business/corporation employee/employ/staff/worker/people/person movie/film
    speed/velocity quick/fast/rapid main/primary/principal/chief discuss/talk/debate
    mostly/mainly/largely/primarily author/writer job/role/position house/home/residence
    die/pass award/prize student/pupil town/city happy/glad rich/wealthy home/household
    """
)

# Terse JSON field names spelt out, so a claim's plain words meet them ("expected_on" is
# when something is expected to arrive; "eta" likewise).
KEY_WORDS = {
    "eta": "estimated arrival",
    "expected": "expected arrival",
    "qty": "quantity",
    "amt": "amount",
    "dob": "date of birth",
}

# Irregular verb forms folded onto their base so "grew" and "grown" meet "grow".
IRREGULAR_FORMS = _groups(
    """
    grow/grew/grown rise/rose/risen fall/fell/fallen begin/began/begun take/took/taken
    write/wrote/written give/gave/given win/won lose/lost lead/led build/built sell/sold
    buy/bought hold/held run/ran choose/chose/chosen drive/drove/driven speak/spoke/spoken
    know/knew/known show/shown see/saw/seen fly/flew/flown draw/drew/drawn break/broke/broken
    wear/wore/worn meet/met pay/paid teach/taught think/thought bring/brought catch/caught
    fight/fought sing/sang/sung swim/swam/swum become/became keep/kept spend/spent send/sent
    """
)

# A claim using one side where the matching context sentence uses the other contradicts it.
ANTONYM_PAIRS = _groups(
    """
    thin/thick small/large increase/decrease before/after first/last above/below more/less
    more/fewer high/low higher/lower highest/lowest gain/loss win/lose won/lost open/close
    accept/reject positive/negative success/failure early/late earlier/later new/old
    young/old maximum/minimum buy/sell import/export strong/weak fast/slow hot/cold
    north/south east/west legal/illegal agree/disagree allow/forbid allow/prohibit
    approve/reject profit/loss support/oppose majority/minority internal/external
    male/female best/worst most/least long/short wide/narrow heavy/light rich/poor
    easy/difficult happy/sad same/different true/false private/public permanent/temporary
    up/down begin/end beginning/end automated/manual within/outside
    always/never inside/outside top/bottom include/exclude entry/exit upper/lower
    minimum/maximum morning/evening day/night rural/urban cheap/expensive dead/alive
    present/absent success/fail encourage/discourage like/dislike pass/fail summer/winter
    left/right ancient/modern domestic/foreign full/empty safe/dangerous hire/fire
    arrive/depart increasing/decreasing add/remove enable/disable confirm/deny
    complete/incomplete able/unable possible/impossible likely/unlikely known/unknown
    available/unavailable successful/unsuccessful before/later
    """
)

# States a thing is in, as written (surface words: "delivered" is a state, "delivery" is
# not). Each maps to (group, state, stage). Within a group a thing is in one state at a time;
# in a group with stages a later stage implies the earlier ones ("delivered" implies it
# shipped), and a stage of -1 excludes every other state ("cancelled").
STATES: dict[str, tuple[str, str, int]] = {
    **{w: ("order", "placed", 0) for w in ("placed", "ordered")},
    **{w: ("order", "processing", 1) for w in ("pending", "processing", "confirmed")},
    "packed": ("order", "packed", 2),
    **{w: ("order", "shipped", 3) for w in ("shipped", "dispatched")},
    "transit": ("order", "transit", 4),
    "delivered": ("order", "delivered", 5),
    "returned": ("order", "returned", 6),
    "refunded": ("order", "refunded", 7),
    **{w: ("order", "cancelled", -1) for w in ("cancelled", "canceled")},
    **{w: ("account", w, -1) for w in ("active", "inactive", "suspended", "deactivated")},
    **{w: ("payment", w, -1) for w in ("paid", "unpaid", "overdue")},
    **{w: ("decision", w, -1) for w in ("approved", "rejected", "denied")},
}

# A record that says the thing asked about does not exist.
NOT_FOUND = re.compile(
    r"\b(?:not found|no such|(?:does|do|did)(?: not|n't) exist|no (?:matching )?records?|"
    r"(?:could|can)(?: not|n't|not) (?:be )?(?:find|found|locate|located)|"
    r"unable to (?:find|locate))\b",
    re.IGNORECASE,
)
