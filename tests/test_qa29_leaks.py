"""QA pass 29 F1 and F1b: disguised holdout text that passed the leak scan (percent-encoded in a URL,
base64, a name hyphenated over a line break, spaced letters, leetspeak, reversed, rot13, an English
ordinal) reached review and was published; rejected, it reached the next proposer prompt through the
rejected-edit buffer. The scan now reads decoded views of the added text (rules/leakviews.py) and the
buffer's filter reads the remembered edit as the check did. The strings are the QA's
(/tmp/qa29/repro/leaks.py), against its bike-rental holdout; each view has ordinary twins that stay clean.
"""

from __future__ import annotations

import base64
import json

import pytest

from evolve_fakes import QUOTE_ETA, SKILL, World, eta_patch, seed_failures
from skillforge.evolution import memory
from skillforge.rules.leaks import EvalText, LeakContext, scan_leaks
from skillforge.rules.leakviews import leak_views
from skillforge.runners.evolve import Runner
from skillforge.state.evaluate import Case, EvalSet, SetMeta
from skillforge.state.evolve import Candidate, CandidateVerdict, PatchFormatName

BIKE = "bike-rental"
HELD = {  # id -> (query, station fixture): the QA's holdout cases
    "holdout-bike-00": ("Reserve a bike at Quenby Wharf station for 73019 riders, code HX-4417", ""),
    "holdout-bike-01": ("Is Lindqvist Terrace dock full today? ticket 58260", "Lindqvist Terrace"),
    "holdout-bike-02": ("need two bikes at Brightwater Yard, membership 91144", ""),
    "holdout-bike-03": ("bikes near Marigold Crescent please", "Marigold Crescent"),
    "holdout-bike-04": ("any docks at Zephyrine Plaza?", "Zephyrine Plaza"),
}
QUERY_Q, QUERY_L = HELD["holdout-bike-00"][0], HELD["holdout-bike-01"][0]


def _case29(cid: str) -> Case:
    query, station = HELD[cid]
    return Case(id=cid, skill=BIKE, query=query, fixtures={"bikes.find_station": {"station": station}} if station else {},
                expect={"must_include": ["docks free"]})


CTX = LeakContext(cases=tuple(EvalText(c.id, "holdout", c.query, (), json.dumps(c.fixtures)) for c in map(_case29, HELD)))

