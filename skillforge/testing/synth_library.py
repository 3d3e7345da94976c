"""A synthetic skill library for measuring routing at scale (issue 26): about 200 skills over 66
domains, with near-duplicate pairs, about 20 % Chinese, and labelled train / dev / test queries.

Everything comes from a hand-written catalogue (`_CATALOGUE`, at the end of this module) and a
seeded `random.Random`, so one seed always gives the same library. Each catalogue job is a
concrete task with a 1-2 sentence description, keywords, and six request *cores* (what a user
asks, as a verb phrase): three "seen" cores become the skill's 5 examples and 4 train queries,
three "held" cores become 2 dev and 4 test queries. Seen and held cores are different requests,
and they are wrapped in different phrasing frames (`SEEN_FRAMES_*` / `HELD_FRAMES_*`), so a test
query never repeats an example and a router cannot pass by memorising the examples.

Near-duplicate pairs are two jobs of one domain whose descriptions overlap but whose jobs differ
(a QR code generator and a QR code reader); each names the other's job in `not_for`. Their
queries name the job's action, so a careful human can tell them apart.

NONE queries (expected None: no skill fits) are chit-chat, trivia, requests from domains the
catalogue does not cover, and near misses: requests inside a covered domain that no job does.
Their base utterances are split between train, dev and test, so test NONE queries are unseen.
A few skills are themselves chat-like (jokes, a motivational quote, a mood check-in): chit-chat
NONE queries avoid what they do.

`write_workspace` writes the library as skills/<name>/SKILL.md plus the query sets as JSONL
({"query": ..., "expected": ...}), the format `skillforge route calibrate|fit|eval --cases` reads.
Stdlib only, besides the project's own SKILL.md model and renderer.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skillforge.errors import SkillForgeError
from skillforge.skill import file as skillfile
from skillforge.state.skill import NAME_MAX, NAME_RE, SkillFile

Labelled = tuple[str, str | None]
"""(query, expected skill name, or None when no skill fits)."""

N_SKILLS = 200
NEAR_DUPLICATE_PAIRS = 40
EXAMPLES = 5
TRAIN_PER_SKILL = 4
DEV_PER_SKILL = 2
TEST_PER_SKILL = 4
NONE_SHARE = 0.25
"""Share of NONE queries in dev and test."""
TRAIN_NONE_SHARE = 0.15
NONE_SPLIT = (0.2, 0.27)
"""Shares of the NONE base utterances reserved for train and dev; test gets the rest."""

SEEN_FRAMES_EN = ("{c}", "can you {c}?", "please {c}", "could you {c}?", "{c} please", "I'd love it if you could {c}")
HELD_FRAMES_EN = ("{C}.", "is it possible to {c}?", "quick one: {c}", "I'd like you to {c}",
                  "would you {c}? thanks", "hey, {c} when you get a sec")
SEEN_FRAMES_ZH = ("{c}", "{c}。", "你好，{c}", "{c}，麻烦了", "在吗？{c}", "{c}，急")
HELD_FRAMES_ZH = ("{c}！", "那个，{c}", "{c}，拜托了", "想问下，{c}", "{c}，多谢", "嗯，{c}")
NONE_FRAMES_EN = ("hey, {u}", "{u} — any idea?", "quick question: {u}", "so, {u}")
NONE_FRAMES_ZH = ("问一下，{u}", "{u}？你知道吗", "对了，{u}")

_CJK = re.compile(r"[\u3400-\u9fff]")


class CatalogueError(SkillForgeError):
    """The synthetic catalogue, or a request of it, is inconsistent (too few jobs, a bad line)."""


@dataclass(frozen=True)
class Job:
    """One concrete task of the catalogue: what becomes one skill."""

    domain: str
    name: str
    description: str
    short: str
    """The job in a few words; a near-duplicate partner's not_for names it."""
    keywords: tuple[str, ...]
    seen: tuple[str, ...]
    """Request cores behind the examples and the train queries."""
    held: tuple[str, ...]
    """Request cores behind the dev (first) and test (the others) queries."""

    @property
    def zh(self) -> bool:
        return bool(_CJK.search(self.description))


@dataclass(frozen=True)
class Domain:
    name: str
    jobs: tuple[Job, ...]
    pairs: tuple[tuple[str, str], ...]
    near_misses: tuple[str, ...]
    """Requests of this domain that no job of the catalogue does (NONE)."""


@dataclass
class SynthLibrary:
    """Skills and labelled queries of one seed."""

    skills: list[SkillFile]
    train: list[Labelled]
    dev: list[Labelled]
    test: list[Labelled]
    pairs: list[tuple[str, str]]
    """The near-duplicate pairs, both members in `skills`."""
    domains: dict[str, str] = field(default_factory=dict)
    """skill name -> domain."""
    seed: int = 0

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    @property
    def pair_skills(self) -> set[str]:
        return {n for p in self.pairs for n in p}


# ---- the catalogue ---------------------------------------------------------------------------
def _split(line: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in line.split(";") if p.strip())


def parse_catalogue(text: str) -> list[Domain]:
    """The domains of a catalogue text. Lines: `@ domain`, a job `name | description | short |
    kw, kw`, its cores `> a ; b ; c` (seen) and `< d ; e ; f` (held), `= a ~ b` (a near-duplicate
    pair) and `? x ; y` (near misses)."""
    domains: list[Domain] = []
    name, jobs, pairs, misses = "", [], [], []
    head: list[str] | None = None
    seen: tuple[str, ...] = ()

    def close() -> None:
        if name:
            domains.append(Domain(name, tuple(jobs), tuple(pairs), tuple(misses)))

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tag, rest = line[0], line[1:].strip()
        if tag == "@":
            close()
            name, jobs, pairs, misses = rest, [], [], []
        elif tag == ">":
            seen = _split(rest)
        elif tag == "<":
            if head is None:
                raise CatalogueError(f"catalogue line {n}: held cores without a job")
            held = _split(rest)
            if len(seen) != 3 or len(held) != 3:
                raise CatalogueError(f"catalogue line {n}: job {head[0]} needs 3 seen and 3 held cores")
            jobs.append(Job(name, head[0], head[1], head[2], tuple(k.strip() for k in head[3].split(",")), seen, held))
            head, seen = None, ()
        elif tag == "=":
            a, b = (x.strip() for x in rest.split("~"))
            pairs.append((a, b))
        elif tag == "?":
            misses += _split(rest)
        else:
            parts = [p.strip() for p in line.split("|")]
            if len(parts) != 4:
                raise CatalogueError(f"catalogue line {n}: a job line has 4 fields: {line[:60]}")
            head = parts
    close()
    merged: dict[str, Domain] = {}
    for d in domains:  # a domain may be opened again further down the catalogue
        m = merged.get(d.name)
        merged[d.name] = d if m is None else Domain(d.name, m.jobs + d.jobs, m.pairs + d.pairs,
                                                     m.near_misses + d.near_misses)
    _check(list(merged.values()))
    return list(merged.values())


def _check(domains: Sequence[Domain]) -> None:
    names = [j.name for d in domains for j in d.jobs]
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        raise CatalogueError(f"catalogue: job names used twice: {dupes}")
    bad = [x for x in names if len(x) > NAME_MAX or not NAME_RE.fullmatch(x)]
    if bad:
        raise CatalogueError(f"catalogue: invalid skill names: {bad}")
    for d in domains:
        own = {j.name for j in d.jobs}
        for a, b in d.pairs:
            if a not in own or b not in own:
                raise CatalogueError(f"catalogue: pair {a} ~ {b} is not two jobs of domain {d.name}")


def catalogue() -> list[Domain]:
    return parse_catalogue(_CATALOGUE)


# ---- selection and queries -------------------------------------------------------------------
def _select(domains: Sequence[Domain], n_skills: int, n_pairs: int,
            rng: random.Random) -> tuple[list[Job], list[tuple[str, str]]]:
    """n_pairs whole pairs, then singles up to n_skills. Of a pair not chosen only its first
    member may be picked, so that no unlabelled near duplicate enters the library."""
    jobs = [j for d in domains for j in d.jobs]
    pairs = [p for d in domains for p in d.pairs]
    if not 0 <= n_pairs <= len(pairs):
        raise CatalogueError(f"near_duplicate_pairs must be 0..{len(pairs)}, not {n_pairs}")
    chosen = sorted(rng.sample(pairs, n_pairs))
    in_pair = {x for p in chosen for x in p}
    left_out = {b for a, b in pairs if (a, b) not in chosen}
    pool = [j.name for j in jobs if j.name not in in_pair and j.name not in left_out]
    need = n_skills - 2 * n_pairs
    if need < 0 or need > len(pool):
        raise CatalogueError(f"cannot make {n_skills} skills with {n_pairs} near-duplicate pairs: the catalogue "
                             f"has {len(pool)} other jobs")
    keep = in_pair | set(rng.sample(pool, need))
    return [j for j in jobs if j.name in keep], chosen


def _fill(frame: str, core: str) -> str:
    return frame.format(c=core, C=core[:1].upper() + core[1:])


def _round_robin(cores: Sequence[str], frames: Sequence[str], rounds: int, rng: random.Random) -> list[str]:
    """Round r takes each core in turn with a frame it has not had yet."""
    orders = [rng.sample(list(frames), len(frames)) for _ in cores]
    return [_fill(orders[i][r], c) for r in range(rounds) for i, c in enumerate(cores)]


def _job_queries(job: Job, rng: random.Random) -> tuple[list[str], list[str], list[str], list[str]]:
    """(examples, train, dev, test) of one job."""
    seen_f, held_f = (SEEN_FRAMES_ZH, HELD_FRAMES_ZH) if job.zh else (SEEN_FRAMES_EN, HELD_FRAMES_EN)
    seen = _round_robin(job.seen, seen_f, 3, rng)
    dev = _round_robin(job.held[:1], held_f, DEV_PER_SKILL, rng)
    test = _round_robin(job.held[1:], held_f, TEST_PER_SKILL // 2, rng)
    return seen[:EXAMPLES], seen[EXAMPLES:EXAMPLES + TRAIN_PER_SKILL], dev, test


def _skill(job: Job, examples: list[str], partner: Job | None) -> SkillFile:
    not_for = [f"{partner.short} ({partner.name})"] if partner is not None else []
    if job.zh:
        body = (f"## Overview\n{job.description}\n\n## Instructions\n1. 先确认用户的具体需求和必要信息。\n"
                f"2. 完成任务：{job.short}。\n3. 用中文给出清晰的结果。\n")
    else:
        body = (f"## Overview\n{job.description}\n\n## Instructions\n1. Confirm what the user needs and ask for "
                f"missing details.\n2. Do the job: {job.short}.\n3. Answer concisely.\n")
    if partner is not None:
        body += f"\n## Constraints\nNot for {partner.short}: that is {partner.name}.\n"
    return SkillFile(name=job.name, description=job.description, keywords=list(job.keywords),
                     examples=examples, not_for=not_for, metadata={"version": "1.0.0", "domain": job.domain},
                     body=body)


def _none_pools(domains: Sequence[Domain], rng: random.Random) -> tuple[list[str], list[str], list[str]]:
    """NONE base utterances split between train, dev and test (no utterance in two splits)."""
    base = list(dict.fromkeys([*(m for d in domains for m in d.near_misses), *_split(_CHITCHAT),
                               *_split(_OTHER_DOMAINS), *_trivia()]))
    rng.shuffle(base)
    a = round(len(base) * NONE_SPLIT[0])
    b = a + round(len(base) * NONE_SPLIT[1])
    return base[:a], base[a:b], base[b:]


def _none_queries(pool: list[str], count: int, rng: random.Random) -> list[str]:
    """`count` NONE queries from `pool`: each utterance once, then framed variants when short."""
    out = rng.sample(pool, min(count, len(pool)))
    while len(out) < count:
        u = rng.choice(pool)
        frames = NONE_FRAMES_ZH if _CJK.search(u) else NONE_FRAMES_EN
        v = rng.choice(frames).format(u=u)
        if v not in out:
            out.append(v)
    return out


def _trivia() -> list[str]:
    out = []
    for template, fillers in _TRIVIA:
        out += [template.format(x=x) for x in _split(fillers)]
    return out


def _with_none(rng: random.Random, labelled: list[Labelled], pool: list[str], share: float) -> list[Labelled]:
    count = round(len(labelled) * share / (1 - share))
    out = labelled + [(q, None) for q in _none_queries(pool, count, rng)]
    rng.shuffle(out)
    return out


def synth_library(n_skills: int = N_SKILLS, seed: int = 0,
                  near_duplicate_pairs: int = NEAR_DUPLICATE_PAIRS) -> SynthLibrary:
    """The library of `seed`: `n_skills` skills of which `near_duplicate_pairs` pairs are near
    duplicates, and labelled train / dev / test queries (about 25 % NONE in dev and test)."""
    rng = random.Random(seed)
    domains = catalogue()
    jobs, pairs = _select(domains, n_skills, near_duplicate_pairs, rng)
    by_name = {j.name: j for j in jobs}
    partner = {a: by_name[b] for a, b in pairs} | {b: by_name[a] for a, b in pairs}
    skills, train, dev, test = [], [], [], []
    for job in jobs:
        ex, tr, dv, ts = _job_queries(job, rng)
        skills.append(_skill(job, ex, partner.get(job.name)))
        train += [(q, job.name) for q in tr]
        dev += [(q, job.name) for q in dv]
        test += [(q, job.name) for q in ts]
    none_train, none_dev, none_test = _none_pools(domains, rng)
    return SynthLibrary(skills=skills, train=_with_none(rng, train, none_train, TRAIN_NONE_SHARE),
                        dev=_with_none(rng, dev, none_dev, NONE_SHARE),
                        test=_with_none(rng, test, none_test, NONE_SHARE),
                        pairs=pairs, domains={j.name: j.domain for j in jobs}, seed=seed)


# ---- on disk ---------------------------------------------------------------------------------
def write_jsonl(path: Path, labelled: Sequence[Labelled]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"query": q, "expected": e}, ensure_ascii=False) + "\n"
                            for q, e in labelled), encoding="utf-8")
    return path