DISGUISES = {  # name -> (added text, the view it is found in, the case it comes from)
    "url": ("- See https://example.org/?q=Reserve%20a%20bike%20at%20Quenby%20Wharf%20station%20for%2073019%20riders",
            "percent-decoded", "holdout-bike-00"),
    "url_twice": ("- See https://example.org/?q=%2551uenby%2520Wharf", "percent-decoded", "holdout-bike-00"),
    "base64": ("```\n" + base64.b64encode(QUERY_Q.encode()).decode() + "\n```", "base64-decoded", "holdout-bike-00"),
    "base64q": ("```\n" + base64.b64encode(QUERY_L.encode()).decode() + "\n```", "base64-decoded", "holdout-bike-01"),
    "base64url": ("- id: " + base64.urlsafe_b64encode(b"Marigold Crescent??>>").decode(), "base64-decoded", "holdout-bike-03"),
    "name_hyphen": ("- long station names may be hyphenated: Lindq-\n  vist Terrace", "hyphen-joined", "holdout-bike-01"),
    "name_spaced": ("- e.g. Z e p h y r i n e Plaza", "letters-joined", "holdout-bike-04"),
    "name_dotted": ("- e.g. Z.e.p.h.y.r.i.n.e Plaza", "letters-joined", "holdout-bike-04"),
    "name_leet": ("- e.g. Mar1gold Cr3scent", "leet-read", "holdout-bike-03"),
    "name_reversed": ("- e.g. tnecserC dlogiraM", "reversed", "holdout-bike-03"),
    "query_reversed": ("- " + QUERY_Q[::-1], "reversed", "holdout-bike-00"),
    "rot13": ("- Rkner n ovxr ng Dhraol Jusne fgngvba", "rot13-decoded", "holdout-bike-00"),
    "rot13_in_prose": ("- Ask at the Dhraol Jusne desk for a bike today", "rot13-decoded", "holdout-bike-00"),
    "reversed_in_prose": ("- Ask at the tnecserC dlogiraM desk for a bike today", "reversed", "holdout-bike-03"),
    "ordinal": ("- the fifty-eight thousand two hundred sixtieth ticket", "ordinal-read", "holdout-bike-01"),
    # QA 31 F1/F2: hex byte by byte, letters parted by two spaces or a tab
    "hex_spaced": ("- id " + " ".join(f"{b:02x}" for b in b"Zephyrine Plaza"), "hex-decoded", "holdout-bike-04"),
    "hex_colons": ("- id " + ":".join(f"{b:02x}" for b in b"Zephyrine Plaza"), "hex-decoded", "holdout-bike-04"),
    "hex_escapes": ("- id " + "".join(f"\\x{b:02x}" for b in b"Marigold Crescent"), "hex-decoded", "holdout-bike-03"),
    "hex_0x": ("- id " + ", ".join(f"0x{b:02x}" for b in b"Marigold Crescent"), "hex-decoded", "holdout-bike-03"),
    "hex_blob": ("- id " + b"Zephyrine Plaza".hex(), "hex-decoded", "holdout-bike-04"),
    "name_two_spaces": ("- e.g. Q  u  e  n  b  y    W  h  a  r  f", "letters-joined", "holdout-bike-00"),
    "name_tabs": ("- e.g. Z\te\tp\th\ty\tr\ti\tn\te Plaza", "letters-joined", "holdout-bike-04"),
}


@pytest.mark.parametrize("name", DISGUISES)
def test_each_qa29_disguise_is_a_leak_named_by_its_view(name: str) -> None:
    text, view, case = DISGUISES[name]
    found = scan_leaks(text, CTX)
    assert found, name
    assert any(f.view == view and case in f.source for f in found), [str(f) for f in found]
    assert f"(from holdout/{case}, found in the {view} text)" in " ".join(map(str, found))


CLEAN = [
    "- See https://example.org/search?q=bike%20rental%20near%20me&lang=en",
    "- Send ids as base64: `aGVsbG8gd29ybGQsIHRoaXMgaXMgZmluZQ==` is fine.",
    "- Use utf8 for text and sha256 for hashes; round ids look like r1c2 or v2.",
    "- A well-\n  known station may be named in full, e.g. i.e. U.S.A. or a b c.",
    "- The twenty-first rider and the first 100 riders get a discount.",
    "- Tickets like 06285 or 91037 are old.",  # 58260 and 73019 backwards, as written: other numbers
    "- Always state how many docks are free at the return station.",
    "- Emojis such as 🚲 and ümlauts are fine; 7 docks free.",
    "- Dock MACs look like 00:1a:2b:3c:4d:5e; colours like #ff00aa; counts 12 34 56 78 90 12.",
    "- Grades: a  b  c  d are fine, and so is the table    A   B   C.",
    "- Stationen: Hauptbahnhof, Marktplatz; Rückgabe bis 18:30.",
    "- Use SkillForge with LangGraph, macOS and iOS; see the README.",
]


@pytest.mark.parametrize("text", CLEAN)
def test_ordinary_patches_are_not_flagged(text: str) -> None:
    assert scan_leaks(text, CTX) == []


def test_the_live_skills_own_view_is_not_the_patchs_finding() -> None:
    parent = "# Bike rental\n- See https://example.org/?q=Quenby%20Wharf\n"
    added = "- Say how many docks are free."
    candidate = parent + added + "\n"
    assert scan_leaks("- See https://example.org/?q=Quenby%20Wharf", CTX)  # new: a leak
    assert scan_leaks(added, CTX, parent=parent, candidate=candidate) == []


def test_views_are_made_only_when_they_change_the_text() -> None:
    assert [k for k, _ in leak_views("- Always state how many docks are free.")] == []
    assert "percent" in dict(leak_views("a%20b"))


# ---- F1b: the rejected-edit buffer -------------------------------------------------------------

def test_tried_before_leaves_every_disguise_out_of_the_next_prompt(workspace) -> None:
    sets = {"holdout": EvalSet(meta=SetMeta(name="holdout", partition="holdout", skills=[BIKE]),
                               cases=[_case29(cid) for cid in HELD])}
    base = {"target": BIKE, "patch": "p", "patch_format": PatchFormatName.SEARCH_REPLACE,
            "verdict": CandidateVerdict.FAILED_VALIDATION, "rejected_by": "review", "notes": ["rejected in review: not now"]}
    cands = [Candidate(id=f"r1c{i}", text=f"t{i}\n", **base,
                       applied_diff="".join(f"+{row}\n" for row in text.splitlines()))
             for i, (text, _, _) in enumerate(DISGUISES.values())]
    cands.append(Candidate(id="r1c99", text="clean\n", applied_diff="+- Keep the reply short.\n", **base))
    memory.remember(workspace, BIKE, "run-1", cands)
    assert len(memory.read_rejected(workspace, BIKE)) == len(cands)
    shown = memory.tried_before(workspace, BIKE, "run-2", sets)
    # tried_before shows the most recent MAX_SHOWN: the clean one and five disguises; only the clean one is left
    assert len(shown) == 1 and "Keep the reply short" in shown[0], shown
    line = memory.shown_text("- search_replace edit changed: +- names: Lindq- | +  vist Terrace -> X", "+- names: Lindq- | +  vist Terrace")
    assert scan_leaks(line, memory.held_out_context(sets))


def test_the_buffer_filter_reads_every_remembered_disguise(workspace) -> None:
    """All of them, not only the MAX_SHOWN most recent: one remembered edit each."""
    sets = {"holdout": EvalSet(meta=SetMeta(name="holdout", partition="holdout", skills=[BIKE]),
                               cases=[_case29(cid) for cid in HELD])}
    base = {"target": BIKE, "patch": "p", "patch_format": PatchFormatName.SEARCH_REPLACE,
            "verdict": CandidateVerdict.FAILED_VALIDATION, "rejected_by": "review", "notes": ["rejected in review"]}
    for i, (name, (text, _, _)) in enumerate(DISGUISES.items()):
        cand = Candidate(id="r1c1", text=f"t{i}\n", applied_diff="".join(f"+{row}\n" for row in text.splitlines()), **base)
        memory.remember(workspace, BIKE, f"run-{name}", [cand])
        assert memory.tried_before(workspace, BIKE, "run-next", sets) == [], name


# ---- end to end: the scripted evolve world ------------------------------------------------------

ENGLISH_HOLDOUT = "Reserve a bike at Quenby Wharf station for 73019 riders"


@pytest.fixture
def world_ws(machine):
    from test_leak_evolve import with_english_holdout

    return with_english_holdout(machine.ws, ENGLISH_HOLDOUT)


def test_a_percent_encoded_holdout_query_is_stopped_at_check_end_to_end(world_ws) -> None:
    line = f"- {QUOTE_ETA}：See https://example.org/?q=" + ENGLISH_HOLDOUT.replace(" ", "%20")
    world = World(lambda r: [eta_patch(claimed=1, line=line)])
    seed_failures(world_ws, world.llm())
    runner = Runner(world_ws, llm_factory=world.llm)
    out = runner.start(SKILL, max_rounds=1)
    cand = runner.state(out["run_id"]).candidates[0]
    assert out["status"] == "NO_IMPROVEMENT", out
    assert (cand.verdict.value, cand.rejected_by) == ("LEAK", "leak_scan")
    assert any(f"holdout-{SKILL}-en, found in the percent-decoded text" in x for x in cand.leaks), cand.leaks