def write_workspace(lib: SynthLibrary, root: Path) -> dict[str, Path]:
    """Write root/skills/<name>/SKILL.md for every skill and root/evaluation_sets/synth_<split>.jsonl
    for train, dev, test and train_dev (train + dev: what calibrate / fit learn from). Returns the
    paths by split (and "skills"). `skillforge init` is not run: the caller makes it a workspace
    (git repository, runs/) if it wants the CLI."""
    skills_dir = root / "skills"
    for skill in lib.skills:
        folder = skills_dir / skill.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / skillfile.SKILL_FILENAME).write_text(skillfile.render(skill), encoding="utf-8")
    sets = root / "evaluation_sets"
    out = {"skills": skills_dir}
    for split, labelled in (("train", lib.train), ("dev", lib.dev), ("test", lib.test),
                            ("train_dev", lib.train + lib.dev)):
        out[split] = write_jsonl(sets / f"synth_{split}.jsonl", labelled)
    return out


# ---- data ------------------------------------------------------------------------------------
# Written for this project. A job line: name | description | short | keywords; `>` seen cores,
# `<` held cores (dev, test, test); `=` a near-duplicate pair; `?` near misses (NONE).
_CATALOGUE = """
@ flights
flight-booking | Searches and books flights between two cities for given dates and passengers. Use when the user wants to buy a plane ticket. | booking a plane ticket | book flight, plane ticket, airfare, one-way, round trip
> book a one-way flight from Boston to Lisbon on March 3 ; find me a round trip to Tokyo leaving June 10 for two adults ; buy the cheapest economy seat to Denver next Friday
< get me on a plane to Madrid the morning of the 14th ; reserve two seats on a flight from Seattle to Austin over Easter ; grab a return ticket Chicago to Dublin, out Monday back Sunday
flight-price-alert | Watches a flight route and alerts the user when the fare drops below a target price. It does not book anything. | watching a route for fare drops | fare alert, price drop, flight price watch
> alert me when flights from Boston to Lisbon drop under 400 dollars ; watch fares on the LA to Tokyo route for June ; notify me if the Paris flight gets cheaper
< keep an eye on ticket prices for New York to Rome and ping me on a dip ; let me know once the Denver to Chicago fare falls below 120 ; set up a price watch for flights to Bali in August
= flight-booking ~ flight-price-alert
flight-status | Reports the live status of a flight: delays, gate, terminal and landing time. | live flight status | flight status, delay, gate, arrival time
> check whether flight UA 925 is delayed ; tell me the gate for BA 117 this evening ; show when Lufthansa 400 is landing
< find out if my 6pm Delta flight to Atlanta is on time ; see which terminal AF 22 arrives at ; look up whether the Qantas flight from Sydney has landed yet
? what is the baggage allowance on Ryanair ; complain to the airline about my lost suitcase

@ hotels
hotel-booking | Finds and books hotel rooms by city, dates, budget and guest count. | booking a hotel room | hotel, book room, accommodation, check-in
> book a hotel near the Colosseum for three nights from May 2 ; find a double room in Kyoto under 150 a night ; reserve a family room in Barcelona for the first week of July
< get us somewhere to stay in Lisbon's Alfama for two nights ; lock in a cheap room close to Berlin Hauptbahnhof on the 9th ; secure a sea-view room in Nice for our anniversary weekend
hotel-review-summary | Summarises guest reviews of a named hotel into pros, cons and red flags. It does not book. | summarising hotel reviews | hotel reviews, guest feedback, pros and cons
> summarise the reviews of the Hilton Garden Inn Midtown ; tell me what guests complain about at the Ritz Paris ; give me the pros and cons of Hotel Arts Barcelona from its reviews
< boil down what people say about the Marriott in Shinjuku ; check the guest feedback on the Savoy for any red flags like noise or bedbugs ; digest the TripAdvisor comments for Casa Camper
hotel-loyalty-points | Tracks hotel loyalty points and estimates how many free nights the balance buys. | hotel points and free nights | loyalty points, free night, Marriott Bonvoy, Hilton Honors
> work out how many free nights my 80000 Bonvoy points get me ; track my Hilton Honors balance and expiry ; estimate the value of 45000 IHG points
< figure out whether my Hyatt points cover a weekend in Chicago ; see when my hotel points start to expire ; compare what my Accor points and Hilton points are worth
? what time is check-out usually ; teach me how to fold a fitted sheet like hotels do

@ currency
currency-converter | Converts an amount between two currencies at today's exchange rate. | converting money between currencies | currency converter, exchange rate, USD, EUR
> convert 250 dollars to euros ; change 5000 yen into pounds ; turn 80 Swiss francs into US dollars
< work out what 1200 Canadian dollars is in Mexican pesos ; translate 300 euros into Thai baht at today's rate ; tell me how many rupees 75 pounds buys
fx-rate-alert | Monitors an exchange rate and alerts the user when it crosses a chosen level. It does not convert amounts. | watching an exchange rate for a target level | rate alert, exchange rate watch, FX alert
> alert me when the euro goes above 1.12 dollars ; watch the pound against the yen and tell me if it passes 200 ; notify me when USD to CNY drops below 7
< ping me the day GBP to EUR hits 1.20 ; keep an eye on the Aussie dollar and warn me under 0.62 ; set a trigger for when the franc weakens past 0.95 per dollar
= currency-converter ~ fx-rate-alert
? should I buy gold coins as an investment ; what is the history of the euro

@ budgeting
expense-categorizer | Sorts bank transactions into spending categories and totals each category for the month. | categorising transactions | expenses, categories, spending, transactions
> categorise last month's card transactions ; sort my bank statement into groceries, rent and fun ; total what I spent on eating out in October
< tag each of these purchases with a spending category ; split my January statement into needs and wants ; tell me how much went on transport this month from my transactions
monthly-budget-planner | Builds a monthly budget from income and fixed costs, setting limits per category and a savings target. | planning a monthly budget | monthly budget, budget plan, savings target, 50/30/20
> make a monthly budget on a 4200 salary with 1500 rent ; plan my spending limits for next month so I save 500 ; build me a 50/30/20 budget
< draw up a household budget for a family of four on 6000 a month ; set category caps for groceries and going out for August ; design a budget that gets me to a 10 percent savings rate
= expense-categorizer ~ monthly-budget-planner
bill-split | Splits a shared bill or trip costs fairly among friends and says who owes whom. | splitting shared costs | split bill, who owes, shared expenses
> split a 184 dollar dinner between five people with tip ; work out who owes whom after our ski trip ; divide the rent and utilities between three flatmates
< settle up the holiday costs, Ana paid the car and I paid the villa ; share a 96 euro taxi fairly among four of us ; figure out each person's part of the group gift
? is it rude to ask friends to pay me back ; how do credit scores work in general

@ investing
portfolio-tracker | Tracks holdings across brokerage accounts and reports current value, gains and allocation. | tracking portfolio value and gains | portfolio, holdings, gains, allocation, brokerage
> show my portfolio value across Fidelity and Vanguard ; track how my stocks did this quarter ; tell me my total unrealised gain
< give me today's worth of all my holdings ; list how much of my money sits in tech versus bonds right now ; report the year-to-date return of my brokerage accounts
portfolio-rebalancer | Proposes the trades that bring a portfolio back to its target allocation. | proposing rebalancing trades | rebalance, target allocation, trades
> rebalance my portfolio back to 60/40 ; tell me which funds to sell to get to my target mix ; suggest trades to bring bonds back to 30 percent
< work out the buys and sells that restore my 70 percent equity target ; fix my drifted allocation with as few trades as possible ; plan the orders to even out my portfolio after the rally
= portfolio-tracker ~ portfolio-rebalancer
dividend-calendar | Lists upcoming dividend dates and expected payouts for the user's stocks. | dividend dates and payouts | dividends, ex-dividend date, payout
> list the ex-dividend dates for my stocks this month ; estimate my dividend income for next quarter ; show when Coca-Cola pays its next dividend
< tell me which of my shares pay out in December ; forecast the dividends I get this year from my holdings ; find the record date for the Apple dividend
? explain what a hedge fund is ; who is the richest investor in the world

@ crypto
crypto-price | Gives the current price and 24-hour change of a cryptocurrency. | current crypto prices | bitcoin price, ethereum, crypto, 24h change
> check the bitcoin price right now ; show how much ethereum moved in the last 24 hours ; tell me what solana trades at
< get the latest quote for dogecoin ; see if BTC is up or down today ; pull up the current ether price in euros
crypto-wallet-auditor | Reviews a crypto wallet address for risky token approvals and suspicious transactions. | auditing a wallet for risky approvals | wallet audit, token approval, revoke, scam token
> audit my wallet 0x3f5a for risky token approvals ; check whether my MetaMask has unlimited approvals ; scan this address for scam tokens
< look through my Ethereum wallet for contracts I should revoke ; review the permissions my wallet has granted to dapps ; flag suspicious transfers on my wallet address
? explain what a blockchain is to a child ; who invented bitcoin

@ tax
tax-refund-estimator | Estimates a US federal tax refund or amount owed from income, withholding and deductions. | estimating a tax refund | tax refund, federal tax, W-2, withholding
> estimate my federal refund with 72000 W-2 income ; tell me whether I will owe taxes this year ; work out my refund if I take the standard deduction
< guess how much the IRS sends back on 58000 salary with 6000 withheld ; project what I owe Uncle Sam after my side income ; calculate the refund for a married couple filing jointly on 140k
quarterly-tax-planner | Calculates quarterly estimated tax payments for freelancers and their due dates. | quarterly estimated payments | estimated tax, quarterly, 1040-ES, freelancer tax
> calculate my quarterly estimated taxes on 90k freelance income ; tell me when the next estimated payment is due ; work out how much to set aside each quarter for self-employment tax
< figure out my Q3 1040-ES payment ; plan the four estimated payments for my consulting income ; compute what to send the IRS this quarter as a contractor
= tax-refund-estimator ~ quarterly-tax-planner
? which country has the lowest taxes ; what is the history of income tax

@ banking
card-freeze | Freezes or unfreezes a lost or stolen bank card. | freezing a bank card | freeze card, lost card, stolen card, block card
> freeze my debit card, I lost it ; block my credit card ending 4421 ; unfreeze my card, I found it
< lock my Visa right away, my wallet was stolen ; put a temporary block on my bank card ; turn my card back on now that it turned up
transaction-dispute | Opens a dispute for a wrong or unrecognised card charge and tracks its status. | disputing a card charge | dispute, chargeback, unrecognised charge
> dispute a 59 dollar charge I don't recognise ; open a chargeback for the hotel that double billed me ; check the status of my card dispute
< contest the subscription fee they took after I cancelled ; report a charge from a shop I never visited ; follow up on the dispute I filed last week
? what bank has the best interest rate ; explain how a central bank works

@ insurance
insurance-claim-filer | Files an insurance claim with photos and details of the loss, and tracks it. | filing an insurance claim | claim, insurance, damage, file claim
> file a claim for the water damage in my kitchen ; start a car insurance claim for the dent from yesterday ; check on my home insurance claim
< submit photos of my cracked phone screen for a claim ; report the hail damage to my roof to the insurer ; see where my travel insurance claim for the lost bag stands
insurance-policy-compare | Compares insurance quotes and policies side by side on price, cover and excess. | comparing insurance policies | compare policies, insurance quote, coverage, excess
> compare these three car insurance quotes ; tell me which home policy covers floods ; put the two health plans side by side on deductibles
< weigh up the pet insurance offers I got on price and cover ; find the travel insurance with the lowest excess among these ; line up the renters policies and their limits
= insurance-claim-filer ~ insurance-policy-compare
? how did insurance start historically ; is it worth becoming an insurance agent

@ mortgage
mortgage-calculator | Calculates monthly mortgage payments, total interest and amortisation for a loan. | calculating mortgage payments | mortgage, monthly payment, amortisation, interest
> calculate the monthly payment on a 400k mortgage at 6.5 percent ; show the amortisation for a 30 year loan of 250000 ; work out the total interest on my home loan
< figure out what I pay each month borrowing 320k over 25 years ; tell me how much interest a 15-year mortgage saves ; estimate my payment with 20 percent down on a 500k house
refinance-advisor | Checks whether refinancing an existing mortgage saves money after closing costs. | deciding whether to refinance | refinance, refi, break-even, closing costs
> check if refinancing my 7 percent mortgage is worth it ; find the break-even month for a refi with 4000 closing costs ; compare my current loan to a new 5.9 percent rate
< tell me whether switching my home loan to a lower rate pays off ; weigh a cash-out refi against keeping my loan ; see how long until a refinance recovers its fees
= mortgage-calculator ~ refinance-advisor
home-valuation | Estimates a home's market value from its address, size and recent nearby sales. | estimating a home's value | home value, house price, comps
> estimate what my house at 12 Oak Street is worth ; pull comparable sales near my flat ; value a 3-bed semi in Leeds
< tell me the market price of a 1200 square foot condo in Austin ; guess our home's worth from recent sales on the street ; give an appraisal range for my townhouse
? how do I become a real estate agent ; what is the tallest building in the world

@ recruiting
job-post-writer | Writes a job posting from a role title, requirements and benefits. | writing a job posting | job posting, job ad, vacancy, hiring
> write a job post for a senior backend engineer ; draft a vacancy ad for a part-time barista ; create a job listing for a sales manager in Berlin
< put together an ad to hire a data analyst with SQL ; compose an opening for a remote customer success rep ; turn these requirements into a job description for a nurse
resume-screener | Screens candidate resumes against a job's requirements and ranks them. | screening candidate resumes | screen resumes, candidates, shortlist, CV ranking
> screen these 40 resumes for the backend role ; rank the applicants for the marketing job ; shortlist the CVs that have Kubernetes experience
< sift through the applications and flag the strongest five ; check which candidates meet the must-haves for the nurse opening ; order the applicants by fit for the analyst role
interview-scheduler | Schedules candidate interviews across the interviewers' calendars. | scheduling interviews | schedule interview, interview slot, panel interview
> schedule a panel interview with Maria next week ; find a slot for three interviewers and the candidate ; book second-round interviews for Friday
< set up a 45 minute call between the hiring manager and Tom ; line up the onsite interviews for the final two candidates ; arrange a technical interview on Thursday afternoon
? what is the unemployment rate in France ; how do I ask my boss for a raise

@ hr-leave
leave-request | Submits a vacation or sick leave request and shows the remaining balance. | requesting time off | leave, vacation, PTO, sick day, time off
> request vacation from July 3 to July 10 ; book a sick day for today ; tell me how many PTO days I have left
< put in for Friday off ; log two days of sick leave for Monday and Tuesday ; see what's left of my annual holiday allowance
leave-policy-qa | Answers questions about the company's leave policies: parental leave, carry-over, public holidays. | answering leave policy questions | leave policy, parental leave, carry over, holidays policy
> explain how much parental leave the company gives ; tell me if unused vacation carries over to next year ; check the policy on bereavement leave
< find out whether I can take unpaid leave for three months ; clarify how public holidays work for part-timers ; look up the rules for leave during the notice period
= leave-request ~ leave-policy-qa
payslip-explainer | Explains the lines of a payslip: gross pay, deductions, tax and net pay. | explaining a payslip | payslip, deductions, net pay, gross pay
> explain the deductions on my March payslip ; tell me why my net pay dropped this month ; break down my pay stub line by line
< make sense of the pension and tax lines on my salary slip ; go through what each item on my paycheck means ; account for the difference between gross and take-home on my slip
? what is a good salary for a teacher ; is a four day week a good idea

@ email-marketing
newsletter-writer | Writes a marketing newsletter or email campaign from the news and offers to include. | writing a marketing email | newsletter, email campaign, marketing email
> write this month's newsletter about our spring sale ; draft a launch email for the new app feature ; create a campaign email for Black Friday
< put together an announcement mail for our webinar ; compose the customer newsletter featuring three new recipes ; write promo copy for an email blast on free shipping
email-ab-test-analyzer | Analyses the results of an email A/B test and says which variant won and whether it is significant. | analysing an email A/B test | A/B test, open rate, click rate, significance
> tell me which subject line won our A/B test ; check whether variant B's click rate is significant ; analyse the open rates of last week's split test
< compare the two email versions and say if the lift is real ; work out if 21 vs 19 percent opens is a meaningful difference ; read these split test numbers and pick the winner
? how did email get invented ; send my grandmother a birthday card

@ social-media
social-post-scheduler | Schedules social media posts across accounts at chosen times. | scheduling social posts | schedule post, social media, Instagram, LinkedIn
> schedule this post on LinkedIn for Tuesday 9am ; queue three Instagram posts for next week ; plan our tweets for the product launch day
< set this photo to go out on Instagram at 6pm Friday ; line up the week's posts for our Facebook page ; publish the announcement on all our accounts tomorrow morning
social-caption-writer | Writes captions and hashtags for a social media post. | writing post captions | caption, hashtags, Instagram caption
> write a caption for this beach photo ; give me hashtags for a bakery post ; come up with a witty caption for our team picture
< craft the text to go with our new sneaker photo ; suggest a short caption and tags for a latte art picture ; think up a fun line for our office dog's post
= social-post-scheduler ~ social-caption-writer
social-analytics | Reports follower growth, reach and engagement of social accounts. | social media analytics | engagement, reach, followers, analytics
> show our Instagram engagement this month ; report follower growth on TikTok since January ; tell me which post got the most reach
< pull the numbers on how our LinkedIn page performed last quarter ; see which of our tweets got the most interaction ; compare our reach on Facebook and Instagram
? who has the most followers on Instagram ; is social media bad for teenagers
"""
_CATALOGUE += """
@ seo
keyword-research | Finds search keywords for a topic with volume and difficulty. | finding search keywords | keyword research, search volume, SEO keywords
> find keywords for a vegan bakery website ; list long-tail search terms around standing desks ; show search volume for running shoes keywords
< dig up terms people google about home solar panels ; suggest low-competition keywords for a yoga studio ; tell me what phrases to target for a dog grooming site
seo-page-audit | Audits a web page for on-page SEO problems: titles, meta descriptions, headings, speed. | auditing a page for SEO issues | SEO audit, meta description, page speed, on-page
> audit the SEO of our pricing page ; check the meta tags on example.com/blog ; find on-page SEO problems on my homepage
< review this landing page for missing titles and slow loading ; run an SEO health check on our product page ; spot the heading and meta issues on the about page
? how does Google make money ; who founded Yahoo

@ ads
ad-copy-writer | Writes ad headlines and descriptions for search and social ads. | writing ad copy | ad copy, headline, Google Ads, Facebook ad
> write three Google Ads headlines for our CRM ; draft Facebook ad copy for a summer shoe sale ; create ad text for a local plumber
< come up with punchy lines for a LinkedIn ad about our webinar ; give me search ad descriptions for a dental clinic ; produce a few variations of ad copy for our meal kit
ad-budget-optimizer | Reallocates an ad budget across campaigns based on cost per acquisition and return on ad spend. | reallocating ad spend | ad budget, ROAS, CPA, campaign spend
> shift our ad budget toward the campaigns with the best ROAS ; tell me where to cut spend, CPA is too high ; reallocate 10k across Google and Meta campaigns
< decide how to split next month's ad money between our four campaigns ; move spend away from the ads that don't convert ; optimise our paid budget for cost per signup
? why do I see so many ads on YouTube ; what was the first TV commercial

@ sales-crm
lead-scorer | Scores sales leads by fit and intent so reps know whom to call first. | scoring sales leads | lead scoring, leads, prospects, MQL
> score this week's inbound leads ; rank the prospects from the trade show by likelihood to buy ; tell me which leads are hot
< prioritise the new signups for the sales team to call ; grade the leads from the webinar by fit ; find the three prospects most likely to close
deal-pipeline-report | Summarises the sales pipeline: deals by stage, value, and which are stalled. | reporting the deal pipeline | sales pipeline, deals, sales forecast, stalled deals
> summarise our sales pipeline by stage ; show the deals that have been stuck for 30 days ; give me the pipeline value for Q4
< report how many opportunities are in negotiation right now ; list the stalled deals over 50k ; break down this quarter's forecast by rep
sales-email-followup | Drafts follow-up emails to prospects after a call or demo. | writing sales follow-ups | follow-up email, prospect, after demo
> write a follow-up to Acme after today's demo ; draft a nudge email to a prospect who went quiet ; send a recap email after my discovery call
< compose a check-in note for the lead I met at the conference ; put together a post-demo thank-you with next steps ; write a gentle chaser to the buyer at Globex
? what makes a good salesperson ; who wrote the book on sales funnels

@ customer-support
ticket-triage | Classifies incoming support tickets by topic and urgency and routes them to the right team. | triaging support tickets | ticket triage, support queue, urgency, routing
> triage the new tickets in the support queue ; tag these tickets by urgency ; route the billing tickets to the finance team
< sort this morning's help desk requests by priority ; decide which team each of these complaints goes to ; flag the urgent tickets among the 200 new ones
support-reply-drafter | Drafts a reply to a customer support ticket in the company's tone. | drafting a support reply | support reply, customer response, answer ticket
> draft a reply to this customer whose order is late ; write a polite answer to the refund complaint ; respond to the ticket about the broken login
< put together an apology to the client who was double charged ; compose an answer for the customer asking about shipping to Canada ; write back to the user whose app keeps crashing
= ticket-triage ~ support-reply-drafter
csat-analyzer | Analyses customer satisfaction survey results and comments for trends. | analysing satisfaction surveys | CSAT, NPS, survey, customer feedback
> analyse last month's CSAT scores ; tell me the main themes in our NPS comments ; show how satisfaction changed after the redesign
< dig into the survey feedback for recurring complaints ; work out our net promoter score for Q2 ; compare satisfaction ratings between the two support teams
? how do I complain to a company myself ; what is the best call centre in the world

@ legal
contract-reviewer | Reviews a contract for risky clauses, missing terms and unusual obligations. | reviewing a contract for risks | contract review, clauses, liability, indemnity
> review this SaaS contract for risky clauses ; check the indemnity clause in our vendor agreement ; flag anything unusual in this lease
< go through the NDA and point out terms I should push back on ; look for one-sided liability language in this agreement ; read the freelance contract and list the red flags
contract-drafter | Drafts a simple contract or agreement from a template and the parties' terms. | drafting a new contract | draft contract, NDA template, agreement
> draft an NDA between us and Acme ; write a simple freelance agreement for a logo job ; create a rental agreement for my spare room
< put together a mutual confidentiality agreement ; prepare a consulting contract with a 30 day notice term ; write up a basic services agreement for my cleaning business
= contract-reviewer ~ contract-drafter
? who is the most famous lawyer in history ; how many judges sit on the Supreme Court

@ git
commit-message-writer | Writes a clear commit message from a staged diff. | writing commit messages | commit message, git commit, diff
> write a commit message for this diff ; summarise my staged changes as a commit ; give me a conventional commit message for the login fix
< turn these changes into a good commit title and body ; describe this patch as a one-line commit ; suggest a commit message for the refactor I just staged
git-conflict-resolver | Helps resolve git merge conflicts by explaining both sides and proposing a merge. | resolving merge conflicts | merge conflict, rebase, git conflict
> help me resolve this merge conflict in app.py ; explain the conflict markers in my rebase ; merge both sides of this conflicting function
< untangle the conflict I got pulling main into my branch ; decide which version of config.yaml to keep in this conflict ; fix the clash between my change and my teammate's in utils.js
? who created Linux ; what is the most popular programming language

@ code-quality
code-reviewer | Reviews a pull request or code snippet for bugs, style and security issues. | reviewing code changes | code review, pull request, PR, bugs
> review my pull request for the payment module ; check this Python function for bugs ; look over this PR and comment on style
< go through the diff and point out anything risky ; give feedback on this React component before I merge ; spot the problems in this SQL-building code
unit-test-generator | Writes unit tests for a given function or module. | writing unit tests | unit tests, pytest, test cases, jest
> write unit tests for this parse_date function ; generate pytest cases for the cart module ; create jest tests for my validator
< add tests covering the edge cases of this function ; produce a test file for the User class ; cover the discount calculator with tests
= code-reviewer ~ unit-test-generator
regex-builder | Builds and explains regular expressions for a described pattern. | building regular expressions | regex, regular expression, pattern matching
> build a regex that matches UK postcodes ; explain what this regex does ; write a pattern to pull emails out of text
< give me a regular expression for dates like 2024-03-01 ; make a regex that finds phone numbers with dashes ; break down this pattern piece by piece
? what is the history of the computer ; who is Ada Lovelace

@ cicd
pipeline-failure-debugger | Diagnoses why a CI pipeline run failed from its logs and suggests a fix. | diagnosing failed CI runs | CI failure, build failed, GitHub Actions, pipeline logs
> find out why my GitHub Actions build failed ; read this CI log and tell me what broke ; debug the failing test stage in our pipeline
< figure out why the Jenkins job went red last night ; explain this error at the end of the build output ; diagnose the flaky deploy step in CI
deploy-pipeline-writer | Writes CI/CD pipeline configuration for building, testing and deploying a project. | writing a CI/CD pipeline config | CI config, workflow yaml, deploy pipeline
> write a GitHub Actions workflow that runs pytest ; set up a GitLab CI pipeline that deploys to staging ; create a CI config for a Node app
< put together a workflow file that builds our Docker image on every push ; add a deploy job to production after tests pass ; make a pipeline that lints and tests our Go service
= pipeline-failure-debugger ~ deploy-pipeline-writer
? what does DevOps stand for ; who invented continuous integration

@ databases
sql-query-writer | Writes SQL queries from a plain-language question and a table schema. | writing SQL queries | SQL, SQL query, write a query
> write a SQL query for the top 10 customers by revenue ; join orders and users to get last month's buyers ; count signups per week in SQL
< turn this question into a query: which products never sold ; get the average basket size per store with a query ; select all users who haven't logged in for 90 days
sql-query-optimizer | Speeds up a slow SQL query by reading its plan and proposing indexes or rewrites. | speeding up slow SQL queries | slow query, index, explain plan, optimize
> speed up this slow query on the orders table ; tell me which index this query needs ; read this EXPLAIN output and suggest a fix
< make this report query run faster than 30 seconds ; figure out why this join does a full table scan ; rewrite this query so it uses the index
= sql-query-writer ~ sql-query-optimizer
db-migration-planner | Plans a database schema migration with steps, rollback and downtime estimate. | planning schema migrations | migration, schema change, rollback, alter table
> plan the migration to split the users table ; write the steps to add a non-null column without downtime ; make a rollback plan for our schema change
< map out moving from MySQL 5.7 to 8 safely ; outline how to rename a column on a live table ; prepare a migration plan for adding foreign keys
? what is the biggest database in the world ; who invented SQL

@ cloud
cloud-cost-report | Breaks down the cloud bill by service, team and trend. | reporting cloud costs | AWS bill, cloud cost, spend by service
> break down our AWS bill by service ; show which team spent the most on GCP last month ; report how cloud spend trended this quarter
< tell me what's driving the jump in our Azure invoice ; list the ten most expensive resources we run ; summarise our cloud costs for the finance meeting
cloud-cost-saver | Finds idle or oversized cloud resources and recommends savings such as rightsizing or reserved instances. | finding cloud savings | rightsizing, idle resources, savings plan, reserved instances
> find idle EC2 instances we can shut down ; recommend rightsizing for our database servers ; tell me if reserved instances would save us money
< spot the unused disks and load balancers costing us money ; suggest ways to cut our Kubernetes bill by 20 percent ; check which VMs are way bigger than they need to be
= cloud-cost-report ~ cloud-cost-saver
? who owns Amazon ; how big is a data centre

@ security
password-generator | Generates strong random passwords or passphrases to given rules. | generating passwords | password, passphrase, generate password
> generate a 20 character password with symbols ; make me a passphrase of four random words ; create a strong password without ambiguous characters
< come up with a secure password for my router ; give me five random 16-character passwords ; produce a memorable but strong passphrase
password-breach-checker | Checks whether an email address or password appears in known data breaches. | checking for breached credentials | data breach, pwned, leaked password
> check if my email was in a data breach ; see whether this password has been leaked ; tell me if my account showed up in any breaches
< look up my work address in known breach lists ; find out if hunter2 is a compromised password ; verify whether my login details were exposed online
= password-generator ~ password-breach-checker
phishing-email-checker | Checks a suspicious email for signs of phishing. | spotting phishing emails | phishing, suspicious email, scam email
> check if this email from my bank is phishing ; tell me whether this link in a message is safe ; look at this invoice email, it seems fake
< judge if this DHL delivery notice is a scam ; inspect the sender and links of this odd password-reset mail ; decide whether I should trust this message asking me to log in
? who are the most famous hackers ; how does encryption work in general
"""
_CATALOGUE += """
@ spreadsheets
spreadsheet-formula | Writes and explains spreadsheet formulas for Excel or Google Sheets. | writing spreadsheet formulas | Excel formula, VLOOKUP, Google Sheets, XLOOKUP
> write an Excel formula to sum sales by region ; explain this VLOOKUP ; give me a Sheets formula that flags duplicates
< make a formula that pulls the price from the other tab by product code ; tell me why my SUMIF returns zero ; build a formula counting rows where status is late
spreadsheet-cleaner | Cleans messy spreadsheet data: duplicates, inconsistent dates, stray spaces, merged cells. | cleaning messy spreadsheet data | clean data, duplicates, dedupe, tidy spreadsheet
> clean up the duplicates in this customer sheet ; fix the mixed date formats in column C ; tidy this exported CSV with stray spaces
< dedupe the contact list and standardise the phone numbers ; unmerge the cells and fill the blanks in this report ; normalise the country names in this spreadsheet
= spreadsheet-formula ~ spreadsheet-cleaner
? who invented the spreadsheet ; is Excel better than a calculator

@ charts
chart-maker | Makes a chart from a table of data: bar, line, pie or scatter. | making charts from data | chart, graph, bar chart, plot
> make a bar chart of sales by month ; plot these temperatures as a line graph ; turn this table into a pie chart
< draw a scatter of price versus rating from this data ; visualise our signups per week ; graph the survey answers as horizontal bars
dashboard-builder | Designs a KPI dashboard layout with the metrics, charts and filters a team needs. | designing KPI dashboards | dashboard, KPI, metrics layout
> design a sales dashboard for the leadership team ; lay out a KPI dashboard for our support team ; plan which charts go on our marketing dashboard
< sketch the panels for an operations dashboard with filters by region ; decide the key metrics to show on a product health dashboard ; put together a dashboard spec for the finance team
= chart-maker ~ dashboard-builder
? what is the most famous graph in history ; who is Florence Nightingale

@ documents
pdf-merger | Merges, splits and reorders PDF files. | merging and splitting PDFs | merge PDF, split PDF, combine PDF
> merge these three PDFs into one ; split this PDF into single pages ; put page 4 of the report at the front
< combine my scanned receipts into one file ; pull pages 10 to 15 out as a separate PDF ; join the contract and its annex into one document
pdf-summarizer | Summarises a long PDF document into key points. | summarising PDF documents | summarise PDF, key points, document summary
> summarise this 40 page PDF report ; give me the key points of this whitepaper ; tell me what this PDF contract says in brief
< boil this annual report down to a page ; pull out the main findings from the attached study ; condense the policy document into five bullets
? who invented paper ; what does PDF stand for

@ images
background-remover | Removes the background from a photo and leaves a transparent cut-out. | removing photo backgrounds | remove background, transparent, cut-out
> remove the background from this product photo ; make the background of my headshot transparent ; cut out the dog from this picture
< erase everything behind the sneaker in this image ; give me a clean cut-out of this logo with no backdrop ; isolate the person in this photo on transparency
image-upscaler | Upscales a low-resolution image and sharpens it without changing its content. | upscaling images | upscale, enlarge image, resolution, sharpen
> upscale this blurry photo to 4K ; make this small logo bigger without pixelation ; sharpen and enlarge an old family picture
< increase the resolution of this screenshot for print ; blow up this thumbnail so it looks crisp ; double the size of this image without losing quality
? who painted the Mona Lisa ; what is the best camera brand

@ qr-codes
qr-code-generator | Creates QR code images from a link, text, Wi-Fi login or contact card. | making a QR code image | QR code, generate QR, create QR
> make a QR code for our menu link ; create a QR code with my Wi-Fi password ; generate a QR image for my business card
< turn this URL into a scannable code for the poster ; produce a QR for the event sign-up page ; design a QR code that opens my portfolio site
qr-code-reader | Decodes a QR code or barcode from an image and says what it contains. | reading a QR code from an image | scan QR, decode QR, barcode reader
> read the QR code in this photo ; decode this barcode picture ; tell me what link this QR code opens
< scan the code on this parking sign screenshot ; work out what the QR in this flyer points to ; extract the text hidden in this QR image
= qr-code-generator ~ qr-code-reader
? who invented the barcode ; why are QR codes square

@ audio
podcast-show-notes | Writes show notes, chapter markers and a summary from a podcast transcript. | writing podcast show notes | show notes, podcast, episode summary, chapters
> write show notes for episode 42 from this transcript ; add chapter markers to our podcast episode ; summarise this interview episode for the website
< turn the transcript into a blurb and timestamps ; draft the episode description for our guest with Dr Lee ; make the notes and links list for this week's show
audio-transcriber | Transcribes an audio recording into text with speaker labels. | transcribing audio to text | transcribe, transcription, speech to text
> transcribe this meeting recording ; turn my voice memo into text ; write out the interview audio with speaker names
< get a text version of this 20 minute lecture ; convert the podcast audio to a transcript ; type up what was said in this call recording
= podcast-show-notes ~ audio-transcriber
? what is the most listened podcast ; who invented the microphone

@ video
video-subtitler | Adds subtitles to a video, timed to the speech, in the spoken language or translated. | subtitling videos | subtitles, captions, SRT, video captions
> add subtitles to this YouTube video ; make an SRT file for my vlog ; caption this clip in Spanish
< put timed captions on the webinar recording ; create English subtitles for this French short film ; burn subtitles into my product demo
video-clip-cutter | Trims a long video into short clips for social media. | cutting videos into clips | trim video, clips, shorts, reels
> cut this hour-long stream into three short clips ; trim the first 30 seconds off my video ; make a 60 second reel from this talk
< pull the best moments of the webinar into shorts ; chop the interview into TikTok-sized pieces ; clip out the part from 12:05 to 13:20
? what is the highest grossing film ; who directed Jaws

@ calendar
meeting-scheduler | Finds a time that suits all attendees and sends the meeting invite. | scheduling meetings | schedule meeting, invite, find a time, availability
> schedule a 30 minute meeting with Ana and Raj next week ; find a time that works for the whole design team ; send an invite for Thursday at 3
< set up a call with the client sometime Tuesday ; book an hour with my manager before Friday ; get everyone on the project into a kickoff next week
meeting-notes | Turns a meeting transcript into notes with decisions and action items. | writing meeting notes | meeting notes, minutes, action items
> write up notes from this meeting transcript ; list the action items from today's standup ; summarise the decisions from the board call
< turn the recording of our sync into minutes ; pull out who agreed to do what in this meeting ; produce a recap of the planning session for people who missed it
= meeting-scheduler ~ meeting-notes
? why do meetings feel so long ; who invented the calendar

@ inbox
inbox-triage | Sorts unread email into urgent, needs reply, read later and newsletters. | triaging the inbox | inbox, unread email, email triage
> sort my unread emails by urgency ; tell me which emails need a reply today ; clear out the newsletters from my inbox
< go through my inbox and flag what matters ; find the messages I must answer before noon ; separate the promotions from real mail in my inbox
email-reply-writer | Drafts a reply to an email in the user's tone. | drafting email replies | reply email, respond, draft reply
> draft a reply to my landlord's email ; write a polite no to this meeting request ; answer this client email about the delay
< respond to my colleague's question about the budget ; put together a friendly reply accepting the invitation ; write back to the recruiter saying I'm not interested
= inbox-triage ~ email-reply-writer
? who sent the first email ; how many emails are sent every day

@ tasks
todo-manager | Adds, updates and lists to-do items with due dates and priorities. | managing a to-do list | to-do, task list, due date, reminder
> add buy milk to my to-do list ; show my tasks due this week ; mark the tax forms task as done
< put call the plumber on my list for tomorrow ; list everything I haven't finished yet ; move the report task to Friday and make it high priority
habit-tracker | Tracks daily habits and streaks, and reports progress. | tracking habits and streaks | habit, streak, daily habit
> log that I meditated today ; show my reading streak ; track a new habit of drinking 2 litres of water
< record today's run in my habits ; tell me how many days in a row I've journaled ; check how I did on my habits this month
? why do I procrastinate ; who invented the checklist

@ projects
sprint-planner | Plans a sprint: picks backlog items by priority and team capacity. | planning a sprint | sprint planning, backlog, capacity, story points
> plan our next two-week sprint ; pick backlog items that fit 40 story points ; balance the sprint across four developers
< decide what goes into sprint 12 given two people are on holiday ; fill the sprint with the top priority tickets ; estimate what the team can take on next iteration
project-status-report | Writes a project status report from tasks, milestones and risks. | writing project status reports | status report, milestones, risks, RAG status
> write this week's status report for the website project ; summarise milestones and risks for the steering group ; give the project a RAG status with reasons
< draft the update for stakeholders on the migration project ; report progress and blockers on the app launch ; put together a one-page project update for my boss
gantt-timeline | Builds a project timeline with task dependencies and a critical path. | building project timelines | Gantt chart, timeline, critical path, dependencies
> build a Gantt chart for the office move ; lay out a timeline for the product launch ; find the critical path of these tasks
< map the phases of the renovation with their dependencies ; work out the earliest finish date for this plan ; draw the schedule for the conference with milestones
? what is the hardest project ever built ; who invented the Gantt chart
"""
_CATALOGUE += """
@ fitness
workout-planner | Builds a weekly workout plan for a goal, level and available equipment. | planning workouts | workout plan, training plan, gym routine
> make me a 3 day gym plan for building muscle ; plan home workouts with just dumbbells ; create a beginner routine to get stronger
< put together a weekly strength schedule for a busy parent ; design a 4 week plan to train for pull-ups ; set up a full-body routine I can do in 30 minutes
running-coach | Plans running training for a race distance and adjusts paces from recent runs. | coaching running training | running plan, marathon, 5k, pace
> build a training plan for my first half marathon ; tell me my easy pace from my 10k time ; plan the next 8 weeks for a sub-25 5k
< set up a couch to 10k schedule ; adjust my marathon plan after I missed a week ; work out my tempo run pace for race prep
= workout-planner ~ running-coach
? who is the fastest man alive ; how many calories does a sumo wrestler eat

@ nutrition
meal-planner | Plans a week of meals for a diet, budget and household size, with a shopping list. | planning weekly meals | meal plan, weekly menu, shopping list
> plan a week of vegetarian dinners for two ; make a low-carb meal plan with a shopping list ; plan cheap lunches for the work week
< put together seven days of family meals under 80 dollars ; give me a high-protein menu for next week ; map out breakfasts and dinners for a gluten-free week
calorie-counter | Estimates the calories and macros of a meal or food log. | counting calories and macros | calories, macros, protein, food log
> count the calories in two eggs and toast ; tell me the macros of my lunch ; estimate how many calories I ate today
< work out the protein in a chicken burrito ; add up the energy in this smoothie recipe ; figure out the carbs in a bowl of ramen
= meal-planner ~ calorie-counter
? is coffee good or bad for you ; what did people eat in the middle ages

@ sleep
sleep-analyzer | Analyses sleep tracker data for duration, consistency and quality trends. | analysing sleep data | sleep data, sleep score, tracker, deep sleep
> analyse my sleep data from last week ; tell me why my sleep score dropped ; show how much deep sleep I got this month
< look at my Oura data and spot patterns ; compare my sleep on weekdays and weekends ; check whether I'm getting consistent bedtimes
bedtime-story | Tells a short, calm bedtime story for a child, on a theme the user picks. | telling a bedtime story | bedtime story, story for kids, sleepy story
> tell a bedtime story about a sleepy dragon ; make up a short story for my 4 year old about the moon ; tell my daughter a calm story with a kitten
< spin a gentle tale about a bear who can't sleep ; read my son a made-up story about trains before bed ; invent a quiet goodnight story with a unicorn
? why do we dream ; how long can a person stay awake

@ wellbeing
mood-checkin | Runs a short mood check-in, reflects back how the user feels and logs it. | checking in on mood | mood, feelings, check-in, journal
> I want to log how I feel today ; do a quick mood check-in with me ; help me put into words why I feel low
< let's track my mood, it's been a rough day ; ask me how I'm doing and note it down ; go through how I'm feeling this evening
breathing-exercise | Guides a short breathing or relaxation exercise for stress. | guiding breathing exercises | breathing exercise, relax, calm down, box breathing
> guide me through box breathing ; walk me through a 2 minute breathing exercise ; help me calm down with some breathing
< lead me through a slow breathing routine before my exam ; do a relaxation exercise with me, I'm stressed ; coach me through 4-7-8 breathing
? what is the meaning of life ; do you ever feel lonely

@ fun
joke-teller | Tells jokes and puns on a topic the user picks. | telling jokes | joke, pun, funny, make me laugh
> tell me a joke about cats ; give me a pun about coffee ; make me laugh with a programmer joke
< hit me with a dad joke ; share something funny about accountants ; say a silly one-liner about pizza
motivational-quote | Gives a motivational quote or a short pep talk for the user's situation. | giving a motivational quote | motivation, quote, inspiration, pep talk
> give me a motivational quote for Monday ; send an inspiring quote about persistence ; pep me up before my job interview
< share some words to keep me going on this project ; find an uplifting line for my team's slide ; cheer me on, I have a marathon tomorrow
trivia-quiz-host | Runs a multiple-choice trivia quiz on a chosen topic and keeps score. | hosting a trivia quiz | quiz, trivia game, multiple choice, score
> start a 10 question quiz on world capitals ; quiz me on 90s movies ; run a trivia game about space for my kids
< host a round of general knowledge questions and keep my score ; test me with multiple choice questions on history ; play a music quiz with me
? how old is the universe ; what's your favourite movie

@ medication
medication-reminder | Sets reminders for taking medicines on a schedule. | setting medication reminders | pill reminder, medication schedule, dose
> remind me to take my blood pressure pill at 8 every morning ; set reminders for antibiotics three times a day ; add my vitamin D to the medication schedule
< ping me at 9pm for my inhaler ; schedule alerts for my insulin before meals ; make sure I don't forget my thyroid tablet each day
drug-interaction-checker | Checks whether medicines or supplements interact and how serious it is. | checking drug interactions | drug interaction, ibuprofen, supplements, side effects
> check if ibuprofen and my blood thinner interact ; tell me if I can take St John's wort with sertraline ; see whether grapefruit affects my statin
< find out if it's safe to mix antihistamines with my sleeping pills ; look up interactions between metformin and alcohol ; verify that my new supplement won't clash with my medication
= medication-reminder ~ drug-interaction-checker
? who discovered penicillin ; how long do humans live on average

@ cooking
recipe-finder | Finds recipes from ingredients on hand, diet and time. | finding recipes | recipe, ingredients, what to cook, dinner idea
> find a recipe with chicken, spinach and rice ; suggest a quick vegan dinner ; tell me what to cook with leftover potatoes
< give me something to make tonight from eggs, leeks and cheese ; look up a 20 minute pasta dish ; dig up a dessert that uses overripe bananas
recipe-scaler | Scales a recipe up or down and converts its units. | scaling recipes | scale recipe, servings, convert cups to grams
> scale this cake recipe from 8 to 20 servings ; halve this soup recipe ; convert this recipe from cups to grams
< adjust the lasagne recipe for 3 people instead of 6 ; triple the cookie recipe for the bake sale ; change the ounces in this bread recipe to metric
= recipe-finder ~ recipe-scaler
wine-pairing | Suggests wines that go with a dish or menu. | pairing wine with food | wine pairing, which wine, red or white
> suggest a wine for grilled salmon ; tell me which red goes with lamb ; pair wines with a four course dinner
< pick a bottle to serve with spicy Thai curry ; recommend something to drink with a cheese board ; choose a white for a seafood risotto
? who was the first celebrity chef ; why do onions make you cry

@ shopping
price-comparer | Compares prices of a product across shops, including shipping. | comparing product prices | price comparison, cheapest, deal, best price
> compare prices for AirPods Pro across shops ; find the cheapest place to buy a Dyson V15 ; tell me where this blender costs least with shipping
< check which store has the best deal on a PS5 ; look for the lowest price on these running shoes ; see if any site sells this TV for less
price-drop-tracker | Tracks a product's price and alerts when it falls. | tracking a product price | price tracker, price drop, wishlist alert
> track the price of this Kindle and alert me when it drops ; watch this jacket and tell me when it's on sale ; notify me if the camera falls under 500
< keep tabs on the price of this coffee machine for me ; ping me when the Lego set gets discounted ; follow this laptop's price through Black Friday
= price-comparer ~ price-drop-tracker
? why is everything so expensive lately ; what was the first shop ever

@ smart-home
smart-light-control | Controls smart lights: on, off, brightness, colour and scenes. | controlling smart lights | lights, lamp, brightness, scene, Hue
> turn off the living room lights ; dim the bedroom lamp to 30 percent ; set the kitchen lights to warm white
< switch on the porch light ; make the office lights blue for the party ; start the movie scene in the lounge
thermostat-control | Reads and sets the thermostat and heating or cooling schedules. | controlling the thermostat | thermostat, heating, temperature, AC
> set the heating to 21 degrees ; turn the AC down two degrees ; make the thermostat lower at night
< warm the house up before I get home at 6 ; check what temperature the living room is at ; put the heating on the holiday schedule
? how does electricity work ; who invented the light bulb

@ weather
weather-forecast | Gives the current weather and the forecast for a place. | weather forecasts | weather, forecast, rain, temperature
> tell me the weather in Paris tomorrow ; check if it will rain in Seattle this weekend ; show the 5 day forecast for Denver
< find out how hot it gets in Madrid on Friday ; see whether I need an umbrella in London today ; look up the forecast for our picnic on Sunday in Austin
air-quality-check | Reports the air quality index and pollen levels for a place. | air quality and pollen | air quality, AQI, pollen, smog
> check the air quality in Delhi today ; tell me the pollen count in Atlanta ; see if the AQI is safe for running outside
< find out how smoggy it is in Los Angeles this morning ; look up whether the smoke from the fires reached Portland ; check if grass pollen is high this week
= weather-forecast ~ air-quality-check
? why is the sky blue ; what is the hottest place on earth

@ commute
route-planner | Plans a route by car, transit, bike or foot with travel time. | planning a route | directions, route, transit, travel time
> get me directions from the office to the airport by train ; plan a bike route to Golden Gate Park ; tell me the fastest way to drive to Oxford
< work out how to reach the stadium on public transport ; show the walking route from the hotel to the museum ; find how long it takes to cycle to work
parking-finder | Finds parking near a destination with prices and availability. | finding parking | parking, car park, garage, parking spot
> find parking near Madison Square Garden tonight ; look for a cheap garage close to the airport ; show free street parking near the beach
< tell me where I can leave the car near the concert hall ; book a parking spot downtown for Saturday ; locate a car park with EV chargers by the mall
? how many cars are there in the world ; who invented traffic lights

@ ev-car
ev-charging-finder | Finds EV charging stations on a route or near a place, with connector type and speed. | finding EV chargers | EV charger, charging station, supercharger
> find a fast charger near Bakersfield ; show CCS charging stations on the way to Vegas ; look for a free charger near my hotel
< locate a Tesla supercharger along the I-95 ; check where I can charge my EV near the ski resort ; tell me the closest 150 kW charger to me
car-maintenance-log | Logs car services and tells the user when the next service, oil change or tyre swap is due. | logging car maintenance | car service, oil change, maintenance log, tyres
> log today's oil change at 42000 miles ; tell me when my next service is due ; remind me to swap to winter tyres
< record that I replaced the brake pads ; check how long until the car's annual inspection ; note the new battery in my car's history
? what is the fastest car ever made ; who invented the engine

@ languages
vocab-flashcards | Makes flashcards for vocabulary in a foreign language and quizzes with spaced repetition. | vocabulary flashcards | flashcards, vocabulary, spaced repetition, Anki
> make Spanish flashcards for kitchen words ; quiz me on my French vocab ; create Anki cards for these Japanese words
< build a deck of German verbs to practise ; test me on the Italian words I got wrong yesterday ; turn this word list into cards with example sentences
grammar-explainer | Explains grammar points of a foreign language with examples. | explaining grammar | grammar, subjunctive, tenses, explain grammar
> explain when to use the subjunctive in Spanish ; tell me the difference between por and para ; explain German cases with examples
< help me get when French uses the passé composé versus imparfait ; break down Japanese particles wa and ga ; clarify how Italian articles work
? what is the hardest language in the world ; how many languages are there
"""
_CATALOGUE += """
@ homework
math-solver | Solves math problems step by step: algebra, calculus, statistics. | solving math problems | math, equation, solve, calculus
> solve 3x + 7 = 22 step by step ; find the derivative of x squared times sin x ; work out the probability of two sixes in a row
< show me how to integrate 1 over x from 1 to e ; factor x squared minus 5x plus 6 ; help with this limit as x goes to infinity
essay-feedback | Gives feedback on a student essay's structure, argument and grammar. | giving essay feedback | essay, essay feedback, thesis statement
> give feedback on my history essay ; check the structure of this argumentative essay ; tell me if my thesis statement is strong
< read my college application essay and say what to improve ; mark this English paper on argument and flow ; point out the weak paragraphs in my essay
? who was the smartest person ever ; why do we have summer holidays

@ research
research-paper-finder | Finds academic papers on a topic with authors, year and links. | finding academic papers | papers, literature search, Google Scholar, citations
> find recent papers on protein folding ; search for studies on remote work and productivity ; list the most cited papers on transformers
< look up peer-reviewed work about microplastics in oceans ; dig up 2023 articles on battery recycling ; get me the key publications on sleep and memory
research-helper | Reads papers the user provides and answers questions about their methods and findings. | answering questions about given papers | paper questions, methods, findings, explain paper
> explain the method of this paper I attached ; tell me what sample size this study used ; compare the findings of these two PDFs
< walk me through the results section of the attached article ; answer whether this paper controls for age ; clarify what the authors mean by their main claim
= research-paper-finder ~ research-helper
citation-formatter | Formats references in APA, MLA, Chicago or BibTeX. | formatting citations | citation, APA, MLA, BibTeX, reference
> format this reference in APA 7 ; turn these links into MLA citations ; make a BibTeX entry for this article
< convert my bibliography to Chicago style ; fix the citation format of these five sources ; write the in-text and reference list entry for this book
? who won the Nobel prize in physics ; how do I become a professor

@ writing
text-translator | Translates text between languages, keeping the tone. | translating text | translate, translation, Spanish, French
> translate this paragraph into Spanish ; put this email into formal German ; translate the menu from Japanese to English
< render this product description in French ; give me this message in Portuguese ; turn my cover letter into Italian
proofreader | Fixes spelling, grammar and punctuation in a text without changing its meaning. | proofreading text | proofread, grammar check, spelling, typos
> proofread my cover letter ; fix the grammar in this paragraph ; check this blog post for typos
< clean up the spelling and commas in my report ; correct any mistakes in this email before I send it ; go over my essay for grammar slips
= text-translator ~ proofreader
tone-rewriter | Rewrites a text in another tone: more formal, friendlier, shorter or more persuasive. | rewriting text in a new tone | rewrite, tone, formal, friendly, shorten
> make this email sound more formal ; rewrite this message to be friendlier ; shorten this paragraph to two sentences
< soften the tone of my complaint letter ; turn my notes into a persuasive pitch ; rephrase this so it sounds less blunt
? who is the best-selling author of all time ; how many words are in English

@ careers
resume-writer | Writes or improves a resume for a target job. | writing a resume | resume, CV, work experience
> rewrite my resume for a product manager job ; improve the bullet points on my CV ; make my resume fit one page
< tailor my CV to this data analyst posting ; punch up the experience section of my resume ; build a resume from my LinkedIn profile
cover-letter-writer | Writes a cover letter for a specific job application. | writing a cover letter | cover letter, application letter
> write a cover letter for this marketing job ; draft a letter applying to Google ; create a cover letter that explains my career change
< put together an application letter for the teaching post ; compose a short cover letter for the startup role ; write the motivation letter for this internship
= resume-writer ~ cover-letter-writer
interview-coach | Runs mock job interviews and gives feedback on answers. | practising job interviews | mock interview, interview practice, behavioural questions
> run a mock interview for a data scientist role ; ask me behavioural interview questions ; give feedback on my answer to tell me about yourself
< practise a product manager interview with me ; grill me with tough questions for my bank interview ; rate how I answered the weakness question
? what is the best paying job ; who was the first CEO

@ events
wedding-planner | Plans a wedding: checklist, timeline, budget and vendors. | planning a wedding | wedding, wedding checklist, wedding vendors
> make a wedding checklist for next June ; plan the timeline for our wedding day ; budget a 100 guest wedding
< list what we should book first for our autumn wedding ; organise the vendors for a small beach wedding ; set up the countdown tasks for the big day
guest-rsvp-tracker | Tracks invitations, RSVPs, dietary needs and seating. | tracking RSVPs | RSVP, guest list, seating, invitations
> track RSVPs for our party ; tell me who hasn't replied to the invitation ; list guests with dietary needs
< update the guest list, the Smiths are coming ; count how many people confirmed for Saturday ; make a seating chart from the replies
? how much does the average wedding cost ; who has the most famous wedding ever

@ news
news-digest | Summarises today's news on topics the user follows. | summarising the news | news, headlines, news digest, top stories
> give me today's tech headlines ; summarise the news on climate policy this week ; brief me on what happened in the markets today
< catch me up on the top stories this morning ; round up the latest on the election ; tell me what's in the business news
fact-checker | Checks whether a claim or news story is true, with sources. | fact-checking claims | fact check, true or false, misinformation
> check if this viral claim about vaccines is true ; fact-check this quote from the senator ; verify the story that the bridge collapsed
< tell me if this WhatsApp message about free flights is real ; see whether the statistic in this tweet holds up ; look into whether this photo is from the actual protest
= news-digest ~ fact-checker
? who owns the New York Times ; what was the first newspaper

@ music
playlist-maker | Makes a playlist for a mood, activity or genre. | making playlists | playlist, songs, mix, Spotify
> make a playlist for a rainy Sunday ; create a 1 hour running mix ; build a Spotify playlist of 80s synth pop
< put together songs for a dinner party ; give me a chill list for studying ; pick 20 tracks for a road trip
song-identifier | Identifies a song from lyrics, a hum or a description. | identifying songs | what song, lyrics, identify song
> tell me what song goes na na na hey hey ; identify the song with the lyrics we were young and free ; find the track from the end of this film
< work out the name of the tune I'm humming ; figure out which song has a whistle intro and a trumpet ; name the song playing in this clip
? who is the best guitarist ever ; how many Grammy awards did Beyonce win

@ ecommerce-seller
product-listing-writer | Writes product titles and descriptions for an online shop listing. | writing product listings | product description, listing, Amazon, Etsy
> write a listing for handmade soy candles ; create an Amazon title for wireless earbuds ; describe this leather wallet for my Etsy shop
< draft product copy for a bamboo cutting board ; give my ceramic mug listing a better description ; turn these specs into a product page text
inventory-forecaster | Forecasts stock needs from sales history and says when to reorder. | forecasting inventory | inventory, reorder, stock level, sell out
> forecast how many candles to stock for December ; tell me when to reorder the blue mugs ; predict which products will run out next month
< work out the reorder point for our best seller ; plan stock for the holiday season from last year's sales ; flag items that will sell out in two weeks
? who founded Amazon ; what was the first thing sold online

@ shipping
parcel-tracker | Tracks a parcel from its tracking number across carriers. | tracking a parcel | track package, tracking number, delivery
> track my package 1Z999AA10123456784 ; tell me where my DHL parcel is ; check when my Amazon order arrives
< see if my FedEx box has left the depot ; find out why my parcel is stuck in customs ; look up the delivery status of tracking number LX123456789CN
shipping-label-maker | Creates a shipping label and compares carrier rates for a parcel. | making shipping labels | shipping label, postage, carrier rates
> make a shipping label for a 2 kg box to Chicago ; compare UPS and USPS rates for this parcel ; print postage for a small envelope to Canada
< create a label to send these shoes back to the shop ; find the cheapest carrier for a 5 kg parcel to Berlin ; buy postage for three packages going out today
= parcel-tracker ~ shipping-label-maker
? who invented the postal service ; how many letters are sent each year
"""
_CATALOGUE += """
@ waimai
waimai-order | 帮用户在外卖平台上选店、下单点餐，按口味、预算和送达时间推荐。 | 点外卖下单 | 外卖, 点餐, 点外卖, 美团
> 点一份20元以内的黄焖鸡米饭 ; 中午给办公室五个人订奶茶 ; 找一家半小时能送到的川菜馆下单
< 晚上来一份不辣的麻辣烫送到家 ; 挑个评分高的日料店点两人套餐 ; 给我下一单早餐豆浆油条
waimai-refund | 处理外卖订单的问题：漏送、送错、超时，帮用户申请退款或赔付。 | 外卖退款和售后 | 外卖退款, 漏送, 送错, 超时赔付
> 外卖少送了一杯饮料帮我申请退款 ; 骑手送错了餐要投诉并退钱 ; 订单超时一小时申请赔付
< 汤洒了一半帮我找商家退款 ; 外卖里吃出头发去申请售后 ; 昨天那单没送到把钱要回来
= waimai-order ~ waimai-refund
waimai-coupon | 查找和比较外卖红包、满减券，算出最省钱的用法。 | 找外卖优惠券 | 外卖红包, 满减, 优惠券
> 找一下今天能用的外卖红包 ; 算算这单怎么用满减最划算 ; 看看有没有奶茶的优惠券
< 比较两个平台哪个券更省钱 ; 帮我凑满减把这单凑到满50 ; 查查会员红包还剩几张
? 外卖员一个月能挣多少钱 ; 中国人最爱吃什么外卖

@ kuaidi
kuaidi-query | 根据快递单号查询物流轨迹和预计送达时间。 | 查快递物流 | 快递查询, 单号, 物流, 顺丰
> 查一下顺丰单号SF1234567890的物流 ; 看看我的京东快递到哪了 ; 查询中通快递什么时候能到
< 看下这个单号今天会不会派送 ; 帮忙看看包裹怎么三天没动了 ; 查圆通快递卡在哪个网点
kuaidi-send | 帮用户预约上门取件寄快递，比较各家快递的价格和时效。 | 寄快递下单 | 寄快递, 上门取件, 运费, 寄件
> 约个快递明天上午上门取件 ; 寄一箱书到成都比较哪家便宜 ; 帮我下单寄一份文件到上海
< 把这个包裹寄回老家选最快的 ; 算算寄5公斤到广州要多少钱 ; 叫个快递员来拿退货的鞋子
= kuaidi-query ~ kuaidi-send
? 快递行业是哪年兴起的 ; 为什么双十一快递特别多

@ zufang
zufang-search | 按预算、通勤和户型帮用户筛选租房房源。 | 筛选租房房源 | 租房, 房源, 整租, 合租
> 找一个5000以内离望京近的一居室 ; 筛选地铁十分钟内的合租单间 ; 帮我在浦东找能养猫的整租房子
< 看看西二旗附近三千左右的房子 ; 找个通勤半小时以内的两居室 ; 推荐几套朝南带阳台的租房
zufang-contract-check | 审查租房合同条款，指出押金、违约金、维修责任等风险。 | 审查租房合同 | 租房合同, 押金, 违约金, 合同条款
> 看看这份租房合同有没有坑 ; 检查合同里押金怎么退的条款 ; 帮我审一下提前退租的违约金
< 把房东给的合同里不合理的地方挑出来 ; 核对一下合同里维修责任写清楚没有 ; 查查这个租约里中介费的约定合不合理
= zufang-search ~ zufang-contract-check
zufang-rent-split | 计算合租时的房租、水电和网费怎么分摊。 | 合租费用分摊 | 房租分摊, 水电费, 合租
> 算一下三个人合租房租怎么分 ; 按房间大小分摊6000元房租 ; 把这个月的水电网费分给室友
< 主卧带卫生间应该多出多少房租 ; 帮室友们把燃气费平摊一下 ; 算算新室友月中入住该交多少
? 北京的房价为什么这么高 ; 租房和买房哪个更好

@ huoche
train-ticket-search | 查询火车票和高铁票的车次、余票和票价。 | 查询火车票余票 | 火车票, 高铁, 余票, 车次
> 查明天北京到上海的高铁余票 ; 看看周五去杭州还有没有二等座 ; 查一下广州到长沙最早的车次
< 找找下周一南京去武汉的动车票 ; 看看国庆回成都还有没有卧铺 ; 查深圳到厦门的高铁票价
train-ticket-change | 帮用户办理火车票改签、退票，说明手续费规则。 | 火车票改签和退票 | 改签, 退票, 手续费, 12306
> 把明天的高铁票改签到后天 ; 退掉这张下周的火车票 ; 算算现在退票要扣多少手续费
< 把G102改到晚一点的车次 ; 行程取消了把车票退了 ; 改签到同一天的一等座要补多少钱
= train-ticket-search ~ train-ticket-change
? 中国第一条铁路是哪年修的 ; 高铁最快能跑多少公里

@ geshui
geshui-calculator | 根据月薪、五险一金和专项扣除计算个人所得税和到手工资。 | 计算个税和到手工资 | 个税, 个人所得税, 到手工资, 五险一金
> 算一下月薪两万到手多少钱 ; 计算年终奖五万要交多少税 ; 看看我这个月个税扣得对不对
< 税前一万五扣完五险一金和个税还剩多少 ; 算算换工作后个税会变多少 ; 帮我算全年的个人所得税
geshui-deduction | 指导填报个税专项附加扣除，如子女教育、住房贷款、赡养老人。 | 填报专项附加扣除 | 专项附加扣除, 子女教育, 房贷利息, 赡养老人
> 教我在个税APP里填子女教育扣除 ; 看看住房贷款利息扣除怎么申报 ; 赡养老人扣除我和姐姐怎么分
< 帮我把继续教育的扣除报上去 ; 租房扣除和房贷扣除能不能一起报 ; 说明大病医疗扣除要准备什么材料
= geshui-calculator ~ geshui-deduction
? 个人所得税是哪年开始征收的 ; 哪个国家不收个税

@ yiyuan
hospital-appointment | 帮用户在医院小程序预约挂号，选科室、医生和时间。 | 预约挂号 | 挂号, 预约挂号, 科室, 专家号
> 帮我挂明天上午协和的皮肤科 ; 预约下周三的儿科专家号 ; 挂一个离家近的医院的眼科
< 约个周末能看的口腔科号 ; 给我妈挂一个心内科的主任号 ; 找下华山医院骨科最近能约的时间
medical-report-reader | 解读体检报告和化验单上的指标，说明是否异常、建议看什么科。 | 解读体检报告 | 体检报告, 化验单, 指标, 偏高
> 看看我的体检报告有哪些指标异常 ; 解读一下这张血常规化验单 ; 甘油三酯偏高是什么意思
< 帮我读懂这份肝功能检查结果 ; 报告上说尿酸高要不要去看医生 ; 解释一下甲状腺彩超报告的结论
= hospital-appointment ~ medical-report-reader
? 人为什么会打喷嚏 ; 世界上最早的医院在哪里

@ zuowen
zuowen-grader | 批改中小学作文，给出分数、错别字和修改建议。 | 批改作文 | 作文批改, 打分, 修改建议
> 批改一下孩子的这篇作文 ; 给这篇六年级作文打个分 ; 找出作文里的错别字和病句
< 看看这篇议论文论点站不站得住 ; 帮忙点评初二作文并说怎么改 ; 按中考标准评一下这篇记叙文
zuowen-writer | 按题目和字数要求写范文，供学生参考。 | 写作文范文 | 作文范文, 写作文, 题目
> 写一篇题目为我的妈妈的作文 ; 以春天为题写一篇六百字范文 ; 写一篇关于环保的议论文
< 按难忘的一天这个题目写篇范文 ; 给三年级写一篇三百字的看图作文 ; 写篇以坚持为话题的高考作文参考
= zuowen-grader ~ zuowen-writer
? 鲁迅是哪一年出生的 ; 世界上最长的小说是哪部

@ xiaohongshu
xhs-note-writer | 写小红书种草笔记，包括标题、正文和话题标签。 | 写小红书笔记 | 小红书, 种草笔记, 标题, 话题
> 写一篇防晒霜的小红书种草笔记 ; 给我的咖啡店写条小红书 ; 写一篇成都三天旅行攻略笔记
< 帮新买的扫地机器人写篇种草文 ; 给这款口红起个爆款标题再写正文 ; 写条健身餐的小红书分享
xhs-account-analytics | 分析小红书账号的粉丝、点赞收藏和笔记数据，找出爆文规律。 | 分析小红书账号数据 | 小红书数据, 粉丝, 点赞, 爆文
> 分析一下我小红书账号上个月的数据 ; 看看哪几篇笔记涨粉最多 ; 总结我的爆文有什么共同点
< 对比一下这周和上周的点赞收藏 ; 查查粉丝主要是哪个年龄段 ; 找出阅读量低的笔记问题在哪
= xhs-note-writer ~ xhs-account-analytics
? 小红书是哪一年成立的 ; 网红一个月能挣多少

@ shouhou
return-request | 帮用户在电商平台申请七天无理由退货并预约取件。 | 申请退货 | 退货, 七天无理由, 退款
> 这件衣服不合适帮我申请退货 ; 在淘宝上给这双鞋申请七天无理由 ; 帮我退掉昨天买的耳机
< 买的台灯不喜欢把它退了 ; 拼多多那单帮我发起退货退款 ; 把尺码不对的裤子退回去
exchange-request | 帮用户申请换货：换尺码、换颜色或更换有质量问题的商品。 | 申请换货 | 换货, 换尺码, 质量问题
> 这双鞋小了帮我换大一码 ; 衣服颜色不对申请换成黑色 ; 收到的杯子有裂缝申请换一个新的
< 把这件外套换成L码 ; 耳机一边没声音要换货 ; 裙子想换个颜色帮我提交申请
= return-request ~ exchange-request
review-reply | 为网店商家回复买家的差评和中评，语气诚恳并给出解决办法。 | 回复买家差评 | 差评回复, 评价, 商家回复
> 帮我回复这条说发货慢的差评 ; 写一段对中评的客气回复 ; 买家说质量差帮我想个回复
< 替店铺回应一下这条一星评价 ; 给抱怨包装破损的顾客写回复 ; 帮忙回一下说尺码偏小的评价
? 淘宝是谁创办的 ; 双十一是怎么来的

@ licai
jizhang | 记录日常收支，按类别统计每月花了多少。 | 记账 | 记账, 收支, 花销, 统计
> 记一笔午饭35元 ; 统计一下这个月吃饭花了多少 ; 记录今天收到的工资一万二
< 把昨天打车的48块记上 ; 看看上个月哪类花钱最多 ; 算一下这周一共花了多少
savings-plan | 根据收入和目标制定存钱计划，算出每月要存多少。 | 制定存钱计划 | 存钱计划, 储蓄目标, 攒钱
> 帮我定个一年存五万的计划 ; 算算每月存多少三年能攒够首付 ; 制定一个月光族的攒钱方案
< 想两年存够结婚的钱该怎么存 ; 按我八千的工资做个储蓄计划 ; 规划一下年底前存下两万
= jizhang ~ savings-plan
credit-card-reminder | 管理多张信用卡的账单日和还款日，到期前提醒还款。 | 信用卡还款提醒 | 信用卡, 还款日, 账单日, 提醒
> 提醒我招行信用卡15号还款 ; 列出我所有信用卡的还款日 ; 添加一张新卡账单日是每月5号
< 快到还款日的时候通知我 ; 看看这个月有哪几张卡要还 ; 把浦发卡的还款提醒改到20号
? 人民币是什么时候发行的 ; 有钱人都是怎么理财的

@ qiche
weizhang-query | 按车牌号查询交通违章记录、扣分和罚款。 | 查询违章 | 违章查询, 扣分, 罚款, 车牌
> 查一下京A12345有没有违章 ; 看看我的车这个月扣了几分 ; 查询沪B牌照的违章罚款
< 帮我看看上周有没有被拍闯红灯 ; 查查驾驶证还剩多少分 ; 看下车有没有未处理的违章
weizhang-payment | 帮用户在线处理违章、缴纳罚款。 | 缴纳违章罚款 | 交罚款, 处理违章, 缴费
> 把这条超速违章的罚款交了 ; 在线处理我那条违停 ; 帮我缴两百元的违章罚款
< 把车上三条违章一次性处理掉 ; 替我把闯红灯的罚单交一下 ; 处理违章需要去交警队吗帮我线上办了
= weizhang-query ~ weizhang-payment
car-wash-booking | 预约附近的洗车、打蜡和内饰清洁服务。 | 预约洗车 | 洗车, 打蜡, 预约, 内饰清洁
> 约个明天下午的洗车 ; 找家附近能打蜡的店预约 ; 预约一次内饰深度清洁
< 周六上午给我订个精洗 ; 看看小区附近哪家洗车能预约 ; 帮我约个带吸尘的普通洗车
? 世界上第一辆汽车是谁发明的 ; 开车犯困怎么办

@ shici
poem-explainer | 讲解古诗词的意思、背景和修辞手法。 | 讲解古诗词 | 古诗, 诗词赏析, 古诗翻译
> 讲讲静夜思这首诗的意思 ; 赏析一下苏轼的水调歌头 ; 解释春眠不觉晓的背景
< 说说登鹳雀楼用了什么修辞 ; 翻译一下将进酒每一句 ; 分析李清照声声慢的情感
poem-composer | 按主题和格律创作古体诗、绝句或对联。 | 创作古诗和对联 | 写诗, 作诗, 对联, 绝句
> 以中秋为题写一首七言绝句 ; 给新店开业写副对联 ; 写一首关于春雨的五言诗
< 作一首送别朋友的古诗 ; 帮我写副新年的春联 ; 按平仄写一首咏梅的律诗
= poem-explainer ~ poem-composer
? 李白一共写了多少首诗 ; 唐朝是哪一年灭亡的
"""

# NONE utterances. Chit-chat leaves out jokes, quotes, stories, quizzes and mood talk: skills do those.
_CHITCHAT = """
hi there ; good morning! ; how's your day going ; what's your name ; are you a robot ; do you have feelings about rain ;
what's your favourite colour ; thanks, that's all for now ; you're pretty helpful ; who made you ; can we just chat for a bit ;
do you sleep at night ; where do you live ; how old are you ; ok cool ; never mind ; that's interesting, go on ;
what do you do for fun ; do you like dogs or cats better ; I'm bored ; what should I name my goldfish ; lol ; sorry, wrong window ;
what are you up to ; do you know Siri ; are you smarter than me ; can you hear me ; say something nice ; bye for now ;
what's up ; nice to meet you ; do you ever get tired ; I'm back ; test test ; hmm let me think ;
你好 ; 在吗 ; 你叫什么名字 ; 你是机器人吗 ; 早上好 ; 谢谢你，没事了 ; 你今天过得怎么样 ; 随便聊聊吧 ; 你喜欢猫还是狗 ;
你住在哪里 ; 好的知道了 ; 你几岁了 ; 无聊死了 ; 晚安 ; 哈哈哈哈 ; 你会不会累
"""
_OTHER_DOMAINS = """
what's my horoscope for today ; read my tarot cards ; how often should I water a cactus ; my tomato plants have yellow leaves, why ;
how do I stop my puppy biting ; what should I feed a pet rabbit ; who will win the Champions League this year ; what was the score in the Lakers game ;
give me tips to beat the final boss in Elden Ring ; what's the best build in Minecraft survival ; write a love poem for my girlfriend ;
what should I wear to a summer wedding ; is this outfit too casual for the office ; how do I knit a scarf ; teach me a chess opening ;
what bait is best for trout fishing ; how do I fix a squeaky door hinge ; how do I unclog a sink ; what are the lottery numbers tonight ;
give me dating advice for a first date ; how do I get a tattoo to heal faster ; how do I fold an origami crane ; what bird has a red head and black wings ;
how do I meditate on religious texts ; write a rap verse about my hometown ; what is the best way to paint a bedroom wall ; how do I change a bike tyre ;
what's the gossip about Taylor Swift ; how do I train for a chess tournament ; recommend a good sci-fi novel ; recommend a TV series to binge ;
how do I get rid of ants in the kitchen ; how do I iron a shirt properly ; what's a good name for a boat ;
今天的星座运势怎么样 ; 帮我算一卦 ; 多肉植物多久浇一次水 ; 狗狗总是乱叫怎么办 ; 今晚的足球比赛谁会赢 ; 王者荣耀怎么上分 ;
给女朋友写一首情诗 ; 这件衣服配什么鞋子好看 ; 怎么织毛衣 ; 下水道堵了怎么办 ; 推荐一部好看的电视剧 ; 怎么钓鲫鱼
"""
_TRIVIA = (
    ("what is the capital of {x}", "Australia ; Canada ; Brazil ; Kenya ; Norway ; Peru ; Vietnam ; Morocco ; Chile ; Hungary ; Nepal ; Portugal"),
    ("who wrote {x}", "Pride and Prejudice ; War and Peace ; One Hundred Years of Solitude ; The Great Gatsby ; Moby Dick ; Hamlet ; 1984 ; Don Quixote"),
    ("how tall is {x}", "Mount Everest ; the Eiffel Tower ; the Burj Khalifa ; the Statue of Liberty ; Mount Kilimanjaro ; the Empire State Building"),
    ("when did {x} happen", "the French Revolution ; the fall of the Berlin Wall ; the first moon landing ; the Battle of Hastings ; the sinking of the Titanic"),
    ("how many {x}", "bones are in the human body ; planets are in the solar system ; moons does Jupiter have ; keys does a piano have ; players are on a rugby team"),
    ("why {x}", "do cats purr ; is the ocean salty ; do leaves change colour in autumn ; do we have leap years ; do zebras have stripes"),
    ("{x}的首都是哪里", "澳大利亚 ; 加拿大 ; 巴西 ; 埃及 ; 瑞士 ; 土耳其"),
    ("{x}是谁写的", "红楼梦 ; 西游记 ; 三国演义 ; 围城 ; 活着"),
    ("{x}", "珠穆朗玛峰有多高 ; 长城有多长 ; 月亮离地球多远 ; 恐龙是怎么灭绝的 ; 地球上有多少个国家 ; 熊猫吃什么"),
)
_CATALOGUE += """
@ crypto
crypto-tax-report | Builds a capital gains report from crypto trades for a tax year. | crypto capital gains reports | crypto tax, capital gains, cost basis, Coinbase export
> build my 2024 crypto tax report from Coinbase trades ; work out capital gains on my bitcoin sales ; calculate the cost basis of my ETH
< total the gains and losses from my Binance history for taxes ; prepare a crypto gains summary for my accountant ; figure out the taxable profit on the tokens I swapped

@ banking
account-statement | Fetches and explains bank account statements for a period. | getting bank statements | bank statement, account history, balance
> download my checking account statement for March ; show my savings balance history ; get the last three months of statements
< pull up my current account transactions for last week ; send me the PDF statement for January ; list the deposits into my account this year

@ insurance
insurance-renewal-reminder | Tracks insurance policy renewal dates and reminds before they lapse. | insurance renewal reminders | renewal date, policy expiry, reminder
> remind me before my car insurance renews ; list when each of my policies expires ; add my home insurance renewal on 1 October
< warn me a month before the travel policy lapses ; keep track of the renewal dates for my three policies ; note that the pet plan renews in spring

@ currency
travel-money-tips | Advises on the cheapest way to get and spend foreign cash and cards abroad. | advice on spending money abroad | travel money, ATM abroad, card fees, cash abroad
> tell me the cheapest way to get yen before my Japan trip ; advise whether to pay in local currency or dollars abroad ; suggest a card with no foreign fees
< explain how to avoid ATM fees in Mexico ; say whether to exchange cash at the airport or in town ; recommend how much cash to take to Vietnam

@ hr-leave
onboarding-checklist | Builds an onboarding checklist for a new hire: accounts, equipment, first-week meetings. | new hire onboarding checklists | onboarding, new hire, first week, checklist
> make an onboarding checklist for our new designer ; plan the first week for a new engineer ; list the accounts a new hire needs
< put together the day-one setup for the sales hire starting Monday ; draw up the welcome plan for three interns ; prepare the laptop and access checklist for a new starter

@ email-marketing
mailing-list-cleaner | Removes bounced, inactive and duplicate contacts from a mailing list. | cleaning mailing lists | mailing list, bounces, unsubscribe, list hygiene
> remove bounced addresses from our mailing list ; clean the subscribers who haven't opened in a year ; dedupe our newsletter contacts
< prune the dead emails from our audience ; strip out the role addresses and typos from the list ; tidy our subscriber list before the big send

@ seo
backlink-monitor | Monitors new and lost backlinks to a website. | monitoring backlinks | backlinks, referring domains, link building
> show new backlinks to our site this month ; tell me which links we lost ; list referring domains to our blog
< check who started linking to our pricing page ; alert me about lost links from big sites ; report the quality of our incoming links

@ ads
ad-creative-resizer | Resizes an ad image into every format a platform needs. | resizing ad creatives | ad sizes, banner sizes, resize creative
> resize this banner into all Google display sizes ; make story and feed versions of this ad image ; crop our ad for LinkedIn and Facebook formats
< produce the 300x250 and 728x90 cuts of this creative ; adapt the campaign visual to every Meta placement ; export our promo image in square and vertical

@ legal
trademark-search | Searches trademark registers for names similar to a proposed brand. | trademark searches | trademark, brand name, registered mark
> check if the name Brightleaf is trademarked ; search for trademarks similar to our app name ; see whether anyone registered Nimbus for software
< find conflicting marks before we name our coffee brand ; look up whether our logo name is free in the EU ; run a trademark clearance on Pixelpup

@ git
changelog-writer | Writes release notes and a changelog from merged pull requests. | writing changelogs | changelog, release notes, version
> write release notes for version 2.3 ; turn the merged PRs since last tag into a changelog ; draft the changelog entry for this release
< summarise what changed between v1.8 and v1.9 for users ; put together the notes for Friday's release ; list the fixes and features in this version

@ cicd
dockerfile-writer | Writes a Dockerfile for an application, small and secure. | writing Dockerfiles | Dockerfile, container image, docker build
> write a Dockerfile for my Flask app ; make a multi-stage Dockerfile for a Go service ; containerise this Node project
< shrink my Docker image for the Django site ; set up a Dockerfile that runs as a non-root user ; package my Rust tool in a container

@ cloud
iam-policy-writer | Writes least-privilege cloud IAM policies for a described access need. | writing IAM policies | IAM policy, permissions, least privilege, AWS role
> write an IAM policy that lets a lambda read one S3 bucket ; create a role for CI to push images to ECR ; give a read-only policy for our analysts
< draft least-privilege permissions for the backup job ; make a GCP service account that can only publish to one topic ; limit this policy to the billing data

@ charts
chart-reader | Reads a chart image and describes its trend and key numbers. | reading chart images | read chart, graph image, trend
> tell me what this chart shows ; describe the trend in this graph screenshot ; read the values off this bar chart image
< explain the figure in this slide ; pull the numbers out of this line chart picture ; sum up what this plot from the report says

@ documents
ocr-scanner | Extracts text from scanned documents and photos of paper. | extracting text from scans | OCR, scan to text, extract text
> extract the text from this scanned letter ; turn this photo of a receipt into text ; OCR these scanned pages
< get the words out of this picture of a whiteboard ; read the printed text in this scan into a document ; convert the photographed form into editable text

@ images
photo-organizer | Sorts a photo library by date, place and people and finds duplicates. | organising photo libraries | photo library, albums, duplicates
> sort my holiday photos into albums by place ; find duplicate pictures in my library ; group my photos by who is in them
< clean up the near-identical shots from the wedding ; arrange last year's pictures by month ; make an album of all photos with my dog

@ audio
voice-note-summary | Summarises voice notes into short text with any to-dos. | summarising voice notes | voice note, voice message, summary
> summarise this 5 minute voice note from my boss ; tell me what my friend's voice message says in short ; pull the to-dos out of my voice memo
< give me the gist of this long WhatsApp voice message ; recap the voice note my client left ; list what I promised in my recorded memo

@ video
video-script-writer | Writes a script for a short video, with hook, scenes and call to action. | writing video scripts | video script, YouTube script, hook
> write a script for a 60 second product video ; draft a YouTube intro for my cooking channel ; plan the scenes of an explainer video
< put together a TikTok script about saving money ; write the voiceover for our app demo ; outline a 3 minute tutorial video

@ inbox
email-unsubscriber | Finds mailing lists in the inbox and unsubscribes from the unwanted ones. | unsubscribing from mailing lists | unsubscribe, spam, mailing lists
> unsubscribe me from all the shopping newsletters ; find which mailing lists fill my inbox ; stop the emails from this travel site
< get me off the promotional lists I never read ; clear out the marketing senders I signed up for years ago ; opt me out of the weekly deals emails

@ tasks
focus-timer | Runs focus sessions like Pomodoro with breaks. | running focus timers | pomodoro, focus session, focus timer
> start a 25 minute pomodoro ; set a focus session with 5 minute breaks ; run four pomodoros for my study block
< time 50 minutes of deep work then a break ; begin a focus block for writing ; give me a timer for a study sprint

@ social-media
influencer-finder | Finds social media influencers in a niche with audience size and engagement. | finding influencers | influencers, creators, niche, outreach
> find fitness influencers with 10k to 100k followers ; list vegan food creators in the UK ; suggest tech YouTubers for a sponsorship
< look for micro-influencers who post about hiking ; search for parenting creators on Instagram with good engagement ; shortlist gaming streamers for our launch

@ fitness
stretching-routine | Gives a stretching or mobility routine for a body area or after a workout. | stretching routines | stretching, mobility, flexibility, cool down
> give me a stretching routine for tight hips ; show a 10 minute cool down after running ; suggest mobility exercises for my lower back
< put together stretches for desk workers ; walk me through a morning flexibility routine ; design a post-leg-day stretching session

@ nutrition
water-intake-tracker | Tracks daily water intake against a target and reminds to drink. | tracking water intake | water intake, hydration, drink water
> log a glass of water ; tell me how much water I drank today ; remind me to drink every hour
< add 500 ml to my water count ; check if I hit my hydration goal this week ; set my daily water target to 2.5 litres

@ medication
symptom-checker | Asks about symptoms and suggests possible causes and whether to see a doctor. | checking symptoms | symptoms, headache, fever, see a doctor
> check my symptoms: sore throat and fever ; tell me if this headache needs a doctor ; what could cause a rash on my arm, check it
< look into my dizziness and nausea since yesterday ; assess whether my sprained ankle needs an x-ray ; go through my cough symptoms with me

@ shopping
gift-idea-finder | Suggests gift ideas for a person, occasion and budget. | finding gift ideas | gift ideas, present, birthday gift
> suggest a birthday gift for my dad under 50 ; find a present for a coworker who loves tea ; give me gift ideas for a 10 year old
< think of something to get my wife for our anniversary ; come up with a housewarming present idea ; recommend a thank-you gift for my teacher

@ smart-home
home-security-cam | Shows smart security camera feeds and motion alerts. | checking security cameras | security camera, motion alert, doorbell cam
> show the front door camera ; tell me if there was motion in the garden last night ; check who rang the doorbell at 3pm
< pull up the driveway camera ; list the motion alerts from today ; look at the back yard camera feed

@ weather
uv-index | Gives the UV index and sun protection advice for a place and day. | UV index and sun advice | UV index, sunscreen, sunburn
> check the UV index in Sydney today ; tell me if I need sunscreen at the beach tomorrow ; show when UV peaks in Phoenix
< find out how strong the sun is in Barcelona this afternoon ; see if it's safe for my kids to play outside at noon ; look up the UV level for our hike

@ commute
ride-hailing | Books a taxi or ride-hailing car and estimates fare and arrival time. | booking a taxi | taxi, Uber, ride, cab
> book an Uber to the airport ; get me a taxi from home at 7am ; estimate the fare for a ride downtown
< call a cab to the train station ; order a ride for four people to the stadium ; check how long until a car can pick me up

@ languages
pronunciation-coach | Listens to the user's pronunciation of a phrase and gives feedback. | coaching pronunciation | pronunciation, accent, speaking practice
> check my pronunciation of this French sentence ; help me say the Spanish rr correctly ; rate my English accent on this recording
< listen to me say these Mandarin tones and correct them ; coach me on pronouncing German umlauts ; tell me how to sound more natural saying this Italian phrase

@ homework
flashcard-from-notes | Turns class notes into study questions and answers. | study questions from notes | study questions, revision, notes to quiz
> turn my biology notes into study questions ; make revision questions from this chapter summary ; create question and answer pairs from my lecture notes
< build a practice quiz from my history notes ; convert these chemistry notes into questions to revise ; produce self-test questions from my economics notes

@ events
event-venue-finder | Finds venues for an event by size, date, location and budget. | finding event venues | venue, event space, conference room
> find a venue for 80 people in Manchester ; look for a rooftop space for a company party ; suggest a conference room for a 20 person workshop
< search for a garden venue for a summer reception ; get options for a hall that holds 200 in Austin ; locate a cheap space for a birthday party

@ music
music-practice-planner | Plans instrument practice sessions with exercises and goals. | planning music practice | practice plan, guitar, piano, scales
> plan a 30 minute daily guitar practice ; make a piano practice schedule for grade 5 ; give me exercises to improve my drumming speed
< set up a weekly routine for learning violin ; plan my singing practice before the audition ; design practice sessions to learn barre chords

@ shipping
customs-form-helper | Fills customs declaration forms for international parcels. | filling customs forms | customs form, declaration, HS code, CN22
> fill in the customs form for a parcel to Australia ; find the HS code for handmade candles ; complete a CN22 for a gift to my sister in Japan
< help with the declaration for shipping clothes to Canada ; work out what to declare for a package of books to the UK ; prepare the customs paperwork for selling prints abroad

@ kuaidi
kuaidi-complaint | 帮用户投诉快递丢件、破损或态度问题，跟进赔偿。 | 投诉快递 | 快递投诉, 丢件, 破损, 赔偿
> 快递丢了帮我投诉要赔偿 ; 包裹破损了去快递公司投诉 ; 投诉快递员没送货就签收
< 寄的东西摔坏了找快递索赔 ; 快递员态度太差我要投诉 ; 帮我跟进上次丢件的赔偿进度

@ huoche
station-guide | 介绍火车站的进站、换乘、候车室和停车信息。 | 火车站指南 | 火车站, 换乘, 候车, 进站
> 北京南站怎么换乘地铁四号线 ; 介绍一下上海虹桥站的候车室 ; 杭州东站停车场怎么收费
< 广州南站进站要提前多久 ; 深圳北站从哪个口出去打车 ; 南京南站到高铁站台怎么走

@ geshui
shebao-query | 查询社保和公积金的缴纳记录、余额和提取条件。 | 查询社保公积金 | 社保, 公积金, 缴费记录, 提取
> 查一下我社保交了多少年 ; 看看公积金账户余额 ; 公积金租房提取需要什么条件
< 查查换城市后社保有没有断缴 ; 算算我公积金每月交多少 ; 看下医保个人账户还剩多少钱

@ yiyuan
yibao-reimburse | 指导医保报销流程、报销比例和需要的材料。 | 医保报销 | 医保报销, 异地就医, 报销比例
> 异地住院怎么用医保报销 ; 算算这次住院医保能报多少 ; 门诊费用报销要带什么材料
< 说说在外地看病怎么备案报销 ; 看看这张发票能不能走医保 ; 查一下大病医保报销比例

@ zuowen
gongwen-writer | 按格式写通知、请示、报告等机关公文。 | 写公文 | 公文, 请示, 工作报告, 会议通知
> 写一份放假通知 ; 起草一份关于采购设备的请示 ; 写个季度工作总结报告
< 帮单位写个会议通知 ; 拟一份申请经费的请示 ; 写一篇年度工作报告的初稿

@ xiaohongshu
douyin-script | 写抖音短视频脚本，包括开头钩子、分镜和口播。 | 写抖音脚本 | 抖音, 短视频脚本, 口播, 分镜
> 写一个卖水果的抖音脚本 ; 给探店视频写口播文案 ; 设计一个一分钟的抖音分镜
< 帮我写个开箱短视频的脚本 ; 给健身教程视频写开头三秒的钩子 ; 写个美妆教程的抖音口播

@ licai
fund-picker | 按风险偏好和期限筛选基金并说明费用和历史表现。 | 挑选基金 | 基金, 定投, 指数基金, 风险
> 帮我挑几只适合定投的指数基金 ; 找风险低一点的债券基金 ; 比较这两只基金的费率和收益
< 推荐几只适合新手的基金 ; 看看沪深300哪只基金跟踪误差小 ; 筛选近三年回撤小的基金

@ waimai
grocery-delivery | 在生鲜平台下单买菜，按菜谱或清单配齐食材送上门。 | 线上买菜 | 买菜, 生鲜, 盒马, 叮咚
> 在盒马买明天早餐的食材 ; 按这个菜单把菜买齐送到家 ; 下单两斤排骨和一把青菜
< 帮我订一箱牛奶和一打鸡蛋 ; 把做火锅需要的菜配好下单 ; 买点水果半小时内送到

@ zufang
moving-service | 预约搬家服务，估算车型、人工和费用。 | 预约搬家 | 搬家, 货车, 搬家费用
> 约个周六的搬家公司 ; 估算一下一居室搬家要多少钱 ; 叫一辆小面包车搬几个箱子
< 帮我订个带两个师傅的搬家服务 ; 算算从朝阳搬到海淀的费用 ; 找个能拆装家具的搬家师傅

@ shici
idiom-game | 陪用户玩成语接龙，并解释成语的意思。 | 玩成语接龙 | 成语接龙, 成语, 游戏
> 来玩成语接龙 ; 用一马当先开始接龙 ; 陪孩子玩一局成语接龙
< 咱们接个龙从画蛇添足开始 ; 跟我比赛成语接龙 ; 玩一轮成语接龙并解释每个成语

@ qiche
driving-test-prep | 帮用户准备驾照科目一到四的考试，出题并讲解。 | 驾考练习 | 驾照, 科目一, 科目四, 驾考
> 出十道科目一的题给我做 ; 讲讲科目二倒车入库的技巧 ; 帮我复习科目四的安全常识
< 考我几道驾考交通标志题 ; 说说科目三路考容易挂在哪 ; 帮我准备下周的科目一考试
"""
